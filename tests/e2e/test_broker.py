"""The broker end to end: schema validation before a call leaves the host, server-wide policy,
rate limits, the audit trail, cancellation and progress, and the operations endpoint.

Each test starts its own server with the settings it needs (environment variables, as an operator
would set them) and checks the downstream server's own call counter (`count_calls`) to prove that a
refused call never reached it.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from harness import McpClient, audit_records, check_exec, free_port, ok, ok_py, run_ts, assert_alive

STORE = "mcp__Test-Store__"


def store_counts(c: McpClient) -> dict[str, int]:
    ex = ok(c, f'return await callMCPTool("{STORE}count_calls", {{}});', allowed=[f"{STORE}count_calls"])
    return ex.result["byTool"]


# --------------------------------------------------------------------------------------------
# Validation against the live input schema
# --------------------------------------------------------------------------------------------


def test_schema_violation_is_explained_and_never_sent(start_server) -> None:
    c = start_server()
    ex = ok(
        c,
        f"""
        try {{
          await callMCPTool("{STORE}update_stock", {{ product_id: "P001", delta: "lots", colour: "red" }});
          return "sent";
        }} catch (e) {{ return String(e.message ?? e); }}
        """,
        allowed=[f"{STORE}update_stock"],
    )
    message = ex.result
    assert message != "sent", ex.describe()
    for needle in (
        "do not match its input schema",
        "the call was not sent",
        "/delta",
        "integer",
        "expected: function update_stock(args: { delta: number; product_id: string })",
        "given: { colour: string, delta: string, product_id: string }",
    ):
        assert needle in message, f"{needle!r} missing from the refusal:\n{message}"
    assert "update_stock" not in store_counts(c), "a call that failed validation reached the server"
    # The summary counts it as refused, and a valid call still goes through.
    assert ex.summary[f"{STORE}update_stock"]["refused"] == 1, ex.describe()
    good = ok(
        c,
        f'return await callMCPTool("{STORE}update_stock", {{ product_id: "P001", delta: 1 }});',
        allowed=[f"{STORE}update_stock"],
    )
    assert store_counts(c).get("update_stock") == 1, good.describe()


def test_python_gets_the_same_validation(start_server) -> None:
    c = start_server()
    ex = ok_py(
        c,
        f"""
try:
    await call_mcp_tool("{STORE}GetShippingQuote", {{"product_id": "P001", "quantity": 2}})
    r = "sent"
except Exception as e:
    r = str(e)
