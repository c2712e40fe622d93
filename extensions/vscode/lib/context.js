'use strict';
// Ambient context: what the user has open and selected, sent to the session
// as `context.update` (at most 4 KiB) 300 ms after the editors settle. The
// daemon takes one update of a kind at a time per session, so the next waits
// for the `ack` of the previous one.

const vscode = require('vscode');
const { currentFolder, relativePathOf } = require('./workspace');

const DEBOUNCE_MS = 300;
const MAX_CONTEXT_BYTES = 4096;

/** `text` cut to at most `maxBytes` of UTF-8, marked when cut. */
function fitUtf8(text, maxBytes) {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) {
    return text;
  }
  const marker = '… [cut]';
  const room = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  let cut = Buffer.from(text, 'utf8').subarray(0, room).toString('utf8');
  // A multi-byte character split at the cut decodes to U+FFFD: drop it.
  cut = cut.replace(/\uFFFD$/, '');
  return cut + marker;
}

/** The context text for the editors as they are now. */
function describeEditors() {
  const folder = currentFolder();
  if (!folder) {
    return 'VS Code has no workspace folder open.';
  }
  const lines = [`VS Code, workspace folder "${folder.name}".`];
  const editor = vscode.window.activeTextEditor;
  const activePath = editor ? relativePathOf(folder, editor.document.uri) : null;
  let selected = '';
  if (editor && activePath !== null) {
    const { start, end } = editor.selection;
    const where = editor.selection.isEmpty
      ? `cursor at line ${start.line + 1}, column ${start.character + 1}`
      : `selection from line ${start.line + 1}, column ${start.character + 1} to line ${end.line + 1}, column ${end.character + 1}`;
    lines.push(`Active file: ${activePath} (${editor.document.languageId}${editor.document.isDirty ? ', unsaved changes' : ''}), ${where}.`);
    selected = editor.document.getText(editor.selection);
  } else {
    lines.push('No file of the workspace folder is active.');
  }
  const visible = vscode.window.visibleTextEditors
    .map((visibleEditor) => relativePathOf(folder, visibleEditor.document.uri))
    .filter((path) => path !== null && path !== activePath);
  if (visible.length > 0) {
    lines.push(`Also visible: ${[...new Set(visible)].join(', ')}.`);
  }
  const shown = new Set([activePath, ...visible]);
  const open = [];
  for (const tab of vscode.window.tabGroups.all.flatMap((group) => group.tabs)) {
    const path = tab.input instanceof vscode.TabInputText ? relativePathOf(folder, tab.input.uri) : null;
    if (path !== null && !shown.has(path)) {
      shown.add(path);
      open.push(tab.isDirty ? `${path} (unsaved)` : path);
    }
  }
  if (open.length > 0) {
    // The list must leave room for the selection, which matters more.
    lines.push(fitUtf8(`Other open files: ${open.join(', ')}.`, MAX_CONTEXT_BYTES / 4));
  }
  const head = lines.join('\n');
  if (selected === '') {
    return fitUtf8(head, MAX_CONTEXT_BYTES);
  }
  const label = '\nSelected text:\n';
  const room = MAX_CONTEXT_BYTES - Buffer.byteLength(head + label, 'utf8');
  return room > 64 ? head + label + fitUtf8(selected, room) : fitUtf8(head, MAX_CONTEXT_BYTES);
}

class ContextReporter {
  /** @param {{send: (message: object) => boolean}} options */
  constructor(options) {
    this.options = options;
    this.bound = false;
    this.timer = null;
    this.lastSent = null;
    /** requestId of the update waiting for its ack, and whether another change came meanwhile. */
    this.inFlight = null;
    this.pending = false;
    this.counter = 0;
    this.subscriptions = [
      vscode.window.onDidChangeActiveTextEditor(() => this.schedule()),
      vscode.window.onDidChangeTextEditorSelection(() => this.schedule()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.schedule()),
      vscode.window.tabGroups.onDidChangeTabs(() => this.schedule()),
    ];
  }

  /** A new binding: its session has no context from this window yet. */
  bind() {
    this.bound = true;
    this.lastSent = null;
    this.inFlight = null;
    this.pending = false;
    this.flush();
  }

  unbind() {
    this.bound = false;
    clearTimeout(this.timer);
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), DEBOUNCE_MS);
  }

  flush() {
    if (!this.bound) {
      return;
    }
    if (this.inFlight) {
      this.pending = true;
      return;
    }
    const context = describeEditors();
    if (context === this.lastSent) {
      return;
    }
    const requestId = `context-${++this.counter}`;
    if (this.options.send({ type: 'context.update', requestId, context })) {
      this.inFlight = requestId;
      this.lastSent = context;
    }
  }

  /** The daemon's `ack` or `error` for `requestId`: the next update may go. */
  answered(requestId) {
    if (requestId !== this.inFlight) {
      return false;
    }
    this.inFlight = null;
    if (this.pending) {
      this.pending = false;
      this.flush();
    }
    return true;
  }

  dispose() {
    clearTimeout(this.timer);
    this.subscriptions.forEach((subscription) => subscription.dispose());
  }
}

module.exports = { ContextReporter };
