'use strict';
// vscode_search: text search over the workspace folder with VS Code's own
// search (ripgrep, the user's search.exclude and .gitignore) through the
// proposed `findTextInFiles` API when this extension may use it; otherwise
// `findFiles` and reading each file, the open documents' unsaved text
// included.

const fs = require('node:fs');
const vscode = require('vscode');
const { ToolError } = require('./tool-error');
const { relativePathOf } = require('./workspace');
const { isInside } = require('./paths');

const SNIPPET_CHARS = 200;
/** Files the fallback reads at most, and the largest it reads. */
const FALLBACK_MAX_FILES = 20000;
const FALLBACK_MAX_FILE_BYTES = 2 * 1024 * 1024;

/** A matched line as a snippet: without surrounding blanks, at most 200 characters. */
const snippetOf = (line) => line.trim().slice(0, SNIPPET_CHARS);

/** The glob relative to the folder: a bare name pattern matches at any depth. */
function includePattern(folder, tool, glob) {
  if (glob === undefined) {
    return new vscode.RelativePattern(folder.uri, '**/*');
  }
  if (glob.startsWith('/') || glob.split('/').includes('..')) {
    throw new ToolError('INVALID_ARGUMENTS', `${tool}: glob ${JSON.stringify(glob)} must be relative to the workspace folder, without '..'`);
  }
  return new vscode.RelativePattern(folder.uri, glob.includes('/') ? glob : `**/${glob}`);
}

/** vscode_search {query, isRegex?, glob?, maxResults?} → {hits, truncated, engine}. */
async function search(args, context) {
  const max = args.maxResults ?? 200;
  const include = includePattern(context.folder, context.tool, args.glob);
  let found;
  try {
    found = await withFindTextInFiles(args, include, max, context);
  } catch (err) {
    if (!(err instanceof ProposalMissing)) {
      throw err;
    }
    found = await withFindFiles(args, include, max, context);
  }
  found.hits.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line || a.column - b.column));
  return found;
}

/**
 * Whether the file `uri` (found by a search) really lies in the folder:
 * not a symlink (with `noSymlink`) and its realpath inside the folder's. A
 * search that followed a link would read files the path checks of the
 * other tools refuse. Answers are cached per file for one search.
 */
function insideChecker(folder, noSymlink) {
  const cache = new Map();
  return (uri) => {
    const path = uri.fsPath;
    if (!cache.has(path)) {
      let inside = false;
      try {
        inside = !(noSymlink && fs.lstatSync(path).isSymbolicLink()) && isInside(folder.realPath, fs.realpathSync.native(path));
      } catch {
        // Gone or unreadable: nothing to show from it.
      }
      cache.set(path, inside);
    }
    return cache.get(path);
  };
}

/** `findTextInFiles` is declared but throws when the proposal is not enabled for this extension. */
class ProposalMissing extends Error {}

async function withFindTextInFiles(args, include, max, { folder, token, tool }) {
  const hits = [];
  let dropped = false;
  const inside = insideChecker(folder, false);
  const collect = (result) => {
    // Context lines (no `ranges`) are not asked for; skip them all the same.
    if (!result.ranges) {
      return;
    }
    const ranges = Array.isArray(result.ranges) ? result.ranges : [result.ranges];
    const previews = Array.isArray(result.preview.matches) ? result.preview.matches : [result.preview.matches];
    const previewLines = result.preview.text.split('\n');
    const relative = relativePathOf(folder, result.uri);
    const path = relative !== null && inside(result.uri) ? relative : null;
    ranges.forEach((range, index) => {
      if (path === null) {
        return;
      }
      if (hits.length >= max) {
        dropped = true;
        return;
      }
      const previewLine = previewLines[previews[index]?.start.line ?? 0] ?? '';
      hits.push({ path, line: range.start.line + 1, column: range.start.character + 1, snippet: snippetOf(previewLine) });
    });
  };
  let pending;
  try {
    pending = vscode.workspace.findTextInFiles(
      { pattern: args.query, isRegExp: args.isRegex === true, isCaseSensitive: true },
      {
        include,
        maxResults: max,
        useDefaultExcludes: true,
        useSearchExclude: true,
        useIgnoreFiles: true,
        // Symlinks could lead out of the folder; hits are also checked above.
        followSymlinks: false,
        previewOptions: { matchLines: 1, charsPerLine: 10000 },
      },
      collect,
      token,
    );
  } catch (err) {
    throw new ProposalMissing(err.message);
  }
  let complete;
  try {
    complete = await pending;
  } catch (err) {
    throw searchFailure(tool, args, err);
  }
  return { hits, truncated: dropped || complete?.limitHit === true, engine: 'findTextInFiles' };
}

