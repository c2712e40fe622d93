// The one provider of scripts/bench-gateway.sh: a Node `ws` client speaking
// Provider Interface v2 that declares one tool, `echo`, and answers every
// `tool.call` at once with its arguments. Both gateways under test get a copy
// of this same program, so the provider's cost is the same on both sides.
//
//   node provider.mjs <ws-url> <token> [session-id]
//
// Without a session id it binds to the first session the gateway lists.
// Prints `bound <providerId>` on stdout once the gateway acknowledged it.
import WebSocket from "ws";

const [url, token, wantedSession] = process.argv.slice(2);
if (!url || !token) {
  console.error("usage: provider.mjs <ws-url> <token> [session-id]");
  process.exit(2);
}

const ws = new WebSocket(url, { perMessageDeflate: false });
ws.on("open", () => ws.send(JSON.stringify({ type: "auth", token })));
ws.on("message", (raw) => {
  const msg = JSON.parse(raw);
  switch (msg.type) {
    case "tool.call":
      ws.send(JSON.stringify({ type: "tool.result", id: msg.id, data: msg.args }));
      break;
    case "sessions": {
      const session = wantedSession || msg.active?.[0]?.id;
      if (!session) {
        console.error("the gateway lists no session to bind to");
        process.exit(1);
      }
      ws.send(
        JSON.stringify({
          type: "hello",
          name: "bench",
          protocolVersion: 2,
          session,
          tools: [
            {
              name: "echo",
              description: "Answers with its arguments.",
              parameters: { type: "object", properties: { text: { type: "string" } } },
            },
          ],
        }),
      );
      break;
    }
    case "hello.ack":
      console.log(`bound ${msg.providerId}`);
      break;
    case "error":
      console.error(`gateway error: ${msg.code}: ${msg.message}`);
      if (msg.code === "AUTH_FAILED" || msg.code === "UNSUPPORTED_VERSION") process.exit(1);
      break;
    default:
      break;
  }
});
ws.on("close", () => process.exit(0));
ws.on("error", (err) => {
  console.error(`provider: ${err.message}`);
  process.exit(1);
});
