"""What a client gets back for a message that cannot be served, over stdio and HTTP, byte for byte.

Raw JSON-RPC, no MCP client library: each malformed message below is written as it is (a line on
the server's stdin, or an HTTP request body) and its answer checked exactly (code, id, jsonrpc,
HTTP status and content type), then a normal request must still be served. A missing answer
fails within seconds (JSON-RPC: every request, and every message whose id cannot be read, gets
an answer). What each answer is and why: docs/interface.md, "Protocol errors".
"""

from __future__ import annotations

import json
import queue
import re
import secrets
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from harness import E2EEnv, binary, http_server, tail

pytestmark = pytest.mark.needs_binary

# A missing answer fails fast: every answer here is immediate.
ANSWER_WITHIN = 10.0
PROTOCOL = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
# The complaints one session gets a minute (front/complaints.rs COMPLAINTS_PER_MINUTE).
COMPLAINTS_PER_MINUTE = 5


class RawStdio:
    """`code-executor serve` over stdio, spoken to line by line."""

    def __init__(self, root: Path) -> None:
        self.e2e = E2EEnv(root, servers=())
        self.log_path = root / "server.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [str(binary()), "serve"],
            cwd=self.e2e.project,
            env=self.e2e.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: Any) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=ANSWER_WITHIN)
        except queue.Empty:
            pytest.fail(f"no answer within {ANSWER_WITHIN} s; the server's log:\n{self.log()}")
        return json.loads(line)

    def ask(self, message: Any) -> dict[str, Any]:
        self.send(message)
        return self.receive()

    def request(self, id: Any, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        return self.ask(message)

    def log(self) -> str:
        self._log.flush()
        return tail(self.log_path)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._log.close()


def assert_error(answer: dict[str, Any], code: int, id: Any, message: str | None = None) -> str:
    """`answer` is exactly a JSON-RPC error of `code` for `id`; its message (checked against the
    regular expression `message` when given)."""
    assert set(answer) == {"jsonrpc", "id", "error"}, answer
    assert answer["jsonrpc"] == "2.0", answer
    assert answer["id"] == id and type(answer["id"]) is type(id), answer
    assert answer["error"]["code"] == code, answer
    text = answer["error"]["message"]
    assert isinstance(text, str) and text, answer
    if message is not None:
        assert re.search(message, text), f"{text!r} does not match {message!r}"
    return text


@pytest.fixture(scope="module")
def stdio(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    server = RawStdio(tmp_path_factory.mktemp("protocol-stdio"))
    answer = server.ask(INITIALIZE)
    assert answer.get("result", {}).get("protocolVersion") == PROTOCOL, answer
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield server
    server.close()
    assert server.proc.returncode == 0, server.log()


def still_serves(server: RawStdio) -> None:
    """A normal request is served after the bad one, on the session's protocol (2025-11-25:
    `ping` exists, results carry no `resultType`)."""
    ping = server.request("after", "ping")
    assert ping == {"jsonrpc": "2.0", "id": "after", "result": {}}, ping
    listed = server.request("list", "tools/list")
    names = [tool["name"] for tool in listed["result"]["tools"]]
    assert "executeTypescript" in names and "resultType" not in listed["result"], listed


# ------------------------------------------------------------------------------------------
# stdio
# ------------------------------------------------------------------------------------------

# (line as written, code, id, message pattern)
STDIO_CASES = [
    ('{"x":Infinity}', -32700, None, r"^Parse error"),
    ("not json at all", -32700, None, r"^Parse error"),
    ('{"jsonrpc":"2.0","id":1,"method":"ping"', -32700, None, r"^Parse error"),
    ("[]", -32600, None, r"^Invalid Request: a batch"),
    ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, None, r"^Invalid Request: a batch"),
    ("42", -32600, None, r"^Invalid Request"),
    ('{"jsonrpc":"2.0","id":5}', -32600, 5, r'needs a "method"'),
    ('{"jsonrpc":"2.0","id":"s","method":7}', -32600, "s", r'"method" must be a string'),
    ('{"jsonrpc":"1.0","id":8,"method":"ping"}', -32600, 8, r'"jsonrpc" must be "2.0"'),
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None, r"id must be a string or an integer"),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, None, r"id must be a string or an integer"),
    ('{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":5}}', -32602, 10, r"^Invalid params for tools/call: name: "),
    ('{"jsonrpc":"2.0","id":11,"method":"initialize","params":{}}', -32602, 11, r"^Invalid params for initialize: .*protocolVersion"),
    ('{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":{"level":"bogus"}}', -32602, 12, r"^Invalid params for logging/setLevel: level: .*bogus"),
    ('{"jsonrpc":"2.0","id":13,"method":"tools/call"}', -32602, 13, r"^Invalid params for tools/call: .*name"),
    ('{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"noSuchTool","arguments":{}}}', -32602, 14, r"^Unknown tool: noSuchTool \(available: executeTypescript, "),
    ('{"jsonrpc":"2.0","id":15,"method":"no/such","params":{}}', -32601, 15, r"^Method not found: no/such$"),
    ('{"jsonrpc":"2.0","id":16,"method":"resources/read","params":{"uri":"file:///x"}}', -32601, 16, r"^Method not found: resources/read"),
    ('{"jsonrpc":"2.0","id":17,"method":"prompts/list"}', -32601, 17, r"^Method not found: prompts/list"),
]


