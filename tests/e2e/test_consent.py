"""Consent for what a cloned repository brings: a "repository" holding only a project config
(`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, `.codex/config.toml` or
`.gemini/settings.json`) whose server (`tests/servers/repo_server.py`) writes a marker file the
moment it starts. No subcommand (`search`, `servers`, `doctor`, `wrappers`) and nothing a real
MCP client does through `serve` (listing, searching, schemas, executions calling it) starts it
until it is approved; unapproved it shows as `needs approval` with the command that approves it.
After `code-executor trust NAME` it starts; after the repository changes its command it needs
approval again. The approvals the user gave in their client count: Claude Code's
`enabledMcpjsonServers` / `enableAllProjectMcpServers` (the project's own `.claude/settings*.json`
only once Claude Code's trust dialog was accepted for it), with `disabledMcpjsonServers`
winning; Codex's `trust_level = "trusted"`; Gemini CLI's trusted folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness import E2EEnv, McpClient, SERVERS_DIR, run_ts

REPO_SERVER = SERVERS_DIR / "repo_server.py"
NAME = "repo-tool"
PROJECT_FILES = [".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", ".codex/config.toml", ".gemini/settings.json"]


def explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"


class Repo:
    """A fake HOME (no client config approves anything) and a cloned repository whose only
    content is one project config defining `repo-tool`."""

    def __init__(self, root: Path, file: str = ".mcp.json") -> None:
        self.e2e = E2EEnv(root, servers=())
        self.root = root
        self.file = file
        self.marker = root / "started.txt"
        self.write()

    @property
    def home(self) -> Path:
        return self.e2e.home

    @property
    def project(self) -> Path:
        return self.e2e.project

    def definition(self, greeting: str) -> dict:
        return {
            "command": sys.executable,
            "args": [str(REPO_SERVER), "--marker", str(self.marker), "--greeting", greeting],
        }

    def write(self, greeting: str = "hello") -> None:
        """The repository's config, in the file's own dialect (a new greeting = a new command)."""
        path = self.project / self.file
        path.parent.mkdir(parents=True, exist_ok=True)
        d = self.definition(greeting)
        if self.file.endswith(".toml"):
            args = ", ".join(json.dumps(a) for a in d["args"])
            path.write_text(f'[mcp_servers.{NAME}]\ncommand = {json.dumps(d["command"])}\nargs = [{args}]\n')
        else:
            key = "servers" if self.file == ".vscode/mcp.json" else "mcpServers"
            path.write_text(json.dumps({key: {NAME: d}}, indent=2))

    def starts(self) -> int:
        """How many times the repository's command ran."""
        return len(self.marker.read_text().splitlines()) if self.marker.exists() else 0

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return harness.run_cli(self.e2e, *args)

    def servers(self) -> dict[str, dict]:
        proc = self.run("servers", "--json")
        assert proc.returncode == 0, explain(proc)
        return {row["name"]: row for row in json.loads(proc.stdout)}

    def home_json(self, rel: str, data: dict) -> None:
        path = self.home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))

    def claude_project_entry(self, **fields) -> None:
        """`~/.claude.json` with this project's entry, as Claude Code keeps it."""
        self.home_json(".claude.json", {"numStartups": 3, "projects": {str(self.project): {"allowedTools": [], **fields}}})


def assert_needs_approval(row: dict, repo: Repo) -> None:
    assert row["state"] == "needs approval", row
    assert f"code-executor trust {NAME}" in row["error"], row
    assert str(repo.project.resolve()) in row["error"], row
    assert row["tools"] is None, row


