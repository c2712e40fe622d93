// Approvals: the live queue with its buttons, and the rules kept.

import { el, rpc, page, table, when } from './lib.js';

function askCard(ask) {
  const reason = el('input', { type: 'text', placeholder: 'Why not (optional)', 'aria-label': 'Reason for the deny', maxlength: '1000' });
  const answer = async (decision, scope, extra = {}) => {
    try {
      await rpc('approvals.answer', { id: ask.id, decision, scope, ...extra });
    } catch (error) {
      card.append(el('p', { class: 'bad', role: 'alert' }, `Not answered: ${error.message}`));
    }
  };
  const buttons = [
    el('button', { type: 'button', class: 'allow', onclick: () => answer('allow', 'once') }, 'Allow once'),
  ];
  if (ask.choices.includes('session')) {
    buttons.push(el('button', { type: 'button', class: 'allow', onclick: () => answer('allow', 'session') }, 'Allow for this session'));
  }
  if (ask.choices.includes('rule')) {
    buttons.push(el('button', { type: 'button', class: 'allow', onclick: () => ruleForm(card, ask, answer) }, 'Allow by rule…'));
  }
  buttons.push(el('button', { type: 'button', class: 'deny', onclick: () => answer('deny', 'once', reason.value ? { reason: reason.value } : {}) }, 'Deny'), reason);
  const card = el('article', { class: 'ask', 'data-ask': ask.id },
    el('div', {}, el('strong', {}, ask.tool), ' ', el('span', { class: 'muted' }, 'in ',
      el('a', { href: `/ui/sessions/${encodeURIComponent(ask.session)}` }, ask.session), ` — ${ask.workspace}`)),
    el('pre', {}, JSON.stringify(ask.arguments, null, 2)),
    el('div', {}, 'Why: ', ask.reason),
    el('div', { class: 'muted' }, 'asked ', when(ask.askedAt), `; denied in ${ask.expiresInSecs} s without an answer`),
    el('div', { class: 'actions' }, ...buttons),
  );
  return card;
}

function ruleForm(card, ask, answer) {
  const expiry = el('select', { 'aria-label': 'The rule lasts' },
    el('option', { value: '' }, 'until revoked'),
    el('option', { value: '3600' }, 'one hour'),
    el('option', { value: '86400' }, 'one day'),
    el('option', { value: '604800' }, 'one week'));
  card.append(el('div', { class: 'actions' },
    el('span', {}, 'Keep the rule ', ...ask.rules.map((rule) => el('code', { class: 'rule' }, rule)), ' for ', ask.workspace, ':'),
    expiry,
    el('button', { type: 'button', class: 'allow', onclick: () => answer('allow', 'rule', expiry.value ? { expiresInSecs: Number(expiry.value) } : {}) }, 'Keep this rule and allow'),
  ));
}

export async function render() {
  const [pending, kept] = await Promise.all([rpc('approvals.list'), rpc('approvals.rules')]);
  const list = el('section', { id: 'pending', 'aria-label': 'Waiting calls' },
    ...(pending.asks.length ? pending.asks.map(askCard) : [el('p', { class: 'muted' }, 'Nothing waits for an answer.')]));
  const rules = table(['Rule', 'Workspace', 'Expires', ''],
    kept.rules.map((rule) => el('tr', {},
      el('td', { class: 'rule' }, rule.rule),
      el('td', {}, rule.workspace),
      el('td', {}, rule.expiresAt ? new Date(rule.expiresAt * 1000).toISOString() : 'until revoked'),
      el('td', {}, el('button', { type: 'button', onclick: async () => { await rpc('approvals.revoke', { rule: rule.rule, workspace: rule.workspace }); render(); } }, 'Revoke')),
    )));
  page.replaceChildren(
    el('h1', {}, 'Approvals'), list,
    el('h2', {}, 'Rules in force'), kept.rules.length ? rules : el('p', { class: 'muted' }, 'No rules kept.'),
    el('p', { class: 'muted' }, 'Answered asks are in the audit log: ', el('a', { href: '/ui/activity' }, 'Activity'), '.'),
  );
}
