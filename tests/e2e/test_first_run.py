"""A new user's first steps, in a fresh HOME: `setup` (which also installs the runtimes, with
progress), then `doctor` and `serve` with nothing said about the entry setup wrote; the first
`serve` without runtimes answering at once while it installs them; the servers file in both
shapes; a misspelt setting; `serve --http` with a host name or a taken port; `--version`; an
empty workspace; a crashing downstream server's last words in `servers` and `doctor`."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import harness

SELF_WARNING = "launches this server itself"


def explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"


class Home:
    """A fresh HOME and project; runtimes shared unless `runtime_dir` is given."""

    def __init__(self, root: Path, runtime_dir: Path | None = None, cache_dir: Path | None = None) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir()
        self.project.mkdir()
        self.runtime_dir = runtime_dir or harness.runtime_dir()
        self.cache_dir = cache_dir or Path(os.environ.get("CODE_EXECUTOR_CACHE_DIR") or self.home / ".cache/code-executor")
        self.extra: dict[str, str] = {}

    def env(self) -> dict[str, str]:
        env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "CODE_EXECUTOR_PROJECT_DIR": str(self.project),
            "CODE_EXECUTOR_RUNTIME_DIR": str(self.runtime_dir),
            "CODE_EXECUTOR_CACHE_DIR": str(self.cache_dir),
            "CODE_EXECUTOR_CONNECT_TIMEOUT_MS": "15000",
        }
        mirror = harness.runtime_mirror()
        if mirror is not None:
            env["CODE_EXECUTOR_RUNTIME_MIRROR"] = str(mirror)
        env.update(self.extra)
        return env

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(harness.binary()), *args], cwd=self.project, env=self.env(), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=timeout,
        )

    def claude_code(self, servers: dict) -> Path:
        path = self.home / ".claude.json"
        path.write_text(json.dumps({"mcpServers": servers}, indent=2))
        return path

    def servers_file(self, text: str) -> Path:
        path = self.home / ".config/code-executor/servers.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


def time_server() -> dict:
    return {"command": harness.venv_script("mcp-server-time")}


class Stdio:
    """`serve` over stdio, spoken to line by line (JSON-RPC), timing each answer."""

    def __init__(self, home: Home) -> None:
        self.proc = subprocess.Popen(
            [str(harness.binary()), "serve"], cwd=home.project, env=home.env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.next_id = 0

    def send(self, method: str, params: dict | None = None, notify: bool = False) -> int:
        message: dict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        return self.next_id

    def answer(self, request_id: int, timeout: float) -> dict:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no answer to request {request_id} within {timeout} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"serve closed stdout; stderr:\n{self.stderr()}")
            message = json.loads(line)
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message

    def initialize(self, timeout: float) -> tuple[dict, float]:
        started = time.monotonic()
        rid = self.send("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "first-run-test", "version": "1"},
        })
        answer = self.answer(rid, timeout)
        took = time.monotonic() - started
        self.send("notifications/initialized", notify=True)
        return answer, took

    def call(self, tool: str, arguments: dict, timeout: float) -> dict:
        return self.answer(self.send("tools/call", {"name": tool, "arguments": arguments}), timeout)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return (err or b"").decode(errors="replace")


def test_setup_then_doctor_and_serve_say_nothing_of_our_own_entry(ce_binary, tmp_path: Path) -> None:
    # A new user: a Claude Code config, no runtimes installed yet, no snapshot.
    home = Home(tmp_path, runtime_dir=tmp_path / "runtimes", cache_dir=tmp_path / "cache")
    if harness.runtime_mirror() is None:
        pytest.skip("no runtime mirror (CODE_EXECUTOR_RUNTIME_MIRROR) to install the runtimes from")
    home.claude_code({"time": time_server()})
    setup = home.run("setup", "--client", "claude-code", "--yes", "--command", str(harness.binary()))
    assert setup.returncode == 0, explain(setup)
    # It installed the runtimes, showing each tarball's progress on stderr.
    assert "installing Deno 2.9.6 100%" in setup.stderr, explain(setup)
    assert "installing Pyodide 314.0.7 100%" in setup.stderr, explain(setup)
    assert "Sandbox runtimes: installed in" in setup.stdout, explain(setup)
    assert (home.runtime_dir / "deno-2.9.6/.verified").is_file()
    entry = json.loads((home.home / ".claude.json").read_text())["mcpServers"]["code-executor"]
    assert entry["command"] == str(harness.binary()) and entry["args"] == ["serve"], entry

    doctor = home.run("doctor")
    assert doctor.returncode == 0, explain(doctor)
    assert SELF_WARNING not in doctor.stdout + doctor.stderr, explain(doctor)
    assert "code-executor" not in doctor.stderr, explain(doctor)
    assert "[ ok ] server time: 2 tools" in doctor.stdout, explain(doctor)
    assert "WARN" not in doctor.stdout and "FAIL" not in doctor.stdout, explain(doctor)
    assert "All checks passed." in doctor.stdout, explain(doctor)

    for args in (("servers",), ("search", "time")):
        proc = home.run(*args)
        assert proc.returncode == 0, explain(proc)
        assert SELF_WARNING not in proc.stdout + proc.stderr and "WARN" not in proc.stderr, explain(proc)

    serve = Stdio(home)
    try:
        answer, _ = serve.initialize(timeout=30)
        assert "result" in answer, answer
        listed = serve.answer(serve.send("tools/list", {}), timeout=30)
        names = {t["name"] for t in listed["result"]["tools"]}
        assert {"executeTypescript", "searchTools"} <= names, names
    finally:
        err = serve.stderr()
    assert SELF_WARNING not in err and " WARN " not in err, err


def test_the_first_serve_answers_at_once_and_installs_the_runtimes_meanwhile(ce_binary, tmp_path: Path) -> None:
    if harness.runtime_mirror() is None:
        pytest.skip("no runtime mirror (CODE_EXECUTOR_RUNTIME_MIRROR) to install the runtimes from")
    empty = tmp_path / "runtimes"
    empty.mkdir()
    home = Home(tmp_path, runtime_dir=empty, cache_dir=tmp_path / "cache")
    serve = Stdio(home)
    try:
        answer, took = serve.initialize(timeout=10)
        assert "result" in answer, answer
        assert took < 1.0, f"initialize answered after {took:.2f} s"
        # The runtimes are not there yet: the execution waits for them.
        assert not (empty / "deno-2.9.6/.verified").exists()
        result = serve.call("executeTypescript", {"code": "console.log(6 * 7)", "timeoutMs": 240000}, timeout=300)
        assert "result" in result, result
        text = json.dumps(result["result"])
        assert "42" in text and not result["result"].get("isError"), text
    finally:
        err = serve.stderr()
    assert "installing the sandbox runtimes: Deno 2.9.6" in err, err
    assert "the sandbox runtimes are installed" in err, err
    assert (empty / "deno-2.9.6/.verified").is_file()


def test_a_failed_runtime_install_is_told_to_the_code(ce_binary, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "deno-linux-x64-glibc-2.9.6.tgz").write_bytes(b"not the tarball")
    home = Home(tmp_path, runtime_dir=tmp_path / "runtimes", cache_dir=tmp_path / "cache")
    home.extra["CODE_EXECUTOR_RUNTIME_MIRROR"] = str(mirror)
    serve = Stdio(home)
    try:
        answer, _ = serve.initialize(timeout=10)
        assert "result" in answer, answer
        result = serve.call("executeTypescript", {"code": "console.log(1)"}, timeout=60)
        text = json.dumps(result)
        assert "could not be installed" in text and "fetch-runtimes" in text and "SHA-256" in text, text
    finally:
        serve.stderr()


def test_the_servers_file_takes_the_bare_map(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    path = home.servers_file(json.dumps({"time": time_server()}))
    servers = home.run("servers", "--json")
    assert servers.returncode == 0, explain(servers)
    rows = {r["name"]: r for r in json.loads(servers.stdout)}
    assert rows["time"]["state"] == "connected", rows
    doctor = home.run("doctor")
    assert doctor.returncode == 0, explain(doctor)
    assert f"[ ok ] servers file: {path}" in doctor.stdout, explain(doctor)
    assert "MCP_CONFIG_PATH" not in doctor.stdout, explain(doctor)

    home.servers_file(json.dumps({"time": time_server(), "version": 2}))
    refused = home.run("servers")
    assert refused.returncode != 0, explain(refused)
    assert str(path) in refused.stderr and '"version" is not a server definition' in refused.stderr, explain(refused)


def test_doctor_warns_when_there_is_no_server(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    doctor = home.run("doctor")
    assert doctor.returncode == 0, explain(doctor)
    assert "[WARN] servers: no downstream MCP servers found" in doctor.stdout, explain(doctor)
    assert "servers.json" in doctor.stdout and "mcpServers" in doctor.stdout, explain(doctor)
    assert "All checks passed" not in doctor.stdout, explain(doctor)
    assert "1 warning(s)" in doctor.stdout, explain(doctor)
    servers = home.run("servers")
    assert servers.returncode == 0 and "No downstream MCP servers found. Add one" in servers.stdout, explain(servers)


def test_a_misspelt_setting_is_refused_once_with_the_setting_meant(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    config = home.home / ".config/code-executor/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("timout_ms = 5000\n")
    doctor = home.run("doctor")
    assert doctor.returncode != 0, explain(doctor)
    assert f"unknown setting `timout_ms` in {config}; did you mean `timeout_ms`?" in doctor.stderr, explain(doctor)
    config.write_text('timeout_ms = "soon"\n')
    doctor = home.run("doctor")
    assert doctor.returncode != 0, explain(doctor)
    assert doctor.stderr.count("soon") == 1 and f"`timeout_ms` in {config}" in doctor.stderr, explain(doctor)
    assert "default.timeout_ms" not in doctor.stderr, explain(doctor)


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float) -> str:
    assert proc.stderr is not None
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            # Read the descriptor itself: a buffered readline would take several lines at once
            # and leave the later ones where select no longer sees them.
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                break
            seen += chunk.decode(errors="replace")
            if needle in seen:
                return seen
    raise AssertionError(f"{needle!r} not seen; stderr:\n{seen}")


def test_serve_http_takes_a_host_name(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    port = harness.free_port()
    proc = subprocess.Popen(
        [str(harness.binary()), "serve", "--http", f"localhost:{port}"], cwd=home.project, env=home.env(),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        seen = wait_for_line(proc, "serving MCP over streamable HTTP", timeout=60)
        assert "code-executor ready" in seen, seen
        with socket.create_connection(("localhost", port), timeout=5):
            pass
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_http_on_a_taken_port_fails_before_ready(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = home.run("serve", "--http", f"127.0.0.1:{port}", timeout=60)
    assert proc.returncode != 0, explain(proc)
    assert f"cannot serve HTTP on 127.0.0.1:{port}" in proc.stderr, explain(proc)
    assert "code-executor ready" not in proc.stderr, explain(proc)


def test_version_names_the_commit(ce_binary, tmp_path: Path) -> None:
    proc = Home(tmp_path).run("--version")
    assert proc.returncode == 0, explain(proc)
    commit = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=harness.REPO, capture_output=True, text=True,
    ).stdout.strip()
    assert commit and f"(commit {commit})" in proc.stdout, f"{proc.stdout!r} vs {commit!r}"


def test_an_empty_workspace_says_so(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    home.extra["CODE_EXECUTOR_WORKSPACE_DIR"] = str(tmp_path / "ws")
    (tmp_path / "ws").mkdir()
    path = home.run("workspace", "path")
    assert path.returncode == 0, explain(path)
    Path(path.stdout.strip()).mkdir(parents=True, exist_ok=True)
    ls = home.run("workspace", "ls")
    assert ls.returncode == 0, explain(ls)
    assert ls.stdout.startswith("the workspace is empty ("), explain(ls)


def test_disable_others_says_claude_codes_switch_is_per_project(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    home.claude_code({"time": time_server()})
    proc = home.run(
        "setup", "--client", "claude-code", "--yes", "--disable-others", "--no-index", "--no-runtimes",
        "--command", "/opt/bin/code-executor",
    )
    assert proc.returncode == 0, explain(proc)
    assert f"Claude Code switches servers off per project: in {home.project} only" in proc.stdout, explain(proc)
    helped = home.run("setup", "--help")
    assert "Claude Code's switch is per project" in helped.stdout, explain(helped)


def test_a_crashing_servers_last_words_are_shown_to_the_operator(ce_binary, tmp_path: Path) -> None:
    home = Home(tmp_path)
    crash = "import sys; sys.stderr.write('fatal: ACME_API_KEY is not set\\n'); sys.exit(3)"
    home.servers_file(json.dumps({"acme": {"command": sys.executable, "args": ["-c", crash]}}))
    # On stderr, beside the log: stdout is often read by an agent, and a server's stderr may
    # carry a secret or text aimed at a model (see test_hostile_downstream).
    servers = home.run("servers")
    assert "failed" in servers.stdout, explain(servers)
    assert "acme:" in servers.stderr and "fatal: ACME_API_KEY is not set" in servers.stderr, explain(servers)
    assert "ACME_API_KEY" not in servers.stdout, explain(servers)
    doctor = home.run("doctor")
    assert doctor.returncode != 0, explain(doctor)
    assert "[FAIL] server acme" in doctor.stdout and "fatal: ACME_API_KEY is not set" in doctor.stderr, explain(doctor)
    assert "ACME_API_KEY" not in doctor.stdout, explain(doctor)
