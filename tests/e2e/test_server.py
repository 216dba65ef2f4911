"""End-to-end tests of `code-executor serve` through the official MCP Python SDK, over stdio and HTTP.

One server process per transport serves the whole module (the `client` fixture); tests that break
something (timeouts, crashes, floods) check afterwards that a normal execution still succeeds.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime, timezone

import anyio

import harness
import store_server
from harness import OUR_TOOLS, McpClient, assert_alive, ok, run_ts, store, assert_refusals, assert_workflow_common

TIME_TOOL = "mcp__time__get_current_time"
GIT_LOG = "mcp__git__git_log"
STORE_TOOL_COUNT = len(anyio.run(store_server.server.list_tools))


def js(value) -> str:
    """A Python value as a JavaScript literal."""
    return json.dumps(value)


def schema_allows(schema: dict, json_type: str) -> bool:
    """Whether a JSON schema admits the type, however an optional field is spelled."""
    t = schema.get("type")
    if t == json_type or (isinstance(t, list) and json_type in t):
        return True
    return any(schema_allows(s, json_type) for s in schema.get("anyOf", []) + schema.get("oneOf", []))


# --------------------------------------------------------------------------------------------
# tools/list
# --------------------------------------------------------------------------------------------


def test_tools_list_is_small_and_typed(client: McpClient) -> None:
    tools = client.list_tools().tools
    names = {t.name for t in tools}
    assert names == OUR_TOOLS, f"missing: {OUR_TOOLS - names}, unexpected: {names - OUR_TOOLS}"
    assert len(tools) == 6, [t.name for t in tools]
    for t in tools:
        assert t.description, t.name
        assert isinstance(t.output_schema, dict) and t.output_schema.get("type") == "object", (
            f"{t.name} has no object outputSchema: {t.output_schema}"
        )
        assert t.input_schema.get("type") == "object", t.name
    for name in ("executeTypescript", "executePython"):
        ex = next(t for t in tools if t.name == name)
        props = ex.input_schema["properties"]
        assert {"code", "allowedTools", "timeoutMs"} <= set(props), (name, props)
        assert "code" in ex.input_schema.get("required", []), name
        assert schema_allows(props["allowedTools"], "array"), (name, props["allowedTools"])
        assert schema_allows(props["timeoutMs"], "integer"), (name, props["timeoutMs"])
        out_props = ex.output_schema["properties"]
        for key in ("success", "output", "result", "executionTimeMs"):
            assert key in out_props, f"{name} outputSchema lacks {key}"
    # None of the downstream servers' ~60 tools leak into our own listing.
    assert not any(n.startswith("mcp__") for n in names)
    size = len(client.list_tools().model_dump_json(by_alias=True, exclude_none=True).encode())
    assert size < 3000, f"tools/list answer is {size} bytes"


def test_tools_list_wire_size(ce_binary, e2e_env) -> None:
    """The exact bytes of the tools/list JSON-RPC answer on the wire (stdio)."""
    e2e = e2e_env
    raw = harness.raw_stdio_tools_list([str(ce_binary), "serve"], env=e2e.env(), cwd=e2e.project)
    names = {t["name"] for t in raw.tools}
    assert names == OUR_TOOLS, names
    for t in raw.tools:
        assert isinstance(t.get("outputSchema"), dict), f"{t['name']} has no outputSchema on the wire"
    assert raw.size < 3000, f"tools/list answer is {raw.size} bytes: {raw.pages[0][:3000]!r}"
    assert raw.junk == [], f"non-JSON-RPC lines on the MCP stdout: {raw.junk[:5]!r}"


# --------------------------------------------------------------------------------------------
# searchTools / getToolSchema
# --------------------------------------------------------------------------------------------


def search(client: McpClient, query: str, **kw) -> list[dict]:
    sc = client.structured("searchTools", {"query": query, **kw})
    matches = sc["matches"]
    for m in matches:
        assert m["name"] == f"mcp__{m['server']}__{m['tool']}", m
        assert isinstance(m["description"], str)
    return matches


def test_search_finds_time_tool(client: McpClient) -> None:
    names = [m["name"] for m in search(client, "current time timezone")]
    assert TIME_TOOL in names[:3], names


def test_search_finds_store_tools(client: McpClient) -> None:
    names = [m["name"] for m in search(client, "inventory stock on hand per warehouse")]
    assert store("get-Inventory") in names[:5], names
    names = [m["name"] for m in search(client, "support tickets")]
    assert store("list_tickets") in names[:5], names
    names = [m["name"] for m in search(client, "commit logs history")]
    assert GIT_LOG in names[:5], names


def test_search_server_filter(client: McpClient) -> None:
    matches = search(client, "get", server="Test-Store")
    assert matches
    assert {m["server"] for m in matches} == {"Test-Store"}
    # The time tool is not in Test-Store, whatever the query.
    names = [m["name"] for m in search(client, "current time timezone", server="Test-Store")]
    assert TIME_TOOL not in names
    time_only = search(client, "time", server="time")
    assert time_only and {m["server"] for m in time_only} == {"time"}


def test_search_limit(client: McpClient) -> None:
    assert len(search(client, "order", server="Test-Store", limit=2)) == 2
    assert len(search(client, "customer", limit=1)) == 1
    default = search(client, "get list order product customer ticket")
    assert len(default) == 10  # the default limit, with far more than 10 candidates


def test_get_tool_schema_time(client: McpClient) -> None:
    sc = client.structured("getToolSchema", {"name": TIME_TOOL})
    assert sc["name"] == TIME_TOOL
    assert sc["server"] == "time" and sc["tool"] == "get_current_time"
    assert sc["description"]
    assert "timezone" in sc["inputSchema"]["properties"]
    assert "timezone" in sc["inputSchema"].get("required", [])
    assert isinstance(sc["outputSchema"], dict)  # the time server publishes one
    assert "timezone" in sc["signature"] and "get_current_time" in sc["signature"], sc["signature"]


def test_get_tool_schema_odd_names(client: McpClient) -> None:
    sc = client.structured("getToolSchema", {"name": store("get-Inventory")})
    assert sc["server"] == "Test-Store" and sc["tool"] == "get-Inventory"
    assert {"warehouse", "sku"} <= set(sc["inputSchema"]["properties"])
    assert sc["outputSchema"] is None
    assert "warehouse" in sc["signature"]
    sc = client.structured("getToolSchema", {"name": store("get_stock_summary")})
    assert "total_units" in json.dumps(sc["outputSchema"])


def test_get_tool_schema_unknown(client: McpClient) -> None:
    r = client.call("getToolSchema", {"name": store("no_such_tool")})
    assert r.is_error, harness.dump(r)
    assert "no_such_tool" in r.content[0].text


# --------------------------------------------------------------------------------------------
# listServers / health
# --------------------------------------------------------------------------------------------


def servers_by_name(client: McpClient) -> dict[str, dict]:
    sc = client.structured("listServers", {})
    return {s["name"]: s for s in sc["servers"]}


def test_list_servers_shows_all(client: McpClient) -> None:
    # Use the good servers once, so their tool counts are known.
    ok(client, f"await callMCPTool({js(TIME_TOOL)}, {{timezone: 'UTC'}}); "
       f"await callMCPTool({js(store('echo'))}, {{value: 1}}); "
       f"await callMCPTool({js(GIT_LOG)}, {{repo_path: {js(str(client.e2e.git_repo))}, max_count: 1}});",
       allowed=[TIME_TOOL, store("echo"), GIT_LOG])
    servers = servers_by_name(client)
    assert set(servers) == {"time", "git", "Test-Store", "broken"}, servers
    for name in ("time", "git", "Test-Store"):
        s = servers[name]
        assert s["transport"] == "stdio"
        assert s["state"] == "connected", s
        assert s["error"] is None, s
    assert servers["time"]["tools"] == 2
    assert servers["Test-Store"]["tools"] == STORE_TOOL_COUNT
    assert servers["git"]["tools"] >= 10
    assert servers["broken"]["transport"] == "stdio"
    assert servers["broken"]["state"] in ("idle", "failed"), servers["broken"]


def test_health(client: McpClient) -> None:
    sc = client.structured("health", {})
    assert sc["status"] in ("ok", "degraded")
    assert isinstance(sc["version"], str) and sc["version"]
    assert isinstance(sc["runtime"]["deno"], str) and sc["runtime"]["deno"], sc["runtime"]
    assert isinstance(sc["servers"], dict) and isinstance(sc["executions"], dict)


# --------------------------------------------------------------------------------------------
# executeTypescript: basics
# --------------------------------------------------------------------------------------------


def test_console_output_and_return(client: McpClient) -> None:
    ex = ok(client, 'console.log("hello", 42); console.error("warn-line"); return {a: 1, b: [1, 2], s: "x"};')
    assert "hello 42" in ex.output
    assert "warn-line" in ex.output
    assert ex.result == {"a": 1, "b": [1, 2], "s": "x"}
    assert isinstance(ex.sc["executionTimeMs"], (int, float)) and ex.sc["executionTimeMs"] >= 0
    assert ex.tool_calls == [] and ex.sc["toolCallSummary"] == []
    assert "hello 42" in ex.text  # the readable text block shows the output too


def test_last_expression_and_typescript(client: McpClient) -> None:
    ex = ok(client, "const x: number = 20;\ninterface P { v: number }\nconst p: P = { v: x + 22 };\np.v")
    assert ex.result == 42, ex.describe()
    ex = ok(client, 'await new Promise((r) => setTimeout(r, 50));\nreturn "waited";')
    assert ex.result == "waited"
    ex = ok(client, 'console.log("no value");')
    assert ex.result is None, ex.describe()


def test_plain_javascript_and_typescript_mean_the_same(client: McpClient) -> None:
    """Plain JavaScript runs as a function, other code through the TypeScript module loader: the
    two must agree on meaning, strictness and error locations."""
    # JavaScript would read `f<number>(21)` as two comparisons (and fail on `number`).
    ex = ok(client, "const f = (x) => x * 2;\nreturn f<number>(21);")
    assert ex.result == 42, ex.describe()
    for annotation in ("", ": number"):
        # User code sees globals only, never the runner's own private bindings.
        ex = ok(client, f"const a{annotation} = 1;\n"
                        "return [typeof exitPrivate, typeof hostCall, typeof D, typeof processPrivate, typeof pendingCalls];")
        assert ex.result == ["undefined"] * 5, ex.describe()
        # Top-level `this` is undefined and the code is strict (no implicit globals) either way.
        ex = ok(client, f"const a{annotation} = 1;\nreturn [typeof this, a];")
        assert ex.result == ["undefined", 1], ex.describe()
        ex = run_ts(client, f"const a{annotation} = 1;\nundeclared = a;")
        assert not ex.success and "ReferenceError" in ex.error, ex.describe()
        # A runtime error points at the user's own line and column, with no runner frames.
        ex = run_ts(client, f"const a{annotation} = 1;\nconsole.log(a);\n  null.x;")
        assert not ex.success and "TypeError" in ex.error, ex.describe()
        assert "user.ts:3:8" in ex.error, ex.describe()
        assert "data:" not in ex.error and "runner" not in ex.error and "eval" not in ex.error, ex.describe()
        # The same for an error thrown later, from a timer, and for `console.trace`.
        ex = run_ts(client, f"const a{annotation} = 1;\nsetTimeout(() => {{ throw new Error('late'); }}, 0);\n"
                            "await new Promise((r) => setTimeout(r, 20));")
        assert not ex.success and "late" in ex.error and "user.ts:2:" in ex.error, ex.describe()
        assert "eval" not in ex.error, ex.describe()
        ex = ok(client, f"const a{annotation} = 1;\n\nconsole.trace('here');")
        assert "user.ts:3:9" in ex.output, ex.describe()
        # HTML-like comments (legacy script syntax) are read as the module loader reads them.
        ex = ok(client, f"let a{annotation} = 1;\n<!-- a comment\nreturn a;")
        assert ex.result == 1, ex.describe()
    assert_alive(client)


def test_cross_server_tools_and_filtering(client: McpClient) -> None:
    repo = str(client.e2e.git_repo)
    code = f"""
