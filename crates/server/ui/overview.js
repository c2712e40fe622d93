// Overview: the backends, who is connected by which door, what waits for
// an answer, and the OpenClaw gateway and VS Code.

import { el, rpc, page, table, when } from './lib.js';

/** The doors the Overview always lists, in this order. */
const DOORS = ['Claude Code', 'Codex', 'Copilot CLI', 'OpenClaw', 'VS Code', 'MCP', '/rpc',
  'OpenAI/Anthropic API', 'orchestrator'];

export async function render() {
  const [status, pending, seen] = await Promise.all([
    rpc('bridge.status'), rpc('approvals.list'), rpc('session.transcripts'),
  ]);
  const backends = table(['Backend', 'Kind', 'Health', 'Default model', 'Models'],
    status.backends.map((backend) => el('tr', {},
      el('td', {}, backend.name, backend.default ? ' (default)' : ''),
      el('td', {}, backend.kind),
      el('td', { class: backend.availability === 'ok' ? 'ok' : 'bad' }, backend.availability === 'ok' ? 'available' : 'unavailable'),
      el('td', {}, backend.defaultModel ?? '—'),
      el('td', { class: 'muted' }, (backend.models ?? []).join(', ') || 'from its listing'),
    )));
  const count = pending.asks.length;
  page.replaceChildren(
    el('h1', {}, 'Overview'),
    el('p', {}, `copilot-bridge ${status.version}, pid ${status.pid}, since `, when(status.startedAt), '; state directory ', el('code', {}, status.stateDir)),
    el('h2', {}, 'Approvals'),
    el('p', { id: 'pending-count' }, el('a', { href: '/ui/approvals' }, count === 1 ? '1 call waits for an answer' : `${count} calls wait for an answer`)),
    el('h2', {}, 'Agents and sessions by door'),
    doors(seen.transcripts, status),
    el('h2', {}, 'Backends'),
    status.backends.length ? backends : el('p', { class: 'muted' }, 'No chat backend is configured (see docs/backends/).'),
    el('h2', {}, 'OpenClaw and VS Code'),
    el('p', {}, `OpenClaw gateway: ${describe(status.openclaw)}; VS Code: ${vscode(status.vscode)}`),
  );
}

/** One row per door: live sessions and conversations, the newest of them. */
function doors(transcripts, status) {
  const byDoor = new Map(DOORS.map((door) => [door, []]));
  for (const transcript of transcripts) {
    if (!byDoor.has(transcript.doorName)) byDoor.set(transcript.doorName, []);
    byDoor.get(transcript.doorName).push(transcript);
  }
  const rows = [...byDoor].map(([door, seen]) => {
    const live = seen.filter((t) => t.live);
    const newest = seen[0];
    return el('tr', { 'data-door': door },
      el('th', { scope: 'row' }, door),
      el('td', {}, live.length === 1 ? '1 live' : `${live.length} live`, seen.length > live.length ? `, ${seen.length - live.length} ended` : ''),
      el('td', {}, newest ? el('a', { href: `/ui/sessions/${encodeURIComponent(newest.id)}` }, newest.title) : el('span', { class: 'muted' }, 'none yet')),
      el('td', {}, newest ? when(newest.updatedAt) : '—'),
    );
  });
  const providers = status.providers.count
    ? `${status.providers.count} provider(s) connected: ${status.providers.names.join(', ')}`
    : 'No provider is connected.';
  return el('div', {},
    table(['Door', 'Sessions', 'Most recent', 'Last active'], rows, { id: 'doors' }),
    el('p', { class: 'muted' }, providers, ` ${status.sessions.count} hub session(s) open.`));
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
