// A stand-in for the Copilot CLI's `@github/copilot-sdk/extension`: records
// the extension's configuration and tools (see ../driver.mjs).
export async function joinSession(config) {
    const session = {
        sessionId: "fake-cli-session",
        async setTools(tools) {
            console.log(JSON.stringify({ tools: tools.map((tool) => tool.name) }));
        },
        async log() {},
    };
    globalThis.__copilotBridgeJoined = { config, session };
    console.log(JSON.stringify({ tools: (config.tools ?? []).map((tool) => tool.name) }));
    return session;
}
