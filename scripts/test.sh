#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need from the
# project's own pinned files, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: Chromium for take_screenshot, fd-find for the search_files benchmark peer.
need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "test.sh: missing ${need_apt[*]}; install with apt-get" >&2
  fi
fi

# Pinned npm packages for the tests that use real clients and peers.
for dir in tests/node; do
  if [ -f "$dir/package-lock.json" ]; then
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
  fi
done

cargo test --workspace --locked
