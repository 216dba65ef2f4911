"""Live output: while an execution runs, the lines its code prints reach a client that asked for
them, before the reply: as `notifications/progress` (a request with a `progressToken`) and as
`notifications/message` log messages (after `logging/setLevel`, or with a request's own
`io.modelcontextprotocol/logLevel`; not to 2026-07-28 clients, to which logging is not declared). Bounds: at most one round of
notifications every 250 ms, each carrying at most 1 KiB of the newest lines plus a mark counting
those not shown; a `running for N s` heartbeat every second while nothing is printed.

Exercised with the Python SDK's own clients (`ClientSession` over stdio and streamable HTTP, and
the 2026-07-28 `Client`), and on the wire (raw JSON-RPC over stdio) for what must not arrive and
for the exact sizes during a flood.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness
from harness import E2EEnv, McpClient
from mcp import StdioServerParameters, types
from mcp.client import Client

# The bounds the server promises (src/front/live.rs, src/sandbox/tap.rs).
MIN_GAP = 0.25
HELD_BYTES = 1024
# The mark that leads a message whose earlier lines were skipped.
MARK = re.compile(r"^\[… (\d+) earlier lines? not shown\]$")
# A progress message at most: the held lines and the mark.
MAX_MESSAGE = HELD_BYTES + 48
# `progress` is the server's seconds since the request arrived, to the millisecond: the gaps
# between notifications are read from it (times taken at the client wobble with scheduling).
GAP = MIN_GAP - 0.002

pytestmark = pytest.mark.filterwarnings("ignore:The logging capability is deprecated")

# Prints `live <n>` ten times, 300 ms apart (about 3 s), then returns.
TS_LINES = """
for (let i = 0; i < 10; i++) {
  console.log(`live ${i}`);
  if (i === 4) console.error(`warn ${i}`);
  await new Promise((r) => setTimeout(r, 300));
}
return "done";
"""
PY_LINES = """
import asyncio, sys
for i in range(10):
    print(f"live {i}")
    if i == 4:
        print(f"warn {i}", file=sys.stderr)
    await asyncio.sleep(0.3)
"done"
"""
EXPECTED = [f"live {i}" for i in range(10)]


def live_client(root: Path, transport: str = "stdio", extra_env: dict[str, str] | None = None, logs: list | None = None) -> McpClient:
    callbacks: dict[str, Any] = {}
    if logs is not None:

        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            logs.append((time.monotonic(), params.level, params.logger, params.data))

        callbacks["logging_callback"] = on_log
    e2e = E2EEnv(root, servers=("time",), extra_env=dict(extra_env or {}))
    client = McpClient(transport, e2e, root / f"code-executor-{transport}.log", callbacks=callbacks)
    try:
        client.start()
    except Exception as exc:
        pytest.fail(f"could not start code-executor over {transport}: {exc!r}\n{harness.tail(client.log_path)}")
    return client


def call_with_progress(c: McpClient, tool: str, code: str, timeout: float = 90) -> tuple[float, float, list, types.CallToolResult]:
    """Calls `tool`, recording every progress notification as (time, progress, message); returns
    the time of the call, the time of the reply, the notifications and the result."""
    seen: list[tuple[float, float, str | None]] = []

    async def go():
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((time.monotonic(), progress, message))

        started = time.monotonic()
        result = await c.session.call_tool(tool, {"code": code}, read_timeout_seconds=timeout, progress_callback=on_progress)
        return started, time.monotonic(), result

    started, replied, result = c.run_async(go)
    return started, replied, seen, result


def printed_lines(messages: list[str | None]) -> list[str]:
    """The output lines the messages carried, marks and heartbeats left out."""
    lines = []
    for message in messages:
        if message is None or message.startswith("running for "):
            continue
        lines.extend(line for line in message.split("\n") if not MARK.match(line))
    return lines


def check_gaps(progress: list[float]) -> None:
    """Progress increases, by at least MIN_GAP from one notification to the next."""
    gaps = [round(b - a, 3) for a, b in zip(progress, progress[1:])]
    assert all(gap >= GAP for gap in gaps), f"notifications closer than {MIN_GAP} s: {gaps}"


def check_bounds(notes: list[tuple[float, float, str | None]]) -> None:
    """Progress increases, rounds are at least MIN_GAP apart, no message is over the size bound."""
    check_gaps([p for _, p, _ in notes])
    for _, _, message in notes:
        assert message is not None
        assert len(message.encode()) <= MAX_MESSAGE, f"a message of {len(message.encode())} bytes"


def check_live_lines(started: float, replied: float, notes: list, result: types.CallToolResult) -> None:
    assert not result.is_error, result
    messages = [m for _, _, m in notes]
    lines = [line for line in printed_lines(messages) if line.startswith("live ")]
    # Every line in order, none twice; the last ones may be left to the reply.
    assert lines == EXPECTED[: len(lines)], messages
    assert len(lines) >= 7, messages
    assert any("warn 4" in m for m in messages if m), messages
    # Live: the first line came long before the reply (the code prints for about 3 s).
    first = next(t for t, _, m in notes if m and "live 0" in m)
    assert replied - first > 1.5, f"the first line came {replied - first:.2f} s before the reply"
    check_bounds(notes)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_typescript_lines_arrive_live_in_order(tmp_path, ce_binary, transport) -> None:
    c = live_client(tmp_path, transport)
    try:
        started, replied, notes, result = call_with_progress(c, "executeTypescript", TS_LINES)
        check_live_lines(started, replied, notes, result)
        assert result.structured_content["output"] == "".join(f"{line}\n" for line in EXPECTED[:5]) + "warn 4\n" + "".join(
            f"{line}\n" for line in EXPECTED[5:]
        )
    finally:
        c.close()


@pytest.mark.pyodide
def test_python_lines_arrive_live_in_order(tmp_path, ce_binary) -> None:
    c = live_client(tmp_path)
    try:
        started, replied, notes, result = call_with_progress(c, "executePython", PY_LINES)
        check_live_lines(started, replied, notes, result)
        assert result.structured_content["result"] == "done"
    finally:
        c.close()


def test_a_print_flood_stays_within_the_bounds_and_the_reply_arrives(tmp_path, ce_binary) -> None:
    # 50 MB printed over about 3 s; the server keeps its 1 MiB output cap.
    code = """