const now = await callMCPTool({js(TIME_TOOL)}, {{ timezone: "UTC" }});
const gold = new Set((await callMCPTool({js(store("list_customers"))}, {{ tier: "gold" }})).map((c) => c.id));
const orders = await callMCPTool({js(store("list_orders"))}, {{ status: "delivered" }});
const big = orders.filter((o) => gold.has(o.customer_id) && o.total > 300).map((o) => o.id).sort();
const log: string = await callMCPTool({js(GIT_LOG)}, {{ repo_path: {js(repo)}, max_count: 20 }});
const fixes = log.split("\\n").filter((l) => l.startsWith("Message: Fix")).map((l) => l.slice(9).trim());
console.log(`checked ${{orders.length}} delivered orders`);
return {{ now, big, fixes }};
"""
    allowed = [TIME_TOOL, store("list_customers"), store("list_orders"), GIT_LOG]
    ex = ok(client, code, allowed=allowed)
    gold = {c["id"] for c in store_server.CUSTOMERS.values() if c["tier"] == "gold"}
    delivered = [o for o in store_server.ORDERS.values() if o["status"] == "delivered"]
    expected_big = sorted(o["id"] for o in delivered if o["customer_id"] in gold and o["total"] > 300)
    assert expected_big  # the fixture data makes this non-trivial
    assert ex.result["big"] == expected_big, ex.describe()
    assert ex.result["fixes"] == ["Fix crash when warehouse is empty", "Fix stock rounding in reports"]
    assert_workflow_common(ex, allowed, delivered)


def test_both_call_forms_and_odd_names(client: McpClient) -> None:
    code = """
