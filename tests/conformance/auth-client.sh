#!/bin/sh
# Driver of the conformance suite's auth/* client scenarios:
#   conformance client --command tests/conformance/auth-client.sh --scenario auth/NAME
# runs it as `auth-client.sh URL`. It lists the server's tools, then calls test-tool, with
# toolwright's OAuth (a fresh token cache per run, so the call reuses the list's token),
# the pre-registered client from MCP_CONFORMANCE_CONTEXT when the scenario gives one, and
# the suite's client metadata document URL. The client credentials scenarios use
# `--grant client-credentials` (the secret, or the private key written to a 0600 file), the
# cross-app access ones and enterprise-managed authorization `--grant cross-app` (the IdP's
# ID token in the environment), workload identity federation `--grant jwt-bearer` (the
# workload's JWT written to a 0600 file).
# Context values are only ever passed as quoted arguments, environment values or file
# contents, never run. TOOLWRIGHT_BIN names the binary.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${TOOLWRIGHT_BIN:-toolwright}
url=$1
XDG_STATE_HOME=$(mktemp -d)
export XDG_STATE_HOME
trap 'rm -rf "$XDG_STATE_HOME"' EXIT
BROWSER="$here/oauth-browser.sh"
# BROWSER_DELAY (seconds the browser waits before following the URL) and REQUEST_TIMEOUT
# (toolwright's --timeout and --probe-timeout): a login slower than a request's timeout.
if [ -n "${BROWSER_DELAY:-}" ]; then BROWSER="$here/oauth-slow-browser.sh"; fi
export BROWSER
ctx=${MCP_CONFORMANCE_CONTEXT:-"{}"}
field() { node -e 'const v = JSON.parse(process.argv[1])[process.argv[2]]; process.stdout.write(typeof v === "string" ? v : "")' "$ctx" "$1"; }
id=$(field client_id)
OAUTH_CLIENT_SECRET=$(field client_secret)
export OAUTH_CLIENT_SECRET
set -- --url "$url" --client-metadata-url https://conformance-test.local/client-metadata.json
if [ -n "$id" ]; then set -- "$@" --client-id "$id"; fi
if [ -n "$id" ] && [ -n "$OAUTH_CLIENT_SECRET" ]; then set -- "$@" --client-secret-env OAUTH_CLIENT_SECRET; fi
case "${MCP_CONFORMANCE_SCENARIO:-}" in
auth/client-credentials-jwt)
    key="$XDG_STATE_HOME/client-key.pem"
    (umask 077 && field private_key_pem >"$key")
    set -- "$@" --grant client-credentials --client-assertion-key "$key" ;;
auth/client-credentials-*)
    set -- "$@" --grant client-credentials ;;
auth/cross-app-access-* | auth/enterprise-managed-authorization)
    IDP_ID_TOKEN=$(field idp_id_token)
    export IDP_ID_TOKEN
    set -- "$@" --grant cross-app --id-token-env IDP_ID_TOKEN \
        --idp-token-endpoint "$(field idp_token_endpoint)" --idp-client-id "$(field idp_client_id)" ;;
auth/wif-jwt-bearer)
    jwt="$XDG_STATE_HOME/workload.jwt"
    (umask 077 && field valid_jwt >"$jwt")
    set -- "$@" --grant jwt-bearer --assertion-file "$jwt" ;;
esac
if [ -n "${REQUEST_TIMEOUT:-}" ]; then
    set -- "$@" --timeout "$REQUEST_TIMEOUT" --probe-timeout "$REQUEST_TIMEOUT"
fi
"$bin" list "$@"
"$bin" call "$@" --yes test-tool
