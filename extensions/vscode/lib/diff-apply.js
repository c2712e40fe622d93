'use strict';
// Applies a parsed diff to text in memory, verifying every hunk's preimage
// (its context and removed lines) exactly at its stated line, as the daemon's
// `apply_patch` does with `verify: true` (crates/tools/src/patch/apply.rs).
//
// Line endings: a trailing `\r` is part of the line ending, never of the
// line, on both sides. Kept lines keep their own ending; added lines take the
// file's (the ending of its first line, or else the diff's), so a CRLF file
// stays CRLF whether the diff was written with CRLF or LF.
//
// Besides the new text, the result lists the smallest whole-line edits that
// produce it, so the editor changes only the lines the diff changes: cursors,
// folds and breakpoints elsewhere in an open file stay where they are.

/**
 * @typedef {{hunk: number|null, line: number|null, expected: string[], actual: string[],
 *   reason: string}} HunkConflict  `hunk` (1-based) and `line` are null when the
 *   file as a whole conflicts.
 * @typedef {{start: number, end: number, text: string}} TextEdit  character
 *   offsets into the original text; sorted, not overlapping.
 */

/** Index (0-based) of the first old line a hunk covers, or that a pure insertion precedes. */
const oldIndex = (hunk) => (hunk.oldLen === 0 ? hunk.oldStart : hunk.oldStart - 1);

const stripCr = (text) => (text.endsWith('\r') ? text.slice(0, -1) : text);

/** @returns {HunkConflict} */
function wholeFileConflict(reason) {
  return { hunk: null, line: null, expected: [], actual: [], reason };
}

/**
 * What one file of a diff does to `current` (its text, or null when the file
 * does not exist): its new content (null: deleted) and the edits, or the
 * conflicts that stop it.
 * @param {import('./diff').FilePatch} file
 * @param {string|null} current
 * @returns {{conflicts: HunkConflict[]} | {content: string|null, edits: TextEdit[]}}
 */
function planFileChange(file, current) {
  if (file.change === 'created' && current !== null) {
    return { conflicts: [wholeFileConflict(`${file.path} already exists, but the diff creates it (--- /dev/null)`)] };
  }
  if (file.change !== 'created' && current === null) {
    return { conflicts: [wholeFileConflict(`${file.path} does not exist`)] };
  }
  const applied = applyHunks(current ?? '', file.hunks);
  if (applied.conflicts) {
    return applied;
  }
  if (file.change === 'deleted') {
    if (applied.content !== '') {
      const remaining = applied.content.replace(/\n$/, '').split('\n').length;
      return {
        conflicts: [
          wholeFileConflict(`${file.path} is deleted, but ${remaining} of its lines are not in the diff: the file has changed`),
        ],
      };
    }
    return { content: null, edits: [] };
  }
  return applied;
}

/**
 * Applies `hunks` to `original`. Every conflicting hunk is reported, not just
 * the first.
 * @param {string} original
 * @param {import('./diff').Hunk[]} hunks
 * @returns {{conflicts: HunkConflict[]} | {content: string, edits: TextEdit[]}}
 */
function applyHunks(original, hunks) {
  const source = splitLines(original);
  const fileEol = source.find((line) => line.eol !== '')?.eol ?? diffEol(hunks);
  const out = [];
  const regions = [];
  const conflicts = [];
  let cursor = 0;
  // Whether the last line lacks a newline, once a hunk reached the end.
  let endWithoutNewline = null;

  hunks.forEach((hunk, index) => {
    const expected = hunk.lines.filter((line) => line.kind !== 'add').map((line) => stripCr(line.text));
    // The parser guarantees hunks in order without overlap, so the stated
    // line is never before the end of the previous hunk.
    const at = oldIndex(hunk);
    const reason = mismatch(source, expected, at, cursor);
    if (reason !== null) {
      const actual = source.slice(Math.min(at, source.length), Math.min(at + expected.length, source.length));
      conflicts.push({
        hunk: index + 1,
        line: hunk.oldStart,
        expected,
        actual: actual.map((line) => line.text),
        reason,
      });
      return;
    }
    out.push(...source.slice(cursor, at));
    const region = { oldStart: at, outStart: out.length };
    let next = at;
    for (const line of hunk.lines) {
      if (line.kind === 'context') {
        out.push(source[next++]);
      } else if (line.kind === 'remove') {
        next++;
      } else {
        out.push({ text: stripCr(line.text), eol: fileEol });
      }
    }
    cursor = next;
    regions.push({ ...region, oldEnd: next, outEnd: out.length });
    if (cursor === source.length) {
      endWithoutNewline = hunk.newMissingNewline;
    }
  });
  if (conflicts.length > 0) {
    return { conflicts };
  }
  out.push(...source.slice(cursor));
  const { content, starts } = assemble(out, fileEol, endWithoutNewline);
  return { content, edits: lineEdits(original, source, content, starts, regions) };
}

