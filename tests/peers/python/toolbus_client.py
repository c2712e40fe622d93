"""A tool bus client as docs/toolbus.md shows it: JSON-RPC 2.0 over the
daemon's /rpc WebSocket with the `websockets` package.

Reads BRIDGE_RPC_URL (ws://127.0.0.1:PORT/rpc) and BRIDGE_TOKEN, searches,
reads, tries a write that the default read-only mode refuses, and prints one
JSON object summarising what it saw (crates/server/tests/toolbus.rs checks it).
"""

import asyncio
import itertools
import json
import os

import websockets

_ids = itertools.count(1)


async def call(ws, method, **params):
    request_id = next(_ids)
    await ws.send(json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
    # Answers on one connection may come out of order: match them by id.
    while True:
        answer = json.loads(await ws.recv())
        if answer.get("id") == request_id:
            return answer


async def main():
    url = os.environ["BRIDGE_RPC_URL"]
    headers = {"Authorization": "Bearer " + os.environ["BRIDGE_TOKEN"]}
    async with websockets.connect(url, additional_headers=headers) as ws:
        found = await call(ws, "mcp.search.code",
                           query="class PaymentClient", glob="src/**/*.ts", maxResults=20)
        hits = found["result"]["hits"]
        read = await call(ws, "mcp.fs.read", path=hits[0]["file"])
        patch = await call(ws, "mcp.edit.applyPatch", unifiedDiff=(
            "--- a/src/payment/client.ts\n+++ b/src/payment/client.ts\n"
            "@@ -1 +1 @@\n-export class PaymentClient {\n+export class Client {\n"))
        print(json.dumps({
            "hits": hits,
            "sha256": read["result"]["sha256"],
            "deniedCode": patch["error"]["code"],
            "deniedReason": patch["error"]["message"],
        }))


asyncio.run(main())
