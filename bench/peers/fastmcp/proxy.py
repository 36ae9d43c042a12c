"""Benchmark peer: FastMCP's proxy (PyPI `fastmcp`), fronting one upstream MCP server.

    proxy.py [--http 127.0.0.1:PORT] [--shared] (--url URL | -- CMD ARGS...)

Upstream: a stdio command (after --) or a Streamable HTTP URL. Downstream: stdio, or
Streamable HTTP on /mcp with --http (legacy sessions, JSON answers). The upstream's
tools keep their names (FastMCP's proxy does not namespace a single backend).

By default FastMCP builds a fresh backend client session for every request
(`create_proxy(target)`: no context leaks between requests; a stdio upstream's process is
kept alive between them). --shared hands it one connected client instead, reused by every
request (what its docs call reuse of a connected session, with a warning about context
mixing). bench/run measures both once and uses the faster (see bench/README.md).
"""

import argparse
import asyncio
import logging
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.server import create_proxy


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--http", help="serve Streamable HTTP on HOST:PORT instead of stdio")
    p.add_argument("--url", help="upstream Streamable HTTP URL (else the command after --)")
    p.add_argument("--shared", action="store_true", help="one connected upstream session for every request")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if bool(a.url) == bool(cmd):
        p.error("give either --url URL or an upstream command after --")
    if a.url:
        transport = StreamableHttpTransport(a.url)
    else:
        transport = StdioTransport(command=cmd[0], args=cmd[1:], keep_alive=True)
    # Quiet: at INFO it logs per request.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    for name in ("fastmcp", "mcp", "uvicorn", "uvicorn.access", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    asyncio.run(serve(a, transport))


async def serve(a: argparse.Namespace, transport) -> None:
    if a.shared:
        client = Client(transport)
        async with client:
            await run(create_proxy(client, name="fastmcp-proxy"), a)
    else:
        await run(create_proxy(transport, name="fastmcp-proxy"), a)


async def run(proxy, a: argparse.Namespace) -> None:
    if a.http:
        host, port = a.http.rsplit(":", 1)
        await proxy.run_http_async(
            show_banner=False,
            transport="http",
            host=host,
            port=int(port),
            path="/mcp",
            log_level="warning",
            json_response=True,
        )
    else:
        await proxy.run_stdio_async(show_banner=False)


if __name__ == "__main__":
    main()
