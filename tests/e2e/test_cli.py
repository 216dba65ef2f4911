"""The command line: help of every subcommand, `servers`, `search`, `doctor`."""

from __future__ import annotations

import json
import subprocess

import pytest

import harness
from harness import E2EEnv, run_cli

SUBCOMMAND_OPTIONS = {
    "serve": ["--http"],
    "servers": ["--json"],
    "search": ["--server", "--limit", "--json"],
    "doctor": [],
    "fetch-runtimes": ["--mirror"],
}


def explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"


def test_top_level_help(ce_binary, e2e_env: E2EEnv) -> None:
    proc = run_cli(e2e_env, "--help", timeout=30)
    assert proc.returncode == 0, explain(proc)
    for sub in SUBCOMMAND_OPTIONS:
        assert sub in proc.stdout, f"{sub} missing from --help:\n{proc.stdout}"


@pytest.mark.parametrize("sub", sorted(SUBCOMMAND_OPTIONS))
def test_subcommand_help(ce_binary, e2e_env: E2EEnv, sub: str) -> None:
    proc = run_cli(e2e_env, sub, "--help", timeout=30)
    assert proc.returncode == 0, explain(proc)
    assert "Usage" in proc.stdout or "usage" in proc.stdout, explain(proc)
    for opt in SUBCOMMAND_OPTIONS[sub]:
        assert opt in proc.stdout, f"{sub} --help does not mention {opt}:\n{proc.stdout}"


def test_unknown_subcommand_fails(ce_binary, e2e_env: E2EEnv) -> None:
    proc = run_cli(e2e_env, "no-such-subcommand", timeout=30)
    assert proc.returncode != 0, explain(proc)


def unwrap(data, key: str) -> list:
    """`--json` output: accept a bare list or the MCP tool's shape `{key: [...]}`."""
    if isinstance(data, dict):
        data = data[key]
    assert isinstance(data, list), data
    return data


def test_servers_lists_all(ce_binary, e2e_env: E2EEnv) -> None:
    proc = run_cli(e2e_env, "servers")
    assert proc.returncode == 0, explain(proc)
    for name in ("time", "git", "Test-Store", "broken"):
        assert name in proc.stdout, f"{name} missing:\n{explain(proc)}"

    proc = run_cli(e2e_env, "servers", "--json")
    assert proc.returncode == 0, explain(proc)
    rows = {r["name"]: r for r in unwrap(json.loads(proc.stdout), "servers")}
    assert set(rows) == {"time", "git", "Test-Store", "broken"}
    for r in rows.values():
        assert r["transport"] == "stdio"
        assert r["state"] in ("idle", "connected", "failed", "disabled")
    assert rows["broken"]["state"] != "connected"
    for name in ("time", "git", "Test-Store"):
        assert rows[name]["state"] != "failed", rows[name]
    if rows["time"]["state"] == "connected":
        assert rows["time"]["tools"] == 2
    if rows["broken"]["state"] == "failed":
        assert rows["broken"]["error"]


def test_search(ce_binary, e2e_env: E2EEnv) -> None:
    proc = run_cli(e2e_env, "search", "time")
    assert proc.returncode == 0, explain(proc)
    assert "mcp__time__get_current_time" in proc.stdout, explain(proc)

    proc = run_cli(e2e_env, "search", "inventory stock", "--server", "Test-Store", "--limit", "2", "--json")
    assert proc.returncode == 0, explain(proc)
    matches = unwrap(json.loads(proc.stdout), "matches")
    assert len(matches) == 2, matches
    assert {m["server"] for m in matches} == {"Test-Store"}
    assert all(m["name"] == f"mcp__{m['server']}__{m['tool']}" for m in matches)


def test_doctor_fails_while_broken_is_configured(ce_binary, e2e_env: E2EEnv) -> None:
    proc = run_cli(e2e_env, "doctor")
    assert proc.returncode != 0, explain(proc)
    assert "broken" in proc.stdout + proc.stderr, explain(proc)


def test_doctor_ok_with_good_servers(ce_binary, good_env: E2EEnv) -> None:
    proc = run_cli(good_env, "doctor")
    assert proc.returncode == 0, explain(proc)
    out = proc.stdout + proc.stderr
    for name in ("time", "git", "Test-Store"):
        assert name in out, f"doctor does not mention {name}:\n{explain(proc)}"


def test_doctor_reports_missing_runtime(ce_binary, good_env: E2EEnv, tmp_path) -> None:
    env = good_env.env()
    env["CODE_EXECUTOR_RUNTIME_DIR"] = str(tmp_path / "no-runtimes-here")
    env.pop("CODE_EXECUTOR_RUNTIME_MIRROR", None)
    proc = subprocess.run(
        [str(harness.binary()), "doctor"], cwd=good_env.project, env=env, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode != 0, explain(proc)
