"""A legacy-era (2025-11-25) Streamable HTTP MCP server, Python standard library only, for
the gateway's HTTP upstream tests (crates/cli/tests/it/gateway_http_upstream.rs): its GET
stream drops after its first event, and it changes its tools while the stream is down.

- POST `initialize` opens a session (`Mcp-Session-Id`); tools list changes are announced.
- The first GET stream sends one event (id `1`, `retry: 100`) and, once a `tools/list`
  was answered, closes the connection. Then the server removes the tool `second` and keeps the event (id `2`)
  `notifications/tools/list_changed`, which no stream carried. (A removal, because the
  gateway quarantines a tool that is new since its pins.)
- A later GET stream replays every kept event after the one its `Last-Event-ID` names (none
  without the header), then stays open with keep-alive comments.
- Tools: `first`, and `second` until the change; each answers with its own name.

Every GET is recorded as `GET last-event-id=VALUE` (or `=none`) in the file
RESUMING_PEER_EVENTS names. It prints `listening on http://127.0.0.1:PORT/mcp` to stderr.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EVENTS = os.environ.get("RESUMING_PEER_EVENTS")
SESSION = "resuming-session-1"
VERSION = "2025-11-25"
OBJECT = {"type": "object"}

lock = threading.Lock()
state = {"tools": ["first", "second"], "gets": 0, "kept": []}
# Set once a tools/list was answered: the first stream drops only after the client knows
# the tools, so that the change is one it must hear about.
listed = threading.Event()


def record(line):
    print(f"resuming_peer: {line}", file=sys.stderr, flush=True)
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def sse(event_id, message):
    data = json.dumps(message) if message is not None else ""
    return f"id: {event_id}\nretry: 100\ndata: {data}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=None):
        payload = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(length) or b"{}")
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            return self.reply(202)
        if method == "initialize":
            result = {"protocolVersion": VERSION,
                      "capabilities": {"tools": {"listChanged": True}},
                      "serverInfo": {"name": "resuming_peer", "version": "1"}}
        elif method == "tools/list":
            with lock:
                names = list(state["tools"])
            result = {"tools": [{"name": n, "description": f"Answer with the word '{n}'.",
                                 "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}}
                                for n in names]}
            record(f"listed {','.join(names)}")
            self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": result})
            listed.set()
            return
        elif method == "tools/call":
            name = msg["params"]["name"]
            result = {"content": [{"type": "text", "text": name}]}
        else:
            result = {}
        self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": result})

    def do_DELETE(self):
        self.reply(200)

    def do_GET(self):
        last = self.headers.get("Last-Event-ID")
        record(f"GET last-event-id={last if last is not None else 'none'}")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", SESSION)
        self.send_header("Connection", "close")
        self.end_headers()
        with lock:
            state["gets"] += 1
            first = state["gets"] == 1
        self.close_connection = True
        if first:
            self.wfile.write(sse("1", None))
            self.wfile.flush()
            listed.wait()
            # The stream drops; the change happens while no stream is open.
            self.connection.shutdown(2)
            with lock:
                state["tools"].remove("second")
                state["kept"].append(("2", {"jsonrpc": "2.0",
                                            "method": "notifications/tools/list_changed"}))
            record("dropped the stream, then changed the tools")
            return
        with lock:
            kept = list(state["kept"])
        after = int(last) if last and last.isdigit() else None
        try:
            for event_id, message in kept:
                if after is not None and int(event_id) > after:
                    self.wfile.write(sse(event_id, message))
            self.wfile.flush()
            while True:
                time.sleep(0.5)
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
        except OSError:
            pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/mcp",
          file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
