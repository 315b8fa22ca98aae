#!/usr/bin/env bash
# Coverage-guided fuzzing of page decompression (every backend) with
# libFuzzer on the stable toolchain: the sanitizer-coverage passes cargo-fuzz
# uses, without its nightly-only address sanitizer.
#   scripts/fuzz.sh [SECONDS]     (default 60)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${1:-60}"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
target="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --release --target "$target" --target-dir target/cov
mkdir -p corpus/decompress artifacts
exec "target/cov/$target/release/decompress" corpus/decompress -artifact_prefix=artifacts/ \
    -max_total_time="$secs" -max_len=8192
