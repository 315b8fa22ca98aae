#!/usr/bin/env bash
# The test suite: every crate's unit, model-based and stress tests (the
# `uzswap run` tests need the LD_PRELOAD library, so the whole workspace is
# built first), then the loom models.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo build (workspace, with the LD_PRELOAD library) =="
cargo build --workspace --locked
echo "== cargo test (workspace) =="
cargo test --workspace --locked

echo "== soak: 2 minutes, every compressor and folio size, injected I/O faults =="
cargo build --release --locked -p uzswap
./target/release/uzswap soak --minutes 2

export RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" CARGO_TARGET_DIR=target/loom
echo "== loom: compress batch claim protocol =="
cargo test --locked -p compress --lib --release claim::loom_model
echo "== loom: zsmalloc free racing compaction, reader racing free =="
cargo test --locked -p zsmalloc --test loom --release
