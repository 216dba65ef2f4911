"""Streamable HTTP specifics: DNS-rebinding protection (Origin and Host checks).

The MCP spec (Streamable HTTP, security warning) says servers MUST validate the Origin header, and a
loopback server should only answer requests addressed to a loopback Host; the design notes list both
checks for the front. A browser page on another site must not be able to drive the server.
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest

from conftest import start_client
from harness import McpClient

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    c = start_client("http", tmp_path_factory.mktemp("http-only"))
    yield c
    c.close()


def post_initialize(server: McpClient, headers: dict[str, str]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        base = {
            "Host": f"127.0.0.1:{server.port}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        body = json.dumps(INIT).encode()
        for k, v in {**base, **headers, "Content-Length": str(len(body))}.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        # An SSE answer may stay open: read only what is needed to see the status.
        data = resp.read(2000) if resp.status != 200 else b""
        return resp.status, data.decode("utf-8", "replace")
    finally:
        conn.close()


def test_plain_local_request_is_served(http_server: McpClient) -> None:
    status, body = post_initialize(http_server, {})
    assert status == 200, body


def test_foreign_origin_is_rejected(http_server: McpClient) -> None:
    status, body = post_initialize(http_server, {"Origin": "http://evil.example"})
    assert 400 <= status < 500, f"a request from Origin http://evil.example got {status}: {body}"


def test_foreign_host_is_rejected(http_server: McpClient) -> None:
    status, body = post_initialize(http_server, {"Host": f"evil.example:{http_server.port}"})
    assert 400 <= status < 500, f"a request for Host evil.example got {status}: {body}"


def test_server_still_serves_after_rejections(http_server: McpClient) -> None:
    ex = http_server.structured("health", {})
    assert ex["status"] in ("ok", "degraded")
    # The instance is named (replicas behind one address are told apart by it).
    assert ex["instance"] == socket.gethostname()
