'use strict';
// The unified-diff parser and applier behind vscode_apply_diff: the same
// diffs the daemon's apply_patch accepts, the same refusals with their line
// numbers, and the same conflict reports. Run: node --test extensions/vscode/test/

const test = require('node:test');
const assert = require('node:assert/strict');

const { parseUnifiedDiff, DiffParseError } = require('../lib/diff');
const { planFileChange, applyTextEdits } = require('../lib/diff-apply');

/** A diff from its lines, joined with `\n` and ending in one. */
const diff = (...lines) => `${lines.join('\n')}\n`;
const numbered = (count) => Array.from({ length: count }, (_, i) => `line ${i + 1}\n`).join('');

/** Plans `patch`'s only file against `current` and checks the edits rebuild the content. */
function planOne(patch, current) {
  const [file] = parseUnifiedDiff(patch);
  const plan = planFileChange(file, current);
  if (plan.content !== undefined && plan.content !== null) {
    assert.equal(applyTextEdits(current ?? '', plan.edits), plan.content, 'the edits rebuild the content');
  }
  return plan;
}

test('parses a multi-file git diff: created, modified, deleted and an empty new file', () => {
  const files = parseUnifiedDiff(
    diff(
      'From 1234 Mon Sep 17 00:00:00 2001',
      'Subject: prose before the diff is skipped',
      'diff --git a/keep.txt b/keep.txt',
      'index 1111111..2222222 100644',
      '--- a/keep.txt',
      '+++ b/keep.txt',
      '@@ -1,3 +1,3 @@',
      ' a',
      '-b',
      '+B',
      ' c',
      'diff --git a/new/dir/made.rs b/new/dir/made.rs',
      'new file mode 100644',
      'index 0000000..3333333',
      '--- /dev/null',
      '+++ b/new/dir/made.rs',
      '@@ -0,0 +1,2 @@',
      '+fn made() {}',
      '+// end',
      'diff --git a/old/gone.txt b/old/gone.txt',
      'deleted file mode 100644',
      '--- a/old/gone.txt',
      '+++ /dev/null',
      '@@ -1,2 +0,0 @@',
      '-bye',
      '-now',
      'diff --git a/empty.txt b/empty.txt',
      'new file mode 100644',
      'index 0000000..e69de29',
    ),
  );
  assert.deepEqual(
    files.map((file) => [file.path, file.change, file.hunks.length, file.line]),
    [
      ['keep.txt', 'modified', 1, 3],
      ['new/dir/made.rs', 'created', 1, 12],
      ['old/gone.txt', 'deleted', 1, 20],
      ['empty.txt', 'created', 0, 27],
    ],
  );
  assert.deepEqual(files[0].hunks[0].lines, [
    { kind: 'context', text: 'a' },
    { kind: 'remove', text: 'b' },
    { kind: 'add', text: 'B' },
    { kind: 'context', text: 'c' },
  ]);
});

test('reads unprefixed names, GNU timestamps, quoted names and omitted counts', () => {
  const files = parseUnifiedDiff(
    diff(
      '--- src/x.txt\t2024-01-01 10:00:00.000000000 +0000',
      '+++ src/x.txt\t2024-01-02 10:00:00.000000000 +0000',
      '@@ -1 +1 @@',
      '-old',
      '+new',
      '--- "a/sp\\303\\244ce \\"q\\".txt"',
      '+++ "b/sp\\303\\244ce \\"q\\".txt"',
      '@@ -1 +1 @@',
      '-x',
      '+y',
    ),
  );
  assert.deepEqual(files.map((file) => file.path), ['src/x.txt', 'späce "q".txt']);
  assert.deepEqual([files[0].hunks[0].oldStart, files[0].hunks[0].oldLen], [1, 1]);
});

test('applies two hunks and keeps every other line as it was', () => {
  const plan = planOne(
    diff(
      '--- a/src/lib.rs',
      '+++ b/src/lib.rs',
      '@@ -2,3 +2,3 @@',
      ' line 2',
      '-line 3',
      '+line three',
      ' line 4',
      '@@ -17,3 +17,4 @@ fn context_is_ignored()',
      ' line 17',
      ' line 18',
      '+line 18.5',
      ' line 19',
    ),
    numbered(20),
  );
  assert.equal(
    plan.content,
    numbered(20).replace('line 3\n', 'line three\n').replace('line 18\n', 'line 18\nline 18.5\n'),
  );
  // Only the changed lines are edited, not the context around them.
  assert.deepEqual(
    plan.edits.map((edit) => edit.text),
    ['line three\n', 'line 18.5\n'],
  );
});

