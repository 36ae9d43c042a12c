#!/bin/sh
# The conformance client suite's driver: `conformance client --command "tests/conformance/client.sh"`
# runs it as `client.sh URL` with MCP_CONFORMANCE_SCENARIO set. Each scenario maps to the
# toolwright CLI invocation a user would make. Scenario-provided values (the URL, the
# scenario name, MCP_CONFORMANCE_CONTEXT) are only ever passed as quoted arguments or
# compared with fixed strings, never run. TOOLWRIGHT names the binary (default: on PATH).
set -eu
url=${1:?usage: client.sh URL}
tw=${TOOLWRIGHT:-toolwright}
case "${MCP_CONFORMANCE_SCENARIO:-}" in
initialize)
    exec "$tw" list --url "$url" ;;
tools_call)
    exec "$tw" call --url "$url" --yes add_numbers a=5 b=3 ;;
elicitation-sep1034-client-defaults)
    exec "$tw" call --url "$url" --yes --elicit accept-defaults test_client_elicitation_defaults ;;
sse-retry)
    exec "$tw" call --url "$url" --yes test_reconnection ;;
# Skills (SEP-2640): list reads the listing only; get loads a skill whole (--out), each
# file verified against the listing, so a tampered SKILL.md stops it before FORMS.md.
sep-2640-client-no-prefetch)
    exec "$tw" skills list --url "$url" ;;
sep-2640-client-verify-digest|sep-2640-client-verify-size|sep-2640-client-verify-frontmatter)
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
    "$tw" skills get --url "$url" --out "$out" pdf-processing ;;
*)
    echo "client.sh: no mapping for scenario '${MCP_CONFORMANCE_SCENARIO:-}'" >&2
    exit 2 ;;
esac
