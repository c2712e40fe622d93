#!/usr/bin/env python3
"""The terminal chat's CPU while idle with a long conversation on screen.

Starts the mock upstream (one 5,000-line answer), `serve` on it, and
`copilot-bridge chat` in a tmux window of its own; sends one prompt, waits
for the answer's last line, then samples the chat process's CPU time
(utime + stime from /proc/PID/stat) over --idle seconds with nothing
happening; then resizes the window 10 times and reports the CPU spent and
the time until the screen shows the conversation again.

    scripts/bench-chat.py [--bin target/debug] [--lines 5000] [--idle 10]

Figures in docs/benchmarks.md, "The terminal chat".
"""

import argparse, json, os, socket, subprocess, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(ROOT / "target/debug"))
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    bindir = Path(args.bin)
    work = Path(tempfile.mkdtemp())
    state, workspace = work / "state", work / "ws"
    state.mkdir()
    workspace.mkdir()
    # Ten answers of a tenth of the lines each, one chunk a line as a model
    # streams them.
    turns = 10
    per_turn = args.lines // turns
    replies = [{"type": "text", "chunks": [f"line {t * per_turn + n}: some words of the answer, long enough to look like prose\n"
                                           for n in range(per_turn)]} for t in range(turns)]
    (work / "script.json").write_text(json.dumps(replies))
    port = free_port()
    procs = []
    try:
        procs.append(subprocess.Popen([bindir / "mock-llm", "--port", str(port), "--script", work / "script.json"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        env = {"PATH": os.environ["PATH"], "HOME": str(state), "COPILOT_BRIDGE_HOME": str(state),
               "COPILOT_BRIDGE_NO_GH": "1", "OLLAMA_HOST": "http://127.0.0.1:9",
               "COPILOT_BYOK_PROVIDER": "openai", "COPILOT_BYOK_BASE_URL": f"http://127.0.0.1:{port}/v1",
               "COPILOT_BYOK_API_KEY": "sk-bench", "COPILOT_BYOK_MODEL": "mock-model"}
        procs.append(subprocess.Popen([bindir / "copilot-bridge", "serve", "--port", "0"], cwd=workspace, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        while not (state / "gateway.json").exists():
            time.sleep(0.05)
        sock = str(work / "tmux.sock")
        tmux = lambda *a: subprocess.run(["tmux", "-S", sock, *a], capture_output=True, text=True).stdout
        command = ["env", "-i", *[f"{k}={v}" for k, v in env.items()], "TERM=xterm-256color",
                   str(bindir / "copilot-bridge"), "chat", "--cwd", str(workspace)]
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "chat", "-x", "120", "-y", "40", *command)

        def wait_for(text, patience=60):
            deadline = time.time() + patience
            while text not in tmux("capture-pane", "-p", "-t", "chat"):
                if time.time() > deadline:
                    screen = tmux("capture-pane", "-p", "-t", "chat")
                    raise SystemExit(f"the chat never showed {text!r}; it shows:\n{screen}")
                time.sleep(0.02)

        wait_for("/help")
        pid = int(tmux("display-message", "-p", "-t", "chat", "#{pane_pid}").strip())
        for t in range(turns):
            tmux("send-keys", "-t", "chat", "-l", f"Write part {t + 1}")
            tmux("send-keys", "-t", "chat", "Enter")
            wait_for(f"line {(t + 1) * per_turn - 1}:")
            wait_for("Enter send")
        time.sleep(1.0)
        before = cpu_seconds(pid)
        time.sleep(args.idle)
        idle = cpu_seconds(pid) - before
        print(f"| idle with {args.lines} lines on screen, {args.idle:.0f} s | {idle * 1000:.0f} ms of CPU "
              f"({idle / args.idle * 100:.2f} % of a core) |")
        before = cpu_seconds(pid)
        took = []
        for n in range(10):
            width = 80 if n % 2 == 0 else 120
            started = time.time()
            tmux("resize-window", "-t", "chat", "-x", str(width), "-y", "40")
            wait_for(f"line {args.lines - 1}:")
            took.append((time.time() - started) * 1000)
        spent = cpu_seconds(pid) - before
        took.sort()
        print(f"| 10 resizes of a {args.lines}-line conversation | {spent * 1000:.0f} ms of CPU in all; "
              f"shown again after p50 {took[5]:.0f} ms, max {took[-1]:.0f} ms |")
        tmux("kill-server")
    finally:
        for proc in procs:
            proc.terminate()


if __name__ == "__main__":
    main()
