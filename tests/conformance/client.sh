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
request-metadata|json-schema-ref-no-deref)
    exec "$tw" list --url "$url" ;;
json-schema-2020-12-preservation)
    # Echo the focal tool's inputSchema, exactly as listed, to the echo tool.
    schema=$("$tw" list --url "$url" --json | node -e '
        let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
          const t = JSON.parse(s).tools.find(t => t.name === "json_schema_2020_12_tool");
          process.stdout.write(JSON.stringify({schema: t.inputSchema}));
        })')
    exec "$tw" call --url "$url" --yes json_schema_echo --args "$schema" ;;
http-standard-headers)
    "$tw" list --url "$url"
    "$tw" call --url "$url" --yes test_headers
    exec "$tw" call --url "$url" --yes my-hyphenated-tool ;;
http-invalid-tool-headers)
    "$tw" list --url "$url"
    exec "$tw" call --url "$url" --yes valid_tool ;;
http-custom-headers)
    # The scenario names the calls to make, with their arguments, in its context.
    ctx=${MCP_CONFORMANCE_CONTEXT:-"{}"}
    count=$(node -e 'process.stdout.write(String((JSON.parse(process.argv[1]).toolCalls || []).length))' "$ctx")
    i=0
    while [ "$i" -lt "$count" ]; do
        name=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).toolCalls[+process.argv[2]].name)' "$ctx" "$i")
        args=$(node -e 'process.stdout.write(JSON.stringify(JSON.parse(process.argv[1]).toolCalls[+process.argv[2]].arguments))' "$ctx" "$i")
        "$tw" call --url "$url" --yes "$name" --args "$args"
        i=$((i + 1))
    done ;;
sep-2322-client-request-state)
    # Each input_required round is answered (elicitation accepted with the schema's
    # defaults) and the call retried; the unrelated call in between carries nothing.
    "$tw" call --url "$url" --yes --elicit accept-defaults test_mrtr_echo_state
    "$tw" call --url "$url" --yes test_mrtr_unrelated
    "$tw" call --url "$url" --yes --elicit accept-defaults test_mrtr_no_state
    exec "$tw" call --url "$url" --yes test_mrtr_no_result_type ;;
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
