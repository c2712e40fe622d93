// Sessions: every session and facade conversation, and one of them as a
// live transcript (prompts, answers as they stream, tool calls with their
// arguments, decisions and results, edits as diffs). A finished task is
// read from its log on disk.

import {
  el, rpc, page, table, when, duration, shown, decisionText, decisionClass,
} from './lib.js';

// ---- The list -------------------------------------------------------------

export async function renderList() {
  const { transcripts, kept, logs } = await rpc('session.transcripts');
  const inMemory = new Set(transcripts.map((t) => t.id));
  const link = (id, text) => el('a', { href: `/ui/sessions/${encodeURIComponent(id)}` }, text);
  const live = table(['Session', 'Door', 'State', 'Workspace', 'Model', 'Tokens in/out', 'Last active'],
    transcripts.map((t) => el('tr', { 'data-session': t.id },
      el('td', {}, link(t.id, t.title || t.id)),
      el('td', {}, t.doorName),
      el('td', { class: t.live ? 'ok' : 'muted' }, t.live ? 'live' : 'ended'),
      el('td', { class: 'muted' }, t.cwd ?? '—'),
      el('td', {}, t.model ?? '—'),
      el('td', {}, `${t.tokensIn} / ${t.tokensOut}`),
      el('td', {}, when(t.updatedAt)),
    )), { id: 'sessions' });
  const onDisk = kept.filter((k) => !inMemory.has(k.id));
  page.replaceChildren(
    el('h1', {}, 'Sessions'),
    transcripts.length ? live : el('p', { class: 'muted' }, 'No session yet: every hub session and every conversation an agent holds through the API shows here as it happens.'),
    el('h2', {}, 'Task logs'),
    logs.length
      ? table(['Log', 'First prompt', 'Status', 'Events', 'Updated'], logs.map((log) => el('tr', {},
        el('td', {}, link(log.id, log.id)),
        el('td', {}, log.firstPrompt ?? '—'),
        el('td', {}, log.lastRun ?? log.status),
        el('td', {}, String(log.events)),
        el('td', {}, when(log.updatedAt)),
      )), { id: 'logs' })
      : el('p', { class: 'muted' }, 'No task has run in this daemon\'s state directory yet.'),
    onDisk.length ? el('h2', {}, 'Kept conversations (keep_transcripts)') : '',
    onDisk.length ? table(['Conversation', 'Updated', 'Bytes'], onDisk.map((k) => el('tr', {},
      el('td', {}, link(k.id, k.id)), el('td', {}, when(k.updatedAt)), el('td', {}, String(k.bytes))))) : '',
  );
}

// ---- One transcript -------------------------------------------------------

/** Renders events into a list, keeping the answer being streamed open. */
export class TranscriptView {
  constructor(list) {
    this.list = list;
    this.streaming = null;
    this.starts = new Map();
  }

  add(event) {
    const node = this.render(event);
    if (node) {
      node.dataset.seq = event.seq;
      node.dataset.type = event.type;
      this.list.append(node);
    }
  }

  render(event) {
    switch (event.type) {
      case 'user.message':
        return block('user', event.source === 'model request' ? 'Sent to the model' : 'Prompt',
          el('pre', {}, event.content ?? ''));
      case 'assistant.message_delta': {
        if (!this.streaming) {
          this.streaming = el('pre', { class: 'streaming' });
          const node = block('assistant', 'Answer (streaming)', this.streaming);
          node.classList.add('streaming-answer');
          this.streamingBlock = node;
          this.list.append(node);
        }
        this.streaming.append(event.delta ?? '');
        return null;
      }
      case 'assistant.message': {
        if (this.streamingBlock) this.streamingBlock.remove();
        this.streaming = null;
        this.streamingBlock = null;
        const calls = (event.toolRequests ?? []).map((call) => el('li', {},
          'asks to run ', el('strong', {}, call.name ?? call.toolName ?? '?'), ' ',
          el('code', {}, short(shown(call.arguments), 400))));
        return block('assistant', 'Answer',
          event.content ? el('pre', {}, event.content) : null,
          calls.length ? el('ul', {}, ...calls) : null);
      }
      case 'tool.execution_start':
        this.starts.set(event.toolCallId, event);
        return null;
      case 'tool.execution_complete':
        return this.toolCard(event);
      case 'tool.decided':
        return block(`tool${event.decision?.decision === 'deny' ? ' refused' : ''}`, `${event.agent} asked to run ${event.tool}`,
          args(event.tool, event.arguments),
          el('p', { class: decisionClass(event.decision) }, 'Decision: ', decisionText(event.decision)));
      case 'tool.result':
        return block('tool', 'Tool result sent to the model', el('pre', {}, short(event.content ?? '', 4000)));
      case 'model.request':
        return line(`model request ${event.path ?? ''} → ${event.model ?? 'the default model'} on ${event.backend}`);
      case 'model.error':
      case 'session.error':
        return el('div', { class: 'event error bad', role: 'note' }, 'Error: ', event.message ?? '');
      case 'model.interrupted':
        return line(`interrupted: ${event.why}`);
      case 'log':
        return line(`${event.source}: ${event.text}`);
      case 'inject':
        return line(`${event.source} (${event.stream}): ${event.text}`);
      case 'assistant.intent':
        return line(`intent: ${event.intent}`);
      case 'session.idle':
        return line('idle');
      case 'session.start':
        return line(`started in ${event.cwd ?? '?'} (${event.runner ?? 'runner'}, ${event.model ?? 'default model'})`);
      case 'session.usage':
        return line(`tokens: ${event.promptTokens} in, ${event.completionTokens} out`);
      case 'transcript.missed':
        return line(`${event.count ?? 'some'} events were not kept`);
      default:
        return null;
    }
  }

