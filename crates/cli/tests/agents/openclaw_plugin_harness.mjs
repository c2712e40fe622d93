// A small stand-in for OpenClaw's plugin `api`, for
// crates/cli/tests/agents/openclaw_plugin.rs: it loads the OpenClaw plugin
// (crates/agents/assets/openclaw-plugin/index.js) the way OpenClaw 2026.9.6 does
// (`register(api)`, then the tool factory with the agent's `ctx`), runs tool
// calls as OpenClaw's agent loop does (`execute(toolCallId, params, signal,
// onUpdate)`) and prints one JSON document of what happened.
//
// Input: one JSON document, as argv[2] or as the first line of stdin:
//   {
//     "plugin": "/abs/index.js",            // default: the repository's plugin
//     "pluginConfig": {"home": …, "binary": …},
//     "ctx": {"workspaceDir": …},           // what the factory is given
//     "calls": [{
//       "tool": "copilot_code_verbose",
//       "toolCallId": "call-1",
//       "params": {"task": …, "workingDir": …},
//       "abort": {"afterMs": N} | {"afterUpdates": N} | {"onStdin": true}
//              | {"onResponseTo": "tools/call"}
//     }]
//   }
// With `abort.onStdin`, the call's AbortSignal fires when a line arrives on
// stdin (or stdin ends), so the test decides the moment; the harness prints
// `{"running": "TOOL"}` on a line of its own once the call has started.
// With `abort.onResponseTo`, it fires when the daemon has answered the
// headers of that JSON-RPC method's POST, before the plugin sees them (an
// abort while the answer is on the way).
//
// Output (the last line of stdout): {registered, tools, calls: [{tool,
// updates: [{atMs, partial}], result, threw, elapsedMs, abortedAtMs,
// returnedAfterAbortMs}], logs}.

import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const defaultPlugin = fileURLToPath(new URL("../../../agents/assets/openclaw-plugin/index.js", import.meta.url));

const stdinLines = createInterface({ input: process.stdin, crlfDelay: Infinity });
const pendingLines = [];
const lineWaiters = [];
let stdinEnded = false;
stdinLines.on("line", (line) => {
    const waiter = lineWaiters.shift();
    if (waiter) waiter(line);
    else pendingLines.push(line);
});
stdinLines.on("close", () => {
    stdinEnded = true;
    for (const waiter of lineWaiters.splice(0)) waiter(null);
});

/** The next stdin line, or null once stdin has ended. */
function nextLine() {
    if (pendingLines.length > 0) return Promise.resolve(pendingLines.shift());
    if (stdinEnded) return Promise.resolve(null);
    return new Promise((resolve) => lineWaiters.push(resolve));
}

function describe(error) {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** A plain-JSON copy (functions and cycles would not survive JSON). */
function plain(value) {
    try {
        return JSON.parse(JSON.stringify(value ?? null));
    } catch (error) {
        return { unserializable: describe(error) };
    }
}

async function main() {
    const input = JSON.parse(process.argv[2] ?? (await nextLine()) ?? "{}");
    const plugin = (await import(pathToFileURL(input.plugin ?? defaultPlugin).href)).default;

    const logs = [];
    const logger = Object.fromEntries(
        ["debug", "info", "warn", "error"].map((level) => [level, (message) => logs.push({ level, message: String(message) })]),
    );
    const registered = [];
    const api = {
        id: plugin.id,
        name: plugin.name,
        source: input.plugin ?? defaultPlugin,
        registrationMode: "full",
        config: {},
        pluginConfig: input.pluginConfig ?? {},
        logger,
        registerTool(tool, opts) {
            registered.push({ factory: typeof tool === "function", tool, opts: opts ?? null });
        },
    };
    plugin.register(api);

    // OpenClaw calls each factory when it assembles an agent run's tools.
    const tools = [];
    for (const entry of registered) {
        const made = entry.factory ? entry.tool(input.ctx ?? {}) : entry.tool;
        for (const tool of [made].flat()) if (tool) tools.push(tool);
    }

    const calls = [];
    for (const [index, call] of (input.calls ?? []).entries()) {
        const tool = tools.find((candidate) => candidate.name === call.tool);
        if (!tool) {
            calls.push({ tool: call.tool, threw: `no tool named ${call.tool}` });
            continue;
        }
        const controller = new AbortController();
        const started = Date.now();
        const record = { tool: call.tool, updates: [], result: null, threw: null, abortedAtMs: null };
        const abort = () => {
            if (controller.signal.aborted) return;
            record.abortedAtMs = Date.now() - started;
            controller.abort(new Error("stopped by the harness"));
        };
        let timer;
        if (call.abort?.afterMs !== undefined) timer = setTimeout(abort, call.abort.afterMs);
        const realFetch = globalThis.fetch;
        if (call.abort?.onResponseTo) {
            globalThis.fetch = async (url, init) => {
                const response = await realFetch(url, init);
                let method;
                try {
                    method = JSON.parse(init?.body ?? "null")?.method;
                } catch {
                    method = undefined;
                }
                if (method === call.abort.onResponseTo) abort();
                return response;
            };
        }
        if (call.abort?.onStdin) {
            nextLine().then(abort);
            process.stdout.write(`${JSON.stringify({ running: call.tool })}\n`);
        }
        const onUpdate = (partial) => {
            record.updates.push({ atMs: Date.now() - started, partial: plain(partial) });
            if (call.abort?.afterUpdates !== undefined && record.updates.length >= call.abort.afterUpdates) abort();
        };
        try {
            const result = await tool.execute(call.toolCallId ?? `call-${index + 1}`, call.params ?? {}, controller.signal, onUpdate);
            record.result = plain(result);
        } catch (error) {
            record.threw = describe(error);
        }
        clearTimeout(timer);
        globalThis.fetch = realFetch;
        record.elapsedMs = Date.now() - started;
        record.returnedAfterAbortMs = record.abortedAtMs === null ? null : record.elapsedMs - record.abortedAtMs;
        // Updates after `execute` returned are ignored by OpenClaw; count them apart.
        record.updatesBeforeReturn = record.updates.filter((update) => update.atMs <= record.elapsedMs).length;
        calls.push(record);
    }

    return {
        registered: registered.map((entry) => ({ factory: entry.factory, opts: entry.opts })),
        tools: tools.map((tool) => ({
            name: tool.name,
            label: tool.label,
            catalogMode: tool.catalogMode ?? null,
            hasExecute: typeof tool.execute === "function",
            parameters: tool.parameters,
        })),
        calls,
        logs,
    };
}

let report;
try {
    report = await main();
} catch (error) {
    report = { harnessError: describe(error), stack: error?.stack ?? null };
}
// Open keep-alive sockets or a stdin listener must not keep the process up.
process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
