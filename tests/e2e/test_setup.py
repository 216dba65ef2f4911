"""`code-executor setup` on copies of realistic client configs (tests/fixtures/clients): the
dry run writes nothing and prints the diff, `--yes` changes only what it must (checked byte for
byte), backs files up in code-executor's state directory (never beside the file) and is
idempotent, `--disable-others` switches servers off with the mechanism each client honours
(VS Code, Cursor and Claude Desktop have none in their files: the entry moves out) while
code-executor still reaches them (a project's servers in that project only, and a project's
unapproved servers left alone), `--restore` puts the files back byte for byte, a symlinked
`~/.claude.json` stays a link and its target is written, and an unparsable config is named
with its line."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import harness

FIXTURES = harness.REPO / "tests" / "fixtures" / "clients"
COMMAND = "/opt/bin/code-executor"

# client id -> (fixture dir, the file code-executor is registered in, relative to the world root)
CLIENTS = {
    "claude-code": ("claude-code", "home/.claude.json"),
    "cursor": ("cursor", "home/.cursor/mcp.json"),
    "vscode": ("vscode", "project/.vscode/mcp.json"),
    "claude-desktop": ("claude-desktop", "home/.config/Claude/claude_desktop_config.json"),
    "codex": ("codex", "home/.codex/config.toml"),
    "gemini": ("gemini", "home/.gemini/settings.json"),
}


class World:
    """A temporary HOME and project holding copies of one client's config files."""

    def __init__(self, root: Path, fixture: str) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir()
        self.project.mkdir()
        for src in (FIXTURES / fixture).rglob("*"):
            if src.is_file():
                dest = root / src.relative_to(FIXTURES / fixture)
                dest.parent.mkdir(parents=True, exist_ok=True)
                text = src.read_text()
                text = text.replace("@PROJECT@", str(self.project))
                text = text.replace("@TIME@", harness.venv_script("mcp-server-time"))
                dest.write_text(text)

    def env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "CODE_EXECUTOR_PROJECT_DIR": str(self.project),
            "CODE_EXECUTOR_RUNTIME_DIR": str(harness.runtime_dir()),
            "CODE_EXECUTOR_CONNECT_TIMEOUT_MS": "15000",
        }
        # `setup` installs the runtimes and the Pyodide snapshot unless they are there: the
        # shared cache holds a verified snapshot already.
        for passthrough in ("CODE_EXECUTOR_CACHE_DIR", "CODE_EXECUTOR_RUNTIME_MIRROR"):
            if os.environ.get(passthrough):
                env[passthrough] = os.environ[passthrough]
        return env

    def run(self, *args: str, timeout: float = 120, project: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = self.env()
        if project is not None:
            env["CODE_EXECUTOR_PROJECT_DIR"] = str(project)
        return subprocess.run(
            [str(harness.binary()), *args],
            cwd=project or self.project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def setup(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("setup", "--command", COMMAND, *args)

    def files(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.root)): p.read_bytes() for p in sorted(self.root.rglob("*")) if p.is_file()}


BACKUPS = "home/.local/state/code-executor/backups"


def escaped(path: Path) -> str:
    return str(path).replace("%", "%25").replace("/", "%2F")


def explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"


def servers_in(path: Path) -> dict:
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text())["mcp_servers"]
    data = harness_jsonc(path.read_text())
    return data.get("servers") or data.get("mcpServers")


def harness_jsonc(text: str) -> dict:
    """JSON with // comments and trailing commas (what VS Code writes), for the checks only."""
    out, i, in_str = [], 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    import re

    return json.loads(re.sub(r",(\s*[}\]])", r"\1", "".join(out)))


