"""The official Python SDK client (`mcp` 1.30, tests/peers/.venv) with its OAuth provider
(`mcp.client.auth.OAuthClientProvider`) in front, for crates/cli/tests/it/auth_introspect.rs.

Usage: python py_oauth_client.py MCP_URL

The provider finds the resource's metadata after the first 401, registers with the
authorization server, and sends the user to its authorization URL; here the redirect handler
fetches that URL (the TypeScript SDK's demo server approves at once) and keeps the code its
redirect carries, which the callback handler hands back. Then it lists the tools and calls
`add`. Prints one JSON line: {"tools", "result", "token"}.
"""

import asyncio
import json
import sys
from urllib.parse import parse_qs, urlparse

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.info = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.info = client_info


async def main(url: str) -> None:
    seen = {}

    async def redirect(authorization_url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=False) as http:
            r = await http.get(authorization_url)
        query = parse_qs(urlparse(r.headers["location"]).query)
        seen["code"] = query["code"][0]
        seen["state"] = query.get("state", [None])[0]

    async def callback() -> tuple[str, str | None]:
        return seen["code"], seen["state"]

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="toolwright-py-oauth-test",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    async with streamablehttp_client(url, auth=provider) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("add", {"a": 2, "b": 3})
    print(
        json.dumps(
            {
                "tools": [t.name for t in tools.tools],
                "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
                "token": storage.tokens.access_token if storage.tokens else None,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
