// copilot-bridge inside OpenClaw: three agent tools that hand a coding task to
// copilot-bridge's daemon (its MCP code server at /mcp/code, over streamable
// HTTP) and bring the result back.
//
// - copilot_code: the task's report as Markdown (answer, tool calls, statistics);
// - copilot_code_verbose: the same after a numbered log of every step, the
//   log streamed to OpenClaw as partial results while the task runs;
// - copilot_orchestrate: the task planned into sub-tasks run in parallel
//   waves, a report per sub-task.
//
// The daemon is the one of copilot-bridge's home directory (plugin config
// `home`, else $COPILOT_BRIDGE_HOME, else ~/.copilot-bridge): its address and
// token are in <home>/gateway.json, checked with GET /healthz; when none runs
// it is started with `<binary> --home <home> daemon start`. A task works in
// the current OpenClaw agent's workspace unless the call names another
// directory (a relative one is taken from that workspace).
//
// Plain JavaScript with Node's own modules and global fetch: nothing to
// install, no build step. Finding or starting the daemon is daemon.js. The daemon's token never leaves this file: it is not
// logged and not part of any result.

import { isAbsolute, resolve } from "node:path";

import { BridgeError, PLUGIN_ID, baseUrl, expandHome, findDaemon, gatewayFile, readSettings } from "./daemon.js";

const PROTOCOL_VERSION = "2025-06-18";
/** How long opening or closing an MCP session may take. */
const HANDSHAKE_MS = 15000;
/** How long a cancelled call may wait for the daemon to be told before it returns. */
const CANCEL_GRACE_MS = 1000;
/** How many characters of an HTTP error body are quoted. */
const QUOTE_CHARS = 500;


// ---------------------------------------------------------------------------
// MCP over streamable HTTP

/** Each JSON-RPC message of a response: a JSON body or an SSE stream's `data:` events. */
async function* messagesOf(response) {
    const type = response.headers.get("content-type") || "";
    if (type.includes("text/event-stream")) {
        yield* sseMessages(response.body);
        return;
    }
    const text = await response.text();
    if (!text.trim()) return;
    const body = JSON.parse(text);
    for (const message of Array.isArray(body) ? body : [body]) yield message;
}

async function* sseMessages(body) {
    if (!body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    let data = [];
    const dispatch = function* () {
        if (data.length === 0) return;
        const text = data.join("\n");
        data = [];
        if (!text.trim()) return;
        try {
            const message = JSON.parse(text);
            for (const one of Array.isArray(message) ? message : [message]) yield one;
        } catch {
            // Not JSON-RPC (a priming or keep-alive event): nothing to read.
        }
    };
    for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end;
        while ((end = buffer.search(/\r\n|\r|\n/)) !== -1) {
            // A CR ending the chunk may be the first half of a CRLF: wait for the next chunk.
            if (end === buffer.length - 1 && buffer[end] === "\r") break;
            const line = buffer.slice(0, end);
            buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
            if (line === "") yield* dispatch();
            else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
            // `event:`, `id:`, `retry:` and comments carry nothing we need.
        }
    }
    buffer += decoder.decode();
    if (buffer.startsWith("data:")) data.push(buffer.slice(buffer.startsWith("data: ") ? 6 : 5));
    yield* dispatch();
}

async function httpProblem(response, what) {
    let body = "";
    try {
        body = (await response.text()).trim().slice(0, QUOTE_CHARS);
    } catch {
        // The status says enough.
    }
    if (response.status === 401 || response.status === 403) {
        return new BridgeError(
            `copilot-bridge's daemon refused the plugin's credentials (HTTP ${response.status}) on ${what}; ` +
                `its gateway.json may be stale: restart the daemon (\`copilot-bridge daemon stop\`, then start).`,
        );
    }
    return new BridgeError(
        `copilot-bridge's daemon answered HTTP ${response.status} to ${what}${body ? `: ${body}` : ""}`,
    );
}

function mcpProblem(error, what) {
    const message = error && typeof error.message === "string" ? error.message : JSON.stringify(error);
    return new BridgeError(`copilot-bridge's MCP server refused ${what}: ${message}`);
}

/** One MCP session with the daemon's code server. */
class McpSession {
    constructor(daemon) {
        this.url = `${baseUrl(daemon)}/mcp/code`;
        this.token = daemon.token;
        this.id = null;
        this.nextId = 1;
    }

