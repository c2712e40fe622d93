'use strict';
// Paths as the tools resolve them in a real folder (with a fake `vscode`):
// dangling symlinks, creating through a symlink, the protected files
// reached through a link, and which search hits count as inside.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const nodePath = require('node:path');

const vscode = require('./fake-vscode');
const { resolvePath } = require('../lib/workspace');
const { insideChecker } = require('../lib/search');

const base = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), 'cb-ws-')));
const root = nodePath.join(base, 'ws');
const outside = nodePath.join(base, 'outside');
fs.mkdirSync(nodePath.join(root, '.git'), { recursive: true });
fs.mkdirSync(outside);
fs.writeFileSync(nodePath.join(root, 'a.txt'), 'a');
fs.writeFileSync(nodePath.join(outside, 'secret.txt'), 's');
fs.symlinkSync(nodePath.join(outside, 'planted.txt'), nodePath.join(root, 'dangling'));
fs.symlinkSync(nodePath.join(root, 'a.txt'), nodePath.join(root, 'link-in'));
fs.symlinkSync(nodePath.join(outside, 'secret.txt'), nodePath.join(root, 'link-out'));
fs.symlinkSync(nodePath.join(root, '.git'), nodePath.join(root, 'meta'));
test.after(() => fs.rmSync(base, { recursive: true, force: true }));

const folder = { uri: vscode.Uri.file(root), name: 'ws', path: root, realPath: root };

function refused(purpose, input, code, reason) {
  assert.throws(
    () => resolvePath(folder, 'vscode_apply_diff', 'unifiedDiff', input, purpose),
    (err) => {
      assert.equal(err.code, code, err.message);
      assert.match(err.message, reason);
      return true;
    },
    `${purpose} ${input}`,
  );
}

test('a dangling symlink is refused for reading and writing', () => {
  for (const purpose of ['read', 'write', 'create']) {
    refused(purpose, 'dangling', 'INVALID_ARGUMENTS', /target does not exist or cannot be resolved/);
    refused(purpose, 'link-out', 'INVALID_ARGUMENTS', /leads outside the workspace folder/);
  }
});

test('a file is not created through a symlink; one inside may be read and written', () => {
  refused('create', 'link-in', 'INVALID_ARGUMENTS', /is a symbolic link; a new file is not created through one/);
  assert.equal(resolvePath(folder, 't', 'path', 'link-in', 'write').relative, 'link-in');
  assert.equal(resolvePath(folder, 't', 'path', 'new/file.txt', 'create').relative, 'new/file.txt');
});

test('.git and the policy file are refused for writes, also through a link, but not for reads', () => {
  refused('write', '.git/config', 'UNAUTHORIZED', /vscode_apply_diff refused: \.git\/config is git's metadata/);
  refused('create', '.agent-policy.yaml', 'UNAUTHORIZED', /policy file/);
  refused('write', 'meta/config', 'UNAUTHORIZED', /through a symbolic link: \.git\/config/);
  assert.equal(resolvePath(folder, 't', 'path', '.git/config', 'read').relative, '.git/config');
});

test('search hits count only when their real path is inside the folder (and, for the fallback, not a symlink)', () => {
  const uri = (name) => vscode.Uri.file(nodePath.join(root, name));
  const follow = insideChecker(folder, false);
  assert.deepEqual(['a.txt', 'link-in', 'link-out', 'dangling'].map((name) => follow(uri(name))), [true, true, false, false]);
  const noLinks = insideChecker(folder, true);
  assert.deepEqual(['a.txt', 'link-in', 'link-out'].map((name) => noLinks(uri(name))), [true, false, false]);
});
