"""Legacy HTTP+SSE downstream servers (protocol 2024-11-05) through the real binary and a real MCP
client, against the MCP Python SDK's own SSE server transport (`tests/servers/sse_server.py`):

- a `"type": "sse"` entry (with a header the server requires on the stream and on every message)
  is called from `executeTypescript` and `executePython`, found by `searchTools`, and listed with
  transport `sse`;
- Gemini CLI's `url` entry is SSE;
- the backwards-compatibility probe: a `"type": "http"` entry whose POST is answered 405 or 404
  is reached as SSE (and listed so), while a real streamable-HTTP server is not probed, and a
  401 or 403 answer is never probed (no GET reaches that server);
- hostile SSE servers each give a clear error in the sandbox while code-executor keeps serving:
  an `endpoint` on another origin (no message ever reaches it), a stream that ends in the middle
  of an event (the next call reconnects), a 64 MiB event (refused in bounded memory), a POST
  answered 500.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import harness
from harness import E2EEnv, McpClient, Trap, free_port, ok, ok_py, proc_memory, run_ts, tool_name

SSE_SERVER = Path(__file__).resolve().parent.parent / "servers" / "sse_server.py"
API_KEY = "k-" + "5" * 20
# Growth of code-executor's peak RSS a 64 MiB event may cause (unbounded, it costs several times
# the event).
MEMORY_BOUND_KIB = 100 * 1024


class SseServer:
    """One `sse_server.py` process on a free loopback port, with its request log."""

    def __init__(self, root: Path, name: str, *flags: str) -> None:
        self.port = free_port()
        self.log = root / f"{name}.requests.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, str(SSE_SERVER), "--port", str(self.port), "--log", str(self.log), *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(root / f"{name}.stderr", "w"),
        )

    def url(self, path: str = "/sse") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def wait(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"sse_server.py exited with {self.proc.returncode}"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"sse_server.py on port {self.port} did not start")

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    root = tmp_path_factory.mktemp("sse")
    trap = Trap()
    servers = {
        "legacy": SseServer(root, "legacy", "--require-key", API_KEY),
        "gemini-legacy": SseServer(root, "gemini-legacy"),
        "probed": SseServer(root, "probed"),
        "probed404": SseServer(root, "probed404", "--sse-post-status", "404"),
        "modern": SseServer(root, "modern", "--streamable"),
        "refuses401": SseServer(root, "refuses401", "--streamable", "--reject-post", "401"),
        "refuses403": SseServer(root, "refuses403", "--streamable", "--reject-post", "403"),
        "foreign": SseServer(root, "foreign", "--foreign-endpoint", f"http://127.0.0.1:{trap.port}/messages/"),
        "cutter": SseServer(root, "cutter", "--cut"),
        "failing": SseServer(root, "failing", "--fail-calls", "500"),
    }
    try:
        deadline = time.monotonic() + 90
        for s in servers.values():
            s.wait(deadline)
        e2e = E2EEnv(root, servers=("time",))
        config = {
            "time": e2e.server_configs()["time"],
            "legacy": {"type": "sse", "url": servers["legacy"].url(), "headers": {"X-Api-Key": API_KEY}},
            "probed": {"type": "http", "url": servers["probed"].url()},
            "probed404": {"type": "http", "url": servers["probed404"].url()},
            "modern": {"type": "http", "url": servers["modern"].url("/mcp")},
            "refuses401": {"type": "http", "url": servers["refuses401"].url("/mcp")},
            "refuses403": {"type": "http", "url": servers["refuses403"].url("/mcp")},
            "foreign": {"type": "sse", "url": servers["foreign"].url()},
            "cutter": {"type": "sse", "url": servers["cutter"].url()},
            "failing": {"type": "sse", "url": servers["failing"].url()},
        }
        e2e.config_path.write_text(json.dumps({"mcpServers": config}, indent=2))
        gemini = e2e.home / ".gemini" / "settings.json"
        gemini.parent.mkdir(parents=True, exist_ok=True)
        gemini.write_text(json.dumps({"mcpServers": {"gemini-legacy": {"url": servers["gemini-legacy"].url()}}}))
        client = McpClient("stdio", e2e, root / "code-executor.log")
        client.start()
        try:
            yield client, servers, trap
        finally:
            client.close()
    finally:
        for s in servers.values():
            s.close()
        trap.close()


def call_ts(server: str, tool: str, args: dict) -> str:
    return f"return await callMCPTool({json.dumps(tool_name(server, tool))}, {json.dumps(args)});"


def listed(client: McpClient) -> dict[str, dict]:
    return {s["name"]: s for s in client.structured("listServers", {})["servers"]}


def assert_legacy_serves(client: McpClient) -> None:
    """The well-behaved SSE server still answers through code-executor."""
    ex = ok(client, call_ts("legacy", "reverse_text", {"text": "alive"}), allowed=[tool_name("legacy", "*")])
    assert ex.result == {"reversed": "evila"}, ex.describe()


# --------------------------------------------------------------------------------------------
# Working servers
# --------------------------------------------------------------------------------------------


def test_an_sse_entry_is_called_from_typescript_with_its_headers(world) -> None:
    client, servers, _ = world
    ex = ok(
        client,
        call_ts("legacy", "reverse_text", {"text": "legacy sse"})
        .replace("return await", "const r = await")
        + "\n" + call_ts("legacy", "add_numbers", {"a": 2, "b": 40}).replace("return await", "const s = await")
        + "\nreturn [r, s];",
        allowed=[tool_name("legacy", "*")],
    )
    assert ex.result == [{"reversed": "ess ycagel"}, {"sum": 42}], ex.describe()
    requests = servers["legacy"].requests()
    gets = [r for r in requests if r["method"] == "GET"]
    posts = [r for r in requests if r["method"] == "POST"]
    assert gets and gets[0]["accept"] == "text/event-stream", requests
    assert posts and all(r["path"].startswith("/messages/") for r in posts), requests
    assert all(r["key"] == API_KEY and r["status"] in (200, 202) for r in requests), requests
    s = listed(client)["legacy"]
    # The transport is 2024-11-05's; the version is negotiated (the SDK's server speaks newer ones too).
    assert (s["transport"], s["state"]) == ("sse", "connected") and s["protocol"], s


@pytest.mark.pyodide
def test_an_sse_entry_is_called_from_python(world) -> None:
    client, _, _ = world
    ex = ok_py(
        client,
        "r = await call_mcp_tool('mcp__legacy__add_numbers', {'a': 1.5, 'b': 2})\nr",
        allowed=[tool_name("legacy", "add_numbers")],
    )
    assert ex.result == {"sum": 3.5}, ex.describe()


def test_search_finds_sse_tools(world) -> None:
    client, _, _ = world
    found = client.structured("searchTools", {"query": "reverse a string of text", "detail": "name"})
    names = json.dumps(found)
    assert tool_name("legacy", "reverse_text") in names, names


def test_geminis_url_entry_is_sse(world) -> None:
    client, servers, _ = world
    ex = ok(client, call_ts("gemini-legacy", "reverse_text", {"text": "gemini"}),
            allowed=[tool_name("gemini-legacy", "reverse_text")])
    assert ex.result == {"reversed": "inimeg"}, ex.describe()
    assert listed(client)["gemini-legacy"]["transport"] == "sse"
    assert [r["method"] for r in servers["gemini-legacy"].requests()][0] == "GET"


# --------------------------------------------------------------------------------------------
# The probe
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,status", [("probed", 405), ("probed404", 404)])
def test_an_http_entry_answering_with_status_is_probed_as_sse(world, name: str, status: int) -> None:
    client, servers, _ = world
    ex = ok(client, call_ts(name, "add_numbers", {"a": 20, "b": 1}), allowed=[tool_name(name, "*")])
    assert ex.result == {"sum": 21}, ex.describe()
    requests = servers[name].requests()
    first_post = next(r for r in requests if r["method"] == "POST")
    assert (first_post["path"], first_post["status"]) == ("/sse", status), requests
    assert any(r["method"] == "GET" and r["accept"] == "text/event-stream" for r in requests), requests
    s = listed(client)[name]
    assert (s["transport"], s["state"]) == ("sse", "connected"), s


def test_a_streamable_server_is_not_probed(world) -> None:
    client, servers, _ = world
    ex = ok(client, call_ts("modern", "reverse_text", {"text": "abc"}), allowed=[tool_name("modern", "*")])
    assert ex.result == {"reversed": "cba"}, ex.describe()
    requests = servers["modern"].requests()
    assert requests[0]["method"] == "POST" and requests[0]["status"] == 200, requests
    assert not any(r["path"] == "/sse" for r in requests), requests
    s = listed(client)["modern"]
    assert s["transport"] == "http" and s["state"] == "connected", s


@pytest.mark.parametrize("name,status", [("refuses401", 401), ("refuses403", 403)])
def test_401_and_403_are_never_probed(world, name: str, status: int) -> None:
    client, servers, _ = world
    ex = run_ts(client, call_ts(name, "reverse_text", {"text": "x"}), allowed=[tool_name(name, "*")])
    assert not ex.success, ex.describe()
    assert f"MCP server `{name}` failed to start" in ex.everything(), ex.describe()
    requests = servers[name].requests()
    assert requests and all(r["method"] == "POST" and r["status"] == status for r in requests), requests
    assert_legacy_serves(client)


# --------------------------------------------------------------------------------------------
# Hostile servers
# --------------------------------------------------------------------------------------------


def test_an_endpoint_on_another_origin_is_refused(world) -> None:
    client, _, trap = world
    ex = run_ts(client, call_ts("foreign", "reverse_text", {"text": "x"}), allowed=[tool_name("foreign", "*")])
    assert not ex.success, ex.describe()
    assert "another origin" in ex.everything(), ex.describe()
    assert trap.connections == 0, "a message went to the origin the hostile endpoint named"
    assert listed(client)["foreign"]["state"] == "failed"
    assert_legacy_serves(client)


def test_a_stream_ending_mid_event_fails_the_call_and_the_next_call_reconnects(world) -> None:
    client, servers, _ = world
    allowed = [tool_name("cutter", "*")]
    ex = run_ts(client, call_ts("cutter", "cut", {}), allowed=allowed)
    assert not ex.success, ex.describe()
    assert "MCP server `cutter` failed during `cut`" in ex.everything(), ex.describe()
    assert "connection closed" in ex.everything(), ex.describe()
    assert "CUT-HERE" not in ex.everything(), ex.describe()
    assert "ended in the middle of an event" in client.log_tail(20000), client.log_tail()
    gets_before = sum(r["method"] == "GET" for r in servers["cutter"].requests())
    again = ok(client, call_ts("cutter", "reverse_text", {"text": "back"}), allowed=allowed)
    assert again.result == {"reversed": "kcab"}, again.describe()
    assert sum(r["method"] == "GET" for r in servers["cutter"].requests()) == gets_before + 1
    assert_legacy_serves(client)


def test_a_huge_event_is_refused_in_bounded_memory(world) -> None:
    client, _, _ = world
    # Connected first, so the peak measured next is the event's alone.
    assert_legacy_serves(client)
    before = proc_memory(client.server_pid)["VmHWM"]
    ex = run_ts(client, call_ts("legacy", "huge", {"mib": 64}), allowed=[tool_name("legacy", "*")], call_timeout=120)
    assert not ex.success, ex.describe()
    assert "MCP server `legacy` failed during `huge`" in ex.everything(), ex.describe()
    assert "an event exceeded 16777216 bytes" in client.log_tail(20000), client.log_tail()
    growth = proc_memory(client.server_pid)["VmHWM"] - before
    assert growth < MEMORY_BOUND_KIB, f"peak RSS grew by {growth} KiB"
    assert_legacy_serves(client)


def test_a_post_answered_500_is_a_clear_error(world) -> None:
    client, _, _ = world
    ex = run_ts(client, call_ts("failing", "reverse_text", {"text": "x"}), allowed=[tool_name("failing", "*")])
    assert not ex.success, ex.describe()
    assert "it answered a message with HTTP 500" in ex.everything(), ex.describe()
    assert_legacy_serves(client)
    ok(client, 'return 1;')
