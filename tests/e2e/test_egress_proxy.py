"""Downstream HTTP through an operator's forward proxy (HTTP_PROXY / HTTPS_PROXY / NO_PROXY), as the
appliance's `egress` service provides: every HTTP client code-executor builds for downstream servers
(streamable HTTP, legacy HTTP+SSE, the `auth login` probe and rmcp's OAuth discovery, registration
and token requests, the authorized client of a logged-in server) goes through the proxy, hosts in
NO_PROXY are reached directly, a host the proxy refuses is a clear error, and the sandbox workers
never see the proxy variables nor reach the proxy.

The proxy here is a real forward proxy on loopback (`RecordingProxy`): it forwards absolute-form
requests for the host names it routes (names that resolve nowhere else, so an answer proves the
request went through it), refuses every other host with 403 as the egress proxy refuses a host not
on its allow-list, and records every request."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import harness
from harness import E2EEnv, McpClient, ok, tool_name
from test_oauth import SERVER, login, servers, status  # noqa: F401 - `servers` is a fixture
from test_sse import SseServer

pytestmark = pytest.mark.needs_binary

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "ALL_PROXY")


class RecordingProxy:
    """A forward HTTP proxy on 127.0.0.1. `routes` maps each host name it forwards to the address it
    connects to; any other host gets 403. Each request is forwarded on a fresh upstream connection
    with `Connection: close`, and the answer is streamed back (event streams included)."""

    def __init__(self, routes: dict[str, str]) -> None:
        self.routes = routes
        self.seen: list[dict] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def requests(self) -> list[dict]:
        with self._lock:
            return list(self.seen)

    def hosts(self) -> set[str]:
        return {r["host"] for r in self.requests()}

    def close(self) -> None:
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _record(self, **entry) -> None:
        with self._lock:
            self.seen.append(entry)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            reader = conn.makefile("rb")
            try:
                method, target, _ = reader.readline().decode("latin-1").split()
            except ValueError:
                return
            headers = []
            while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                headers.append(line.decode("latin-1").rstrip("\r\n"))
            url = urlsplit(target)
            host = url.hostname or target.split(":")[0]
            if url.scheme != "http" or host not in self.routes:
                self._record(method=method, host=host, port=url.port, path=url.path, status=403)
                conn.sendall(b"HTTP/1.1 403 Filtered\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nFiltered\n")
                return
            length = next((int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0)
            body = reader.read(length) if length else b""
            kept = [h for h in headers if h.split(":", 1)[0].strip().lower() not in ("connection", "keep-alive", "proxy-connection", "proxy-authorization")]
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            head = "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "Connection: close", "", ""]).encode("latin-1")
            self._record(method=method, host=host, port=url.port, path=url.path, status=None)
            try:
                with socket.create_connection((self.routes[host], url.port or 80), timeout=30) as upstream:
                    upstream.settimeout(None)
                    upstream.sendall(head + body)
                    while chunk := upstream.recv(65536):
                        conn.sendall(chunk)
            except OSError:
                return


def proxy_env(proxy: RecordingProxy, no_proxy: str) -> dict[str, str]:
    return {"HTTP_PROXY": proxy.url, "HTTPS_PROXY": proxy.url, "NO_PROXY": no_proxy}


def worker_environments(server_pid: int) -> dict[int, dict[str, str]]:
    """The environment of each sandbox worker (Deno) of the server, read from /proc as the host."""
    out = {}
    for pids in harness.sandbox_workers(server_pid).values():
        for pid in pids:
            try:
                raw = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            out[pid] = dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)
    return out


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    """Four downstream servers and a proxy that routes two public-looking names to two of them:
    `remote` (streamable HTTP at mcp.remote.test), `legacy` (HTTP+SSE at sse.remote.test), `local`
    (streamable HTTP at 127.0.0.1, in NO_PROXY) and `denied` (mcp.denied.test, which the proxy
    refuses). code-executor runs over stdio with the proxy variables."""
    root = tmp_path_factory.mktemp("egress")
    servers = {
        "remote": SseServer(root, "remote", "--streamable"),
        "legacy": SseServer(root, "legacy"),
        "local": SseServer(root, "local", "--streamable"),
        "denied": SseServer(root, "denied", "--streamable"),
    }
    proxy = RecordingProxy({"mcp.remote.test": "127.0.0.1", "sse.remote.test": "127.0.0.1"})
    try:
        deadline = time.monotonic() + 90
        for s in servers.values():
            s.wait(deadline)
        e2e = E2EEnv(root, servers=(), extra_env=proxy_env(proxy, "localhost,127.0.0.1"))
        config = {
            "remote": {"type": "http", "url": f"http://mcp.remote.test:{servers['remote'].port}/mcp"},
            "legacy": {"type": "sse", "url": f"http://sse.remote.test:{servers['legacy'].port}/sse"},
            "local": {"type": "http", "url": f"http://127.0.0.1:{servers['local'].port}/mcp"},
            "denied": {"type": "http", "url": f"http://mcp.denied.test:{servers['denied'].port}/mcp"},
        }
        e2e.config_path.write_text(json.dumps({"mcpServers": config}, indent=2))
        client = McpClient("stdio", e2e, root / "code-executor.log")
        client.start()
        try:
            yield client, servers, proxy
        finally:
            client.close()
    finally:
        proxy.close()
        for s in servers.values():
            s.close()


def reverse(server: str, text: str) -> str:
    return f"""
