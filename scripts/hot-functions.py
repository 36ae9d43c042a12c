#!/usr/bin/env python3
"""Record which functions `toolwright serve` runs, for the release link layout.

    scripts/hot-functions.py [--binary PATH]... [--out crates/cli/layout/hot-functions.txt]

By default it profiles both release builds that exist: the shipped one
(scripts/build-release.sh, static-pie on x86_64 glibc Linux) and a plain
`cargo build --release`. Their mangled names differ (the build flags enter the symbol
hashes), so the file lists each binary's functions, the shipped build's first.

Runs the release binary under `valgrind --tool=callgrind` through the work a server does in
its life (start, both eras' handshakes, tools/list with and without 1,000 extra tools,
tools/call of every arithmetic tool, the common errors, Streamable HTTP sessions, clean
exit) and writes the mangled names of every function of the binary that ran: those of
steady serving first, hottest first, then start-up-only code.

crates/cli/build.rs hands that file to the linker (`--symbol-ordering-file`), so the code a
server runs sits in a few contiguous pages instead of being spread over the whole 8 MB text
segment: fewer page faults at start-up, a smaller resident set. Names that no longer exist
are ignored by the linker, so a stale file only costs memory, never correctness; rerun this
after large changes to the serve path (bench/README.md shows the effect).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


def line(obj):
    return (json.dumps(obj) + "\n").encode()


def call(i, name, args, meta=None):
    params = {"name": name, "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


def legacy_session(calls):
    msgs = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": LEGACY, "capabilities": {},
                    "clientInfo": {"name": "layout", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    i = 10
    for n in range(calls):
        msgs.append(call(i, "add", {"a": n, "b": 2.5}))
        msgs.append(call(i + 1, "multiply", {"a": n, "b": 3}))
        i += 2
    # The errors a busy server answers every day.
    msgs += [
        call(i, "add", {"a": "x", "b": 1}),
        call(i + 1, "no_such_tool", {}),
        {"jsonrpc": "2.0", "id": i + 2, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": i + 3, "method": "tools/call", "params": {}},
    ]
    out = b"".join(line(m) for m in msgs)
    return out + b"{not json\n"


def modern_session(calls):
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "layout", "version": "1"}}
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}]
    for n in range(calls):
        msgs.append(call(2 + n, "add", {"a": n, "b": 1}, meta))
    return b"".join(line(m) for m in msgs)


def callgrind(binary, args, out_dir, tag, stdin=None, during=None):
    out = os.path.join(out_dir, f"callgrind.{tag}")
    cmd = ["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=no",
           "--compress-pos=no", f"--callgrind-out-file={out}", binary] + args
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    if during is not None:
        during(proc)
    _, err = proc.communicate(stdin, timeout=600)
    if not os.path.exists(out):
        sys.exit(f"hot-functions: callgrind wrote nothing for {tag}:\n{err.decode()[-2000:]}")
    return out


def http_workload(proc):
    # serve --http prints "toolwright: listening on URL" on stderr once bound.
    url = None
    deadline = time.time() + 120
    buf = b""
    while url is None and time.time() < deadline:
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        m = re.search(rb"listening on (\S+)", buf)
        if m:
            url = m.group(1).decode()
    if url is None:
        proc.kill()
        sys.exit("hot-functions: serve --http never said where it listens")

    def post(body, session=None):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": LEGACY}
        if session:
            headers["Mcp-Session-Id"] = session
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                resp.read()
                return resp.headers.get("Mcp-Session-Id")
        except urllib.error.HTTPError as e:
            e.read()
            return None

    for _ in range(2):
        session = post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                        "params": {"protocolVersion": LEGACY, "capabilities": {},
                                   "clientInfo": {"name": "layout", "version": "1"}}})
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
        for n in range(300):
            post(call(2 + n, "add", {"a": n, "b": 1}), session)
        post(call(99, "add", {"a": "x"}), session)
    proc.send_signal(2)  # SIGINT: the graceful shutdown path


def parse(path, obj_name):
    """Exclusive instruction counts per function of the object `obj_name`."""
    costs = {}
    ob = fn = None
    in_call = False
    with open(path, errors="replace") as f:
        for raw in f:
            if raw.startswith("ob="):
                ob = raw[3:].strip()
            elif raw.startswith("fn="):
                fn = raw[3:].strip()
                costs.setdefault((ob, fn), 0)
            elif raw.startswith("calls="):
                in_call = True
            elif raw[:1].isdigit() or raw[:1] in "+-*":
                if in_call:
                    in_call = False
                    continue
                parts = raw.split()
                if len(parts) >= 2 and fn is not None:
                    try:
                        costs[(ob, fn)] = costs.get((ob, fn), 0) + int(parts[1])
                    except ValueError:
                        pass
    out = {}
    for (o, f), c in costs.items():
        if o is not None and os.path.basename(o) == obj_name:
            out[f] = out.get(f, 0) + c
    return out


def defined_text_symbols(binary):
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                        check=True).stdout
    return {parts[2] for parts in (l.split() for l in nm.splitlines())
            if len(parts) == 3 and parts[1] in "tTwW"}


def profile(binary):
    """The functions of `binary` that a server's life runs: first those of steady serving
    (calls over stdio in both eras and over HTTP, long enough that start-up is a small
    part), hottest first, then the rest (start-up, 1,000-tool registration) by their cost."""
    serving, rest = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        runs = [
            (serving, callgrind(binary, ["serve"], tmp, "legacy",
                                stdin=legacy_session(3000))),
            (serving, callgrind(binary, ["serve"], tmp, "modern",
                                stdin=modern_session(1000))),
            (serving, callgrind(binary, ["serve", "--http", "127.0.0.1:0"], tmp, "http",
                                during=http_workload)),
            (rest, callgrind(binary, ["serve", "--fixtures", "bulk:1000"], tmp, "list",
                             stdin=legacy_session(5))),
        ]
        for into, path in runs:
            for fn, c in parse(path, os.path.basename(binary)).items():
                into[fn] = into.get(fn, 0) + c
    known = defined_text_symbols(binary)
    first = sorted((f for f in serving if f in known), key=lambda f: (-serving[f], f))
    later = sorted((f for f in rest if f in known and f not in serving),
                   key=lambda f: (-rest[f], f))
    unknown = len(set(serving) | set(rest)) - len(first) - len(later)
    print(f"hot-functions: {os.path.relpath(binary, ROOT)}: {len(first)} serving + "
          f"{len(later)} start-up functions ({unknown} not in the symbol table)")
    return first + later


def default_binaries():
    shipped = subprocess.run([os.path.join(ROOT, "scripts/build-release.sh"), "--path"],
                             capture_output=True, text=True, check=True).stdout.strip()
    plain = os.path.join(ROOT, "target/release/toolwright")
    found = [b for b in dict.fromkeys([shipped, plain]) if os.access(b, os.X_OK)]
    if not found:
        sys.exit("hot-functions: no release binary (scripts/build-release.sh)")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", action="append",
                    help="binary to profile (repeatable; default: the release builds present)")
    ap.add_argument("--out", default=os.path.join(ROOT, "crates/cli/layout/hot-functions.txt"))
    a = ap.parse_args()
    binaries = [os.path.abspath(b) for b in a.binary] if a.binary else default_binaries()
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"hot-functions: no binary at {b} (scripts/build-release.sh)")

    names = []
    for b in binaries:
        names.extend(profile(b))
    names = list(dict.fromkeys(names))  # a name shared by both builds keeps its first place
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        for name in names:
            f.write(name + "\n")
    print(f"hot-functions: {len(names)} names -> {os.path.relpath(a.out, ROOT)}")


if __name__ == "__main__":
    main()
