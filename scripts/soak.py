#!/usr/bin/env python3
"""A soak of the release binary: mixed HTTP and stdio load for a long time, watching memory
and every reply.

Runs one `toolwright serve --http` and one long-lived `toolwright serve` over stdio, plus
short-lived stdio servers started and stopped all along, and drives them at once:

- legacy HTTP workers: a session opens (initialize, initialized), makes calls (plain,
  with progress over an event stream, slow ones cancelled from a second connection), then
  closes (DELETE); over and over;
- modern HTTP workers: stateless requests with per-request `_meta` (server/discover,
  tools/list, tools/call), some asking for progress;
- a stdio worker pipelining calls in both eras on the long-lived server, cancelling some;
- a stdio churn worker starting a server, making a few calls and closing its stdin.

Every request that was not cancelled must be answered exactly once, with its own id; a
cancelled one at most once. The resident set of both long-lived servers is sampled every
10 s; the figure that matters is the mean of the last 10 minutes against the first 10
(flat: within 10%). Prints a JSON summary and writes it under bench/results/.

    scripts/soak.py [--minutes 30] [--binary target/release/toolwright]

Not part of CI: a full soak takes its whole duration on both cores.
"""

import argparse
import http.client
import itertools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "0"},
}


class Ledger:
    """Every request sent and every reply seen, by (channel, id)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.expected = {}  # key -> cancelled?
        self.replies = {}  # key -> count
        self.unknown = 0
        self.errors = []

    def sent(self, key, cancelled=False):
        with self.lock:
            self.expected[key] = cancelled

    def cancelled(self, key):
        with self.lock:
            self.expected[key] = True

    def reply(self, key):
        with self.lock:
            if key not in self.expected:
                self.unknown += 1
            self.replies[key] = self.replies.get(key, 0) + 1

    def error(self, what):
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(what)

    def summary(self):
        with self.lock:
            lost = [k for k, c in self.expected.items() if not c and self.replies.get(k, 0) == 0]
            dup = [k for k, n in self.replies.items() if n > 1]
            return {
                "requests": len(self.expected),
                "cancelled": sum(1 for c in self.expected.values() if c),
                "replies": sum(self.replies.values()),
                "lost": len(lost),
                "duplicated": len(dup),
                "unknown_ids": self.unknown,
                "lost_examples": [list(map(str, k)) for k in lost[:5]],
                "duplicated_examples": [list(map(str, k)) for k in dup[:5]],
                "errors": self.errors[:10],
            }


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def read_body(resp):
    """The JSON-RPC messages of an HTTP response, JSON or an event stream."""
    body = resp.read()
    ctype = resp.getheader("Content-Type", "")
    if not body:
        return []
    if ctype.startswith("text/event-stream"):
        out = []
        for event in body.decode().split("\n\n"):
            data = "\n".join(
                line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")
            )
            if data:
                out.append(json.loads(data))
        return out
    msg = json.loads(body)
    return msg if isinstance(msg, list) else [msg]


class Http:
    def __init__(self, port):
        self.port = port
        self.conn = None

    def post(self, msg, headers):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                h = {
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                }
                h.update(headers)
                self.conn.request("POST", "/mcp", json.dumps(msg), h)
                resp = self.conn.getresponse()
                return resp, read_body(resp)
            except (ConnectionError, http.client.HTTPException, socket.timeout):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def delete(self, session):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session})
        self.conn.getresponse().read()


def legacy_http_worker(port, ledger, stop, wid, counts):
    ids = itertools.count(1)
    rng = random.Random(wid)
    while not stop.is_set():
        client = Http(port)
        try:
            resp, _ = client.post(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": LEGACY,
                        "capabilities": {},
                        "clientInfo": {"name": "soak", "version": "0"},
                    },
                },
                {},
            )
            session = resp.getheader("Mcp-Session-Id")
            h = {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
            client.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
            for _ in range(rng.randint(5, 40)):
                if stop.is_set():
                    break
                rid = next(ids)
                key = ("http-legacy", wid, session, rid)
                kind = rng.random()
                if kind < 0.1:
                    # A slow call, cancelled from another connection while it runs.
                    ledger.sent(key, cancelled=True)
                    other = Http(port)
                    result = {}

                    def slow():
                        try:
                            _, msgs = client.post(
                                {
                                    "jsonrpc": "2.0",
                                    "id": rid,
                                    "method": "tools/call",
                                    "params": {"name": "probe_sleep", "arguments": {"ms": 3000}},
                                },
                                h,
                            )
                            result["msgs"] = msgs
                        except Exception as e:  # noqa: BLE001
                            result["err"] = repr(e)

                    t = threading.Thread(target=slow)
                    t.start()
                    time.sleep(0.05)
                    other.post(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": rid, "reason": "soak"},
                        },
                        h,
                    )
                    t.join()
                    for m in result.get("msgs", []):
                        if m.get("id") == rid:
                            ledger.reply(key)
                    counts["cancel"] += 1
                    continue
                params = {"name": "add", "arguments": {"a": rid, "b": 0.5}}
                if kind < 0.3:
                    params = {
                        "name": "probe_sleep",
                        "arguments": {"ms": 5},
                        "_meta": {"progressToken": f"p{rid}"},
                    }
                ledger.sent(key)
                _, msgs = client.post(
                    {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}, h
                )
                for m in msgs:
                    if "id" in m and "method" not in m:
                        ledger.reply(("http-legacy", wid, session, m["id"]))
                counts["http"] += 1
            client.delete(session)
            counts["sessions"] += 1
        except Exception as e:  # noqa: BLE001
            ledger.error(f"legacy http {wid}: {e!r}")
            time.sleep(0.2)
        finally:
            if client.conn:
                client.conn.close()


def modern_http_worker(port, ledger, stop, wid, counts):
    ids = itertools.count(1)
    rng = random.Random(100 + wid)
    client = Http(port)
    while not stop.is_set():
        rid = next(ids)
        key = ("http-modern", wid, rid)
        choice = rng.random()
        meta = dict(META)
        if choice < 0.1:
            method, params, name = "server/discover", {"_meta": meta}, None
        elif choice < 0.2:
            method, params, name = "tools/list", {"_meta": meta}, None
        else:
            if choice < 0.35:
                meta["progressToken"] = f"m{rid}"
                args = {"name": "probe_sleep", "arguments": {"ms": 2}}
            else:
                args = {"name": "multiply", "arguments": {"a": rid, "b": 0.1}}
            method, params, name = "tools/call", dict(args, _meta=meta), args["name"]
        h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name:
            h["Mcp-Name"] = name
        ledger.sent(key)
        try:
            _, msgs = client.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, h)
            for m in msgs:
                if "id" in m and "method" not in m:
                    ledger.reply(("http-modern", wid, m["id"]))
            counts["http"] += 1
        except Exception as e:  # noqa: BLE001
            ledger.error(f"modern http {wid}: {e!r}")


class Stdio:
    """A stdio server with a reader thread that records replies in the ledger."""

    def __init__(self, binary, ledger, channel):
        self.proc = subprocess.Popen(
            [binary, "serve", "--fixtures", "testing,probe"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.ledger = ledger
        self.channel = channel
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                self.ledger.error(f"{self.channel}: not JSON: {line[:80]!r}")
                continue
            if "id" in msg and "method" not in msg:
                self.ledger.reply((self.channel, msg["id"]))

    def send(self, msg):
        with self.lock:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.reader.join(timeout=10)


def initialize(server, ledger, rid):
    ledger.sent((server.channel, rid))
    server.send(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "soak", "version": "0"},
            },
        }
    )
    time.sleep(0.05)
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def stdio_worker(server, ledger, stop, counts):
    rng = random.Random(7)
    rid = 1
    initialize(server, ledger, "init")
    while not stop.is_set():
        for _ in range(50):
            rid += 1
            key = (server.channel, rid)
            r = rng.random()
            if r < 0.05:
                ledger.sent(key, cancelled=True)
                server.send(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "method": "tools/call",
                        "params": {"name": "probe_sleep", "arguments": {"ms": 2000}},
                    }
                )
                server.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": rid},
                    }
                )
                counts["cancel"] += 1
                continue
            ledger.sent(key)
            if r < 0.5:
                params = {"name": "add", "arguments": {"a": rid, "b": 0.25}, "_meta": META}
            elif r < 0.6:
                params = {"name": "probe_sleep", "arguments": {"ms": 3}, "_meta": {"progressToken": rid}}
            else:
                params = {"name": "multiply", "arguments": {"a": rid, "b": 3}}
            server.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
            counts["stdio"] += 1
        time.sleep(0.01)


def churn_worker(binary, ledger, stop, counts):
    n = 0
    while not stop.is_set():
        n += 1
        s = Stdio(binary, ledger, f"churn{n}")
        initialize(s, ledger, 0)
        for rid in range(1, 11):
            ledger.sent((s.channel, rid))
            s.send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": "add", "arguments": {"a": rid, "b": 1}},
                }
            )
        s.close()
        counts["sessions"] += 1
        counts["stdio"] += 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--binary", default="target/release/toolwright")
    ap.add_argument("--legacy-workers", type=int, default=3)
    ap.add_argument("--modern-workers", type=int, default=2)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    port = free_port()
    http_proc = subprocess.Popen(
        [binary, "serve", "--http", f"127.0.0.1:{port}", "--fixtures", "testing,probe"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    ledger = Ledger()
    stop = threading.Event()
    counts = {"http": 0, "stdio": 0, "sessions": 0, "cancel": 0}
    stdio = Stdio(binary, ledger, "stdio")
    threads = [threading.Thread(target=stdio_worker, args=(stdio, ledger, stop, counts))]
    threads.append(threading.Thread(target=churn_worker, args=(binary, ledger, stop, counts)))
    threads += [
        threading.Thread(target=legacy_http_worker, args=(port, ledger, stop, i, counts))
        for i in range(args.legacy_workers)
    ]
    threads += [
        threading.Thread(target=modern_http_worker, args=(port, ledger, stop, i, counts))
        for i in range(args.modern_workers)
    ]
    for t in threads:
        t.daemon = True
        t.start()
    samples = []  # (seconds, http rss, stdio rss)
    start = time.monotonic()
    end = start + args.minutes * 60
    while time.monotonic() < end:
        time.sleep(10)
        t = time.monotonic() - start
        samples.append((t, rss_kib(http_proc.pid), rss_kib(stdio.proc.pid)))
        print(
            f"{t:7.0f} s  http {samples[-1][1]} KiB  stdio {samples[-1][2]} KiB  "
            f"calls http {counts['http']} stdio {counts['stdio']} sessions {counts['sessions']}",
            file=sys.stderr,
            flush=True,
        )
    stop.set()
    for t in threads:
        t.join(timeout=30)
    time.sleep(3)  # the last replies
    stdio.close()
    http_proc.terminate()
    http_exit = http_proc.wait(timeout=30)

    window = min(600, args.minutes * 60 / 3)

    def flatness(col):
        first = [s[col] for s in samples if s[0] <= window and s[col]]
        last = [s[col] for s in samples if s[0] >= samples[-1][0] - window and s[col]]
        if not first or not last:
            return None
        a, b = statistics.mean(first), statistics.mean(last)
        return {"first_kib": round(a), "last_kib": round(b), "ratio": round(b / a, 4)}

    summary = {
        "minutes": args.minutes,
        "window_s": window,
        "binary": binary,
        "calls": counts,
        "http_rss": flatness(1),
        "stdio_rss": flatness(2),
        "http_exit": http_exit,
        "replies": ledger.summary(),
    }
    text = json.dumps(summary, indent=2)
    print(text)
    os.makedirs("bench/results", exist_ok=True)
    with open(f"bench/results/soak-{time.strftime('%Y%m%d-%H%M%S')}.json", "w") as f:
        f.write(text + "\n")
    ok = (
        summary["replies"]["lost"] == 0
        and summary["replies"]["duplicated"] == 0
        and all(s and abs(s["ratio"] - 1) <= 0.10 for s in (summary["http_rss"], summary["stdio_rss"]))
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
