"""What a model meets when it writes code the way models do: a returned Map or Set, a forgotten
`await`, every optional field sent as null (strict-mode frameworks), an empty server name, and a
"did you mean" that names the tool it is about. Each ends in an answer the model can read, not in
silence.
"""

from __future__ import annotations

from harness import McpClient, ok, ok_py, run_ts

NO_TOOLS = {"code": "1 + 1"}


def test_a_returned_map_or_set_reads_as_its_contents(stdio_client: McpClient) -> None:
    ex = ok(stdio_client, 'new Map([["a", 1], ["b", new Set([1, 2, 2])]])')
    assert ex.result == {"a": 1, "b": [1, 2]}, ex.describe()
    ex = ok(stdio_client, "({ seen: new Set(['x', 'y']), empty: {}, byId: new Map([[1, 'one']]) })")
    assert ex.result == {"seen": ["x", "y"], "empty": {}, "byId": {"1": "one"}}, ex.describe()
    # Keys a JSON object cannot hold keep the entries.
    ex = ok(stdio_client, "new Map([[{ id: 1 }, 'obj'], [true, 'yes']])")
    assert ex.result == [[{"id": 1}, "obj"], [True, "yes"]], ex.describe()
    # An object dressed as a Map is not taken for one.
    ex = ok(stdio_client, "({ [Symbol.toStringTag]: 'Map', size: 3 })")
    assert ex.result == {"size": 3}, ex.describe()


def test_a_call_left_without_await_is_said(stdio_client: McpClient) -> None:
    ex = ok(
        stdio_client,
        "callMCPTool('mcp__time__get_current_time', { timezone: 'UTC' });\n'done'",
        allowed=["mcp__time__*"],
    )
    assert ex.result == "done", ex.describe()
    assert "note: 1 call was still waiting for an answer when the code ended" in ex.output, ex.describe()
    assert "add `await`" in ex.output, ex.describe()
    ex = ok(stdio_client, "await callMCPTool('mcp__time__get_current_time', { timezone: 'UTC' });\n'done'",
            allowed=["mcp__time__*"])
    assert "note:" not in ex.output, ex.describe()


def test_null_means_not_given_in_every_optional_field(stdio_client: McpClient) -> None:
    ex = ok(stdio_client, "6 * 7", allowed=None)
    raw = stdio_client.call("executeTypescript", {"code": "6 * 7", "allowedTools": None, "timeoutMs": None})
    assert not raw.is_error and raw.structured_content["result"] == 42, raw
    raw = stdio_client.call("executePython", {"code": "6 * 7", "allowedTools": None, "timeoutMs": None})
    assert not raw.is_error and raw.structured_content["result"] == 42, raw
    # A null allowedTools allows nothing, like an absent one.
    raw = stdio_client.call(
        "executeTypescript",
        {"code": "await callMCPTool('mcp__time__get_current_time', {timezone: 'UTC'})", "allowedTools": None},
    )
    assert raw.is_error and "not in allowedTools" in raw.content[0].text, raw
    found = stdio_client.structured("searchTools", {"query": "current time", "server": None, "limit": None, "detail": None})
    assert any(m["name"] == "mcp__time__get_current_time" for m in found["matches"]), found
    # An empty server name (what a strict model invents) names none.
    found = stdio_client.structured("searchTools", {"query": "current time", "server": ""})
    assert any(m["name"] == "mcp__time__get_current_time" for m in found["matches"]), found
    assert ex.result == 42


def test_the_schemas_declare_what_the_server_enforces(stdio_client: McpClient) -> None:
    tools = {t.name: t for t in stdio_client.list_tools().tools}
    execute = tools["executeTypescript"].input_schema
    assert execute["additionalProperties"] is False
    assert execute["properties"]["timeoutMs"]["minimum"] == 1
    assert "null" in execute["properties"]["allowedTools"]["type"]
    # The tools that take nothing ignore what they are given, as their open schema says.
    for name in ("listServers", "health"):
        assert tools[name].input_schema == {"type": "object"}, name
        raw = stdio_client.call(name, {"extra": 1})
        assert not raw.is_error, raw
    # Those with fields refuse others, as their schema says.
    for name in ("executeTypescript", "executePython", "searchTools", "getToolSchema"):
        assert tools[name].input_schema["additionalProperties"] is False, name
    raw = stdio_client.call("executeTypescript", {"code": "1", "allowedtools": []})
    assert raw.is_error and "unknown field `allowedtools`" in raw.content[0].text, raw
    for name in ("executeTypescript", "executePython"):
        description = tools[name].description
        assert description.index("searchTools") < description.index("allowedTools"), description


def test_a_suggestion_names_the_tool_left_out_of_allowed_tools(stdio_client: McpClient) -> None:
    ex = run_ts(
        stdio_client,
        "await callMCPTool('mcp__time__get_curent_time', { timezone: 'UTC' })",
        allowed=["mcp__time__get_curent_time", "mcp__time__convert_time"],
    )
    assert not ex.success
    assert "did you mean `mcp__time__get_current_time`" in ex.error, ex.describe()
    assert "`mcp__time__get_current_time` is not in allowedTools" in ex.error, ex.describe()
    assert "It is not" not in ex.error, ex.describe()


def test_a_failure_reads_as_text_and_keeps_its_report_for_programs(stdio_client: McpClient) -> None:
    raw = stdio_client.call("executeTypescript", {"code": "console.log('before');\nthrow new Error('boom')"})
    assert raw.is_error and raw.structured_content is None, raw
    text = raw.content[0].text
    assert text.startswith("before\nError: Error: boom") or text.startswith("before\nError: boom"), text
    report = raw.meta["code-executor/report"]
    assert report["success"] is False and "boom" in report["error"] and report["output"] == "before\n", report
    # A success carries no empty fields, and its accounting is in `_meta`.
    raw = stdio_client.call("executeTypescript", NO_TOOLS)
    assert set(raw.structured_content) == {"success", "output", "result", "executionTimeMs"}, raw.structured_content
    assert "code-executor/report" not in (raw.meta or {}), raw.meta
    raw = stdio_client.call(
        "executeTypescript",
        {"code": "(await callMCPTool('mcp__time__get_current_time', {timezone: 'UTC'})).timezone", "allowedTools": ["mcp__time__*"]},
    )
    assert raw.structured_content == {"success": True, "output": "", "result": "UTC",
                                      "executionTimeMs": raw.structured_content["executionTimeMs"]}, raw
    accounts = raw.meta["code-executor/report"]
    assert accounts["toolCallsMade"] == ["mcp__time__get_current_time"], accounts
    assert accounts["toolCallSummary"][0]["calls"] == 1, accounts
    assert ok_py(stdio_client, "1").result == 1
