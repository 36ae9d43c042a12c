#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (cargo-fuzz, nightly toolchain) for a while each and
# minimizes what they kept. Not part of CI; the corpus it leaves in fuzz/corpus/ is
# replayed by `cargo test` (crates/fuzzing/tests/replay.rs) on the stable toolchain.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default: 900 s each, every target
#
# A crash stops that target's run and is left in fuzz/artifacts/<target>/; once fixed,
# copy it into fuzz/regressions/<target>/ so the replay test keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-900}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(envelope dispatch http schema search_pattern toolfile template config_merge sql openapi)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked
cargo +nightly fuzz build
for t in "${targets[@]}"; do
  mkdir -p "logs"
  echo "== $t for $secs s"
  cargo +nightly fuzz run "$t" -- -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 \
    -print_final_stats=1 2>&1 | tee "logs/$t.log" | grep -E "^#[0-9]+.*(DONE|pulse)|ERROR|SUMMARY|stat::" || true
  echo "== minimizing the corpus of $t"
  cargo +nightly fuzz cmin "$t" >/dev/null 2>&1 || echo "cmin of $t failed"
done
