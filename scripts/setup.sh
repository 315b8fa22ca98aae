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
# apt packages: libclang-dev (userfaultfd-sys generates its bindings with
# bindgen), a C compiler, python3 and setpriv (the `uzswap run` tests run C
# and Python programs, and one as an unprivileged user), fonts-dejavu-core
# (the benchmarks' PNG charts).
missing=()
ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so' || missing+=(libclang-dev)
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
ls /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/dejavu/DejaVuSans.ttf \
    /usr/share/fonts/TTF/DejaVuSans.ttf >/dev/null 2>&1 || missing+=(fonts-dejavu-core)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
echo "setup: fetching crates"
cargo fetch --locked
echo "setup: done"
