"""OAuth 2.1 downstream servers, end to end: a real authorization server (`tests/servers/oauth_as.py`)
and a protected MCP server (`tests/servers/oauth_rs.py`), both built from the MCP Python SDK's auth
modules, on loopback; the real binary's `auth login` (pasted redirect and browser paths), then the
real MCP client calling the protected tools through code-executor: needs-login before, discovery,
registration, PKCE S256 and `resource`, refresh, revocation, step-up on 403, every refused input
with nothing stored, and no token anywhere but the store file."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import httpx2 as httpx
import pytest

import harness
from harness import E2EEnv, McpClient

pytestmark = pytest.mark.needs_binary

SERVER = "secure"
LOGIN_HINT = f"needs login: run `code-executor auth login {SERVER}`"


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"test server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"test server did not listen on {port}")


@dataclass
class OAuthServers:
    as_url: str
    rs_url: str
    rs_base: str

    def control_as(self, **flags) -> None:
        httpx.post(f"{self.as_url}/_control", json=flags).raise_for_status()

    def control_rs(self, **flags) -> None:
        httpx.post(f"{self.rs_base}/_control", json=flags).raise_for_status()

    def as_log(self) -> list[dict]:
        return httpx.get(f"{self.as_url}/_log").json()

    def reset(self) -> None:
        self.control_as(issuer_mismatch=False, token_mode="ok", expires_in=3600, reset_log=True)
        self.control_rs(prm_resource=None)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    logs = tmp_path_factory.mktemp("oauth-servers")
    as_port, rs_port = harness.free_port(), harness.free_port()
    as_url = f"http://127.0.0.1:{as_port}"
    procs = []
    try:
        for script, args, port in (
            ("oauth_as.py", ["--port", str(as_port)], as_port),
            ("oauth_rs.py", ["--port", str(rs_port), "--as-url", as_url], rs_port),
        ):
            log = open(logs / f"{script}.log", "w")
            p = subprocess.Popen(
                [sys.executable, str(harness.SERVERS_DIR / script), *args], stdout=log, stderr=subprocess.STDOUT
            )
            procs.append(p)
            wait_port(port, p)
        yield OAuthServers(as_url, f"http://127.0.0.1:{rs_port}/mcp", f"http://127.0.0.1:{rs_port}")
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


@pytest.fixture
def world(servers: OAuthServers, tmp_path: Path):
    """A fresh code-executor world with `time` and the protected `secure` server, its own OAuth dir."""
    servers.reset()
    e2e = E2EEnv(
        tmp_path,
        servers=("time",),
        extra_env={
            "CODE_EXECUTOR_OAUTH_DIR": str(tmp_path / "oauth"),
            "CODE_EXECUTOR_AUDIT_LOG_DIR": str(tmp_path / "audit"),
        },
    )
    configs = e2e.server_configs()
    configs[SERVER] = {"type": "http", "url": servers.rs_url}
    e2e.config_path.write_text(json.dumps({"mcpServers": configs}, indent=2))
    return e2e


def store_dir(e2e: E2EEnv) -> Path:
    return Path(e2e.extra_env["CODE_EXECUTOR_OAUTH_DIR"])


def store_files(e2e: E2EEnv) -> list[Path]:
    d = store_dir(e2e)
    return sorted(d.glob("*.json")) if d.exists() else []


def store_snapshot(e2e: E2EEnv) -> dict[str, bytes]:
    d = store_dir(e2e)
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())} if d.exists() else {}


def stored_tokens(e2e: E2EEnv) -> list[str]:
    out = []
    for f in store_files(e2e):
        creds = json.loads(f.read_text()).get("credentials") or {}
        tr = creds.get("token_response") or {}
        out += [t for t in (tr.get("access_token"), tr.get("refresh_token")) if t]
    return out


def login(
    e2e: E2EEnv, *args: str, tamper=None, timeout: float = 60, server: str = SERVER
) -> subprocess.CompletedProcess:
    """`auth login secure --no-browser ARGS`: read the printed URL, GET it (the AS approves at once
    and redirects), paste the redirect (changed by `tamper`) on stdin."""
    proc = subprocess.Popen(
        [str(harness.binary()), "auth", "login", server, "--no-browser", *args],
        cwd=e2e.project,
        env=e2e.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = []
    url = None
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("http") and "/authorize?" in line:
            url = line.strip()
            break
    if url is None:
        out, err = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(seen) + out, err)
    answer = httpx.get(url, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    if tamper:
        location = tamper(location)
    out, err = proc.communicate(location + "\n", timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "".join(seen) + out, err)


def cli(e2e: E2EEnv, *args: str) -> subprocess.CompletedProcess:
    return harness.run_cli(e2e, *args)


def status(e2e: E2EEnv) -> dict:
    r = cli(e2e, "auth", "status", "--json")
    assert r.returncode == 0, r.stderr
    return {s["name"]: s for s in json.loads(r.stdout)}


def start(e2e: E2EEnv, tmp_path: Path, name: str = "client") -> McpClient:
    client = McpClient("stdio", e2e, tmp_path / f"{name}.log")
    client.start()
    return client


def list_servers(client: McpClient) -> dict:
    result = client.call("listServers", {})
    return {s["name"]: s for s in result.structured_content["servers"]}


READ = f"""
try {{
  const r = await callMCPTool("mcp__{SERVER}__read_note", {{ title: "groceries" }});
  console.log("OK " + JSON.stringify(r));
}} catch (e) {{ console.log("ERR " + e.message); }}
const t = await callMCPTool("mcp__time__get_current_time", {{ timezone: "UTC" }});
console.log("TIME " + (t.timezone ?? JSON.stringify(t)));
"""

WRITE = f"""
try {{
  const r = await callMCPTool("mcp__{SERVER}__write_note", {{ title: "t", text: "hello" }});
  console.log("OK " + JSON.stringify(r));
}} catch (e) {{ console.log("ERR " + e.message); }}
"""

ALLOWED = [f"mcp__{SERVER}__*", "mcp__time__*"]


def run(client: McpClient, code: str = READ) -> str:
    ex = harness.run_ts(client, code, allowed=ALLOWED)
    assert ex.success, ex.describe()
    return ex.output


def after_retry_window() -> None:
    """A server found needing login is tried again 5 s later (a login made meanwhile is used)."""
    time.sleep(5.5)


# ---------------------------------------------------------------------------------------------


def test_needs_login_everywhere_then_login_and_call(world: E2EEnv, servers: OAuthServers, tmp_path: Path):
    # Before: every surface says so, with the exact command; `time` keeps working.
    r = cli(world, "servers", "--json")
    secure = {s["name"]: s for s in json.loads(r.stdout)}[SERVER]
    assert secure["state"] == "needs_login" and LOGIN_HINT in secure["error"], r.stdout
    r = cli(world, "doctor")
    assert LOGIN_HINT in r.stdout, r.stdout
    assert status(world)[SERVER]["state"] == "needs_login"
    assert store_files(world) == []

    client = start(world, tmp_path)
    try:
        out = run(client)
        assert f"ERR MCP server `{SERVER}` {LOGIN_HINT}" in out, out
        assert "TIME UTC" in out, out
        listed = list_servers(client)[SERVER]
        assert listed["state"] == "needs_login" and LOGIN_HINT in listed["error"], listed
        sandbox_list = harness.run_ts(client, "return await listServers();", allowed=ALLOWED)
        assert LOGIN_HINT in json.dumps(sandbox_list.result), sandbox_list.describe()

        # Login (pasted redirect): discovery, registration, PKCE S256, resource indicator.
        r = login(world)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Logged in to `secure`" in r.stdout
        log = servers.as_log()
        paths = [e["path"] for e in log]
        assert "/register" in paths, paths
        authorize = next(e for e in log if e["path"] == "/authorize")["query"]
        assert authorize["code_challenge_method"] == "S256" and authorize["code_challenge"], authorize
        assert authorize["resource"] == servers.rs_url, authorize
        token = next(e for e in log if e["path"] == "/token")["form"]
        assert token["grant_type"] == "authorization_code" and token["code_verifier"] is True, token
        assert token["resource"] == servers.rs_url, token

        # The store: one 0600 file in a 0700 directory.
        files = store_files(world)
        assert len(files) == 1
        assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
        assert stat.S_IMODE(store_dir(world).stat().st_mode) == 0o700
        assert status(world)[SERVER]["state"] == "logged_in"

        # The running server picks the login up.
        after_retry_window()
        out = run(client)
        assert "OK " in out and "remember the milk" in out, out
        listed = list_servers(client)[SERVER]
        assert listed["state"] == "connected" and listed["tools"] == 2, listed

        # The sandbox cannot read the store, and no token reaches anything but the store file.
        leak = harness.run_ts(
            client,
            f"try {{ return await Deno.readTextFile({json.dumps(str(files[0]))}); }} catch (e) {{ return 'refused: ' + e.name; }}",
            allowed=ALLOWED,
        )
        assert str(leak.result).startswith("refused"), leak.describe()
        tokens = stored_tokens(world)
        assert tokens
        seen = out + json.dumps(listed) + leak.everything() + json.dumps(sandbox_list.sc)
        seen += client.log_tail(10**7)
        seen += "".join(p.read_text() for p in (tmp_path / "audit").glob("*.jsonl"))
        for root in (world.project, world.home / ".local" / "share" / "code-executor"):
            for p in root.rglob("*") if root.exists() else []:
                if p.is_file():
                    seen += p.read_text(errors="replace")
        seen += cli(world, "auth", "status").stdout + cli(world, "servers", "--json").stdout
        for t in tokens:
            assert t not in seen
    finally:
        client.close()


def test_browser_login(world: E2EEnv, servers: OAuthServers, tmp_path: Path):
    browser = tmp_path / "browser.sh"
    trace = tmp_path / "browser.trace"
    browser.write_text(f'#!/bin/sh\necho "$1" > {trace}\nexec curl -sfL -o /dev/null "$1"\n')
    browser.chmod(0o755)
    env = dict(world.extra_env, CODE_EXECUTOR_BROWSER=str(browser))
    world.extra_env = env
    r = subprocess.run(
        [str(harness.binary()), "auth", "login", SERVER],
        cwd=world.project,
        env=world.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "/authorize?" in trace.read_text()
    assert status(world)[SERVER]["state"] == "logged_in"
    client = start(world, tmp_path)
    try:
        assert "remember the milk" in run(client)
    finally:
        client.close()


def test_refresh_before_expiry(world: E2EEnv, servers: OAuthServers, tmp_path: Path):
    # Access tokens live 3 s (inside rmcp's 30 s refresh margin): every use refreshes first.
    servers.control_as(expires_in=3)
    assert login(world).returncode == 0
    first = stored_tokens(world)
    client = start(world, tmp_path)
    try:
        assert "remember the milk" in run(client)
        time.sleep(1)
        assert "remember the milk" in run(client)
    finally:
        client.close()
    grants = [e["form"]["grant_type"] for e in servers.as_log() if e["path"] == "/token"]
    assert "refresh_token" in grants, grants
    # The refreshed tokens were written back to the store (rotation).
    assert stored_tokens(world) and stored_tokens(world) != first
    assert stat.S_IMODE(store_files(world)[0].stat().st_mode) == 0o600


def test_revoked_tokens_mean_needs_login(world: E2EEnv, servers: OAuthServers, tmp_path: Path):
    assert login(world).returncode == 0
    client = start(world, tmp_path)
    try:
        assert "remember the milk" in run(client)
        servers.control_as(revoke_all=True)
        out = run(client)
        assert f"ERR MCP server `{SERVER}` {LOGIN_HINT}" in out, out
        assert "TIME UTC" in out, out
        listed = list_servers(client)[SERVER]
        assert listed["state"] == "needs_login" and LOGIN_HINT in listed["error"], listed
        # The refresh was refused for good: the tokens are dropped from the store.
        assert status(world)[SERVER]["state"] == "needs_login"
        assert stored_tokens(world) == []
        # Log in again: the running server reconnects.
        assert login(world).returncode == 0
        after_retry_window()
        assert "remember the milk" in run(client)
    finally:
        client.close()


def test_step_up_on_insufficient_scope(world: E2EEnv, servers: OAuthServers, tmp_path: Path):
    r = login(world, "--scope", "read")
    assert r.returncode == 0, r.stderr
    assert status(world)[SERVER]["scopes"] == ["read"]
    client = start(world, tmp_path)
    try:
        out = run(client, WRITE)
        command = f"code-executor auth login {SERVER} --scope read --scope write"
        assert "needs more OAuth scope (read write)" in out and f"run `{command}`" in out, out
        # The command printed, as printed.
        args = command.split()[4:]
        r = login(world, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        assert sorted(status(world)[SERVER]["scopes"]) == ["read", "write"]
        authorize = [e for e in servers.as_log() if e["path"] == "/authorize"][-1]["query"]
        assert set(authorize["scope"].split()) == {"read", "write"}, authorize
        out = run(client, WRITE)
        assert "OK " in out and "saved note t" in out, out
    finally:
        client.close()


def _swap(location: str, **changes: str) -> str:
    u = urlparse(location)
    q = {k: v[0] for k, v in parse_qs(u.query).items()}
    netloc = changes.pop("netloc", u.netloc)
    q.update(changes)
    return urlunparse(u._replace(netloc=netloc, query=urlencode(q)))


@pytest.mark.parametrize(
    "case, expect",
    [
        ("issuer_mismatch", "issuer"),
        ("state_mismatch", "`state` is not the one this login sent"),
        ("foreign_redirect", "is not this login's redirect URI"),
        ("token_500", "token request failed"),
        ("token_garbage", "token request failed"),
        ("prm_other_resource", "resource"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_stored(
    world: E2EEnv, servers: OAuthServers, case: str, expect: str
):
    tamper = None
    if case == "issuer_mismatch":
        servers.control_as(issuer_mismatch=True)
    elif case == "state_mismatch":
        tamper = lambda loc: _swap(loc, state="forged-state")  # noqa: E731
    elif case == "foreign_redirect":
        tamper = lambda loc: _swap(loc, netloc="evil.example:" + str(urlparse(loc).port))  # noqa: E731
    elif case == "token_500":
        servers.control_as(token_mode="500")
    elif case == "token_garbage":
        servers.control_as(token_mode="garbage")
    elif case == "prm_other_resource":
        servers.control_rs(prm_resource="http://127.0.0.1:1/another-resource")
    r = login(world, tamper=tamper)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "login to `secure` failed" in r.stderr and expect in r.stderr, r.stderr
    assert store_files(world) == [], "nothing may be stored after a refused login"


def test_a_failed_login_leaves_an_earlier_login_unchanged(world: E2EEnv, servers: OAuthServers):
    assert login(world).returncode == 0
    before = store_snapshot(world)
    servers.control_as(token_mode="500")
    r = login(world, "--scope", "write")
    assert r.returncode != 0 and "token request failed" in r.stderr, r.stderr
    assert store_snapshot(world) == before


def test_logout_forgets_the_tokens(world: E2EEnv, servers: OAuthServers):
    assert login(world).returncode == 0
    r = cli(world, "auth", "logout", SERVER)
    assert r.returncode == 0 and "Logged out" in r.stdout, r.stdout + r.stderr
    assert store_files(world) == []
    assert status(world)[SERVER]["state"] == "needs_login"


def test_status_without_a_server_and_a_corrupted_store(world: E2EEnv, servers: OAuthServers):
    r = cli(world, "auth", "login", "nope", "--no-browser")
    assert r.returncode != 0 and "no MCP server named `nope`" in r.stderr, r.stderr
    r = cli(world, "auth", "login", "time", "--no-browser")
    assert r.returncode != 0 and "stdio server" in r.stderr, r.stderr
    assert login(world).returncode == 0
    f = store_files(world)[0]
    f.write_text('{"version": 1, "server_url": "trunc')
    line = status(world)[SERVER]
    assert line["state"] == "error" and str(f) in line["detail"], line
    r = cli(world, "servers", "--json")
    secure = {s["name"]: s for s in json.loads(r.stdout)}[SERVER]
    assert secure["state"] == "failed" and "OAuth tokens cannot be read" in secure["error"], secure


@pytest.fixture(scope="module")
def sse_server(servers: OAuthServers, tmp_path_factory: pytest.TempPathFactory):
    """The same protected server over the legacy HTTP+SSE transport, behind the same AS."""
    port = harness.free_port()
    log = open(tmp_path_factory.mktemp("oauth-sse") / "oauth_rs_sse.log", "w")
    p = subprocess.Popen(
        [sys.executable, str(harness.SERVERS_DIR / "oauth_rs.py"), "--port", str(port), "--as-url", servers.as_url,
         "--transport", "sse"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_port(port, p)
        yield f"http://127.0.0.1:{port}"
    finally:
        p.terminate()
        p.wait(10)


def test_a_legacy_sse_server_logs_in_the_same_way(world: E2EEnv, servers: OAuthServers, sse_server: str, tmp_path: Path):
    name = "secure-sse"
    hint = f"needs login: run `code-executor auth login {name}`"
    configs = json.loads(world.config_path.read_text())["mcpServers"]
    configs[name] = {"type": "sse", "url": f"{sse_server}/sse"}
    world.config_path.write_text(json.dumps({"mcpServers": configs}, indent=2))
    code = f"""
