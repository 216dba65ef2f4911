"""The server as two third-party testers see it, over stdio and HTTP: `mcp-conform` (a conformance
prober: handshake, envelope, tools/list, -32601 for an unknown method) and `mcp-fuzzer` (protocol
and tool fuzzing with malformed and attack inputs), both pinned in requirements.txt and run
against the release binary with a bounded budget (about 30 s in all).

A tester's verdict fails this test when it is ours: a crash, a hang, an internal error, a
conformance check failed, or a malformed input accepted that the specification says to refuse.
Findings we judge wrong are let through here one by one, each with its reason (see
`not_ours`); every finding is printed into the CI log either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import E2EEnv, http_server

pytestmark = pytest.mark.needs_binary

# Our tools: a call of any other name is refused -32602 (docs/interface.md, "Protocol errors").
TOOLS = {"executeTypescript", "executePython", "searchTools", "getToolSchema", "listServers", "health"}
LOG_LEVELS = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}


def cli_of(name: str) -> str:
    """The tester's CLI; missing, the test is skipped loudly (failed in CI)."""
    try:
        return harness.venv_script(name)
    except RuntimeError as missing:
        message = f"{name} is not installed ({missing}): pip install -r tests/e2e/requirements.txt"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(f"SKIPPED LOUDLY: {message}")


def env_for_tester(e2e: E2EEnv) -> dict[str, str]:
    """The environment of a tester: the server's own (a stdio tester starts the server with it),
    no colours."""
    return {**e2e.env(), "NO_COLOR": "1", "TERM": "dumb"}


def show(capsys: pytest.CaptureFixture[str], lines: list[str]) -> None:
    with capsys.disabled():
        print("\n" + "\n".join(lines))


# ------------------------------------------------------------------------------------------
# mcp-conform
# ------------------------------------------------------------------------------------------


