// The dashboard's one script (docs/dashboard.md). Reads the daemon through
// /ui/api/rpc (a few of its /rpc methods, as the logged-in person) and
// follows the approval queue through one server-sent event stream, which
// resumes where it left off after a reconnect. Nothing polls on a timer.

const page = document.getElementById('page');
let csrf = null;

/** Text as a DOM text node: nothing from the daemon is ever parsed as HTML. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'onclick') node.addEventListener('click', value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child ?? '')));
  }
  return node;
}

async function rpc(method, params = {}) {
  const response = await fetch('/ui/api/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  if (response.status === 401) { showLogin(); throw new Error('not logged in'); }
  const answer = await response.json();
  if (answer.error) throw new Error(answer.error.message ?? String(answer.error));
  return answer.result;
}

function showLogin() {
  page.replaceChildren(
    el('h1', {}, 'Not logged in'),
    el('p', {}, 'Run ', el('code', {}, 'copilot-bridge ui'),
      ' on this machine: it opens the dashboard with a login link that works once, for 60 seconds.'),
  );
}

function markCurrent() {
  for (const link of document.querySelectorAll('nav a')) {
    if (link.getAttribute('href') === currentPath()) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

function currentPath() {
  const path = location.pathname.replace(/\/$/, '');
  return path === '/ui' ? '/ui/overview' : path;
}

// ---- Overview -------------------------------------------------------------

async function overview() {
  const [status, pending] = await Promise.all([rpc('bridge.status'), rpc('approvals.list')]);
  const backends = el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'Backend'), el('th', {}, 'Kind'), el('th', {}, 'Health'), el('th', {}, 'Default model'), el('th', {}, 'Models'))),
    el('tbody', {}, ...status.backends.map((backend) => el('tr', {},
      el('td', {}, backend.name, backend.default ? ' (default)' : ''),
      el('td', {}, backend.kind),
      el('td', { class: backend.availability === 'ok' ? 'ok' : 'bad' }, backend.availability === 'ok' ? 'available' : 'unavailable'),
      el('td', {}, backend.defaultModel ?? '—'),
      el('td', { class: 'muted' }, (backend.models ?? []).join(', ') || 'from its listing'),
    ))));
  const count = pending.asks.length;
  page.replaceChildren(
    el('h1', {}, 'Overview'),
    el('p', {}, `copilot-bridge ${status.version}, pid ${status.pid}, since ${status.startedAt}; state directory `, el('code', {}, status.stateDir)),
    el('h2', {}, 'Approvals'),
    el('p', { id: 'pending-count' }, el('a', { href: '/ui/approvals' }, count === 1 ? '1 call waits for an answer' : `${count} calls wait for an answer`)),
    el('h2', {}, 'Backends'),
    status.backends.length ? backends : el('p', { class: 'muted' }, 'No chat backend is configured (see docs/backends/).'),
    el('h2', {}, 'Sessions and providers'),
    el('p', {}, `${status.sessions.count} session(s); ${status.providers.count} provider(s)`,
      status.providers.names.length ? `: ${status.providers.names.join(', ')}` : ''),
    el('h2', {}, 'OpenClaw and VS Code'),
    el('p', {}, `OpenClaw gateway: ${describe(status.openclaw)}; VS Code: ${vscode(status.vscode)}`),
  );
}

function vscode(part) {
  if (!part) return 'not connected';
  const models = (part.models ?? []).length;
  return `${part.editors ?? 0} editor(s) connected, chat ${part.chat ?? 'off'}, ${models} model(s)`;
}

function describe(part) {
  if (part == null) return 'not configured';
  if (typeof part !== 'object') return String(part);
  return part.state ?? part.status ?? (part.connected === true ? 'connected' : part.connected === false ? 'not connected' : JSON.stringify(part));
}

// ---- Approvals ------------------------------------------------------------

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
    el('div', {}, el('strong', {}, ask.tool), ' ', el('span', { class: 'muted' }, `in ${ask.session} — ${ask.workspace}`)),
    el('pre', {}, JSON.stringify(ask.arguments, null, 2)),
    el('div', {}, 'Why: ', ask.reason),
    el('div', { class: 'muted' }, `asked ${ask.askedAt}; denied in ${ask.expiresInSecs} s without an answer`),
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
  const form = el('div', { class: 'actions' },
    el('span', {}, 'Keep the rule ', ...ask.rules.map((rule) => el('code', { class: 'rule' }, rule)), ' for ', ask.workspace, ':'),
    expiry,
    el('button', { type: 'button', class: 'allow', onclick: () => answer('allow', 'rule', expiry.value ? { expiresInSecs: Number(expiry.value) } : {}) }, 'Keep this rule and allow'),
  );
  card.append(form);
}

async function approvals() {
  const [pending, kept] = await Promise.all([rpc('approvals.list'), rpc('approvals.rules')]);
  const list = el('section', { id: 'pending', 'aria-label': 'Waiting calls' },
    ...(pending.asks.length ? pending.asks.map(askCard) : [el('p', { class: 'muted' }, 'Nothing waits for an answer.')]));
  const rules = el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'Rule'), el('th', {}, 'Workspace'), el('th', {}, 'Expires'), el('th', {}, ''))),
    el('tbody', {}, ...kept.rules.map((rule) => el('tr', {},
      el('td', { class: 'rule' }, rule.rule),
      el('td', {}, rule.workspace),
      el('td', {}, rule.expiresAt ? new Date(rule.expiresAt * 1000).toISOString() : 'until revoked'),
      el('td', {}, el('button', { type: 'button', onclick: async () => { await rpc('approvals.revoke', { rule: rule.rule, workspace: rule.workspace }); render(); } }, 'Revoke')),
    ))));
  page.replaceChildren(el('h1', {}, 'Approvals'), list, el('h2', {}, 'Rules in force'), kept.rules.length ? rules : el('p', { class: 'muted' }, 'No rules kept.'));
}

// ---- Configuration --------------------------------------------------------

async function configuration() {
  const { config, file } = await rpc('bridge.config');
  const values = el('table', {},
    el('thead', {}, el('tr', {}, el('th', {}, 'Key'), el('th', {}, 'Value'), el('th', {}, 'From'), el('th', {}, 'Variable'))),
    el('tbody', {}, ...config.values.map((row) => el('tr', {},
      el('td', { class: 'rule' }, row.key),
      el('td', {}, row.value ?? '—'),
      el('td', { class: 'muted' }, row.source),
      el('td', { class: 'muted' }, row.env),
    ))));
  const permissions = config.permissions ?? {};
  const rules = el('table', {},
    el('tbody', {}, ...Object.entries(permissions).map(([name, value]) => el('tr', {},
      el('td', { class: 'rule' }, name),
      el('td', {}, Array.isArray(value) ? (value.join(', ') || '—') : JSON.stringify(value)),
    ))));
  const state = [`config.toml: ${file.file}`, file.read ? `, loaded ${file.loadedAt}` : ' (not present: defaults, the environment and flags)'];
  page.replaceChildren(
    el('h1', {}, 'Configuration'),
    el('p', {}, ...state),
    file.problem ? el('p', { class: 'bad', role: 'alert' }, `Edit not in force: ${file.problem}`) : '',
    (file.restartNeeded ?? []).length ? el('p', {}, `Changed, waiting for a restart: ${file.restartNeeded.join(', ')}`) : '',
    el('h2', {}, 'Permission rules in force'),
    rules,
    el('h2', {}, 'Every setting, and where it came from'),
    values,
  );
}

// ---- Live -----------------------------------------------------------------

let rendering = null;
let again = false;

/** Renders the current page; a change while rendering renders once more. */
async function render() {
  if (rendering) { again = true; return; }
  markCurrent();
  const pages = { '/ui/approvals': approvals, '/ui/configuration': configuration };
  rendering = (pages[currentPath()] ?? overview)()
    .catch((error) => { if (error.message !== 'not logged in') page.append(el('p', { class: 'bad', role: 'alert' }, error.message)); });
  await rendering;
  rendering = null;
  if (again) { again = false; render(); }
}

function follow() {
  // EventSource reconnects by itself and sends Last-Event-ID, so the
  // daemon resumes after the last event this tab saw.
  const events = new EventSource('/ui/api/stream');
  events.addEventListener('approval', () => {
    if (currentPath() !== '/ui/configuration') render();
  });
}

async function start() {
  const session = await fetch('/ui/api/session');
  if (session.status !== 200) { showLogin(); return; }
  csrf = (await session.json()).csrf;
  const logout = document.getElementById('logout');
  logout.hidden = false;
  logout.addEventListener('click', async () => {
    await fetch('/ui/logout', { method: 'POST', headers: { 'x-csrf-token': csrf } });
    showLogin();
    logout.hidden = true;
  });
  await render();
  follow();
}

start();
