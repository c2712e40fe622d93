// Activity: the audit log (every tool call any door made and what was
// decided) and the facade's request log, filtered, paged from disk by the
// daemon. The filters live in the URL, so a view has a link.

import { el, rpc, page, when, duration, decisionText, decisionClass } from './lib.js';

const PAGE = 50;

const AUDIT_FILTERS = [
  ['tool', 'Tool'], ['decision', 'Decision'], ['session', 'Session'], ['door', 'Door'],
  ['text', 'Text'], ['since', 'Since'], ['until', 'Until'],
];
const REQUEST_FILTERS = [
  ['client', 'Agent'], ['model', 'Model'], ['status', 'Status'], ['path', 'Route'],
  ['since', 'Since'], ['until', 'Until'],
];

export async function render() {
  const query = new URLSearchParams(location.search);
  const kind = query.get('log') === 'requests' ? 'requests' : 'audit';
  const filters = kind === 'audit' ? AUDIT_FILTERS : REQUEST_FILTERS;
  const params = {};
  for (const [name] of filters) {
    const value = query.get(name);
    if (value) params[name] = value;
  }
  const switcher = el('p', { class: 'actions' },
    el('a', { href: '/ui/activity', 'aria-current': kind === 'audit' ? 'true' : null }, 'Tool calls (audit log)'),
    el('a', { href: '/ui/activity?log=requests', 'aria-current': kind === 'requests' ? 'true' : null }, 'Model requests (request log)'));
  const form = el('form', { class: 'filters', method: 'get', action: '/ui/activity', 'aria-label': 'Filters' },
    kind === 'requests' ? el('input', { type: 'hidden', name: 'log', value: 'requests' }) : null,
    ...filters.map(([name, label]) => el('label', {}, label, ' ',
      name === 'decision'
        ? el('select', { name },
          ...['', 'allow', 'deny', 'ask'].map((value) => el('option', { value, selected: params[name] === value }, value || 'any')))
        : el('input', {
          type: 'text', name, value: params[name] ?? '', size: name === 'since' || name === 'until' ? 22 : 14,
          placeholder: name === 'since' || name === 'until' ? '2026-11-28T10:00:00Z' : name === 'status' ? '4xx or 404' : '',
        }))),
    el('button', { type: 'submit' }, 'Filter'),
    el('a', { href: kind === 'audit' ? '/ui/activity' : '/ui/activity?log=requests' }, 'Clear'));
  const body = el('tbody', {});
  const more = el('button', { type: 'button', hidden: true }, 'Older entries');
  const note = el('p', { class: 'muted', id: 'activity-note' });
  const headers = kind === 'audit'
    ? ['Time', 'Decision', 'Door', 'Tool', 'Called with', 'Session', 'Took']
    : ['Time', 'Status', 'Route', 'Agent', 'Model', 'Backend', 'Tokens in/out', 'Took', 'Reason'];
  page.replaceChildren(
    el('h1', {}, 'Activity'), switcher, form, note,
    el('table', { id: 'activity', 'data-log': kind },
      el('thead', {}, el('tr', {}, ...headers.map((name) => el('th', { scope: 'col' }, name)))), body),
    more);
  let cursor = null;
  const load = async () => {
    more.disabled = true;
    const answer = await rpc(kind === 'audit' ? 'activity.audit' : 'activity.requests',
      { ...params, limit: PAGE, ...(cursor ? { cursor } : {}) });
    if (kind === 'requests' && answer.enabled === false) {
      note.replaceChildren('The request log is off: set ', el('code', {}, 'request_log = true'),
        ' in config.toml (docs/facade.md, "The request log") to keep one line per model request.');
    }
    for (const entry of answer.entries) body.append(kind === 'audit' ? auditRow(entry) : requestRow(entry));
    if (!body.children.length && answer.enabled !== false) note.replaceChildren('Nothing matches.');
    cursor = answer.next;
    more.hidden = !cursor;
    more.disabled = false;
  };
  more.addEventListener('click', load);
  await load();
}

function auditRow(entry) {
  const decision = { decision: entry.decision, reason: entry.output?.error?.message ?? entry.output?.reason };
  const input = entry.input ?? {};
  const called = ['command', 'path', 'pattern', 'query', 'file_path'].map((key) => input[key]).find((v) => typeof v === 'string')
    ?? JSON.stringify(input);
  const asked = entry.approval?.answer ? ` (asked; ${entry.approval.answer}${entry.approval.surface ? ` by ${entry.approval.surface}` : ''})` : '';
  return el('tr', {},
    el('td', {}, when(entry.timestamp)),
    el('td', { class: decisionClass(entry.decision) }, decisionText(decision), asked),
    el('td', {}, entry.hook ?? '—'),
    el('td', {}, entry.tool ?? '—'),
    el('td', { class: 'rule' }, called.length > 160 ? `${called.slice(0, 160)}…` : called),
    el('td', {}, entry.sessionId ? el('a', { href: `/ui/sessions/${encodeURIComponent(entry.sessionId)}` }, entry.sessionId) : '—'),
    el('td', {}, duration(entry.elapsedMs)));
}

function requestRow(entry) {
  const failed = entry.status >= 400;
  return el('tr', {},
    el('td', {}, when(entry.at)),
    el('td', { class: failed ? 'bad' : 'ok' }, String(entry.status), failed ? ' (failed)' : ''),
    el('td', {}, `${entry.method} ${entry.path}`),
    el('td', {}, entry.client || '—'),
    el('td', {}, entry.requestedModel && entry.requestedModel !== entry.model ? `${entry.requestedModel} → ${entry.model ?? 'default'}` : (entry.model ?? '—')),
    el('td', {}, entry.backend ?? '—'),
    el('td', {}, `${entry.tokensIn ?? 0} / ${entry.tokensOut ?? 0}`),
    el('td', {}, duration(entry.totalMs)),
    el('td', { class: 'muted' }, entry.reason ?? ''));
}

