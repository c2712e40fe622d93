import WebSocket from "ws";

const TOKEN = process.env.TAP_PROVIDER_TOKEN;
const ws = new WebSocket(process.env.TAP_GATEWAY_URL ?? "ws://localhost:9400");

ws.on("open", () => {
  ws.send(JSON.stringify({ type: "auth", token: TOKEN }));
});

ws.on("message", (raw) => {
  const msg = JSON.parse(raw);

  if (msg.type === "sessions") {
    ws.send(JSON.stringify({
      type: "hello",
      name: "hello-provider",
      protocolVersion: 2,
      session: msg.active[0]?.id ?? "all",
      tools: [{
        name: "say_hello",
        description: "Says hello to someone",
        parameters: {
          type: "object",
          properties: { name: { type: "string" } },
          required: ["name"]
        }
      }]
    }));
  }

  if (msg.type === "tool.call" && msg.tool === "say_hello") {
    ws.send(JSON.stringify({
      type: "tool.result",
      id: msg.id,
      data: `Hello, ${msg.args.name}!`
    }));
  }

  if (msg.type === "tool.cancel") {
    ws.send(JSON.stringify({
      type: "tool.result",
      id: msg.id,
      error: "Cancelled",
      errorCode: "CANCELLED"
    }));
  }

  if (msg.type === "error") {
    console.error(`Gateway error: ${msg.code} — ${msg.message}`);
  }
});
