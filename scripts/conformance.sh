#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# tests/conformance/package-lock.json, with Node 22 from the npm package node@22) against
# `toolwright serve --http 127.0.0.1:PORT --fixtures conformance`.
#
#   scripts/conformance.sh                  every scenario (--suite all) against the fixtures
#   scripts/conformance.sh --no-fixtures    the same against the built-in tools only
#   scripts/conformance.sh --next           the 2026-07-28 line (tests/conformance-next,
#                                           0.2.0-alpha.12) instead of 0.1.16
#   scripts/conformance.sh -- --scenario tools-call-sampling --verbose
#                                           anything after -- goes to `conformance server`
#                                           (instead of --suite all)
#
# Installs the pinned suite first when it is missing (`npm install`: `npm ci` cannot
# install it, an optional Windows-only dependency is not in the lock file). Builds the
# binary with cargo unless TOOLWRIGHT_BIN names one. Lists every WARNING check, and exits
# 1 when any check is a FAILURE (2 when it cannot run at all). Results stay in
# $CONFORMANCE_OUT when that is set.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
suite_dir="$root/tests/conformance"
fixtures=(--fixtures conformance)
suite_args=(--suite all)

while [ $# -gt 0 ]; do
  case "$1" in
    --no-fixtures) fixtures=(); shift ;;
    --next) suite_dir="$root/tests/conformance-next"; shift ;;
    --) shift; suite_args=("$@"); break ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "conformance.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "conformance.sh: $*" >&2; exit 2; }

# 1. The pinned suite and Node 22.
bin_dir="$suite_dir/node_modules/.bin"
installed() {
  [ -x "$bin_dir/conformance" ] && [ -x "$bin_dir/node" ] &&
    [ "$("$bin_dir/node" --version 2>/dev/null | cut -d. -f1)" = "v22" ]
}
if ! installed; then
  command -v npm >/dev/null 2>&1 || die "npm is needed to install the suite"
  echo "conformance.sh: installing the pinned suite in tests/conformance" >&2
  npm install --prefix "$suite_dir" --no-audit --no-fund --loglevel=error >&2
  installed || die "the suite or Node 22 is still missing after npm install"
fi
export PATH="$bin_dir:$PATH"

# 2. The server, on a free loopback port.
bin="${TOOLWRIGHT_BIN:-}"
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --quiet -p toolwright) || die "cargo build failed"
  bin="${CARGO_TARGET_DIR:-$root/target}/debug/toolwright"
fi
[ -x "$bin" ] || die "no toolwright binary at $bin"

work="$(mktemp -d)"
out="${CONFORMANCE_OUT:-$work/results}"
mkdir -p "$out"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$bin" serve --http 127.0.0.1:0 "${fixtures[@]}" 2>"$work/server.log" &
server_pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's/^toolwright: listening on \(http[^ ]*\).*/\1/p' "$work/server.log" | head -n1)"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; die "the server exited"; }
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/server.log" >&2; die "the server did not say where it listens"; }
echo "conformance.sh: $(node --version), suite $(node -p "require('$suite_dir/node_modules/@modelcontextprotocol/conformance/package.json').version"), server $url ${fixtures[*]:-(built-in tools only)}" >&2

# 3. The suite. Its own exit code is 1 on any FAILURE; the checks are counted here too.
status=0
(cd "$work" && conformance server --url "$url" -o "$out" "${suite_args[@]}") || status=$?

node - "$out" <<'EOF' || status=1
const fs = require("fs"), path = require("path");
const dir = process.argv[2];
const counts = { SUCCESS: 0, FAILURE: 0, WARNING: 0 };
const notes = [];
let scenarios = 0;
for (const entry of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, entry, "checks.json");
  if (!fs.existsSync(file)) continue;
  scenarios++;
  const scenario = entry.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
  for (const c of JSON.parse(fs.readFileSync(file, "utf8"))) {
    if (c.status in counts) counts[c.status]++;
    if (c.status === "WARNING" || c.status === "FAILURE") {
      notes.push(`  ${c.status} ${scenario} / ${c.id}: ${c.errorMessage || c.description}`);
    }
  }
}
console.error(`conformance.sh: ${scenarios} scenarios, ${counts.SUCCESS} checks passed, ` +
  `${counts.FAILURE} failed, ${counts.WARNING} warnings`);
for (const n of notes) console.error(n);
if (scenarios === 0) { console.error("conformance.sh: no results were written"); process.exit(1); }
process.exit(counts.FAILURE > 0 ? 1 : 0);
EOF

if [ "$status" -ne 0 ]; then
  echo "conformance.sh: FAILED (server log follows)" >&2
  cat "$work/server.log" >&2
fi
exit "$status"
