"""A small MCP server written with the official Python SDK (`mcp` 1.30, FastMCP).

It is a peer for toolwright's lint and client integration tests: tool definitions as the
Python SDK generates them from type hints, served over stdio (the default) or Streamable
HTTP on 127.0.0.1 (`--http PORT`; port 0 picks a free one and prints it on stderr).

    python py_server.py                # stdio
    python py_server.py --http 0       # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

import socket
import sys
from typing import Annotated

from pydantic import BaseModel, Field

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

mcp = FastMCP("toolwright-py-peer")


class Sum(BaseModel):
    """The sum of two integers."""

    result: int = Field(description="a + b")


@mcp.tool(
    annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
)
def add(
    a: Annotated[int, Field(description="First addend")],
    b: Annotated[int, Field(description="Second addend")],
) -> Sum:
    """Add two integers and return their sum as {"result": a + b}. Use it for exact integer arithmetic."""
    return Sum(result=a + b)


@mcp.tool()
def echo(message: str, repeat: int = 1) -> str:
    """Echo a message back."""
    return " ".join([message] * repeat)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True))
def get_time(zone: str = "UTC") -> str:
    """Returns the current time in the given zone as an ISO 8601 string."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat()


@mcp.tool(annotations=ToolAnnotations(title="Delete a note", openWorldHint=False))
def delete_note(note_id: Annotated[str, Field(description="Id of the note")]) -> str:
    """Delete the note with this id. Returns a confirmation sentence."""
    return f"deleted {note_id}"


@mcp.tool(annotations=ToolAnnotations(openWorldHint=False))
def list_notes() -> list[str]:
    """List the ids of every note. Returns the ids sorted alphabetically."""
    return sorted(["n1", "n2"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        port = int(sys.argv[2]) or free_port()
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = port
        mcp.settings.log_level = "WARNING"
        print(f"listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        mcp.run("streamable-http")
    else:
        mcp.run("stdio")
