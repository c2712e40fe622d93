'use strict';
// The tools that change files, through the editor so open documents, undo
// and unsaved edits stay consistent: vscode_apply_diff, vscode_format,
// vscode_organize_imports. The tool host refuses them in read-only mode
// before they get here. Each calls `committing()` just before it starts
// changing the editor's text: from then on a `tool.cancel` cannot undo the
// change, so the call's real outcome is answered instead of CANCELLED.

const vscode = require('vscode');
const { ToolError } = require('./tool-error');
const { parseUnifiedDiff, DiffParseError } = require('./diff');
const { planFileChange, wholeFileConflict } = require('./diff-apply');
const { resolvePath, lookUpDocument, existingDocument, saveDocument } = require('./workspace');

/** A language server starts on the first request for its language; ask once more after this. */
const LAZY_PROVIDER_RETRY_MS = 1000;

/**
 * vscode_apply_diff {unifiedDiff, save?} → as the daemon's apply_patch:
 * {ok: true, conflicts: [], files} or {ok: false, files: [], message, conflicts}.
 */
async function applyDiff(args, { folder, token, tool, committing }) {
  let files;
  try {
    files = parseUnifiedDiff(args.unifiedDiff);
  } catch (err) {
    throw err instanceof DiffParseError ? new ToolError('INVALID_ARGUMENTS', `${tool}: malformed diff at ${err.message}`) : err;
  }
  const targets = [];
  const seen = new Set();
  for (const file of files) {
    const purpose = file.change === 'created' ? 'create' : 'write';
    const { uri, relative } = resolvePath(folder, tool, 'unifiedDiff', file.path, purpose);
    if (seen.has(relative)) {
      throw new ToolError('INVALID_ARGUMENTS', `${tool}: ${relative} is named by two file headers of the diff`);
    }
    seen.add(relative);
    targets.push({ file: { ...file, path: relative }, uri, found: await lookUpDocument(uri, relative) });
  }
  if (token.isCancellationRequested) {
    throw new vscode.CancellationError();
  }
  // Nothing awaits from here to applyEdit: the text each hunk was verified
  // against is the text the edit applies to.
  const conflicts = [];
  const edit = new vscode.WorkspaceEdit();
  for (const { file, uri, found } of targets) {
    const plan = found.unusable
      ? { conflicts: [wholeFileConflict(found.unusable)] }
      : planFileChange(file, found.document ? found.document.getText() : null);
    if (plan.conflicts) {
      conflicts.push(...plan.conflicts.map((conflict) => ({ file: file.path, ...conflict })));
    } else if (conflicts.length === 0) {
      addToEdit(edit, file, uri, found.document, plan);
    }
  }
  if (conflicts.length > 0) {
    return { ok: false, files: [], message: `${conflicts.length} conflict(s); nothing was written`, conflicts };
  }
  committing();
  if (edit.size > 0 && !(await vscode.workspace.applyEdit(edit))) {
    throw new ToolError(
      'INTERNAL',
      `${tool}: VS Code refused the edit of ${targets.map((t) => t.file.path).join(', ')}; nothing was changed (did one of them change meanwhile? try again)`,
    );
  }
  if (args.save !== false) {
    await saveAll(tool, targets.filter((target) => target.file.change !== 'deleted'));
  }
  return {
    ok: true,
    conflicts: [],
    files: targets.map(({ file }) => ({ path: file.path, status: file.change, hunks: file.hunks.length })),
  };
}

/** One file's part of the workspace edit. */
function addToEdit(edit, file, uri, document, plan) {
  if (file.change === 'created') {
    edit.createFile(uri, { ignoreIfExists: false });
    if (plan.content !== '') {
      edit.insert(uri, new vscode.Position(0, 0), plan.content);
    }
  } else if (file.change === 'deleted') {
    edit.deleteFile(uri, { ignoreIfNotExists: false });
  } else {
    for (const change of plan.edits) {
      edit.replace(uri, new vscode.Range(document.positionAt(change.start), document.positionAt(change.end)), change.text);
    }
  }
}

/** Saves every target, then reports all that could not be saved at once. */
async function saveAll(tool, targets) {
  const unsaved = [];
  for (const { file, uri } of targets) {
    try {
      await saveDocument(tool, await vscode.workspace.openTextDocument(uri), file.path);
    } catch (err) {
      unsaved.push(`${file.path} (${err.message})`);
    }
  }
  if (unsaved.length > 0) {
    throw new ToolError('INTERNAL', `${tool}: the diff was applied in the editor, but saving failed for ${unsaved.join('; ')}`);
  }
}

