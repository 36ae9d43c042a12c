#!/bin/sh
# Driver of the conformance suite's auth/* client scenarios:
#   conformance client --command tests/conformance/auth-client.sh --scenario auth/NAME
# runs it as `auth-client.sh URL`. It lists the server's tools, then calls test-tool, with
# toolwright's OAuth (a fresh token cache per run, so the call reuses the list's token),
# the pre-registered client from MCP_CONFORMANCE_CONTEXT when the scenario gives one, and
# the suite's client metadata document URL. TOOLWRIGHT_BIN names the binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${TOOLWRIGHT_BIN:-toolwright}
url=$1
XDG_STATE_HOME=$(mktemp -d)
export XDG_STATE_HOME
trap 'rm -rf "$XDG_STATE_HOME"' EXIT
BROWSER="$here/oauth-browser.sh"
export BROWSER
ctx=${MCP_CONFORMANCE_CONTEXT:-"{}"}
field() { node -e 'const v = JSON.parse(process.argv[1])[process.argv[2]]; process.stdout.write(typeof v === "string" ? v : "")' "$ctx" "$1"; }
id=$(field client_id)
OAUTH_CLIENT_SECRET=$(field client_secret)
export OAUTH_CLIENT_SECRET
set -- --url "$url" --client-metadata-url https://conformance-test.local/client-metadata.json
if [ -n "$id" ]; then set -- "$@" --client-id "$id"; fi
if [ -n "$id" ] && [ -n "$OAUTH_CLIENT_SECRET" ]; then set -- "$@" --client-secret-env OAUTH_CLIENT_SECRET; fi
"$bin" list "$@"
"$bin" call "$@" --yes test-tool
