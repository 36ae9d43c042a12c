#!/usr/bin/env bash
# Where a forwarded call's CPU goes: `perf record` (a task-clock sample per 100 µs of CPU,
# every thread) over pipelined `add` calls through `toolwright serve --config` with a stdio
# toolwright upstream, then each process's CPU per call split by where the samples fell
# (symbols grouped by name). The table of bench/README.md ("Where a forwarded call's CPU
# goes") is this script's output.
#
#   bench/gateway-profile.sh [TOOLWRIGHT] [CALLS]
#
# Needs perf (linux-perf) and bench/loadgen built (bench/run builds it).
set -euo pipefail
BENCH="$(cd "$(dirname "$0")" && pwd)"
TW="$(realpath "${1:-$BENCH/../target/release/toolwright}")"
CALLS="${2:-100000}"
LOADGEN="$BENCH/loadgen/target/release/loadgen"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
printf 'gateway:\n  state_file: %s/pins.json\nservers:\n  up:\n    command: ["%s", "serve"]\n' "$WORK" "$TW" > "$WORK/gw.yaml"
perf record -q -e task-clock -c 100000 -o "$WORK/perf.data" -- \
  "$LOADGEN" stdio-pipelined --calls "$CALLS" --inflight 16 --add-as up__add -- \
  "$TW" serve --config "$WORK/gw.yaml" >/dev/null 2>&1
perf script -i "$WORK/perf.data" -F pid,period,ip,sym,dso 2>/dev/null | python3 -c '
import collections, re, sys
calls = int(sys.argv[1])
groups = [
    ("kernel: syscalls, pipe wake-ups, futex, epoll", r"\[kernel|kallsyms"),
    ("malloc and free", r"malloc|free|_int_|unlink_chunk|realloc|consolidate|__rdl|__rust_alloc|__rust_dealloc|finish_grow"),
    ("serde_json, Value, indexmap, memcpy", r"serde|indexmap|itoa|ryu|Value|hash|Hasher|format_escaped|memcmp|memmove|memcpy|memset"),
    ("tokio, tokens, timers, locks", r"tokio|mio|futex|parking|cancellation|Mutex|waker|Waker|mpmc|poll_fn|Scoped|clock_gettime|vdso|Notify|oneshot|lll_lock"),
    ("schema validation", r"jsonschema|schema"),
    ("toolwright code", r"toolwright"),
]
by = collections.defaultdict(collections.Counter)
for line in sys.stdin:
    m = re.match(r"\s*(\d+)\s+(\d+)\s+(.*)", line)
    if not m:
        continue
    pid, ns, rest = int(m.group(1)), int(m.group(2)), m.group(3)
    name = next((n for n, r in groups if re.search(r, rest)), "other")
    by[pid][name] += ns
for pid, c in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
    print(f"pid {pid}: {sum(c.values()) / 1e3 / calls:.2f} us of CPU per call")
    for name, ns in c.most_common():
        print(f"  {ns / 1e3 / calls:8.2f}  {name}")
' "$CALLS"
