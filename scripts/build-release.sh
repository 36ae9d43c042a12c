#!/usr/bin/env bash
# Builds the `toolwright` binary the way it ships (profile `dist`), and prints its path.
#
#   scripts/build-release.sh                 # build; the last line of stdout is the binary's path
#   scripts/build-release.sh --path          # print the path only (no build)
#   scripts/build-release.sh --symbols-path  # the same binary before stripping (no build)
#
# The shipped binary is cargo's `dist` output with its symbol table stripped (objcopy
# --strip-all, in <dir>/shipped/toolwright). The profile keeps the symbols because
# scripts/hot-functions.py lays out the link by function name.
#
# On x86_64 Linux with glibc it is linked static-pie (`-C target-feature=+crt-static`, the
# target named so proc macros stay dynamic; output in target/<triple>/dist): it starts
# sooner than a dynamic build and stays position-independent. Elsewhere, or with
# TOOLWRIGHT_DYNAMIC=1, it is a plain `cargo build --profile dist` in target/dist. Every
# function keeps its frame pointer (`-C force-frame-pointers=yes`), which shrinks the unwind
# tables. The measurements behind each choice are in bench/README.md, "The release binary".
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
