'use strict';
// Workspace-relative paths as the tools take and return them: `/`-separated,
// relative to the window's first workspace folder, never leaving it. The
// daemon checks declared paths too, but the editor never trusts a caller
// with its files. No `vscode` import, so node can test it.

const fs = require('node:fs');
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

/**
 * Where the file `absolute` (under the folder) really is: symlinks resolved
 * up to its nearest existing ancestor. `problem` says why it is refused: it
 * resolves outside the folder, or an entry on the way (the file itself
 * included) is a symlink that cannot be resolved — a dangling link would
 * otherwise pass the ancestor check and a write would create its target
 * wherever it points.
 * @param {string} folderReal the folder with symlinks resolved
 * @param {string} absolute
 * @returns {{real: string|null, symlink: boolean, problem: string|null}}
 *   `real`: the resolved path (null with a problem); `symlink`: the final
 *   component itself is a symlink.
 */
function realLocation(folderReal, absolute) {
  const entry = lstatOrNull(absolute);
  const symlink = entry !== null && entry !== 'error' && entry.isSymbolicLink();
  const rest = [];
  let existing = absolute;
  for (;;) {
    let real;
    try {
      real = fs.realpathSync.native(existing);
    } catch {
      // An entry that lstat sees but realpath cannot follow: a dangling
      // symlink or a loop (or one we may not look into).
      const seen = lstatOrNull(existing);
      if (seen === 'error') {
        return { real: null, symlink, problem: 'cannot be checked: a directory on its way cannot be read' };
      }
      if (seen !== null) {
        return {
          real: null,
          symlink,
          problem: 'is or goes through a symbolic link whose target does not exist or cannot be resolved',
        };
      }
      const parent = nodePath.dirname(existing);
      if (parent === existing) {
        return { real: null, symlink, problem: 'cannot be resolved' };
      }
      rest.unshift(nodePath.basename(existing));
      existing = parent;
      continue;
    }
    if (!isInside(folderReal, real)) {
      return { real: null, symlink, problem: 'leads outside the workspace folder through a symbolic link' };
    }
    return { real: nodePath.join(real, ...rest), symlink, problem: null };
  }
}

/**
 * lstat of `path`; null when nothing is there, 'error' when it may not be
 * looked at. (ELOOP: a symlink loop on the way, which counts as there.)
 */
function lstatOrNull(path) {
  try {
    return fs.lstatSync(path);
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') {
      return null;
    }
    return err.code === 'EACCES' || err.code === 'EPERM' ? 'error' : { isSymbolicLink: () => false };
  }
}

/**
 * Why the editor refuses to let an agent write `relative` whatever the
 * settings say, or null. A backstop behind the daemon's own policy: the
 * policy file at the folder's root (an agent that rewrites it sets its own
 * rules) and git's metadata (`.git/hooks`, `.git/config` run programs).
 * Compared case-insensitively and without trailing dots, spaces or `:stream`
 * suffixes, which name the same entry on Windows and macOS file systems.
 * @param {string} relative a normalized `/` path relative to the folder
 * @returns {string|null}
 */
function protectedWriteReason(relative) {
  const segments = relative.split('/').map((segment) => segment.toLowerCase().split(':')[0].replace(/[. ]+$/, ''));
  if (segments.length === 1 && segments[0] === '.agent-policy.yaml') {
    return "is the daemon's policy file (.agent-policy.yaml); agents may not change it through the editor";
  }
  if (segments.includes('.git')) {
    return "is git's metadata (.git/), which can run programs (hooks, config); agents may not change it through the editor";
  }
  return null;
}

module.exports = { normalizeRelativePath, isInside, toRelative, realLocation, protectedWriteReason };
