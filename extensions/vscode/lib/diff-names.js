'use strict';
// File names in diff headers: `a/` `b/` prefixes, git's C-quoted names and
// the two names of a `diff --git` line. Mirrors the daemon's own parser
// (crates/tools/src/patch/names.rs) so both accept the same diffs.

/**
 * Git and GNU diff prefix names with `a/` and `b/`; strip them only when both
 * sides carry them, so an unprefixed `--- src/x` stays as written.
 * @param {string|null} oldPath null for /dev/null
 * @param {string|null} newPath null for /dev/null
 * @returns {[string|null, string|null]}
 */
function stripAbPrefixes(oldPath, newPath) {
  const oldPrefixed = oldPath === null || oldPath.startsWith('a/');
  const newPrefixed = newPath === null || newPath.startsWith('b/');
  if (!(oldPrefixed && newPrefixed)) {
    return [oldPath, newPath];
  }
  const strip = (path) => (path === null ? null : path.slice(2));
  return [strip(oldPath), strip(newPath)];
}

/**
 * The path named by `a/x b/x` (the part after `diff --git `), prefix
 * stripped; null when it cannot be read.
 * @param {string} rest
 * @returns {string|null}
 */
function gitHeaderPath(rest) {
  if (rest.startsWith('"')) {
    const end = closingQuote(rest);
    if (end === -1) {
      return null;
    }
    const old = unquoteCString(rest.slice(0, end + 1));
    if (old === null) {
      return null;
    }
    return old.startsWith('a/') ? old.slice(2) : old;
  }
  // Names may contain " b/"; for an unrenamed file both halves are equal.
  const candidates = [];
  for (let at = rest.indexOf(' b/'); at !== -1; at = rest.indexOf(' b/', at + 1)) {
    candidates.push(at);
  }
  if (candidates.length === 0) {
    return null;
  }
  const split =
    candidates.find((at) => rest.slice(0, at) === `a/${rest.slice(at + 3)}`) ?? candidates[0];
  const old = rest.slice(0, split);
  return old.startsWith('a/') ? old.slice(2) : old;
}

/** Index of the quote closing the string that `text` opens, or -1. */
function closingQuote(text) {
  let escaped = false;
  for (let index = 1; index < text.length; index++) {
    const ch = text[index];
    if (escaped) {
      escaped = false;
    } else if (ch === '\\') {
      escaped = true;
    } else if (ch === '"') {
      return index;
    }
  }
  return -1;
}

const SIMPLE_ESCAPES = { n: 0x0a, t: 0x09, r: 0x0d, a: 0x07, b: 0x08, f: 0x0c, v: 0x0b, '"': 0x22, '\\': 0x5c };

/**
 * A git C-quoted name (`"a/sp\303\244ce \"q\".txt"`) decoded; null when the
 * quoting is malformed or the bytes are not UTF-8.
 * @param {string} text
 * @returns {string|null}
 */
function unquoteCString(text) {
  const end = closingQuote(text);
  if (end === -1) {
    return null;
  }
  const inner = Buffer.from(text.slice(1, end), 'utf8');
  const bytes = [];
  for (let index = 0; index < inner.length; index++) {
    const byte = inner[index];
    if (byte !== 0x5c) {
      bytes.push(byte);
      continue;
    }
    const escaped = String.fromCharCode(inner[++index]);
    if (escaped in SIMPLE_ESCAPES) {
      bytes.push(SIMPLE_ESCAPES[escaped]);
    } else if (/^[0-7]$/.test(escaped)) {
      const octal = String.fromCharCode(inner[index + 1], inner[index + 2]);
      if (!/^[0-7]{2}$/.test(octal)) {
        return null;
      }
      const value = parseInt(escaped + octal, 8);
      if (value > 0xff) {
        return null;
      }
      bytes.push(value);
      index += 2;
    } else {
      return null;
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
}

/**
 * Characters a file name may not contain, as the daemon refuses them
 * (crates/tools/src/patch/parse.rs): control characters (Rust's
 * `char::is_control`, i.e. Unicode Cc) and invisible ones that would let a
 * name look like another (`.agent-policy.yaml\u{feff}`, bidi overrides).
 */
const INVISIBLE_OR_CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]/u;

/**
 * Rust's `char::is_whitespace` (Unicode White_Space) minus U+0085, which
 * INVISIBLE_OR_CONTROL refuses first. Not JS `trimEnd()`: that also strips
 * U+FEFF, which Rust's `trim_end` keeps, so the two would read different names.
 */
const TRAILING_WHITESPACE = /[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/u;

/** `name` without trailing whitespace, as Rust's `str::trim_end` reads it. */
const trimEndLikeRust = (name) => name.replace(TRAILING_WHITESPACE, '');

/**
 * Why `name` is refused (it holds a control or invisible character), or null.
 * @param {string} name
 * @returns {string|null}
 */
function invisibleCharacterProblem(name) {
  const found = INVISIBLE_OR_CONTROL.exec(name);
  if (found === null) {
    return null;
  }
  const codePoint = `U+${found[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  const shown = name.replace(new RegExp(INVISIBLE_OR_CONTROL.source, 'gu'), (ch) => `\\u{${ch.codePointAt(0).toString(16)}}`);
  return `file name "${shown}" contains ${codePoint}, an invisible or control character; file names must not`;
}

module.exports = { stripAbPrefixes, gitHeaderPath, unquoteCString, trimEndLikeRust, invisibleCharacterProblem };
