// copilot-bridge inside an interactive Copilot CLI session (docs/hooks.md,
// "The Copilot CLI extension"). Installed by `copilot-bridge
// copilot-extension install`, which writes config.json beside this file:
// {"binary": the copilot-bridge program, "home": its state directory}.
//
// On join it finds the daemon of that state directory (starting it with
// `copilot-bridge daemon start` when none runs) and joins the hub: the CLI's
// session is registered as the hub session `copilot-cli-<session id>`
// (COPILOT_BRIDGE_SESSION names an existing hub session instead). Then:
// - the tools of the providers bound to that session are offered to the
//   model, kept current as providers come and go, and run through the hub
//   (`session.tools.call`: its decision, gates and audit);
// - every other tool call of the session is decided by the hub first
//   (`agent.hook` pre-tool-use: policy, the providers' rules and gates); an
//   error or no answer is a deny;
// - what ran and what the user asked go to the session's providers (a tool's
//   output redacted before the model sees it), and the
//   project and provider context comes back as additional context;
// - the system prompt's sections go through the providers' transforms
//   (`session.render`).
// Plain JavaScript with Node's own modules: nothing to install.

import { joinSession } from "@github/copilot-sdk/extension";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const SETTINGS = readSettings();
const HOME = process.env.COPILOT_BRIDGE_HOME || SETTINGS.home || join(homedir(), ".copilot-bridge");
/** How long the hub has to answer one request. */
const PATIENCE_MS = 5000;
/** How often the providers' tools are looked at again. */
const REFRESH_MS = 1000;

function readSettings() {
    try {
        return JSON.parse(readFileSync(join(HERE, "config.json"), "utf8"));
    } catch {
        return {};
    }
}

function gatewayFile() {
    try {
        return JSON.parse(readFileSync(join(HOME, "gateway.json"), "utf8"));
    } catch {
        return null;
    }
}

async function healthy(file) {
    try {
        const response = await fetch(`http://${file.host || "127.0.0.1"}:${file.port}/healthz`, {
            signal: AbortSignal.timeout(1000),
        });
        const health = await response.json();
        return health.service === "copilot-bridge" && health.pid === file.pid;
    } catch {
        return false;
    }
}

function run(program, args) {
    return new Promise((resolve, reject) => {
        const child = spawn(program, args, { stdio: "ignore" });
        child.on("error", reject);
        child.on("exit", (code) =>
            code === 0 ? resolve() : reject(new Error(`${program} ${args.join(" ")} exited with ${code}`)),
        );
    });
}

/** The running daemon's address and token, starting it when none runs. */
async function findDaemon() {
    let file = gatewayFile();
    if (file && (await healthy(file))) return file;
    if (!SETTINGS.binary) throw new Error(`no copilot-bridge daemon runs for ${HOME}`);
    await run(SETTINGS.binary, ["--home", HOME, "daemon", "start"]);
    file = gatewayFile();
    if (file && (await healthy(file))) return file;
    throw new Error(`the copilot-bridge daemon for ${HOME} did not start`);
}

let daemon = null;

async function rpc(method, params, patienceMs = PATIENCE_MS) {
    daemon = daemon || (await findDaemon());
    const response = await fetch(`http://${daemon.host || "127.0.0.1"}:${daemon.port}/rpc`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${daemon.token}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        signal: AbortSignal.timeout(patienceMs),
    });
    const answer = await response.json();
    if (answer.error) {
        const error = new Error(answer.error.message);
        error.data = answer.error.data;
        throw error;
    }
    return answer.result;
}

const existing = process.env.COPILOT_BRIDGE_SESSION || null;
// `copilot-bridge launch` stages our hooks too: they decide the CLI's tool
// calls and report its events, and this extension only brings the
// providers' tools.
const hooksDecide = process.env.COPILOT_BRIDGE_HOOKS_ACTIVE === "1";
let cliSession = null;
let hubSession = existing;
/** The CLI session once joined (where the user is told about approvals). */
let joined = null;

/** Beyond the approval timeout, how long a call waits for the hub's answer. */
const APPROVAL_GRACE_MS = 10000;

/** One hook event of this session, answered by the hub. A tool call the
 * hub puts to a person waits for the answer (`copilot-bridge approvals`,
 * docs/approvals.md); the user is told where to answer. */
async function hook(event, fields = {}) {
    const params = { agent: "copilot-cli", agentSession: cliSession, cwd: process.cwd(), event, ...fields };
    if (existing) params.session = existing;
    if (event === "pre-tool-use") params.defer = true;
    const answer = await rpc("agent.hook", params);
    if (answer.decision !== "pending") return answer;
    const { id, timeoutSecs } = answer.approval;
    await joined?.log(`copilot-bridge: ${fields.tool} waits for approval (${id}): run \`copilot-bridge approvals\``, {
        level: "warning",
    }).catch(() => undefined);
    return rpc("approvals.wait", { id }, timeoutSecs * 1000 + APPROVAL_GRACE_MS);
}