r
""",
        allowed=[f"{STORE}*"],
    )
    assert "do not match its input schema" in ex.result and "country" in ex.result, ex.describe()
    assert "GetShippingQuote" not in store_counts(c)


# --------------------------------------------------------------------------------------------
# Server-wide policy
# --------------------------------------------------------------------------------------------


def test_policy_deny_wins_over_the_execution_allowlist(start_server) -> None:
    c = start_server({"CODE_EXECUTOR_POLICY_DENY": f"[{STORE}delete_*, mcp__time__convert_time]"})
    ex = ok(
        c,
        f"""
        const out = {{}};
        for (const [name, args] of [["{STORE}delete_customer", {{ customer_id: "C-1" }}],
                                    ["mcp__time__convert_time", {{ source_timezone: "UTC", time: "12:00", target_timezone: "UTC" }}],
                                    ["{STORE}list_categories", {{}}]]) {{
          try {{ await callMCPTool(name, args); out[name] = "ok"; }}
          catch (e) {{ out[name] = String(e.message ?? e); }}
        }}
        return out;
        """,
        allowed=[f"{STORE}*", "mcp__time__*"],
    )
    out = ex.result
    assert "denied by the server's policy" in out[f"{STORE}delete_customer"], ex.describe()
    assert "denied by the server's policy" in out["mcp__time__convert_time"], ex.describe()
    assert out[f"{STORE}list_categories"] == "ok", ex.describe()
    assert "delete_customer" not in store_counts(c)


def test_a_bad_policy_pattern_stops_the_start(start_server) -> None:
    with pytest.raises(BaseException) as failure:
        start_server({"CODE_EXECUTOR_POLICY_DENY": "[mcp__git__git_?og]"})
    assert "policy" in str(failure.value), str(failure.value)


# --------------------------------------------------------------------------------------------
# Rate limits and the audit of a burst
# --------------------------------------------------------------------------------------------


def test_a_burst_beyond_the_tool_limit_is_refused_and_audited(start_server, tmp_path: Path) -> None:
    audit_dir = tmp_path / "audit"
    c = start_server({"CODE_EXECUTOR_TOOL_CALLS_PER_MINUTE": "5", "CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit_dir)})
    ex = ok(
        c,
        f"""
        const out = [];
        for (let i = 0; i < 8; i++) {{
          try {{ out.push((await callMCPTool("{STORE}echo", {{ value: i }})).echo); }}
          catch (e) {{ out.push(String(e.message ?? e)); }}
        }}
        return out;
        """,
        allowed=[f"{STORE}echo"],
    )
    out = ex.result
    assert out[:5] == [0, 1, 2, 3, 4], ex.describe()
    for refusal in out[5:]:
        assert f"rate limit of 5 calls per minute for tool `{STORE}echo` reached; retry in" in refusal, ex.describe()
    assert store_counts(c).get("echo") == 5
    records = audit_records(audit_dir, want=8 + 1)
    echo = [r for r in records if r["event"] == "tool_call" and r["tool"] == f"{STORE}echo"]
    assert [r["decision"] for r in echo] == ["allowed"] * 5 + ["refused"] * 3, echo
    assert all(r["reason"] == "rate_limit" for r in echo[5:]), echo


# --------------------------------------------------------------------------------------------
# The audit trail of a scripted session
# --------------------------------------------------------------------------------------------


def test_the_audit_file_holds_exactly_the_session_records(start_server, tmp_path: Path) -> None:
    audit_dir = tmp_path / "audit"
    c = start_server({"CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit_dir)})
    marker = "argument-value-that-must-not-be-logged"
    # A name with a newline, an ANSI escape and a forged record, as a JS string literal.
    forged = json.dumps(STORE + 'echo\n\x1b[31mred\n{"event":"execution","outcome":"ok"}')
    code1 = f"""
        const t = await callMCPTool("mcp__time__get_current_time", {{ timezone: "UTC" }});
        try {{ await callMCPTool("{STORE}echo", {{ value: "{marker}" }}); }} catch {{}}
        try {{ await callMCPTool({forged}, {{}}); }} catch {{}}
        return typeof t;
    """
    ok(c, code1, allowed=["mcp__time__get_current_time"])
    code2 = "print('from python')"
    ok_py(c, code2)
    code3 = 'throw new Error("scripted failure");'
    assert not run_ts(c, code3).success
    code4 = "return 1;"
    assert not run_ts(c, code4, allowed=["mcp__{a,b}__x"]).success

    records = audit_records(audit_dir, want=7)
    text = "\n".join(p.read_text() for p in audit_dir.glob("audit.*.jsonl"))
    assert len(records) == 7, json.dumps(records, indent=1)
    assert [r["event"] for r in records] == ["tool_call"] * 3 + ["execution"] * 4, json.dumps(records, indent=1)
    time_call, refused, malformed = records[:3]
    assert (time_call["tool"], time_call["decision"], time_call["reason"]) == (
        "mcp__time__get_current_time",
        "allowed",
        "allowed",
    )
    assert time_call["resultBytes"] > 0 and time_call["argumentBytes"] == len('{"timezone":"UTC"}')
    assert (refused["tool"], refused["decision"], refused["reason"]) == (f"{STORE}echo", "refused", "not_allowed")
    assert malformed["decision"] == "refused" and malformed["reason"] == "malformed_name", malformed
    executions = records[3:]
    assert [(r["language"], r["outcome"]) for r in executions] == [
        ("typescript", "ok"),
        ("python", "ok"),
        ("typescript", "code_error"),
        ("typescript", "refused"),
    ], json.dumps(executions, indent=1)
    for record, code in zip(executions, (code1, code2, code3, code4)):
        assert record["codeSha256"] == hashlib.sha256(code.encode()).hexdigest()
        assert record["codeBytes"] == len(code.encode())
        assert record["session"] == "stdio" and record["executionId"]
        assert record["ts"].endswith("Z")
    assert executions[0]["toolCalls"] == 1 and executions[0]["toolCallsRefused"] == 2
    assert executions[0]["allowedTools"] == ["mcp__time__get_current_time"]
    assert executions[0]["peakMemoryBytes"] > 10 * 1024 * 1024
    assert {r["executionId"] for r in records[:3]} == {executions[0]["executionId"]}
    # Never the code, never argument values, and no raw control characters or forged lines.
    for secret in (marker, "scripted failure", "from python", "\x1b"):
        assert secret not in text, f"{secret!r} is in the audit log"
    assert len(text.splitlines()) == 7


# --------------------------------------------------------------------------------------------
# Cancellation and progress
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_cancelled_execution_kills_its_worker(start_server, tmp_path: Path, transport: str) -> None:
    audit_dir = tmp_path / "audit"
    c = start_server({"CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit_dir)}, transport=transport)

    arguments = {"code": "while (true) {}", "timeoutMs": 120000}

    async def abandon() -> str:
        # Over stdio the SDK sends `notifications/cancelled` when it gives up waiting.
        try:
            await c.session.call_tool("executeTypescript", arguments, read_timeout_seconds=2)
        except Exception as e:  # noqa: BLE001 - the timeout is the point
            return type(e).__name__
        return "finished"

    t0 = time.monotonic()
    if transport == "stdio":
        assert c.run_async(abandon) != "finished"
    else:
        # Over streamable HTTP (2026-07-28) closing the request's response stream is the
        # cancellation: a client that gives up and disconnects.
        assert c.port is not None
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "executeTypescript", "arguments": arguments}}
        with pytest.raises(TimeoutError):
            post(c.port, {"MCP-Protocol-Version": "2025-11-25"}, body=call, timeout=2)
    records = audit_records(audit_dir, want=1, timeout=15)
    assert records and records[0]["outcome"] == "cancelled", records
    assert records[0]["durationMs"] < 15000, records
    assert time.monotonic() - t0 < 20
    assert_alive(c)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_long_executions_report_progress(start_server, transport: str) -> None:
    c = start_server(transport=transport)
    seen: list[tuple[float, str | None]] = []

    async def with_progress():
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        return await c.session.call_tool(
            "executeTypescript",
            {"code": "await new Promise((r) => setTimeout(r, 2600)); return 'done';"},
            progress_callback=on_progress,
        )

    raw = c.run_async(with_progress)
    ex = check_exec("executeTypescript", raw, 0)
    assert ex.success and ex.result == "done", ex.describe()
    assert len(seen) >= 1, seen
    assert all(m and "running for" in m for _, m in seen), seen
    assert [p for p, _ in seen] == sorted(p for p, _ in seen), seen


# --------------------------------------------------------------------------------------------
# HTTP: token, origin, and the operations endpoint
# --------------------------------------------------------------------------------------------


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def post(
    port: int, headers: dict[str, str], path: str = "/mcp", body: dict[str, Any] = INITIALIZE, timeout: float = 30
) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, resp.read(2000).decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def token_server(start_server, tmp_path: Path):
    token = "t0k3n-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:40]
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    ops_port = free_port()
    c = start_server(
        {
            "CODE_EXECUTOR_HTTP_TOKEN_FILE": str(token_file),
            "CODE_EXECUTOR_OPS_LISTEN": f"127.0.0.1:{ops_port}",
        },
        servers=("time", "Test-Store"),
        transport="http",
        http_headers={"Authorization": f"Bearer {token}"},
    )
    return c, token, ops_port


def test_http_refuses_a_missing_or_wrong_token_and_a_foreign_origin(token_server) -> None:
    c, token, _ = token_server
    assert c.port is not None
    status, body = post(c.port, {})
    assert status == 401 and "missing bearer token" in body, (status, body)
    status, body = post(c.port, {"Authorization": f"Bearer {token}x"})
    assert status == 401 and "invalid bearer token" in body, (status, body)
    status, body = post(c.port, {"Authorization": token})
    assert status == 401, (status, body)
    status, body = post(c.port, {"Authorization": f"Bearer {token}", "Origin": "http://evil.example"})
    assert status == 403, (status, body)
    status, body = post(c.port, {"Authorization": f"Bearer {token}"})
    assert status == 200, (status, body)
    # The authenticated client works end to end.
    ex = ok(c, 'return (await callMCPTool("mcp__time__get_current_time", { timezone: "UTC" })).timezone;',
            allowed=["mcp__time__get_current_time"])
    assert ex.result == "UTC", ex.describe()


def test_the_token_never_reaches_downstream_servers(start_server, tmp_path: Path) -> None:
    token = "env-token-" + hashlib.sha256(b"env-token").hexdigest()[:32]
    c = start_server(
        {"CODE_EXECUTOR_HTTP_TOKEN": token},
        servers=("Test-Store",),
        transport="http",
        http_headers={"Authorization": f"Bearer {token}"},
    )
    ex = ok(c, f'return await callMCPTool("{STORE}env_has", {{ name: "CODE_EXECUTOR_HTTP_TOKEN" }});',
            allowed=[f"{STORE}env_has"])
    assert ex.result == {"name": "CODE_EXECUTOR_HTTP_TOKEN", "present": False}, ex.describe()
    # The downstream server does see the rest of the environment (the check can fail).
    ex = ok(c, f'return await callMCPTool("{STORE}env_has", {{ name: "CODE_EXECUTOR_E2E_CANARY" }});',
            allowed=[f"{STORE}env_has"])
    assert ex.result["present"] is True, ex.describe()


def test_ops_endpoint_serves_liveness_readiness_and_metrics(token_server) -> None:
    c, token, ops_port = token_server
    assert get(ops_port, "/livez")[0] == 200
    status, body = get(ops_port, "/readyz")
    assert status == 200 and json.loads(body)["ready"] is True, body
    ok(c, 'return 1;')
    ex = run_ts(c, f'return await callMCPTool("{STORE}echo", {{ value: 1 }});', allowed=[])
    assert not ex.success
    # With a token configured, /metrics needs it (the probes do not).
    assert get(ops_port, "/metrics")[0] == 401
    status, metrics = get(ops_port, "/metrics", {"Authorization": f"Bearer {token}"})
    assert status == 200
    for needle in (
        'code_executor_executions_total{language="typescript",outcome="ok"}',
        'code_executor_executions_total{language="typescript",outcome="code_error"} 1',
        'code_executor_tool_call_denials_total{reason="not_allowed"} 1',
        "code_executor_execution_duration_seconds_bucket",
    ):
        assert needle in metrics, f"{needle} missing from /metrics:\n{metrics[:3000]}"
    # The MCP endpoint is not served there.
    assert get(ops_port, "/mcp", {"Authorization": f"Bearer {token}"})[0] == 404
    health = c.structured("health", {})
    assert health["executions"]["maxQueued"] >= 1
    assert health["recentErrors"]["counts"].get("code_error") == 1, health
    assert {s["name"] for s in health["servers"]["states"]} == {"time", "Test-Store"}, health