def conform(capsys: pytest.CaptureFixture[str], e2e: E2EEnv, *target: str) -> dict[str, Any]:
    proc = subprocess.run(
        [cli_of("mcp-conform"), "server", *target, "--format", "json", "--timeout", "20"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env_for_tester(e2e),
        cwd=e2e.project,
    )
    assert proc.stdout.strip(), f"mcp-conform printed nothing (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    report = json.loads(proc.stdout)
    lines = [f"mcp-conform {' '.join(target)}: {report['passed']}/{report['total']} passed"]
    lines += [f"  FAILED {c['name']}: {c['message']}" for c in report["checks"] if not c["passed"]]
    show(capsys, lines)
    return report


def assert_conforms(report: dict[str, Any]) -> None:
    assert report["fatal_error"] is None, report
    failed = [c for c in report["checks"] if not c["passed"]]
    assert not failed and report["ok"], failed
    names = {c["name"] for c in report["checks"]}
    assert {"tools_list", "method_not_found", "protocol_version"} <= names, names


def test_mcp_conform_over_stdio(tmp_path: Path, ce_binary: Path, capsys) -> None:
    e2e = E2EEnv(tmp_path, servers=())
    assert_conforms(conform(capsys, e2e, "--transport", "stdio", "--command", f"{ce_binary} serve"))


def test_mcp_conform_over_http(tmp_path: Path, ce_binary: Path, capsys) -> None:
    with http_server(tmp_path, servers=()) as (port, e2e, proc):
        assert_conforms(conform(capsys, e2e, "--transport", "http", "--url", f"http://127.0.0.1:{port}"))
        assert proc.poll() is None, "the server ended"


# ------------------------------------------------------------------------------------------
# mcp-fuzzer
# ------------------------------------------------------------------------------------------

# Findings that say nothing of our answers: how long a call took (running code takes longer
# than a look-up), that two answers differ (health reports live state), how the process's
# memory grew over a few dozen calls (warm worker processes starting). Printed, not judged.
REPORTED_ONLY = {"performance_outlier", "non_determinism", "memory_growth"}
# Findings that are ours whatever their details.
ALWAYS_OURS = {"crash", "hang", "internal_error", "oversized_response"}


def not_ours(finding: dict[str, Any]) -> str | None:
    """Why a finding of `accepted_malformed`, `error_leakage` or `injection_reflection` is not a
    fault of ours, or None when it is one."""
    category, target = finding["category"], finding["target"]
    evidence = finding.get("evidence") or {}
    sent = evidence.get("input") if isinstance(evidence.get("input"), dict) else {}
    params = sent.get("params") if isinstance(sent.get("params"), dict) else {}
    if category == "accepted_malformed":
        if "id" not in sent and sent.get("method", "").startswith("notifications/"):
            return "a notification: JSON-RPC answers none, so there is no acceptance to see"
        if target == "PingRequest":
            return "ping takes any params (they are ignored); the answer {} is the spec's"
        if target == "SetLevelRequest" and params.get("level") in LOG_LEVELS:
            return f"{params.get('level')!r} is a valid log level"
        if target == "ListToolsRequest" and params.get("cursor") in (None, ""):
            return "an empty cursor is read as none: the first (only) page is the answer"
        if target == "InitializeRequest":
            return (
                "an unsupported protocolVersion is answered with one we support, as the "
                "lifecycle chapter says; the client then decides"
            )
        if target == "CallToolRequest" or finding.get("kind") == "tool":
            name = params.get("name", target)
            if name in TOOLS or target in TOOLS:
                return (
                    "a call of one of our tools with arguments of the right shape: what the code "
                    "or the look-up makes of them is a tool result (isError when it failed), "
                    "as the tools chapter says"
                )
        return None
    if category == "error_leakage" and (target == "CallToolRequest" or target in TOOLS):
        return "the only stack traces in our answers are those of the code the client ran"
    if category == "injection_reflection" and (target == "CallToolRequest" or target in TOOLS):
        return "an execution returns what its code prints, and a refusal quotes what it refuses, as text"
    return None


def fuzz(capsys: pytest.CaptureFixture[str], e2e: E2EEnv, out: Path, *target: str) -> list[dict[str, Any]]:
    """`mcp-fuzzer` in mode `all` (protocol types and each tool) with a small budget; its
    findings."""
    proc = subprocess.run(
        [
            cli_of("mcp-fuzzer"), *target,
            "--mode", "all", "--phase", "aggressive", "--runs", "2", "--runs-per-type", "1",
            "--seed", "7", "--timeout", "30", "--no-corpus", "--max-concurrency", "2",
            "--output-dir", str(out), "--fs-root", str(out / "fs"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env_for_tester(e2e),
        cwd=e2e.project,
    )
    assert proc.returncode == 0, f"mcp-fuzzer exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    found = list(out.rglob("findings.json"))
    assert found, f"mcp-fuzzer wrote no findings.json:\n{proc.stdout[-3000:]}"
    findings = json.loads(found[0].read_text()).get("findings", [])
    lines = [f"mcp-fuzzer {' '.join(target)}: {len(findings)} findings"]
    for f in findings:
        reason = not_ours(f) if f["category"] not in ALWAYS_OURS | REPORTED_ONLY else None
        verdict = "reported" if f["category"] in REPORTED_ONLY else ("not ours: " + reason if reason else "OURS")
        lines.append(f"  {f['category']} {f['target']} run {f.get('run')}: {verdict}")
    show(capsys, lines)
    return findings


def assert_no_fault_of_ours(findings: list[dict[str, Any]]) -> None:
    ours = [
        f
        for f in findings
        if f["category"] in ALWAYS_OURS or (f["category"] not in REPORTED_ONLY and not_ours(f) is None)
    ]
    assert not ours, json.dumps(ours, indent=1)[:6000]


def test_mcp_fuzzer_over_stdio(tmp_path: Path, ce_binary: Path, capsys) -> None:
    e2e = E2EEnv(tmp_path / "world", servers=())
    findings = fuzz(capsys, e2e, tmp_path / "fuzz", "--protocol", "stdio", "--endpoint", f"{ce_binary} serve")
    assert_no_fault_of_ours(findings)


def test_mcp_fuzzer_over_http(tmp_path: Path, ce_binary: Path, capsys) -> None:
    with http_server(tmp_path / "world", servers=()) as (port, e2e, proc):
        url = f"http://127.0.0.1:{port}/mcp"
        findings = fuzz(capsys, e2e, tmp_path / "fuzz", "--protocol", "http", "--endpoint", url)
        assert_no_fault_of_ours(findings)
        # Still serving after the fuzzing.
        assert proc.poll() is None, "the server ended"
        request = urllib.request.Request(
            url,
            data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            tools = json.loads(response.read())["result"]["tools"]
        assert {tool["name"] for tool in tools} == TOOLS
