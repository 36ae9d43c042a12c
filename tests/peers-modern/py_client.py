"""The official Python SDK client as a driver for the gateway tests
(crates/cli/tests/it/gateway.rs). Runs on either pinned SDK:

- tests/peers/.venv (`mcp` 1.30: the handshake era only), and
- tests/peers-modern/.venv (`mcp` 2.3: `server/discover` first, 2026-07-28).

Usage (the same steps as tests/node/gateway_client.mjs):

    python py_client.py [--era auto|modern|legacy] [--elicit JSON] [--sample TEXT]
                        (--url URL | --stdio JSON_ARGV) STEP...

Each STEP is a JSON object:
    {"op":"list"}                               -> {"tools":[...]} (every page)
    {"op":"call","name":N,"arguments":{...}}   -> {"result":{...},"ms":N} or {"error":"...","ms":N}
    {"op":"call",...,"progress":true}           -> also {"progress":[{progress,total,message}]}
    {"op":"call",...,"cancel_after_ms":MS}      -> {"outcome":"cancelled"|"completed", ...}
    {"op":"call",...,"cancel_after_progress":N} -> the same, cancelled at the Nth progress
    {"op":"sleep","ms":MS}                      -> {}
    {"op":"until_ok","within_ms":MS,"step":STEP} -> STEP's outcome, STEP run again every
                                                   100 ms while it fails, for up to MS
A failed step gives {"error":"..."} and the run goes on. `--era` applies to `mcp` 2.3 only
(auto probes with server/discover; modern adopts 2026-07-28 without a probe; legacy does
the handshake). Prints one JSON line: {"sdk","protocolVersion","server","steps":[...]}.
"""

import json
import os
import sys
import time
from importlib.metadata import version
from typing import Any

import anyio

import mcp.types as types
from mcp import ClientSession, StdioServerParameters

SDK = version("mcp")
MODERN_SDK = int(SDK.split(".")[0]) >= 2


def usage(why: str) -> None:
    print(f"py_client.py: {why}", file=sys.stderr)
    sys.exit(2)