@pytest.mark.parametrize("line,code,id,message", STDIO_CASES, ids=[c[0][:60] for c in STDIO_CASES])
def test_stdio_answers_each_malformed_message(stdio: RawStdio, line: str, code: int, id: Any, message: str) -> None:
    assert_error(stdio.ask(line), code, id, message)
    still_serves(stdio)


def test_stdio_a_second_initialize_is_refused_and_changes_nothing(stdio: RawStdio) -> None:
    again = {**INITIALIZE, "id": "again", "params": {**INITIALIZE["params"], "protocolVersion": "2026-07-28"}}
    assert_error(stdio.ask(again), -32600, "again", rf"already initialized with protocol {PROTOCOL}")
    # The session is still on its first protocol: ping exists, no resultType.
    still_serves(stdio)
    older = {**INITIALIZE, "id": "older", "params": {**INITIALIZE["params"], "protocolVersion": "2025-06-18"}}
    assert_error(stdio.ask(older), -32600, "older", rf"already initialized with protocol {PROTOCOL}")
    still_serves(stdio)


def test_stdio_a_session_opened_without_initialize_refuses_one(tmp_path: Path, ce_binary: Path) -> None:
    server = RawStdio(tmp_path)
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    try:
        # Before any lifecycle, a malformed initialize is answered like any other request.
        assert_error(server.request(0, "initialize", {}), -32602, 0, r"protocolVersion")
        opened = server.request(1, "tools/list", {"_meta": meta})
        assert opened["result"]["resultType"] == "complete", opened
        assert_error(server.ask(INITIALIZE), -32600, "init", r"already initialized with protocol 2026-07-28")
        again = server.request(2, "tools/list", {"_meta": meta})
        assert again["result"]["resultType"] == "complete", again
        # On 2026-07-28 there is no ping, in the one wording.
        assert_error(server.request(3, "ping", {"_meta": meta}), -32601, 3, r"^Method not found: ping$")
    finally:
        server.close()


def test_stdio_notifications_get_no_answer(stdio: RawStdio) -> None:
    stdio.send({"jsonrpc": "2.0", "method": "notifications/no-such-thing", "params": {"x": 1}})
    stdio.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}})
    # The next answer is the ping's: nothing was written for the notifications.
    assert stdio.request("p", "ping") == {"jsonrpc": "2.0", "id": "p", "result": {}}


def test_stdio_malformed_messages_are_warned_about_a_few_times_a_minute(tmp_path: Path, ce_binary: Path) -> None:
    server = RawStdio(tmp_path)
    try:
        for n in range(30):
            assert_error(server.ask("{broken"), -32700, None)
            assert_error(server.request(n, "no/such"), -32601, n)
        assert server.request("p", "ping")["result"] == {}
        log = server.log()
    finally:
        server.close()
    warned = [line for line in log.splitlines() if "WARN" in line and "unservable message" in line]
    assert 1 <= len(warned) <= COMPLAINTS_PER_MINUTE, log
    # rmcp's own warning per error answer is not written either.
    assert "response error" not in log, log


# ------------------------------------------------------------------------------------------
# HTTP
# ------------------------------------------------------------------------------------------


def post(
    port: int,
    body: bytes | str,
    path: str = "/mcp",
    headers: dict[str, str] | None = None,
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    """One raw request; its status, headers (lower-case names) and body."""
    data = body.encode() if isinstance(body, str) else body
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data if method == "POST" else None,
        method=method,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_WITHIN) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def json_answer(status: int, headers: dict[str, str], body: bytes, want_status: int) -> dict[str, Any]:
    assert status == want_status, (status, headers, body)
    assert headers.get("content-type", "").startswith("application/json"), (status, headers, body)
    return json.loads(body)