async function withFindFiles(args, include, max, { folder, token, tool }) {
  const matcher = lineMatcher(tool, args);
  // Stable findFiles has no followSymlinks option (only the proposed
  // findFiles2 has, unavailable whenever this fallback runs): symlinked files
  // and files reached through a symlinked directory outside are skipped here.
  const inside = insideChecker(folder, true);
  const uris = await vscode.workspace.findFiles(include, undefined, FALLBACK_MAX_FILES, token);
  const open = new Map(vscode.workspace.textDocuments.map((doc) => [doc.uri.toString(), doc]));
  const hits = [];
  let truncated = uris.length >= FALLBACK_MAX_FILES;
  for (const uri of uris) {
    if (token.isCancellationRequested) {
      throw new vscode.CancellationError();
    }
    const path = relativePathOf(folder, uri);
    const text = path === null || !inside(uri) ? null : await textOf(uri, open.get(uri.toString()));
    if (text === null) {
      continue;
    }
    const lines = text.split(/\r?\n/);
    for (let index = 0; index < lines.length && !truncated; index++) {
      for (const column of matcher(lines[index])) {
        if (hits.length >= max) {
          truncated = true;
          break;
        }
        hits.push({ path, line: index + 1, column: column + 1, snippet: snippetOf(lines[index]) });
      }
    }
    if (truncated) {
      break;
    }
  }
  return { hits, truncated, engine: 'findFiles' };
}

/** The text to search: the open document's (unsaved edits included), else the file's; null for binary or huge files. */
async function textOf(uri, document) {
  if (document) {
    return document.getText();
  }
  try {
    const stat = await vscode.workspace.fs.stat(uri);
    if (stat.size > FALLBACK_MAX_FILE_BYTES) {
      return null;
    }
    const bytes = await vscode.workspace.fs.readFile(uri);
    return bytes.includes(0) ? null : Buffer.from(bytes).toString('utf8');
  } catch {
    // Deleted or unreadable since findFiles listed it: nothing to search.
    return null;
  }
}

/** A function giving the 0-based columns where the query matches one line. */
function lineMatcher(tool, args) {
  if (args.isRegex === true) {
    let regex;
    try {
      regex = new RegExp(args.query, 'gu');
    } catch (err) {
      throw new ToolError('INVALID_ARGUMENTS', `${tool}: query ${JSON.stringify(args.query)} is not a valid regular expression: ${err.message}`);
    }
    return (line) => {
      const columns = [];
      for (const match of line.matchAll(regex)) {
        columns.push(match.index);
        if (match[0] === '') {
          break;
        }
      }
      return columns;
    };
  }
  return (line) => {
    const columns = [];
    for (let at = line.indexOf(args.query); at !== -1; at = line.indexOf(args.query, at + args.query.length)) {
      columns.push(at);
    }
    return columns;
  };
}

/** A failed VS Code search: a bad regex is the caller's, anything else ours. */
function searchFailure(tool, args, err) {
  if (err instanceof vscode.CancellationError) {
    return err;
  }
  if (args.isRegex === true) {
    return new ToolError('INVALID_ARGUMENTS', `${tool}: the search for the regular expression ${JSON.stringify(args.query)} failed: ${err.message}`);
  }
  return new ToolError('INTERNAL', `${tool}: VS Code's search for ${JSON.stringify(args.query)} failed: ${err.message}`);
}

module.exports = { search, insideChecker };
