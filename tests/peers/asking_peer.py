"""A legacy-era (2025-11-25) stdio MCP server, Python standard library only, whose tools
ask their client questions in the middle of a call: the upstream of the gateway's
bridging tests (crates/cli/tests/it/gateway_bridge.rs).

Tools:
- `ask_name`   asks `elicitation/create` for a name, waits for the answer and returns
               {"runs": N, "answers": [the answer]} as text;
- `ask_twice`  asks for a name, then (once answered) for a colour, and returns
               {"runs": N, "answers": [both]};
- `withdraw`   sends `sampling/createMessage` (id "s1"); once a `release` call came (the
               client's sign that it was asked), `notifications/cancelled` for it, then a
               second `sampling/createMessage` (id "s2"), and once "s2" is answered returns
               {"runs": N, "responses": [the ids of every response it received meanwhile,
               in order]}: "s1" among them is a response to a request it had cancelled;
- `release`    lets a `withdraw` in progress go on (answered while it waits).

N counts the calls of that tool this process started, on the upstream's side: a gateway
that runs the call twice to get one answer shows 2. Each run's requests have ids of their
own ("e2.1" is run 2's first), so a late answer to an earlier run's is not taken for one. While a tool waits for an answer,
`ping` and `tools/list` are answered, and a `notifications/cancelled` for the call ends it
without a result. Events ("run ask_name 1", "cancelled ask_name", "answered with an error
...") go to stderr and, when ASKING_PEER_EVENTS=FILE is set, are appended to that file.
"""

import json
import os
import sys

EVENTS = os.environ.get("ASKING_PEER_EVENTS")
OBJECT = {"type": "object"}
RUNS = {}


def event(line):
    print(f"asking_peer: {line}", file=sys.stderr, flush=True)
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(line + "\n")


TOOLS = [
    {"name": "ask_name", "description": "Ask the user for a name and return the answer.",
     "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}},
    {"name": "ask_twice", "description": "Ask the user for a name, then a colour; return both.",
     "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}},
    {"name": "withdraw", "description": "Ask for a sampling, withdraw it, ask another; return the responses received.",
     "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}},
    {"name": "release", "description": "Let a withdraw call in progress go on; return the word released.",
     "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(value):
    return {"content": [{"type": "text", "text": json.dumps(value, sort_keys=True)}]}


class Cancelled(Exception):
    """The client cancelled the call in progress."""


class Ended(Exception):
    """stdin closed."""


def read():
    line = sys.stdin.readline()
    if not line:
        raise Ended()
    return json.loads(line) if line.strip() else None


def answer_simple(request):
    """Answers a request that arrives while a tool waits: ping and tools/list."""
    method = request.get("method")
    if method == "ping":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": TOOLS}})
    else:
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32603, "message": f"busy with a call; {method} refused"}})


def is_release(msg):
    return msg.get("method") == "tools/call" and (msg.get("params") or {}).get("name") == "release"


def wait_for(wanted, call_id, seen):
    """Reads messages until the response to `wanted` (or, when `wanted` is None, a `release`
    call); every response's id goes to `seen`."""
    while True:
        msg = read()
        if msg is None:
            continue
        if "method" not in msg:
            seen.append(msg.get("id"))
            if msg.get("id") == wanted:
                return msg
            continue
        if is_release(msg):
            send({"jsonrpc": "2.0", "id": msg["id"], "result": text_result("released")})
            if wanted is None:
                return msg
        elif "id" in msg:
            answer_simple(msg)
        elif msg["method"] == "notifications/cancelled":
            if (msg.get("params") or {}).get("requestId") == call_id:
                raise Cancelled()


def ask(request_id, method, params, call_id, seen):
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    response = wait_for(request_id, call_id, seen)
    if "error" in response:
        event(f"answered with an error: {response['error'].get('message')}")
    return response.get("result", response.get("error"))


def elicitation(message, field):
    return {"message": message, "requestedSchema": {
        "type": "object", "properties": {field: {"type": "string"}}, "required": [field]}}


def sampling(text):
    return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": 10}


def run_tool(name, call_id):
    RUNS[name] = RUNS.get(name, 0) + 1
    runs = RUNS[name]
    event(f"run {name} {runs}")
    seen = []
    if name == "ask_name":
        a = ask(f"e{runs}.1", "elicitation/create", elicitation("What is your name?", "name"),
                call_id, seen)
        return {"runs": runs, "answers": [a]}
    if name == "ask_twice":
        a = ask(f"e{runs}.1", "elicitation/create", elicitation("What is your name?", "name"),
                call_id, seen)
        b = ask(f"e{runs}.2", "elicitation/create", elicitation("What is your colour?", "colour"),
                call_id, seen)
        return {"runs": runs, "answers": [a, b]}
    if name == "withdraw":
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
              "params": sampling("first, withdrawn")})
        wait_for(None, call_id, seen)
        send({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": "s1", "reason": "changed its mind"}})
        event("withdrew s1")
        ask("s2", "sampling/createMessage", sampling("second"), call_id, seen)
        return {"runs": runs, "responses": seen}
    if name == "release":
        return "nothing to release"
    raise KeyError(name)


def handle(request):
    method = request.get("method")
    if "id" not in request:
        return
    result = None
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "asking-peer", "version": "1.0.0"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        name = (request.get("params") or {}).get("name")
        try:
            result = text_result(run_tool(name, request["id"]))
        except KeyError as e:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32602, "message": f"unknown tool {e}"}})
            return
        except Cancelled:
            event(f"cancelled {name}")
            return
    else:
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32601, "message": f"method not found: {method}"}})
        return
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def main():
    event(f"started {os.getpid()}")
    try:
        while True:
            msg = read()
            if msg is not None:
                handle(msg)
    except Ended:
        return


if __name__ == "__main__":
    main()
