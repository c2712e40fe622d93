'use strict';
// Workspace-relative paths as the tools take and return them: `/`-separated,
// relative to the window's first workspace folder, never leaving it. The
// daemon checks declared paths too, but the editor never trusts a caller
// with its files. No `vscode` import, so node can test it.

const nodePath = require('node:path');
const { ToolError } = require('./tool-error');

/**
 * `input` normalized (`./a//b/../c` → `a/c`), or a ToolError naming why it is
 * not a path inside the workspace folder.
 * @param {string} tool the tool name, for the message
 * @param {string} argName the argument that held the path
 * @param {string} input
 * @returns {string}
 */
function normalizeRelativePath(tool, argName, input) {
  const refuse = (why) =>
    new ToolError('INVALID_ARGUMENTS', `${tool}: ${argName} ${JSON.stringify(input)} ${why}`);
  if (input.includes('\0')) {
    throw refuse('contains a NUL character');
  }
  if (input.startsWith('/') || /^[A-Za-z]:/.test(input) || input.startsWith('\\\\')) {
    throw refuse('is absolute; give a path relative to the workspace folder, with /');
  }
  // A backslash is a separator on Windows: splitting on it there keeps
  // `..\..\x` from slipping past the `..` check.
  const separators = process.platform === 'win32' ? /[\\/]/ : /\//;
  const segments = [];
  for (const segment of input.split(separators)) {
    if (segment === '' || segment === '.') {
      continue;
    }
    if (segment === '..') {
      if (segments.length === 0) {
        throw refuse('leaves the workspace folder');
      }
      segments.pop();
      continue;
    }
    segments.push(segment);
  }
  if (segments.length === 0) {
    throw refuse('names the workspace folder itself, not a file in it');
  }
  return segments.join('/');
}

/**
 * Whether `candidate` is `root` or beneath it; both absolute, symlinks already
 * resolved by the caller.
 */
function isInside(root, candidate) {
  const relative = nodePath.relative(root, candidate);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${nodePath.sep}`) && !nodePath.isAbsolute(relative));
}

/** `absolute` (inside `root`) as a workspace-relative `/` path. */
function toRelative(root, absolute) {
  return nodePath.relative(root, absolute).split(nodePath.sep).join('/');
}

module.exports = { normalizeRelativePath, isInside, toRelative };
