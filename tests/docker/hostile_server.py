"""Hostile downstream MCP server for the container suite (test-docker-security.sh).

A real MCP server on the official Python SDK (`MCPServer`, mcp 2.x), served over streamable
HTTP (stateless, JSON answers) on 0.0.0.0:8000/mcp, run as the `hostile` sidecar on the
appliance's `inner` network (tests/docker/compose.hostile.yaml). Its tools:

- `ping()`: answers "pong" (the control: the path to this server works).
- `recursive_schema`: an input schema of about 1.4 KB whose 74 properties are all `{"$ref": "#"}`
  (a naive signature renderer or validator grows as K^depth on it).
- `huge_answer()`: an answer of 50 MiB (one text block).
- `deep_answer()`: an answer whose `structuredContent` nests arrays 100000 deep.
- `slow(seconds)`: sleeps (default an hour, far past the tool-call timeout), then answers.
- `large_text(mib)`: a text result of MIB MiB (default 4), through the SDK as any tool answers.

The SDK cannot produce the two oversized answers (pydantic refuses to serialise 100000 levels,
and 50 MiB through it is slow), so a thin ASGI layer in front of the SDK's app writes those two
`tools/call` answers as raw JSON; everything else (initialize, tools/list, the
other calls) is the SDK's own handling.

    python hostile_server.py [--host 0.0.0.0] [--port 8000]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio
import uvicorn

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

HUGE_BYTES = 50 * 1024 * 1024
DEEP_LEVELS = 100_000
RECURSIVE_PROPERTIES = 74

# About 1.4 KB: {"type":"object","properties":{"p00":{"$ref":"#"},...,"p73":{"$ref":"#"}}}.
RECURSIVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {f"p{i:02d}": {"$ref": "#"} for i in range(RECURSIVE_PROPERTIES)},
}

server = MCPServer("hostile")


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


@server.tool(structured_output=False)
def recursive_schema(node: dict[str, Any] | None = None) -> str:
    """Takes a tree whose every property is the tree itself."""
    return "received"


@server.tool(structured_output=False)
def huge_answer() -> str:
    """Answers 50 MiB (written by the raw layer)."""
    return "the raw layer answers this tool"


@server.tool(structured_output=False)
def deep_answer() -> str:
    """Answers structured content nested 100000 levels deep (written by the raw layer)."""
    return "the raw layer answers this tool"


@server.tool(structured_output=False)
async def slow(seconds: float = 3600) -> str:
    """Sleeps, then answers."""
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


@server.tool(structured_output=False)
def large_text(mib: float = 4) -> str:
    """A text answer of `mib` MiB."""
    return "L" * int(mib * 1024 * 1024)


# The schema the SDK derived from the signature is replaced by the recursive one.
server._tool_manager.get_tool("recursive_schema").parameters = RECURSIVE_SCHEMA  # noqa: SLF001


def _envelope(request_id: Any, result_start: bytes, result_end: bytes) -> tuple[bytes, bytes]:
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":' + result_start
    return head, result_end + b"}"


def huge_chunks(request_id: Any) -> list[bytes]:
    head, tail = _envelope(request_id, b'{"content":[{"type":"text","text":"', b'"}],"isError":false}')
    block = b"H" * (1024 * 1024)
    return [head, *([block] * (HUGE_BYTES // len(block))), tail]


def deep_chunks(request_id: Any) -> list[bytes]:
    head, tail = _envelope(
        request_id,
        b'{"content":[{"type":"text","text":"deep"}],"structuredContent":{"deep":',
        b'},"isError":false}',
    )
    return [head, b"[" * DEEP_LEVELS, b"]" * DEEP_LEVELS, tail]


RAW_ANSWERS = {"huge_answer": huge_chunks, "deep_answer": deep_chunks}


class RawAnswers:
    """ASGI layer: answers `tools/call` of the tools in RAW_ANSWERS itself, passes the rest on."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        chunks = self._raw(body)
        if chunks is None:
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        length = sum(len(c) for c in chunks)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(length).encode())],
            }
        )
        for i, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": i < len(chunks) - 1})

    @staticmethod
    def _raw(body: bytes) -> list[bytes] | None:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return None
        name = (message.get("params") or {}).get("name")
        make = RAW_ANSWERS.get(name) if isinstance(name, str) else None
        return None if make is None else make(message.get("id"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    app = server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        # Reached as http://hostile:8000 from the appliance's network, not as localhost.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=args.host,
    )
    uvicorn.run(RawAnswers(app), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
