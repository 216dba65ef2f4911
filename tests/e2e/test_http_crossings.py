"""The HTTP front against clients that do not hold the token, or that try to choose who they are.

- Idle and slow sockets (more than every connection cap, with the server's descriptors lowered so
  they would run out) do not keep a token holder's fresh connection from running code, and the
  server closes them; a request without the token gets 401 and its connection closed; an
  oversized request head gets 431, a body over the limit 413.
- The client session of rate limits and audit records comes from the server, not the client: a
  made-up `Mcp-Session-Id` gets 404 from a client of the handshake era, is ignored on a 2026-07-28
  request (that revision has no sessions), and never reaches the audit log; unchecked `Authorization`
  values do not buy fresh rate-limit buckets. `/metrics` needs the token when there is one; the
  probes never do.
- `serve --http` beyond loopback without a token refuses to start unless the loudly named
  `--allow-unauthenticated-network` is given; placeholder and short tokens (the Kubernetes
  manifest's as shipped) are refused; Host and Origin checks hold on a 0.0.0.0 bind; `secrets/`
  is ignored by git and left out of the flake's source.
"""

from __future__ import annotations

import hashlib
import json
import re
import resource
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness
from harness import REPO, E2EEnv, McpClient, binary, free_port, ok, tail
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# More sockets than both caps of the MCP endpoint together (64 pending + 256 established).
FLOOD = 400
# Descriptors the server may open beyond those it holds once started: far fewer than FLOOD.
FD_HEADROOM = 120
# Generous bound for the server to close an idle socket (its header-read timeout is 10 s).
CLOSE_BOUND = 90.0

TIME_TOOL = "mcp__time__get_current_time"
ONE_CALL = (
    f'try {{ await callMCPTool("{TIME_TOOL}", {{ timezone: "UTC" }}); return "called"; }}'
    " catch (e) { return String(e?.message ?? e); }"
)


def new_token() -> str:
    return secrets.token_hex(32)


def fingerprint(token: str) -> str:
    return "http-token:" + hashlib.sha256(token.encode()).hexdigest()[:12]


