'use strict';
// The one diff corpus (tests/diff-corpus/) that the daemon's apply_patch
// also passes (crates/tools/tests/patch/corpus.rs): the same diffs accepted
// with the same files, the same refusals at the same lines, the same
// results and conflicts.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { parseUnifiedDiff, DiffParseError } = require('../lib/diff');
const { planFileChange } = require('../lib/diff-apply');

const corpus = path.join(__dirname, '..', '..', '..', 'tests', 'diff-corpus');

/** The cases of one corpus file. */
function cases(file) {
  const parsed = JSON.parse(fs.readFileSync(path.join(corpus, file), 'utf8'));
  assert.ok(parsed.cases.length > 0, `${file} has cases`);
  return parsed.cases;
}

/** A case's diff text: its lines joined, ending with a line break. */
function diffText(c) {
  const eol = c.crlf ? '\r\n' : '\n';
  return c.diff.join(eol) + eol;
}

function refusal(c) {
  assert.throws(
    () => parseUnifiedDiff(diffText(c)),
    (err) => {
      assert.ok(err instanceof DiffParseError, `${c.name}: ${err}`);
      assert.equal(err.line, c.line, `${c.name}: ${err.message}`);
      assert.ok(err.message.includes(c.message), `${c.name}: ${JSON.stringify(c.message)} not in ${JSON.stringify(err.message)}`);
      return true;
    },
    c.name,
  );
}

for (const c of cases('accepted.json')) {
  test(`accepted: ${c.name}`, () => {
    const files = parseUnifiedDiff(diffText(c));
    assert.deepEqual(
      files.map((file) => ({ path: file.path, change: file.change, hunks: file.hunks.length, line: file.line })),
      c.files,
    );
  });
}

for (const file of ['refused.json', 'names.json']) {
  for (const c of cases(file)) {
    test(`refused (${file}): ${c.name}`, () => refusal(c));
  }
}

for (const c of cases('applied.json')) {
  test(`applied: ${c.name}`, () => {
    const [patch] = parseUnifiedDiff(diffText(c));
    const plan = planFileChange(patch, c.before);
    if (c.conflicts) {
      assert.ok(plan.conflicts, `${c.name}: expected conflicts, got ${JSON.stringify(plan)}`);
      assert.deepEqual(plan.conflicts.map((conflict) => [conflict.hunk, conflict.line]), c.conflicts.map((want) => [want.hunk, want.line]));
      plan.conflicts.forEach((conflict, i) => {
        assert.ok(conflict.reason.includes(c.conflicts[i].reason), `${JSON.stringify(c.conflicts[i].reason)} not in ${JSON.stringify(conflict.reason)}`);
      });
    } else {
      assert.equal(plan.conflicts, undefined, JSON.stringify(plan.conflicts));
      assert.equal(plan.content, c.after);
    }
  });
}
