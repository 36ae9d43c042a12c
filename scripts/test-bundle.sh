#!/usr/bin/env bash
# The MCP Bundle's test: scripts/bundle.sh packs the debug binary (validated by the official
# `mcpb validate`, packed by `mcpb pack`), then the bundle is unpacked with `mcpb unpack`, its
# manifest must list exactly the tools the binary serves, and the unpacked server must run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$root/target}/debug/toolwright}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS
"$root/scripts/bundle.sh" --binary "$bin" --out "$work/toolwright.mcpb" > /dev/null 2> "$work/bundle.log" \
  || { cat "$work/bundle.log" >&2; echo "test-bundle: bundle.sh failed" >&2; exit 1; }
"$root/packaging/mcpb/node_modules/.bin/mcpb" unpack "$work/toolwright.mcpb" "$work/out" > /dev/null
python3 - "$work/out" "$bin" <<'PY'
import json, subprocess, sys
out, binary = sys.argv[1], sys.argv[2]
manifest = json.load(open(f"{out}/manifest.json"))
assert manifest["server"]["type"] == "binary", manifest["server"]
served = json.loads(subprocess.run([binary, "tools", "--json"], capture_output=True, check=True).stdout)
names = [t["name"] for t in served["tools"]]
listed = [t["name"] for t in manifest["tools"]]
assert listed == names, (listed, names)
entry = f"{out}/{manifest['server']['entry_point']}"
again = json.loads(subprocess.run([entry, "tools", "--json"], capture_output=True, check=True).stdout)
assert [t["name"] for t in again["tools"]] == names
PY
echo "test-bundle: 1 passed, 0 failed ($((SECONDS - start)) s)"
