"""Conformance to MCP 2026-07-28 as a third party judges it: `mcpcheck` (PyPI `jbt-mcpcheck`, pinned
in requirements.txt) run against the real `serve --http`, started as a user starts it (loopback, no
token) and with a bearer token, passes all eight checks with no warning and nothing inconclusive,
also when it probes the legacy handshake (`--legacy-probes`: the server serves both eras).

And what it judges, seen from the SDK's own clients: our tools' annotations (the look-ups read-only,
idempotent and closed-world, so a checker may probe them; the executions open-world and promising
nothing), `io.modelcontextprotocol/serverInfo` in the `_meta` of every 2026-07-28 result (`tools/list`,
`tools/call`) and in no legacy one, and prompts and resources, which we do not declare, not found.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness
from conftest import start_client
from harness import McpClient
from mcp import types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

SERVERS = ("time", "Test-Store")
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
LOOKUPS = ("searchTools", "getToolSchema", "listServers", "health")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    """`serve --http` as a user runs it: loopback, no token."""
    c = start_client("http", tmp_path_factory.mktemp("conformance-plain"), SERVERS)
    yield c
    c.close()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    """`serve --http` with `CODE_EXECUTOR_HTTP_TOKEN`: every request needs the bearer token."""
    token = secrets.token_hex(32)
    c = start_client(
        "http",
        tmp_path_factory.mktemp("conformance-token"),
        SERVERS,
        extra_env={"CODE_EXECUTOR_HTTP_TOKEN": token},
        http_headers={"Authorization": f"Bearer {token}"},
    )
    yield c, token
    c.close()


def mcpcheck(capsys: pytest.CaptureFixture[str], url: str, *options: str, token: str | None = None) -> dict[str, Any]:
    """`mcpcheck URL --json [options]` (the token through `MCPCHECK_TOKEN`, never on the command
    line); its report, after printing a summary of it past pytest's capture, into the CI log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPCHECK_")}
    env["NO_COLOR"] = "1"
    if token is not None:
        env["MCPCHECK_TOKEN"] = token
    proc = subprocess.run(
        [harness.venv_script("mcpcheck"), url, "--json", *options],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    # 0: every check passed; 1: something failed (the report says what); 2: could not run.
    assert proc.returncode in (0, 1), f"mcpcheck exited {proc.returncode}:\n{proc.stderr[-4000:]}"
    report = json.loads(proc.stdout)
    ran = " ".join(["mcpcheck", report["mcpcheck_version"], *options])
    lines = [f"{ran} against {url}: {report['summary']}"]
    for check in report["checks"]:
        lines.append(f"  {check['name']:<10} {check['status']:<12} {check['summary']}")
        for kind in ("failures", "warnings"):
            for finding in check.get(kind) or []:
                lines.append(f"    {kind[:-1]}: {finding['code']}: {finding['message']}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    return report


def assert_clean(report: dict[str, Any]) -> None:
    summary = report["summary"]
    assert summary["total"] == 8, summary
    assert summary["passed"] == 8, summary
    assert (summary["warned"], summary["failed"], summary["inconclusive"], summary["errored"]) == (0, 0, 0, 0), summary
    assert summary["skipped"] == [] and summary["exit_code"] == 0, summary
    for check in report["checks"]:
        assert check["status"] == "pass", check
        assert not check["warnings"] and not check["failures"], check
    assert report["protocol_version"] == "2026-07-28", report["protocol_version"]
    assert report["server_info"]["name"] == "code-executor", report["server_info"]


def check_named(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["name"] == name)


def test_mcpcheck_passes_serve_http_as_a_user_starts_it(plain: McpClient, capsys) -> None:
    assert plain.url
    report = mcpcheck(capsys, plain.url)
    assert_clean(report)
    assert report["server_info"]["version"] == plain.structured("health", {})["version"]
    # The error handling was judged, not skipped: the read-only look-ups that take arguments were
    # probed with invalid ones (listServers and health take none, so nothing is provably invalid).
    errors = check_named(report, "errors")
    skipped = {i["subject"] for i in errors["info"] if i["code"] == "errors.tool_skipped"}
    assert skipped == {"executeTypescript", "executePython", "listServers", "health"}, errors
    assert "Probed 2 tool(s)" in errors["details"], errors["details"]
    # Prompts and resources: undeclared and not found, rather than undeclared and answered.
    consistent = [i["message"] for i in check_named(report, "discover")["info"]]
    assert any("capabilities.prompts undeclared and prompts/list answers -32601" in m for m in consistent), consistent
    assert any("capabilities.resources undeclared" in m and "-32601" in m for m in consistent), consistent


def test_mcpcheck_passes_serve_http_with_a_token(guarded: tuple[McpClient, str], capsys) -> None:
    c, token = guarded
    assert c.url
    assert_clean(mcpcheck(capsys, c.url, token=token))


def test_mcpcheck_passes_with_the_legacy_handshake_probed(plain: McpClient, capsys) -> None:
    """`--legacy-probes` also sends an `initialize` and a bare GET: the server is found to serve
    both eras (a 2025 client's made-up `Mcp-Session-Id` still gets 404), and all is clean."""
    assert plain.url
    report = mcpcheck(capsys, plain.url, "--legacy-probes")
    assert_clean(report)
    assert report["era"] == "dual-era", report["era"]


def test_our_tools_say_what_they_may_touch(plain: McpClient) -> None:
    """The annotations as a real client reads them from `tools/list`."""
    tools = {t.name: t for t in plain.list_tools().tools}
    assert set(tools) == harness.OUR_TOOLS
    for name in harness.EXEC_TOOLS:
        a = tools[name].annotations
        assert a is not None, name
        # Code may call any downstream tool its allowedTools names: nothing about its effects is
        # promised, and its world is every downstream server's.
        # readOnlyHint and idempotentHint are left at their default (false) to keep tools/list small.
        assert (a.read_only_hint or False, a.destructive_hint, a.idempotent_hint or False, a.open_world_hint) == (False, True, False, True), (name, a)
    for name in LOOKUPS:
        a = tools[name].annotations
        assert a is not None, name
        assert (a.read_only_hint, a.idempotent_hint, a.open_world_hint) == (True, True, False), (name, a)
        assert a.destructive_hint is None, (name, a)  # meaningless beside readOnlyHint: true


def modern(url: str, token: str | None = None):
    """The SDK's 2026-07-28 client for `url` (with the bearer token, if any)."""
    headers = {"Authorization": f"Bearer {token}"} if token else None

    class Opened:
        async def __aenter__(self) -> Client:
            self.http = create_mcp_http_client(headers=headers)
            await self.http.__aenter__()
            self.client = Client(streamable_http_client(url, http_client=self.http), mode="auto")
            return await self.client.__aenter__()

        async def __aexit__(self, *exc: Any) -> None:
            try:
                await self.client.__aexit__(*exc)
            finally:
                await self.http.__aexit__(*exc)

    return Opened()


@pytest.mark.parametrize("setup", ["plain", "guarded"])
def test_a_modern_client_gets_the_server_named_in_every_result(setup: str, request: pytest.FixtureRequest) -> None:
    if setup == "plain":
        c, token = request.getfixturevalue("plain"), None
    else:
        c, token = request.getfixturevalue("guarded")
    assert c.url
    version = c.structured("health", {})["version"]
    identity = {"name": "code-executor", "version": version}

    async def scenario() -> None:
        async with modern(c.url, token) as client:
            assert client.session.protocol_version == "2026-07-28"
            assert client.server_info is not None and client.server_info.name == "code-executor"
            listed = await client.list_tools()
            assert (listed.meta or {}).get(SERVER_INFO) == identity, listed.meta
            assert {t.name for t in listed.tools} == harness.OUR_TOOLS
            for name, args in (("health", {}), ("executeTypescript", {"code": "return 6 * 7"})):
                result = await client.call_tool(name, args)
                assert not result.is_error, result
                assert (result.meta or {}).get(SERVER_INFO) == identity, (name, result.meta)
            # A refused call is a result too.
            refused = await client.call_tool("getToolSchema", {})
            assert refused.is_error and (refused.meta or {}).get(SERVER_INFO) == identity, refused
            # Not declared, not offered: -32601 rather than an empty list.
            for ask in (client.list_prompts, client.list_resources, client.list_resource_templates):
                with pytest.raises(MCPError) as refused_list:
                    await ask()
                assert refused_list.value.code == types.METHOD_NOT_FOUND, refused_list.value

    anyio.run(scenario)


def test_a_legacy_client_gets_results_as_they_were(plain: McpClient) -> None:
    """A client on the `initialize` handshake finds the server named in its `initialize` result,
    and results without the 2026-07-28 `_meta` field."""
    listed = plain.list_tools()
    assert SERVER_INFO not in (listed.meta or {}), listed.meta
    result = plain.call("health", {})
    assert SERVER_INFO not in (result.meta or {}), result.meta
