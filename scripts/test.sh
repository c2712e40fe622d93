#!/usr/bin/env bash
# Runs every test of copilot-bridge on a fresh machine: installs what the tests
# need, then formatting, lints and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the tests need beyond the Rust toolchain. Later issues add npm and pip
# peers here; everything is installed by this script, nothing by hand.
scripts/install-test-deps.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked --no-fail-fast
