#!/usr/bin/env bash
# bench/declared/ratio.sh: the command-backed call's sequential p50 against a bare spawn of
# the same program, in interleaved rounds, for one or more toolwright binaries (e.g. a
# build before a change and one after it), without the rest of bench/run.
#
#   bench/declared/ratio.sh [--rounds N] [--calls N] BIN [BIN...]
#
# Each round measures, one after the other: `loadgen spawn -- /bin/true` (the floor, on
# CPU 1), then `bench_true` of bench/declared/toolwright.yaml through each BIN (`loadgen
# stdio-seq`, client on CPU 0, `BIN serve --config` and what it spawns on CPU 1), as
# bench/run's declared section does. It prints one line per round and measurement, then
# per BIN the median over rounds of p50 ÷ that round's bare-spawn p50, with the lowest and
# highest. The tool file is served from a directory of its own (not the current one), as
# in bench/run. Needs bench/loadgen built (cargo build --release in bench/loadgen).
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOADGEN="$BENCH/loadgen/target/release/loadgen"
ROUNDS=5
CALLS=2000
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS="$2"; shift 2 ;;
    --calls) CALLS="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--rounds N] [--calls N] BIN [BIN...]" >&2; exit 2; }
[ -x "$LOADGEN" ] || { echo "$0: build bench/loadgen first ($LOADGEN)" >&2; exit 2; }
PIN_CLIENT=(); PIN_SERVER=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  PIN_CLIENT=(taskset -c 0); PIN_SERVER=(taskset -c 1)
fi

DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
sed 's/@PORT@/9/g' "$BENCH/declared/toolwright.yaml" > "$DIR/toolwright.yaml"

p50() { sed -n 's/.*"p50_us":\([0-9.]*\).*/\1/p'; }
common=(--calls "$CALLS" --warmup 100 --max-secs 10 --timeout-secs 120)
for round in $(seq 1 "$ROUNDS"); do
  spawn="$("${PIN_SERVER[@]}" "$LOADGEN" spawn "${common[@]}" --concurrency 1 -- /bin/true | p50)"
  echo "round $round: bare spawn p50 $spawn us"
  i=0
  for bin in "$@"; do
    i=$((i + 1))
    call="$("${PIN_CLIENT[@]}" "$LOADGEN" stdio-seq "${common[@]}" --tool bench_true --arguments '{}' \
              -- "${PIN_SERVER[@]}" "$bin" serve --config "$DIR/toolwright.yaml" | p50)"
    ratio="$(awk -v a="$call" -v b="$spawn" 'BEGIN { printf "%.3f", a / b }')"
    echo "round $round: $bin p50 $call us, ${ratio}x"
    echo "$ratio" >> "$DIR/ratios.$i"
  done
done
i=0
for bin in "$@"; do
  i=$((i + 1))
  sort -n "$DIR/ratios.$i" | awk -v bin="$bin" '{ r[NR] = $1 } END {
    m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "%s: p50 / bare spawn median %.3fx (lowest %.3fx, highest %.3fx, %d rounds)\n", bin, m, r[1], r[NR], NR }'
done
