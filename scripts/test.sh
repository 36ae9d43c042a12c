#!/usr/bin/env bash
# The whole test suite, from a fresh machine: first the static checks (rustfmt, clippy,
# rustdoc and cargo-deny, scripts/static-checks.sh: they fail in minutes), then it installs
# what the tests need from the project's own pinned files (Debian packages, npm lock files,
# pip requirements) and runs every test of the workspace and a smoke run of the benchmark
# harness.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
log() { printf '\n== %s\n' "$*"; }

# A clean clone builds everything once: incremental caches would only take disk (gigabytes
# of it; a CI run once filled its disk mid-link) and time.
export CARGO_INCREMENTAL=0

./scripts/static-checks.sh

# Debian packages: Chromium for take_screenshot, fd-find for the search_files benchmark peer.
need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v fdfind >/dev/null 2>&1 || need_apt+=(fd-find)
# Prometheus scrapes `serve --http`'s /metrics in the metrics tests (started by the test
# itself, never as a service).
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
# GNU units backs the unit-converter example pack (examples/units), which the tests run.
command -v units >/dev/null 2>&1 || need_apt+=(units)
# Shared legacy sessions: the Redis session store and the three-replica deploy test.
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v nginx >/dev/null 2>&1 || need_apt+=(nginx)
# The sql tests start a PostgreSQL cluster of their own from Debian's server binaries.
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_apt+=(postgresql)
command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  fi
fi

# Pinned npm projects: the TypeScript SDK clients (1.32.2 and 2.4), the reference servers (peers), the
# OpenAPI descriptions the importer is tested on (tests/openapi), the MCP Bundle CLI
# (packaging/mcpb, for scripts/bundle.sh), and the
# official conformance suite, 0.1.16 and 0.2.0-alpha.12 (which `npm ci` cannot install: see
# tests/conformance).
for dir in tests/node tests/peers tests/openapi packaging/mcpb; do
  if [ -f "$dir/package-lock.json" ]; then
    log "npm ci in $dir"
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  fi
done
for dir in tests/conformance tests/conformance-next; do
  if [ ! -x "$dir/node_modules/.bin/conformance" ]; then
    log "npm install in $dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error
  fi
done

# Pinned Python SDKs: mcp 1.30 (handshake era) for the client, lint and gateway tests, and
# mcp 2.3 (2026-07-28) for the gateway tests' modern-only upstream and client. Each
# requirements file pins every package, dependencies included, so pip resolves nothing.
for dir in tests/peers tests/peers-modern; do
  if [ ! -x "$dir/.venv/bin/python" ] || ! "$dir/.venv/bin/python" -c 'import mcp' 2>/dev/null; then
    log "python venv in $dir"
    python3 -m venv "$dir/.venv"
    "$dir/.venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$dir/requirements.txt"
  fi
done

# The OTLP receiver of the trace tests (tests/otlp/receiver.py): opentelemetry-proto,
# protobuf and grpcio, pinned with their dependencies, wheels only.
if [ ! -x tests/otlp/.venv/bin/python ] || ! tests/otlp/.venv/bin/python -c 'import grpc, opentelemetry.proto' 2>/dev/null; then
  log "python venv in tests/otlp"
  python3 -m venv tests/otlp/.venv
  tests/otlp/.venv/bin/pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: -r tests/otlp/requirements.txt
fi

log "cargo test --workspace"
cargo test --workspace --locked --no-fail-fast

log "MCP Bundle from the debug binary (scripts/test-bundle.sh)"
scripts/test-bundle.sh

log "benchmark harness smoke run"
"$root/bench/run" --smoke

# The load generator is its own workspace (bench/loadgen); its tests reuse the release
# build the smoke run just made, with the same quick settings (bench/run's QUICK_BUILD).
log "bench/loadgen tests"
(cd bench/loadgen && env -u CARGO_TARGET_DIR CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  CARGO_PROFILE_RELEASE_DEBUG=false cargo test --release --locked)
