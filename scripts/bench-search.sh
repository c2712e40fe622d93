#!/usr/bin/env bash
# Compares `copilot-bridge tool search_code` with ripgrep on a large generated
# tree (20,000 files x 200 lines, ~240 MB), for a rare literal and a regex.
#
#   scripts/bench-search.sh            # generate (once), build, measure
#   ROUNDS=10 RUNS_PER_ROUND=3 FILES=20000 scripts/bench-search.sh
#   NO_HYPERFINE=1 scripts/bench-search.sh   # force the plain timing loop
#
# The tree is deterministic and kept under .bench-data/ (gitignored); delete
# .bench-data/search-tree-* to regenerate it. Target: search_code within 1.3x
# of rg's wall time. Both tools see the same files: no ignore files, no hidden
# files, no binary files in the tree.
set -euo pipefail
cd "$(dirname "$0")/.."

FILES="${FILES:-20000}"
LINES_PER_FILE="${LINES_PER_FILE:-200}"
ROUNDS="${ROUNDS:-6}"
RUNS_PER_ROUND="${RUNS_PER_ROUND:-3}"
DATA_DIR="$PWD/.bench-data"
TREE="$DATA_DIR/search-tree-${FILES}x${LINES_PER_FILE}"
BRIDGE_HOME="$DATA_DIR/bridge-home"
OUT_DIR="$DATA_DIR/out"
BIN="$PWD/target/release/copilot-bridge"

RARE_LITERAL="RARE_MARKER_7f3a"
REGEX='fn handle_(client|token)_[0-9]+\('

log() { printf '== %s\n' "$*" >&2; }

apt_install() {
  local package="$1"
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq "$package" >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$package" >/dev/null 2>&1; }
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get install -y -qq "$package" >/dev/null 2>&1
  else
    return 1
  fi
}

command -v python3 >/dev/null 2>&1 || { echo "python3 is needed to generate the tree and read results" >&2; exit 1; }

# --- the tree -------------------------------------------------------------
if [ ! -f "$TREE/.complete" ]; then
  log "generating $FILES files x $LINES_PER_FILE lines in $TREE"
  rm -rf "$TREE"
  mkdir -p "$TREE"
  python3 - "$TREE" "$FILES" "$LINES_PER_FILE" "$RARE_LITERAL" <<'PY'
import os, sys

root, files, lines_per_file, rare = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
words = ["let", "value", "config", "request", "response", "buffer", "index", "count",
         "result", "handler", "client", "session", "token", "payload", "stream", "error",
         "context", "state", "metrics", "router", "cache", "queue", "worker", "schema"]
state = 0x9E3779B97F4A7C15
mask = (1 << 64) - 1

def rand():
    global state
    state ^= (state << 13) & mask
    state ^= state >> 7
    state ^= (state << 17) & mask
    return state

def word():
    return words[rand() % len(words)]

for n in range(files):
    directory = os.path.join(root, "src", f"pkg_{n // 500:03d}", f"mod_{(n // 50) % 10:02d}")
    os.makedirs(directory, exist_ok=True)
    out = []
    for line in range(lines_per_file):
        if line % 20 == 0:
            out.append(f"fn handle_{word()}_{rand() % 1000}(input: &str, limit: usize) -> Result<usize, Error> {{\n")
        elif n % 97 == 0 and line == 110:
            out.append(f"    // {rare}: tracked here for the search benchmark\n")
        else:
            out.append(f"    let {word()}_{line} = {word()}.{word()}_{word()}({rand() % 100000}, &{word()}[..]);\n")
    with open(os.path.join(directory, f"file_{n:05d}.rs"), "w") as handle:
        handle.write("".join(out))
PY
  touch "$TREE/.complete"
fi
log "tree: $(find "$TREE" -type f -name '*.rs' | wc -l) files, $(du -sh "$TREE" | cut -f1)"

# --- tools ----------------------------------------------------------------
log "building copilot-bridge (release)"
cargo build --release -p copilot-bridge --quiet

if ! command -v rg >/dev/null 2>&1; then
  log "installing ripgrep"
  apt_install ripgrep || { echo "ripgrep is missing and cannot be installed" >&2; exit 1; }
fi
if [ -z "${NO_HYPERFINE:-}" ] && ! command -v hyperfine >/dev/null 2>&1; then
  log "installing hyperfine"
  apt_install hyperfine || log "hyperfine unavailable: falling back to a timing loop"
fi

# An isolated state directory: results are not capped at the default 1,000
# hits, and the audit log does not land in the user's home.
mkdir -p "$BRIDGE_HOME" "$OUT_DIR"
cat >"$BRIDGE_HOME/config.toml" <<'TOML'
[tools]
search_max_results = 1000000
TOML
export COPILOT_BRIDGE_HOME="$BRIDGE_HOME"
rm -rf "$BRIDGE_HOME/audit"

bridge_cmd() { # query regex(true|false)
  local args
  args=$(python3 -c 'import json,sys; print(json.dumps({"query": sys.argv[1], "regex": sys.argv[2] == "true", "maxResults": 1000000}))' "$1" "$2")
  printf '%q tool search_code --compact --cwd %q --args %q' "$BIN" "$TREE" "$args"
}

