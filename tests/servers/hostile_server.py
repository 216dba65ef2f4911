"""A hostile downstream MCP server for the e2e tests: it does what a broken or malicious server
configured by the user could do to code-executor. Built on the official MCP Python SDK's
low-level `Server`, so it can declare any input schema.

Run with `python hostile_server.py [options]` (stdio). Options:

- `--marker PATH`: create PATH as soon as the process starts (proof that it was started).
- `--fail-with-secret SECRET`: write `fatal: bad credentials SECRET` to stderr and exit 1
  before speaking MCP (a server that cannot start and says why on stderr).
- `--recursive-schema K`: add the tool `deep`, whose input schema is an object with K
  properties that are each `{"$ref": "#"}` (the whole schema again).

Tools:

- `echo(value)`: returns `{"echo": value}`.
- `count_calls()`: calls this process has served, per tool (itself excluded).
- `flood_stderr(mib)`: writes `mib` MiB to stderr without a single newline, then answers.
- `leak_and_crash(secret)`: writes the secret to stderr and exits mid-call.
- `deep(...)` (with `--recursive-schema`): returns the keys it was given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MIB = 1024 * 1024


def recursive_schema(k: int) -> dict[str, Any]:
    """An object schema whose k properties each refer back to the root."""
    props = {f"property_{i:02d}": {"$ref": "#"} for i in range(k)}
    return {"type": "object", "properties": props, "additionalProperties": False}


def tool_list(args: argparse.Namespace) -> list[types.Tool]:
    tools = [
        types.Tool(
            name="echo",
            description="Echo a value back (test helper).",
            input_schema={"type": "object", "properties": {"value": {}}, "required": ["value"]},
        ),
        types.Tool(
            name="count_calls",
            description="How many calls this process has served, per tool (test helper).",
            input_schema={"type": "object", "properties": {}},
        ),
        types.Tool(
            name="flood_stderr",
            description="Write this many MiB to stderr without a newline, then answer (hostile).",
            input_schema={"type": "object", "properties": {"mib": {"type": "integer"}}, "required": ["mib"]},
        ),
        types.Tool(
            name="leak_and_crash",
            description="Write a secret to stderr, then exit in the middle of the call (hostile).",
            input_schema={"type": "object", "properties": {"secret": {"type": "string"}}, "required": ["secret"]},
        ),
    ]
    if args.recursive_schema:
        tools.append(
            types.Tool(
                name="deep",
                description="A tool whose input schema refers to itself from every property (hostile).",
                input_schema=recursive_schema(args.recursive_schema),
            )
        )
    return tools


def text(value: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(value))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marker", type=Path)
    parser.add_argument("--fail-with-secret")
    parser.add_argument("--recursive-schema", type=int, default=0, metavar="K")
    args = parser.parse_args()

    if args.marker:
        args.marker.write_text(str(os.getpid()))
    if args.fail_with_secret:
        sys.stderr.write(f"fatal: bad credentials {args.fail_with_secret}\n")
        sys.stderr.flush()
        sys.exit(1)

    calls: Counter[str] = Counter()
    tools = tool_list(args)

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        if name != "count_calls":
            calls[name] += 1
        if name == "echo":
            return text({"echo": arguments.get("value")})
        if name == "count_calls":
            return text({"byTool": dict(calls), "pid": os.getpid()})
        if name == "flood_stderr":
            block = b"x" * MIB
            for _ in range(int(arguments.get("mib", 1))):
                os.write(2, block)
            return text({"flooded_mib": int(arguments.get("mib", 1))})
        if name == "leak_and_crash":
            os.write(2, f"leaking {arguments.get('secret')}\n".encode())
            os._exit(1)
        if name == "deep" and args.recursive_schema:
            return text({"keys": sorted(arguments)})
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"no tool {name}")], is_error=True)

    server = Server("hostile", on_list_tools=on_list_tools, on_call_tool=on_call_tool)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
