"""Messages an LLM can act on, as a real client receives them from the real server with real
downstream servers (mcp-server-time, the Test-Store server, a `broken` server that cannot start):

- a mistyped tool or server name suggests the right one ("did you mean"), in `callMCPTool` /
  `call_mcp_tool`, in `getToolSchema` (the MCP tool and both sandboxes' helpers) and in a
  `searchTools` server filter; a suggestion outside the execution's allowedTools says how to
  allow it, and a tool the server-wide policy hides is never suggested;
- an error is stated once: no doubled `Error: Error:` in a refusal as the reply says it;
- Deno's advice to "run again with the --allow-net flag" never reaches the client: what the
  sandbox offers instead does (TypeScript and Python);
- a server that could not be searched is mentioned in a session's first search and when a
  search concerns it, not in every answer (stdio and HTTP);
- the sandbox's `searchTools` / `getToolSchema` / `listServers` (and Python's) answer exactly
  what the MCP tools' structuredContent holds; the MCP tools' bad arguments say what they take.
"""

from __future__ import annotations

import json

import pytest

from harness import McpClient, ok, ok_py, run_py, run_ts

TIME_TOOL = "mcp__time__get_current_time"


@pytest.fixture(scope="module")
def c(stdio_client: McpClient) -> McpClient:
    # Every server connected first, so that what is suggested does not depend on test order.
    stdio_client.structured("searchTools", {"query": "time"})
    return stdio_client


# --------------------------------------------------------------------------------------------
# Did you mean
# --------------------------------------------------------------------------------------------


def test_a_mistyped_tool_name_in_code_suggests_the_right_one(c: McpClient) -> None:
    code = """
const out = {};
for (const name of ["get_time", "mcp__time__get_curent_time", "get_current_time"]) {
  try { await callMCPTool(name, { timezone: "UTC" }); out[name] = "called"; } catch (e) { out[name] = e.message; }
}
try { await callMCPTool("tme", "get_current_time", { timezone: "UTC" }); } catch (e) { out.split = e.message; }
try { await getToolSchema("get_time"); } catch (e) { out.schema = e.message; }
return out;
"""
    out = ok(c, code, allowed=["mcp__time__*"]).result
    assert out["get_time"] == (
        "no MCP server named `get_time` is configured (configured: Test-Store, broken, git, time); "
        "did you mean `mcp__time__get_current_time` or `mcp__time__convert_time`?"
    ), out
    assert out["mcp__time__get_curent_time"].startswith(
        "MCP server `time` has no tool named `get_curent_time`; did you mean `mcp__time__get_current_time`"
    ), out
    for key in ("get_current_time", "split", "schema"):
        assert f"did you mean `{TIME_TOOL}`" in out[key], (key, out)
    assert "allowedTools" not in json.dumps(out), out


def test_a_suggestion_outside_allowed_tools_says_how_to_allow_it(c: McpClient) -> None:
    ex = run_ts(c, 'await callMCPTool("get_time", { timezone: "UTC" });', allowed=["mcp__git__git_log"])
    assert not ex.success, ex.describe()
    assert (
        f'did you mean `{TIME_TOOL}` or `mcp__time__convert_time`? Not in allowedTools for this execution: '
        f"`{TIME_TOOL}`, `mcp__time__convert_time`; add the one you mean to allowedTools to call it."
    ) in ex.error, ex.describe()
    # A tool the policy shows but allowedTools leaves out: getToolSchema says how to allow it.
    ex = run_ts(c, f'return await getToolSchema("{TIME_TOOL}");', allowed=["mcp__git__git_log"])
    assert ex.error.startswith(
        f'tool `{TIME_TOOL}` is not in allowedTools for this execution: add "{TIME_TOOL}" to allowedTools to call it'
    ), ex.describe()


def test_get_tool_schema_and_search_suggest_names(c: McpClient) -> None:
    r = c.call("getToolSchema", {"name": "get_time"})
    assert r.is_error and r.content[0].text == (
        "no MCP server named `get_time` is configured (configured: Test-Store, broken, git, time); "
        "did you mean `mcp__time__get_current_time` or `mcp__time__convert_time`?"
    ), r.content[0].text
    r = c.call("getToolSchema", {"name": "mcp__time__get_curent_time"})
    assert r.is_error and f"did you mean `{TIME_TOOL}`" in r.content[0].text, r.content[0].text
    r = c.call("searchTools", {"query": "current time", "server": "tme"})
    assert r.is_error and r.content[0].text.endswith("; did you mean `time`?"), r.content[0].text
    r = c.call("searchTools", {"query": "customers", "server": "test-store"})
    assert r.is_error and r.content[0].text.endswith("; did you mean `Test-Store`?"), r.content[0].text


def test_bad_arguments_of_the_catalogue_tools_say_what_they_take(c: McpClient) -> None:
    r = c.call("searchTools", {"qury": "time"})
    assert r.is_error and "it takes {query: string" in r.content[0].text, r.content[0].text
    r = c.call("getToolSchema", {})
    assert r.is_error and "missing field `name`" in r.content[0].text, r.content[0].text
    assert "mcp__<server>__<tool>" in r.content[0].text, r.content[0].text
    r = c.call("searchTools", {"query": "x" * 2000})
    assert r.is_error and "search with a few keywords" in r.content[0].text, r.content[0].text


