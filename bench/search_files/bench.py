#!/usr/bin/env python3
"""search_files benchmark: toolwright vs fd vs the official filesystem MCP server.

Generates (once) a tree of 100,000 files in 5,000 directories, then times, for a pattern
that matches few files and one that matches many:

- fd (`fdfind -u -g PATTERN TREE`, output read through a pipe),
- toolwright `search_files` through `toolwright serve --root TREE` over stdio,
- the official server's `search_files` through `node .../server-filesystem TREE`.

Two figures per MCP server: "cold" = spawn the server, initialize, one tools/call, exit
(comparable to one fd process); "warm" = one tools/call round trip on a running server.
Runs are interleaved (one of each tool per round) and the median is reported.
Standard library only; see run.sh for the setup.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

DIRS_TOP = 50
DIRS_SUB = 99  # 50 + 50*99 = 5,000 directories
FILES_PER_DIR = 20  # 5,000 * 20 = 100,000 files
EXTS = ["py", "rs", "txt", "md", "json"]  # 4 of each per directory: 20,000 *.py
NEEDLES = 10  # needle_N.cfg replace 10 of the *.txt files
MARK = ".tree-complete-v1"


def make_tree(root):
    if os.path.exists(os.path.join(root, MARK)):
        return
    os.makedirs(root, exist_ok=True)
    dirs = []
    for g in range(DIRS_TOP):
        top = os.path.join(root, f"g{g:02}")
        dirs.append(top)
        for s in range(DIRS_SUB):
            dirs.append(os.path.join(top, f"s{s:02}"))
    assert len(dirs) == DIRS_TOP + DIRS_TOP * DIRS_SUB == 5000
    needle_at = {len(dirs) * k // NEEDLES + 7 for k in range(NEEDLES)}
    for i, d in enumerate(dirs):
        os.makedirs(d, exist_ok=True)
        for f in range(FILES_PER_DIR):
            ext = EXTS[f % len(EXTS)]
            name = f"f{f:02}.{ext}"
            if i in needle_at and f == 2:
                name = f"needle_{i}.cfg"
            with open(os.path.join(d, name), "w") as fh:
                fh.write(name)
    # The marker is hidden: fd -u would see it, so it is not named like any pattern.
    open(os.path.join(root, MARK), "w").close()


class Stdio:
    """A minimal MCP client over a child's pipes (legacy handshake, 2025-11-25)."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.out = self.p.stdout
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        self.next += 1
        rid = self.next
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.out.readline()
            if not line:
                raise RuntimeError(f"server closed the pipe during {method}")
            msg = json.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def call(self, name, args):
        r = self.request("tools/call", {"name": name, "arguments": args})
        if r.get("isError"):
            raise RuntimeError(f"{name} failed: {r['content']}")
        return r

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def count_toolwright(r):
    return r["structuredContent"]["matched"]