def only_insertions(before: str, after: str) -> list[str]:
    """The problems, if `after` is not `before` with lines inserted (a removed line may only come
    back with a comma appended, as JSON needs before a new sibling)."""
    problems = []
    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    for r in removed:
        if r + "," not in added:
            problems.append(f"line changed or lost: {r!r}")
    return problems


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_dry_run_prints_the_diff_and_writes_nothing(ce_binary, tmp_path: Path, client: str) -> None:
    fixture, target = CLIENTS[client]
    world = World(tmp_path, fixture)
    before = world.files()
    proc = world.setup("--client", client, "--dry-run", "--disable-others", "--no-index")
    assert proc.returncode == 0, explain(proc)
    assert world.files() == before, "a dry run changed files"
    assert f"+++ {world.root / target}" in proc.stdout, explain(proc)
    assert f'"{COMMAND}"' in proc.stdout, explain(proc)
    assert "Dry run: nothing was written." in proc.stdout, explain(proc)


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_yes_registers_keeps_everything_else_backs_up_and_is_idempotent(
    ce_binary, tmp_path: Path, client: str
) -> None:
    fixture, target = CLIENTS[client]
    world = World(tmp_path, fixture)
    before = world.files()
    proc = world.setup("--client", client, "--yes", "--no-index")
    assert proc.returncode == 0, explain(proc)
    after = world.files()

    # Only the target changed; a backup in the state directory holds its old bytes, with the
    # run's manifest; nothing appears beside the target.
    new = sorted(k for k in after if k not in before)
    assert len(new) == 2 and all(k.startswith(BACKUPS + "/") for k in new), new
    copy = next(k for k in new if not k.endswith("/manifest.json"))
    assert copy.rsplit("/", 1)[1] == escaped(world.root / target), new
    assert after[copy] == before[target]
    assert not any(".bak" in k for k in after), sorted(after)
    assert f"Backups of the old files: {world.root / BACKUPS}/" in proc.stdout, explain(proc)
    for name, data in before.items():
        if name != target:
            assert after[name] == data, f"{name} changed"

    # The target only gained the entry: every old line is still there, byte for byte.
    old, new = before[target].decode(), after[target].decode()
    assert only_insertions(old, new) == [], difflib.unified_diff(old.splitlines(), new.splitlines())
    entry = servers_in(world.root / target)["code-executor"]
    assert entry["command"] == COMMAND and entry["args"] == ["serve"], entry
    assert "added" in proc.stdout, explain(proc)

    # Twice: nothing changes, no new backup.
    again = world.setup("--client", client, "--yes", "--no-index")
    assert again.returncode == 0, explain(again)
    assert world.files() == after
    assert "already registered" in again.stdout, explain(again)


def test_disable_others_keeps_the_servers_reachable(ce_binary, tmp_path: Path) -> None:
    world = World(tmp_path, "claude-code")
    claude = world.home / ".claude.json"
    proc = world.setup("--client", "claude-code", "--yes", "--disable-others", "--no-index")
    assert proc.returncode == 0, explain(proc)

    data = json.loads(claude.read_text())
    project = data["projects"][str(world.project)]
    # Claude Code's own switches: per project, user/local scope vs .mcp.json servers. The
    # project's `.mcp.json` server was never approved (`enabledMcpjsonServers` is empty): it is
    # left alone, neither switched off nor copied, and the summary says how to approve it.
    assert sorted(project["disabledMcpServers"]) == ["github", "postgres", "time"], project
    assert project["disabledMcpjsonServers"] == [], project
    assert "need approval first: sentry" in proc.stdout and "code-executor trust sentry" in proc.stdout, explain(proc)
    # The other project's entry is untouched.
    assert data["projects"]["/home/ada/other-project"]["disabledMcpServers"] == ["github"]
    own = harness_jsonc((world.home / ".config/code-executor/servers.json").read_text())
    ours = own["mcpServers"]
    assert set(ours) == {"github", "time"}, own
    assert ours["time"]["command"] == harness.venv_script("mcp-server-time")
    # The local-scope server is this project's only.
    assert set(own["projects"][str(world.project.resolve())]["mcpServers"]) == {"postgres"}, own

    # code-executor still reaches `time` (the client no longer loads it).
    servers = world.run("servers", "--json")
    assert servers.returncode == 0, explain(servers)
    rows = {r["name"]: r for r in json.loads(servers.stdout)}
    assert rows["time"]["state"] == "connected" and rows["time"]["tools"] == 2, rows.get("time")
    assert "code-executor" not in rows
    search = world.run("search", "current time", "--json")
    assert "mcp__time__get_current_time" in search.stdout, explain(search)

    # Without its own servers file it would not: the client's switch is honoured.
    (world.home / ".config/code-executor/servers.json").rename(tmp_path / "servers.json.off")
    rows = {r["name"] for r in json.loads(world.run("servers", "--json").stdout)}
    assert "time" not in rows, rows

    # Idempotent with --disable-others too.
    (tmp_path / "servers.json.off").rename(world.home / ".config/code-executor/servers.json")
    snapshot = world.files()
    again = world.setup("--client", "claude-code", "--yes", "--disable-others", "--no-index")
    assert again.returncode == 0, explain(again)
    assert world.files() == snapshot


