"""Drive one MCP server with the official MCP Python SDK (mcp 2.x) and
report what it answered, for the Rust tests of copilot-bridge's servers.

Usage:
    mcp_probe.py stdio -- CMD [ARGS...]      spawn CMD, speak MCP on its stdio
    mcp_probe.py http URL [--token T]        streamable HTTP (bearer token)

Reads a JSON array of steps from stdin and prints one JSON array with one
result per step to stdout:

    {"list": true}
        -> {"tools": [{"name", "description", "inputSchema"}]}
    {"call": NAME, "args": {...}}            (optional "progress": true)
        -> {"isError": bool, "content": [...], "structuredContent": ...}
           (+ "progress": [{"progress", "total", "message"}] when asked)
        or {"error": {"code": int, "message": str}} for a JSON-RPC error
        or {"clientError": str} when the SDK refused to send the call
    {"wait_list_changed": SECONDS}
        -> {"changed": bool}   (a notifications/tools/list_changed arrived,
                                 since the start or the previous wait)
    {"parallel": [STEP, ...]}
        -> [RESULT, ...]       (the steps run concurrently; each starts in
                                 order, 50 ms apart, so queue order is known)

Exits non-zero only on transport failure (cannot spawn, cannot connect,
connection lost); the reason goes to stderr.
"""

import json
import sys

import anyio
import pydantic
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
import mcp_types as types


class Probe:
    def __init__(self) -> None:
        self.list_changed = anyio.Event()

    async def on_message(self, message) -> None:
        if isinstance(message, Exception):
            return
        if isinstance(message, types.ToolListChangedNotification) or (
            getattr(message, "method", None) == "notifications/tools/list_changed"
        ):
            self.list_changed.set()

    async def run_steps(self, session: ClientSession, steps: list) -> list:
        return [await self.run_step(session, step) for step in steps]

    async def run_step(self, session: ClientSession, step: dict):
        if "parallel" in step:
            return await self.run_parallel(session, step["parallel"])
        if step.get("list"):
            listed = await session.list_tools()
            return {
                "tools": [
                    {
                        "name": tool.name,
                        "description": tool.description,
                        "inputSchema": tool.input_schema,
                    }
                    for tool in listed.tools
                ]
            }
        if "call" in step:
            return await self.call(session, step)
        if "wait_list_changed" in step:
            with anyio.move_on_after(float(step["wait_list_changed"])):
                await self.list_changed.wait()
            changed = self.list_changed.is_set()
            self.list_changed = anyio.Event()
            return {"changed": changed}
        return {"error": {"code": -1, "message": f"probe: unknown step {json.dumps(step)}"}}

    async def call(self, session: ClientSession, step: dict) -> dict:
        progress: list = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": value, "total": total, "message": message})

        try:
            result = await session.call_tool(
                step["call"],
                step.get("args"),
                progress_callback=on_progress if step.get("progress") else None,
            )
        except MCPError as err:
            return {"error": {"code": err.code, "message": err.message}}
        except pydantic.ValidationError as err:
            # The SDK refused to send it (e.g. arguments that are not an
            # object): nothing reached the server.
            return {"clientError": str(err)}
        answer = {
            "isError": bool(result.is_error),
            "content": [
                block.model_dump(by_alias=True, mode="json", exclude_none=True)
                for block in result.content
            ],
            "structuredContent": result.structured_content,
        }
        if step.get("progress"):
            answer["progress"] = progress
        return answer

    async def run_parallel(self, session: ClientSession, steps: list) -> list:
        results: list = [None] * len(steps)

        async def one(index: int, step: dict) -> None:
            results[index] = await self.run_step(session, step)

        async with anyio.create_task_group() as group:
            for index, step in enumerate(steps):
                group.start_soon(one, index, step)
                # Start in order so the server queues them in this order.
                await anyio.sleep(0.05)
        return results


async def drive(transport, steps: list) -> list:
    probe = Probe()
    async with transport as (read, write):
        async with ClientSession(read, write, message_handler=probe.on_message) as session:
            await session.initialize()
            return await probe.run_steps(session, steps)


def usage() -> None:
    print(
        "usage: mcp_probe.py stdio -- CMD [ARGS...] | mcp_probe.py http URL [--token T]",
        file=sys.stderr,
    )
    sys.exit(2)


async def main() -> int:
    argv = sys.argv[1:]
    if not argv:
        usage()
    steps = json.load(sys.stdin)
    if argv[0] == "stdio":
        rest = argv[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        if not rest:
            usage()
        import os

        # The server gets the probe's whole environment (the tests set it).
        params = StdioServerParameters(command=rest[0], args=rest[1:], env=dict(os.environ))
        results = await drive(stdio_client(params), steps)
    elif argv[0] == "http":
        if len(argv) < 2:
            usage()
        url = argv[1]
        headers = {}
        if len(argv) >= 4 and argv[2] == "--token":
            headers["Authorization"] = f"Bearer {argv[3]}"
        client = create_mcp_http_client(headers=headers)
        async with client:
            results = await drive(streamable_http_client(url, http_client=client), steps)
    else:
        usage()
        return 2
    json.dump(results, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(anyio.run(main))
    except SystemExit:
        raise
    except BaseException as err:  # transport failure: report and fail
        print(f"mcp_probe: transport failure: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)
