// Runs crates/agents/assets/copilot-extension/extension.mjs outside the Copilot
// CLI, against a real daemon, with a stand-in for `@github/copilot-sdk/
// extension` (fake-sdk/) that records what the extension gives the CLI.
// Used by crates/cli/tests/cli_copilot_extension.rs.
//
// stdout: JSON lines — {"joined": sessionId} once, then {"tools": [names]}
// whenever the extension sets its tools; for each stdin line
// `{"hook": NAME, "input": {...}}` the hook's answer as {"answer": ...}.

import { createInterface } from "node:readline";

const extension = process.argv[2];
await import(extension);
const joined = globalThis.__copilotBridgeJoined;
console.log(JSON.stringify({ joined: joined.session.sessionId }));

for await (const line of createInterface({ input: process.stdin })) {
    const { hook, input } = JSON.parse(line);
    const answer = await joined.config.hooks[hook](input);
    console.log(JSON.stringify({ answer: answer ?? null }));
}
process.exit(0);
