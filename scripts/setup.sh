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
# Whether any of the given paths exists (globs allowed; `ls A B` fails
# when one of them is missing, which made every run reinstall).
have_any() {
    local f
    for f in "$@"; do
        [ -e "$f" ] && return 0
    done
    return 1
}
ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so' || missing+=(libclang-dev)
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
have_any /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/dejavu/DejaVuSans.ttf \
    /usr/share/fonts/TTF/DejaVuSans.ttf || missing+=(fonts-dejavu-core)
# The programs of `uzswap compat` (scripts/test.sh runs it): the system
# python3 with numpy, node, javac/java, sqlite3, xz, zstd, gcc, coreutils
# (sort, sha256sum) and redis. They are looked for under /usr/bin because
# the suite also runs them as user nobody, who cannot reach /root's shims.
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || missing+=(python3-numpy)
[ -x /usr/bin/node ] || missing+=(nodejs)
[ -x /usr/bin/javac ] && [ -x /usr/bin/java ] || missing+=(default-jdk-headless)
[ -x /usr/bin/sqlite3 ] || missing+=(sqlite3)
[ -x /usr/bin/xz ] || missing+=(xz-utils)
[ -x /usr/bin/zstd ] || missing+=(zstd)
[ -x /usr/bin/gcc ] || missing+=(gcc)
[ -x /usr/bin/sort ] && [ -x /usr/bin/sha256sum ] || missing+=(coreutils)
[ -x /usr/bin/redis-cli ] || missing+=(redis-tools)
# A Go toolchain (Go's own under /usr/local/go, else the distribution's)
# and glibc's static libraries: the suite's statically linked programs
# (go-static, randpage-static), which uzswap pages from outside.
[ -x /usr/local/go/bin/go ] || [ -x /usr/bin/go ] || missing+=(golang-go)
have_any /usr/lib/*/libc.a /usr/lib/libc.a || missing+=(libc6-dev)
# jemalloc, tcmalloc and mimalloc themselves: the run tests link programs
# with them (jemcheck.c, allocmix.c).
have_any /usr/lib/*/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 || missing+=(libjemalloc2)
have_any /usr/lib/*/libtcmalloc_minimal.so.4 || missing+=(libtcmalloc-minimal4)
have_any /usr/lib/*/libmimalloc.so.2 || missing+=(libmimalloc2.0)
new_redis=false
if [ ! -x /usr/bin/redis-server ]; then
    missing+=(redis-server)
    new_redis=true
fi
# perl, and PostgreSQL's server and psql (the suite's perl-hash and
# postgres cases: the server runs from /usr/lib/postgresql/*/bin).
[ -x /usr/bin/perl ] || missing+=(perl)
[ -x /usr/bin/psql ] || missing+=(postgresql-client)
new_postgres=false
if ! have_any /usr/lib/postgresql/*/bin/postgres; then
    missing+=(postgresql)
    new_postgres=true
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# The redis-server and postgresql packages may start a system service
# (where services may start); the suite starts its own servers on Unix
# sockets, so a service this script just installed is stopped and
# disabled again.
stop_service() {
    local name=$1 sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        $sudo systemctl disable --now "$name" >/dev/null 2>&1 || true
    elif command -v service >/dev/null 2>&1 && [ -x "/etc/init.d/$name" ]; then
        $sudo service "$name" stop >/dev/null 2>&1 || true
        command -v update-rc.d >/dev/null 2>&1 && $sudo update-rc.d "$name" disable >/dev/null 2>&1 || true
    fi
}
[ "$new_redis" = true ] && stop_service redis-server
[ "$new_postgres" = true ] && stop_service postgresql
# Rust's musl target: the suite's rust-musl case (a statically linked Rust
# program, paged from outside).
if command -v rustup >/dev/null 2>&1; then
    rustup target list --installed | grep -qx x86_64-unknown-linux-musl ||
        rustup target add x86_64-unknown-linux-musl
fi
echo "setup: fetching crates"
cargo fetch --locked
echo "setup: done"
