// copilot-bridge inside OpenClaw (index.js): the plugin's settings, and the
// daemon its tools talk to: found through <home>/gateway.json and checked
// with GET /healthz, or started with `<binary> --home <home> daemon start`
// (one start at a time per home). The daemon's token is read here and
// never logged.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export const PLUGIN_ID = "copilot-bridge";
/** How long the daemon has to answer /healthz. */
const HEALTH_MS = 2000;
/** How long `copilot-bridge daemon start` may take. */
const START_MS = 30000;

/** An error whose text is meant for the agent as it is. */
export class BridgeError extends Error {}

export function expandHome(path) {
    if (typeof path !== "string" || path.trim() === "") return undefined;
    const trimmed = path.trim();
    if (trimmed === "~") return homedir();
    if (trimmed.startsWith("~/")) return join(homedir(), trimmed.slice(2));
    return trimmed;
}

export function readSettings(pluginConfig) {
    const config = pluginConfig && typeof pluginConfig === "object" ? pluginConfig : {};
    const home =
        expandHome(config.home) ||
        expandHome(process.env.COPILOT_BRIDGE_HOME) ||
        join(homedir(), ".copilot-bridge");
    const binary = expandHome(config.binary) || expandHome(process.env.COPILOT_BRIDGE_BINARY) || "copilot-bridge";
    const timeoutSeconds =
        Number.isInteger(config.timeoutSeconds) && config.timeoutSeconds > 0 ? config.timeoutSeconds : undefined;
    return { home: resolve(home), binary, timeoutSeconds };
}

export function gatewayFile(home) {
    try {
        const file = JSON.parse(readFileSync(join(home, "gateway.json"), "utf8"));
        return file && typeof file === "object" && file.port && file.token ? file : null;
    } catch {
        return null;
    }
}

export function baseUrl(file) {
    const host = file.host && file.host !== "0.0.0.0" ? file.host : "127.0.0.1";
    return `http://${host.includes(":") ? `[${host}]` : host}:${file.port}`;
}

async function healthy(file) {
    try {
        const response = await fetch(`${baseUrl(file)}/healthz`, { signal: AbortSignal.timeout(HEALTH_MS) });
        const health = await response.json();
        return health.service === "copilot-bridge" && health.pid === file.pid;
    } catch {
        return false;
    }
}

/** Runs `program args`, resolving when it exits with 0. */
function run(program, args) {
    return new Promise((resolvePromise, reject) => {
        let child;
        try {
            child = spawn(program, args, { stdio: ["ignore", "ignore", "pipe"] });
        } catch (error) {
            reject(error);
            return;
        }
        let stderr = "";
        child.stderr.on("data", (chunk) => {
            if (stderr.length < 2000) stderr += chunk;
        });
        const timer = setTimeout(() => child.kill("SIGTERM"), START_MS);
        child.on("error", (error) => {
            clearTimeout(timer);
            reject(error);
        });
        child.on("exit", (code, signal) => {
            clearTimeout(timer);
            if (code === 0) resolvePromise();
            else {
                const how = signal ? `was stopped by ${signal}` : `exited with ${code}`;
                const tail = stderr.trim() ? `: ${stderr.trim().split("\n").slice(-3).join(" ")}` : "";
                reject(new Error(`\`${program} ${args.join(" ")}\` ${how}${tail}`));
            }
        });
    });
}

/** One start at a time per home, shared by concurrent calls. */
const starting = new Map();

/** The running daemon's gateway.json, starting the daemon when none runs. */
export async function findDaemon(settings) {
    const file = gatewayFile(settings.home);
    if (file && (await healthy(file))) return file;
    let start = starting.get(settings.home);
    if (!start) {
        start = startDaemon(settings).finally(() => starting.delete(settings.home));
        starting.set(settings.home, start);
    }
    return start;
}

async function startDaemon(settings) {
    try {
        await run(settings.binary, ["--home", settings.home, "daemon", "start"]);
    } catch (error) {
        const why = error && error.code === "ENOENT" ? `${settings.binary} was not found` : error.message;
        throw new BridgeError(
            `copilot-bridge's daemon for ${settings.home} is not running and could not be started (${why}). ` +
                `Start it with \`copilot-bridge daemon start\`, or set the plugin's \`binary\` ` +
                `(plugins.entries.${PLUGIN_ID}.config.binary) or COPILOT_BRIDGE_BINARY.`,
        );
    }
    const file = gatewayFile(settings.home);
    if (file && (await healthy(file))) return file;
    throw new BridgeError(`copilot-bridge's daemon for ${settings.home} was started but does not answer.`);
}
