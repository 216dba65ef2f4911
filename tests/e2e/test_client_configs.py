"""Servers configured only in Codex's `config.toml` and Gemini CLI's `settings.json`, in those
clients' own spellings, are found and reached through the real server: a real `mcp-server-time`
from Codex, the Test-Store server from Gemini CLI (its `$VAR` expanded), while a server Gemini
CLI excludes and this server's own Codex entry are left out. The Gemini CLI file is the
project's own (`.gemini/settings.json`): its server is used because Gemini CLI trusts the folder
(`~/.gemini/trustedFolders.json`), and needs approval without that."""

from __future__ import annotations

import json
import sys

import pytest

from harness import E2EEnv, McpClient, STORE_SERVER, ok, run_cli, venv_script


def toml_string(s: str) -> str:
    return json.dumps(s)  # a JSON string literal is a valid TOML basic string


def configured(root, ce_binary, trusted: bool) -> E2EEnv:
    e2e = E2EEnv(root, servers=(), extra_env={"STORE_PY": sys.executable})
    codex = e2e.home / ".codex" / "config.toml"
    codex.parent.mkdir(parents=True)
    codex.write_text(
        'model = "gpt-5-codex"\n\n'
        "[mcp_servers.time]\n"
        f"command = {toml_string(venv_script('mcp-server-time'))}\n"
        'args = ["--local-timezone", "UTC"]\n'
        "startup_timeout_sec = 20\n\n"
        "[mcp_servers.code-executor]\n"
        f"command = {toml_string(str(ce_binary))}\n"
        'args = ["serve"]\n'
    )
    gemini = e2e.project / ".gemini" / "settings.json"
    gemini.parent.mkdir(parents=True)
    gemini.write_text(json.dumps({
        "mcp": {"excluded": ["excluded-one"]},
        "mcpServers": {
            "Test-Store": {"command": "$STORE_PY", "args": [str(STORE_SERVER)], "trust": True, "timeout": 30000},
            "excluded-one": {"command": "$STORE_PY", "args": [str(STORE_SERVER)]},
        },
    }))
    if trusted:
        trusted_folders = e2e.home / ".gemini" / "trustedFolders.json"
        trusted_folders.parent.mkdir(parents=True, exist_ok=True)
        trusted_folders.write_text(json.dumps({str(e2e.project): "TRUST_FOLDER"}))
    return e2e


@pytest.fixture(scope="module")
def client(tmp_path_factory, ce_binary):
    root = tmp_path_factory.mktemp("client-configs")
    e2e = configured(root, ce_binary, trusted=True)
    c = McpClient("stdio", e2e, root / "code-executor.log")
    c.start()
    yield c
    c.close()


def test_codex_and_gemini_servers_are_found(client: McpClient) -> None:
    servers = {s["name"]: s for s in client.structured("listServers")["servers"]}
    assert set(servers) == {"time", "Test-Store"}, servers


def test_codex_and_gemini_servers_are_reached(client: McpClient) -> None:
    code = """
const now = await callMCPTool("mcp__time__get_current_time", { timezone: "UTC" });
const echo = await callMCPTool("mcp__Test-Store__echo", { value: 7 });
return { tz: now.timezone, echo: echo.echo };
"""
    ex = ok(client, code, allowed=["mcp__time__get_current_time", "mcp__Test-Store__echo"], call_timeout=90)
    assert ex.result == {"tz": "UTC", "echo": 7}, ex.describe()


def test_an_untrusted_projects_gemini_server_needs_approval(tmp_path, ce_binary) -> None:
    e2e = configured(tmp_path, ce_binary, trusted=False)
    proc = run_cli(e2e, "servers", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["Test-Store"]["state"] == "needs approval", rows
    assert "code-executor trust Test-Store" in rows["Test-Store"]["error"], rows
    assert rows["time"]["state"] == "connected", rows


@pytest.mark.parametrize(
    "where",
    [
        ".config/Code/User/mcp.json",
        ".config/Code/User/profiles/-7c3e91b2/mcp.json",
        ".config/Code - Insiders/User/mcp.json",
        ".config/Code - Insiders/User/profiles/5f0a2d11/mcp.json",
        "Library/Application Support/Code/User/mcp.json",
        "Library/Application Support/Code/User/profiles/-1b9d/mcp.json",
    ],
)
def test_vscode_user_mcp_json_is_read_where_vscode_keeps_it(tmp_path, ce_binary, where: str) -> None:
    """VS Code keeps the user's `mcp.json` in the user profile: the default profile's directory,
    each other profile's `User/profiles/<id>/`, for VS Code and Insiders, on Linux and macOS."""
    e2e = E2EEnv(tmp_path, servers=())
    path = e2e.home / where
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"servers": {
        "profile-time": {"type": "stdio", "command": venv_script("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
    }}, indent=2))
    proc = run_cli(e2e, "servers", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["profile-time"]["state"] == "connected" and rows["profile-time"]["tools"] == 2, rows
