#!/usr/bin/env bash
# Builds an MCP Bundle (.mcpb, `server.type: binary`) of toolwright for the platform it runs
# on, and validates it with the official CLI (@anthropic-ai/mcpb, pinned in packaging/mcpb).
#
#   scripts/bundle.sh                      # the shipped binary (scripts/build-release.sh, profile dist)
#   scripts/bundle.sh --binary PATH        # bundle an already built binary (the test: a debug one)
#   scripts/bundle.sh --out FILE.mcpb      # where the bundle goes (default target/toolwright.mcpb)
#
# The manifest's tool list comes from `toolwright tools --json`, so it is the binary's own.
# The bundle's server runs `toolwright serve` on stdio with the user's home folder as its root.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="" out="$root/target/toolwright.mcpb"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "bundle.sh: unknown option '$1' (--binary PATH, --out FILE)" >&2; exit 2 ;;
  esac
done
mcpb="$root/packaging/mcpb/node_modules/.bin/mcpb"
if [ ! -x "$mcpb" ]; then
  npm ci --prefix "$root/packaging/mcpb" --no-audit --no-fund --loglevel=error >&2
fi
if [ -z "$binary" ]; then
  binary="$("$root/scripts/build-release.sh" | tail -1)"
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/server"
cp "$binary" "$stage/server/toolwright"
# The shipped binary has neither debug info nor a symbol table (scripts/build-release.sh);
# a debug build's debug info (hundreds of MB) is dropped here too, so the test's bundle
# zips in seconds.
if command -v strip > /dev/null; then strip --strip-all "$stage/server/toolwright"; fi
chmod 755 "$stage/server/toolwright"
"$binary" tools --json > "$stage/tools.json"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)"
python3 - "$stage" "$version" <<'PY'
import json, sys
stage, version = sys.argv[1], sys.argv[2]
tools = json.load(open(f"{stage}/tools.json"))["tools"]
manifest = {
    "manifest_version": "0.3",
    "name": "toolwright",
    "display_name": "toolwright",
    "version": version,
    "description": "MCP server: exact arithmetic, text, data and file tools over stdio, with every argument checked against its schema",
    "author": {"name": "toolwright contributors"},
    "repository": {"type": "git", "url": "https://github.com/toolwright-dev/toolwright"},
    "homepage": "https://github.com/toolwright-dev/toolwright",
    "license": "MIT OR Apache-2.0",
    "keywords": ["mcp", "tools"],
    "server": {
        "type": "binary",
        "entry_point": "server/toolwright",
        "mcp_config": {
            "command": "${__dirname}/server/toolwright",
            "args": ["serve", "--root", "${HOME}"],
        },
    },
    "tools": [{"name": t["name"], "description": t.get("description", "")} for t in tools],
    "compatibility": {"platforms": ["linux"]},
}
json.dump(manifest, open(f"{stage}/manifest.json", "w"), indent=2)
PY
rm "$stage/tools.json"
"$mcpb" validate "$stage/manifest.json" >&2
mkdir -p "$(dirname "$out")"
"$mcpb" pack "$stage" "$out" >&2
echo "$out"
