#!/usr/bin/env python3
"""The daemon's memory under attack.

Starts `BINARY serve` in a fresh state directory, reads the default
session's provider token from its state file (gateway.json), then runs
ROUNDS attack rounds. In each round BOGUS + QUERY WebSocket providers
attack for SECONDS and never read a byte:

  bogus  send 1 MB frames of {"type": "ttt..."} as fast as the socket takes
         them (each used to get a 2 MB error reply);
  query  push ~3.9 MB into their own stream, then send small stream.query
         messages (each answer is the whole stream).

A provider the daemon drops reconnects and goes on. After a round all
attackers disconnect and the daemon is left idle for SETTLE seconds.
The daemon's RSS is sampled every 50 ms from /proc; printed as one JSON
line: RSS at start, and per round the peak during the attack and the RSS
2 s and SETTLE s after the attackers left.

--case picks the attack (default amplify, the one above):

  nonreaders     NONREADERS (49) providers that never read: each sends
                 stream.query for its own ~3.9 MB stream ten times a second,
                 so the daemon queues answers it cannot deliver;
  orchestrations ORCHESTRATIONS (40) orchestrate.start over /rpc, each with
                 a TASK_KB (15360) KiB task and a one-task plan, cancelled
                 at once; RSS is read while they run and after they ended
                 (a task over 256 KiB is refused; TASK_KB=250 measures the
                 largest accepted);
  agent-sessions AGENT_SESSIONS (2000) agent.hook registrations, each a new
                 agent session, as fast as /rpc takes them.

Standard library only (its own minimal WebSocket client). A daemon past
RSS_CAP_MB is killed and the run reported as over the cap, so an unbounded
build cannot take the machine down.

  scripts/bench-memory.py target/release/copilot-bridge --label jemalloc
"""

import argparse
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Provider:
    """A provider on a raw socket: handshake, masked frames out, and just
    enough frame reading for the handshake replies."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            head += chunk
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.split(b"\r\n")[0].decode(errors="replace"))
        self.buffered = head.split(b"\r\n\r\n", 1)[1]

    def send(self, text):
        payload = text.encode() if isinstance(text, str) else text
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        # A zero masking key leaves the payload as it is (RFC 6455 allows
        # any key), which keeps a 1 MB frame cheap to send from Python.
        self.sock.sendall(header + b"\0\0\0\0" + payload)

    def _read(self, count):
        while len(self.buffered) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffered += chunk
        data, self.buffered = self.buffered[:count], self.buffered[count:]
        return data

    def recv_json(self):
        while True:
            first, second = self._read(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", self._read(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", self._read(8))
            payload = self._read(size)
            if first & 0x0F == 0x1:
                return json.loads(payload)
            if first & 0x0F == 0x8:
                raise ConnectionError("closed by the daemon")

    def expect(self, kind):
        message = self.recv_json()
        if message.get("type") != kind:
            raise ConnectionError(f"expected {kind}, got {message}")
        return message

    def register(self, token, name):
        self.send(json.dumps({"type": "auth", "token": token}))
        self.expect("sessions")
        self.send(json.dumps({"type": "hello", "name": name, "protocolVersion": 2}))
        self.expect("hello.ack")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


BOGUS = json.dumps({"type": "t" * (1024 * 1024)})
# What a query provider keeps in its stream: STREAM_EVENTS events of
# EVENT_KB KiB (3 of ~1.3 MB by default; smaller events fit in an answer).
STREAM = {"events": 3, "event": "e" * 1_300_000}


def attack(port, token, name, mode, until, counters):
    """Attacks until `until`, reconnecting whenever the daemon drops it."""
    while time.monotonic() < until:
        provider = None
        try:
            provider = Provider(port)
            provider.register(token, name)
            counters["connections"] += 1
            if mode == "query":
                for _ in range(STREAM["events"]):
                    provider.send(
                        json.dumps({"type": "push", "event": STREAM["event"], "level": "keep"})
                    )
                query = json.dumps(
                    {"type": "stream.query", "queryId": "q", "streams": [name]}
                )
            provider.sock.settimeout(1.0)
            while time.monotonic() < until:
                try:
                    provider.send(BOGUS if mode == "bogus" else query)
                    counters["sent"] += 1
                except socket.timeout:
                    continue
                if mode == "query":
                    # Ten a second per connection: the push budget's rate,
                    # and plenty to fill any queue that is not bounded.
                    time.sleep(0.1)
        except (OSError, ConnectionError):
            counters["dropped"] += 1
            time.sleep(0.2)
        finally:
            if provider:
                provider.close()


def rpc(port, token, method, params):
    """One JSON-RPC call over HTTP POST /rpc."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/rpc",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def attack_orchestrations(port, token, workspace, count, task_kb, counters):
    task = "task " + "x" * (task_kb * 1024 - 5)
    ids = []
    for _ in range(count):
        answer = rpc(
            port, token, "orchestrate.start",
            {"task": task, "cwd": workspace,
             "plan": {"tasks": [{"id": "a", "description": "do it"}]}},
        )
        plan_id = answer.get("result", {}).get("id")
        if plan_id:
            ids.append(plan_id)
            rpc(port, token, "orchestrate.cancel", {"id": plan_id})
            counters["connections"] += 1
        else:
            counters["dropped"] += 1
    for plan_id in ids:
        # A finished plan past the daemon's kept 32 is forgotten: "not found".
        while True:
            answer = rpc(port, token, "orchestrate.watch", {"id": plan_id, "waitMs": 500})
            if "error" in answer or answer["result"]["done"]:
                break
    counters["sent"] = len(ids)