@pytest.fixture(scope="module")
def http_port(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    with http_server(tmp_path_factory.mktemp("protocol-http"), servers=()) as (port, _e2e, _proc):
        yield port


def http_still_serves(port: int) -> None:
    status, headers, body = post(port, json.dumps({"jsonrpc": "2.0", "id": "ok", "method": "tools/list"}))
    answer = json_answer(status, headers, body, 200)
    assert "executeTypescript" in [tool["name"] for tool in answer["result"]["tools"]], answer


# (body, HTTP status, code, id, message pattern)
HTTP_CASES = [
    ('{"x":Infinity}', 400, -32700, None, r"^Parse error"),
    ("not json", 400, -32700, None, r"^Parse error"),
    ("[]", 400, -32600, None, r"^Invalid Request: a batch"),
    ('{"jsonrpc":"2.0","id":5}', 400, -32600, 5, r'needs a "method"'),
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', 400, -32600, None, r"id must be a string or an integer"),
    ('{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":5}}', 200, -32602, 10, r"^Invalid params for tools/call: name: "),
    ('{"jsonrpc":"2.0","id":11,"method":"initialize","params":{}}', 200, -32602, 11, r"^Invalid params for initialize: .*protocolVersion"),
    ('{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":{"level":"bogus"}}', 200, -32602, 12, r"^Invalid params for logging/setLevel: level: .*bogus"),
    ('{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"noSuchTool","arguments":{}}}', 200, -32602, 14, r"^Unknown tool: noSuchTool "),
    ('{"jsonrpc":"2.0","id":15,"method":"no/such","params":{}}', 200, -32601, 15, r"^Method not found: no/such$"),
    ('{"jsonrpc":"2.0","id":16,"method":"resources/read","params":{"uri":"file:///x"}}', 200, -32601, 16, r"^Method not found: resources/read"),
]


@pytest.mark.parametrize("body,status,code,id,message", HTTP_CASES, ids=[c[0][:60] for c in HTTP_CASES])
def test_http_answers_each_malformed_body(http_port: int, body: str, status: int, code: int, id: Any, message: str) -> None:
    assert_error(json_answer(*post(http_port, body), status), code, id, message)
    http_still_serves(http_port)


@pytest.mark.parametrize(
    "method,path",
    [("POST", "/mcp/"), ("POST", "/mcp/anything"), ("GET", "/mcp/x/y"), ("POST", "/"), ("GET", "/other")],
)
def test_http_only_the_endpoint_path_is_served(http_port: int, method: str, path: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    answer = json_answer(*post(http_port, body, path=path, method=method), 404)
    assert_error(answer, -32000, None, rf"not an MCP endpoint; the endpoint is /mcp")
    http_still_serves(http_port)


def test_http_refusals_carry_a_json_rpc_error(http_port: int) -> None:
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    # A foreign page: 403, with rmcp's reason as the message.
    answer = json_answer(*post(http_port, ping, headers={"Origin": "http://evil.example"}), 403)
    assert_error(answer, -32000, None, r"(?i)origin")
    # A session this stateless server never issued: 404, -32001.
    answer = json_answer(*post(http_port, ping, headers={"Mcp-Session-Id": "made-up"}), 404)
    assert_error(answer, -32001, None, r"^unknown MCP session")
    # Not JSON as a content type: 415.
    answer = json_answer(*post(http_port, ping, headers={"Content-Type": "text/plain"}), 415)
    assert_error(answer, -32000, None, r"Content-Type must be application/json")
    http_still_serves(http_port)


def test_http_a_missing_or_wrong_token_is_a_json_rpc_401(tmp_path: Path, ce_binary: Path) -> None:
    token = secrets.token_hex(32)
    with http_server(tmp_path, {"CODE_EXECUTOR_HTTP_TOKEN": token}, servers=()) as (port, _e2e, _proc):
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        for headers, reason in [({}, r"^missing bearer token"), ({"Authorization": "Bearer wrong"}, r"^invalid bearer token$")]:
            status, got, body = post(port, ping, headers=headers)
            assert got.get("www-authenticate") == "Bearer", got
            assert_error(json_answer(status, got, body, 401), -32000, None, reason)
        # With the token: served, and its malformed bodies answered as without one.
        auth = {"Authorization": f"Bearer {token}"}
        assert_error(json_answer(*post(port, "{", headers=auth), 400), -32700, None)
        status, got, body = post(port, ping, headers=auth)
        assert json_answer(status, got, body, 200) == {"jsonrpc": "2.0", "id": 1, "result": {}}
