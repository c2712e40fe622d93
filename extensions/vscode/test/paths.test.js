'use strict';
// Workspace-relative paths as the tools accept them: normalized, never
// absolute, never leaving the folder.

const test = require('node:test');
const assert = require('node:assert/strict');

const { normalizeRelativePath, isInside, toRelative } = require('../lib/paths');

test('normalizes relative paths', () => {
  assert.equal(normalizeRelativePath('t', 'path', 'src/a.ts'), 'src/a.ts');
  assert.equal(normalizeRelativePath('t', 'path', './src//b/../a.ts'), 'src/a.ts');
});

test('refuses absolute paths, escapes and the folder itself with INVALID_ARGUMENTS naming the input', () => {
  const cases = [
    ['/etc/passwd', /is absolute/],
    ['C:/Windows/x', /is absolute/],
    ['../outside.txt', /leaves the workspace folder/],
    ['src/../../outside.txt', /leaves the workspace folder/],
    ['.', /names the workspace folder itself/],
    ['a\0b', /NUL/],
  ];
  for (const [input, reason] of cases) {
    assert.throws(
      () => normalizeRelativePath('vscode_read', 'path', input),
      (err) => {
        assert.equal(err.code, 'INVALID_ARGUMENTS');
        assert.match(err.message, reason);
        assert.ok(err.message.startsWith(`vscode_read: path ${JSON.stringify(input)} `), err.message);
        return true;
      },
    );
  }
});

test('containment and relative forms', () => {
  assert.ok(isInside('/w/repo', '/w/repo/src/a.ts'));
  assert.ok(isInside('/w/repo', '/w/repo'));
  assert.ok(!isInside('/w/repo', '/w/repo-other/a.ts'));
  assert.ok(!isInside('/w/repo', '/w/a.ts'));
  assert.equal(toRelative('/w/repo', '/w/repo/src/a.ts'), 'src/a.ts');
});
