"""An MCP stdio server of a chosen protocol era, that can start slowly and log its life. Used by
the first-contact tests and the benchmark.

    python lifecycle_server.py [--era legacy|dual] [--log FILE] [--start-delay SECONDS] [--ignore-discover]

Built on the official MCP Python SDK (`MCPServer` tools). `--era legacy` (the default) serves them
with the SDK's handshake-only loop (`serve_loop`): it speaks only `initialize` (2025-11-25 and
earlier), as servers built on the SDKs of before 2026-07-28 do, and answers a `server/discover`
sent before `initialize` with a JSON-RPC error. `--era dual` serves both eras as the SDK's own
`run()` does (the first request decides: `server/discover` opens a 2026-07-28 connection).

- `--log FILE`: appends one line per event, `<event> <unix time> <pid>`: `start` when the process
  starts, `ready` when it begins serving, `discover` for each `server/discover` it receives.
- `--start-delay SECONDS`: sleeps before serving (a slow server: stdin is not read meanwhile).
- `--ignore-discover`: drops `server/discover` without any answer (a server that breaks JSON-RPC
  by leaving a request unanswered).

Tools: `hello(name)` and `get_pid()`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import anyio

from mcp.server.mcpserver import MCPServer
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--era", choices=("legacy", "dual"), default="legacy")
ARGS.add_argument("--log")
ARGS.add_argument("--start-delay", type=float, default=0.0)
ARGS.add_argument("--ignore-discover", action="store_true")
OPTS = ARGS.parse_args()


def log(event: str) -> None:
    if OPTS.log:
        with open(OPTS.log, "a", encoding="utf-8") as f:
            f.write(f"{event} {time.time():.6f} {os.getpid()}\n")


log("start")

app = MCPServer(f"lifecycle-{OPTS.era}", instructions="A test server of a chosen protocol era.")


@app.tool()
def hello(name: str) -> str:
    """Greets `name`."""
    return f"hello {name}"


@app.tool()
def get_pid() -> int:
    """This server's process id."""
    return os.getpid()


def method_of(item: object) -> str | None:
    message = getattr(item, "message", None)
    message = getattr(message, "root", message)
    return getattr(message, "method", None)


async def main() -> None:
    await anyio.sleep(OPTS.start_delay)
    server = app._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream(64)

        async def forward() -> None:
            async with send:
                async for item in read_stream:
                    if method_of(item) == "server/discover":
                        log("discover")
                        if OPTS.ignore_discover:
                            continue
                    await send.send(item)

        log("ready")
        if OPTS.era == "dual":
            async with anyio.create_task_group() as tg:
                tg.start_soon(forward)
                await server.run(receive, write_stream, server.create_initialization_options())
                tg.cancel_scope.cancel()
            return
        async with anyio.create_task_group() as tg, server.lifespan(server) as state:
            tg.start_soon(forward)
            await serve_loop(
                server,
                receive,
                write_stream,
                lifespan_state=state,
                init_options=server.create_initialization_options(),
            )
            tg.cancel_scope.cancel()


if __name__ == "__main__":
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)