def parse(argv: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    opt: dict[str, Any] = {"era": "auto", "elicit": None, "sample": None, "url": None, "stdio": None}
    steps = []
    it = iter(argv)
    for a in it:
        if a in ("--era", "--elicit", "--sample", "--url", "--stdio"):
            value = next(it, None)
            if value is None:
                usage(f"{a} needs a value")
            key = a[2:]
            opt[key] = json.loads(value) if key in ("elicit", "stdio") else value
        else:
            steps.append(json.loads(a))
    if (opt["url"] is None) == (opt["stdio"] is None):
        usage("give exactly one of --url and --stdio")
    return opt, steps


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def message(e: BaseException) -> str:
    error = getattr(e, "error", None)
    if error is not None and getattr(error, "code", None) is not None:
        return f"{error.message} ({error.code})"
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(message(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}"


class Driver:
    """Runs the steps on a connected session (`mcp` 1.x) or client (`mcp` 2.x)."""

    def __init__(self, conn: Any, session: ClientSession) -> None:
        self.conn = conn
        self.session = session

    async def list(self) -> dict[str, Any]:
        tools, cursor = [], None
        while True:
            if MODERN_SDK:
                page = await self.conn.list_tools(cursor=cursor)
            else:
                page = await self.session.list_tools(cursor=cursor)
            tools.extend(dump(t) for t in page.tools)
            cursor = page.nextCursor if not MODERN_SDK else page.next_cursor
            if not cursor:
                return {"tools": tools}

    async def call(self, step: dict[str, Any]) -> dict[str, Any]:
        progress: list[dict[str, Any]] = []

        after_progress = step.get("cancel_after_progress")
        scopes: list[anyio.CancelScope] = []

        async def on_progress(p: float, total: float | None, msg: str | None) -> None:
            progress.append({"progress": p, "total": total, "message": msg})
            if after_progress is not None and len(progress) >= after_progress:
                for scope in scopes:
                    scope.cancel()

        cancels = "cancel_after_ms" in step or after_progress is not None
        wants_progress = step.get("progress") or cancels
        callback = on_progress if wants_progress else None
        name, arguments = step["name"], step.get("arguments", {})

        async def call() -> Any:
            if MODERN_SDK:
                return await self.conn.call_tool(name, arguments, progress_callback=callback)
            return await self.session.call_tool(name, arguments, progress_callback=callback)

        started = time.monotonic()
        if not cancels:
            try:
                out: dict[str, Any] = {"result": dump(await call())}
            except Exception as e:  # noqa: BLE001 - reported, not hidden
                out = {"error": message(e)}
            if wants_progress:
                out["progress"] = progress
            out["ms"] = int((time.monotonic() - started) * 1000)
            return out

        # mcp 2.x sends notifications/cancelled itself when the call is abandoned; mcp 1.x
        # does not, so the driver sends it with the id the session is about to use.
        request_id = None if MODERN_SDK else self.session._request_id
        outcome: dict[str, Any] = {"outcome": "cancelled"}
        with anyio.move_on_after(step.get("cancel_after_ms", 60000) / 1000) as scope:
            scopes.append(scope)
            try:
                outcome = {"outcome": "completed", "result": dump(await call())}
            except Exception as e:  # noqa: BLE001 - reported, not hidden
                outcome = {"outcome": "error", "error": message(e)}
        if outcome["outcome"] == "cancelled" and request_id is not None:
            await self.session.send_notification(
                types.ClientNotification(
                    types.CancelledNotification(
                        params=types.CancelledNotificationParams(requestId=request_id, reason="cancelled by the test")
                    )
                )
            )
        outcome["progress"] = progress
        outcome["ms"] = int((time.monotonic() - started) * 1000)
        return outcome

    async def run(self, step: dict[str, Any]) -> dict[str, Any]:
        op = step.get("op")
        if op == "list":
            return await self.list()
        if op == "call":
            return await self.call(step)
        if op == "sleep":
            await anyio.sleep(step["ms"] / 1000)
            return {}
        if op == "until_ok":
            deadline = time.monotonic() + step["within_ms"] / 1000
            while True:
                out = await self.run(step["step"])
                failed = "error" in out or (out.get("result") or {}).get("isError") is True
                if not failed or time.monotonic() > deadline:
                    return out
                await anyio.sleep(0.1)
        raise ValueError(f"unknown op {op!r}")


def callbacks(opt: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if opt["elicit"] is not None:
        answer = opt["elicit"]

        async def elicit(_ctx: Any, _params: Any) -> Any:
            return types.ElicitResult(action=answer["action"], content=answer.get("content"))

        out["elicitation_callback"] = elicit
    if opt["sample"] is not None:
        text = opt["sample"]

        async def sample(_ctx: Any, _params: Any) -> Any:
            return types.CreateMessageResult(
                role="assistant", content=types.TextContent(type="text", text=text), model="fixed-answer"
            )

        out["sampling_callback"] = sample
    return out


async def run_steps(driver: Driver, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results = []
    for step in steps:
        try:
            results.append(await driver.run(step))
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            results.append({"error": message(e)})
    return results


async def modern(opt: dict[str, Any], steps: list[dict[str, Any]], out: dict[str, Any]) -> None:
    from mcp import Client

    if opt["url"] is not None:
        server: Any = opt["url"]
    else:
        argv = opt["stdio"]
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    mode = {"auto": "auto", "legacy": "legacy", "modern": "2026-07-28"}[opt["era"]]
    async with Client(server, mode=mode, **callbacks(opt)) as client:
        info = client.server_info
        out["protocolVersion"] = client.protocol_version
        out["server"] = dump(info) if info is not None else None
        out["steps"] = await run_steps(Driver(client, client.session), steps)


async def legacy(opt: dict[str, Any], steps: list[dict[str, Any]], out: dict[str, Any]) -> None:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        if opt["url"] is not None:
            from mcp.client.streamable_http import streamablehttp_client

            read, write, _ = await stack.enter_async_context(streamablehttp_client(opt["url"]))
        else:
            from mcp.client.stdio import stdio_client

            argv = opt["stdio"]
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
            read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write, **callbacks(opt)))
        init = await session.initialize()
        out["protocolVersion"] = init.protocolVersion
        out["server"] = dump(init.serverInfo)
        out["steps"] = await run_steps(Driver(session, session), steps)


def main() -> None:
    opt, steps = parse(sys.argv[1:])
    out: dict[str, Any] = {}
    try:
        anyio.run(modern if MODERN_SDK else legacy, opt, steps, out)
    except BaseException as e:  # noqa: BLE001 - the test reads the reason
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        if "steps" in out:
            # The steps ran; only the teardown failed (mcp 1.x drops messages that arrive
            # while it closes and raises for them).
            out["teardownError"] = message(e)
        else:
            out["connectError"] = message(e)
    out["sdk"] = f"python mcp {SDK}"
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
