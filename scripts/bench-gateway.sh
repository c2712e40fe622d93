#!/usr/bin/env bash
# A provider tool call through copilot-bridge against copilot-tap-extension's
# provider gateway, side by side in one run, with one provider program.
#
#   scripts/bench-gateway.sh /path/to/copilot-tap-extension
#   ROUNDS=1 DURATION=3 LEVELS="10" scripts/bench-gateway.sh ../copilot-tap-extension
#
# The argument is a checkout of github.com/amitse/copilot-tap-extension (any
# directory holding its src/provider/*.mjs). Its code is never part of this
# repository: the files are copied, unmodified, into target/bench-gateway/tap/.
#
# A  copilot-bridge, release build, as a user runs it (`serve`, audit log on,
#    default settings), driven from outside: `rpc-load` (crate bridge-loadgen)
#    calls `session.tools.call` on one persistent `/rpc` WebSocket.
# B  copilot-tap-extension's gateway, called in-process the way the Copilot
#    SDK calls an extension's tool (scripts/bench-gateway/tap-caller.mjs).
# C  the same gateway with its caller in another process, like A's: a second
#    `rpc-load` calls a JSON-RPC WebSocket front that tap-caller.mjs serves in
#    tap's process (one more hop than B, as many processes as A).
# Both gateways serve the same provider program (scripts/bench-gateway/
# provider.mjs, Node + `ws`), which answers every `tool.call` at once. Each
# round runs every level on A, B and C back to back (A, B, C, then C, B, A
# in the next round); the tables show the median over the rounds.
#
# Knobs (environment):
#   ROUNDS=3          rounds
#   LEVELS="1 10 100" calls in flight
#   DURATION=5        measured seconds per run
#   WARMUP=1          seconds of the same load before each measured run
#   BIN_DIR=dir       take copilot-bridge and rpc-load from dir (e.g. a build
#                     of another commit) instead of building them
#   DAEMON_ENV="NAME=value ..."  extra environment of the daemon, e.g.
#                     TOKIO_WORKER_THREADS=2 (default: half the CPUs, min 1)
#
# Columns: calls/s; p50 and p99 latency of a call as its caller sees it (µs);
# gateway CPU per call: user + system time of the daemon's process (A) or of
# the Node process holding tap's gateway and its caller (B) over the measured
# window, divided by the calls answered in it. A second table adds every
# process of a side: A's daemon + provider + caller (rpc-load), B's gateway
# with its caller + provider; on a machine the processes keep busy, calls/s
# follow that total.
#
# Output: the table and the verdicts on stdout; the raw JSON lines in
# target/bench-gateway/results.jsonl. Needs Node >= 22 (the project's
# .peers/node24 when scripts/install-test-deps.sh installed it) and npm, which
# installs the pinned `ws` into target/bench-gateway/node_modules once.
# Tap's gateway listens on its fixed port, 9400: it must be free.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "bench-gateway: $*" >&2; exit 1; }

TAP="${1:-}"
[ -n "$TAP" ] || die "usage: scripts/bench-gateway.sh <copilot-tap-extension checkout>"
[ -f "$TAP/src/provider/gateway.mjs" ] || die "$TAP has no src/provider/gateway.mjs (not a copilot-tap-extension checkout)"
ROUNDS="${ROUNDS:-3}"
LEVELS="${LEVELS:-1 10 100}"
DURATION="${DURATION:-5}"
WARMUP="${WARMUP:-1}"
WS_VERSION=8.20.0 # what copilot-tap-extension's package-lock.json pins

NODE=node
if [ -x .peers/node24/node_modules/node/bin/node ]; then
  NODE="$PWD/.peers/node24/node_modules/node/bin/node"
fi
node_major=$("$NODE" -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 22 ] || die "Node >= 22 needed, $NODE is $("$NODE" --version)"

WORK="$PWD/target/bench-gateway"
RUN="$WORK/run"
mkdir -p "$WORK"
if [ "$("$NODE" -p "try { require('$WORK/node_modules/ws/package.json').version } catch { '' }")" != "$WS_VERSION" ]; then
  echo "installing ws@$WS_VERSION into $WORK/node_modules" >&2
  npm install --prefix "$WORK" --no-save --no-audit --no-fund --loglevel=error "ws@$WS_VERSION" >&2
