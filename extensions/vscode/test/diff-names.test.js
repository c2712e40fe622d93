'use strict';
// File names in diff headers read exactly as the daemon's parser reads them
// (crates/tools/src/patch/parse.rs): trailing whitespace as Rust's
// `trim_end`, `diff --git ` stripped once, invisible and control characters
// refused with the line that names them.

const test = require('node:test');
const assert = require('node:assert/strict');

const { parseUnifiedDiff, DiffParseError } = require('../lib/diff');
const { trimEndLikeRust, invisibleCharacterProblem } = require('../lib/diff-names');

const diff = (...lines) => `${lines.join('\n')}\n`;
const modify = (oldName, newName) => diff(`--- ${oldName}`, `+++ ${newName}`, '@@ -1 +1 @@', '-a', '+b');

function refusedAt(text, line, reason) {
  assert.throws(
    () => parseUnifiedDiff(text),
    (err) => {
      assert.ok(err instanceof DiffParseError, String(err));
      assert.equal(err.line, line, err.message);
      assert.match(err.message, reason);
      return true;
    },
  );
}

test('a BOM after a file name is refused, not trimmed away', () => {
  refusedAt(modify('a/.agent-policy.yaml\ufeff', 'b/.agent-policy.yaml\ufeff'), 1, /U\+FEFF, an invisible or control character/);
  refusedAt(modify('a/x', 'b/x\ufeff'), 2, /U\+FEFF/);
  // Before a GNU timestamp too.
  refusedAt(modify('a/x\ufeff\t2024-01-01', 'b/x\t2024-01-01'), 1, /U\+FEFF/);
});

test('invisible and control characters anywhere in a name are refused', () => {
  for (const ch of ['\u0085', '\u200b', '\u200f', '\u2028', '\u202e', '\u2060', '\u2064', '\u0007', '\u007f', '\u009f', '\u000b']) {
    refusedAt(modify(`a/x${ch}y`, `b/x${ch}y`), 1, /an invisible or control character/);
  }
  // Trailing ones as well: Rust's trim_end would drop U+0085, JS trimEnd U+FEFF.
  refusedAt(modify('a/x\u0085', 'b/x\u0085'), 1, /U\+0085/);
  // Decoded from a quoted name.
  refusedAt(modify('"a/x\\ty"', '"b/x\\ty"'), 1, /U\+0009/);
  // In a `diff --git` line naming an empty new file.
  refusedAt(diff('diff --git a/x\u200d b/x\u200d', 'new file mode 100644'), 1, /U\+200D/);
});

test('trailing whitespace is trimmed as Rust trim_end does', () => {
  const [file] = parseUnifiedDiff(modify('a/x \u00a0\u3000', 'b/x\u2003'));
  assert.equal(file.path, 'x');
  assert.equal(trimEndLikeRust('x \t\u00a0\u1680\u2000\u200a\u202f\u205f\u3000'), 'x');
  // Not whitespace to Rust: kept (and refused by the check before it).
  assert.equal(trimEndLikeRust('x\ufeff'), 'x\ufeff');
  assert.equal(trimEndLikeRust('x\u200b'), 'x\u200b');
  assert.equal(invisibleCharacterProblem('src/ok name.txt'), null);
});

test('`diff --git ` is stripped once: a doubled prefix becomes part of the name', () => {
  const files = parseUnifiedDiff(diff('diff --git diff --git a/x b/x', 'new file mode 100644'));
  assert.equal(files.length, 1);
  assert.equal(files[0].path, 'diff --git a/x');
  assert.equal(files[0].change, 'created');
  // With content headers, the names come from them.
  const [patched] = parseUnifiedDiff(
    diff('diff --git diff --git a/x b/x', '--- a/x', '+++ b/x', '@@ -1 +1 @@', '-a', '+b'),
  );
  assert.equal(patched.path, 'x');
});
