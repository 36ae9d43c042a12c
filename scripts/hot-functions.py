#!/usr/bin/env python3
"""Record which functions `toolwright serve` runs, for the release link layout; check it.

    scripts/hot-functions.py [--binary PATH]... [--out crates/cli/layout/hot-functions.txt]
    scripts/hot-functions.py --check PATH [--build LABEL] [--min FRACTION]

By default it profiles both release builds that exist: the shipped one
(scripts/build-release.sh --symbols-path: the shipped link before its symbol table is
stripped; static-pie on x86_64 glibc Linux; section `shipped`) and a plain
`cargo build --profile dist` (section `plain`). Their mangled names differ (the build flags
enter the symbol hashes), so the file has one section of names per build, the shipped
build's first. A section whose binary is not profiled is kept as it is.

Runs the release binary under `valgrind --tool=callgrind` through the work a server does in
its life (start, both eras' handshakes, tools/list with and without 1,000 extra tools,
tools/call of every arithmetic tool, the common errors, Streamable HTTP sessions, clean
exit) and writes the mangled names of every function of the binary that ran: first those
that serving runs, then those that only start-up runs. Each group is in the order of the
demangled names without their hashes, not of the measured costs: the same binary gives the
same file (costs move from run to run with thread timing, names do not), and after a change
a renamed function keeps its line. Each workload runs twice and a function counts only if
both runs put it in the same group, so that code only thread timing reaches (a contended
lock, malloc trimming) stays out.

crates/cli/build.rs hands that file to the linker (`--symbol-ordering-file`), so the code a
server runs sits in a few contiguous pages instead of being spread over the whole 8 MB text
segment: fewer page faults at start-up, a smaller resident set. Names that no longer exist
are ignored by the linker, so a stale file costs memory without a word. `--check` says how
stale it is for a built binary: the share of the section's names that the binary still
defines, and whether the linker placed them in the file's order (a binary linked with
TOOLWRIGHT_PLAIN_LINK=1 has the names but not the order). It exits 1 below `--min`
(default 0.9) or when the order was not applied; bench/run runs it on every full run.
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
    if during is None:
        # Requests from a file and answers to a file, not pipes: the server then reads the
        # same chunks and never waits on a slow reader, whatever the machine's load, so the
        # run does the same work every time.
        with open(os.path.join(out_dir, f"{tag}.in"), "wb") as f:
            f.write(stdin or b"")
        with open(os.path.join(out_dir, f"{tag}.in"), "rb") as i, \
                open(os.path.join(out_dir, f"{tag}.out"), "wb") as o, \
                open(os.path.join(out_dir, f"{tag}.err"), "w+b") as e:
            subprocess.run(cmd, stdin=i, stdout=o, stderr=e, timeout=600)
            e.seek(0)
            err = e.read()
    else:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        during(proc)
        _, err = proc.communicate(None, timeout=600)
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


def text_symbols(binary):
    """Defined function symbols of `binary`: mangled name -> (address, sort key). The key is
    the demangled name (nm drops the legacy hash suffix), then the mangled name."""
    def nm(*extra):
        out = subprocess.run(["nm", "--defined-only", *extra, binary], capture_output=True,
                             text=True, check=True).stdout
        return [l.split(" ", 2) for l in out.splitlines()]
    syms = {}
    for raw, dem in zip(nm(), nm("--demangle")):
        if len(raw) == 3 and raw[1] in "tTwW":
            syms[raw[2]] = (int(raw[0], 16), (dem[2] if len(dem) == 3 else raw[2], raw[2]))
    return syms


def profile(binary):
    """The functions of `binary` that a server's life runs: first those of steady serving
    (calls over stdio in both eras and over HTTP), then those only start-up and the
    1,000-tool registration run, each group in name order. Each workload runs twice; a
    function counts only if both runs put it in the same group."""
    def workloads(tmp, n):
        return [
            ("serving", callgrind(binary, ["serve"], tmp, f"legacy{n}",
                                  stdin=legacy_session(3000))),
            ("serving", callgrind(binary, ["serve"], tmp, f"modern{n}",
                                  stdin=modern_session(1000))),
            ("serving", callgrind(binary, ["serve", "--http", "127.0.0.1:0"], tmp, f"http{n}",
                                  during=http_workload)),
            ("rest", callgrind(binary, ["serve", "--fixtures", "bulk:1000"], tmp, f"list{n}",
                               stdin=legacy_session(5))),
        ]
    seen = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(2):
            ran = {"serving": set(), "rest": set()}
            for group, path in workloads(tmp, n):
                ran[group].update(f for f, c in parse(path, os.path.basename(binary)).items() if c)
            seen.append(ran)
    # A function that only thread timing brings in (a contended lock, malloc trimming) may
    # run in one run and not the other, or in serving once and in start-up once: it is left
    # out, so that few such lines come and go between regenerations.
    group = [{f: g for g in ("rest", "serving") for f in ran[g]} for ran in seen]
    stable = {f for f in group[0] if group[1].get(f) == group[0][f]}
    serving = {f for f in stable if group[0][f] == "serving"}
    rest = stable - serving
    once = (set(group[0]) | set(group[1])) - stable
    syms = text_symbols(binary)
    first = sorted((f for f in serving if f in syms), key=lambda f: syms[f][1])
    later = sorted((f for f in rest if f in syms), key=lambda f: syms[f][1])
    unknown = len(serving | rest) - len(first) - len(later)
    print(f"hot-functions: {os.path.relpath(binary, ROOT)}: {len(first)} serving + "
          f"{len(later)} start-up functions ({unknown} not in the symbol table, "
          f"{len(once)} that the two runs disagree on left out)")
    return first, later


def shipped_binary():
    """The shipped build before its symbol table is stripped (same code, same addresses)."""
    return subprocess.run([os.path.join(ROOT, "scripts/build-release.sh"), "--symbols-path"],
                          capture_output=True, text=True, check=True).stdout.strip()


def plain_binary():
    return os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"),
                        "dist", "toolwright")


def label_of(binary):
    if os.path.abspath(binary) == os.path.abspath(shipped_binary()):
        return "shipped"
    if os.path.abspath(binary) == os.path.abspath(plain_binary()):
        return "plain"
    return os.path.relpath(binary, ROOT)


def default_binaries():
    found = [b for b in dict.fromkeys([shipped_binary(), plain_binary()]) if os.access(b, os.X_OK)]
    if not found:
        sys.exit("hot-functions: no release binary (scripts/build-release.sh)")
    return found


SECTION = "# build "
HEADER = """\
# Release link order of the toolwright binary: crates/cli/build.rs hands this file to the
# linker (--symbol-ordering-file). Written by scripts/hot-functions.py; do not edit by hand.
# One section per build (the build flags enter the mangled names), each with the functions
# that serving runs, then those that only start-up runs, in name order. A name that two
# builds share is listed once, in the first section. Lines starting with # are comments.
"""


def read_sections(path):
    """[(label, header line, [names])] of an ordering file."""
    sections = []
    if not os.path.exists(path):
        return sections
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if line.startswith(SECTION):
                sections.append((line[len(SECTION):].split()[0].rstrip(":"), line, []))
            elif line and not line.startswith("#"):
                if not sections:
                    sections.append(("unlabelled", SECTION + "unlabelled", []))
                sections[-1][2].append(line)
    return sections


def write(path, sections):
    """sections: [(label, header line, [comment-or-name lines])]."""
    listed = set()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(HEADER)
        for _, header, lines in sections:
            f.write(header + "\n")
            for line in lines:
                if line.startswith("#"):
                    f.write(line + "\n")
                elif line not in listed:
                    listed.add(line)
                    f.write(line + "\n")
    return len(listed)


def check(binary, path, build, minimum):
    sections = read_sections(path)
    if not sections:
        print(f"hot-functions: {os.path.relpath(path, ROOT)} lists no names")
        return 1
    syms = text_symbols(binary)
    if not syms:
        print(f"hot-functions: {os.path.relpath(binary, ROOT)} has no symbol table (stripped?): "
              "check the build before stripping (scripts/build-release.sh --symbols-path)")
        return 1
    scored = []
    for label, _, names in sections:
        present = [n for n in names if n in syms]
        scored.append((label, names, present, len(present) / len(names) if names else 0.0))
    if build is None and any(s[0] == label_of(binary) for s in scored):
        build = label_of(binary)
    if build is not None:
        chosen = [s for s in scored if s[0] == build]
        if not chosen:
            print(f"hot-functions: {os.path.relpath(path, ROOT)} has no section '{build}'")
            return 1
        label, names, present, share = chosen[0]
    else:
        label, names, present, share = max(scored, key=lambda s: s[3])
    # The linker puts the listed functions at the start of .text in the file's order: in a
    # binary linked with the list most neighbouring pairs of them are ascending (not all:
    # some share a section, as libc's do), in one linked without it about half.
    addrs = [syms[n][0] for n in present]
    pairs = list(zip(addrs, addrs[1:]))
    ascending = sum(1 for a, b in pairs if b >= a) / len(pairs) if pairs else 0.0
    applied = ascending >= 0.75
    print(f"hot-functions: {os.path.relpath(binary, ROOT)}: {len(present)} of {len(names)} "
          f"names of section '{label}' defined ({share:.1%}, minimum {minimum:.0%}); "
          f"order {'applied' if applied else 'NOT applied'} ({ascending:.1%} of neighbours ascending)")
    if share < minimum:
        print("hot-functions: the list is stale: rerun scripts/hot-functions.py (bench/README.md)")
    return 0 if share >= minimum and applied else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", action="append",
                    help="binary to profile (repeatable; default: the release builds present)")
    ap.add_argument("--out", default=os.path.join(ROOT, "crates/cli/layout/hot-functions.txt"),
                    help="the ordering file (written, or read by --check)")
    ap.add_argument("--check", metavar="PATH", help="check the file against this binary")
    ap.add_argument("--build", help="section to check (default: the binary's own, shipped or "
                    "plain, if it is one of the release builds; else the one that matches best)")
    ap.add_argument("--min", type=float, default=0.9,
                    help="smallest share of the section's names the binary must define")
    a = ap.parse_args()
    if a.check:
        if not os.access(a.check, os.X_OK):
            sys.exit(f"hot-functions: no binary at {a.check}")
        sys.exit(check(a.check, a.out, a.build, a.min))

    binaries = [os.path.abspath(b) for b in a.binary] if a.binary else default_binaries()
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"hot-functions: no binary at {b} (scripts/build-release.sh)")

    fresh = {}
    for b in binaries:
        label = label_of(b)
        first, later = profile(b)
        fresh[label] = (f"{SECTION}{label}: the functions of {os.path.relpath(b, ROOT)}",
                        ["# serving"] + first + ["# start-up only"] + later)
    # The sections of builds not profiled this time stay as they were; shipped comes first.
    sections = [(label, *fresh[label]) for label in fresh]
    sections += [(label, header, names) for label, header, names in read_sections(a.out)
                 if label not in fresh]
    rank = {"shipped": 0, "plain": 1}
    sections.sort(key=lambda s: rank.get(s[0], 2))
    total = write(a.out, sections)
    print(f"hot-functions: {total} names -> {os.path.relpath(a.out, ROOT)}")


if __name__ == "__main__":
    main()
