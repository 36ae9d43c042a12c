"""The official Python SDK client (`mcp` 1.30, tests/peers/.venv) with its OAuth provider
(`mcp.client.auth.OAuthClientProvider`) in front, given one access token, for
crates/cli/tests/it/auth_jwt_sdk.rs.

Usage: TW_TOKEN=... python py_jwt_client.py MCP_URL

The token comes from the environment (empty or unset: none); the provider's storage holds it
and a client registered beforehand (a fixed client_id). A 401 sends the provider through
discovery (the resource's metadata, then the authorization server's) to the redirect
handler, which records the authorization URL; no one approves here, so the callback handler
gives up with `AuthorizationRequired`, which the client raises (out of the transport's task
group). On success the client lists the tools and calls
`add`. Every HTTP response the client gets is recorded: [method, url, status,
WWW-Authenticate].
Prints one JSON line: {outcome, error_type, error, redirect, requests, tools, result}.
"""

import asyncio
import json
import os
import sys
from datetime import timedelta

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"


class AuthorizationRequired(Exception):
    """The flow reached the point where a person would have to approve."""


class Given(TokenStorage):
    def __init__(self, token: str | None):
        self.tokens = OAuthToken(access_token=token, token_type="Bearer") if token else None
        self.info = OAuthClientInformationFull(client_id="test-client", redirect_uris=[REDIRECT])

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raise RuntimeError("no token is issued here")

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.info = client_info


async def main(url: str) -> None:
    seen = {"outcome": "ok", "redirect": None, "requests": []}

    async def redirect(authorization_url: str) -> None:
        seen["redirect"] = authorization_url

    async def callback() -> tuple[str, str | None]:
        raise AuthorizationRequired("authorization needs a person; none here")

    async def record(response: httpx.Response) -> None:
        seen["requests"].append(
            [
                response.request.method,
                str(response.request.url),
                response.status_code,
                response.headers.get("www-authenticate"),
            ]
        )

    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="toolwright-py-jwt-test",
            redirect_uris=[REDIRECT],
            token_endpoint_auth_method="none",
        ),
        storage=Given(os.environ.get("TW_TOKEN") or None),
        redirect_handler=redirect,
        callback_handler=callback,
    )
    http = create_mcp_http_client(auth=provider)
    http.event_hooks["response"].append(record)

    try:
        async with http, streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=20)) as session:
                await session.initialize()
                tools = await session.list_tools()
                seen["tools"] = [t.name for t in tools.tools]
                result = await session.call_tool("add", {"a": 2, "b": 3})
                seen["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    except Exception as e:  # the auth flow's error comes out of the transport's task group
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        seen["outcome"] = "error"
        seen["error_type"] = type(e).__name__
        seen["error"] = str(e)
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
