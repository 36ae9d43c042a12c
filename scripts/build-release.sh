#!/usr/bin/env bash
# Builds the `toolwright` binary the way it ships (profile `dist`), and prints its path.
#
#   scripts/build-release.sh                 # build; the last line of stdout is the binary's path
#   scripts/build-release.sh --path          # print the path only (no build)
#   scripts/build-release.sh --symbols-path  # the same binary before stripping (no build)
#
# The shipped binary is cargo's `dist` output with its symbol table stripped (objcopy
# --strip-all, in <dir>/shipped/toolwright): the same code at the same addresses, about 3 MB
# smaller. The profile itself keeps the symbols (strip = "debuginfo") because
# scripts/hot-functions.py profiles the link layout by function name, and a profile that
# strips would give every function another mangled name (the profile's settings enter the
# symbol hashes), so the names profiled would not be the shipped binary's.
#
# On x86_64 Linux with glibc the binary is linked static-pie (`-C target-feature=+crt-static`):
# no shared libraries for the loader to find, map and relocate before main. It stays
# position-independent (ASLR). rustc applies crt-static to proc macros too unless the target
# is named, so the build names it and lands in target/<triple>/dist. Elsewhere, or with
# TOOLWRIGHT_DYNAMIC=1, it is a plain `cargo build --profile dist` in target/dist (the `dist`
# profile: fat LTO, one codegen unit), linked against the system's glibc.
#
# The two are a trade of size for start-up (2026-12-02, both with their own link layout):
# static-pie then shipped 12,993,880 bytes and ran `toolwright serve` with empty stdin, spawn
# to exit, in 1.23 ms (median of 200 pairs); dynamic shipped 11,965,472 bytes, 1.03 MB less
# (static glibc's share), and took 1.65 ms: 0.42 ms more, which is what separates a cold
# start ahead of rmcp's from one behind it (BENCHMARKS.md). The shipped build is static-pie.
#
# Every function keeps its frame pointer (`-C force-frame-pointers=yes`). With the frame
# address in rbp, a function's unwind record says so once instead of restating the stack
# offset at every push and pop, and unwinding stays on (a panicking tool fails only its own
# call): .eh_frame goes from 1,499,012 to 1,082,432 bytes while .text is no larger. Shipped,
# 2026-12-03: static-pie 12,993,880 -> 12,575,128 bytes, dynamic 11,965,472 -> 11,544,000.
# Cold start and pipelined calls did not get slower (bench/README.md), and perf can walk
# the stack without DWARF. rustc's own standard library is prebuilt without them; its
# unwind records stay as they were. With OTLP over hyper's own clients, one YAML parser and
# the rest of bench/README.md's list (2026-12-03): static-pie 11,922,424 bytes, dynamic
# 10,879,808.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
host="$(rustc -vV | sed -n 's/^host: //p')"

args=(build --profile dist --locked -p toolwright)
static=0
if [ "$host" = x86_64-unknown-linux-gnu ] && [ "${TOOLWRIGHT_DYNAMIC:-0}" = 0 ]; then
  static=1
  args+=(--target "$host")
  bin="$target_dir/$host/dist/toolwright"
else
  bin="$target_dir/dist/toolwright"
fi

shipped="$(dirname "$bin")/shipped/toolwright"

case "${1:-}" in
  --path) echo "$shipped"; exit 0 ;;
  --symbols-path) echo "$bin"; exit 0 ;;
esac

# Panic and assertion messages name their source file, and a dependency's path would carry
# the registry's directory (~/.cargo/registry/src/index.crates.io-<hash>/) into the binary,
# over a thousand times: 65 KB of the shipped binary, and the builder's home directory.
# Remapping keeps `<crate>-<version>/src/...` only.
registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
# On a fresh machine the sources are not there yet: fetch them first, or nothing is remapped.
cargo fetch --locked --manifest-path "$root/Cargo.toml" >&2
for dir in "$registry"/*/; do
  if [ -d "$dir" ]; then RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$dir="; fi
done
export RUSTFLAGS="${RUSTFLAGS:-} -C force-frame-pointers=yes"
if [ "$static" = 1 ]; then export RUSTFLAGS="$RUSTFLAGS -C target-feature=+crt-static"; fi

(cd "$root" && cargo "${args[@]}") >&2
mkdir -p "$(dirname "$shipped")"
objcopy --strip-all "$bin" "$shipped.tmp"
mv "$shipped.tmp" "$shipped"
echo "$shipped"
