'use strict';
// A strict unified-diff parser, free of any `vscode` import so node can test
// it. It accepts and refuses exactly what the daemon's `apply_patch` does
// (crates/tools/src/patch/parse.rs): an agent gets the same answer for the
// same diff whether it patches through the daemon or through the editor.
//
// Accepted: several files; `--- a/x` / `+++ b/x` headers with or without
// `a/` `b/` prefixes, tab-separated timestamps and C-quoted names; git
// headers (`diff --git`, `new file mode`, `deleted file mode`, `index`, mode
// changes); `/dev/null` for creation and deletion; `@@ -l,s +l,s @@` with
// omitted counts; `\ No newline at end of file`; CRLF diffs. Refused with the
// offending line: binary patches, renames and copies, hunks whose body does
// not match the header counts, stray hunk lines, overlapping hunks, file
// names with control or invisible characters (see diff-names.js).

const {
  stripAbPrefixes,
  gitHeaderPath,
  unquoteCString,
  trimEndLikeRust,
  invisibleCharacterProblem,
} = require('./diff-names');
const { oldIndex } = require('./diff-apply');
const { DiffParseError, readHunk, longerThanHeader, trimCr } = require('./diff-hunk');

/**
 * @typedef {{kind: 'context'|'remove'|'add', text: string}} HunkLine
 *   `text` without its marker and `\n`; a `\r` of a CRLF diff is kept (the
 *   applier treats it as part of the line ending).
 * @typedef {{oldStart: number, oldLen: number, newStart: number, newLen: number,
 *   lines: HunkLine[], oldMissingNewline: boolean, newMissingNewline: boolean,
 *   line: number}} Hunk  `line`: the `@@` header's line in the diff.
 * @typedef {{oldPath: string|null, newPath: string|null, hunks: Hunk[], line: number,
 *   path: string, change: 'created'|'deleted'|'modified'}} FilePatch
 */

const GIT_HEADER_LINES = ['index ', 'old mode ', 'new mode ', 'similarity index ', 'dissimilarity index '];
const RENAME_LINES = ['rename from ', 'rename to ', 'copy from ', 'copy to '];

const isBinaryMarker = (line) => line.startsWith('Binary files ') || line.startsWith('GIT binary patch');

/**
 * Parses a unified diff of one or more files.
 * @param {string} text
 * @returns {FilePatch[]}
 * @throws {DiffParseError}
 */
function parseUnifiedDiff(text) {
  const lines = text.split('\n');
  if (text.endsWith('\n')) {
    lines.pop();
  }
  const files = new Parser(lines).files();
  if (files.length === 0) {
    throw new DiffParseError(
      1,
      "no file headers found: a unified diff needs '--- a/path' and '+++ b/path' lines before its '@@' hunks",
    );
  }
  return files;
}

function filePatch(oldPath, newPath, hunks, line) {
  const change = oldPath === null ? 'created' : newPath === null ? 'deleted' : 'modified';
  return { oldPath, newPath, hunks, line, path: newPath ?? oldPath, change };
}

class Parser {
  constructor(lines) {
    this.lines = lines;
    this.pos = 0;
  }

  /** The current line without a trailing `\r`, or undefined at the end. */
  peek() {
    const line = this.lines[this.pos];
    return line === undefined ? undefined : trimCr(line);
  }

  lineNo() {
    return this.pos + 1;
  }

  files() {
    const files = [];
    const seen = new Set();
    for (let line = this.peek(); line !== undefined; line = this.peek()) {
      let file = null;
      if (line.startsWith('diff --git ')) {
        file = this.gitSection();
      } else if (line.startsWith('--- ')) {
        file = this.fileSection({ start: null, newFile: false, deletedFile: false });
      } else if (line.startsWith('+++ ')) {
        throw new DiffParseError(this.lineNo(), "'+++' header without a '---' header before it");
      } else if (line.startsWith('@@')) {
        throw new DiffParseError(
          this.lineNo(),
          "hunk header before any file header: start each file with '--- a/path' and '+++ b/path'",
        );
      } else if (isBinaryMarker(line)) {
        throw new DiffParseError(this.lineNo(), 'binary patches are not supported');
      } else {
        // Commit messages, `Index:` lines and other prose around diffs.
        this.pos += 1;
      }
      if (file) {
        if (seen.has(file.path)) {
          throw new DiffParseError(
            file.line,
            `${file.path} appears twice in the diff; put all its hunks under one header`,
          );
        }
        seen.add(file.path);
        files.push(file);
      }
    }
    return files;
  }

  /** A `diff --git` block; null for a mode-only change (nothing to write). */
  gitSection() {
    const start = this.lineNo();
    const git = { start, newFile: false, deletedFile: false };
    // The prefix is stripped once, as the daemon does: `diff --git diff --git
    // a/x b/x` names `diff --git a/x`, not `x`.
    const path = gitHeaderPath(this.peek().slice('diff --git '.length));
    this.refuseInvisible(path);
    this.pos += 1;
    for (let line = this.peek(); line !== undefined; line = this.peek()) {
      if (line.startsWith('--- ') || line.startsWith('diff --git ')) {
        break;
      }
      if (line.startsWith('@@')) {
        throw new DiffParseError(this.lineNo(), "hunk without '---' / '+++' file headers after 'diff --git'");
      }
      if (line.startsWith('new file mode ')) {
        git.newFile = true;
      } else if (line.startsWith('deleted file mode ')) {
        git.deletedFile = true;
      } else if (RENAME_LINES.some((prefix) => line.startsWith(prefix))) {
        throw new DiffParseError(
          this.lineNo(),
          'renames and copies are not supported: express them as a deletion and a creation',
        );
      } else if (isBinaryMarker(line)) {
        throw new DiffParseError(this.lineNo(), 'binary patches are not supported');
      } else if (!GIT_HEADER_LINES.some((prefix) => line.startsWith(prefix))) {
        break;
      }
      this.pos += 1;
    }
    if (this.peek()?.startsWith('--- ')) {
      return this.fileSection(git);
    }
    // No content headers: an empty file created or deleted, or a mode change.
    if (path === null) {
      throw new DiffParseError(start, "cannot read the file names of this 'diff --git' header");
    }
    if (git.newFile) {
      return filePatch(null, path, [], start);
    }
    if (git.deletedFile) {
      return filePatch(path, null, [], start);
    }
    return null;
  }