  /** A tool call: its arguments, the decision, the result, the time. */
  toolCard(event) {
    const name = event.tool ?? event.toolName ?? this.starts.get(event.toolCallId)?.toolName ?? '?';
    const start = this.starts.get(event.toolCallId);
    const argumentsGiven = event.arguments ?? start?.arguments;
    let ok = event.result?.type ? event.result.type === 'success' : event.success;
    const output = event.result?.output ?? event.result?.content ?? event.error?.message ?? '';
    const decision = event.decision ?? (ok === false && event.error ? null : undefined);
    const title = `${name}${event.provider ? ` (${event.provider})` : ''}`;
    return block(`tool${ok === false ? ' refused' : ''}`, title,
      args(name, argumentsGiven),
      decision ? el('p', { class: decisionClass(decision) }, 'Decision: ', decisionText(decision)) : null,
      el('p', { class: ok === false ? 'bad' : 'ok' }, ok === false ? 'Failed' : 'Succeeded',
        event.durationMs ? ` in ${duration(event.durationMs)}` : ''),
      output !== '' ? el('pre', { class: 'result' }, short(shown(output), 4000)) : null);
  }
}

function block(kind, title, ...children) {
  return el('article', { class: `event ${kind}` }, el('h3', {}, title), ...children);
}

function line(text) {
  return el('div', { class: 'event line muted' }, text);
}

function short(text, max) {
  return text.length > max ? `${text.slice(0, max)}… [${text.length - max} more characters]` : text;
}

/** A call's arguments: an edit as a diff, anything else as JSON. */
function args(tool, value) {
  if (value === undefined || value === null) return null;
  let parsed = value;
  if (typeof value === 'string') {
    try { parsed = JSON.parse(value); } catch { parsed = value; }
  }
  const edit = typeof parsed === 'object' ? editOf(parsed) : null;
  if (edit) return el('div', {}, edit.path ? el('p', {}, 'Edits ', el('code', {}, edit.path)) : null, diff(edit.lines));
  const patch = typeof parsed === 'object' ? (parsed.patch ?? parsed.diff ?? parsed.input) : parsed;
  if (typeof patch === 'string' && looksLikeDiff(patch)) return diff(patch.split('\n'));
  return el('pre', { class: 'args' }, short(shown(parsed), 4000));
}

/** The old and new text of an edit tool's arguments, as diff lines. */
function editOf(value) {
  const before = value.oldString ?? value.old_string ?? value.old_str ?? value.oldText;
  const after = value.newString ?? value.new_string ?? value.new_str ?? value.newText;
  if (typeof before !== 'string' || typeof after !== 'string') return null;
  const lines = [
    ...before.split('\n').map((text) => `-${text}`),
    ...after.split('\n').map((text) => `+${text}`),
  ];
  return { path: value.path ?? value.file_path ?? value.filePath, lines };
}

function looksLikeDiff(text) {
  return /^(\*\*\* Begin Patch|@@ |--- |\+\+\+ |diff --git)/m.test(text);
}

/** Diff lines with their sign kept, so colour is never all that says it. */
function diff(lines) {
  return el('pre', { class: 'diff', 'aria-label': 'Changes' }, ...lines.slice(0, 400).map((text) => {
    const kind = text.startsWith('+') && !text.startsWith('+++') ? 'added'
      : text.startsWith('-') && !text.startsWith('---') ? 'removed'
        : text.startsWith('@@') ? 'hunk' : 'same';
    return el('span', { class: kind }, `${text}\n`);
  }));
}

export async function renderOne(id) {
  const list = el('div', { id: 'transcript', 'aria-live': 'polite' });
  const view = new TranscriptView(list);
  const header = el('p', { class: 'muted' }, 'Loading…');
  page.replaceChildren(
    el('p', {}, el('a', { href: '/ui/sessions' }, '← All sessions')),
    el('h1', {}, 'Session ', el('code', {}, id)),
    header, list);
  const { transcripts } = await rpc('session.transcripts');
  const summary = transcripts.find((t) => t.id === id);
  if (summary) {
    header.replaceChildren(`${summary.title} — ${summary.doorName}, ${summary.live ? 'live' : 'ended'}`,
      summary.cwd ? ` — ${summary.cwd}` : '', summary.model ? ` — ${summary.model}` : '');
  }
  // What is kept so far, then the stream from there on.
  let since = 0;
  let answer;
  do {
    answer = await rpc('session.events', { session: id, since });
    for (const event of answer.events) view.add(event);
    since = answer.next;
  } while (answer.events.length >= 500);
  if (!summary) header.replaceChildren(answer.source === 'log' ? 'A task log on disk.' : 'Kept on disk.');
  if (answer.missed) list.prepend(line('The oldest events are no longer kept in memory.'));
  return { view, since };
}