/** The provider tools of the hub session, as the CLI takes tools. */
async function providerTools() {
    if (!hubSession) return [];
    const listed = await rpc("session.tools.list", { session: hubSession });
    return listed
        .filter((tool) => String(tool.owner).startsWith("provider:"))
        .map((tool) => ({
            name: tool.name,
            description: tool.description || "",
            parameters: tool.inputSchema || { type: "object", properties: {} },
            handler: (args) => callProviderTool(tool.name, args),
        }));
}

async function callProviderTool(name, args) {
    try {
        const answer = await rpc("session.tools.call", { session: hubSession, name, arguments: args ?? {} });
        const result = answer.result;
        return typeof result === "string" ? result : JSON.stringify(result);
    } catch (error) {
        return { textResultForLlm: `copilot-bridge: ${error.message}`, resultType: "failure", error: error.message };
    }
}

const offered = new Set();
let offeredKey = "";

async function offerProviderTools(session) {
    const tools = await providerTools();
    const key = JSON.stringify(tools.map((tool) => [tool.name, tool.description, tool.parameters]));
    if (key === offeredKey) return;
    offeredKey = key;
    offered.clear();
    for (const tool of tools) offered.add(tool.name);
    await session.setTools(tools);
}

function contextOf(answer) {
    const context = (answer && answer.context) || [];
    return context.length ? context.join("\n\n") : undefined;
}

let failure = null;
// Known before joining when a hub session is named: its tools are there
// for the first model request.
const initialTools = await providerTools().catch((error) => {
    failure = error;
    return [];
});
for (const tool of initialTools) offered.add(tool.name);
offeredKey = JSON.stringify(initialTools.map((tool) => [tool.name, tool.description, tool.parameters]));

/** The system prompt's sections providers may transform (not safety or identity). */
const SECTIONS = [
    "preamble", "tone", "tool_efficiency", "environment_context", "code_change_rules",
    "guidelines", "tool_instructions", "custom_instructions", "runtime_instructions", "last_instructions",
];

/** A section's text after the hub session's provider transforms. */
async function render(section, current) {
    if (!hubSession) return current;
    try {
        const answer = await rpc("session.render", { session: hubSession, section, content: current });
        return typeof answer.content === "string" ? answer.content : current;
    } catch {
        // The prompt's prose is not a decision: without the hub it stays as it was.
        return current;
    }
}

const session = await joinSession({
    tools: initialTools,
    systemMessage: {
        mode: "customize",
        sections: Object.fromEntries(
            SECTIONS.map((section) => [section, { action: (current) => render(section, current) }]),
        ),
    },
    hooks: {
        onUserPromptSubmitted: async (input) => {
            if (hooksDecide) return undefined;
            try {
                const additionalContext = contextOf(await hook("user-prompt-submit", { prompt: input.prompt }));
                return additionalContext ? { additionalContext } : undefined;
            } catch {
                return undefined;
            }
        },
        onPreToolUse: async (input) => {
            // Our own provider tools are decided by the hub when they run.
            if (hooksDecide || offered.has(input.toolName)) return undefined;
            try {
                const answer = await hook("pre-tool-use", { tool: input.toolName, arguments: input.toolArgs ?? {} });
                const additionalContext = contextOf(answer);
                if (answer.decision === "deny" || answer.decision === "ask") {
                    return { permissionDecision: answer.decision, permissionDecisionReason: answer.reason, additionalContext };
                }
                return additionalContext ? { additionalContext } : undefined;
            } catch (error) {
                return {
                    permissionDecision: "deny",
                    permissionDecisionReason: `copilot-bridge could not decide this call: ${error.message}`,
                };
            }
        },
        onPostToolUse: async (input) => {
            if (hooksDecide || offered.has(input.toolName)) return undefined;
            const answer = await hook("post-tool-use", {
                tool: input.toolName,
                arguments: input.toolArgs ?? {},
                output: input.toolResult?.textResultForLlm ?? null,
            }).catch(() => undefined);
            // A secret in a tool's output is replaced before the model sees it.
            if (answer && typeof answer.output === "string" && input.toolResult) {
                return { modifiedResult: { ...input.toolResult, textResultForLlm: answer.output } };
            }
            return undefined;
        },
        onSessionEnd: async () => {
            if (!existing && !hooksDecide && cliSession) await hook("session-end").catch(() => undefined);
            return undefined;
        },
    },
});

cliSession = session.sessionId;
joined = session;
try {
    const joined = await hook("session-start");
    hubSession = joined.session;
    await offerProviderTools(session);
    await session.log(`copilot-bridge: this session is ${hubSession} in the hub`, { ephemeral: true });
} catch (error) {
    failure = failure || error;
}
if (failure) {
    await session.log(`copilot-bridge: ${failure.message}; every tool call will be denied`, { level: "warning" });
}
const refresh = setInterval(() => offerProviderTools(session).catch(() => undefined), REFRESH_MS);
refresh.unref();
