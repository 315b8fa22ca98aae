#!/usr/bin/env bash
# Installs what uzswap needs on a fresh machine; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install a Rust toolchain (rustup) first" >&2
    exit 1
fi
if command -v rustup >/dev/null 2>&1; then
    for component in rustfmt clippy; do
        if ! rustup component list --installed | grep -q "^${component}"; then
            echo "setup: installing ${component}"
            rustup component add "${component}"
        fi
    done
fi
echo "setup: fetching crates"
cargo fetch --locked
echo "setup: done"
