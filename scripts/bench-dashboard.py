#!/usr/bin/env python3
"""The dashboard measured in real headless Chromium against `serve`.

    scripts/bench-dashboard.py [--bin PATH] [--asks N] [--events N] [--tabs N]

Uses `.peers/venv` (its `websockets`, installed by
scripts/install-test-deps.sh) for DevTools and Debian's `chromium`.

1. First paint of Overview from the embedded assets: the page's
   first-contentful-paint, and when Overview shows the daemon's data
   (its backends table), both from the navigation's start.
2. An approval round trip in the browser: a client calls `read_file`
   (named by `ask_tools`, so the policy asks) over `/rpc`; measured: from
   the call to the ask shown in the Approvals tab (a MutationObserver in
   the page), and from the click on "Allow once" to the client holding the
   tool's result (p50/p95/p99).
3. The stream's cost on the daemon: its CPU per approval event (an ask
   raised and answered through `/rpc`) with no tab open and with N tabs on
   Approvals, from /proc in one run.

Prints a Markdown table.
"""

import argparse
import asyncio
import importlib.util
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(next((ROOT / ".peers/venv/lib").glob("python3*/site-packages"))))
import websockets  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_approvals", ROOT / "scripts/bench-approvals.py")
bench_approvals = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_approvals)
Daemon, percentile, READ = bench_approvals.Daemon, bench_approvals.percentile, bench_approvals.READ

FLAGS = (
    "--headless=new --no-sandbox --disable-gpu --disable-crash-reporter "
    "--disable-background-networking --disable-component-update --disable-sync --no-first-run "
    "--no-default-browser-check --disable-quic --window-size=1280,800 --remote-debugging-port=0"
).split()