def raw_request(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes = b"",
    timeout: float = 60,
) -> tuple[int, str]:
    """One HTTP request on its own connection; (status, body)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=body or None, headers=headers, method=method
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def mcp_post(port: int, message: dict[str, Any], headers: dict[str, str], timeout: float = 60) -> tuple[int, str]:
    """A JSON-RPC message POSTed to /mcp as a streamable-HTTP client sends it."""
    base = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    return raw_request(port, "POST", "/mcp", {**base, **headers}, json.dumps(message).encode(), timeout)


def tools_call(name: str, arguments: dict[str, Any], id_: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def fresh_client_run(url: str, token: str | None, code: str, allowed: list[str] | None = None, timeout: float = 90) -> Any:
    """Connect a new real MCP client (its own HTTP connections) and run `code`; its report."""

    async def main() -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with create_mcp_http_client(headers=headers) as http_client:
            async with streamable_http_client(url, http_client=http_client) as (read, write):
                async with ClientSession(read, write) as session:
                    with anyio.fail_after(timeout):
                        await session.initialize()
                        args: dict[str, Any] = {"code": code}
                        if allowed is not None:
                            args["allowedTools"] = allowed
                        result = await session.call_tool("executeTypescript", args)
                        return harness.exec_report(result)

    return anyio.run(main)


def closed_by_peer(sock: socket.socket, bound: float = CLOSE_BOUND) -> bool:
    """Whether the server closes `sock` (EOF or reset) within a generous bound; any answer bytes
    before the close are read and ignored."""
    sock.settimeout(bound)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def audit_text(audit_dir: Path, want: int, timeout: float = 15.0) -> list[dict[str, Any]]:
    """The audit records, once at least `want` are written (the writer is asynchronous)."""
    deadline = time.monotonic() + timeout
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        records = [json.loads(line) for f in sorted(audit_dir.glob("audit.*.jsonl")) for line in f.read_text().splitlines()]
        if len(records) >= want:
            break
        time.sleep(0.1)
    return records


@pytest.fixture
def token_server(start_server, tmp_path: Path):
    """A server over HTTP on loopback with a token, an audit log and the operations endpoint."""
    token = new_token()
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    ops_port = free_port()
    audit_dir = tmp_path / "audit"
    c = start_server(
        {
            "CODE_EXECUTOR_HTTP_TOKEN_FILE": str(token_file),
            "CODE_EXECUTOR_OPS_LISTEN": f"127.0.0.1:{ops_port}",
            "CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit_dir),
            "CODE_EXECUTOR_MAX_CODE_BYTES": "4096",
        },
        servers=("time",),
        transport="http",
        http_headers={"Authorization": f"Bearer {token}"},
    )
    return c, token, ops_port, audit_dir


# --------------------------------------------------------------------------------------------
# Item 11: clients without the token cannot starve those with it
# --------------------------------------------------------------------------------------------


def test_idle_and_slow_sockets_do_not_starve_a_token_holder(token_server) -> None:
    c, token, _, _ = token_server
    pid = c.server_pid
    assert pid is not None and c.port is not None
    # Few descriptors to spare, as under a low `ulimit -n`: without connection limits the flood
    # below takes them all and the server cannot accept anyone else.
    limit = open_fds(pid) + FD_HEADROOM
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, limit))
    flood: list[socket.socket] = []
    try:
        for i in range(FLOOD):
            s = socket.create_connection(("127.0.0.1", c.port), timeout=10)
            if i % 2:
                # Slow: the start of a request head, never finished.
                s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{c.port}\r\n".encode())
            flood.append(s)
        # A token holder connecting now, with a new client, still runs code.
        sc = fresh_client_run(c.url, token, "return 6 * 7;")
        assert sc and sc["success"] and sc["result"] == 42, sc
        assert open_fds(pid) < limit, "the server stayed below its descriptor limit"
        # And the server lets go of every idle or slow socket.
        still_open = [i for i, s in enumerate(flood) if not closed_by_peer(s)]
        assert not still_open, f"{len(still_open)} of {FLOOD} idle sockets still open, e.g. #{still_open[:5]}"
        # The operator is told.
        assert "closed pending connections to make room" in c.log_tail(20000), c.log_tail()
    finally:
        for s in flood:
            s.close()
    ok(c, "return 1;")


def test_a_request_without_the_token_is_refused_and_its_connection_closed(token_server) -> None:
    c, token, _, _ = token_server
    assert c.port is not None
    for authorization in ("", f"Authorization: Bearer {token}x\r\n", f"Authorization: {token}\r\n"):
        body = json.dumps(tools_call("executeTypescript", {"code": "return 1;"})).encode()
        with socket.create_connection(("127.0.0.1", c.port), timeout=10) as s:
            s.sendall(
                (
                    f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{c.port}\r\nContent-Type: application/json\r\n"
                    f"Accept: application/json, text/event-stream\r\n{authorization}"
                    f"Content-Length: {len(body)}\r\n\r\n"
                ).encode()
                + body
            )
            answer = b""
            s.settimeout(CLOSE_BOUND)
            try:
                while chunk := s.recv(65536):
                    answer += chunk
            except TimeoutError:
                pytest.fail(f"the connection stayed open after the answer {answer[:200]!r}")
            except ConnectionResetError:
                pass
        assert answer.startswith(b"HTTP/1.1 401"), answer[:300]
        assert b"bearer token" in answer, answer[:300]
    ok(c, "return 1;")


def test_an_oversized_request_head_is_refused(token_server) -> None:
    c, token, _, _ = token_server
    assert c.port is not None
    with socket.create_connection(("127.0.0.1", c.port), timeout=10) as s:
        s.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{c.port}\r\nAuthorization: Bearer {token}\r\n".encode()
            + b"X-Padding: " + b"a" * (300 * 1024) + b"\r\n\r\n"
        )
        s.settimeout(CLOSE_BOUND)
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    assert answer.startswith(b"HTTP/1.1 431"), answer[:300]
    ok(c, "return 1;")


def test_a_body_over_the_limit_is_refused(token_server) -> None:
    c, token, _, _ = token_server
    assert c.port is not None
    # max_code_bytes is 4096 here, so the body limit is 4 x 4096 + 64 KiB = 80 KiB.
    code = "// " + "x" * (200 * 1024) + "\nreturn 1;"
    status, body = mcp_post(c.port, tools_call("executeTypescript", {"code": code}), {"Authorization": f"Bearer {token}"})
    assert status == 413, (status, body[:300])
    ok(c, "return 1;")


# --------------------------------------------------------------------------------------------
# Item 12: the session of rate limits and audit records is the server's to decide
# --------------------------------------------------------------------------------------------


def test_a_made_up_session_id_picks_nothing_and_is_never_audited(token_server) -> None:
    c, token, _, audit_dir = token_server
    assert c.port is not None
    forged = "forged-" + secrets.token_hex(6)
    headers = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": forged}
    # From a client on the handshake era, an id this server never issued: 404.
    status, body = mcp_post(c.port, tools_call("executeTypescript", {"code": "return 'ran';"}), headers)
    assert status == 404, (status, body[:300])
    assert "issues no Mcp-Session-Id" in body, body
    status, body = mcp_post(c.port, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)
    assert status == 404, (status, body[:300])
    # Protocol 2026-07-28 has no sessions: the header is ignored, the request served as the token's.
    modern = tools_call("executeTypescript", {"code": "return 'modern';"}, id_=3)
    modern["params"]["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    modern_headers = {
        **headers,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "executeTypescript",
    }
    status, body = mcp_post(c.port, modern, modern_headers)
    assert status == 200, (status, body[:300])
    assert json.loads(body)["result"]["structuredContent"]["result"] == "modern", body[:300]
    # The real client, which sends no session id, is served; its records name the token's
    # fingerprint, the only session this server knows.
    ok(c, "return 'mine';")
    records = audit_text(audit_dir, want=2)
    assert len(records) >= 2, records
    text = "\n".join(p.read_text() for p in audit_dir.glob("audit.*.jsonl"))
    assert forged not in text, text[:2000]
    assert {r["session"] for r in records} == {fingerprint(token)}, records


def test_unchecked_authorization_values_do_not_buy_fresh_rate_limit_buckets(start_server, tmp_path: Path) -> None:
    audit_dir = tmp_path / "audit"
    ops_port = free_port()
    c = start_server(
        {
            "CODE_EXECUTOR_SESSION_CALLS_PER_MINUTE": "1",
            "CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit_dir),
            "CODE_EXECUTOR_OPS_LISTEN": f"127.0.0.1:{ops_port}",
        },
        servers=("time",),
        transport="http",
    )
    assert c.port is not None
    # No token is configured, so nothing checks `Authorization`: each request sends another one.
    answers = []
    for i in range(4):
        status, body = mcp_post(
            c.port,
            tools_call("executeTypescript", {"code": ONE_CALL, "allowedTools": [TIME_TOOL]}, id_=i),
            {"Authorization": f"Bearer bucket-{i}-{secrets.token_hex(4)}"},
        )
        assert status == 200, (status, body[:300])
        answers.append(json.loads(body)["result"]["structuredContent"]["result"])
    assert answers[0] == "called", answers
    refused = [a for a in answers[1:] if "rate limit" in a and "client session `http-peer:127.0.0.1`" in a]
    assert refused, f"every request got a fresh bucket: {answers}"
    records = audit_text(audit_dir, want=4)
    assert {r["session"] for r in records} == {"http-peer:127.0.0.1"}, records
    # Without a token /metrics stays open, as the MCP endpoint is.
    status, _ = raw_request(ops_port, "GET", "/metrics", {})
    assert status == 200


def test_metrics_need_the_token_and_the_probes_do_not(token_server) -> None:
    c, token, ops_port, _ = token_server
    ok(c, "return 1;")
    assert raw_request(ops_port, "GET", "/livez", {})[0] == 200
    status, body = raw_request(ops_port, "GET", "/readyz", {})
    assert status == 200 and json.loads(body)["ready"] is True, body
    for headers in ({}, {"Authorization": f"Bearer {token}x"}, {"Authorization": token}):
        status, body = raw_request(ops_port, "GET", "/metrics", headers)
        assert status == 401, (headers, status, body[:300])
        assert "code_executor_" not in body
    status, body = raw_request(ops_port, "GET", "/metrics", {"Authorization": f"Bearer {token}"})
    assert status == 200 and 'code_executor_executions_total{language="typescript",outcome="ok"}' in body, body[:2000]


# --------------------------------------------------------------------------------------------
# Item 13: no unauthenticated listening beyond loopback, no placeholder tokens
# --------------------------------------------------------------------------------------------


class Served:
    """`code-executor serve ARGS...` in an isolated environment, with its log."""

    def __init__(self, root: Path, args: list[str], extra_env: dict[str, str] | None = None) -> None:
        self.e2e = E2EEnv(root, servers=("time",), extra_env=dict(extra_env or {}))
        self.log_path = root / "serve.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [str(binary()), "serve", *args],
            cwd=self.e2e.project,
            env=self.e2e.env(),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def exited(self, timeout: float = 60) -> int | None:
        """The exit code if the process ends within `timeout`, else None."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def wait_listening(self, port: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{self.text()}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"not listening on {port}:\n{self.text()}")

    def text(self) -> str:
        self.log.flush()
        return tail(self.log_path, 8000)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def serve(tmp_path: Path, ce_binary: Path):
    started: list[Served] = []

    def start(args: list[str], extra_env: dict[str, str] | None = None) -> Served:
        s = Served(tmp_path / f"serve-{len(started)}", args, extra_env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


def refused_at_start(s: Served, port: int) -> str:
    code = s.exited()
    assert code is not None, f"the server kept running:\n{s.text()}"
    assert code != 0, s.text()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    return s.text()


def test_serving_beyond_loopback_without_a_token_is_refused(serve) -> None:
    for wide in ("0.0.0.0", "[::]"):
        port = free_port()
        s = serve(["--http", f"{wide}:{port}"])
        text = refused_at_start(s, port)
        for needle in ("refusing to serve HTTP", "without a token", "http_token_file", "openssl rand -hex 32",
                       "--allow-unauthenticated-network"):
            assert needle in text, text


def test_the_loud_opt_out_serves_and_the_host_and_origin_checks_hold(serve) -> None:
    port = free_port()
    s = serve(["--http", f"0.0.0.0:{port}", "--allow-unauthenticated-network"])
    s.wait_listening(port)
    assert "UNAUTHENTICATED NETWORK SERVER" in s.text(), s.text()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    assert mcp_post(port, init, {"Host": f"evil.example:{port}"})[0] == 403
    assert mcp_post(port, init, {"Origin": "http://evil.example"})[0] == 403
    assert mcp_post(port, init, {})[0] == 200
    sc = fresh_client_run(f"http://127.0.0.1:{port}/mcp", None, "return 6 * 7;")
    assert sc and sc["result"] == 42, sc


def test_a_0_0_0_0_bind_with_a_token_requires_it_and_checks_host_and_origin(serve, tmp_path: Path) -> None:
    token = new_token()
    token_file = tmp_path / "token"
    token_file.write_text(token)
    port = free_port()
    s = serve(["--http", f"0.0.0.0:{port}"], {"CODE_EXECUTOR_HTTP_TOKEN_FILE": str(token_file)})
    s.wait_listening(port)
    call = tools_call("executeTypescript", {"code": "return 'ran';"})
    # Another host naming this one `localhost` is still asked for the token.
    status, body = mcp_post(port, call, {"Host": "localhost"})
    assert status == 401, (status, body[:300])
    auth = {"Authorization": f"Bearer {token}"}
    assert mcp_post(port, call, {**auth, "Host": f"evil.example:{port}"})[0] == 403
    assert mcp_post(port, call, {**auth, "Origin": "http://evil.example"})[0] == 403
    status, body = mcp_post(port, call, {**auth, "Host": "localhost"})
    assert status == 200 and json.loads(body)["result"]["structuredContent"]["result"] == "ran", body[:500]
    sc = fresh_client_run(f"http://127.0.0.1:{port}/mcp", token, "return 6 * 7;")
    assert sc and sc["result"] == 42, sc


def manifest_token() -> str:
    """The token in the Kubernetes manifest's Secret, as shipped."""
    text = (REPO / "deploy" / "code-executor.yaml").read_text()
    m = re.search(r'^\s*http_token:\s*"([^"]*)"', text, re.M)
    assert m, "deploy/code-executor.yaml has no http_token"
    return m.group(1)


@pytest.mark.parametrize(
    "token,why",
    [
        (manifest_token(), "placeholder"),
        ("changeme", "at least 32"),
        (secrets.token_hex(10), "at least 32"),
        ("a" * 40, "distinct characters"),
    ],
    ids=["kubernetes-manifest", "changeme", "short", "repeated"],
)
@pytest.mark.parametrize("source", ["file", "env"])
def test_placeholder_and_short_tokens_are_refused(serve, tmp_path: Path, token: str, why: str, source: str) -> None:
    if source == "file":
        token_file = tmp_path / "token"
        token_file.write_text(token + "\n")
        env = {"CODE_EXECUTOR_HTTP_TOKEN_FILE": str(token_file)}
    else:
        env = {"CODE_EXECUTOR_HTTP_TOKEN": token}
    port = free_port()
    s = serve(["--http", f"127.0.0.1:{port}"], env)
    text = refused_at_start(s, port)
    assert why in text and "openssl rand -hex 32" in text, text
    assert token not in text, "the refused token is not echoed"


def test_secrets_are_ignored_by_git_and_left_out_of_the_flake() -> None:
    probe = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", "secrets/http_token"], cwd=REPO, capture_output=True, text=True
    )
    assert probe.returncode == 0, f"secrets/http_token is not ignored by git: {probe.stdout}{probe.stderr}"
    flake = (REPO / "flake.nix").read_text()
    m = re.search(r"filter = path: type:(.*?);\n\s*\};", flake, re.S)
    assert m, "flake.nix has no source filter"
    excluded = re.search(r"builtins\.elem base \[([^\]]*)\]", m.group(1))
    assert excluded and '"secrets"' in excluded.group(1), m.group(1)
