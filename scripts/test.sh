#!/usr/bin/env bash
# Runs every test of copilot-bridge on a fresh machine: installs what the tests
# need, then formatting, lints and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the tests need beyond the Rust toolchain. Later issues add npm and pip
# peers here; everything is installed by this script, nothing by hand.
scripts/install-test-deps.sh

# A clean build gains nothing from incremental caches, and they more than double
# the target directory (CI's disk ran out with them).
export CARGO_INCREMENTAL=0

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo machete (no unused dependencies)"
.peers/cargo/bin/cargo-machete

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== node --test extensions/vscode/test" && node --test extensions/vscode/test/*.test.js
echo "== cargo test"
# Library, binary and integration tests (the crates have no doc tests).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --locked --no-fail-fast --lib --bins --tests 2>&1 | tee "$log" || status=$?
# One closing line for the whole suite, summed over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) s += $i } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit "$status"