test('creates and deletes files', () => {
  const created = planOne(diff('--- /dev/null', '+++ b/new.txt', '@@ -0,0 +1,2 @@', '+one', '+two'), null);
  assert.equal(created.content, 'one\ntwo\n');
  const deleted = planOne(diff('--- a/gone.txt', '+++ /dev/null', '@@ -1,2 +0,0 @@', '-bye', '-now'), 'bye\nnow\n');
  assert.deepEqual(deleted, { content: null, edits: [] });
});

test('honours "\\ No newline at end of file" both ways', () => {
  const addNewline = planOne(
    diff('--- a/f', '+++ b/f', '@@ -1,2 +1,2 @@', ' a', '-b', '\\ No newline at end of file', '+b'),
    'a\nb',
  );
  assert.equal(addNewline.content, 'a\nb\n');
  const dropNewline = planOne(
    diff('--- a/f', '+++ b/f', '@@ -1,2 +1,2 @@', ' a', '-b', '+B', '\\ No newline at end of file'),
    'a\nb\n',
  );
  assert.equal(dropNewline.content, 'a\nB');
  const append = planOne(
    diff('--- a/f', '+++ b/f', '@@ -1,2 +1,3 @@', ' x', '-y', '\\ No newline at end of file', '+y', '+z', '\\ No newline at end of file'),
    'x\ny',
  );
  assert.equal(append.content, 'x\ny\nz');
  // A pure insertion after a last line without a newline gives that line one.
  const insertAtEnd = planOne(diff('--- a/f', '+++ b/f', '@@ -2,0 +3 @@', '+c'), 'a\nb');
  assert.equal(insertAtEnd.content, 'a\nb\nc\n');
});

test('keeps CRLF files CRLF whether the diff uses LF or CRLF', () => {
  const lf = diff('--- a/f', '+++ b/f', '@@ -1,3 +1,4 @@', ' one', '-two', '+2', '+2.5', ' three');
  for (const patch of [lf, lf.replace(/\n/g, '\r\n')]) {
    assert.equal(planOne(patch, 'one\r\ntwo\r\nthree\r\n').content, 'one\r\n2\r\n2.5\r\nthree\r\n');
  }
});

test('a changed preimage is a conflict listing the expected and actual lines', () => {
  const plan = planOne(
    diff(
      '--- a/second.txt',
      '+++ b/second.txt',
      '@@ -2,3 +2,3 @@',
      ' line 2',
      '-line 3 (as the model remembered it)',
      '+line 3 fixed',
      ' line 4',
      '@@ -10,3 +10,3 @@',
      ' line 10',
      '-line 11',
      '+line eleven',
      ' line 12',
      '@@ -20,2 +20,2 @@',
      ' line 20',
      '-line 99',
      '+line 21 fixed',
    ),
    numbered(30),
  );
  assert.equal(plan.conflicts.length, 2);
  const [first, second] = plan.conflicts;
  assert.equal(first.hunk, 1);
  assert.equal(first.line, 2);
  assert.deepEqual(first.expected, ['line 2', 'line 3 (as the model remembered it)', 'line 4']);
  assert.deepEqual(first.actual, ['line 2', 'line 3', 'line 4']);
  assert.match(first.reason, /does not contain/);
  assert.equal(second.hunk, 3);
  assert.deepEqual(second.actual, ['line 20', 'line 21']);
});

test('a hunk found elsewhere says where; one past the end says how long the file is', () => {
  const moved = planOne(diff('--- a/f', '+++ b/f', '@@ -1,1 +1,1 @@', '-line 5', '+five'), numbered(6));
  assert.match(moved.conflicts[0].reason, /they are at line 5 \(offset \+4\)/);
  const past = planOne(diff('--- a/f', '+++ b/f', '@@ -9,1 +9,1 @@', '-x', '+y'), numbered(3));
  assert.match(past.conflicts[0].reason, /starts at line 9 but the file has only 3 lines/);
  assert.deepEqual(past.conflicts[0].actual, []);
});