fi
rm -rf "$WORK/tap" "$RUN"
mkdir -p "$WORK/tap/src" "$RUN/home" "$RUN/bridge-home" "$RUN/workspace"
cp -R "$TAP/src/provider" "$WORK/tap/src/"
# The programs run from the work folder, so `import "ws"` finds its node_modules.
cp scripts/bench-gateway/*.mjs "$WORK/"
tap_version=$("$NODE" -p "try { require('$TAP/package.json').version } catch { '?' }")
tap_commit=$(git -C "$TAP" rev-parse --short HEAD 2>/dev/null || echo "?")

if [ -n "${BIN_DIR:-}" ]; then
  BIN=$(cd "$BIN_DIR" && pwd)
else
  echo "building (release): copilot-bridge, rpc-load" >&2
  cargo build --release --quiet -p copilot-bridge -p bridge-loadgen --bin copilot-bridge --bin rpc-load
  BIN="$PWD/target/release"
fi
[ -x "$BIN/copilot-bridge" ] && [ -x "$BIN/rpc-load" ] || die "no copilot-bridge and rpc-load in $BIN"

PIDS=()
cleanup() {
  exec 5>&- 6>&- 7>&- 2>/dev/null || true
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

wait_for() { # seconds, command...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
lines_in() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
has_line() { grep -q "$2" "$1" 2>/dev/null; }
has_more_lines() { [ "$(lines_in "$1")" -gt "$2" ]; }

# --- A: the daemon, its provider, its client ------------------------------
(cd "$RUN/workspace" && exec env -i PATH="$PATH" HOME="$RUN/home" \
  COPILOT_BRIDGE_HOME="$RUN/bridge-home" ${DAEMON_ENV:-} "$BIN/copilot-bridge" serve --port 0) \
  >"$RUN/daemon.log" 2>&1 &
DAEMON_PID=$!
PIDS+=("$DAEMON_PID")
wait_for 20 test -s "$RUN/bridge-home/gateway.json" || die "copilot-bridge serve did not start: $(cat "$RUN/daemon.log")"
read -r port token < <("$NODE" -p 'const g = require(process.argv[1]); `${g.port} ${g.token}`' "$RUN/bridge-home/gateway.json")
read -r provider_token session < <("$NODE" - "$port" "$token" <<'EOF'
const [port, token] = process.argv.slice(2);
const answer = await fetch(`http://127.0.0.1:${port}/rpc`, {
  method: "POST",
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "gateway.providerToken" }),
}).then((r) => r.json());
if (answer.error) { console.error(JSON.stringify(answer.error)); process.exit(1); }
console.log(`${answer.result.token} ${answer.result.session}`);
EOF
)
"$NODE" "$WORK/provider.mjs" "ws://127.0.0.1:$port/" "$provider_token" "$session" >"$RUN/provider-a.log" 2>&1 &
PROVIDER_PID=$!
PIDS+=("$PROVIDER_PID")
wait_for 20 has_line "$RUN/provider-a.log" '^bound' || die "the provider did not bind to copilot-bridge: $(cat "$RUN/provider-a.log")"

mkfifo "$RUN/a.in" "$RUN/b.in" "$RUN/c.in"
"$BIN/rpc-load" --url "ws://127.0.0.1:$port/rpc" --token "$token" --session "$session" \
  --cpu-pid "$DAEMON_PID" --provider-pid "$PROVIDER_PID" <"$RUN/a.in" >"$RUN/a.out" 2>"$RUN/a.err" &
PIDS+=("$!")
exec 5>"$RUN/a.in"
wait_for 20 has_line "$RUN/a.out" '^ready' || die "rpc-load did not connect: $(cat "$RUN/a.err")"

# --- B: tap's gateway and its in-process caller, with the same provider ----
(cd "$WORK" && exec "$NODE" "$WORK/tap-caller.mjs" "$WORK/tap" "$WORK/provider.mjs") \
  <"$RUN/b.in" >"$RUN/b.out" 2>"$RUN/b.err" &
TAP_PID=$!
PIDS+=("$TAP_PID")
exec 6>"$RUN/b.in"
wait_for 20 has_line "$RUN/b.out" '^ready' || die "tap's gateway did not get the provider's tool: $(cat "$RUN/b.err")"

# --- C: the same gateway, its caller in another process (rpc-load) ----------
read -r _ front_port tap_provider_pid < <(grep -m1 '^rpc ' "$RUN/b.out")
"$BIN/rpc-load" --url "ws://127.0.0.1:$front_port/rpc" --token unused --session bench-session \
  --cpu-pid "$TAP_PID" --provider-pid "$tap_provider_pid" <"$RUN/c.in" >"$RUN/c.out" 2>"$RUN/c.err" &
PIDS+=("$!")
exec 7>"$RUN/c.in"
wait_for 20 has_line "$RUN/c.out" '^ready' || die "rpc-load did not connect to tap's front: $(cat "$RUN/c.err")"

# --- the rounds ---------------------------------------------------------------
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
measure() { # side fd out round level
  local side=$1 fd=$2 out=$3 before
  before=$(lines_in "$out")
  echo "run $5 $WARMUP $DURATION" >&"$fd"
  wait_for $((WARMUP + DURATION + 60)) has_more_lines "$out" "$before" \
    || die "side $side gave no result: $(tail -3 "$RUN/$(echo "$side" | tr ABC abc).err")"
  local result
  result=$(tail -1 "$out")
  echo "{\"side\":\"$side\",\"round\":$4,\"inFlight\":$5,\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"result\":$result}" >>"$RESULTS"
  echo "round $4, $5 in flight, $side: $result" >&2
}
for round in $(seq 1 "$ROUNDS"); do
  for level in $LEVELS; do
    if [ $((round % 2)) -eq 1 ]; then
      measure A 5 "$RUN/a.out" "$round" "$level"
      measure B 6 "$RUN/b.out" "$round" "$level"
      measure C 7 "$RUN/c.out" "$round" "$level"
    else
      measure C 7 "$RUN/c.out" "$round" "$level"
      measure B 6 "$RUN/b.out" "$round" "$level"
      measure A 5 "$RUN/a.out" "$round" "$level"
    fi
  done
done

"$NODE" - "$RESULTS" "$tap_version" "$tap_commit" "$ROUNDS" <<'EOF'
const fs = require("node:fs");
const [file, tapVersion, tapCommit, rounds] = process.argv.slice(2);
const rows = fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
const pick = (side, level, key) => median(rows.filter((r) => r.side === side && r.inFlight === level).map((r) => r.result[key]));
const levels = [...new Set(rows.map((r) => r.inFlight))];
const int = (x) => Math.round(x).toLocaleString("en-US");
console.log(`A: copilot-bridge (release, audit log on) over /rpc · B: copilot-tap-extension ${tapVersion} (${tapCommit}) in-process`);
console.log(`median of ${rounds} round(s); CPU = the gateway's process per call\n`);
console.log("| in flight | calls/s A / B | p50 µs A / B | p99 µs A / B | gateway CPU µs/call A / B |");
console.log("|---|---|---|---|---|");
const verdicts = [];
for (const level of levels) {
  const [ca, cb] = [pick("A", level, "callsPerSec"), pick("B", level, "callsPerSec")];
  const [pa, pb] = [pick("A", level, "p50Us"), pick("B", level, "p50Us")];
  const [qa, qb] = [pick("A", level, "p99Us"), pick("B", level, "p99Us")];
  const [ua, ub] = [pick("A", level, "cpuUsPerCall"), pick("B", level, "cpuUsPerCall")];
  console.log(`| ${level} | ${int(ca)} / ${int(cb)} (${(ca / cb).toFixed(2)}×) | ${int(pa)} / ${int(pb)} | ${int(qa)} / ${int(qb)} | ${ua.toFixed(1)} / ${ub.toFixed(1)} |`);
  if (level === 10) {
    verdicts.push(`10 in flight: A/B calls/s ${(ca / cb).toFixed(2)}× (target >= 1.5×): ${ca >= 1.5 * cb ? "met" : "NOT met"}`);
    verdicts.push(`10 in flight: A's gateway CPU ${ua.toFixed(1)} µs/call (target <= 20): ${ua <= 20 ? "met" : "NOT met"}`);
  }
  if (level === 1) {
    verdicts.push(`1 in flight: p50 A ${int(pa)} µs vs B ${int(pb)} µs (target A <= B): ${pa <= pb ? "met" : "NOT met"}`);
  }
}
console.log("\nCPU of every process of a side, µs a call (median):\n");
console.log("| in flight | A: daemon + provider + caller = total | B: gateway and caller + provider = total |");
console.log("|---|---|---|");
const f1 = (x) => x.toFixed(1);
for (const level of levels) {
  const [ad, ap, ac] = ["cpuUsPerCall", "providerCpuUsPerCall", "callerCpuUsPerCall"].map((k) => pick("A", level, k) ?? 0);
  const [bg, bp] = ["cpuUsPerCall", "providerCpuUsPerCall"].map((k) => pick("B", level, k) ?? 0);
  console.log(`| ${level} | ${f1(ad)} + ${f1(ap)} + ${f1(ac)} = ${f1(ad + ap + ac)} | ${f1(bg)} + ${f1(bp)} = ${f1(bg + bp)} |`);
}
if (rows.some((r) => r.side === "C")) {
  console.log("\nLike for like, the caller in another process on both sides (C: rpc-load → a JSON-RPC WebSocket front in tap's process → its gateway → the provider):\n");
  console.log("| in flight | calls/s A / C | p50 µs A / C | p99 µs A / C | gateway CPU µs/call A / C | every process A / C |");
  console.log("|---|---|---|---|---|---|");
  const total = (side, level) => ["cpuUsPerCall", "providerCpuUsPerCall", "callerCpuUsPerCall"].reduce((n, k) => n + (pick(side, level, k) ?? 0), 0);
  for (const level of levels) {
    const [ca, cc] = [pick("A", level, "callsPerSec"), pick("C", level, "callsPerSec")];
    const [pa, pc] = [pick("A", level, "p50Us"), pick("C", level, "p50Us")];
    const [qa, qc] = [pick("A", level, "p99Us"), pick("C", level, "p99Us")];
    const [ua, uc] = [pick("A", level, "cpuUsPerCall"), pick("C", level, "cpuUsPerCall")];
    console.log(`| ${level} | ${int(ca)} / ${int(cc)} (${(ca / cc).toFixed(2)}×) | ${int(pa)} / ${int(pc)} | ${int(qa)} / ${int(qc)} | ${f1(ua)} / ${f1(uc)} | ${f1(total("A", level))} / ${f1(total("C", level))} |`);
  }
}
const errors = rows.reduce((n, r) => n + r.result.errors, 0);
console.log("");
for (const v of verdicts) console.log(v);
if (errors) console.log(`errors: ${errors} failed calls (see ${file})`);
EOF