const a = await callMCPTool("Test-Store", "get-Inventory", { warehouse: "WH-WEST" });
const b = await callMCPTool("mcp__Test-Store__get-Inventory", { warehouse: "WH-WEST" });
const q = await callMCPTool("Test-Store", "GetShippingQuote", { product_id: "P003", quantity: 2, country: "DE" });
const t = await callMCPTool("mcp__Test-Store__track-shipment", { order_id: "O1002" });
return { a, b, q, t };
"""
    allowed = [store("get-Inventory"), store("GetShippingQuote"), store("track-shipment")]
    ex = ok(client, code, allowed=allowed)
    west = [p for p in store_server.PRODUCTS.values() if p["warehouse"] == "WH-WEST"]
    assert ex.result["a"] == ex.result["b"]
    assert ex.result["a"]["count"] == len(west)
    assert {i["product_id"] for i in ex.result["a"]["items"]} == {p["id"] for p in west}
    assert ex.result["q"] == {"product_id": "P003", "country": "DE", "cost": 19.0}
    assert ex.result["t"]["tracking"] == "1Z1002999"
    assert ex.summary[store("get-Inventory")]["calls"] == 2
    assert ex.summary[store("GetShippingQuote")]["calls"] == 1
    assert ex.summary[store("track-shipment")]["calls"] == 1


def test_result_shapes(client: McpClient) -> None:
    code = """
