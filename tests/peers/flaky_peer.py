"""A legacy-era (2025-11-25) stdio MCP server, Python standard library only, for the
gateway's integration tests (crates/cli/tests/it/gateway.rs): the upstream whose
behaviour a test must control exactly.

Tools:
- `pid`      returns this process's pid (a restarted upstream has a new one);
- `crash`    sleeps `after_ms`, then exits with status 3 without answering (mid-call);
- `slow`     `steps` steps of `interval_ms`, a progress notification after each; a
             `notifications/cancelled` for it stops it;
- `describe` returns "described"; its description is FLAKY_PEER_DESCRIPTION when set
             (a changed definition, for pinning);
- `peek`     claims readOnlyHint, idempotentHint, no destructiveHint, closed world;
- `wipe`     claims destructiveHint;
- `echo_args` returns its arguments as structuredContent {"arguments": {...}}.

Events ("crash", "slow completed", "slow cancelled after N steps", "started PID") go to
stderr and, when FLAKY_PEER_EVENTS=FILE is set, are appended to that file.
"""

import json
import os
import select
import sys
import time

EVENTS = os.environ.get("FLAKY_PEER_EVENTS")
OBJECT = {"type": "object"}


def event(line):
    print(f"flaky_peer: {line}", file=sys.stderr, flush=True)
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(line + "\n")


TOOLS = [
    {"name": "pid", "description": "Return the process id of this server.", "inputSchema": OBJECT,
     "annotations": {"readOnlyHint": True}},
    {"name": "crash", "description": "Exit in the middle of the call, after after_ms milliseconds.",
     "inputSchema": {"type": "object", "properties": {"after_ms": {"type": "integer"}}}},
    {"name": "slow", "description": "Take steps of interval_ms each, reporting progress; can be cancelled.",
     "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"},
                                                      "interval_ms": {"type": "integer"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "describe",
     "description": os.environ.get("FLAKY_PEER_DESCRIPTION", "Return the word 'described'."),
     "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}},
    {"name": "peek", "description": "Return the word 'peeked'; changes nothing.", "inputSchema": OBJECT,
     "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                     "openWorldHint": False}},
    {"name": "wipe", "description": "Pretend to erase everything and say so.", "inputSchema": OBJECT,
     "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "echo_args", "description": "Return the arguments it was called with.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"},
                                                      "secret": {"type": "string"}},
                     "required": ["text", "secret"]},
     "outputSchema": {"type": "object", "properties": {"arguments": {"type": "object"}},
                      "required": ["arguments"]},
     "annotations": {"readOnlyHint": True}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(t):
    return {"content": [{"type": "text", "text": t}]}


class Slow:
    """The one `slow` call in progress."""

    def __init__(self, request_id, token, steps, interval):
        self.id, self.token, self.steps, self.interval = request_id, token, steps, interval
        self.done = 0
        self.next_at = time.monotonic() + interval

    def tick(self):
        self.done += 1
        if self.token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": self.token, "progress": self.done, "total": self.steps,
                             "message": f"step {self.done} of {self.steps}"}})
        self.next_at = time.monotonic() + self.interval
        return self.done >= self.steps


def call(request, slow):
    params = request.get("params") or {}
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "pid":
        return text(str(os.getpid())), slow
    if name == "crash":
        time.sleep(args.get("after_ms", 0) / 1000)
        event("crash")
        os._exit(3)
    if name == "slow":
        token = (params.get("_meta") or {}).get("progressToken")
        return None, Slow(request["id"], token, args.get("steps", 5), args.get("interval_ms", 100) / 1000)
    if name == "describe":
        return text("described"), slow
    if name == "peek":
        return text("peeked"), slow
    if name == "wipe":
        return text("pretended to wipe everything"), slow
    if name == "echo_args":
        result = text(json.dumps(args, sort_keys=True))
        result["structuredContent"] = {"arguments": args}
        return result, slow
    raise KeyError(name)


def handle(request, slow):
    """Answers one message; returns the `slow` call in progress afterwards."""
    method = request.get("method")
    if "id" not in request:
        if method == "notifications/cancelled" and slow is not None:
            if (request.get("params") or {}).get("requestId") == slow.id:
                event(f"slow cancelled after {slow.done} steps")
                return None
        return slow
    result = None
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "flaky-peer", "version": "1.0.0"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            result, slow = call(request, slow)
        except KeyError as e:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32602, "message": f"unknown tool {e}"}})
            return slow
        if result is None:
            return slow
    else:
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32601, "message": f"method not found: {method}"}})
        return slow
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})
    return slow


def main():
    event(f"started {os.getpid()}")
    slow = None
    buffered = b""
    stdin = sys.stdin.buffer.raw
    while True:
        timeout = None if slow is None else max(0.0, slow.next_at - time.monotonic())
        ready, _, _ = select.select([stdin], [], [], timeout)
        if ready:
            chunk = os.read(stdin.fileno(), 65536)
            if not chunk:
                return
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                if line.strip():
                    slow = handle(json.loads(line), slow)
        elif slow is not None and slow.tick():
            event("slow completed")
            send({"jsonrpc": "2.0", "id": slow.id, "result": text(f"took {slow.steps} steps")})
            slow = None


if __name__ == "__main__":
    main()
