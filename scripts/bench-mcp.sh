#!/usr/bin/env bash
# Compares copilot-bridge's MCP servers with @modelcontextprotocol/server-filesystem
# (npm, pinned below) on the same files: time from spawn to the first
# `tools/list` answer (fresh process each run), and per-call latency of
# `tools/list`, a file read and a directory listing in one session.
#
#   scripts/bench-mcp.sh                      # install the peer (once), build, measure
#   RUNS=50 CALLS=500 scripts/bench-mcp.sh
#
# The client is `mcp-bench` (crates/testkit/src/bin/mcp-bench.rs): a bare
# JSON-RPC client over stdio, the same for every server, so the figures are
# the servers' own. The memory is a generated OpenClaw workspace of NOTES
# notes under .bench-data/ (gitignored). Target: start ≥10× faster.
set -euo pipefail
cd "$(dirname "$0")/.."

FS_VERSION="2026.8.31"
RUNS="${RUNS:-30}"
CALLS="${CALLS:-300}"
NOTES="${NOTES:-1000}"
DATA_DIR="$PWD/.bench-data"
WORKSPACE="$DATA_DIR/openclaw-workspace-$NOTES"
PEER_DIR="$PWD/.peers/bench-node"
BRIDGE_HOME="$DATA_DIR/bridge-home-mcp"

log() { printf '== %s\n' "$*" >&2; }

if [ ! -f "$PEER_DIR/node_modules/@modelcontextprotocol/server-filesystem/package.json" ]; then
  log "installing @modelcontextprotocol/server-filesystem@$FS_VERSION into $PEER_DIR"
  mkdir -p "$PEER_DIR"
  npm install --silent --no-audit --no-fund --prefix "$PEER_DIR" \
    "@modelcontextprotocol/server-filesystem@$FS_VERSION" >/dev/null
fi
FS_ENTRY="$(node -e 'const p=require(process.argv[1]); console.log(require("path").join(process.argv[2], p.bin["mcp-server-filesystem"] || Object.values(p.bin)[0]))' \
  "$PEER_DIR/node_modules/@modelcontextprotocol/server-filesystem/package.json" \
  "$PEER_DIR/node_modules/@modelcontextprotocol/server-filesystem")"

log "building copilot-bridge and mcp-bench (release)"
cargo build --release -q -p copilot-bridge -p bridge-testkit --bin copilot-bridge --bin mcp-bench
BIN="$PWD/target/release/copilot-bridge"
BENCH="$PWD/target/release/mcp-bench"

if [ ! -f "$WORKSPACE/MEMORY.md" ]; then
  log "generating $NOTES notes in $WORKSPACE"
  mkdir -p "$WORKSPACE/memory"
  python3 - "$WORKSPACE" "$NOTES" <<'PY'
import datetime, os, random, sys
root, notes = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
words = "meeting project deploy review bug fix release notes user database migration api test refactor design plan".split()
def note():
    return "# Notes\n\n" + "".join(" ".join(rng.choice(words) for _ in range(10)) + "\n" for _ in range(12))
open(os.path.join(root, "MEMORY.md"), "w").write(note())
open(os.path.join(root, "USER.md"), "w").write("# User\nname: bench\n")
start = datetime.date(2020, 1, 1)
for n in range(notes):
    day = start + datetime.timedelta(days=n)
    open(os.path.join(root, "memory", day.isoformat() + ".md"), "w").write(note())
PY
fi
mkdir -p "$BRIDGE_HOME"

run() {
  local label="$1"; shift
  log "$label"
  local report
  report="$(env -i PATH="$PATH" HOME="$BRIDGE_HOME" COPILOT_BRIDGE_HOME="$BRIDGE_HOME" \
    "$BENCH" --runs "$RUNS" --calls "$CALLS" "$@")"
  printf '%s\t%s\n' "$label" "$report"
}

OUT="$DATA_DIR/bench-mcp.tsv"
: > "$OUT"
run "copilot-bridge mcp memory" \
  --call openclaw_memory_read '{"file": "MEMORY.md"}' \
  --call openclaw_memory_search '{"query": "deploy review"}' \
  -- "$BIN" mcp memory --workspace "$WORKSPACE" >> "$OUT"
run "copilot-bridge mcp code" \
  --call copilot_read_file '{"path": "MEMORY.md"}' \
  --call copilot_list_files '{"directory": "memory"}' \
  -- "$BIN" mcp code --cwd "$WORKSPACE" >> "$OUT"
run "server-filesystem $FS_VERSION" \
  --call read_text_file "{\"path\": \"$WORKSPACE/MEMORY.md\"}" \
  --call list_directory "{\"path\": \"$WORKSPACE/memory\"}" \
  -- node "$FS_ENTRY" "$WORKSPACE" >> "$OUT"

python3 - "$OUT" "$NOTES" <<'PY'
import json, sys
rows = [line.rstrip("\n").split("\t", 1) for line in open(sys.argv[1]) if line.strip()]
print(f"\nspawn -> first tools/list answer ({sys.argv[2]} notes in the workspace)\n")
print("| server | min ms | median ms | p99 ms |")
print("|---|---:|---:|---:|")
reports = {}
for label, raw in rows:
    r = json.loads(raw); reports[label] = r
    s = r["startup_ms"]
    print(f"| {label} | {s['min']} | {s['median']} | {s['p99']} |")
print("\nper call, one session\n")
print("| server | call | median µs | p99 µs |")
print("|---|---|---:|---:|")
for label, r in reports.items():
    for c in r["calls"]:
        print(f"| {label} | {c['name']} | {c['median_us']} | {c['p99_us']} |")
fs = next(r for l, r in reports.items() if l.startswith("server-filesystem"))
for label, r in reports.items():
    if not label.startswith("server-filesystem"):
        ratio = fs["startup_ms"]["median"] / max(r["startup_ms"]["median"], 0.001)
        print(f"\n{label}: starts {ratio:.1f}x faster than server-filesystem (median)")
PY