const summary = await callMCPTool("mcp__Test-Store__get_stock_summary", {});
const card = await callMCPTool("mcp__Test-Store__get_product_card", { product_id: "P003" });
const thread = await callMCPTool("mcp__Test-Store__get_ticket_thread", { ticket_id: "T-002" });
const invoice = await callMCPTool("mcp__Test-Store__get_order_invoice", { order_id: "O1001" });
let failure = null;
try {
  await callMCPTool("mcp__Test-Store__fail_with", { message: "card declined" });
} catch (e) {
  failure = { isError: e instanceof Error, message: String(e.message) };
}
// Blocks renamed so that the reply shows what the code saw (an image block returned as such
// would leave the value and reach the client as an image: test_replies.py).
const seen = (blocks) => blocks.map(({ type, ...rest }) => ({ kind: type, ...rest }));
return { summary, card: seen(card), thread, invoice, failure };
"""
    allowed = [store(t) for t in ("get_stock_summary", "get_product_card", "get_ticket_thread",
                                  "get_order_invoice", "fail_with")]
    ex = ok(client, code, allowed=allowed)
    r = ex.result
    # structuredContent wins.
    assert r["summary"] == store_server.stock_summary().model_dump()
    # A non-text block: the whole content array, nothing lost.
    card = r["card"]
    assert isinstance(card, list) and [b["kind"] for b in card] == ["text", "text", "image"], card
    assert card[0]["text"] == "27in 4K Monitor (P003)"
    assert card[1]["text"] == "Price: 379.00 USD, stock: 45"
    assert card[2]["mimeType"] == "image/png"
    assert base64.b64decode(card[2]["data"]) == store_server.PNG_1X1
    # Several text blocks: an array of (parsed JSON | text).
    assert r["thread"] == [
        {"id": "T-002", "subject": "Docking station not detected", "status": "open"},
        "Customer C005 wrote: Docking station not detected",
    ]
    # One non-JSON text block: the text.
    assert isinstance(r["invoice"], str) and r["invoice"].startswith("INVOICE O1001 for ")
    # isError rejects with an Error carrying the text.
    assert r["failure"] == {"isError": True, "message": r["failure"]["message"]}
    assert "card declined" in r["failure"]["message"]
    assert ex.summary[store("fail_with")]["errors"] == 1


def test_call_tool_raw(client: McpClient) -> None:
    code = """