    headers() {
        const headers = {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${this.token}`,
        };
        if (this.id) {
            headers["mcp-session-id"] = this.id;
            headers["mcp-protocol-version"] = PROTOCOL_VERSION;
        }
        return headers;
    }

    post(message, signal) {
        return fetch(this.url, { method: "POST", headers: this.headers(), body: JSON.stringify(message), signal });
    }

    /**
     * Sends a request and reads its stream until the answer, handing notifications to `onNotification`.
     * `onSending(id)` runs before the POST, `onSent(id, response)` once the daemon has answered its headers.
     */
    async request(method, params, { signal, onNotification, onSending, onSent } = {}) {
        const id = this.nextId++;
        onSending?.(id);
        const response = await this.post({ jsonrpc: "2.0", id, method, params }, signal);
        if (!response.ok) throw await httpProblem(response, method);
        onSent?.(id, response);
        for await (const message of messagesOf(response)) {
            if (message.id === id && ("result" in message || "error" in message)) {
                if (message.error) throw mcpProblem(message.error, method);
                return { id, result: message.result, response };
            }
            if (message.method && message.id === undefined) onNotification?.(message);
        }
        throw new BridgeError(`copilot-bridge's daemon closed the stream of ${method} without an answer.`);
    }

    async notify(method, params, signal) {
        const response = await this.post({ jsonrpc: "2.0", method, ...(params ? { params } : {}) }, signal);
        await response.body?.cancel().catch(() => undefined);
        if (!response.ok) throw await httpProblem(response, method);
    }

    async open(signal) {
        const opening = AbortSignal.any([signal, AbortSignal.timeout(HANDSHAKE_MS)].filter(Boolean));
        await this.request(
            "initialize",
            {
                protocolVersion: PROTOCOL_VERSION,
                capabilities: {},
                clientInfo: { name: "openclaw-copilot-bridge", version: "0.1.0" },
            },
            {
                signal: opening,
                onSent: (_id, response) => {
                    this.id = response.headers.get("mcp-session-id");
                },
            },
        );
        await this.notify("notifications/initialized", undefined, opening);
    }

    async close() {
        if (!this.id) return;
        try {
            const response = await fetch(this.url, {
                method: "DELETE",
                headers: this.headers(),
                signal: AbortSignal.timeout(HANDSHAKE_MS),
            });
            await response.body?.cancel().catch(() => undefined);
        } catch {
            // The daemon forgets idle sessions by itself.
        }
        this.id = null;
    }
}

// ---------------------------------------------------------------------------
// Tools

const CODE_PARAMETERS = {
    type: "object",
    additionalProperties: false,
    properties: {
        task: {
            type: "string",
            minLength: 1,
            description: "What to do, with the context the coding agent needs (files, constraints, how to check).",
        },
        workingDir: {
            type: "string",
            description: "Directory to work in (default: this agent's workspace; a relative path is taken from it).",
        },
        model: { type: "string", description: "Model to use (default: copilot-bridge's configured one)." },
        timeout: { type: "integer", minimum: 1, description: "Seconds the task may take." },
    },
    required: ["task"],
};

const ORCHESTRATE_PARAMETERS = {
    type: "object",
    additionalProperties: false,
    properties: {
        task: {
            type: "string",
            minLength: 1,
            description: "The whole task, with the context the planner needs.",
        },
        maxConcurrency: {
            type: "integer",
            minimum: 1,
            maximum: 64,
            default: 3,
            description: "Sub-tasks that run at once (default 3).",
        },
        timeout: { type: "integer", minimum: 1, description: "Seconds the whole plan may take." },
        workingDir: {
            type: "string",
            description: "Directory to work in (default: this agent's workspace; a relative path is taken from it).",
        },
    },
    required: ["task"],
};

const TOOLS = [
    {
        name: "copilot_code",
        label: "Copilot: code",
        description:
            "Delegate a coding task to copilot-bridge's coding agent, which reads, edits and runs tools in the workspace, and get its result as Markdown: the final answer, the tool calls it made and statistics. Tasks run one at a time.",
        parameters: CODE_PARAMETERS,
        streamsSteps: false,
    },
    {
        name: "copilot_code_verbose",
        label: "Copilot: code (verbose)",
        description:
            "Like copilot_code, and returns a numbered log of every step (model turns, each tool call and its outcome) before the result; the steps are streamed while the task runs.",
        parameters: CODE_PARAMETERS,
        streamsSteps: true,
    },
    {
        name: "copilot_orchestrate",
        label: "Copilot: orchestrate",
        description:
            "Split a larger coding task into sub-tasks with dependencies, run them in parallel waves through copilot-bridge (writers in separate git worktrees, merged back in plan order) and get a Markdown report per sub-task.",
        parameters: ORCHESTRATE_PARAMETERS,
        streamsSteps: true,
    },
];

function text(value) {
    return [{ type: "text", text: value }];
}

/** A failed call as a result the agent reads (OpenClaw counts `details.status` "failed" as an error). */
function failure(tool, message, extra = {}) {
    return {
        content: text(`${tool}: ${message}`),
        details: { status: "failed", error: message, tool, ...extra },
    };
}

/** The arguments for the daemon's tool, `workingDir` made absolute against the workspace. */
function daemonArguments(spec, params, workspace, settings) {
    const args = { task: params.task };
    const dir = typeof params.workingDir === "string" && params.workingDir.trim() ? params.workingDir.trim() : undefined;
    const base = workspace ? resolve(workspace) : undefined;
    const expanded = expandHome(dir);
    if (expanded) args.workingDir = isAbsolute(expanded) || !base ? resolve(expanded) : resolve(base, expanded);
    else if (base) args.workingDir = base;
    const timeout = Number.isInteger(params.timeout) && params.timeout > 0 ? params.timeout : settings.timeoutSeconds;
    if (timeout) args.timeout = timeout;
    if (spec.name === "copilot_orchestrate") {
        if (params.maxConcurrency !== undefined) args.maxConcurrency = params.maxConcurrency;
    } else if (typeof params.model === "string" && params.model.trim()) {
        args.model = params.model.trim();
    }
    return args;
}

/** The daemon's CallToolResult as OpenClaw's tool result. */
function fromCallResult(spec, result, steps, extra) {
    const blocks = Array.isArray(result?.content) ? result.content : [];
    const content = [];
    for (const block of blocks) {
        if (block?.type === "text" && typeof block.text === "string") content.push({ type: "text", text: block.text });
        else if (block?.type === "image" && typeof block.data === "string")
            content.push({ type: "image", data: block.data, mimeType: block.mimeType || "image/png" });
    }
    if (content.length === 0) content.push({ type: "text", text: "(copilot-bridge returned no text)" });
    // copilot_orchestrate's Markdown has no step log of its own: the progress lines go first.
    if (spec.name === "copilot_orchestrate" && steps.length > 0) {
        content.unshift({ type: "text", text: `## Progress\n\n${numbered(steps)}\n` });
    }
    const details = {
        tool: spec.name,
        ...extra,
        steps: steps.length,
        ...(result?.structuredContent !== undefined ? { structured: result.structuredContent } : {}),
    };
    if (result?.isError) {
        details.status = "failed";
        details.error = "copilot-bridge returned an error result (see the text)";
    } else {
        details.status = "completed";
    }
    return { content, details };
}

function numbered(steps) {
    return steps.map((line, index) => (/^\s*\d+[.)]\s/.test(line) ? line : `${index + 1}. ${line}`)).join("\n");
}

