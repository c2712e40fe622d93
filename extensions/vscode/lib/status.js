'use strict';
// The status bar item, and for tests a machine-readable copy of the same
// status in the file COPILOT_BRIDGE_VSCODE_STATUS_FILE names (rewritten
// atomically on every change).

const fs = require('node:fs');
const vscode = require('vscode');

/**
 * @typedef {{state: 'on'|'off', chat: 'ok'|'unavailable', providerId: string|null,
 *   session: string|null, daemonUrl: string|null, models: string[], readOnly: boolean,
 *   problem: string|null}} Status  `problem`: why it is off (tooltip only).
 */

/** The status bar text, exactly as the contract spells it. */
function statusText(status) {
  if (status.state !== 'on') {
    return 'Bridge: OFF';
  }
  return `Bridge: ON · Chat: ${status.chat === 'ok' ? 'OK' : 'Unavailable'}`;
}

class StatusView {
  /** @param {(line: string) => void} log */
  constructor(log) {
    this.log = log;
    this.item = vscode.window.createStatusBarItem('copilot-bridge.status', vscode.StatusBarAlignment.Left, 100);
    this.item.name = 'Copilot Bridge';
    this.item.command = 'bridge.status';
    this.file = process.env.COPILOT_BRIDGE_VSCODE_STATUS_FILE || null;
    this.lastWritten = null;
    this.fileFailed = false;
    this.item.show();
  }

  /** @param {Status} status */
  show(status) {
    const text = statusText(status);
    this.item.text = text;
    const lines = [
      'Copilot Bridge',
      `Daemon: ${status.daemonUrl ?? 'not connected'}`,
      `Session: ${status.session ?? '—'}`,
      `Chat models: ${status.models.length > 0 ? status.models.join(', ') : 'none offered'}`,
      `Read-only: ${status.readOnly ? 'yes' : 'no'}`,
    ];
    if (status.state !== 'on' && status.problem) {
      lines.push(`Why off: ${status.problem}`);
    }
    this.item.tooltip = lines.join('\n');
    this.writeFile(status, text);
  }

  writeFile(status, text) {
    if (!this.file) {
      return;
    }
    const snapshot = {
      state: status.state,
      chat: status.chat,
      statusText: text,
      providerId: status.providerId,
      session: status.session,
      daemonUrl: status.daemonUrl,
      models: status.models,
      readOnly: status.readOnly,
    };
    const key = JSON.stringify(snapshot);
    if (key === this.lastWritten) {
      return;
    }
    const temporary = `${this.file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(temporary, `${JSON.stringify({ ...snapshot, updatedAt: new Date().toISOString() }, null, 2)}\n`);
      fs.renameSync(temporary, this.file);
      this.lastWritten = key;
      this.fileFailed = false;
    } catch (err) {
      if (!this.fileFailed) {
        this.fileFailed = true;
        this.log(`cannot write the status file ${this.file}: ${err.message}`);
      }
    }
  }

  /**
   * bridge.status: the whole status in the log, a summary in a notification.
   * @param {Status} status
   * @param {string|undefined} chatReason why chat is unavailable
   * @param {() => void} revealLog
   */
  async report(status, chatReason, revealLog) {
    const chat = status.chat === 'ok' ? `available: ${status.models.join(', ')}` : `unavailable (${chatReason ?? 'not connected'})`;
    const lines = [
      `status: ${statusText(status)}`,
      `daemon: ${status.daemonUrl ?? 'not connected'}`,
      `session: ${status.session ?? '—'}`,
      `provider id: ${status.providerId ?? '—'}`,
      `chat: ${chat}`,
      `read-only: ${status.readOnly}`,
    ];
    if (status.problem) {
      lines.push(`why off: ${status.problem}`);
    }
    lines.forEach((line) => this.log(line));
    const summary = status.state === 'on' ? `${statusText(status)} — ${status.daemonUrl}, session ${status.session}` : `${statusText(status)} — ${status.problem ?? 'not connected'}`;
    if ((await vscode.window.showInformationMessage(`Copilot Bridge: ${summary}`, 'Show Log')) === 'Show Log') {
      revealLog();
    }
  }

  dispose() {
    this.item.dispose();
  }
}

module.exports = { StatusView, statusText };