def test_disable_others_keeps_a_projects_servers_in_that_project(ce_binary, tmp_path: Path) -> None:
    """Setup in one project must not make its servers every project's (they were copied into
    the global `mcpServers` of code-executor's own file)."""
    world = World(tmp_path, "claude-code")
    # A local-scope server that runs, and the project's `.mcp.json` server, approved in Claude Code.
    claude = world.home / ".claude.json"
    data = json.loads(claude.read_text())
    entry = data["projects"][str(world.project)]
    entry["mcpServers"] = {"local-time": {"type": "stdio", "command": harness.venv_script("mcp-server-time"), "args": []}}
    entry["enabledMcpjsonServers"] = ["repo-time"]
    claude.write_text(json.dumps(data, indent=2))
    (world.project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"repo-time": {"command": harness.venv_script("mcp-server-time"), "args": ["--local-timezone", "UTC"]}}}
    ))
    proc = world.setup("--client", "claude-code", "--yes", "--disable-others", "--no-index")
    assert proc.returncode == 0, explain(proc)
    entry = json.loads(claude.read_text())["projects"][str(world.project)]
    assert entry["disabledMcpjsonServers"] == ["repo-time"], entry
    assert "local-time" in entry["disabledMcpServers"], entry
    own = harness_jsonc((world.home / ".config/code-executor/servers.json").read_text())
    assert set(own["mcpServers"]) == {"github", "time"}, own
    assert set(own["projects"][str(world.project.resolve())]["mcpServers"]) == {"local-time", "repo-time"}, own

    def names(project: Path) -> dict[str, str]:
        proc = world.run("servers", "--json", project=project)
        assert proc.returncode == 0, explain(proc)
        return {r["name"]: r["state"] for r in json.loads(proc.stdout)}

    # In this project code-executor still reaches them, through its own file. `repo-time`
    # launches exactly what the user's `time` launches: one server, `repo-time` its alias.
    here = names(world.project)
    assert here["local-time"] == "connected" and here["time"] == "connected", here
    rows = {r["name"]: r for r in json.loads(world.run("servers", "--json").stdout)}
    assert "repo-time" not in rows and rows["time"]["aliases"] == ["repo-time"], rows
    # In another project they do not exist.
    elsewhere = tmp_path / "another-project"
    elsewhere.mkdir()
    there = names(elsewhere)
    assert "time" in there, there
    assert "local-time" not in there and "repo-time" not in there and "postgres" not in there, there


def test_setup_writes_through_a_symlinked_claude_json(ce_binary, tmp_path: Path) -> None:
    world = World(tmp_path, "claude-code")
    link = world.home / ".claude.json"
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude.json"
    link.rename(real)
    link.symlink_to(Path("..") / "dotfiles" / "claude.json")
    before = real.read_text()
    proc = world.setup("--client", "claude-code", "--yes", "--no-index")
    assert proc.returncode == 0, explain(proc)
    assert link.is_symlink(), "setup replaced the symlink with a regular file"
    assert link.resolve() == real.resolve()
    entry = json.loads(real.read_text())["mcpServers"]["code-executor"]
    assert entry["command"] == COMMAND, entry
    assert only_insertions(before, real.read_text()) == []
    # The backup holds the old text, in the state directory; no stray file beside the link
    # or the target.
    backups = list((world.root / BACKUPS).glob(f"*/{escaped(link)}"))
    assert len(backups) == 1 and backups[0].read_text() == before, backups
    assert sorted(p.name for p in dotfiles.iterdir()) == ["claude.json"]
    assert not list(world.home.glob(".claude.json.*"))


@pytest.mark.parametrize(
    "client, check",
    [
        # Cursor has no switch in mcp.json (it ignores "disabled": true): the entry moves out.
        ("cursor", lambda w: "time" not in servers_in(w.home / ".cursor/mcp.json")),
        ("codex", lambda w: servers_in(w.home / ".codex/config.toml")["time"]["enabled"] is False),
        ("gemini", lambda w: "time" in harness_jsonc((w.home / ".gemini/settings.json").read_text())["mcp"]["excluded"]),
    ],
)
def test_disable_others_uses_each_clients_switch(ce_binary, tmp_path: Path, client, check) -> None:
    world = World(tmp_path, client)
    proc = world.setup("--client", client, "--yes", "--disable-others")
    assert proc.returncode == 0, explain(proc)
    assert check(world), explain(proc)
    # The indexing step connected to the server this client had, through code-executor's own file.
    lines = [l for l in proc.stdout.splitlines() if l.strip().startswith("time ")]
    assert lines and " 2 " in lines[0] and lines[0].rstrip().endswith("ok"), explain(proc)
    assert "Summary:" in proc.stdout