class Chromium:
    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="bench-dashboard-chrome-")
        self.process = subprocess.Popen(
            [shutil.which("chromium"), *FLAGS, f"--user-data-dir={self.dir.name}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        active = pathlib.Path(self.dir.name, "DevToolsActivePort")
        deadline = time.time() + 30
        while not active.exists() or not active.read_text().strip():
            if time.time() > deadline:
                raise SystemExit("chromium wrote no DevToolsActivePort")
            time.sleep(0.05)
        self.port = int(active.read_text().split()[0])

    async def tab(self, url):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?{url}", method="PUT")
        target = json.loads(urllib.request.urlopen(request).read())
        tab = Tab(await websockets.connect(target["webSocketDebuggerUrl"], max_size=None))
        await tab.until("document.readyState === 'complete'")
        return tab

    def stop(self):
        os.killpg(self.process.pid, 9)
        self.process.wait()
        self.dir.cleanup()


class Tab:
    def __init__(self, ws):
        self.ws, self.next = ws, 0

    async def call(self, method, params):
        self.next += 1
        await self.ws.send(json.dumps({"id": self.next, "method": method, "params": params}))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == self.next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    async def eval(self, expression):
        result = await self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def until(self, condition, patience=30):
        deadline = time.time() + patience
        while not await self.eval(f"!!({condition})"):
            if time.time() > deadline:
                raise RuntimeError(f"{condition} did not hold")
            await asyncio.sleep(0.01)


def cpu_seconds(pid):
    """CPU time of every thread of `pid`, in nanosecond resolution
    (schedstat), not the 10 ms ticks of /proc/PID/stat."""
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            pass  # a thread that ended
    return total / 1e9


def login_url(binary, daemon):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": daemon.home.name, "COPILOT_BRIDGE_HOME": daemon.home.name}
    return subprocess.run([binary, "ui", "--no-open"], env=env, check=True, capture_output=True, text=True).stdout.strip()


def stats(values):
    return statistics.median(values), percentile(values, 0.95), percentile(values, 0.99)


async def measure(binary, asks, events, tabs):
    daemon = Daemon(binary, '[permissions]\nask_tools = ["read_file"]\n', timeout_secs=60)
    chromium = Chromium()
    rows = []
    try:
        base = f"http://127.0.0.1:{daemon.port}"
        tab = await chromium.tab(login_url(binary, daemon))
        await tab.until("document.querySelector('h1')?.textContent === 'Overview'")
        paints, loaded, shown = [], [], []
        for _ in range(10):
            await tab.eval("window.previous = true")
            await tab.call("Page.reload", {"ignoreCache": False})
            await tab.until("!window.previous && document.body && (document.querySelector('table') || document.body.innerText.includes('No chat backend'))")
            paint = await tab.eval("performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1")
            if paint >= 0:  # headless Chromium does not always report it
                paints.append(paint)
            loaded.append(await tab.eval("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"))
            shown.append(await tab.eval("performance.now()"))
        if paints:
            rows.append((f"Overview: first contentful paint (ms; {len(paints)} of 10 loads reported one)", *stats(paints)))
        rows.append(("Overview: DOMContentLoaded, the embedded shell and assets (ms)", *stats(loaded)))
        rows.append(("Overview: the daemon's data shown (ms, polled every 10 ms)", *stats(shown)))

        await tab.call("Page.navigate", {"url": f"{base}/ui/approvals"})
        await tab.until("document.querySelector('h1')?.textContent === 'Approvals'")
        agent = daemon.client(daemon.token)
        to_shown, to_result = [], []
        for index in range(asks + 5):
            await tab.eval("window.seen = new Promise((resolve) => { const check = () => { if (document.querySelector('[data-ask] button')) { observer.disconnect(); resolve(true); } }; const observer = new MutationObserver(check); observer.observe(document.body, {childList: true, subtree: true}); check(); }); true")
            done = {}

            def call():
                agent.call("session.tools.call", READ)
                done["at"] = time.perf_counter()

            started = time.perf_counter()
            thread = threading.Thread(target=call)
            thread.start()
            await tab.eval("window.seen")
            seen = time.perf_counter()
            clicked = time.perf_counter()
            await tab.eval("[...document.querySelectorAll('[data-ask] button')].find((b) => b.textContent === 'Allow once').click()")
            thread.join()
            await tab.until("!document.querySelector('[data-ask]')")
            if index >= 5:  # warm-up
                to_shown.append((seen - started) * 1000)
                to_result.append((done["at"] - clicked) * 1000)
        rows.append(("ask raised → shown in the tab (ms)", *stats(to_shown)))
        rows.append(("click on Allow once → the tool's result at the caller (ms)", *stats(to_result)))

        person = daemon.client(daemon.approver_token)

        def raise_and_answer(count):
            for _ in range(count):
                waiting = threading.Thread(target=lambda: daemon.client(daemon.token).call("session.tools.call", READ))
                waiting.start()
                while True:
                    pending = person.call("approvals.list", {})["asks"]
                    if pending:
                        break
                    time.sleep(0.001)
                person.call("approvals.answer", {"id": pending[0]["id"], "decision": "allow"})
                waiting.join()

        await tab.call("Page.navigate", {"url": f"{base}/ui/overview"})
        raise_and_answer(10)
        before = cpu_seconds(daemon.process.pid)
        raise_and_answer(events)
        without = (cpu_seconds(daemon.process.pid) - before) / events * 1e6
        opened = [await chromium.tab(f"{base}/ui/approvals") for _ in range(tabs)]
        for each in opened:
            await each.until("document.querySelector('h1')?.textContent === 'Approvals'")
        raise_and_answer(10)
        before = cpu_seconds(daemon.process.pid)
        raise_and_answer(events)
        with_tabs = (cpu_seconds(daemon.process.pid) - before) / events * 1e6
        reads = await opened[0].eval("performance.getEntriesByType('resource').filter((e) => e.name.includes('/ui/api/rpc')).length")
        print(f"(a tab on Approvals read the queue {reads} times for {events + 10} approvals)")
        print("| daemon CPU per approval event (asked and answered through /rpc) | µs |")
        print("|---|---|")
        print(f"| no tab open | {without:.0f} |")
        print(f"| {tabs} tabs on Approvals (each: its stream, and the list it then reads) | {with_tabs:.0f} |")
        print(f"| so each tab costs per event | {(with_tabs - without) / tabs:.0f} |")
    finally:
        chromium.stop()
        daemon.stop()
    print()
    print("| measure | p50 | p95 | p99 |")
    print("|---|---|---|---|")
    for name, p50, p95, p99 in rows:
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {p99:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=str(ROOT / "target/release/copilot-bridge"))
    parser.add_argument("--asks", type=int, default=40)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--tabs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(measure(os.path.abspath(args.bin), args.asks, args.events, args.tabs))


if __name__ == "__main__":
    main()
