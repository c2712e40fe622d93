'use strict';
// Where a path really leads (symlinks, dangling ones included) and the files
// no agent may change through the editor.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const nodePath = require('node:path');

const { realLocation, protectedWriteReason } = require('../lib/paths');

function tempTree() {
  const base = fs.realpathSync(fs.mkdtempSync(nodePath.join(os.tmpdir(), 'cb-paths-')));
  const folder = nodePath.join(base, 'ws');
  const outside = nodePath.join(base, 'outside');
  fs.mkdirSync(nodePath.join(folder, 'src'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(nodePath.join(folder, 'src', 'a.txt'), 'a');
  fs.writeFileSync(nodePath.join(outside, 'secret.txt'), 's');
  fs.symlinkSync(nodePath.join(outside, 'secret.txt'), nodePath.join(folder, 'out-link'));
  fs.symlinkSync(nodePath.join(outside, 'not-yet.txt'), nodePath.join(folder, 'dangling-out'));
  fs.symlinkSync(nodePath.join(folder, 'src', 'missing.txt'), nodePath.join(folder, 'dangling-in'));
  fs.symlinkSync(nodePath.join(outside, 'nodir'), nodePath.join(folder, 'dangling-dir'));
  fs.symlinkSync(nodePath.join(folder, 'src', 'a.txt'), nodePath.join(folder, 'in-link'));
  fs.symlinkSync(nodePath.join(folder, 'loop'), nodePath.join(folder, 'loop'));
  fs.mkdirSync(nodePath.join(folder, '.git'));
  fs.symlinkSync(nodePath.join(folder, '.git'), nodePath.join(folder, 'gitdir'));
  return { base, folder, at: (relative) => nodePath.join(folder, ...relative.split('/')) };
}

test('plain files, new files and links inside resolve inside the folder', (t) => {
  const tree = tempTree();
  t.after(() => fs.rmSync(tree.base, { recursive: true, force: true }));
  assert.deepEqual(realLocation(tree.folder, tree.at('src/a.txt')), { real: tree.at('src/a.txt'), symlink: false, problem: null });
  assert.deepEqual(realLocation(tree.folder, tree.at('src/new/b.txt')), { real: tree.at('src/new/b.txt'), symlink: false, problem: null });
  assert.deepEqual(realLocation(tree.folder, tree.at('in-link')), { real: tree.at('src/a.txt'), symlink: true, problem: null });
  assert.equal(realLocation(tree.folder, tree.at('gitdir/config')).real, tree.at('.git/config'));
});

test('links leading out, dangling links and loops are refused, the final component too', (t) => {
  const tree = tempTree();
  t.after(() => fs.rmSync(tree.base, { recursive: true, force: true }));
  assert.match(realLocation(tree.folder, tree.at('out-link')).problem, /leads outside the workspace folder/);
  for (const relative of ['dangling-out', 'dangling-in', 'dangling-dir/x.txt', 'loop', 'loop/x']) {
    const found = realLocation(tree.folder, tree.at(relative));
    assert.match(found.problem ?? '', /symbolic link whose target does not exist or cannot be resolved/, relative);
    assert.equal(found.real, null);
  }
  assert.equal(realLocation(tree.folder, tree.at('dangling-in')).symlink, true);
});

test('the policy file at the root and anything under .git are protected', () => {
  for (const relative of ['.agent-policy.yaml', '.Agent-Policy.YAML', '.agent-policy.yaml.', '.git/config', '.git', 'sub/.git/hooks/pre-commit', '.GIT/hooks/x', '.git./config', '.git::$INDEX_ALLOCATION/x']) {
    assert.notEqual(protectedWriteReason(relative), null, relative);
  }
  assert.match(protectedWriteReason('.agent-policy.yaml'), /policy file/);
  assert.match(protectedWriteReason('.git/config'), /\.git\//);
  for (const relative of ['sub/.agent-policy.yaml', 'src/a.ts', '.github/workflows/ci.yml', '.gitignore', 'git/x', '.agent-policy.yml']) {
    assert.equal(protectedWriteReason(relative), null, relative);
  }
});
