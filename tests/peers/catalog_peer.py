"""A legacy-era (2025-11-25) stdio MCP server, Python standard library only, with prompts,
resources and a resource template that change while it runs: the upstream of the gateway's
catalog tests (crates/cli/tests/it/gateway_live.rs).

Prompts: `greet` (argument `name`, required): "Hello, NAME." Resources: `peer://note`,
whose text is CATALOG_PEER_NOTE (default "a note"); the template `peer://item/{id}`: "item
ID". The tool `grow` adds the prompt `extra` and the resource `peer://extra`, then sends
`notifications/prompts/list_changed` and `notifications/resources/list_changed` before it
answers. The tool `quit` answers, then exits (a restart forgets what `grow` added). The
tool `starts` returns how many times a server was started with this
CATALOG_PEER_EVENTS file.

Events ("started PID") are appended to CATALOG_PEER_EVENTS when it is set.
"""

import json
import os
import sys

EVENTS = os.environ.get("CATALOG_PEER_EVENTS")
NOTE = os.environ.get("CATALOG_PEER_NOTE", "a note")
OBJECT = {"type": "object"}

TOOLS = [
    {"name": "grow", "description": "Add a prompt and a resource, and say the lists changed.",
     "inputSchema": OBJECT},
    {"name": "quit", "description": "Answer, then exit.", "inputSchema": OBJECT},
    {"name": "starts", "description": "Return how many times this server was started.",
     "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}},
]

PROMPTS = [
    {"name": "greet", "description": "Greet someone by name.",
     "arguments": [{"name": "name", "description": "Who to greet.", "required": True}]},
]

RESOURCES = [
    {"uri": "peer://note", "name": "note", "mimeType": "text/plain"},
]

TEMPLATES = [
    {"uriTemplate": "peer://item/{id}", "name": "item", "mimeType": "text/plain"},
]


def event(line):
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(t):
    return {"content": [{"type": "text", "text": t}]}


def contents(uri, t):
    return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": t}]}


def call(params):
    name = params.get("name")
    if name == "grow":
        if not any(p["name"] == "extra" for p in PROMPTS):
            PROMPTS.append({"name": "extra", "description": "A prompt added by grow."})
            RESOURCES.append({"uri": "peer://extra", "name": "extra", "mimeType": "text/plain"})
        send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
        send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
        return text("grown")
    if name == "quit":
        return text("bye")
    if name == "starts":
        started = 0
        if EVENTS:
            with open(EVENTS, encoding="utf-8") as f:
                started = sum(1 for line in f if line.startswith("started "))
        return text(str(started))
    raise KeyError(name)


def read(uri):
    if uri == "peer://note":
        return contents(uri, NOTE)
    if uri == "peer://extra" and any(r["uri"] == uri for r in RESOURCES):
        return contents(uri, "extra")
    if uri.startswith("peer://item/"):
        return contents(uri, "item " + uri[len("peer://item/"):])
    raise KeyError(uri)


def get_prompt(params):
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "greet":
        said = f"Hello, {args.get('name', 'nobody')}."
    elif name == "extra" and any(p["name"] == "extra" for p in PROMPTS):
        said = "An extra prompt."
    else:
        raise KeyError(name)
    return {"messages": [{"role": "user", "content": {"type": "text", "text": said}}]}


def answer(method, params):
    if method == "initialize":
        return {"protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "prompts": {"listChanged": True},
                                 "resources": {"listChanged": True}},
                "serverInfo": {"name": "catalog-peer", "version": "1.0.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call(params)
    if method == "prompts/list":
        return {"prompts": PROMPTS}
    if method == "prompts/get":
        return get_prompt(params)
    if method == "resources/list":
        return {"resources": RESOURCES}
    if method == "resources/templates/list":
        return {"resourceTemplates": TEMPLATES}
    if method == "resources/read":
        return read(params.get("uri"))
    raise LookupError(method)


def main():
    event(f"started {os.getpid()}")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        method, params = request.get("method"), request.get("params") or {}
        try:
            result = answer(method, params)
        except LookupError as e:
            code = -32601 if isinstance(e, LookupError) and not isinstance(e, KeyError) else -32602
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": code, "message": f"not found: {e}"}})
            continue
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        if method == "tools/call" and params.get("name") == "quit":
            return


if __name__ == "__main__":
    main()
