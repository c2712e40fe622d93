#!/usr/bin/env bash
# Installs the system tools the test suite talks to. Idempotent and quiet when
# everything is already there.
set -euo pipefail

need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v sh >/dev/null 2>&1 || need+=(dash)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v mkfifo >/dev/null 2>&1 || need+=(coreutils)

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}"
  else
    echo "missing: ${need[*]} (install them, or run as root to let this script do it)" >&2
    exit 1
  fi
fi