def count_official(r):
    text = r["content"][0]["text"]
    return 0 if text == "No matches found" else len(text.splitlines())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True)
    ap.add_argument("--toolwright", required=True)
    ap.add_argument("--fd", default="fdfind")
    ap.add_argument("--official", required=True, help="path of server-filesystem's dist/index.js")
    ap.add_argument("--node", default="node")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--official-runs", type=int, default=3)
    ap.add_argument("--json", help="also write the medians here")
    a = ap.parse_args()

    tree = os.path.realpath(a.tree)
    t0 = time.perf_counter()
    make_tree(tree)
    print(f"tree: {tree} (ready in {time.perf_counter() - t0:.1f}s)", file=sys.stderr)

    cases = {
        "few": {"name_glob": "needle_*.cfg", "official_glob": "**/needle_*.cfg", "expect": NEEDLES},
        "many": {"name_glob": "*.py", "official_glob": "**/*.py", "expect": 20000},
    }
    # Equivalent options: fd -u searches hidden and ignored entries; so do these arguments.
    tw_args = lambda c: {"directory": tree, "pattern": c["name_glob"], "recursive": True,
                         "include_hidden": True, "respect_gitignore": False, "max_results": 1000}
    tw_argv = [a.toolwright, "serve", "--root", tree]
    of_argv = [a.node, a.official, tree]

    def fd(c):
        out = subprocess.run([a.fd, "-u", "-g", c["name_glob"], tree], stdout=subprocess.PIPE, check=True).stdout
        return len(out.splitlines())

    def cold(argv, name, args, counter):
        s = Stdio(argv)
        n = counter(s.call(name, args))
        s.close()
        return n

    samples = {}
    cpu = {}
    tick = os.sysconf("SC_CLK_TCK")

    def children_cpu():
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def proc_cpu(pid):
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tick

    def timed(key, fn, expect, pid=None):
        """Wall time, and CPU time of the process(es) doing the search: children that
        exited during `fn` (fd, cold servers), or the running server `pid` (warm)."""
        c0 = proc_cpu(pid) if pid else children_cpu()
        t = time.perf_counter()
        n = fn()
        dt = time.perf_counter() - t
        c = (proc_cpu(pid) if pid else children_cpu()) - c0
        if n != expect:
            raise SystemExit(f"{key}: found {n}, expected {expect}")
        samples.setdefault(key, []).append(dt)
        cpu.setdefault(key, []).append(c)

    warm_tw = Stdio(tw_argv)
    warm_of = Stdio(of_argv)
    try:
        for c in cases.values():
            # One untimed round warms the page cache and the servers.
            fd(c)
            count_toolwright(warm_tw.call("search_files", tw_args(c)))
        # Interleaved: every round runs every tool on every case, so a change in machine
        # load hits them alike.
        for run in range(a.runs):
            for cname, c in cases.items():
                timed(f"{cname}/fd", lambda: fd(c), c["expect"])
                timed(f"{cname}/toolwright cold", lambda: cold(tw_argv, "search_files", tw_args(c), count_toolwright), c["expect"])
                timed(f"{cname}/toolwright warm", lambda: count_toolwright(warm_tw.call("search_files", tw_args(c))), c["expect"], warm_tw.p.pid)
                if run < a.official_runs:
                    of_args = {"path": tree, "pattern": c["official_glob"]}
                    timed(f"{cname}/official cold", lambda: cold(of_argv, "search_files", of_args, count_official), c["expect"])
                    timed(f"{cname}/official warm", lambda: count_official(warm_of.call("search_files", of_args)), c["expect"], warm_of.p.pid)
    finally:
        warm_tw.close()
        warm_of.close()

    med = {k: statistics.median(v) for k, v in samples.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"\nsearch_files: {DIRS_TOP + DIRS_TOP * DIRS_SUB} directories, "
          f"{DIRS_TOP * (1 + DIRS_SUB) * FILES_PER_DIR} files; median of {a.runs} runs "
          f"({a.official_runs} for the official server); cpus: {os.cpu_count()}")
    print(f"{'case':<6} {'tool':<18} {'wall ms':>9} {'cpu ms':>8} {'runs':>5}")
    for k in samples:
        cname, tool = k.split("/")
        print(f"{cname:<6} {tool:<18} {med[k] * 1000:>9.1f} {med_cpu[k] * 1000:>8.0f} {len(samples[k]):>5}")
    print("\nratios of medians (wall time; CPU time in brackets):")
    ratios = {}
    for cname in cases:
        fd_w, fd_c = med[f"{cname}/fd"], med_cpu[f"{cname}/fd"]
        for mode in ["cold", "warm"]:
            tw_w, tw_c = med[f"{cname}/toolwright {mode}"], med_cpu[f"{cname}/toolwright {mode}"]
            of_w = med[f"{cname}/official {mode}"]
            ratios[f"{cname}/{mode}/toolwright_over_fd"] = tw_w / fd_w
            ratios[f"{cname}/{mode}/toolwright_over_fd_cpu"] = tw_c / fd_c if fd_c else None
            ratios[f"{cname}/{mode}/official_over_toolwright"] = of_w / tw_w
            print(f"  {cname:<5} {mode}: toolwright / fd = {tw_w / fd_w:.2f}x "
                  f"[{tw_c / fd_c if fd_c else float('nan'):.2f}x]   "
                  f"official / toolwright = {of_w / tw_w:.0f}x")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"medians_wall_s": med, "medians_cpu_s": med_cpu, "ratios": ratios,
                       "runs": a.runs, "official_runs": a.official_runs}, fh, indent=2)


if __name__ == "__main__":
    main()