const line = "f".repeat(99);
const chunk = (line + "\\n").repeat(4999) + line;
for (let i = 0; i < 100; i++) {
  console.log(chunk);
  await new Promise((r) => setTimeout(r, 30));
}
return "flooded";
"""
    c = live_client(tmp_path)
    try:
        started, replied, notes, result = call_with_progress(c, "executeTypescript", code)
        sc = result.structured_content
        assert sc["success"] and sc["result"] == "flooded", sc.get("error")
        assert "bytes of output cut here" in sc["output"]
        check_bounds(notes)
        assert notes, "no progress at all"
        # At most one notification per 250 ms (and one more at the start).
        assert len(notes) <= (replied - started) / MIN_GAP + 2, len(notes)
        marks = [MARK.match(m.split("\n", 1)[0]) for _, _, m in notes if m]
        assert any(marks), [m[:80] for _, _, m in notes if m]
        assert all(line == "f" * 99 or len(line) < 99 for line in printed_lines([m for _, _, m in notes])), notes
        # The server still serves.
        harness.assert_alive(c)
    finally:
        c.close()


def test_log_messages_only_after_set_level(tmp_path, ce_binary) -> None:
    logs: list[tuple[float, str, str | None, Any]] = []
    c = live_client(tmp_path, logs=logs)
    try:
        initialized = c.session.initialize_result
        assert initialized is not None and initialized.capabilities.logging is not None, initialized

        # No level set: no log message, progress or not.
        c.call("executeTypescript", {"code": TS_LINES})
        call_with_progress(c, "executeTypescript", TS_LINES)
        assert logs == []

        # Warning: the stderr lines only.
        c.run_async(c.session.set_logging_level, "warning")
        c.call("executeTypescript", {"code": TS_LINES})
        assert [(level, logger, data) for _, level, logger, data in logs] == [("warning", "stderr", "warn 4")], logs

        # Info: stdout too, in order, as the code printed them.
        logs.clear()
        c.run_async(c.session.set_logging_level, "info")
        started = time.monotonic()
        result = c.call("executeTypescript", {"code": TS_LINES})
        replied = time.monotonic()
        assert not result.is_error
        lines: list[str] = []
        for _, level, logger, data in logs:
            assert (level, logger) in (("info", "stdout"), ("warning", "stderr")), logs
            assert isinstance(data, str) and len(data.encode()) <= MAX_MESSAGE
            lines.extend(data.split("\n"))
        assert lines[:6] == EXPECTED[:5] + ["warn 4"], lines
        assert lines[6:] == EXPECTED[5 : 5 + len(lines) - 6], lines
        assert len(lines) >= 8, lines
        assert replied - logs[0][0] > 1.5, "the first log message came just before the reply"
        # Error: nothing this code prints.
        logs.clear()
        c.run_async(c.session.set_logging_level, "error")
        c.call("executeTypescript", {"code": TS_LINES})
        assert logs == []
    finally:
        c.close()


def test_log_messages_over_http_after_set_level(tmp_path, ce_binary) -> None:
    logs: list[tuple[float, str, str | None, Any]] = []
    c = live_client(tmp_path, "http", logs=logs)
    try:
        c.call("executeTypescript", {"code": TS_LINES})
        assert logs == []
        # The level is the client session's: over HTTP, the connection's principal.
        c.run_async(c.session.set_logging_level, "info")
        c.call("executeTypescript", {"code": TS_LINES})
        data = [d for _, _, _, d in logs]
        assert data and data[0] == "live 0", logs
    finally:
        c.close()


@pytest.mark.parametrize("level", ["info", None])
def test_a_2026_client_gets_live_output_as_progress_only(tmp_path, ce_binary, level) -> None:
    logs: list[tuple[str, str | None, Any]] = []
    notes: list[str | None] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.logger, params.data))

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message)

    async def scenario():
        e2e = E2EEnv(tmp_path, servers=("time",))
        params = StdioServerParameters(command=str(harness.binary()), args=["serve"], env=e2e.env(), cwd=str(e2e.project))
        kw = {"log_level": level} if level else {}
        async with Client(params, mode="auto", logging_callback=on_log, **kw) as client:
            assert client.session.protocol_version == "2026-07-28"
            result = await client.call_tool("executeTypescript", {"code": TS_LINES}, progress_callback=on_progress)
            assert not result.is_error, result

    anyio.run(scenario)
    lines = printed_lines(notes)
    assert lines[:3] == ["live 0", "live 1", "live 2"], notes
    # Logging is deprecated on 2026-07-28 and not declared to these clients: live output comes as
    # progress only, whatever level the request carries.
    assert logs == []


# --------------------------------------------------------------------------------------------
# On the wire
# --------------------------------------------------------------------------------------------


class RawStdio:
    """`code-executor serve` driven by hand over stdio: every line it writes, with its time."""

    def __init__(self, root: Path, extra_env: dict[str, str] | None = None) -> None:
        e2e = E2EEnv(root, servers=("time",), extra_env=dict(extra_env or {}))
        self.log = open(root / "server.log", "w")
        self.proc = subprocess.Popen(
            [str(harness.binary()), "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=e2e.env(), cwd=e2e.project,
        )
        self.lines: queue.Queue[tuple[float, bytes] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 1
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line))
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any], timeout: float = 90) -> tuple[dict[str, Any], list[tuple[float, int, dict[str, Any]]]]:
        """Sends a request; its answer, and every message before it as (time, bytes, message)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        before = []
        deadline = time.monotonic() + timeout
        while True:
            item = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert item is not None, f"the server closed stdout:\n{harness.tail(Path(self.log.name))}"
            at, line = item
            message = json.loads(line)
            if message.get("id") == rid:
                return message, before
            before.append((at, len(line), message))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            assert self.proc.stdin
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def execute(code: str, token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "executeTypescript", "arguments": {"code": code}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return params


def test_on_the_wire_nothing_without_a_token_or_a_level_and_a_flood_stays_bounded(tmp_path, ce_binary) -> None:
    # A cap of 16 MiB lets a flood reach the host for about 1.5 s.
    raw = RawStdio(tmp_path, {"CODE_EXECUTOR_OUTPUT_LIMIT_BYTES": str(16 * 1024 * 1024)})
    try:
        # No progressToken and no level: nothing but the reply, though the code prints for 3 s.
        answer, before = raw.request("tools/call", execute(TS_LINES))
        assert answer["result"]["structuredContent"]["success"], answer
        assert before == [], [m for _, _, m in before]

        # A flood with a token: rounds at least 250 ms apart, each line on the wire about a KiB.
        flood = """
const line = "w".repeat(99);
const chunk = (line + "\\n").repeat(4999) + line;
for (let i = 0; i < 100; i++) {
  console.log(chunk);
  await new Promise((r) => setTimeout(r, 30));
}
return "flooded";
"""
        started = time.monotonic()
        answer, before = raw.request("tools/call", execute(flood, "flood"))
        replied = time.monotonic()
        assert answer["result"]["structuredContent"]["result"] == "flooded"
        methods = {m["method"] for _, _, m in before}
        assert methods == {"notifications/progress"}, methods
        assert all(m["params"]["progressToken"] == "flood" for _, _, m in before)
        assert all(size <= MAX_MESSAGE + 200 for _, size, _ in before), [size for _, size, _ in before]
        check_gaps([m["params"]["progress"] for _, _, m in before])
        assert len(before) <= (replied - started) / MIN_GAP + 2
        carrying = [m["params"]["message"] for _, _, m in before if MARK.match(m["params"]["message"].split("\n", 1)[0])]
        assert len(carrying) >= 3, [m["params"]["message"][:60] for _, _, m in before]
    finally:
        raw.close()
