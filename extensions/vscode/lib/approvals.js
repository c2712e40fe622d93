'use strict';
// The asks of this window's session in the hub's approval queue, shown as
// notifications with Allow once / Allow for session / Deny (docs/approvals.md).
// Answering takes the approver token of the daemon's state directory
// (`approver-token`, a file of this user), which agents never get; with
// bridge.url (a daemon found by address) there is none, and nothing is shown.
// No `vscode` import: the window is handed in.

const fs = require('node:fs');
const nodePath = require('node:path');

/** How long one approvals.watch waits for an event. */
const WATCH_WAIT_MS = 25000;
/** After a failed watch (the daemon restarting), the pause before the next. */
const RETRY_MS = 2000;

/** The approver token of `home`, or null (no file yet, or one not to trust). */
function readApproverToken(home, log) {
  const file = nodePath.join(home, 'approver-token');
  let stat;
  try {
    stat = fs.lstatSync(file);
  } catch {
    return null;
  }
  if (!stat.isFile() || (typeof process.getuid === 'function' && stat.uid !== process.getuid())) {
    log(`approvals: ${file} is not a regular file of yours; not answering approvals from this window`);
    return null;
  }
  const token = fs.readFileSync(file, 'utf8').trim();
  return token === '' ? null : token;
}

async function call(daemonUrl, token, method, params, signal, timeoutMs) {
  const response = await fetch(`${daemonUrl}/rpc`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
  });
  const body = await response.json();
  if (body?.error) {
    throw new Error(body.error.message);
  }
  return body?.result;
}

/** What a notification says of an ask: the tool, the command or arguments. */
function askText(ask) {
  const shown = typeof ask.arguments?.command === 'string' ? ask.arguments.command : JSON.stringify(ask.arguments);
  const cut = shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
  return `Copilot Bridge: ${ask.tool} needs approval: ${cut}`;
}

class ApprovalPrompts {
  /**
   * @param {{window: {showWarningMessage: Function, showInformationMessage: Function},
   *   log: (line: string) => void}} options
   */
  constructor({ window, log }) {
    this.window = window;
    this.log = log;
    this.running = null;
  }

  /** Shows the asks of `binding.session` from now on (and those waiting). */
  follow(binding, home) {
    this.stop();
    const token = readApproverToken(home, this.log);
    if (!token) {
      return;
    }
    const run = { controller: new AbortController(), shown: new Set() };
    this.running = run;
    const rpc = (method, params, timeoutMs = 10000) =>
      call(binding.daemonUrl, token, method, params, run.controller.signal, timeoutMs);
    this.watch(run, binding.session, rpc).catch(() => undefined);
  }

  stop() {
    this.running?.controller.abort();
    this.running = null;
  }

  dispose() {
    this.stop();
  }

  async watch(run, session, rpc) {
    let next = null;
    while (!run.controller.signal.aborted) {
      try {
        if (next === null) {
          next = (await rpc('approvals.watch', {})).next;
          const listed = await rpc('approvals.list', { session });
          listed.asks.forEach((ask) => this.show(run, ask, rpc));
        }
        const watched = await rpc('approvals.watch', { since: next, waitMs: WATCH_WAIT_MS }, WATCH_WAIT_MS + 5000);
        next = watched.next;
        for (const event of watched.events) {
          if (event.type === 'requested' && event.session === session) {
            this.show(run, event.ask, rpc);
          } else if (event.type === 'resolved') {
            run.shown.delete(event.id);
          }
        }
      } catch (err) {
        if (run.controller.signal.aborted) {
          return;
        }
        this.log(`approvals: ${err.message}; watching again in ${RETRY_MS / 1000} s`);
        next = null;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }

  async show(run, ask, rpc) {
    if (run.shown.has(ask.id)) {
      return;
    }
    run.shown.add(ask.id);
    const offered = ['Allow once'];
    if (ask.choices.includes('session')) {
      offered.push('Allow for session');
    }
    offered.push('Deny');
    const picked = await this.window.showWarningMessage(askText(ask), { detail: ask.reason }, ...offered);
    if (!picked || run.controller.signal.aborted) {
      return;
    }
    const params = { id: ask.id, surface: 'vscode', decision: picked === 'Deny' ? 'deny' : 'allow' };
    if (picked === 'Allow for session') {
      params.scope = 'session';
    }
    try {
      await rpc('approvals.answer', params);
      this.log(`approvals: ${picked.toLowerCase()} for ${ask.id} (${ask.tool})`);
    } catch (err) {
      // Someone answered first, or the time ran out: say so.
      this.window.showInformationMessage(`Copilot Bridge: ${err.message}`);
    }
  }
}

module.exports = { ApprovalPrompts, askText };