/** Why `expected` is not at line index `at` of `source`, or null when it is. */
function mismatch(source, expected, at, cursor) {
  if (expected.length === 0) {
    // A pure insertion has nothing to verify but its position.
    return at <= source.length
      ? null
      : `the hunk inserts after line ${at} but the file has only ${source.length} lines`;
  }
  const matchesAt = (start) =>
    start + expected.length <= source.length && expected.every((text, i) => source[start + i].text === text);
  if (matchesAt(at)) {
    return null;
  }
  const found = [];
  for (let start = cursor; start + expected.length <= source.length; start++) {
    if (matchesAt(start)) {
      found.push(start + 1);
    }
  }
  if (found.length === 0) {
    return at >= source.length
      ? `the hunk starts at line ${at + 1} but the file has only ${source.length} lines`
      : "the file does not contain the hunk's context and removed lines (it changed, or the diff is wrong)";
  }
  if (found.length === 1) {
    const offset = found[0] - (at + 1);
    return `the lines do not match at line ${at + 1}; they are at line ${found[0]} (offset ${offset > 0 ? '+' : ''}${offset}): regenerate the diff against the current file`;
  }
  return `the lines do not match at line ${at + 1}; they occur at lines ${found.slice(0, 10).join(', ')}: regenerate the diff against the current file`;
}

/** The text of `lines`, and the offset where each line starts (plus the end). */
function assemble(lines, fileEol, endWithoutNewline) {
  const parts = [];
  const starts = [];
  let length = 0;
  const last = lines.length - 1;
  lines.forEach((line, index) => {
    let eol = line.eol;
    if (index === last && endWithoutNewline === true) {
      eol = '';
    } else if (index === last && endWithoutNewline === null) {
      eol = line.eol;
    } else if (line.eol === '') {
      // A line that lost its "last line" status needs an ending.
      eol = fileEol;
    }
    starts.push(length);
    parts.push(line.text, eol);
    length += line.text.length + eol.length;
  });
  starts.push(length);
  return { content: parts.join(''), starts };
}

/**
 * One edit per hunk, trimmed to the lines that differ. A hunk that inserts
 * after a last line without a newline also gives that line its ending, so
 * such a region starts one line earlier. Should the edits ever not rebuild
 * `content` exactly, one edit of the whole text is returned instead.
 */
function lineEdits(original, source, content, outStarts, regions) {
  const oldLine = (i) => original.slice(source[i].start, i + 1 < source.length ? source[i + 1].start : original.length);
  const newLine = (i) => content.slice(outStarts[i], outStarts[i + 1]);
  const offsetOf = (i) => (i < source.length ? source[i].start : original.length);
  const edits = [];
  for (const region of regions) {
    let { oldStart, oldEnd, outStart, outEnd } = region;
    if (oldStart > 0 && source[oldStart - 1].eol === '') {
      oldStart--;
      outStart--;
    }
    while (oldStart < oldEnd && outStart < outEnd && oldLine(oldStart) === newLine(outStart)) {
      oldStart++;
      outStart++;
    }
    while (oldEnd > oldStart && outEnd > outStart && oldLine(oldEnd - 1) === newLine(outEnd - 1)) {
      oldEnd--;
      outEnd--;
    }
    if (oldStart < oldEnd || outStart < outEnd) {
      edits.push({ start: offsetOf(oldStart), end: offsetOf(oldEnd), text: content.slice(outStarts[outStart], outStarts[outEnd]) });
    }
  }
  if (applyTextEdits(original, edits) !== content) {
    return original === content ? [] : [{ start: 0, end: original.length, text: content }];
  }
  return edits;
}

/** `text` with `edits` (sorted, not overlapping) applied. */
function applyTextEdits(text, edits) {
  const parts = [];
  let cursor = 0;
  for (const edit of edits) {
    parts.push(text.slice(cursor, edit.start), edit.text);
    cursor = edit.end;
  }
  parts.push(text.slice(cursor));
  return parts.join('');
}

/** The line ending the diff itself uses, for files with no line ending yet. */
function diffEol(hunks) {
  const first = hunks.flatMap((hunk) => hunk.lines)[0];
  return first !== undefined && first.text.endsWith('\r') ? '\r\n' : '\n';
}

/** `text` as lines: their text, ending (`\n`, `\r\n` or none) and start offset. */
function splitLines(text) {
  const lines = [];
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf('\n', start);
    if (newline === -1) {
      lines.push({ text: text.slice(start), eol: '', start });
      break;
    }
    const crlf = newline > start && text[newline - 1] === '\r';
    const textEnd = crlf ? newline - 1 : newline;
    lines.push({ text: text.slice(start, textEnd), eol: text.slice(textEnd, newline + 1), start });
    start = newline + 1;
  }
  return lines;
}

module.exports = { planFileChange, wholeFileConflict, applyTextEdits, oldIndex };