try {{
  const r = await callMCPTool("mcp__{name}__read_note", {{ title: "groceries" }});
  console.log("OK " + JSON.stringify(r));
}} catch (e) {{ console.log("ERR " + e.message); }}
"""
    allowed = [f"mcp__{name}__*"]

    r = cli(world, "servers", "--json")
    listed = {s["name"]: s for s in json.loads(r.stdout)}[name]
    assert listed["state"] == "needs_login" and hint in listed["error"], r.stdout
    assert status(world)[name]["state"] == "needs_login"

    client = start(world, tmp_path)
    try:
        ex = harness.run_ts(client, code, allowed=allowed)
        assert ex.success and hint in ex.output, ex.describe()

        r = login(world, server=name)
        assert r.returncode == 0, r.stdout + r.stderr
        token = next(e for e in servers.as_log() if e["path"] == "/token")["form"]
        assert token["resource"] == f"{sse_server}/sse", token

        after_retry_window()
        ex = harness.run_ts(client, code, allowed=allowed)
        assert ex.success and "OK " in ex.output and "remember the milk" in ex.output, ex.describe()
        assert list_servers(client)[name]["transport"] == "sse"
        # The token went on the event stream and on every message.
        seen = httpx.get(f"{sse_server}/_log").json()
        streams = [e for e in seen if e["method"] == "GET" and e["path"] == "/sse"]
        posts = [e for e in seen if e["method"] == "POST" and e["path"].startswith("/messages")]
        assert streams and posts, seen
        assert streams[-1]["authorization_header"] and all(e["authorization_header"] for e in posts[-3:]), seen
    finally:
        client.close()


def _start_login(world: E2EEnv, *args: str, stdin=subprocess.PIPE) -> tuple[subprocess.Popen, str, list[str]]:
    """Starts `auth login secure ARGS` with stdin an open pipe (never written, never closed)
    unless told otherwise, and reads up to the authorization URL it prints."""
    proc = subprocess.Popen(
        [str(harness.binary()), "auth", "login", SERVER, *args],
        cwd=world.project,
        env=world.env(),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("http") and "/authorize?" in line:
            return proc, line.strip(), seen
    proc.kill()
    raise AssertionError("no authorization URL printed: " + "".join(seen) + proc.stderr.read())


def _finish(proc: subprocess.Popen, seen: list[str], timeout: float = 15) -> tuple[int, str, str]:
    """Waits for the login to exit (stdin still open); kills it and fails if it does not."""
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"`auth login` still running {timeout} s after the redirect was answered")
    return code, "".join(seen) + proc.stdout.read(), proc.stderr.read()


@pytest.mark.parametrize("mode", ["browser", "no_browser", "no_browser_stdin_closed"])
def test_login_with_stdin_an_open_pipe_returns_once_stored(world: E2EEnv, servers: OAuthServers, tmp_path: Path, mode: str):
    """A script or CI job logging in with stdin an open pipe (or closed): the browser's redirect
    reaches the loopback listener, and the command exits 0 as soon as the tokens are stored,
    without waiting for stdin to close. Its callback page says the login was stored."""
    page_file = tmp_path / "page.txt"
    if mode == "browser":
        browser = tmp_path / "browser.sh"
        browser.write_text(f'#!/bin/sh\nexec curl -sL -o {page_file} "$1"\n')
        browser.chmod(0o755)
        world.extra_env = dict(world.extra_env, CODE_EXECUTOR_BROWSER=str(browser))
        proc, _url, seen = _start_login(world)
    else:
        stdin = subprocess.DEVNULL if mode == "no_browser_stdin_closed" else subprocess.PIPE
        proc, url, seen = _start_login(world, "--no-browser", stdin=stdin)
        location = httpx.get(url, follow_redirects=False).headers["location"]
        # The browser follows the redirect to the listener; nothing is pasted.
        page_file.write_text(httpx.get(location, timeout=30).text)
    try:
        code, out, err = _finish(proc, seen)
    finally:
        if proc.stdin:
            proc.stdin.close()
    assert code == 0, out + err
    assert "Logged in to `secure`" in out, out
    assert status(world)[SERVER]["state"] == "logged_in"
    assert stored_tokens(world)
    page = page_file.read_text()
    assert "logged in" in page.lower() and "stored" in page, page


def test_a_forged_state_gets_a_page_saying_refused(world: E2EEnv, servers: OAuthServers):
    """A redirect whose `state` is not the login's reaches the loopback listener: the page says it
    was refused and why (nothing attacker-written is echoed), the login fails, nothing is stored."""
    proc, url, seen = _start_login(world, "--no-browser")
    try:
        location = httpx.get(url, follow_redirects=False).headers["location"]
        forged = _swap(location, state="<script>alert(1)</script>")
        answer = httpx.get(forged, timeout=30)
        code, out, err = _finish(proc, seen)
    finally:
        proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
    page = answer.text
    assert "refused" in page and "state" in page, page
    assert "came back" not in page and "logged in" not in page.lower(), page
    assert "<script>" not in page, page
    assert answer.headers["content-type"].startswith("text/plain"), answer.headers
    assert code != 0 and "`state` is not the one this login sent" in err, out + err
    assert store_files(world) == [], "nothing may be stored after a refused login"