@pytest.mark.parametrize("file", PROJECT_FILES)
def test_no_subcommand_starts_an_unapproved_server(ce_binary, tmp_path: Path, file: str) -> None:
    repo = Repo(tmp_path, file)
    search = repo.run("search", "anything")
    assert search.returncode == 0, explain(search)
    assert repo.starts() == 0, f"`search` ran the repository's command ({file})"

    rows = repo.servers()
    assert repo.starts() == 0, f"`servers` ran the repository's command ({file})"
    assert_needs_approval(rows[NAME], repo)
    table = repo.run("servers")
    assert "needs approval" in table.stdout and f"code-executor trust {NAME}" in table.stdout, explain(table)

    doctor = repo.run("doctor")
    assert repo.starts() == 0, f"`doctor` ran the repository's command ({file})"
    assert doctor.returncode != 0, explain(doctor)
    line = next(l for l in doctor.stdout.splitlines() if f"server {NAME}" in l)
    assert line.startswith("[FAIL]") and f"needs approval: run `code-executor trust {NAME}`" in line, explain(doctor)

    wrappers = repo.run("wrappers", "--out", str(tmp_path / "wrappers"))
    assert repo.starts() == 0, f"`wrappers` ran the repository's command ({file}): {explain(wrappers)}"
    assert not (tmp_path / "wrappers" / f"{NAME.replace('-', '_')}.ts").exists()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_real_client_cannot_start_it_until_it_is_approved(ce_binary, tmp_path: Path, transport: str) -> None:
    repo = Repo(tmp_path)
    allowed = [f"mcp__{NAME}__hello"]
    call = f'return await callMCPTool("mcp__{NAME}__hello", {{ name: "Ada" }});'
    with McpClient(transport, repo.e2e, tmp_path / "before.log") as client:
        listed = {s["name"]: s for s in client.structured("listServers")["servers"]}
        assert_needs_approval(listed[NAME], repo)
        health = client.structured("health")
        states = {s["name"]: s["state"] for s in health["servers"]["states"]}
        assert states[NAME] == "needs approval", health
        found = client.structured("searchTools", {"query": "hello greets name", "detail": "full"})
        assert not any(m["server"] == NAME for m in found["matches"]), found
        schema = client.call("getToolSchema", {"name": f"mcp__{NAME}__hello"})
        assert schema.is_error, harness.dump(schema)
        ex = run_ts(client, call, allowed=allowed)
        assert not ex.success, ex.describe()
        searched = run_ts(client, f'return await searchTools("hello", {{ server: "{NAME}" }});', allowed=allowed)
        assert not searched.success or not searched.result["matches"], searched.describe()
        assert repo.starts() == 0, "the repository's command ran before it was approved"

    trust = repo.run("trust", NAME)
    assert trust.returncode == 0, explain(trust)
    assert repo.starts() == 0, "`trust` itself must not run the command"
    with McpClient(transport, repo.e2e, tmp_path / "after.log") as client:
        ex = run_ts(client, call, allowed=allowed)
        assert ex.success and "hello, Ada" in json.dumps(ex.result), ex.describe()
    assert repo.starts() == 1


