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
# userfaultfd-sys generates its bindings with bindgen, which needs libclang.
if ! ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so'; then
    echo "setup: installing libclang-dev (for userfaultfd-sys bindings)"
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-dev
    else
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-dev
    fi
fi
echo "setup: fetching crates"
cargo fetch --locked
echo "setup: done"
