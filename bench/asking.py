#!/usr/bin/env python3
"""What a question to the client costs, as the client sees it.

    .venv/bin/python bench/asking.py [--n 40]

Starts `code-executor serve` over stdio twice, with the `asker` downstream server
(tests/servers/asker_server.py), and measures, at the client (the MCP Python SDK), the latency of
`executeTypescript` calls one after another:

- handshake-era client (`ClientSession`, protocol 2025-11-25: questions arrive as requests);
- 2026-07-28 client (`mcp.client.Client`: questions arrive in `input_required` results and the
  call is retried with the answers; the SDK drives the rounds);

for three kinds of code: `return <token>` (no question), `return await llm.ask(<token>)` (one
sampling round trip through the client; the client's callback answers at once with the prompt),
and a downstream server's question relayed (`mcp__asker__confirm`, answered at once). Every
reply is checked for its own token. Prints per kind: n, p50, p99 (ms, nearest rank) and the ratio
of p50 to the no-question p50.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

import harness  # noqa: E402
from harness import E2EEnv, McpClient  # noqa: E402
from mcp import StdioServerParameters, types  # noqa: E402
from mcp.client import Client  # noqa: E402


async def sampling(context, params):
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=params.messages[-1].content.text), model="bench"
    )


async def elicitation(context, params):
    return types.ElicitResult(action="accept", content={"ok": True})


CALLBACKS = {"sampling_callback": sampling, "elicitation_callback": elicitation}

KINDS = {
    "no question": ("return '{t}'", None, lambda sc, t: sc["result"] == t),
    "llm.ask": ("return await llm.ask('{t}')", None, lambda sc, t: sc["result"] == t),
    "relayed elicitation": (
        "const r = await callMCPTool('mcp__asker__confirm', {{what: '{t}'}}); return [r.action, '{t}']",
        ["mcp__asker__confirm"],
        lambda sc, t: sc["result"] == ["accept", t],
    ),
}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def report(era: str, timings: dict[str, list[float]]) -> None:
    base = statistics.median(timings["no question"])
    for kind, values in timings.items():
        p50, p99 = statistics.median(values), percentile(values, 99)
        print(f"{era:<22} {kind:<20} n={len(values):<4} p50={p50:7.1f} ms  p99={p99:7.1f} ms  p50/no-question={p50 / base:5.2f}")


async def measure(call, n: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {}
    for kind, (template, allowed, check) in KINDS.items():
        values = []
        for i in range(n + 3):
            token = uuid.uuid4().hex
            args = {"code": template.format(t=token)}
            if allowed:
                args["allowedTools"] = allowed
            started = time.perf_counter()
            sc = await call(args)
            elapsed = (time.perf_counter() - started) * 1000
            if not (sc.get("success") and check(sc, token)):
                raise SystemExit(f"{kind}: wrong reply {sc}")
            if i >= 3:  # warm-up
                values.append(elapsed)
        timings[kind] = values
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    n = parser.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        e2e = E2EEnv(Path(tmp) / "legacy", servers=("asker",))
        client = McpClient("stdio", e2e, Path(tmp) / "legacy.log", callbacks=CALLBACKS)
        client.start()
        try:
            async def call(args):
                return (await client.session.call_tool("executeTypescript", args)).structured_content

            report("handshake era (stdio)", client.run_async(measure, call, n))
        finally:
            client.close()

        e2e = E2EEnv(Path(tmp) / "modern", servers=("asker",))

        async def modern():
            params = StdioServerParameters(command=str(harness.binary()), args=["serve"], env=e2e.env(), cwd=str(e2e.project))
            async with Client(params, mode="auto", **CALLBACKS) as c:
                async def call(args):
                    return (await c.call_tool("executeTypescript", args)).structured_content

                return await measure(call, n)

        report("2026-07-28 (stdio)", anyio.run(modern))


if __name__ == "__main__":
    main()