def test_trust_approves_one_definition_and_a_changed_command_needs_approval_again(ce_binary, tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    listing = repo.run("trust")
    assert listing.returncode == 0, explain(listing)
    assert "needs approval" in listing.stdout and str(REPO_SERVER) in listing.stdout, explain(listing)

    unknown = repo.run("trust", "no-such-server")
    assert unknown.returncode != 0 and NAME in unknown.stderr, explain(unknown)

    trust = repo.run("trust", NAME)
    assert trust.returncode == 0, explain(trust)
    # What was approved is shown: the command line, as the repository wrote it.
    assert f"Approved {NAME}" in trust.stdout and f"--greeting hello" in trust.stdout, explain(trust)
    approvals = json.loads((repo.home / ".config/code-executor/approvals.json").read_text())
    [record] = approvals["approvals"]
    assert record["name"] == NAME and record["project"] == str(repo.project.resolve()), record
    assert record["fingerprint"].startswith("sha256:"), record

    rows = repo.servers()
    assert rows[NAME]["state"] == "connected" and rows[NAME]["tools"] == 1, rows[NAME]
    assert repo.starts() == 1

    # The repository changes its command (a `git pull`): approval again, and nothing runs.
    repo.write(greeting="pwned")
    rows = repo.servers()
    assert_needs_approval(rows[NAME], repo)
    assert repo.starts() == 1, "a changed command ran on the strength of the old approval"
    stale = repo.run("trust", "--list")
    assert "match no current definition" in stale.stdout, explain(stale)

    again = repo.run("trust", "--all")
    assert again.returncode == 0 and "--greeting pwned" in again.stdout, explain(again)
    assert repo.servers()[NAME]["state"] == "connected"
    assert repo.starts() == 2

    revoke = repo.run("trust", "--revoke", NAME)
    assert revoke.returncode == 0, explain(revoke)
    assert_needs_approval(repo.servers()[NAME], repo)
    assert repo.starts() == 2
    twice = repo.run("trust", "--revoke", NAME)
    assert twice.returncode != 0, explain(twice)


CLAUDE_CASES = {
    # name: (files to write: rel path under home or project -> JSON, approved?)
    "enabledMcpjsonServers in ~/.claude.json": ({"~/.claude.json": {"enabledMcpjsonServers": [NAME]}}, True),
    "enableAllProjectMcpServers in ~/.claude.json": ({"~/.claude.json": {"enableAllProjectMcpServers": True}}, True),
    "enableAllProjectMcpServers in ~/.claude/settings.json": (
        {"~/.claude/settings.json": {"enableAllProjectMcpServers": True}},
        True,
    ),
    "disabledMcpjsonServers wins": (
        {"~/.claude.json": {"enabledMcpjsonServers": [NAME], "disabledMcpjsonServers": [NAME]}},
        False,
    ),
    "the repository's own settings approve nothing": (
        {".claude/settings.json": {"enableAllProjectMcpServers": True}, ".claude/settings.local.json": {"enabledMcpjsonServers": [NAME]}},
        False,
    ),
    "the repository's own settings once Claude Code trusts the folder": (
        {"~/.claude.json": {"hasTrustDialogAccepted": True}, ".claude/settings.local.json": {"enabledMcpjsonServers": [NAME]}},
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(CLAUDE_CASES))
def test_claude_code_approvals_are_honoured(ce_binary, tmp_path: Path, case: str) -> None:
    files, approved = CLAUDE_CASES[case]
    repo = Repo(tmp_path)
    for rel, data in files.items():
        if rel == "~/.claude.json":
            repo.claude_project_entry(**data)
        elif rel.startswith("~/"):
            repo.home_json(rel[2:], data)
        else:
            (repo.project / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo.project / rel).write_text(json.dumps(data))
    rows = repo.servers()
    if approved:
        assert rows[NAME]["state"] == "connected", rows
        assert repo.starts() == 1
    else:
        assert repo.starts() == 0, f"{case}: the command ran"
        if "disabled" in case:
            assert NAME not in rows, rows
        else:
            assert_needs_approval(rows[NAME], repo)


@pytest.mark.parametrize("file", [".codex/config.toml", ".gemini/settings.json"])
def test_codex_and_gemini_folder_trust_count(ce_binary, tmp_path: Path, file: str) -> None:
    repo = Repo(tmp_path, file)
    project = str(repo.project)
    if file.startswith(".codex"):
        (repo.home / ".codex").mkdir(parents=True)
        (repo.home / ".codex/config.toml").write_text(f'[projects.{json.dumps(project)}]\ntrust_level = "untrusted"\n')
        assert_needs_approval(repo.servers()[NAME], repo)
        (repo.home / ".codex/config.toml").write_text(f'[projects.{json.dumps(project)}]\ntrust_level = "trusted"\n')
    else:
        repo.home_json(".gemini/trustedFolders.json", {project: "DO_NOT_TRUST"})
        assert_needs_approval(repo.servers()[NAME], repo)
        repo.home_json(".gemini/trustedFolders.json", {project: "TRUST_FOLDER"})
    assert repo.starts() == 0
    assert repo.servers()[NAME]["state"] == "connected"
    assert repo.starts() == 1
