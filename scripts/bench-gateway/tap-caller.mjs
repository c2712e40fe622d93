// Side B of scripts/bench-gateway.sh: copilot-tap-extension's provider gateway
// (its src/provider/*.mjs, unmodified, copied from the checkout the script is
// given) called in-process the way the Copilot SDK calls an extension's tool:
// `tool.handler(args, invocation)` on the tools `onToolsChanged` hands over.
//
//   node tap-caller.mjs <dir holding src/provider/gateway.mjs> <provider.mjs>
//
// Starts the gateway (its fixed port, 9400), starts the provider with the
// gateway's token, waits for the `echo` tool, prints `ready`, then reads
// commands on stdin, one per line:
//   run <in-flight> <warm-up seconds> <measured seconds>
// and answers each with one JSON line: {calls, seconds, callsPerSec, p50Us,
// p99Us, cpuUsPerCall, providerCpuUsPerCall, callerCpuUsPerCall, errors}.
// cpuUsPerCall is this process's (gateway and caller), providerCpuUsPerCall
// the provider's.
//
// For side C (the same gateway with its caller in another process, as the
// daemon's callers are) it also serves `session.tools.call` JSON-RPC on a
// WebSocket, answering each with the tool's handler as above; before `ready`
// it prints `rpc <port> <provider pid>` for the script's `rpc-load`.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import path from "node:path";
import { WebSocketServer } from "ws";

const [tapDir, providerProgram] = process.argv.slice(2);
if (!tapDir || !providerProgram) {
  console.error("usage: tap-caller.mjs <tap checkout copy> <provider.mjs>");
  process.exit(2);
}
const { createProviderGateway } = await import(
  pathToFileURL(path.join(tapDir, "src/provider/gateway.mjs")).href
);

const SESSION = { id: "bench-session", label: "bench", cwd: process.cwd() };
const gateway = createProviderGateway({
  sessionPort: null,
  tapTools: () => [],
  getSessionInfo: () => SESSION,
  log: () => {},
});
const echo = new Promise((resolve) => {
  gateway.onToolsChanged((tools) => {
    const tool = tools.find((t) => t.name === "echo");
    if (tool) resolve(tool);
  });
});
gateway.start();

const provider = spawn(
  process.execPath,
  [providerProgram, "ws://127.0.0.1:9400", gateway.getToken(), SESSION.id],
  { stdio: ["ignore", "ignore", "inherit"] },
);
provider.on("exit", (code) => {
  console.error(`tap-caller: the provider exited (${code})`);
  process.exit(1);
});
const tool = await echo;

const front = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
front.on("connection", (socket) => {
  socket.on("message", async (raw) => {
    let request;
    try {
      request = JSON.parse(raw);
    } catch {
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }));
      return;
    }
    const args = request.params?.arguments ?? {};
    const invocation = { sessionId: SESSION.id, toolCallId: `rpc-${request.id}`, toolName: tool.name, arguments: args };
    try {
      const data = await tool.handler(args, invocation);
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, result: { result: data } }));
    } catch (err) {
      socket.send(JSON.stringify({ jsonrpc: "2.0", id: request.id, error: { code: -32000, message: String(err?.message ?? err) } }));
    }
  });
});
await new Promise((resolve) => front.once("listening", resolve));
console.log(`rpc ${front.address().port} ${provider.pid}`);
console.log("ready");

let callCounter = 0;
function callOnce() {
  callCounter += 1;
  const invocation = {
    sessionId: SESSION.id,
    toolCallId: `tc-${callCounter}`,
    toolName: tool.name,
    arguments: { text: "hello" },
  };
  return tool.handler({ text: "hello" }, invocation);
}

// User + system clock ticks (10 ms) of a process so far, from /proc, as
// rpc-load reads the daemon's and its provider's.
function cpuTicks(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

async function run(inFlight, warmupSecs, measuredSecs) {
  let measuring = false;
  let stop = false;
  const samples = [];
  let errors = 0;
  async function worker() {
    while (!stop) {
      const started = process.hrtime.bigint();
      try {
        await callOnce();
        if (measuring) samples.push(Number(process.hrtime.bigint() - started) / 1000);
      } catch {
        if (measuring) errors += 1;
      }
    }
  }
  const workers = Array.from({ length: inFlight }, worker);
  await new Promise((r) => setTimeout(r, warmupSecs * 1000));
  const cpuStart = process.cpuUsage();
  const providerStart = cpuTicks(provider.pid);
  const wallStart = process.hrtime.bigint();
  measuring = true;
  await new Promise((r) => setTimeout(r, measuredSecs * 1000));
  measuring = false;
  const seconds = Number(process.hrtime.bigint() - wallStart) / 1e9;
  const cpu = process.cpuUsage(cpuStart);
  const providerTicks = cpuTicks(provider.pid) - providerStart;
  stop = true;
  await Promise.all(workers);
  samples.sort((a, b) => a - b);
  const at = (q) => (samples.length ? samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] : 0);
  return {
    calls: samples.length,
    seconds,
    callsPerSec: samples.length / seconds,
    p50Us: at(0.5),
    p99Us: at(0.99),
    cpuUsPerCall: samples.length ? (cpu.user + cpu.system) / samples.length : 0,
    providerCpuUsPerCall: samples.length ? (providerTicks * 1e4) / samples.length : 0,
    // The caller runs in the gateway's process: its CPU is in cpuUsPerCall.
    callerCpuUsPerCall: 0,
    errors,
  };
}

const commands = createInterface({ input: process.stdin });
for await (const line of commands) {
  const [verb, ...args] = line.trim().split(/\s+/);
  if (verb === "run") {
    const [inFlight, warmup, measured] = args.map(Number);
    console.log(JSON.stringify(await run(inFlight, warmup, measured)));
  } else if (verb === "quit" || verb === "") {
    break;
  } else {
    console.error(`tap-caller: unknown command ${verb}`);
  }
}
provider.removeAllListeners("exit");
provider.kill();
front.close();
gateway.stop();
process.exit(0);