function createTools(settings, logger, workspace) {
    return TOOLS.map((spec) => ({
        name: spec.name,
        label: spec.label,
        description: spec.description,
        parameters: spec.parameters,
        // Visible to the model by name, not only through OpenClaw's Tool
        // Search (`tool_search` / `tool_call`), which it uses by default.
        catalogMode: "direct-only",
        async execute(toolCallId, params, signal, onUpdate) {
            return runTool(spec, settings, logger, workspace, toolCallId, params ?? {}, signal, onUpdate);
        },
    }));
}

async function runTool(spec, settings, logger, workspace, toolCallId, params, signal, onUpdate) {
    if (typeof params.task !== "string" || params.task.trim() === "") {
        return failure(spec.name, "`task` is required: say what to do.");
    }
    if (signal?.aborted) return cancelled(spec.name, []);
    const args = daemonArguments(spec, params, workspace, settings);
    const extra = { workingDir: args.workingDir };
    const steps = [];
    let session = null;
    let callId = null;
    // Settles true once the daemon has taken the tools/call, false when it cannot have.
    let settleCall = () => undefined;
    const callTaken = new Promise((resolvePromise) => {
        settleCall = resolvePromise;
    });
    /** Set on abort: the daemon being told, then the stream dropped. */
    let cancelling = null;
    const controller = new AbortController();
    // Dropping the stream does not stop the daemon's task: it is told with
    // notifications/cancelled, once it has the call (an abort may come while
    // the POST or its answer is on the way).
    const tellDaemon = async () => {
        if (!session?.id || callId === null) return;
        if (!(await within(callTaken, HANDSHAKE_MS, false))) return;
        await session
            .notify(
                "notifications/cancelled",
                { requestId: callId, reason: "cancelled by OpenClaw" },
                AbortSignal.timeout(HANDSHAKE_MS),
            )
            .catch(() => undefined);
    };
    const onAbort = () => {
        cancelling = tellDaemon().finally(() => controller.abort(signal?.reason));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
        // Starting the daemon may take a while: an abort does not wait for it.
        const daemon = await untilAborted(findDaemon(settings), signal);
        session = new McpSession(daemon);
        await session.open(controller.signal);
        const progressToken = `${PLUGIN_ID}-${toolCallId || Date.now()}`;
        const call = session.request(
            "tools/call",
            { name: spec.name, arguments: args, _meta: { progressToken } },
            {
                signal: controller.signal,
                onSending: (id) => {
                    callId = id;
                },
                onSent: () => settleCall(true),
                onNotification: (message) => {
                    if (message.method !== "notifications/progress") return;
                    const line = message.params?.message;
                    if (typeof line !== "string" || line === "") return;
                    steps.push(line);
                    if (typeof onUpdate !== "function") return;
                    try {
                        onUpdate({
                            content: text(numbered(steps)),
                            details: { tool: spec.name, status: "running", steps: steps.length, ...extra },
                        });
                    } catch (error) {
                        logger?.debug?.(`${PLUGIN_ID}: a progress update was refused: ${error?.message}`);
                    }
                },
            },
        );
        call.catch(() => settleCall(false));
        const { result } = await untilAborted(call, signal);
        if (cancelling) return cancelled(spec.name, steps, extra);
        return fromCallResult(spec, result, steps, extra);
    } catch (error) {
        if (cancelling || signal?.aborted) return cancelled(spec.name, steps, extra);
        if (error instanceof BridgeError) return failure(spec.name, error.message, extra);
        const cause = error?.cause?.code || error?.cause?.message || error?.message || String(error);
        return failure(spec.name, `could not reach copilot-bridge's daemon (${cause}).`, extra);
    } finally {
        signal?.removeEventListener("abort", onAbort);
        if (cancelling) {
            // Back to OpenClaw promptly; telling the daemon normally takes milliseconds.
            await within(
                cancelling.then(() => session?.close()).catch(() => undefined),
                CANCEL_GRACE_MS,
            );
        } else {
            await session?.close();
        }
    }
}