const card = await callMCPToolRaw("mcp__Test-Store__get_product_card", { product_id: "P001" });
const summary = await callMCPToolRaw("Test-Store", "get_stock_summary", {});
const failed = await callMCPToolRaw("mcp__Test-Store__fail_with", { message: "raw failure" });
// Blocks renamed, as in test_result_shapes.
return { card: { ...card, content: card.content.map(({ type, ...rest }) => ({ kind: type, ...rest })) }, summary, failed };
"""
    allowed = [store("get_product_card"), store("get_stock_summary"), store("fail_with")]
    ex = ok(client, code, allowed=allowed)
    r = ex.result
    assert [b["kind"] for b in r["card"]["content"]] == ["text", "text", "image"]
    assert not r["card"].get("isError")
    assert r["summary"]["structuredContent"] == store_server.stock_summary().model_dump()
    assert r["summary"]["content"][0]["type"] == "text"
    assert r["failed"]["isError"] is True
    assert r["failed"]["content"] == [{"type": "text", "text": "raw failure"}]


def test_twenty_concurrent_calls(client: McpClient) -> None:
    code = """
const results = await Promise.all(
  Array.from({ length: 20 }, (_, i) => callMCPTool("mcp__Test-Store__echo", { value: { i, sq: i * i } })),
);
return results.map((r) => r.echo);
"""
    ex = ok(client, code, allowed=[store("echo")])
    assert ex.result == [{"i": i, "sq": i * i} for i in range(20)]
    assert ex.summary[store("echo")]["calls"] == 20
    assert ex.summary[store("echo")]["errors"] == 0
    assert ex.tool_calls == [store("echo")] * 20, ex.tool_calls


def test_concurrent_calls_run_in_parallel(client: McpClient) -> None:
    """20 calls of a 0.3 s tool under Promise.all must not be serialized (which would take 6 s)."""
    code = """
const t0 = Date.now();
const r = await Promise.all(Array.from({ length: 20 }, () => callMCPTool("mcp__Test-Store__slow", { seconds: 0.3 })));
return { n: r.length, ms: Date.now() - t0 };
"""
    ex = ok(client, code, allowed=[store("slow")])
    assert ex.result["n"] == 20
    assert ex.result["ms"] < 4000, ex.describe()


def test_tool_call_accounting(client: McpClient) -> None:
    code = """
for (let i = 0; i < 3; i++) await callMCPTool("mcp__Test-Store__echo", { value: i });
await callMCPTool("Test-Store", "get_pid", {});
try { await callMCPTool("mcp__Test-Store__fail_with", { message: "x" }); } catch (_) {}
return "ok";
"""
    allowed = [store("echo"), store("get_pid"), store("fail_with")]
    ex = ok(client, code, allowed=allowed)
    expected = {store("echo"): 3, store("get_pid"): 1, store("fail_with"): 1}
    assert {t: row["calls"] for t, row in ex.summary.items()} == expected, ex.describe()
    assert {t: row["errors"] for t, row in ex.summary.items()} == {
        store("echo"): 0, store("get_pid"): 0, store("fail_with"): 1}
    for row in ex.summary.values():
        assert isinstance(row["totalMs"], (int, float)) and row["totalMs"] >= 0
    # toolCallsMade: one entry per call made, in order, canonical mcp__server__tool names.
    assert ex.tool_calls == [store("echo")] * 3 + [store("get_pid"), store("fail_with")], ex.tool_calls


def test_sandbox_discovery_api(client: McpClient) -> None:
    code = """
