"""A legacy HTTP+SSE MCP server (protocol 2024-11-05) for the e2e tests: the official MCP Python
SDK's own SSE transport (`MCPServer.sse_app()`: `GET /sse` is the event stream, messages are
POSTed to `/messages/?session_id=...`) under uvicorn, with hostile variants behind flags.

Run with `python sse_server.py --port N [options]`. It prints `ready` on stdout once listening.
Options:

- `--log PATH`: one JSON line per request: method, path, Accept, the `X-Api-Key` it carried,
  whether it carried `Authorization`, and the status it was answered with.
- `--require-key KEY`: requests without `X-Api-Key: KEY` get 403 (headers must reach both the
  stream and the messages).
- `--foreign-endpoint URL`: `GET /sse` answers a hand-written event stream whose `endpoint`
  event names URL (another origin), then stays open.
- `--cut`: the event carrying the answer of the tool `cut` is sent half, then the stream ends.
- `--fail-calls STATUS`: POSTed `tools/call` messages are answered STATUS (500) and dropped.
- `--sse-post-status STATUS`: a POST to `/sse` is answered STATUS (default: Starlette's 405).
- `--streamable`: serve the same tools over the SDK's streamable HTTP at `/mcp` instead.
- `--reject-post STATUS`: (with `--streamable`) every POST is answered STATUS (401, 403, ...).

Tools: `reverse_text(text)`, `add_numbers(a, b)`, `cut()`, `huge(mib)` (a result of that many
MiB, to exceed the client's event limit), `count_calls()`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

import anyio
import uvicorn

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

CUT_MARKER = "CUT-HERE-" + "x" * 64


def build(args: argparse.Namespace) -> Any:
    mcp = MCPServer("legacy-sse-test")
    calls: Counter[str] = Counter()

    @mcp.tool(description="Reverse a string of text (legacy SSE test server).")
    def reverse_text(text: str) -> dict[str, str]:
        calls["reverse_text"] += 1
        return {"reversed": text[::-1]}

    @mcp.tool(description="Add two numbers together (legacy SSE test server).")
    def add_numbers(a: float, b: float) -> dict[str, float]:
        calls["add_numbers"] += 1
        return {"sum": a + b}

    @mcp.tool(description="Answer with a marker the hostile variant cuts in half (test helper).")
    def cut() -> str:
        calls["cut"] += 1
        return CUT_MARKER

    @mcp.tool(description="Answer with `mib` MiB of text (test helper).")
    def huge(mib: int) -> str:
        calls["huge"] += 1
        return "y" * (mib * 1024 * 1024)

    @mcp.tool(description="How many calls this process has served, per tool (test helper).")
    def count_calls() -> dict[str, int]:
        return dict(calls)

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    if args.streamable:
        return mcp.streamable_http_app(transport_security=security)
    return mcp.sse_app(transport_security=security)


def header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def foreign_stream(send: Any, url: str) -> None:
    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
    })
    await send({"type": "http.response.body", "body": f"event: endpoint\r\ndata: {url}\r\n\r\n".encode(), "more_body": True})
    await anyio.sleep(3600)


class Hostile:
    """ASGI middleware: logging, the header check and the hostile behaviours."""

    def __init__(self, app: Any, args: argparse.Namespace) -> None:
        self.app = app
        self.args = args

    def log(self, scope: dict[str, Any], status: int) -> None:
        if not self.args.log:
            return
        record = {
            "method": scope["method"],
            "path": scope["path"],
            "accept": header(scope, b"accept"),
            "key": header(scope, b"x-api-key"),
            "authorization": header(scope, b"authorization") is not None,
            "status": status,
        }
        with open(self.args.log, "a") as f:
            f.write(json.dumps(record) + "\n")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        args = self.args
        status_seen: list[int] = []

        async def send_logged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and not status_seen:
                status_seen.append(message["status"])
                self.log(scope, message["status"])
            await send(message)

        async def answer(status: int, body: bytes = b"") -> None:
            await send_logged({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
            await send_logged({"type": "http.response.body", "body": body})

        method, path = scope["method"], scope["path"]
        if args.require_key and header(scope, b"x-api-key") != args.require_key:
            return await answer(403, b"missing or wrong X-Api-Key")
        if args.reject_post and method == "POST":
            return await answer(args.reject_post, b"rejected")
        if path == "/sse" and method == "POST" and args.sse_post_status:
            return await answer(args.sse_post_status, b"not here")
        if path == "/sse" and method == "GET" and args.foreign_endpoint:
            return await foreign_stream(send_logged, args.foreign_endpoint)
        if path.startswith("/messages") and method == "POST" and args.fail_calls:
            chunks = []
            while True:
                message = await receive()
                chunks.append(message)
                if not message.get("more_body"):
                    break
            body = b"".join(m.get("body", b"") for m in chunks)
            if b'"tools/call"' in body:
                return await answer(args.fail_calls, b"internal error")
            pending = list(chunks)

            async def replay() -> dict[str, Any]:
                return pending.pop(0) if pending else await receive()

            return await self.app(scope, replay, send_logged)
        if path == "/sse" and method == "GET" and args.cut:
            cut_done = False

            async def send_cut(message: dict[str, Any]) -> None:
                nonlocal cut_done
                if cut_done:
                    return
                body = message.get("body", b"")
                if message["type"] == "http.response.body" and CUT_MARKER.encode() in body:
                    cut_done = True
                    await send_logged({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
                    await send_logged({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                await send_logged(message)

            return await self.app(scope, receive, send_cut)
        return await self.app(scope, receive, send_logged)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log")
    parser.add_argument("--require-key")
    parser.add_argument("--foreign-endpoint")
    parser.add_argument("--cut", action="store_true")
    parser.add_argument("--fail-calls", type=int)
    parser.add_argument("--sse-post-status", type=int)
    parser.add_argument("--streamable", action="store_true")
    parser.add_argument("--reject-post", type=int)
    args = parser.parse_args()
    app = Hostile(build(args), args)
    config = uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            while not server.started:
                await anyio.sleep(0.02)
            print("ready", flush=True)

    anyio.run(run)
    sys.exit(0)


if __name__ == "__main__":
    main()