try {{ return await callMCPTool({json.dumps(tool_name(server, "reverse_text"))}, {{ text: {json.dumps(text)} }}); }}
catch (e) {{ return "error: " + String(e.message ?? e); }}
"""


def test_remote_servers_are_reached_through_the_proxy(remote) -> None:
    client, servers, proxy = remote
    for server in ("remote", "legacy"):
        ex = ok(client, reverse(server, f"via {server}"), allowed=[tool_name(server, "*")])
        assert ex.result == {"reversed": f"via {server}"[::-1]}, ex.describe()
    seen = proxy.requests()
    streamable = [r for r in seen if r["host"] == "mcp.remote.test"]
    sse = [r for r in seen if r["host"] == "sse.remote.test"]
    assert any(r["method"] == "POST" and r["path"] == "/mcp" for r in streamable), seen
    assert any(r["method"] == "GET" and r["path"] == "/sse" for r in sse), seen
    assert any(r["method"] == "POST" and r["path"].startswith("/messages") for r in sse), seen
    # What the servers saw came through the proxy (their request logs), and nothing was refused.
    assert servers["remote"].requests() and servers["legacy"].requests()
    assert all(r["status"] is None for r in streamable + sse), seen


def test_no_proxy_hosts_are_reached_directly(remote) -> None:
    client, servers, proxy = remote
    before = len(servers["local"].requests())
    ex = ok(client, reverse("local", "direct"), allowed=[tool_name("local", "*")])
    assert ex.result == {"reversed": "tcerid"}, ex.describe()
    assert len(servers["local"].requests()) > before
    assert "127.0.0.1" not in proxy.hosts(), proxy.requests()


def test_a_host_the_proxy_refuses_is_a_clear_error(remote) -> None:
    client, servers, proxy = remote
    ex = ok(client, reverse("denied", "no"), allowed=[tool_name("denied", "*")])
    assert isinstance(ex.result, str) and ex.result.startswith("error: "), ex.describe()
    assert "denied" in ex.result and "403" in ex.result, ex.describe()
    assert any(r["host"] == "mcp.denied.test" and r["status"] == 403 for r in proxy.requests()), proxy.requests()
    # The server itself was never reached (its name resolves nowhere but through the proxy).
    assert servers["denied"].requests() == []
    listed = {s["name"]: s for s in client.structured("listServers", {})["servers"]}
    assert listed["denied"]["state"] == "failed" and "403" in listed["denied"]["error"], listed["denied"]


SANDBOX_PROXY = """
const attempts = {};
async function attempt(name, fn) {
  try { attempts[name] = "ALLOWED: " + String(await fn()).slice(0, 120); }
  catch (e) { attempts[name] = "refused: " + (e?.name ?? "Error"); }
}
await attempt("fetch the proxy", () => fetch(PROXY + "/").then((r) => r.status));
await attempt("fetch through the proxy", () => fetch(PROXY + "/http://mcp.remote.test/").then((r) => r.status));
await attempt("fetch a routed name", () => fetch("http://mcp.remote.test:" + PORT + "/mcp").then((r) => r.status));
await attempt("connect to the proxy", () => Deno.connect({ hostname: "127.0.0.1", port: PROXY_PORT }).then((c) => { c.close(); return "connected"; }));
for (const v of VARIABLES) await attempt("Deno.env " + v, () => Deno.env.get(v));
await attempt("read /proc/self/environ", () => Deno.readTextFile("/proc/self/environ"));
return attempts;
"""


def test_the_sandbox_sees_no_proxy_variable_and_cannot_reach_the_proxy(remote) -> None:
    client, servers, proxy = remote
    before = len(proxy.requests())
    code = (
        f"const PROXY = {json.dumps(proxy.url)}, PROXY_PORT = {proxy.port}, PORT = {servers['remote'].port};\n"
        f"const VARIABLES = {json.dumps(list(PROXY_VARIABLES))};\n" + SANDBOX_PROXY
    )
    ex = ok(client, code)
    allowed = {k: v for k, v in ex.result.items() if not v.startswith("refused")}
    assert ex.result and not allowed, ex.describe()
    assert len(proxy.requests()) == before, proxy.requests()[before:]
    # From the host: the workers' environment holds none of the variables code-executor was given.
    environments = worker_environments(client.server_pid)
    assert environments, "no sandbox worker found"
    for pid, env in environments.items():
        assert not set(env) & set(PROXY_VARIABLES), (pid, env)
        assert set(env) <= {"DENO_DIR", "DENO_EMIT_CACHE_MODE", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"}, (pid, env)


# --------------------------------------------------------------------------------------------
# OAuth: `auth login` and the authorized client, through the proxy
# --------------------------------------------------------------------------------------------


def test_oauth_login_and_authorized_calls_go_through_the_proxy(servers, tmp_path: Path) -> None:  # noqa: F811
    """The authorization and resource servers of test_oauth.py, on 127.0.0.1; the proxy routes
    127.0.0.1 and NO_PROXY names only `localhost`, so every OAuth request goes through it."""
    servers.reset()
    proxy = RecordingProxy({"127.0.0.1": "127.0.0.1"})
    try:
        e2e = E2EEnv(
            tmp_path,
            servers=(),
            extra_env={
                "CODE_EXECUTOR_OAUTH_DIR": str(tmp_path / "oauth"),
                **proxy_env(proxy, "localhost"),
            },
        )
        e2e.config_path.write_text(json.dumps({"mcpServers": {SERVER: {"type": "http", "url": servers.rs_url}}}))
        assert status(e2e)[SERVER]["state"] == "needs_login"
        r = login(e2e)
        assert r.returncode == 0, r.stdout + r.stderr
        as_port, rs_port = urlsplit(servers.as_url).port, urlsplit(servers.rs_url).port
        to_as = {r["path"] for r in proxy.requests() if r["port"] == as_port}
        to_rs = {r["path"] for r in proxy.requests() if r["port"] == rs_port}
        # Discovery of the resource's metadata, of the authorization server's, registration and
        # the token exchange: all through the proxy. (The browser's /authorize is the user's.)
        assert "/register" in to_as and "/token" in to_as, to_as
        assert any(p.startswith("/.well-known/oauth-authorization-server") or p.startswith("/.well-known/openid") for p in to_as), to_as
        assert "/mcp" in to_rs and any(p.startswith("/.well-known/oauth-protected-resource") for p in to_rs), to_rs

        before = len(proxy.requests())
        client = McpClient("stdio", e2e, tmp_path / "client.log")
        client.start()
        try:
            code = f'return await callMCPTool("mcp__{SERVER}__read_note", {{ title: "groceries" }});'
            ex = ok(client, code, allowed=[f"mcp__{SERVER}__*"])
            assert "remember the milk" in json.dumps(ex.result), ex.describe()
        finally:
            client.close()
        after = [r for r in proxy.requests()[before:] if r["port"] == rs_port]
        assert any(r["method"] == "POST" and r["path"] == "/mcp" for r in after), proxy.requests()[before:]
    finally:
        proxy.close()