def test_vscode_disable_others_moves_servers_out_and_restore_puts_them_back(ce_binary, tmp_path: Path) -> None:
    """VS Code loads a server whatever `"disabled"` says: `--disable-others` moves the entries
    out of the workspace `mcp.json` and the user profile's (a profile directory, found as VS
    Code keeps it), code-executor keeps reaching them through its own file and no longer sees
    them in VS Code's, no backup lands in the project, and `--restore` puts every file back
    byte for byte."""
    world = World(tmp_path, "vscode")
    profile = world.home / ".config/Code/User/profiles/-4a1b2c3d/mcp.json"
    profile.parent.mkdir(parents=True)
    profile.write_text(json.dumps({"servers": {
        "time": {"type": "stdio", "command": harness.venv_script("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
    }}, indent=2))
    trust = world.run("trust", "--all")
    assert trust.returncode == 0, explain(trust)
    before = world.files()
    project_before = sorted(p.relative_to(world.project) for p in world.project.rglob("*"))

    proc = world.setup("--client", "vscode", "--yes", "--disable-others", "--no-index")
    assert proc.returncode == 0, explain(proc)
    workspace = servers_in(world.project / ".vscode/mcp.json")
    assert set(workspace) == {"code-executor"}, workspace
    assert harness_jsonc(profile.read_text())["servers"] == {}, profile.read_text()
    text = (world.project / ".vscode/mcp.json").read_text()
    assert "disabled" not in text and "// Inputs are prompted" in text, text
    own = harness_jsonc((world.home / ".config/code-executor/servers.json").read_text())
    assert set(own["mcpServers"]) == {"time"}, own
    assert set(own["projects"][str(world.project.resolve())]["mcpServers"]) == {"git", "fetch"}, own
    # Nothing new inside the project but the edit itself.
    assert sorted(p.relative_to(world.project) for p in world.project.rglob("*")) == project_before

    # code-executor reaches `time` through its own file; VS Code's files no longer hold it.
    rows = {r["name"]: r for r in json.loads(world.run("servers", "--json").stdout)}
    assert rows["time"]["state"] == "connected", rows
    (world.home / ".config/code-executor/servers.json").rename(tmp_path / "servers.json.off")
    rows = {r["name"] for r in json.loads(world.run("servers", "--json").stdout)}
    assert not rows & {"time", "git", "fetch"}, rows
    (tmp_path / "servers.json.off").rename(world.home / ".config/code-executor/servers.json")

    restore = world.run("setup", "--restore")
    assert restore.returncode == 0, explain(restore)
    assert "restored " + str(world.project / ".vscode/mcp.json") in restore.stdout, explain(restore)
    after = world.files()
    for name, data in before.items():
        assert after.get(name) == data, f"{name} not restored byte for byte"
    # The servers file setup created is gone again; only backups were added (and the cache that
    # `servers` keeps of what each downstream server spoke).
    cache = "home/.cache/code-executor/"
    added = [k for k in after if k not in before and not k.startswith(cache)]
    assert all(k.startswith(BACKUPS + "/") for k in added), sorted(added)


def test_unparsable_config_is_named_with_its_line(ce_binary, tmp_path: Path) -> None:
    world = World(tmp_path, "broken")
    before = world.files()
    proc = world.setup("--client", "cursor", "--yes", "--no-index")
    assert proc.returncode != 0, explain(proc)
    message = proc.stderr
    assert str(world.home / ".cursor/mcp.json") in message and "line 5" in message, explain(proc)
    assert world.files() == before


def test_refuses_without_confirmation_when_not_interactive(ce_binary, tmp_path: Path) -> None:
    world = World(tmp_path, "cursor")
    before = world.files()
    proc = world.setup("--client", "cursor", "--no-index")
    assert proc.returncode != 0, explain(proc)
    assert "--yes" in proc.stderr, explain(proc)
    assert world.files() == before


def test_survey_lists_servers_per_client(ce_binary, tmp_path: Path) -> None:
    world = World(tmp_path, "claude-code")
    for extra in ("codex", "gemini", "vscode"):
        shutil.copytree(FIXTURES / extra, tmp_path, dirs_exist_ok=True)
    proc = world.setup("--dry-run", "--no-index")
    assert proc.returncode == 0, explain(proc)
    out = proc.stdout
    for label in ("Claude Code", "Codex", "Gemini CLI", "VS Code"):
        assert label in out, explain(proc)
    assert "github, time" in out and "postgres" in out and "sentry (needs approval)" in out, explain(proc)
    assert "context7, time, figma" in out, explain(proc)


@pytest.mark.parametrize(
    "sub, options",
    [
        ("setup", ["--client", "--scope", "--disable-others", "--dry-run", "--yes", "--no-index", "--no-runtimes", "--restore"]),
        ("wrappers", ["--lang", "--out", "--server", "--check"]),
    ],
)
def test_help(ce_binary, tmp_path: Path, sub: str, options: list[str]) -> None:
    world = World(tmp_path, "cursor")
    proc = world.run(sub, "--help")
    assert proc.returncode == 0, explain(proc)
    for option in options:
        assert option in proc.stdout, f"{sub} --help does not mention {option}:\n{proc.stdout}"
