"""An MCP server on the official Python SDK `mcp` 2.3 that speaks ONLY 2026-07-28.

A peer for the gateway's integration tests (crates/cli/tests/it/gateway.rs): the upstream
a legacy client reaches through toolwright. The SDK serves both eras by default; the
middleware below refuses the `initialize` handshake (the SDK documents `Server.middleware`
as the place to wrap initialization), so a legacy client gets error -32022 and only the
per-request 2026-07-28 envelope works. `server/discover` already names only 2026-07-28.

Tools:
- `add` (a, b) -> {"result": a + b}, with an outputSchema;
- `slow` (steps, interval_ms) reports progress after each step and can be cancelled; how
  it ended ("slow completed" / "slow cancelled after N steps") goes to stderr and, when
  the environment has MODERN_PEER_EVENTS=FILE, is appended to that file;
- `greet` needs input: it asks the client for a name (elicitation, which at 2026-07-28 is
  an `input_required` result and a retry with `inputResponses`) and returns "Hello, NAME!".

The description of `add` can be changed with MODERN_PEER_ADD_DESCRIPTION (for the
pinning tests).

    python modern_server.py                # stdio
    python modern_server.py --http 0       # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

import os
import socket
import sys
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations

UNSUPPORTED_PROTOCOL_VERSION = -32022


async def refuse_handshake(ctx: Any, call_next: Any) -> Any:
    """Refuse the legacy `initialize` handshake: this server speaks only 2026-07-28."""
    if ctx.method == "initialize":
        raise MCPError(
            code=UNSUPPORTED_PROTOCOL_VERSION,
            message="this server speaks only protocol 2026-07-28; initialize is not accepted",
            data={"supported": ["2026-07-28"], "requested": (ctx.params or {}).get("protocolVersion")},
        )
    return await call_next(ctx)


mcp = MCPServer("toolwright-modern-peer", middleware=[refuse_handshake])


def event(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    path = os.environ.get("MODERN_PEER_EVENTS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


class Sum(BaseModel):
    """The sum of two integers."""

    result: int = Field(description="a + b")


@mcp.tool(
    description=os.environ.get(
        "MODERN_PEER_ADD_DESCRIPTION",
        'Add two integers and return their sum as {"result": a + b}.',
    ),
    annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False),
)
def add(
    a: Annotated[int, Field(description="First addend")],
    b: Annotated[int, Field(description="Second addend")],
) -> Sum:
    return Sum(result=a + b)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
async def slow(
    ctx: Context,
    steps: Annotated[int, Field(description="How many steps to take")] = 5,
    interval_ms: Annotated[int, Field(description="Milliseconds per step")] = 100,
) -> str:
    """Take `steps` steps of `interval_ms` each, reporting progress after every step."""
    done = 0
    try:
        for _ in range(steps):
            await anyio.sleep(interval_ms / 1000)
            done += 1
            await ctx.report_progress(done, steps, f"step {done} of {steps}")
    except anyio.get_cancelled_exc_class():
        event(f"slow cancelled after {done} steps")
        raise
    event("slow completed")
    return f"took {steps} steps"


class Name(BaseModel):
    """What `greet` asks the client for."""

    name: str = Field(description="Your name")


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Ask the client for a name, then greet it."""
    return f"Hello, {who.name}!"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        port = int(sys.argv[2]) or free_port()
        print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        mcp.run("streamable-http", host="127.0.0.1", port=port)
    else:
        mcp.run("stdio")
