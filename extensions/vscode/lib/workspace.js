'use strict';
// The workspace folder the tools work in (the window's first folder), paths
// in it, and its documents as the editor has them (unsaved edits included).

const fs = require('node:fs');
const vscode = require('vscode');
const { ToolError } = require('./tool-error');
const { normalizeRelativePath, isInside, toRelative, realLocation, protectedWriteReason } = require('./paths');

/**
 * @typedef {{uri: import('vscode').Uri, name: string, path: string, realPath: string}} Folder
 *   `path`: the folder's file-system path; `realPath`: the same with symlinks resolved.
 */

/** The window's first workspace folder when it is on disk, or null. */
function currentFolder() {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder || folder.uri.scheme !== 'file') {
    return null;
  }
  const path = folder.uri.fsPath;
  let realPath = path;
  try {
    realPath = fs.realpathSync.native(path);
  } catch {
    // A folder that vanished: containment checks then compare the plain path.
  }
  return { uri: folder.uri, name: folder.name, path, realPath };
}

/**
 * The file `input` names in `folder`: its uri and normalized relative path.
 * Refuses paths that leave the folder, also through a symlink (the nearest
 * existing ancestor of the target must resolve inside the folder, and no
 * entry on the way may be a symlink that does not resolve). With `purpose`
 * `write` or `create` it also refuses the files no agent may change
 * (protectedWriteReason), by the given and by the resolved name; `create`
 * refuses a file name that is a symlink.
 * @param {Folder} folder
 * @param {'read'|'write'|'create'} [purpose]
 * @returns {{uri: import('vscode').Uri, relative: string}}
 */
function resolvePath(folder, tool, argName, input, purpose = 'read') {
  const relative = normalizeRelativePath(tool, argName, input);
  const uri = vscode.Uri.joinPath(folder.uri, ...relative.split('/'));
  const where = `${tool}: ${argName} ${JSON.stringify(input)}`;
  const location = realLocation(folder.realPath, uri.fsPath);
  if (location.problem !== null) {
    throw new ToolError('INVALID_ARGUMENTS', `${where} ${location.problem}`);
  }
  if (purpose === 'read') {
    return { uri, relative };
  }
  if (purpose === 'create' && location.symlink) {
    throw new ToolError('INVALID_ARGUMENTS', `${where} is a symbolic link; a new file is not created through one`);
  }
  for (const name of [relative, toRelative(folder.realPath, location.real)]) {
    const reason = protectedWriteReason(name);
    if (reason !== null) {
      const shown = name === relative ? '' : ` (through a symbolic link: ${name})`;
      throw new ToolError('UNAUTHORIZED', `${tool} refused: ${relative}${shown} ${reason}`);
    }
  }
  return { uri, relative };
}

/** `uri` as a path relative to `folder`, or null when it is not a file inside it. */
function relativePathOf(folder, uri) {
  if (uri.scheme !== 'file' || !isInside(folder.path, uri.fsPath) || uri.fsPath === folder.path) {
    return null;
  }
  return toRelative(folder.path, uri.fsPath);
}

/** The document already loaded for `uri`, if any. */
function loadedDocument(uri) {
  const key = uri.toString();
  return vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === key);
}

/**
 * What the editor has at `uri`: {document} (loaded, with unsaved edits),
 * {missing: true}, or {unusable: reason} (a directory, or not text).
 */
async function lookUpDocument(uri, relative) {
  const loaded = loadedDocument(uri);
  if (loaded) {
    return { document: loaded };
  }
  let stat;
  try {
    stat = await vscode.workspace.fs.stat(uri);
  } catch (err) {
    if (err instanceof vscode.FileSystemError && err.code === 'FileNotFound') {
      return { missing: true };
    }
    return { unusable: `cannot read ${relative}: ${err.message}` };
  }
  if (stat.type & vscode.FileType.Directory) {
    return { unusable: `${relative} is a directory, not a file` };
  }
  try {
    return { document: await vscode.workspace.openTextDocument(uri) };
  } catch (err) {
    return { unusable: `${relative} cannot be opened as text (${err.message})` };
  }
}

/** The document of an existing file, or the ToolError saying why there is none. */
async function existingDocument(tool, uri, relative) {
  const found = await lookUpDocument(uri, relative);
  if (found.missing) {
    throw new ToolError('NOT_FOUND', `${tool}: ${relative} does not exist in the workspace folder`);
  }
  if (found.unusable) {
    throw new ToolError('INVALID_ARGUMENTS', `${tool}: ${found.unusable}`);
  }
  return found.document;
}

/** How often, and after how long, a save the editor declined is tried again. */
const SAVE_RETRIES_MS = [300, 1000];

/**
 * Saves `document` when it has unsaved changes; a refusal is a ToolError
 * naming the file. The editor declines a save now and then while its window
 * is still restoring (seen right after a window reload), so a declined save
 * is tried again before it counts as failed.
 */
async function saveDocument(tool, document, relative) {
  for (const wait of [...SAVE_RETRIES_MS, null]) {
    if (!document.isDirty || (await document.save())) {
      return;
    }
    if (wait === null) {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
  throw new ToolError('INTERNAL', `${tool}: VS Code could not save ${relative}; the change is in the editor, unsaved`);
}

module.exports = { currentFolder, resolvePath, relativePathOf, lookUpDocument, existingDocument, saveDocument };