/** vscode_format {path} → {ok: true, path, changed}, through the formatter VS Code uses for the file. */
async function format(args, { folder, token, tool, committing }) {
  const { uri, relative } = resolvePath(folder, tool, 'path', args.path, 'write');
  const document = await existingDocument(tool, uri, relative);
  const before = document.getText();
  let edits = await formattingEdits(document);
  if (edits === undefined) {
    await pause(LAZY_PROVIDER_RETRY_MS, token);
    edits = await formattingEdits(document);
  }
  if (token.isCancellationRequested) {
    throw new vscode.CancellationError();
  }
  committing();
  if (Array.isArray(edits)) {
    const edit = new vscode.WorkspaceEdit();
    edit.set(uri, edits);
    if (edits.length > 0 && !(await vscode.workspace.applyEdit(edit))) {
      throw new ToolError('INTERNAL', `${tool}: VS Code refused the formatter's edit of ${relative} (did it change meanwhile? try again)`);
    }
  } else {
    // No formatting provider answered: the editor's own command may still
    // reach one (a range formatter, a formatter chosen in settings).
    await withDocumentShown(document, () => vscode.commands.executeCommand('editor.action.formatDocument'));
    if (document.getText() === before && !(await formatterExists(document))) {
      throw new ToolError(
        'NOT_CONFIGURED',
        `${tool}: no formatter changed ${relative} (language ${document.languageId}): none is installed for it, or it is already formatted and does not say so; setting "editor.defaultFormatter" for [${document.languageId}] tells the two apart`,
      );
    }
  }
  const changed = document.getText() !== before;
  if (changed) {
    await saveDocument(tool, document, relative);
  }
  return { ok: true, path: relative, changed };
}

/**
 * The formatting provider's edits, or undefined when none answered (or it had
 * nothing to change). No options are passed, so VS Code formats with the
 * document's own indentation (detected from its text, or the settings), as
 * "Format Document" does; the settings alone could disagree with it.
 */
function formattingEdits(document) {
  return vscode.commands.executeCommand('vscode.executeFormatDocumentProvider', document.uri);
}

/**
 * Whether a formatter serves the document although it proposed no edits.
 * VS Code answers the same for "no formatter" and "nothing to change", so:
 * `editor.defaultFormatter` names an installed extension, or a formatter
 * asked for an indentation of 7 spaces proposes edits (any formatter that
 * follows the editor's indentation does, for an indented file).
 */
async function formatterExists(document) {
  const id = vscode.workspace.getConfiguration('editor', document).get('defaultFormatter');
  if (typeof id === 'string' && vscode.extensions.getExtension(id) !== undefined) {
    return true;
  }
  const probe = await vscode.commands.executeCommand('vscode.executeFormatDocumentProvider', document.uri, { tabSize: 7, insertSpaces: true });
  return Array.isArray(probe) && probe.length > 0;
}

/**
 * Runs an editor command that acts on the active editor with `document`
 * shown, then shows again what the user had active.
 */
async function withDocumentShown(document, action) {
  const previous = vscode.window.activeTextEditor;
  await vscode.window.showTextDocument(document, { preview: true, preserveFocus: false });
  try {
    return await action();
  } finally {
    if (previous && previous.document !== document) {
      await vscode.window.showTextDocument(previous.document, { viewColumn: previous.viewColumn, selection: previous.selection });
    }
  }
}

/** vscode_organize_imports {path} → {ok: true, path, changed}, through the language's "Organize Imports" code action. */
async function organizeImports(args, { folder, token, tool, committing }) {
  const { uri, relative } = resolvePath(folder, tool, 'path', args.path, 'write');
  const document = await existingDocument(tool, uri, relative);
  const before = document.getText();
  let action = await organizeImportsAction(document);
  if (!action) {
    await pause(LAZY_PROVIDER_RETRY_MS, token);
    action = await organizeImportsAction(document);
  }
  if (!action) {
    throw new ToolError(
      'NOT_CONFIGURED',
      `${tool}: no extension offers "Organize Imports" (source.organizeImports) for ${relative} (language ${document.languageId})`,
    );
  }
  if (token.isCancellationRequested) {
    throw new vscode.CancellationError();
  }
  committing();
  if (action.edit && !(await vscode.workspace.applyEdit(action.edit))) {
    throw new ToolError('INTERNAL', `${tool}: VS Code refused the "${action.title}" edit of ${relative} (did it change meanwhile? try again)`);
  }
  if (action.command) {
    await vscode.commands.executeCommand(action.command.command, ...(action.command.arguments ?? []));
  }
  const changed = document.getText() !== before;
  if (changed) {
    await saveDocument(tool, document, relative);
  }
  return { ok: true, path: relative, changed };
}

/** The organize-imports code action for the whole document (its edit resolved), or null. */
async function organizeImportsAction(document) {
  const kind = vscode.CodeActionKind.SourceOrganizeImports;
  const whole = new vscode.Range(document.positionAt(0), document.positionAt(document.getText().length));
  const actions = await vscode.commands.executeCommand('vscode.executeCodeActionProvider', document.uri, whole, kind.value, 1);
  const candidates = (actions ?? []).filter((action) => action.kind && kind.contains(action.kind) && !action.disabled);
  return candidates.find((action) => action.kind.value === kind.value) ?? candidates[0] ?? null;
}

/** Waits `ms`, or throws CancellationError as soon as the call is cancelled. */
function pause(ms, token) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      listener.dispose();
      resolve();
    }, ms);
    const listener = token.onCancellationRequested(() => {
      clearTimeout(timer);
      listener.dispose();
      reject(new vscode.CancellationError());
    });
  });
}

module.exports = { applyDiff, format, organizeImports };