def attack_agent_sessions(port, token, workspace, count, counters):
    for n in range(count):
        answer = rpc(
            port, token, "agent.hook",
            {"agent": "claude-code", "agentSession": f"burst-{n}", "cwd": workspace,
             "event": "session-start"},
        )
        if "result" in answer:
            counters["connections"] += 1
        else:
            counters["dropped"] += 1
    counters["sent"] = count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--label", default="")
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 3)))
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SECONDS_PER_ROUND", 20)))
    parser.add_argument("--settle", type=float, default=float(os.environ.get("SETTLE", 20)))
    parser.add_argument("--bogus", type=int, default=int(os.environ.get("BOGUS", 4)))
    parser.add_argument("--query", type=int, default=int(os.environ.get("QUERY", 4)))
    parser.add_argument("--rss-cap-mb", type=float, default=float(os.environ.get("RSS_CAP_MB", 4096)))
    parser.add_argument("--case", default=os.environ.get("CASE", "amplify"),
                        choices=["amplify", "nonreaders", "orchestrations", "agent-sessions"])
    parser.add_argument("--nonreaders", type=int, default=int(os.environ.get("NONREADERS", 49)))
    parser.add_argument("--orchestrations", type=int, default=int(os.environ.get("ORCHESTRATIONS", 40)))
    parser.add_argument("--task-kb", type=int, default=int(os.environ.get("TASK_KB", 15 * 1024)))
    parser.add_argument("--event-kb", type=int, default=int(os.environ.get("EVENT_KB", 1270)))
    parser.add_argument("--stream-events", type=int, default=int(os.environ.get("STREAM_EVENTS", 3)))
    parser.add_argument("--agent-sessions", type=int, default=int(os.environ.get("AGENT_SESSIONS", 2000)))
    args = parser.parse_args()

    root = tempfile.mkdtemp(prefix="bench-memory-")
    # The workspace beside the state directory: never inside it.
    home = os.path.join(root, "state")
    workspace = os.path.join(root, "workspace")
    os.makedirs(workspace)
    env = dict(os.environ)
    env.update(
        {
            "COPILOT_BRIDGE_HOME": home,
            "COPILOT_BRIDGE_PORT": "0",
            "COPILOT_BRIDGE_NO_GH": "1",
            "COPILOT_LOG_LEVEL": "warn",
            "OLLAMA_HOST": "http://127.0.0.1:9",
        }
    )
    daemon = subprocess.Popen(
        [args.binary, "serve"], cwd=workspace, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    state = os.path.join(home, "gateway.json")
    deadline = time.monotonic() + 30
    while not os.path.exists(state):
        if time.monotonic() > deadline or daemon.poll() is not None:
            sys.exit(f"the daemon did not start (exit {daemon.poll()})")
        time.sleep(0.1)
    time.sleep(0.3)
    with open(state) as f:
        gateway = json.load(f)
    port, token = gateway["port"], gateway["providerToken"]
    rpc_token = gateway["token"]
    STREAM.update(events=args.stream_events, event="e" * (args.event_kb * 1024))
    if args.case == "nonreaders":
        args.bogus, args.query = 0, args.nonreaders

    samples = []
    sampling = threading.Event()
    over_cap = threading.Event()

    def sample():
        while not sampling.is_set():
            rss = rss_mb(daemon.pid)
            samples.append((time.monotonic(), rss))
            if rss > args.rss_cap_mb:
                over_cap.set()
                daemon.kill()
                return
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    time.sleep(1)
    report = {"label": args.label, "case": args.case,
              "start_mb": round(rss_mb(daemon.pid), 1), "rounds": []}
    sampler.start()
    for round_no in range(args.rounds):
        counters = {"connections": 0, "sent": 0, "dropped": 0}
        began = time.monotonic()
        until = began + args.seconds
        if args.case == "orchestrations":
            attackers = [threading.Thread(
                target=attack_orchestrations,
                args=(port, rpc_token, workspace, args.orchestrations, args.task_kb, counters),
                daemon=True,
            )]
        elif args.case == "agent-sessions":
            attackers = [threading.Thread(
                target=attack_agent_sessions,
                args=(port, rpc_token, workspace, args.agent_sessions, counters),
                daemon=True,
            )]
        else:
            attackers = [
                threading.Thread(
                    target=attack,
                    args=(port, token, f"{mode}{i}", mode, until, counters),
                    daemon=True,
                )
                for mode, count in (("bogus", args.bogus), ("query", args.query))
                for i in range(count)
            ]
        for attacker in attackers:
            attacker.start()
        for attacker in attackers:
            # The orchestration and session bursts run to their end.
            attacker.join(args.seconds + 15 if args.case in ("amplify", "nonreaders") else 600)
        left = time.monotonic()
        time.sleep(2)
        after_2s = rss_mb(daemon.pid)
        time.sleep(max(0, args.settle - 2))
        after = rss_mb(daemon.pid)
        peak = max((rss for at, rss in samples if began <= at <= left + 1), default=0)
        report["rounds"].append(
            {
                "peak_mb": round(peak, 1),
                "after_2s_mb": round(after_2s, 1),
                "after_mb": round(after, 1),
                **counters,
            }
        )
        if over_cap.is_set():
            report["over_cap_mb"] = args.rss_cap_mb
            break
    sampling.set()
    report["seconds"], report["settle"] = args.seconds, args.settle
    report["bogus"], report["query"] = args.bogus, args.query
    daemon.terminate()
    try:
        daemon.wait(10)
    except subprocess.TimeoutExpired:
        daemon.kill()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