rg_cmd() { # query regex(true|false)
  if [ "$2" = true ]; then
    printf 'rg -n --no-heading -e %q %q' "$1" "$TREE"
  else
    printf 'rg -n --no-heading -F -e %q %q' "$1" "$TREE"
  fi
}

# Times both commands (output written to a file, so neither can take a
# shortcut for /dev/null) and prints median and minimum wall time, CPU time,
# and the ratios; the verdict uses medians. The runs are split into rounds
# that alternate which command goes first, so a load spike from elsewhere on
# the machine hits both commands alike.
measure() { # name bridge-command rg-command hits
  local name="$1" bridge="$2" rg_line="$3" hits="$4" round
  local -a commands
  rm -f "$OUT_DIR/$name".round-*.json
  for ((round = 0; round < ROUNDS; round++)); do
    if ((round % 2 == 0)); then
      commands=(-n search_code "$bridge > $OUT_DIR/$name-bridge.out" -n rg "$rg_line > $OUT_DIR/$name-rg.out")
    else
      commands=(-n rg "$rg_line > $OUT_DIR/$name-rg.out" -n search_code "$bridge > $OUT_DIR/$name-bridge.out")
    fi
    if [ -z "${NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null 2>&1; then
      hyperfine --style none --warmup 1 --runs "$RUNS_PER_ROUND" \
        --export-json "$OUT_DIR/$name.round-$round.json" "${commands[@]}" >/dev/null
    else
      time_loop "$OUT_DIR/$name.round-$round.json" "${commands[@]}"
    fi
  done
  python3 - "$name" "$hits" "$OUT_DIR/$name".round-*.json <<'PY'
import json, statistics, sys
name, hits, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
times, cpu = {"search_code": [], "rg": []}, {"search_code": [], "rg": []}
for path in paths:
    for result in json.load(open(path))["results"]:
        times[result["command"]] += result["times"]
        cpu[result["command"]].append(result["user"] + result["system"])
median = {k: statistics.median(v) for k, v in times.items()}
low = {k: min(v) for k, v in times.items()}
mean_cpu = {k: statistics.mean(v) for k, v in cpu.items()}
ratio = median["search_code"] / median["rg"]
verdict = "OK" if ratio <= 1.3 else "OVER TARGET"
runs = len(times["rg"])
print(f"{name:8} hits={hits:>6}  median: search_code {median['search_code'] * 1e3:6.1f} ms  rg {median['rg'] * 1e3:6.1f} ms  ratio {ratio:4.2f}x  ({verdict}, target <= 1.30x, {runs} runs each)")
cpu_text = f"cpu {mean_cpu['search_code'] * 1e3:.0f} vs {mean_cpu['rg'] * 1e3:.0f} ms" if mean_cpu["rg"] else "cpu n/a"
print(f"{'':22}min:    search_code {low['search_code'] * 1e3:6.1f} ms  rg {low['rg'] * 1e3:6.1f} ms  ratio {low['search_code'] / low['rg']:4.2f}x;  {cpu_text}")
PY
}

# The fallback without hyperfine: the same JSON shape from a plain loop.
time_loop() { # out-json (-n name command)...
  local out="$1" i
  shift
  local -a names=() commands=()
  while [ $# -gt 0 ]; do names+=("$2"); commands+=("$3"); shift 3; done
  local json='{"results":['
  for i in "${!commands[@]}"; do
    local times=() run start end
    sh -c "${commands[$i]}"
    for ((run = 0; run < RUNS_PER_ROUND; run++)); do
      start=$(date +%s%N)
      sh -c "${commands[$i]}"
      end=$(date +%s%N)
      times+=("$(((end - start) / 1000))e-6")
    done
    local joined
    joined=$(IFS=,; echo "${times[*]}")
    [ "$i" -gt 0 ] && json+=','
    json+="{\"command\":\"${names[$i]}\",\"times\":[$joined],\"user\":0,\"system\":0}"
  done
  printf '%s]}\n' "$json" >"$out"
}

compare() { # name query regex(true|false)
  local name="$1" query="$2" regex="$3"
  local bridge rg_line bridge_hits rg_hits
  bridge=$(bridge_cmd "$query" "$regex")
  rg_line=$(rg_cmd "$query" "$regex")

  bridge_hits=$(sh -c "$bridge" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(len(r["hits"]), "truncated" if r["truncated"] else "")')
  rg_hits=$(sh -c "$rg_line" | wc -l)
  log "$name: search_code $bridge_hits hits, rg $rg_hits lines"
  if [ "${bridge_hits%% *}" != "$rg_hits" ]; then
    echo "hit counts differ for $name" >&2
    exit 1
  fi
  measure "$name" "$bridge" "$rg_line" "$rg_hits"
}

log "$(nproc) cores; $ROUNDS rounds x $RUNS_PER_ROUND runs per command"
compare literal "$RARE_LITERAL" false
compare regex "$REGEX" true