const s = await searchTools("inventory stock", { server: "Test-Store", limit: 3 });
const g = await getToolSchema("mcp__time__get_current_time");
const l = await listServers();
return { s, g, l };
"""
    # Look-ups see (and start) only what the code may call.
    ex = ok(client, code, allowed=["mcp__Test-Store__*", "mcp__time__*"])
    matches = ex.result["s"]["matches"]
    assert 1 <= len(matches) <= 3 and {m["server"] for m in matches} == {"Test-Store"}, ex.describe()
    assert "timezone" in ex.result["g"]["signature"]
    # The helpers answer as the MCP tools do: `{servers: [...]}`.
    servers = ex.result["l"]["servers"]
    assert {s["name"] for s in servers} == {"time", "git", "Test-Store", "broken"}


def test_concurrent_executions_are_isolated(client: McpClient) -> None:
    calls = [
        ("executeTypescript", {
            "code": f"""
globalThis.__who = {i};
const r = await callMCPTool("mcp__Test-Store__echo", {{ value: {i} }});
await new Promise((res) => setTimeout(res, 300));
return {{ who: globalThis.__who, echo: r.echo }};
""",
            "allowedTools": [store("echo")],
        })
        for i in range(4)
    ]
    results = client.call_many(calls)
    for i, r in enumerate(results):
        assert not r.is_error, harness.dump(r)
        assert r.structured_content["result"] == {"who": i, "echo": i}


# --------------------------------------------------------------------------------------------
# Allowlist
# --------------------------------------------------------------------------------------------


def store_call_counts(client: McpClient) -> dict:
    ex = ok(client, 'return await callMCPTool("mcp__Test-Store__count_calls", {});', allowed=[store("count_calls")])
    return ex.result


def test_allowlist_refuses_and_store_never_sees_it(client: McpClient) -> None:
    code = """
const out = {};
try { await callMCPTool("mcp__Test-Store__delete_customer", { customer_id: "C001" }); out.a = "called"; }
catch (e) { out.a = String(e.message); }
try { await callMCPTool("Test-Store", "delete_customer", { customer_id: "C002" }); out.b = "called"; }
catch (e) { out.b = String(e.message); }
try { await callMCPToolRaw("mcp__Test-Store__delete_customer", { customer_id: "C003" }); out.c = "called"; }
catch (e) { out.c = String(e.message); }
out.echo = (await callMCPTool("mcp__Test-Store__echo", { value: "allowed" })).echo;
return out;
"""
    ex = ok(client, code, allowed=[store("echo")])
    assert_refusals(ex, "delete_customer")
    assert store("delete_customer") in ex.result["a"], ex.result["a"]
    assert ex.result["echo"] == "allowed"
    counts = store_call_counts(client)
    assert "delete_customer" not in counts["byTool"], counts
    # And the customers are all still there.
    ex = ok(client, 'return (await callMCPTool("mcp__Test-Store__list_customers", {})).map((c) => c.id);',
            allowed=[store("list_customers")])
    assert {"C001", "C002", "C003"} <= set(ex.result)


def test_no_allowlist_means_no_tool_calls(client: McpClient) -> None:
    before = store_call_counts(client)["byTool"].get("get_pid", 0)
    ex = run_ts(client, 'return await callMCPTool("mcp__Test-Store__get_pid", {});')
    assert not ex.success, ex.describe()
    assert "not in allowedTools" in ex.error and "get_pid" in ex.error, ex.error
    ex = run_ts(client, 'return await callMCPTool("mcp__time__get_current_time", {timezone: "UTC"});', allowed=[])
    assert not ex.success and "not in allowedTools" in ex.error, ex.describe()
    assert store_call_counts(client)["byTool"].get("get_pid", 0) == before


# --------------------------------------------------------------------------------------------
# Failures that must not take the server down
# --------------------------------------------------------------------------------------------


def test_timeout_busy_loop(client: McpClient) -> None:
    ex = run_ts(client, "while (true) {}", timeout_ms=1000)
    assert not ex.success
    assert "timed out" in ex.error.lower(), ex.describe()
    assert ex.elapsed < 6, f"took {ex.elapsed:.1f}s to time out a 1 s budget"
    assert_alive(client)


def test_timeout_pending_promise_and_slow_tool(client: McpClient) -> None:
    ex = run_ts(client, "await new Promise(() => {});", timeout_ms=1000)
    assert not ex.success and "timed out" in ex.error.lower(), ex.describe()
    assert ex.elapsed < 6
    ex = run_ts(client, 'await callMCPTool("mcp__Test-Store__slow", { seconds: 30 });',
                allowed=[store("slow")], timeout_ms=1500)
    assert not ex.success and "timed out" in ex.error.lower(), ex.describe()
    assert ex.elapsed < 8
    assert_alive(client)


def test_exception_has_message_and_stack(client: McpClient) -> None:
    ex = run_ts(client, 'function inner() { throw new Error("boom"); }\ninner();')
    assert not ex.success
    assert "boom" in ex.error
    assert re.search(r"\n\s*at\s", ex.error), f"no stack trace in error: {ex.error!r}"
    assert_alive(client)
    ex = run_ts(client, "return (;")
    assert not ex.success and ex.error, ex.describe()
    assert_alive(client)


REPLY_BUDGET = 40_000
CUT_MARKER_RE = re.compile(r"^\[\.\.\. \d+ of \d+ bytes of output cut here to fit the reply budget \(40000 bytes\)[^\]]*\]$", re.M)


def test_output_flood_is_capped(client: McpClient) -> None:
    code = 'const line = "x".repeat(1023);\nfor (let i = 0; i < 5 * 1024; i++) console.log(line);\nreturn "done";'
    ex = run_ts(client, code, call_timeout=90)
    assert ex.success, ex.describe()
    assert len(ex.output.encode()) <= REPLY_BUDGET // 2, f"output is {len(ex.output)} chars"
    assert CUT_MARKER_RE.search(ex.output), ex.output[:300]
    assert len(ex.output) > REPLY_BUDGET // 4  # capped, not dropped
    assert ex.result == "done"
    assert_alive(client)


def test_single_huge_line_is_capped(client: McpClient) -> None:
    ex = run_ts(client, 'console.log("y".repeat(5 * 1024 * 1024)); return 1;', call_timeout=90)
    assert len(ex.output.encode()) <= REPLY_BUDGET // 2, f"output is {len(ex.output)} chars"
    assert CUT_MARKER_RE.search(ex.output), ex.output[:300]
    assert_alive(client)


def test_downstream_crash_then_reconnect(client: McpClient) -> None:
    code = """
