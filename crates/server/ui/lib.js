// What every page of the dashboard shares (docs/dashboard.md): building
// DOM from text (nothing from the daemon is ever parsed as HTML), calling
// the daemon's /rpc methods as the logged-in person, and the tab's one
// live stream.

export const page = document.getElementById('page');
let csrf = null;

export function setCsrf(token) { csrf = token; }
export function csrfToken() { return csrf; }

/** An element with attributes and children; strings become text nodes. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'onclick') node.addEventListener('click', value);
    else if (name === 'onsubmit') node.addEventListener('submit', value);
    else node.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export class NotLoggedIn extends Error {
  constructor() { super('not logged in'); }
}

export async function rpc(method, params = {}) {
  const response = await fetch('/ui/api/rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  if (response.status === 401) { showLogin(); throw new NotLoggedIn(); }
  const answer = await response.json();
  if (answer.error) throw new Error(answer.error.message ?? String(answer.error));
  return answer.result;
}

export function showLogin() {
  page.replaceChildren(
    el('h1', {}, 'Not logged in'),
    el('p', {}, 'Run ', el('code', {}, 'copilot-bridge ui'),
      ' on this machine: it opens the dashboard with a login link that works once, for 60 seconds.'),
  );
}

/** A table with a header row and one row per item. */
export function table(headers, rows, attributes = {}) {
  return el('table', attributes,
    el('thead', {}, el('tr', {}, ...headers.map((name) => el('th', { scope: 'col' }, name)))),
    el('tbody', {}, ...rows));
}

/** A time as this browser shows it, the ISO text kept for the tooltip. */
export function when(timestamp) {
  if (!timestamp) return '—';
  const at = new Date(timestamp);
  if (Number.isNaN(at.getTime())) return String(timestamp);
  return el('time', { datetime: timestamp, title: timestamp }, at.toLocaleString());
}

/** A duration in words a person reads at a glance. */
export function duration(ms) {
  if (ms === undefined || ms === null) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** JSON for a person: strings as they are, the rest indented. */
export function shown(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value, null, 2);
}

/** The words of a decision, so colour is never all that says it. */
export function decisionText(decision) {
  if (!decision) return null;
  const kind = decision.decision ?? decision;
  const words = { allow: 'allowed', deny: 'denied', ask: 'asked' }[kind] ?? String(kind);
  return decision.reason ? `${words}: ${decision.reason}` : words;
}

export function decisionClass(decision) {
  const kind = decision?.decision ?? decision;
  return kind === 'deny' ? 'bad' : kind === 'allow' ? 'ok' : 'muted';
}

/**
 * The tab's one live stream: the approval queue and whatever `topics`
 * name (session, orchestration, sessions, orchestrations). EventSource
 * reconnects by itself and sends Last-Event-ID, so the daemon resumes
 * after the last event this tab saw.
 */
export function follow(topics, handlers) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(topics)) {
    if (value) query.set(name, String(value));
  }
  const events = new EventSource(`/ui/api/stream${query.size ? `?${query}` : ''}`);
  for (const [name, handle] of Object.entries(handlers)) {
    events.addEventListener(name, (event) => handle(JSON.parse(event.data)));
  }
  return events;
}
