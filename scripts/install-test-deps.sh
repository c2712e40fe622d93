#!/usr/bin/env bash
# Installs the system tools the test suite talks to, and the cross-language
# peers (tests/peers): the Node.js provider's `ws` and a Python venv with
# `websockets`. Idempotent and quiet when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v curl >/dev/null 2>&1 || need+=(curl)
# jemalloc, the binary's allocator, is built from C (crates/cli/Cargo.toml).
command -v make >/dev/null 2>&1 || need+=(make)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v sh >/dev/null 2>&1 || need+=(dash)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v mkfifo >/dev/null 2>&1 || need+=(coreutils)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# The venv module ships separately on Debian and Ubuntu.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
# The VS Code extension's tests drive code-server in headless Chromium;
# code-server's native kerberos module builds against libkrb5's headers.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
# Terminal UIs (`approvals watch` answering inline) are tested in a real
# terminal: tmux.
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# `copilot-bridge completion` is loaded by each shell the tests find
# (crates/cli/tests/cli_install.rs): bash is there already; zsh and fish.
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing: ${need[*]} (install them, or run as root to let this script do it)" >&2
    exit 1
  fi
fi

# Node.js peer: exactly the locked `ws`, reinstalled only when the lock changed.
node_dir=tests/peers/node
if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.installed-package-lock.json"; then
  npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error >/dev/null
  cp "$node_dir/package-lock.json" "$node_dir/node_modules/.installed-package-lock.json"
fi

# Python peer: a private venv (gitignored), refreshed when requirements change.
venv=.peers/venv
requirements=tests/peers/python/requirements.txt
if ! [ -x "$venv/bin/python" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
fi
if ! cmp -s "$requirements" "$venv/.installed-requirements.txt"; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/.installed-requirements.txt"
fi

# The real agents, exactly these versions, each in its own gitignored folder
# and reinstalled only when its pin changes: the Copilot runner's tests start
# the Copilot CLI signed out; the conformance tests (crates/cli/tests/agents)
# run every agent against the daemon.
install_agent() {
  local dir=".peers/$1" package="$2"
  if [ "$(cat "$dir/.installed-version" 2>/dev/null)" != "$package" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "$package" >/dev/null
    echo "$package" > "$dir/.installed-version"
  fi
}
install_agent copilot @github/copilot@1.0.102
install_agent claude @anthropic-ai/claude-code@2.1.328
install_agent codex @openai/codex@0.169.0
# OpenClaw needs Node >= 24.16, newer than Debian's: the npm package `node`
# ships the binary. OpenClaw's install checks the node on PATH.
install_agent node24 node@24.21.0
PATH="$PWD/.peers/node24/node_modules/node/bin:$PATH" install_agent openclaw openclaw@2026.9.6
# VS Code for the extension's tests (crates/testkit/src/vscode.rs): code-server
# (VS Code 1.139.1) whose postinstall refuses any Node but 24 and compiles
# native modules with node-gyp against the headers the `node` package ships
# (no download of them); JOBS=2 keeps the compile within CI's memory.
node24_headers=$(echo "$PWD"/.peers/node24/node_modules/node/node_modules/node-linux-*)
if ! [ -f "$node24_headers/include/node/node.h" ]; then
  echo "no Node 24 headers in $node24_headers (needed to build code-server)" >&2
  exit 1
fi
PATH="$PWD/.peers/node24/node_modules/node/bin:$PATH" npm_config_nodedir="$node24_headers" JOBS=2 \
  install_agent code-server code-server@4.139.1

# cargo-machete: the check that every declared dependency is used
# (scripts/test.sh), exactly this version, built once into .peers/cargo.
machete_version=0.9.2
if [ "$(.peers/cargo/bin/cargo-machete --version 2>/dev/null)" != "$machete_version" ]; then
  cargo install --quiet --locked --root .peers/cargo "cargo-machete@$machete_version"
fi
