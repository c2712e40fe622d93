'use strict';
// The tools that only look: vscode_read, vscode_diagnostics,
// vscode_open_editors (vscode_search lives in search.js).

const crypto = require('node:crypto');
const vscode = require('vscode');
const { resolvePath, relativePathOf, existingDocument } = require('./workspace');
const { search } = require('./search');

/** vscode_read {path} → the editor's text of the file and what it knows about it. */
async function readFile(args, { folder, tool }) {
  const { uri, relative } = resolvePath(folder, tool, 'path', args.path);
  const document = await existingDocument(tool, uri, relative);
  const content = document.getText();
  return {
    path: relative,
    content,
    sha256: crypto.createHash('sha256').update(content, 'utf8').digest('hex'),
    dirty: document.isDirty,
    languageId: document.languageId,
    version: document.version,
    lineCount: document.lineCount,
  };
}

const SEVERITIES = ['error', 'warning', 'information', 'hint'];
/** More diagnostics than an agent can use; the rest is counted as truncated. */
const MAX_DIAGNOSTICS = 2000;

/** vscode_diagnostics {path?} → the problems the editor shows, 1-based positions. */
async function diagnostics(args, { folder, tool }) {
  let entries;
  if (args.path !== undefined) {
    const { uri, relative } = resolvePath(folder, tool, 'path', args.path);
    entries = [[uri, vscode.languages.getDiagnostics(uri), relative]];
  } else {
    entries = vscode.languages
      .getDiagnostics()
      .map(([uri, list]) => [uri, list, relativePathOf(folder, uri)])
      .filter(([, , relative]) => relative !== null);
  }
  const found = [];
  for (const [, list, path] of entries) {
    for (const diagnostic of list) {
      const { start, end } = diagnostic.range;
      const code = typeof diagnostic.code === 'object' && diagnostic.code !== null ? diagnostic.code.value : diagnostic.code;
      found.push({
        path,
        line: start.line + 1,
        column: start.character + 1,
        endLine: end.line + 1,
        endColumn: end.character + 1,
        severity: SEVERITIES[diagnostic.severity] ?? 'error',
        message: diagnostic.message,
        source: diagnostic.source ?? null,
        code: code ?? null,
      });
    }
  }
  found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line || a.column - b.column));
  return { diagnostics: found.slice(0, MAX_DIAGNOSTICS), truncated: found.length > MAX_DIAGNOSTICS };
}

/** A position as the tools give it: 1-based line and column. */
const position = (pos) => ({ line: pos.line + 1, column: pos.character + 1 });

/** vscode_open_editors {} → the active editor with its selection, and every open tab in the folder. */
async function openEditors(_args, { folder }) {
  const editor = vscode.window.activeTextEditor;
  const activePath = editor ? relativePathOf(folder, editor.document.uri) : null;
  const active =
    editor && activePath !== null
      ? {
          path: activePath,
          languageId: editor.document.languageId,
          selection: { start: position(editor.selection.start), end: position(editor.selection.end) },
          selectedText: editor.document.getText(editor.selection),
        }
      : null;
  const loaded = new Map(vscode.workspace.textDocuments.map((doc) => [doc.uri.toString(), doc]));
  const open = [];
  const seen = new Set();
  for (const group of vscode.window.tabGroups.all) {
    for (const tab of group.tabs) {
      if (!(tab.input instanceof vscode.TabInputText)) {
        continue;
      }
      const path = relativePathOf(folder, tab.input.uri);
      if (path === null || seen.has(path)) {
        continue;
      }
      seen.add(path);
      // Tabs restored at startup have no document until they are shown.
      const document = loaded.get(tab.input.uri.toString());
      open.push({ path, languageId: document ? document.languageId : null, dirty: tab.isDirty });
    }
  }
  return { active, open };
}

module.exports = { search, readFile, diagnostics, openEditors };
