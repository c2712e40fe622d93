'use strict';
// The editor's workspace as provider tools: their declarations for `hello`
// (JSON Schema, timeout, declared access) and the host that runs
// `tool.call`s, answers `tool.cancel`s and refuses writes in read-only mode.

const vscode = require('vscode');
const { ToolError } = require('./tool-error');
const { currentFolder } = require('./workspace');
const read = require('./tools-read');
const edit = require('./tools-edit');

/** The daemon refuses a `tool.result` frame over 5 MiB; stay clear of it. */
const MAX_RESULT_BYTES = 5 * 1024 * 1024 - 64 * 1024;

const PATH_ARG = { type: 'string', minLength: 1, description: 'File path relative to the workspace folder, with /.' };

/**
 * Each tool: its declaration (sent in hello.tools) plus `writes` (refused in
 * read-only mode) and `run(args, context)`.
 */
const TOOLS = [
  {
    name: 'vscode_search',
    description:
      "Search the text of the files in the editor's workspace folder (unsaved edits included where the editor has them). Literal, case-sensitive text unless isRegex. Returns hits with 1-based line and column and the matching line as snippet.",
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, description: 'Text to find (a regular expression with isRegex).' },
        isRegex: { type: 'boolean', default: false, description: 'Treat query as a regular expression.' },
        glob: { type: 'string', minLength: 1, description: "Only files matching this glob; without '/' it matches file names at any depth ('*.ts'), with one the relative path ('src/**/*.ts')." },
        maxResults: { type: 'integer', minimum: 1, maximum: 5000, default: 200, description: 'Most hits to return.' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    timeout: 60000,
    access: { effect: 'read' },
    run: read.search,
  },
  {
    name: 'vscode_read',
    description:
      "Read a file as the editor has it now, unsaved edits included: its text, the SHA-256 of that text (UTF-8), whether it has unsaved changes, its language and document version.",
    parameters: { type: 'object', properties: { path: PATH_ARG }, required: ['path'], additionalProperties: false },
    timeout: 30000,
    access: { effect: 'read', reads: ['path'] },
    run: read.readFile,
  },
  {
    name: 'vscode_apply_diff',
    description:
      "Apply a unified diff ('--- a/path' / '+++ b/path' headers, '@@ -l,s +l,s @@' hunks; /dev/null to create or delete) to the files as the editor has them, in one edit, then save them. All or nothing: if any hunk's context or removed lines do not match the editor's text at the stated line, nothing changes and every conflicting hunk is returned with the expected and actual lines.",
    parameters: {
      type: 'object',
      properties: {
        unifiedDiff: { type: 'string', minLength: 1, description: 'The unified diff; paths relative to the workspace folder.' },
        save: { type: 'boolean', default: true, description: 'Save the changed files (false leaves them as unsaved edits in the editor).' },
      },
      required: ['unifiedDiff'],
      additionalProperties: false,
    },
    timeout: 60000,
    access: { effect: 'write', diffs: ['unifiedDiff'] },
    writes: true,
    run: edit.applyDiff,
  },
  {
    name: 'vscode_format',
    description: "Format a file with the editor's formatter for its language, then save it. Fails with NOT_CONFIGURED when no formatter changes it and none is configured.",
    parameters: { type: 'object', properties: { path: PATH_ARG }, required: ['path'], additionalProperties: false },
    timeout: 30000,
    access: { effect: 'write', writes: ['path'] },
    writes: true,
    run: edit.format,
  },
  {
    name: 'vscode_organize_imports',
    description: "Organize a file's imports with the editor's 'Organize Imports' action for its language, then save it.",
    parameters: { type: 'object', properties: { path: PATH_ARG }, required: ['path'], additionalProperties: false },
    timeout: 30000,
    access: { effect: 'write', writes: ['path'] },
    writes: true,
    run: edit.organizeImports,
  },
  {
    name: 'vscode_diagnostics',
    description: "The editor's current problems (errors, warnings, hints from its language servers and linters) for one file, or for every file of the workspace folder.",
    parameters: {
      type: 'object',
      properties: { path: { ...PATH_ARG, description: 'Only this file (relative to the workspace folder); omit for all.' } },
      additionalProperties: false,
    },
    timeout: 15000,
    access: { effect: 'read', reads: ['path'] },
    run: read.diagnostics,
  },
  {
    name: 'vscode_open_editors',
    description: 'Which files are open in the editor: the active one with its selection and selected text, and every open tab with its language and whether it has unsaved changes.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    timeout: 10000,
    access: { effect: 'read' },
    run: read.openEditors,
  },
];

/** The `hello.tools` entries. */
function toolDeclarations() {
  return TOOLS.map(({ name, description, parameters, timeout, access }) => ({ name, description, parameters, timeout, access }));
}