const before = await callMCPTool("mcp__Test-Store__get_pid", {});
let msg = null;
try { await callMCPTool("mcp__Test-Store__crash", {}); } catch (e) { msg = String(e.message); }
return { pid: before.pid, msg };
"""
    ex = ok(client, code, allowed=[store("get_pid"), store("crash")], call_timeout=60)
    assert ex.result["msg"] is not None, "crash() did not fail"
    assert "Test-Store" in ex.result["msg"], ex.result["msg"]
    assert ex.elapsed < 30
    old_pid = ex.result["pid"]
    # A later call reaches a fresh Test-Store process.
    ex = ok(client, 'return await callMCPTool("mcp__Test-Store__get_pid", {});', allowed=[store("get_pid")])
    assert isinstance(ex.result["pid"], int)
    assert ex.result["pid"] != old_pid, "the crashed Test-Store process cannot have answered"
    servers = servers_by_name(client)
    assert servers["Test-Store"]["state"] == "connected", servers["Test-Store"]


def test_broken_server_is_reported_and_others_work(client: McpClient) -> None:
    code = """
let msg = null;
try { await callMCPTool("mcp__broken__anything", {}); } catch (e) { msg = String(e.message); }
const now = await callMCPTool("mcp__time__get_current_time", { timezone: "UTC" });
return { msg, tz: now.timezone };
"""
    ex = ok(client, code, allowed=["mcp__broken__anything", TIME_TOOL])
    assert ex.result["msg"] is not None
    assert "broken" in ex.result["msg"], ex.result["msg"]
    assert ex.result["tz"] == "UTC"
    assert ex.elapsed < 30
    servers = servers_by_name(client)
    broken = servers["broken"]
    assert broken["state"] == "failed", broken
    assert broken["tools"] is None
    # The row is already keyed by the server's name: its error must say what failed, naming the
    # server or the command that cannot start.
    assert broken["error"], broken
    assert "broken" in broken["error"] or harness.MISSING_BINARY in broken["error"], broken
    for name in ("time", "Test-Store", "git"):
        assert servers[name]["state"] != "failed", servers[name]
    health = client.structured("health", {})
    assert health["status"] == "degraded", health
