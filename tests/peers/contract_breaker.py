"""A legacy-era stdio MCP server that breaks the rules on purpose (Python standard library
only), for the client's error paths in toolwright's integration tests:

- `total` declares an outputSchema ({"result": number}) and returns a string there;
- `no_structure` declares an outputSchema and returns no structuredContent at all;
- `fail` returns an isError result;
- `wipe_disk` claims nothing (so it is not read-only) and `peek` claims readOnlyHint;
- tools/list hands out one tool per page, with cursors.

Modes for era detection (the first argument):
    (none)              unknown methods get -32601, like most legacy servers
    --exit-on-unknown   exits when the first request is not `initialize`
    --silent            never answers unknown methods
    --exact             also lists `exact`, whose result holds an integer no float can
                        hold and a member no schema names, to see it passed on unchanged
    --not-object        also lists `not_object`, whose result is an array
"""

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else ""

NUMBER_RESULT = {
    "type": "object",
    "properties": {"result": {"type": "number", "description": "The total"}},
    "required": ["result"],
}

TOOLS = [
    {
        "name": "total",
        "description": "Add up numbers and return the total as {\"result\": n}.",
        "inputSchema": {"type": "object"},
        "outputSchema": NUMBER_RESULT,
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "no_structure",
        "description": "Return a total without the structured content it promises.",
        "inputSchema": {"type": "object"},
        "outputSchema": NUMBER_RESULT,
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "fail",
        "description": "Always fails and returns an error result explaining why.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "wipe_disk",
        "description": "Pretend to erase the disk and return a confirmation.",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "peek",
        "description": "Return the word 'peeked'; changes nothing.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
]

if MODE == "--exact":
    TOOLS.append(
        {
            "name": "exact",
            "description": "Return a 30-digit integer and a member of its own, as written.",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "annotations": {"readOnlyHint": True},
        }
    )

if MODE == "--not-object":
    TOOLS.append(
        {
            "name": "not_object",
            "description": "Return an array where a result object belongs.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True},
        }
    )

RESULTS = {
    "not_object": [1, 2],
    "exact": {
        "content": [{"type": "text", "text": "{\"n\": 123456789012345678901234567890}"}],
        "structuredContent": {"n": 123456789012345678901234567890},
        "x-kept": {"as": "sent"},
    },
    "total": {"content": [{"type": "text", "text": "three"}], "structuredContent": {"result": "three"}},
    "no_structure": {"content": [{"type": "text", "text": "3"}]},
    "fail": {"content": [{"type": "text", "text": "this tool always fails"}], "isError": True},
    "wipe_disk": {"content": [{"type": "text", "text": "pretended to wipe the disk"}]},
    "peek": {"content": [{"type": "text", "text": "peeked"}]},
}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request):
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "contract-breaker", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        start = int(params.get("cursor") or 0)
        page = {"tools": TOOLS[start : start + 1]}
        if start + 1 < len(TOOLS):
            page["nextCursor"] = str(start + 1)
        return page
    if method == "tools/call":
        name = params.get("name")
        if name not in RESULTS:
            raise LookupError(f"Unknown tool: {name}")
        return RESULTS[name]
    return None


def main():
    first = True
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue  # notifications and responses
        if first and request["method"] != "initialize" and MODE == "--exit-on-unknown":
            sys.stderr.write("contract-breaker: the first request must be initialize\n")
            sys.exit(3)
        first = False
        try:
            result = answer(request)
        except LookupError as e:
            send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32602, "message": str(e)}})
            continue
        if result is None:
            if MODE != "--silent":
                send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "Method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
