"""Benchmark peer setup: registers an upstream with a running ContextForge gateway.

    register.py BASE_URL UPSTREAM_URL TOKEN_FILE

Waits for BASE_URL/health, registers UPSTREAM_URL (Streamable HTTP) as gateway `up`
(its tools become `up-NAME`: ContextForge's default separator is "-"), makes a virtual
server `bench` holding `up-add`, and prints that server's MCP endpoint
(BASE_URL/servers/ID/mcp). Every request carries the bearer token in TOKEN_FILE.
Runs with bench/.venv-contextforge's Python (httpx comes with the gateway).
"""

import sys
import time

import httpx


def main() -> int:
    base, upstream, token_file = sys.argv[1:4]
    token = open(token_file, encoding="utf-8").read().strip()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
        deadline = time.monotonic() + 180
        while True:
            try:
                if c.get("/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                print("ContextForge did not answer /health within 180 s", file=sys.stderr)
                return 1
            time.sleep(0.5)
        r = c.post("/gateways", json={"name": "up", "url": upstream, "transport": "STREAMABLEHTTP"})
        if r.status_code >= 300:
            print(f"POST /gateways: HTTP {r.status_code}: {r.text[:300]}", file=sys.stderr)
            return 1
        r = c.get("/tools")
        r.raise_for_status()
        ids = [t["id"] for t in r.json() if t.get("originalName") == "add"]
        if not ids:
            print(f"no tool 'add' among the registered tools: {r.text[:300]}", file=sys.stderr)
            return 1
        r = c.post("/servers", json={"server": {"name": "bench", "associated_tools": ids[:1]}})
        if r.status_code >= 300:
            print(f"POST /servers: HTTP {r.status_code}: {r.text[:300]}", file=sys.stderr)
            return 1
        print(f"{base}/servers/{r.json()['id']}/mcp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
