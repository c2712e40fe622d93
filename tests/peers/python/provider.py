import asyncio, json, os, websockets

TOKEN = os.environ["TAP_PROVIDER_TOKEN"]

async def provider():
    async with websockets.connect(os.environ.get("TAP_GATEWAY_URL", "ws://localhost:9400")) as ws:
        await ws.send(json.dumps({"type": "auth", "token": TOKEN}))

        async for raw in ws:
            msg = json.loads(raw)

            if msg["type"] == "sessions":
                await ws.send(json.dumps({
                    "type": "hello",
                    "name": "python-provider",
                    "protocolVersion": 2,
                    "session": msg["active"][0]["id"] if msg["active"] else "all",
                    "tools": [{
                        "name": "compute",
                        "description": "Evaluate a Python expression",
                        "parameters": {
                            "type": "object",
                            "properties": {"expr": {"type": "string"}},
                            "required": ["expr"]
                        }
                    }]
                }))

            if msg["type"] == "tool.call" and msg["tool"] == "compute":
                try:
                    result = eval(msg["args"]["expr"])
                except Exception as e:
                    result = str(e)
                await ws.send(json.dumps({
                    "type": "tool.result",
                    "id": msg["id"],
                    "data": result
                }))

            if msg["type"] == "tool.cancel":
                await ws.send(json.dumps({
                    "type": "tool.result",
                    "id": msg["id"],
                    "error": "Cancelled",
                    "errorCode": "CANCELLED"
                }))

asyncio.run(provider())
