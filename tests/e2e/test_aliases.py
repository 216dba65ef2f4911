"""One entry per server: the REAL `mcp-server-git` configured three times under three names in
three clients' files (Claude Code's `~/.claude.json` as `git-server`, Cursor's `~/.cursor/mcp.json`
as `git`, VS Code's user `mcp.json` as `mcp-git`; the repository written literally, as `${GIT_REPO}`
and as `${env:GIT_REPO}`) is one server, `git`, with two aliases: listed once, its `git_log`
found once and first for "git log", callable through every name, an allowlist naming an alias
admits it and one naming another server refuses it. A server launched with other env or
other args stays a server of its own."""

from __future__ import annotations

import json
import shutil

import pytest

from harness import E2EEnv, McpClient, make_git_repo, ok, run_cli, run_ts, venv_script

GIT_LOG = "mcp__git__git_log"


def git_entry(repo: str, typed: bool = False, **extra) -> dict:
    entry = {
        "command": venv_script("mcp-server-git"),
        "args": ["--repository", repo],
        "env": {"GIT_PYTHON_GIT_EXECUTABLE": shutil.which("git") or "git"},
        **extra,
    }
    return {"type": "stdio", **entry} if typed else entry


def configured(root, cursor_entry: dict | None = None) -> E2EEnv:
    repo = make_git_repo(root / "repo")
    e2e = E2EEnv(root, servers=("time",), extra_env={"GIT_REPO": str(repo)})
    claude = e2e.home / ".claude.json"
    claude.write_text(json.dumps({"numStartups": 3, "mcpServers": {"git-server": git_entry(str(repo))}}))
    cursor = e2e.home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(json.dumps({"mcpServers": {"git": cursor_entry or git_entry("${GIT_REPO}")}}))
    vscode = e2e.home / ".config" / "Code" / "User" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text(json.dumps({"servers": {"mcp-git": git_entry("${env:GIT_REPO}", typed=True)}}, indent=2))
    return e2e


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return configured(tmp_path_factory.mktemp("aliases"))


@pytest.fixture(scope="module")
def client(env):
    c = McpClient("stdio", env, env.root / "code-executor.log")
    c.start()
    yield c
    c.close()


def test_listed_once_with_its_aliases(client: McpClient) -> None:
    servers = {s["name"]: s for s in client.structured("listServers")["servers"]}
    assert set(servers) == {"git", "time"}, servers
    assert servers["git"]["aliases"] == ["git-server", "mcp-git"], servers["git"]
    assert "aliases" not in servers["time"], servers["time"]


def test_git_log_is_found_once_and_first(client: McpClient) -> None:
    sc = client.structured("searchTools", {"query": "git log", "detail": "name", "limit": 20})
    names = [m["name"] for m in sc["matches"]]
    assert names[0] == GIT_LOG, names
    assert [n for n in names if n.endswith("__git_log")] == [GIT_LOG], names
    # A server filter naming an alias searches the server.
    sc = client.structured("searchTools", {"query": "log", "server": "mcp-git", "detail": "name"})
    assert sc["matches"] and all(m["name"].startswith("mcp__git__") for m in sc["matches"]), sc


def test_the_schema_answers_to_every_name(client: McpClient) -> None:
    for name in ("mcp__git-server__git_log", "mcp__mcp-git__git_log", GIT_LOG):
        sc = client.structured("getToolSchema", {"name": name})
        assert sc["name"] == GIT_LOG and sc["server"] == "git", sc


def test_calls_through_each_alias(client: McpClient, env: E2EEnv) -> None:
    repo = json.dumps(str(env.root / "repo"))
    code = f"""
const args = {{ repo_path: {repo}, max_count: 1 }};
const out = [];
out.push(await callMCPTool("mcp__git__git_log", args));
out.push(await callMCPTool("mcp__git-server__git_log", args));
out.push(await callMCPTool("mcp-git", "git_log", args));
out.push(await callMCPTool("git-server", "git_log", args));
return out.map((r) => JSON.stringify(r).includes("Bump version to 1.1.0"));
"""
    ex = ok(client, code, allowed=[GIT_LOG], call_timeout=90)
    assert ex.result == [True, True, True, True], ex.describe()
    # Recorded under the server's canonical name.
    assert ex.tool_calls == [GIT_LOG] * 4, ex.describe()


def test_an_allowlist_naming_an_alias_admits_the_server(client: McpClient, env: E2EEnv) -> None:
    repo = json.dumps(str(env.root / "repo"))
    code = f'return JSON.stringify(await callMCPTool("mcp__git__git_log", {{ repo_path: {repo}, max_count: 1 }})).includes("Bump");'
    ex = ok(client, code, allowed=["mcp__mcp-git__git_log"], call_timeout=90)
    assert ex.result is True, ex.describe()
    ex = ok(client, code, allowed=["mcp__git-server__*"], call_timeout=90)
    assert ex.result is True, ex.describe()


def test_an_allowlist_naming_another_server_refuses(client: McpClient, env: E2EEnv) -> None:
    repo = json.dumps(str(env.root / "repo"))
    for target in ('"mcp__git__git_log"', '"mcp__mcp-git__git_log"', '"git-server", "git_log"'):
        code = f"""
try {{ await callMCPTool({target}, {{ repo_path: {repo}, max_count: 1 }}); return "called"; }}
catch (e) {{ return String(e.message ?? e); }}
"""
        ex = run_ts(client, code, allowed=["mcp__time__*"], call_timeout=90)
        assert ex.success, ex.describe()
        assert "not in allowedTools" in ex.result or "not allowed" in ex.result, ex.describe()
        assert ex.tool_calls == [], ex.describe()


def test_cli_lists_once_and_searches_by_alias(env: E2EEnv) -> None:
    proc = run_cli(env, "servers", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert set(rows) == {"git", "time"} and rows["git"]["aliases"] == ["git-server", "mcp-git"], rows
    text = run_cli(env, "servers")
    assert "also named: git-server, mcp-git" in text.stdout, text.stdout
    proc = run_cli(env, "search", "git log", "--server", "git-server", "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["matches"][0]["name"] == GIT_LOG, found
    doctor = run_cli(env, "doctor", timeout=180)
    line = next(l for l in doctor.stdout.splitlines() if "server git:" in l)
    assert "also named git-server (Claude Code (user scope) config" in line, doctor.stdout
    # Reporting aliases prints no launch details.
    assert env.canary not in doctor.stdout


@pytest.mark.parametrize(
    "difference",
    [
        {"env": {"GIT_PYTHON_GIT_EXECUTABLE": shutil.which("git") or "git", "GIT_TRACE": "0"}},
        {"args": ["--repository", "${GIT_REPO}", "--verbose"]},
    ],
    ids=["other-env", "other-args"],
)
def test_a_server_launched_differently_is_a_server_of_its_own(tmp_path, ce_binary, difference) -> None:
    cursor = {**git_entry("${GIT_REPO}"), **difference}
    env = configured(tmp_path, cursor_entry=cursor)
    proc = run_cli(env, "servers", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    # The other two are still one server, under the shorter of their names.
    assert set(rows) == {"git", "mcp-git", "time"}, rows
    assert "aliases" not in rows["git"] and rows["mcp-git"]["aliases"] == ["git-server"], rows
