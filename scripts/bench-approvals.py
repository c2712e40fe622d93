#!/usr/bin/env python3
"""The approval queue's cost, measured from outside against `serve`.

    scripts/bench-approvals.py [--bin PATH] [--base-bin PATH] [--calls N] [--asks N]

1. An asked call: a client calls `read_file` (named by `ask_tools`, so the
   policy asks) over `/rpc`; a second client, holding the approver token,
   long-polls `approvals.watch`, and as soon as the ask is there answers it
   with `approvals.answer`. Measured: from sending the answer to the first
   client holding the tool's result (p50/p95/p99), and the answer's own
   round trip beside it.
2. A call nobody is asked about: `read_file` on a daemon with the default
   policy, one call after the other on one keep-alive connection, with this
   build and (with --base-bin) a build from before the queue, side by side
   in one run.

Only Python's standard library; the daemons run with a private state
directory and workspace, on port 0. Prints a Markdown table.
"""

import argparse
import http.client
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


class Daemon:
    """`serve --port 0` in a private home and workspace."""

    def __init__(self, binary, config_toml="", timeout_secs=30):
        self.home = tempfile.TemporaryDirectory(prefix="bench-approvals-home-")
        self.workspace = tempfile.TemporaryDirectory(prefix="bench-approvals-ws-")
        pathlib.Path(self.workspace.name, "notes.txt").write_text("hello\n" * 20)
        pathlib.Path(self.home.name, "config.toml").write_text(config_toml)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": self.home.name,
            "COPILOT_BRIDGE_HOME": self.home.name,
            "COPILOT_BRIDGE_NO_GH": "1",
            "OLLAMA_HOST": "http://127.0.0.1:9",
            "COPILOT_BRIDGE_APPROVAL_TIMEOUT_SECS": str(timeout_secs),
        }
        self.log = open(pathlib.Path(self.home.name, "serve.log"), "wb")
        self.process = subprocess.Popen(
            [binary, "serve", "--port", "0"],
            cwd=self.workspace.name,
            env=env,
            stdout=self.log,
            stderr=self.log,
        )
        gateway = pathlib.Path(self.home.name, "gateway.json")
        deadline = time.time() + 30
        while True:
            try:
                file = json.loads(gateway.read_text())
                if file.get("pid") == self.process.pid:
                    break
            except (OSError, ValueError):
                pass
            if time.time() > deadline or self.process.poll() is not None:
                raise SystemExit(f"serve did not start: {binary}")
            time.sleep(0.02)
        self.port = file["port"]
        self.token = file["token"]
        approver = pathlib.Path(self.home.name, "approver-token")
        self.approver_token = approver.read_text().strip() if approver.exists() else None

    def client(self, token):
        return Rpc(self.port, token)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()
        self.home.cleanup()
        self.workspace.cleanup()


class Rpc:
    """JSON-RPC over one keep-alive HTTP connection."""

    def __init__(self, port, token):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method, params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        self.connection.request("POST", "/rpc", body, self.headers)
        answer = json.loads(self.connection.getresponse().read())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]


READ = {"session": "default", "name": "read_file", "arguments": {"path": "notes.txt"}}


def unasked(binary, calls):
    daemon = Daemon(binary)
    try:
        client = daemon.client(daemon.token)
        for _ in range(200):
            client.call("session.tools.call", READ)
        latencies = []
        for _ in range(calls):
            started = time.perf_counter()
            client.call("session.tools.call", READ)
            latencies.append((time.perf_counter() - started) * 1e6)
        return latencies
    finally:
        daemon.stop()


def asked(binary, asks):
    daemon = Daemon(binary, '[permissions]\nask_tools = ["read_file"]\n')
    try:
        agent = daemon.client(daemon.token)
        person = daemon.client(daemon.approver_token)
        since = person.call("approvals.watch", {})["next"]
        to_result, answer_trip = [], []
        for index in range(asks + 20):
            done = {}

            def call():
                agent.call("session.tools.call", READ)
                done["at"] = time.perf_counter()

            caller = threading.Thread(target=call)
            caller.start()
            ask = None
            while ask is None:
                watched = person.call("approvals.watch", {"since": since, "waitMs": 5000})
                since = watched["next"]
                ask = next((e for e in watched["events"] if e["type"] == "requested"), None)
            sent = time.perf_counter()
            person.call("approvals.answer", {"id": ask["id"], "decision": "allow"})
            answered = time.perf_counter()
            caller.join()
            if index >= 20:  # warm-up
                to_result.append((done["at"] - sent) * 1e6)
                answer_trip.append((answered - sent) * 1e6)
        return to_result, answer_trip
    finally:
        daemon.stop()


def row(name, values):
    return (
        f"| {name} | {len(values)} | {statistics.median(values):,.0f} | "
        f"{percentile(values, 0.95):,.0f} | {percentile(values, 0.99):,.0f} |"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=str(ROOT / "target/release/copilot-bridge"))
    parser.add_argument("--base-bin", help="a build from before the approval queue")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--asks", type=int, default=500)
    args = parser.parse_args()
    print("| measured | n | p50 µs | p95 µs | p99 µs |")
    print("|---|---|---|---|---|")
    to_result, answer_trip = asked(args.bin, args.asks)
    print(row("asked: answer sent → the tool's result at the caller", to_result))
    print(row("asked: the answer's own round trip (approvals.answer)", answer_trip))
    sides = [("this build", args.bin)] + ([("base build", args.base_bin)] if args.base_bin else [])
    # Alternated, twice each, so drift on a shared machine hits both.
    runs = {name: [] for name, _ in sides}
    for _ in range(2):
        for name, binary in sides:
            runs[name] += unasked(binary, args.calls // 2)
        sides.reverse()
    for name, values in runs.items():
        print(row(f"not asked: read_file round trip, {name}", values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
