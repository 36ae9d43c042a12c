#!/usr/bin/env bash
# search_files benchmark: toolwright vs fd vs the official filesystem MCP server.
#
#   bench/search_files/run.sh [--no-build] [--runs N] [--official-runs N] [--json FILE]
#
# Builds target/release/toolwright (unless --no-build), installs fd (Debian fd-find) and the
# pinned official server (package.json + package-lock.json here) when missing, generates the
# tree once under ${SEARCH_BENCH_TREE:-${TMPDIR:-/tmp}/toolwright-search-bench-tree}, and
# prints medians and ratios. Not a test: nothing fails on a slow figure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=1
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    *) args+=("$1") ;;
  esac
  shift
done

if [ "$build" = 1 ]; then
  (cd "$repo" && cargo build --release -p toolwright)
fi
if ! command -v fdfind >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq fd-find >/dev/null
fi
if [ ! -f "$here/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ]; then
  (cd "$here" && { npm ci --no-audit --no-fund || npm install --no-audit --no-fund; })
fi
tree=${SEARCH_BENCH_TREE:-${TMPDIR:-/tmp}/toolwright-search-bench-tree}
echo "fd: $(fdfind --version); node: $(node --version); official: $(node -p "require('$here/node_modules/@modelcontextprotocol/server-filesystem/package.json').version")" >&2
exec python3 "$here/bench.py" --tree "$tree" \
  --toolwright "$repo/target/release/toolwright" \
  --official "$here/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" \
  "${args[@]+"${args[@]}"}"
