"""Watch one MCP server's tool list with the official MCP Python SDK
(mcp 2.x), interactively, for the Rust tests of copilot-bridge's `session`
server: the test changes the tools while this stays connected.

Usage:
    mcp_watch.py stdio -- CMD [ARGS...]      spawn CMD, speak MCP on its stdio
    mcp_watch.py http URL [--token T]        streamable HTTP (bearer token)

Connects, lists the tools and prints one JSON line
    {"ready": true, "tools": [NAME, ...]}
then reads one command per line from stdin and answers each with one line:
    list          -> {"tools": [NAME, ...]}
    wait SECONDS  -> {"changed": bool}  (a notifications/tools/list_changed
                     arrived since the ready line or the previous wait)
It exits when stdin closes; non-zero on transport failure (reason on stderr).
"""

import json
import os
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
import mcp_types as types


def say(value) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


async def watch(transport) -> None:
    changed = anyio.Event()

    async def on_message(message) -> None:
        nonlocal changed
        if isinstance(message, types.ToolListChangedNotification) or (
            getattr(message, "method", None) == "notifications/tools/list_changed"
        ):
            changed.set()

    async def names(session: ClientSession) -> list:
        listed = await session.list_tools()
        return sorted(tool.name for tool in listed.tools)

    async with transport as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            say({"ready": True, "tools": await names(session)})
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                if not line:
                    return
                command = line.split()
                if command == ["list"]:
                    say({"tools": await names(session)})
                elif len(command) == 2 and command[0] == "wait":
                    with anyio.move_on_after(float(command[1])):
                        await changed.wait()
                    say({"changed": changed.is_set()})
                    changed = anyio.Event()
                else:
                    say({"error": f"unknown command {line.strip()!r}"})


async def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["stdio"]:
        rest = argv[1:]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        params = StdioServerParameters(command=rest[0], args=rest[1:], env=dict(os.environ))
        await watch(stdio_client(params))
    elif argv[:1] == ["http"] and len(argv) >= 2:
        headers = {}
        if len(argv) >= 4 and argv[2] == "--token":
            headers["Authorization"] = f"Bearer {argv[3]}"
        async with create_mcp_http_client(headers=headers) as client:
            await watch(streamable_http_client(argv[1], http_client=client))
    else:
        print("usage: mcp_watch.py stdio -- CMD [ARGS...] | mcp_watch.py http URL [--token T]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(anyio.run(main))
    except SystemExit:
        raise
    except BaseException as err:
        print(f"mcp_watch: transport failure: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)