/** `args` checked against the tool's (flat) schema; a ToolError names the first problem. */
function checkArgs(tool, args) {
  const value = args ?? {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolError('INVALID_ARGUMENTS', `${tool.name}: arguments must be a JSON object, not ${JSON.stringify(value).slice(0, 80)}`);
  }
  const { properties, required = [] } = tool.parameters;
  const bad = (name, why) => new ToolError('INVALID_ARGUMENTS', `${tool.name}: ${name} ${why}`);
  for (const name of Object.keys(value)) {
    if (!(name in properties)) {
      const known = Object.keys(properties);
      throw bad(name, `is not an argument of this tool (${known.length ? `it takes ${known.join(', ')}` : 'it takes none'})`);
    }
  }
  for (const name of required) {
    if (value[name] === undefined) {
      throw bad(name, 'is required');
    }
  }
  for (const [name, schema] of Object.entries(properties)) {
    const given = value[name];
    if (given === undefined) {
      continue;
    }
    if (schema.type === 'string' && (typeof given !== 'string' || given.length < (schema.minLength ?? 0))) {
      throw bad(name, typeof given === 'string' ? 'must not be empty' : `must be a string, not ${JSON.stringify(given).slice(0, 80)}`);
    }
    if (schema.type === 'boolean' && typeof given !== 'boolean') {
      throw bad(name, `must be true or false, not ${JSON.stringify(given).slice(0, 80)}`);
    }
    if (schema.type === 'integer' && !(Number.isInteger(given) && given >= schema.minimum && given <= schema.maximum)) {
      throw bad(name, `must be a whole number from ${schema.minimum} to ${schema.maximum}, not ${JSON.stringify(given).slice(0, 80)}`);
    }
  }
  return value;
}

class ToolHost {
  /**
   * @param {{send: (message: object) => boolean, log: (line: string) => void, readOnly: () => boolean}} options
   */
  constructor(options) {
    this.options = options;
    this.byName = new Map(TOOLS.map((tool) => [tool.name, tool]));
    /**
     * Calls in flight: id → {tool, source, answered, committed}. `committed`:
     * the call has started changing files (applyEdit / save), which a
     * cancel cannot take back.
     */
    this.inFlight = new Map();
  }

  /** `tool.call {id, tool, args}`: runs it and answers with `tool.result`. */
  async call(message) {
    const started = Date.now();
    const source = new vscode.CancellationTokenSource();
    const entry = { tool: message.tool, source, answered: false, committed: false };
    this.inFlight.set(message.id, entry);
    const committing = () => {
      entry.committed = true;
    };
    let reply;
    try {
      reply = { type: 'tool.result', id: message.id, data: await this.run(message, source.token, committing) };
    } catch (err) {
      reply = failure(message, err);
    } finally {
      source.dispose();
      this.inFlight.delete(message.id);
    }
    if (entry.answered) {
      return;
    }
    const size = Buffer.byteLength(JSON.stringify(reply), 'utf8');
    if (size > MAX_RESULT_BYTES) {
      reply = failure(
        message,
        new ToolError('INTERNAL', `${message.tool}: the result is ${(size / 1048576).toFixed(1)} MiB, more than one tool result may carry (5 MiB); ask for less (a path, a glob, fewer results)`),
      );
    }
    this.options.send(reply);
    const outcome = reply.errorCode ? `error ${reply.errorCode}: ${reply.error}` : 'ok';
    this.options.log(`tool ${message.tool} (${message.id}): ${outcome} in ${Date.now() - started} ms`);
  }

  async run(message, token, committing) {
    const tool = this.byName.get(message.tool);
    if (!tool) {
      throw new ToolError('NOT_FOUND', `${message.tool} is not a tool of this editor; it offers ${[...this.byName.keys()].join(', ')}`);
    }
    const args = checkArgs(tool, message.args);
    if (tool.writes && this.options.readOnly()) {
      throw new ToolError(
        'UNAUTHORIZED',
        `${tool.name} refused: the editor is read-only (bridge.readOnly); set bridge.readOnly to false in the VS Code user settings to let agents change files (a workspace setting cannot)`,
      );
    }
    const folder = currentFolder();
    if (!folder) {
      throw new ToolError('NOT_CONFIGURED', `${tool.name}: this VS Code window has no workspace folder on disk`);
    }
    return tool.run(args, { folder, token, tool: tool.name, committing });
  }

  /**
   * `tool.cancel {id, reason}`: cancels the call and answers CANCELLED at
   * once — unless its edit is already being applied: CANCELLED would tell
   * the caller nothing changed when files did, so the real outcome is
   * answered when the call ends.
   */
  cancel(message) {
    const entry = this.inFlight.get(message.id);
    if (!entry || entry.answered) {
      return;
    }
    if (entry.committed) {
      this.options.log(`tool ${entry.tool} (${message.id}): cancel arrived while its edit was being applied; its outcome will be answered`);
      return;
    }
    entry.answered = true;
    entry.source.cancel();
    const reason = message.reason ? ` (${message.reason})` : '';
    this.options.send({ type: 'tool.result', id: message.id, error: `${entry.tool} was cancelled${reason}`, errorCode: 'CANCELLED' });
    this.options.log(`tool ${entry.tool} (${message.id}): cancelled${reason}`);
  }

  /**
   * Cancels every call in flight without answering: the connection that
   * asked is gone, or its session is ending (the daemon ends those calls).
   */
  abandonAll(reason) {
    for (const [id, entry] of this.inFlight) {
      if (!entry.answered) {
        entry.answered = true;
        entry.source.cancel();
        this.options.log(`tool ${entry.tool} (${id}): abandoned, ${reason}`);
      }
    }
  }
}

/** The `tool.result` of a failed call. */
function failure(message, err) {
  if (err instanceof ToolError) {
    return { type: 'tool.result', id: message.id, error: err.message, errorCode: err.code };
  }
  if (err instanceof vscode.CancellationError) {
    return { type: 'tool.result', id: message.id, error: `${message.tool} was cancelled`, errorCode: 'CANCELLED' };
  }
  const code = err instanceof vscode.FileSystemError && err.code === 'FileNotFound' ? 'NOT_FOUND' : 'INTERNAL';
  return { type: 'tool.result', id: message.id, error: `${message.tool} failed: ${err?.message ?? String(err)}`, errorCode: code };
}

module.exports = { ToolHost, toolDeclarations };