test('whole-file conflicts: created but exists, modified but missing, deleted but longer', () => {
  const exists = planOne(diff('--- /dev/null', '+++ b/x', '@@ -0,0 +1 @@', '+new'), 'here\n');
  assert.deepEqual(exists.conflicts, [
    { hunk: null, line: null, expected: [], actual: [], reason: 'x already exists, but the diff creates it (--- /dev/null)' },
  ]);
  const missing = planOne(diff('--- a/x', '+++ b/x', '@@ -1 +1 @@', '-a', '+b'), null);
  assert.equal(missing.conflicts[0].reason, 'x does not exist');
  const longer = planOne(diff('--- a/x', '+++ /dev/null', '@@ -1 +0,0 @@', '-a'), 'a\nb\nc\n');
  assert.match(longer.conflicts[0].reason, /x is deleted, but 2 of its lines are not in the diff/);
});

test('malformed diffs are refused with the line that is wrong', () => {
  const header = ['--- a/a.txt', '+++ b/a.txt'];
  const cases = [
    [diff('just some prose', 'no diff here'), 1, /no file headers/],
    [diff('@@ -1 +1 @@', '-one', '+ONE'), 1, /hunk header before any file header/],
    [diff(...header, '@@ -1,x +1 @@', '-one', '+ONE'), 3, /malformed hunk header/],
    [diff(...header, '@@ 1,1 1,1 @@', '-one', '+ONE'), 3, /malformed hunk header/],
    [diff(...header, '@@ -1,2 +1,2 @@', ' one', '-two', '+TWO', '+extra'), 7, /hunk body is longer than its header at line 3/],
    [diff(...header, '@@ -1,3 +1,3 @@', ' one', '-two', '+TWO'), 7, /hunk at line 3 ends early/],
    [diff(...header, '@@ -1,2 +1,2 @@', ' one', '?two', '+TWO'), 5, /unexpected line in hunk body "\?two"/],
    [diff('--- a/a.txt', '@@ -1 +1 @@'), 2, /expected a '\+\+\+ b\/path' line/],
    [diff('diff --git a/a.txt b/a.txt', 'index 1..2 100644', 'Binary files a/a.txt and b/a.txt differ'), 3, /binary patches are not supported/],
    [diff('diff --git a/a.txt b/b.txt', 'similarity index 90%', 'rename from a.txt', 'rename to b.txt'), 3, /renames and copies are not supported/],
    [diff('--- a/a.txt', '+++ b/other.txt', '@@ -1 +1 @@', '-one', '+ONE'), 1, /renames are not supported \(a.txt → other.txt\)/],
    [diff(...header, '@@ -2,1 +2,1 @@', '-two', '+TWO', '@@ -1,1 +1,1 @@', '-one', '+ONE'), 6, /out of order or overlap/],
    [diff(...header, '@@ -1 +1 @@', '-one', '+ONE', ...header, '@@ -3 +3 @@', '-three', '+THREE'), 6, /a.txt appears twice/],
    [diff('--- /dev/null', '+++ b/new.txt', '@@ -1,1 +1,1 @@', '-x', '+y'), 3, /new.txt is created \(--- \/dev\/null\)/],
    [diff(...header, '@@ -1 +1 @@', '\\ No newline at end of file'), 4, /before any line of the hunk/],
    [diff(...header, '@@ -0,1 +1 @@', '+x'), 3, /line 0 with a non-zero count/],
    [diff(...header, '@@ -99999999999999999999,2 +1 @@', '-one', '+ONE'), 3, /malformed hunk header/],
    [diff(...header), 1, /no hunks for a.txt/],
  ];
  for (const [patch, line, message] of cases) {
    assert.throws(
      () => parseUnifiedDiff(patch),
      (err) => {
        assert.ok(err instanceof DiffParseError, `${patch}: ${err}`);
        assert.equal(err.line, line, `${patch}: ${err.message}`);
        assert.match(err.message, message);
        assert.ok(err.message.startsWith(`line ${line}: `), err.message);
        return true;
      },
    );
  }
});

test('an empty context line whose lone space was stripped still counts as context', () => {
  const plan = planOne(diff('--- a/f', '+++ b/f', '@@ -1,3 +1,3 @@', ' a', '', '-c', '+C'), 'a\n\nc\n');
  assert.equal(plan.content, 'a\n\nC\n');
});

test('a diff that changes nothing needs no edit', () => {
  const plan = planOne(diff('--- a/f', '+++ b/f', '@@ -1,2 +1,2 @@', ' a', '-b', '+b'), 'a\nb\n');
  assert.deepEqual(plan, { content: 'a\nb\n', edits: [] });
});
