"""Code that can ask, toward clients on protocol 2026-07-28, which carry no requests from server
to client: the `tools/call` is answered `input_required` with the questions and an opaque
`requestState`, and the client's retry with the answers resumes the execution. Exercised with the
Python SDK's own modern client (`mcp.client.Client`, which drives the rounds through its
callbacks) over stdio and over streamable HTTP, and by hand for the handle's promises (used once,
bound to its call).
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

import harness
from harness import E2EEnv
from mcp import StdioServerParameters, types
from mcp.client import Client

from test_asking import Script


@contextlib.asynccontextmanager
async def modern_client(transport: str, root: Path, script: Script):
    e2e = E2EEnv(root, servers=("asker",), extra_env={"CODE_EXECUTOR_ASK_TIMEOUT_MS": "5000"})
    callbacks = {"sampling_callback": script.sampling, "elicitation_callback": script.elicitation}
    if transport == "stdio":
        params = StdioServerParameters(command=str(harness.binary()), args=["serve"], env=e2e.env(), cwd=str(e2e.project))
        async with Client(params, mode="auto", **callbacks) as client:
            yield client
        return
    port = harness.free_port()
    log = open(root / "server.log", "w")
    proc = subprocess.Popen(
        [str(harness.binary()), "serve", "--http", f"127.0.0.1:{port}"],
        cwd=e2e.project, env=e2e.env(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        await anyio.to_thread.run_sync(harness.wait_listening, proc, port, root / "server.log")
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="auto", **callbacks) as client:
            yield client
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


async def execute(client: Client, code: str, allowed: list[str] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"code": code}
    if allowed:
        args["allowedTools"] = allowed
    result = await client.call_tool("executeTypescript", args)
    report = harness.exec_report(result)
    assert isinstance(report, dict), result
    return report


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_modern_client_is_asked_through_input_required_rounds(tmp_path, transport):
    script = Script()
    script.sample_reply = lambda p: "modern: " + p.messages[-1].content.text

    async def scenario():
        async with modern_client(transport, tmp_path, script) as client:
            assert client.session.protocol_version == "2026-07-28"
            # Sampling from code, twice in one execution: two rounds.
            sc = await execute(client, "return [await llm.ask('one'), await llm.ask('two')]")
            assert sc["success"], sc
            assert sc["result"] == ["modern: one", "modern: two"]
            assert sc["samplingRounds"] == 2
            # An approval, then a downstream server's own question relayed in the same call.
            script.decisions = ["allow_once", {"ok": True}]
            sc = await execute(
                client,
                "const d = await callMCPTool('mcp__asker__delete_item', {id: 8});"
                "const c = await callMCPTool('mcp__asker__confirm', {what: 'modern'}); return [d, c]",
                ["mcp__asker__*"],
            )
            assert sc["success"], sc
            assert sc["result"] == [{"result": "deleted 8"}, {"action": "accept", "data": {"ok": True}}]
            assert "mcp__asker__delete_item" in script.elicitations[-2].message
            # A denial refuses in the sandbox.
            script.decisions = ["deny"]
            sc = await execute(client, "try { await callMCPTool('mcp__asker__delete_item', {id: 9}); return 'sent' } catch (e) { return e.message }", ["mcp__asker__*"])
            assert "denied" in sc["result"], sc
            sc = await execute(client, "return await callMCPTool('mcp__asker__calls', {})", ["mcp__asker__calls"])
            assert sc["result"]["delete_item"] == 1

    anyio.run(scenario)


def test_a_request_state_is_used_once_and_only_for_its_call(tmp_path):
    script = Script()
    script.sample_reply = "fine"

    async def scenario():
        async with modern_client("stdio", tmp_path, script) as client:
            args = {"code": "return await llm.ask('hand-driven')"}
            first = await client.session.call_tool("executeTypescript", args, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult), first
            (key, request), = first.input_requests.items()
            assert request.method == "sampling/createMessage"
            state = first.request_state
            answer = {"role": "assistant", "content": {"type": "text", "text": "by hand"}, "model": "m"}
            # Another tool cannot use the handle.
            other = await client.session.call_tool("executePython", {"code": "1"}, input_responses={key: answer}, request_state=state)
            assert other.is_error and "requestState is unknown" in other.content[0].text
            done = await client.session.call_tool("executeTypescript", args, input_responses={key: answer}, request_state=state)
            assert done.structured_content["result"] == "by hand", done
            # Used once: a replay is refused, and nothing is run again.
            replay = await client.session.call_tool("executeTypescript", args, input_responses={key: answer}, request_state=state)
            assert replay.is_error and "requestState is unknown" in replay.content[0].text
            forged = await client.session.call_tool("executeTypescript", args, input_responses={}, request_state="0" * 32)
            assert forged.is_error
            # A malformed answer is the code's clear error.
            first = await client.session.call_tool("executeTypescript", {"code": "try { return await llm.ask('x') } catch (e) { return e.message }"}, allow_input_required=True)
            (key, _), = first.input_requests.items()
            bad = await client.session.call_tool("executeTypescript", {"code": "x"}, input_responses={key: {"action": "accept", "content": {}}}, request_state=first.request_state)
            assert "malformed" in bad.structured_content["result"], bad

    anyio.run(scenario)