def test_a_tool_the_policy_hides_is_never_suggested(start_server) -> None:
    s = start_server({"CODE_EXECUTOR_POLICY_DENY": f"[{TIME_TOOL}]"}, servers=("time",))
    s.structured("searchTools", {"query": "time"})
    text = s.call("getToolSchema", {"name": "get_time"}).content[0].text
    assert "did you mean `mcp__time__convert_time`?" in text and TIME_TOOL not in text, text
    # Asked by its own name, the hidden tool answers as one the server does not have.
    text = s.call("getToolSchema", {"name": TIME_TOOL}).content[0].text
    assert text.startswith("MCP server `time` has no tool named `get_current_time`"), text
    assert f"`{TIME_TOOL}`" not in text, text
    code = """
const out = [];
for (const name of ["get_time", "get_current_time"]) {
  try { await callMCPTool(name, {}); } catch (e) { out.push(e.message); }
}
return out;
"""
    out = ok(s, code, allowed=["*"]).result
    assert len(out) == 2 and not any(TIME_TOOL in m for m in out), out


@pytest.mark.pyodide
def test_python_suggests_names_too(c: McpClient) -> None:
    code = """
out = {}
try:
    await call_mcp_tool("get_time", {"timezone": "UTC"})
except ToolCallError as e:
    out["call"] = str(e)
try:
    await get_tool_schema("get_current_time")
except ToolCallError as e:
    out["schema"] = str(e)
out
"""
    out = ok_py(c, code, allowed=["mcp__time__*"]).result
    assert f"did you mean `{TIME_TOOL}`" in out["call"], out
    assert f"did you mean `{TIME_TOOL}`" in out["schema"], out


# --------------------------------------------------------------------------------------------
# One rendering of errors
# --------------------------------------------------------------------------------------------

REFUSED = 'tool `mcp__git__git_log` is not in allowedTools for this execution: add "mcp__git__git_log" to allowedTools to call it'


def test_a_refusal_is_said_once_as_the_client_receives_it(c: McpClient) -> None:
    ex = run_ts(c, 'await callMCPTool("mcp__git__git_log", {});', allowed=["mcp__time__*"])
    assert ex.error == REFUSED + "\n    at user.ts:1:7", ex.describe()
    assert ex.text == "Error: " + ex.error, ex.text
    # A thrown plain Error is not named twice either; other names stay.
    ex = run_ts(c, 'throw new Error("Error: boom");')
    assert ex.error == "boom\n    at user.ts:1:7" and ex.text.count("Error") == 1, ex.text
    ex = run_ts(c, 'null.x;')
    assert ex.error.startswith("TypeError: Cannot read properties of null"), ex.describe()


@pytest.mark.pyodide
def test_a_python_refusal_is_said_once(c: McpClient) -> None:
    ex = run_py(c, 'await call_mcp_tool("mcp__git__git_log", {})', allowed=["mcp__time__*"])
    assert ex.error.startswith("Traceback (most recent call last):"), ex.describe()
    assert ex.error.endswith("\nToolCallError: " + REFUSED), ex.describe()
    assert ex.text == "Error: " + ex.error and ex.text.count(REFUSED) == 1, ex.text


# --------------------------------------------------------------------------------------------
# Deno's permission hints replaced
# --------------------------------------------------------------------------------------------

ATTEMPTS = {
    "fetch": 'await fetch("http://127.0.0.1:8/");',
    "read": 'await Deno.readTextFile("/etc/hostname");',
    "write": 'await Deno.writeTextFile("/tmp/code-executor-e2e", "x");',
    "env": 'Deno.env.get("HOME");',
    "run": 'await new Deno.Command("/bin/true").output();',
    "run_bare": 'await new Deno.Command("ls").output();',
    "ffi": 'Deno.dlopen("libc.so.6", {});',
    "sys": "Deno.hostname();",
    "node_fs": 'const fs = await import("node:fs"); fs.readFileSync("/etc/hostname");',
}

WORDS = {
    "fetch": 'NotCapable: network access to "127.0.0.1:8" is not available in the sandbox; reach other systems through callMCPTool',
    "read": 'NotCapable: file system access (reading "/etc/hostname") is not available in the sandbox; reach files through the tools of an MCP server with callMCPTool',
    "env": 'NotCapable: environment variables ("HOME") are not available in the sandbox; put the values the code needs in the code itself',
    "run": 'NotCapable: running programs ("/bin/true") is not available in the sandbox; reach other systems through callMCPTool',
    "run_bare": 'running programs ("ls") is not available in the sandbox; reach other systems through callMCPTool',
}


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_no_permission_flag_advice_reaches_the_client(c: McpClient, attempt: str) -> None:
    ex = run_ts(c, ATTEMPTS[attempt])
    assert not ex.success, ex.describe()
    everything = ex.everything()
    assert "--allow-" not in everything and "run again" not in everything.lower(), everything
    assert "not available in the sandbox" in ex.error, ex.describe()
    if attempt in WORDS:
        assert ex.error.split("\n")[0] == WORDS[attempt], ex.describe()
    # Caught and printed, the same words.
    printed = ok(c, f"try {{ {ATTEMPTS[attempt]} }} catch (e) {{ console.log(e); console.log(String(e)); }}")
    assert "--allow-" not in printed.everything(), printed.describe()
    assert printed.output.count("not available in the sandbox") == 2, printed.describe()


