#!/usr/bin/env bash
# The house-style and dependency-policy checks, each failing the run on any finding:
#
#   scripts/static-checks.sh                  # all of them, in this order:
#   scripts/static-checks.sh fmt              #   cargo fmt --all --check
#   scripts/static-checks.sh clippy           #   cargo clippy, every target, warnings denied
#   scripts/static-checks.sh doc              #   cargo doc, rustdoc warnings denied
#   scripts/static-checks.sh deny             #   cargo deny (deny.toml), installing it if needed
#   scripts/static-checks.sh package          #   cargo package of every published crate, unverified,
#                                             #   and what each package holds
#
# scripts/test.sh runs them all before the test suite, so that a style slip fails in
# minutes, not after the long test run. Names can be combined (`fmt doc`).
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '\n== %s\n' "$*"; }

# Pinned, so that a new cargo-deny release cannot fail (or pass) CI on its own.
DENY_VERSION=0.20.2

run_fmt() {
  log "cargo fmt --all --check"
  cargo fmt --all --check
}

run_clippy() {
  log "cargo clippy --workspace --all-targets --locked -- -D warnings"
  cargo clippy --workspace --all-targets --locked -- -D warnings
}

run_doc() {
  log "cargo doc --workspace --no-deps --locked (RUSTDOCFLAGS=-D warnings)"
  RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings" cargo doc --workspace --no-deps --locked
}

# Every crate but the fuzz bodies is published. The packages are made without the verifying
# build (a fresh build of every crate: `cargo publish --workspace --dry-run` does that, slowly);
# each one's file list must hold its manifest, README and library root, and its manifest the
# metadata crates.io shows.
run_package() {
  # Not published: the fuzz bodies, and testkit (helpers of the unit tests, a
  # dev-dependency that packaging strips).
  log "cargo package --workspace --exclude toolwright-fuzzing --exclude toolwright-testkit --no-verify --locked"
  cargo package --workspace --exclude toolwright-fuzzing --exclude toolwright-testkit --no-verify --locked --quiet
  local m name dir list
  for m in crates/*/Cargo.toml; do
    dir="${m%/Cargo.toml}"
    name="$(sed -n 's/^name = "\(.*\)"/\1/p' "$m" | head -1)"
    case "$name" in toolwright-fuzzing | toolwright-testkit) continue ;; esac
    if grep -q '^publish = false' "$m"; then
      echo "static-checks.sh: $name is publish = false" >&2; return 1
    fi
    list="$(cargo package -p "$name" --list --locked --allow-dirty 2>/dev/null)"
    for f in Cargo.toml README.md src/lib.rs; do
      if ! grep -qx "$f" <<<"$list"; then
        echo "static-checks.sh: the $name package lacks $f" >&2; return 1
      fi
    done
    for key in description repository homepage documentation readme license keywords categories; do
      if ! grep -q "^$key" "$m"; then
        echo "static-checks.sh: $dir/Cargo.toml has no $key" >&2; return 1
      fi
    done
  done
}

run_deny() {
  if [ "$(cargo deny --version 2>/dev/null)" != "cargo-deny $DENY_VERSION" ]; then
    # From crates.io, built here once per machine. Its own release profile (fat LTO) took
    # 5.5 minutes on 2 cores; unoptimized, without LTO or debug info, it builds in about 2
    # (100 s of CPU) and checks this workspace in 2.6 s instead of 1.2: CI builds it every run.
    log "cargo install cargo-deny --version $DENY_VERSION --locked (unoptimized)"
    CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_LTO=false \
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 CARGO_PROFILE_RELEASE_DEBUG=false \
      cargo install cargo-deny --version "$DENY_VERSION" --locked
  fi
  log "cargo deny check bans licenses sources"
  cargo deny --locked check bans licenses sources

  # The advisory check needs the RustSec database, a git repository on GitHub. CI reaches
  # only the package registries, and no registry package carries the database, so CI has
  # no copy: the check runs against a copy already on the machine (left by
  # `cargo deny fetch db` where GitHub is reachable; TOOLWRIGHT_ADVISORY_FETCH=1 asks this
  # script to fetch one first) and says plainly that it did not run otherwise.
  local dbs="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs"
  if [ "${TOOLWRIGHT_ADVISORY_FETCH:-0}" = 1 ]; then
    log "cargo deny fetch db"
    cargo deny fetch db
  fi
  if compgen -G "$dbs/*/.git" >/dev/null; then
    log "cargo deny check advisories (offline, the copy in $dbs)"
    cargo deny --offline --locked check advisories
  else
    log "cargo deny check advisories: NOT RUN"
    note=", advisories NOT RUN"
    echo "No RustSec advisory database on this machine ($dbs) and none can be fetched from"
    echo "here; run 'cargo deny fetch db' where GitHub is reachable, then this script again."
  fi
}

checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(fmt clippy doc deny package)
for c in "${checks[@]}"; do
  case "$c" in
    fmt|clippy|doc|deny|package)
      start=$SECONDS note=""
      "run_$c"
      printf '== %s passed (%d s%s)\n' "$c" $((SECONDS - start)) "$note" ;;
    *) echo "static-checks.sh: unknown check '$c' (fmt, clippy, doc, deny, package)" >&2; exit 2 ;;
  esac
done