  /** `--- old` / `+++ new` and the hunks after them. */
  fileSection(git) {
    const start = git.start ?? this.lineNo();
    const oldLine = this.lineNo();
    const oldHeader = this.headerPath('--- ');
    this.pos += 1;
    if (!this.peek()?.startsWith('+++ ')) {
      throw new DiffParseError(this.lineNo(), "expected a '+++ b/path' line after the '---' header");
    }
    const newHeader = this.headerPath('+++ ');
    this.pos += 1;
    const [oldPath, newPath] = stripAbPrefixes(oldHeader, newHeader);
    if (oldPath === null && newPath === null) {
      throw new DiffParseError(oldLine, 'both file names are /dev/null');
    }
    if (oldPath !== null && newPath !== null && oldPath !== newPath) {
      throw new DiffParseError(
        oldLine,
        `renames are not supported (${oldPath} → ${newPath}): express them as a deletion and a creation`,
      );
    }
    if (git.newFile && oldPath !== null) {
      throw new DiffParseError(oldLine, "'new file mode' but the '---' name is not /dev/null");
    }
    if (git.deletedFile && newPath !== null) {
      throw new DiffParseError(oldLine, "'deleted file mode' but the '+++' name is not /dev/null");
    }
    const hunks = [];
    while (this.peek()?.startsWith('@@')) {
      const { hunk, next } = readHunk(this.lines, this.pos);
      hunks.push(hunk);
      this.pos = next;
    }
    this.rejectStrayHunkLine(hunks);
    const file = filePatch(oldPath, newPath, hunks, start);
    this.checkHunks(file);
    return file;
  }

  /** The file name of a `---` / `+++` header; null for /dev/null. */
  headerPath(prefix) {
    const raw = this.peek().slice(prefix.length);
    let path;
    if (raw.startsWith('"')) {
      path = unquoteCString(raw);
      if (path === null) {
        throw new DiffParseError(this.lineNo(), `malformed quoted file name ${JSON.stringify(raw)}`);
      }
    } else {
      // GNU diff puts a tab and a timestamp after the name.
      path = raw.split('\t')[0];
    }
    // Refused characters are checked before trimming, so a trailing U+FEFF
    // or U+0085 is refused, as by the daemon, rather than trimmed by one
    // side and kept by the other.
    this.refuseInvisible(path);
    path = raw.startsWith('"') ? path : trimEndLikeRust(path);
    if (path === '') {
      throw new DiffParseError(this.lineNo(), `missing file name after ${JSON.stringify(prefix)}`);
    }
    return path === '/dev/null' ? null : path;
  }

  /** Refuses a file name with a control or invisible character, naming the current line. */
  refuseInvisible(name) {
    const problem = name === null ? null : invisibleCharacterProblem(name);
    if (problem !== null) {
      throw new DiffParseError(this.lineNo(), problem);
    }
  }

  /**
   * After a hunk's counted lines, a further body line means the header counts
   * are wrong: refuse rather than silently drop it.
   */
  rejectStrayHunkLine(hunks) {
    const line = this.peek();
    const last = hunks[hunks.length - 1];
    if (line === undefined || last === undefined) {
      return;
    }
    const nextIsHeader = line.startsWith('--- ') && (this.lines[this.pos + 1] ?? '').startsWith('+++ ');
    // `-- ` is the signature separator of `git format-patch` mails.
    const stray =
      line.startsWith('+') ||
      line.startsWith(' ') ||
      line.startsWith('\\') ||
      (line.startsWith('-') && !nextIsHeader && line !== '-- ' && line !== '--');
    if (stray) {
      throw new DiffParseError(this.lineNo(), longerThanHeader(last));
    }
  }

  /** Hunks in order and not overlapping; creations and deletions shaped as such. */
  checkHunks(file) {
    let previousEnd = 0;
    file.hunks.forEach((hunk, index) => {
      if (index > 0 && oldIndex(hunk) < previousEnd) {
        throw new DiffParseError(
          hunk.line,
          'hunks are out of order or overlap: each must start after the previous one ends',
        );
      }
      previousEnd = oldIndex(hunk) + hunk.oldLen;
      if (file.change === 'created' && (hunk.oldLen !== 0 || file.hunks.length > 1)) {
        throw new DiffParseError(hunk.line, `${file.path} is created (--- /dev/null): expect one hunk '@@ -0,0 +1,N @@'`);
      }
      if (file.change === 'deleted' && hunk.newLen !== 0) {
        throw new DiffParseError(hunk.line, `${file.path} is deleted (+++ /dev/null): its hunks cannot add lines`);
      }
    });
    if (file.hunks.length === 0 && file.change === 'modified') {
      throw new DiffParseError(file.line, `no hunks for ${file.path}`);
    }
  }
}

module.exports = { parseUnifiedDiff, DiffParseError };
