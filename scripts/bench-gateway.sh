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
# T  (OTEL=1) A again, a second daemon exporting its telemetry (an
#    `execute_tool` span and the tool-call metric per call) to `otlp-sink`
#    (crate bridge-testkit), a collector that only counts spans: A against T
#    is the cost of export on, in the same run.
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
#   OTEL=1            also side T (telemetry exported), measured after A
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
  cargo build --release --quiet -p copilot-bridge -p bridge-loadgen -p bridge-testkit \
    --bin copilot-bridge --bin rpc-load --bin otlp-sink
  BIN="$PWD/target/release"
fi
[ -x "$BIN/copilot-bridge" ] && [ -x "$BIN/rpc-load" ] || die "no copilot-bridge and rpc-load in $BIN"

PIDS=()
cleanup() {
  exec 5>&- 6>&- 7>&- 8>&- 2>/dev/null || true
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

# --- A (and T): the daemon, its provider, its client -----------------------
# start_daemon SIDE FD [VAR=value...]: `serve` in a clean environment with
# VAR=value added, the provider bound to its default session, and an
# rpc-load reading its orders from the file descriptor FD.
start_daemon() {
  local side=$1 fd=$2 home="$RUN/bridge-home-$1" lower daemon_pid provider_pid port token provider_token session
  shift 2
  lower=$(echo "$side" | tr AT at)
  mkdir -p "$home"
  (cd "$RUN/workspace" && exec env -i PATH="$PATH" HOME="$RUN/home" \
    COPILOT_BRIDGE_HOME="$home" ${DAEMON_ENV:-} "$@" "$BIN/copilot-bridge" serve --port 0) \
    >"$RUN/daemon-$lower.log" 2>&1 &
  daemon_pid=$!
  PIDS+=("$daemon_pid")
  wait_for 20 test -s "$home/gateway.json" || die "copilot-bridge serve ($side) did not start: $(cat "$RUN/daemon-$lower.log")"
  read -r port token < <("$NODE" -p 'const g = require(process.argv[1]); `${g.port} ${g.token}`' "$home/gateway.json")
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
  "$NODE" "$WORK/provider.mjs" "ws://127.0.0.1:$port/" "$provider_token" "$session" >"$RUN/provider-$lower.log" 2>&1 &
  provider_pid=$!
  PIDS+=("$provider_pid")
  wait_for 20 has_line "$RUN/provider-$lower.log" '^bound' || die "the provider did not bind to copilot-bridge ($side): $(cat "$RUN/provider-$lower.log")"
  mkfifo "$RUN/$lower.in"
  "$BIN/rpc-load" --url "ws://127.0.0.1:$port/rpc" --token "$token" --session "$session" \
    --cpu-pid "$daemon_pid" --provider-pid "$provider_pid" <"$RUN/$lower.in" >"$RUN/$lower.out" 2>"$RUN/$lower.err" &
  PIDS+=("$!")
  eval "exec $fd>\"\$RUN/\$lower.in\""
  wait_for 20 has_line "$RUN/$lower.out" '^ready' || die "rpc-load did not connect ($side): $(cat "$RUN/$lower.err")"
}
start_daemon A 5
if [ "${OTEL:-0}" = 1 ]; then
  "$BIN/otlp-sink" >"$RUN/otlp-sink.log" 2>&1 &
  PIDS+=("$!")
  wait_for 10 has_line "$RUN/otlp-sink.log" '^listening' || die "otlp-sink did not start: $(cat "$RUN/otlp-sink.log")"
  start_daemon T 8 OTEL_EXPORTER_OTLP_ENDPOINT="http://$(sed -n 's/^listening on //p' "$RUN/otlp-sink.log")" \
    OTEL_BSP_SCHEDULE_DELAY=200
fi
mkfifo "$RUN/b.in" "$RUN/c.in"

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
    || die "side $side gave no result: $(tail -3 "$RUN/$(echo "$side" | tr ABCT abct).err")"
  local result
  result=$(tail -1 "$out")
  echo "{\"side\":\"$side\",\"round\":$4,\"inFlight\":$5,\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"result\":$result}" >>"$RESULTS"
  echo "round $4, $5 in flight, $side: $result" >&2
}
for round in $(seq 1 "$ROUNDS"); do
  for level in $LEVELS; do
    if [ $((round % 2)) -eq 1 ]; then
      measure A 5 "$RUN/a.out" "$round" "$level"
      [ "${OTEL:-0}" != 1 ] || measure T 8 "$RUN/t.out" "$round" "$level"
      measure B 6 "$RUN/b.out" "$round" "$level"
      measure C 7 "$RUN/c.out" "$round" "$level"
    else
      measure C 7 "$RUN/c.out" "$round" "$level"
      measure B 6 "$RUN/b.out" "$round" "$level"
      [ "${OTEL:-0}" != 1 ] || measure T 8 "$RUN/t.out" "$round" "$level"
      measure A 5 "$RUN/a.out" "$round" "$level"
    fi
  done
done

"$NODE" - "$RESULTS" "$tap_version" "$tap_commit" "$ROUNDS" "$RUN/otlp-sink.log" <<'EOF'
const fs = require("node:fs");
const [file, tapVersion, tapCommit, rounds, sinkLog] = process.argv.slice(2);
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
if (rows.some((r) => r.side === "T")) {
  console.log("\nTelemetry: A (export off) against T (the same daemon exporting an execute_tool span and the tool-call metric per call):\n");
  console.log("| in flight | calls/s A / T | p50 µs A / T | daemon CPU µs/call A / T | added by export, µs/call |");
  console.log("|---|---|---|---|---|");
  for (const level of levels) {
    const [ca, ct] = [pick("A", level, "callsPerSec"), pick("T", level, "callsPerSec")];
    const [pa, pt] = [pick("A", level, "p50Us"), pick("T", level, "p50Us")];
    const [ua, ut] = [pick("A", level, "cpuUsPerCall"), pick("T", level, "cpuUsPerCall")];
    console.log(`| ${level} | ${int(ca)} / ${int(ct)} | ${int(pa)} / ${int(pt)} | ${f1(ua)} / ${f1(ut)} | ${(ut - ua >= 0 ? "+" : "") + f1(ut - ua)} |`);
  }
  const counts = fs.existsSync(sinkLog) ? fs.readFileSync(sinkLog, "utf8").split("\n").filter((l) => l.startsWith("spans ")) : [];
  console.log(`\nspans the collector received from T: ${counts.length ? counts[counts.length - 1].split(" ")[1] : 0}`);
}
const errors = rows.reduce((n, r) => n + r.result.errors, 0);
console.log("");
for (const v of verdicts) console.log(v);
if (errors) console.log(`errors: ${errors} failed calls (see ${file})`);
EOF
