"""Drives code-executor with clients built on the mcp SDK 1.x, which cannot share a venv with the
mcp 2.x the rest of the suite uses: the SDK's own `ClientSession` and langchain-mcp-adapters
(0.3.x requires mcp<2; 0.3.1 installs beside mcp 2.x but fails at import).

Run with the python of a venv holding tests/e2e/requirements-mcp1.txt:

    python mcp1_driver.py < scenario.json > record.json

The scenario (JSON on stdin) names the client ("mcp1" or "langchain"), the transport and how to
reach the server ({"command", "args", "env", "cwd"} for stdio; {"url", "headers"} for HTTP), and
the steps: each a label, a tool name and its arguments, or {"kind": "noauth"} (connect to the URL
without the token). The record (JSON on stdout) holds, per step, what the client hands its model:
the text, the raw result, or the exception it raised; plus the tools as the model sees them and
the server's instructions as the client exposes them. test_frameworks.py asserts on it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import traceback
from typing import Any

from texts import attempt_without_token, blocks_text, exception_text  # beside this script


# ------------------------------------------------------------------------------------------
# mcp 1.x ClientSession
# ------------------------------------------------------------------------------------------


def mcp1_streams(scenario: dict[str, Any], headers: dict[str, str] | None):
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    if scenario["transport"] == "stdio":
        params = StdioServerParameters(
            command=scenario["command"], args=scenario["args"], env=scenario["env"], cwd=scenario["cwd"]
        )
        return stdio_client(params, errlog=open(scenario["errlog"], "a"))
    return streamablehttp_client(scenario["url"], headers=headers, timeout=30)


async def mcp1_session(scenario: dict[str, Any], headers: dict[str, str] | None, body):
    from mcp import ClientSession

    async with mcp1_streams(scenario, headers) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await asyncio.wait_for(session.initialize(), 60)
            return await body(session, init)


async def run_mcp1(scenario: dict[str, Any], record: dict[str, Any]) -> None:

    record["library"] = f"mcp {version('mcp')}"

    async def body(session, init) -> None:
        record["instructions_to_model"] = None  # the SDK exposes them; a host decides
        record["instructions_exposed"] = init.instructions
        tools = await session.list_tools()
        record["tools"] = {
            t.name: {"description": t.description, "schema": t.inputSchema} for t in tools.tools
        }
        for step in scenario["steps"]:
            if step.get("kind") == "noauth":
                continue
            out: dict[str, Any] = {}
            t0 = time.monotonic()
            try:
                result = await session.call_tool(step["tool"], step["args"])
                out["text"] = blocks_text(result.content)
                out["is_error"] = bool(result.isError)
                out["structured"] = result.structuredContent
                out["meta"] = result.meta
            except BaseException as exc:  # recorded for the test to report
                out["raised"] = exception_text(exc)
            out["elapsed"] = time.monotonic() - t0
            record["steps"][step["label"]] = out

    await mcp1_session(scenario, scenario.get("headers"), body)
    await run_noauth(scenario, record, lambda: mcp1_session(scenario, None, lambda s, i: s.list_tools()))


# ------------------------------------------------------------------------------------------
# langchain-mcp-adapters
# ------------------------------------------------------------------------------------------


def langchain_connection(scenario: dict[str, Any], with_token: bool) -> dict[str, Any]:
    if scenario["transport"] == "stdio":
        return {
            "transport": "stdio",
            "command": scenario["command"],
            "args": scenario["args"],
            "env": scenario["env"],
            "cwd": scenario["cwd"],
        }
    conn: dict[str, Any] = {"transport": "streamable_http", "url": scenario["url"], "timeout": 30}
    if with_token:
        conn["headers"] = scenario.get("headers") or {}
    return conn


async def run_langchain(scenario: dict[str, Any], record: dict[str, Any]) -> None:
    from langchain_core.messages import ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_mcp_adapters.client import MultiServerMCPClient

    record["library"] = f"langchain-mcp-adapters {version('langchain-mcp-adapters')} (mcp {version('mcp')})"
    client = MultiServerMCPClient({"ce": langchain_connection(scenario, True)})
    tools = {t.name: t for t in await asyncio.wait_for(client.get_tools(), 60)}
    # The adapters hand the model each tool's name, description and args schema; the server's
    # instructions have no place in a LangChain tool.
    record["instructions_to_model"] = None
    record["tools"] = {}
    for name, tool in tools.items():
        fn = convert_to_openai_tool(tool)["function"]
        record["tools"][name] = {
            "description": fn.get("description"),
            "schema": fn.get("parameters"),
            "args_schema": tool.args_schema if isinstance(tool.args_schema, dict) else None,
        }
    for i, step in enumerate(scenario["steps"]):
        if step.get("kind") == "noauth":
            continue
        out: dict[str, Any] = {}
        t0 = time.monotonic()
        try:
            # A tool call as an agent makes it: the answer is the ToolMessage given to the model.
            msg = await tools[step["tool"]].ainvoke(
                {"type": "tool_call", "id": f"call-{i}", "name": step["tool"], "args": step["args"]}
            )
            assert isinstance(msg, ToolMessage), type(msg)
            out["text"] = blocks_text(msg.content)
            out["model_content"] = msg.content
            out["is_error"] = msg.status == "error"
            artifact = msg.artifact or {}
            out["structured"] = artifact.get("structured_content") if isinstance(artifact, dict) else None
        except BaseException as exc:
            out["raised"] = exception_text(exc)
        out["elapsed"] = time.monotonic() - t0
        record["steps"][step["label"]] = out

    async def noauth():
        return await MultiServerMCPClient({"ce": langchain_connection(scenario, False)}).get_tools()

    await run_noauth(scenario, record, noauth)


# ------------------------------------------------------------------------------------------


async def run_noauth(scenario: dict[str, Any], record: dict[str, Any], attempt) -> None:
    """Connect without the token (HTTP only): record what the client raises (or that it hung)."""
    if scenario["transport"] != "http" or not any(s.get("kind") == "noauth" for s in scenario["steps"]):
        return
    record["steps"]["noauth"] = await attempt_without_token(attempt, scenario.get("noauth_timeout", 20))


def version(dist: str) -> str:
    from importlib.metadata import version as v

    return v(dist)


async def main() -> int:
    scenario = json.loads(sys.stdin.read())
    record: dict[str, Any] = {"client": scenario["client"], "transport": scenario["transport"], "steps": {}}
    try:
        if scenario["client"] == "mcp1":
            await run_mcp1(scenario, record)
        elif scenario["client"] == "langchain":
            await run_langchain(scenario, record)
        else:
            raise ValueError(f"unknown client {scenario['client']!r}")
    except BaseException as exc:
        record["fatal"] = exception_text(exc) + "\n" + traceback.format_exc()
    sys.stdout.write(json.dumps(record, default=str))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
