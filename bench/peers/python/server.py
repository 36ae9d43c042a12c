"""Benchmark peer: the official Python MCP SDK (`mcp` 1.30.0, FastMCP) serving one `add` tool.

Written the way the SDK's README does it: a `FastMCP` server and a typed function
registered with `@mcp.tool()`. A function returning a bare `float` gets structured
output: FastMCP wraps it as `{"result": <float>}` and advertises the matching
outputSchema, which is exactly the `{result: number}` shape of the other peers.

Configuration:
* stdio: `mcp.run("stdio")`.
* HTTP: `mcp.run("streamable-http")` (uvicorn + starlette) on 127.0.0.1, legacy sessions
  (the default) with `json_response=True` (plain JSON answers, the SDK's faster mode).

Usage: `python server.py` (stdio) | `python server.py --http 127.0.0.1:PORT`.
With BENCH_EXTRA_TOOLS=N it registers N more tools (`bench_tool_0000`...) with the same
signature, for the tools/list figure.
"""

import os
import sys

from mcp.server.fastmcp import FastMCP


def add(a: float, b: float) -> float:
    """Add two numbers and return their sum."""
    return a + b


def build(host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    mcp = FastMCP(
        "bench-peer-python",
        host=host,
        port=port,
        json_response=True,
        log_level="WARNING",
    )
    mcp.tool()(add)
    extra = int(os.environ.get("BENCH_EXTRA_TOOLS", "0") or "0")
    for i in range(extra):
        mcp.add_tool(
            add,
            name=f"bench_tool_{i:04d}",
            description=f"Synthetic benchmark tool number {i}: adds two numbers.",
        )
    return mcp


def main() -> None:
    args = sys.argv[1:]
    if "--http" in args:
        addr = args[args.index("--http") + 1]
        host, _, port = addr.rpartition(":")
        build(host, int(port)).run("streamable-http")
    else:
        build().run("stdio")


if __name__ == "__main__":
    main()