@pytest.mark.pyodide
def test_python_says_what_the_sandbox_offers(c: McpClient) -> None:
    ex = run_py(c, 'import js\nawait js.fetch("http://127.0.0.1:8/")')
    assert "--allow-" not in ex.everything(), ex.describe()
    assert ex.error.endswith(
        'JsException: NotCapable: network access to "127.0.0.1:8" is not available in the sandbox; '
        "reach other systems through call_mcp_tool"
    ), ex.describe()
    assert ex.error.count("network access") == 1, ex.describe()
    ex = run_py(c, 'import socket\nsocket.create_connection(("127.0.0.1", 9), timeout=2)')
    assert not ex.success and ex.error.endswith(
        "\nnetwork access is not available in the sandbox; reach other systems through call_mcp_tool"
    ), ex.describe()


# --------------------------------------------------------------------------------------------
# Failed servers mentioned once per session
# --------------------------------------------------------------------------------------------

BROKEN = "MCP server `broken` failed to start"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_failed_server_is_mentioned_once_per_session(start_server, transport: str) -> None:
    s = start_server(servers=("time", "broken"), transport=transport)

    def search(args: dict) -> tuple[dict, str]:
        r = s.call("searchTools", args)
        assert not r.is_error, r
        return r.structured_content, r.content[0].text

    sc, text = search({"query": "current time"})
    assert [u["server"] for u in sc["unavailable"]] == ["broken"] and BROKEN in text, (sc, text)
    for _ in range(2):
        sc, text = search({"query": "current time"})
        assert "unavailable" not in sc and "broken" not in text, (sc, text)
        assert sc["matches"][0]["name"] == TIME_TOOL, sc
    # A search that concerns it says it again: its server filter, or its name in the query.
    for args in ({"query": "anything", "server": "broken"}, {"query": "broken tools"}):
        sc, text = search(args)
        assert [u["server"] for u in sc["unavailable"]] == ["broken"] and BROKEN in text, (args, sc, text)
    sc, text = search({"query": "timezone"})
    assert "unavailable" not in sc and "broken" not in text, (sc, text)
    # listServers always says why.
    servers = {row["name"]: row for row in s.structured("listServers")["servers"]}
    assert servers["broken"]["state"] == "failed", servers
    # Code's searches list it every time: code reads them, the LLM's context does not pay.
    code = 'return [await searchTools("time"), await searchTools("time")].map((r) => r.unavailable);'
    out = ok(s, code, allowed=["*"]).result
    assert [[u["server"] for u in x] for x in out] == [["broken"], ["broken"]], out


# --------------------------------------------------------------------------------------------
# The helpers answer exactly as the MCP tools
# --------------------------------------------------------------------------------------------

LOOKUPS_TS = f"""
return {{
  search: await searchTools("current time", {{ detail: "full", limit: 3 }}),
  server: await searchTools("customer", {{ server: "Test-Store", limit: 5 }}),
  schema: await getToolSchema("{TIME_TOOL}"),
  servers: await listServers(),
}};
"""

LOOKUPS_PY = f"""
{{
    "search": await search_tools("current time", detail="full", limit=3),
    "server": await search_tools("customer", server="Test-Store", limit=5),
    "schema": await get_tool_schema("{TIME_TOOL}"),
    "servers": await list_servers(),
}}
"""


def mcp_lookups(s: McpClient) -> dict:
    return {
        "search": s.structured("searchTools", {"query": "current time", "detail": "full", "limit": 3}),
        "server": s.structured("searchTools", {"query": "customer", "server": "Test-Store", "limit": 5}),
        "schema": s.structured("getToolSchema", {"name": TIME_TOOL}),
        "servers": s.structured("listServers"),
    }


@pytest.fixture(scope="module")
def working(tmp_path_factory, ce_binary):
    from conftest import start_client

    s = start_client("stdio", tmp_path_factory.mktemp("messages-shapes"), ("time", "Test-Store"))
    # Connected first: no answer below announces a connection.
    s.structured("searchTools", {"query": "time"})
    yield s
    s.close()


def test_the_typescript_helpers_answer_as_the_mcp_tools(working: McpClient) -> None:
    code = ok(working, LOOKUPS_TS, allowed=["*"]).result
    assert isinstance(code["servers"], dict) and isinstance(code["servers"]["servers"], list), code
    assert code == mcp_lookups(working), (code, mcp_lookups(working))


@pytest.mark.pyodide
def test_the_python_helpers_answer_as_the_mcp_tools(working: McpClient) -> None:
    code = ok_py(working, LOOKUPS_PY, allowed=["*"]).result
    assert code == mcp_lookups(working), (code, mcp_lookups(working))