/** `promise`, or a rejection as soon as `signal` aborts (what `promise` does goes on). */
function untilAborted(promise, signal) {
    if (!signal) return promise;
    return new Promise((resolvePromise, reject) => {
        const onAbort = () => reject(signal.reason ?? new Error("aborted"));
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
        promise.then(resolvePromise, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
}

/** What `promise` resolves to, or `otherwise` after `ms`. */
async function within(promise, ms, otherwise) {
    let timer;
    const late = new Promise((resolvePromise) => {
        timer = setTimeout(() => resolvePromise(otherwise), ms);
    });
    try {
        return await Promise.race([promise, late]);
    } finally {
        clearTimeout(timer);
    }
}

function cancelled(tool, steps, extra = {}) {
    const log = steps.length > 0 ? `\n\nSteps before it stopped:\n${numbered(steps)}` : "";
    return {
        content: text(`${tool}: the task was cancelled before it finished.${log}`),
        details: { status: "cancelled", tool, steps: steps.length, ...extra },
    };
}

// ---------------------------------------------------------------------------
// The plugin

export default {
    id: PLUGIN_ID,
    name: "Copilot Bridge",
    description:
        "Delegate coding tasks to copilot-bridge's agent (copilot_code, copilot_code_verbose, copilot_orchestrate) through its daemon.",
    register(api) {
        const settings = readSettings(api.pluginConfig);
        const logger = api.logger;
        // A factory: each agent run gets tools bound to that agent's workspace.
        api.registerTool((ctx) => createTools(settings, logger, ctx?.workspaceDir), {
            names: TOOLS.map((spec) => spec.name),
        });
    },
};

// For tests of the pieces that need no OpenClaw.
export const internals = { readSettings, daemonArguments, sseMessages, numbered, gatewayFile };
