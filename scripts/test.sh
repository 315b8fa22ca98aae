#!/usr/bin/env bash
# The test suite: every crate's unit, model-based and stress tests (the
# `uzswap run` tests need the LD_PRELOAD library, so the whole workspace is
# built first), the compatibility suite of real programs, then the loom
# models.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo build (workspace, with the LD_PRELOAD library) ($(date -u +%T)) =="
cargo build --workspace --locked
echo "== cargo test (workspace) ($(date -u +%T)) =="
cargo test --workspace --locked
# The LD_PRELOAD library's own unit tests (its lib target is `test = false`:
# a workspace run leaves it out).
cargo test --locked -p uzswap-preload --lib

# The release build (with its LD_PRELOAD library) for what follows.
cargo build --release --workspace --locked

echo "== soak: 1 minute, every compressor and folio size, injected I/O faults ($(date -u +%T)) =="
./target/release/uzswap soak --minutes 1

# Real programs (python3, numpy, node, java, sqlite3, sort, xz, zstd, gcc,
# redis, usemem) plain and under `uzswap run`, outputs compared; as root
# also as nobody. The swap files go to /dev/shm (memory): at the suite's
# limits, 4x under the programs' footprints, the small-object programs
# read their swap files hundreds of thousands of times, which on this
# project's virtio disk (45 us a read) takes 2.5-4x as long and would not
# fit the suite's time; outputs are checked the same. BENCHMARKS.md has
# them on the disk too.
echo "== uzswap compat --quick (swap files in /dev/shm) ($(date -u +%T)) =="
./target/release/uzswap compat --quick --swapfile-dir /dev/shm

export RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" CARGO_TARGET_DIR=target/loom
echo "== loom: compress batch claim protocol ($(date -u +%T)) =="
cargo test --locked -p compress --lib --release claim::loom_model
echo "== loom: zsmalloc free racing compaction, reader racing free ($(date -u +%T)) =="
cargo test --locked -p zsmalloc --test loom --release
echo "== loom: the preload's bootstrap bump arena (common::bump) ($(date -u +%T)) =="
cargo test --locked -p common --lib --release bump::loom_model
