'use strict';
// One `@@` hunk of a unified diff, and the error a malformed diff gets.
// Split from diff.js, which reads the file headers around the hunks.

/** A malformed diff, with the 1-based line of the diff where it is wrong. */
class DiffParseError extends Error {
  constructor(line, message) {
    super(`line ${line}: ${message}`);
    this.name = 'DiffParseError';
    this.line = line;
    this.reason = message;
  }
}

const trimCr = (line) => (line.endsWith('\r') ? line.slice(0, -1) : line);

/**
 * Reads the hunk whose `@@` header is `diffLines[pos]`: its body must hold
 * exactly the lines the header counts.
 * @param {string[]} diffLines the diff's lines, without their `\n`
 * @param {number} pos
 * @returns {{hunk: import('./diff').Hunk, next: number}} `next`: the line after the hunk
 */
function readHunk(diffLines, pos) {
  const headerLine = pos + 1;
  const header = trimCr(diffLines[pos]);
  const ranges = parseHunkHeader(header);
  if (ranges === null) {
    throw new DiffParseError(
      headerLine,
      `malformed hunk header ${JSON.stringify(header)}: expected '@@ -start,count +start,count @@'`,
    );
  }
  const [[oldStart, oldLen], [newStart, newLen]] = ranges;
  if ((oldStart === 0 && oldLen !== 0) || (newStart === 0 && newLen !== 0)) {
    throw new DiffParseError(headerLine, `malformed hunk header ${JSON.stringify(header)}: line 0 with a non-zero count`);
  }
  pos += 1;
  const hunk = {
    oldStart, oldLen, newStart, newLen, lines: [],
    oldMissingNewline: false, newMissingNewline: false, line: headerLine,
  };
  let oldSeen = 0;
  let newSeen = 0;
  let afterMarker = false;
  for (;;) {
    const complete = oldSeen === oldLen && newSeen === newLen;
    const raw = diffLines[pos];
    if (raw === undefined) {
      if (complete) {
        break;
      }
      throw new DiffParseError(pos + 1, endsEarly(hunk, oldSeen, newSeen));
    }
    if (raw.startsWith('\\')) {
      noNewlineMarker(hunk, pos + 1);
      afterMarker = true;
      pos += 1;
      continue;
    }
    if (complete) {
      break;
    }
    const line = bodyLine(raw);
    if (line === null) {
      if (raw.startsWith('@')) {
        throw new DiffParseError(pos + 1, endsEarly(hunk, oldSeen, newSeen));
      }
      throw new DiffParseError(
        pos + 1,
        `unexpected line in hunk body ${JSON.stringify(trimCr(raw))}: body lines start with ' ', '-', '+' or '\\'`,
      );
    }
    const oldSide = line.kind !== 'add';
    const newSide = line.kind !== 'remove';
    if (afterMarker && ((oldSide && hunk.oldMissingNewline) || (newSide && hunk.newMissingNewline))) {
      throw new DiffParseError(pos + 1, "line after '\\ No newline at end of file' on the same side of the hunk");
    }
    oldSeen += oldSide ? 1 : 0;
    newSeen += newSide ? 1 : 0;
    if (oldSeen > oldLen || newSeen > newLen) {
      throw new DiffParseError(pos + 1, longerThanHeader(hunk));
    }
    hunk.lines.push(line);
    pos += 1;
  }
  return { hunk, next: pos };
}

function noNewlineMarker(hunk, lineNo) {
  const last = hunk.lines[hunk.lines.length - 1];
  if (last === undefined) {
    throw new DiffParseError(lineNo, "'\\ No newline at end of file' before any line of the hunk");
  }
  if (last.kind !== 'add') {
    hunk.oldMissingNewline = true;
  }
  if (last.kind !== 'remove') {
    hunk.newMissingNewline = true;
  }
}

/** One hunk body line, or null when `raw` is not one. */
function bodyLine(raw) {
  switch (raw[0]) {
    case ' ':
      return { kind: 'context', text: raw.slice(1) };
    case '-':
      return { kind: 'remove', text: raw.slice(1) };
    case '+':
      return { kind: 'add', text: raw.slice(1) };
    default:
      // Editors and models strip the lone space of an empty context line.
      return trimCr(raw) === '' ? { kind: 'context', text: raw } : null;
  }
}

function longerThanHeader(hunk) {
  return `hunk body is longer than its header at line ${hunk.line} says (-${hunk.oldStart},${hunk.oldLen} +${hunk.newStart},${hunk.newLen}); fix the counts`;
}

function endsEarly(hunk, oldSeen, newSeen) {
  return `hunk at line ${hunk.line} ends early: its header says ${hunk.oldLen} old and ${hunk.newLen} new lines, the body has ${oldSeen} and ${newSeen}`;
}

/** `@@ -a[,b] +c[,d] @@ anything` → [[a, b], [c, d]]; omitted counts are 1. */
function parseHunkHeader(line) {
  const match = /^@@ -([^ ]*) \+([^ ]*) (@@.*)$/.exec(line);
  if (match === null) {
    return null;
  }
  const old = parseRange(match[1]);
  const fresh = parseRange(match[2]);
  return old && fresh ? [old, fresh] : null;
}

function parseRange(text) {
  const number = (digits) => (/^[0-9]+$/.test(digits) ? Number(digits) : NaN);
  const [start, len] = text.includes(',') ? text.split(',', 2).map(number) : [number(text), 1];
  if (text.split(',').length > 2 || !Number.isSafeInteger(start) || !Number.isSafeInteger(len)) {
    return null;
  }
  return Number.isSafeInteger(start + len) ? [start, len] : null;
}

module.exports = { DiffParseError, readHunk, longerThanHeader, trimCr };
