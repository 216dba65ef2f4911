"""End-to-end tests of `executePython` (Pyodide in a jailed Deno worker), over stdio.

Contract: `executePython {code, allowedTools?, timeoutMs?}` returns the same shape as
`executeTypescript`. Inside: `await call_mcp_tool('mcp__<server>__<tool>', args)` or
`await call_mcp_tool(server, tool, args)` (`raw=True` for the untouched result),
`await search_tools(query, server=None, limit=None)`, `await get_tool_schema(name)`,
`await list_servers()`; top-level await; `print` output and the value of the last expression come
back; a refused or failed tool call raises a Python exception.

One server for the module. Every Python execution uses a fresh worker with Pyodide loaded (seconds
of CPU each), so each test does what it checks in as few executions as it can; checks of the
downstream store's own counters run as TypeScript, which is cheap.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
from collections import Counter
from datetime import date, datetime, timedelta, timezone

import pytest

import store_server
from harness import McpClient, assert_alive_py, ok, ok_py, run_py, store, assert_refusals, assert_workflow_common

TIME_TOOL = "mcp__time__get_current_time"


pytestmark = pytest.mark.pyodide


@pytest.fixture(scope="module")
def client(stdio_client: McpClient) -> McpClient:
    return stdio_client


def py(v) -> str:
    """A Python value as a Python literal (JSON strings are valid Python strings)."""
    return json.dumps(v)


def store_call_counts(client: McpClient) -> dict:
    return ok(client, 'return await callMCPTool("mcp__Test-Store__count_calls", {});',
              allowed=[store("count_calls")]).result


# --------------------------------------------------------------------------------------------
# Basics
# --------------------------------------------------------------------------------------------


def test_print_and_last_expression(client: McpClient) -> None:
    code = """
import sys
print("hello", 42)
print("warn-line", file=sys.stderr)
x: int = 20
{"a": 1, "b": [1, 2], "t": (3, 4), "s": "x", "f": 0.5, "n": None, "x": x + 22}
"""
    ex = ok_py(client, code)
    assert "hello 42" in ex.output, ex.describe()
    assert "warn-line" in ex.output, ex.describe()
    assert ex.result == {"a": 1, "b": [1, 2], "t": [3, 4], "s": "x", "f": 0.5, "n": None, "x": 42}, ex.describe()
    assert isinstance(ex.sc["executionTimeMs"], (int, float)) and ex.sc["executionTimeMs"] >= 0
    assert ex.tool_calls == [] and ex.sc["toolCallSummary"] == []
    assert "hello 42" in ex.text  # the readable text block shows the output too
    # Top-level await, and no value when the program ends with a statement.
    ex = ok_py(client, 'import asyncio\nawait asyncio.sleep(0.05)\nprint("no value")\ny = 1')
    assert "no value" in ex.output
    assert ex.result is None, ex.describe()


def test_stdlib_works(client: McpClient) -> None:
    code = r"""
import json, re, datetime, collections, itertools, math, statistics
data = json.loads('{"words": ["apple", "banana", "apple", "cherry", "banana", "apple"], "n": [3, 1, 4, 1, 5, 9, 2, 6]}')
{
    "json": json.dumps({"b": 1, "a": [True, None]}, sort_keys=True),
    "re": re.findall(r"(\w+)@(\w+)\.com", "ada@example.com, bob@test.com"),
    "date": (datetime.date(2024, 2, 28) + datetime.timedelta(days=2)).isoformat(),
    "weekday": datetime.date(2024, 3, 15).strftime("%A"),
    "utc": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc).isoformat(),
    "counter": collections.Counter(data["words"]).most_common(2),
    "deque": list(collections.deque(range(10), maxlen=3)),
    "pairs": [list(p) for p in itertools.combinations("abc", 2)],
    "groups": {k: len(list(g)) for k, g in itertools.groupby(sorted(data["words"]))},
    "math": [math.gcd(84, 36), math.isqrt(99), round(math.pi, 5), math.comb(10, 3)],
    "stats": [statistics.mean(data["n"]), statistics.median(data["n"]), round(statistics.stdev(data["n"]), 6)],
    "bigint": str(2 ** 100),
}
"""
    ex = ok_py(client, code)
    words = ["apple", "banana", "apple", "cherry", "banana", "apple"]
    n = [3, 1, 4, 1, 5, 9, 2, 6]
    expected = {
        "json": json.dumps({"b": 1, "a": [True, None]}, sort_keys=True),
        "re": [list(m) for m in re.findall(r"(\w+)@(\w+)\.com", "ada@example.com, bob@test.com")],
        "date": (date(2024, 2, 28) + timedelta(days=2)).isoformat(),
        "weekday": "Friday",
        "utc": datetime(2024, 1, 1, tzinfo=timezone.utc).isoformat(),
        "counter": [list(p) for p in Counter(words).most_common(2)],
        "deque": [7, 8, 9],
        "pairs": [list(p) for p in itertools.combinations("abc", 2)],
        "groups": {k: len(list(g)) for k, g in itertools.groupby(sorted(words))},
        "math": [12, 9, round(math.pi, 5), 120],
        "stats": [statistics.mean(n), statistics.median(n), round(statistics.stdev(n), 6)],
        "bigint": str(2**100),
    }
    assert ex.result == expected, ex.describe()


# --------------------------------------------------------------------------------------------
# Tool calls
# --------------------------------------------------------------------------------------------


def test_multi_server_workflow(client: McpClient) -> None:
    code = f"""
now = await call_mcp_tool({py(TIME_TOOL)}, {{"timezone": "UTC"}})
gold = {{c["id"] for c in await call_mcp_tool({py(store("list_customers"))}, {{"tier": "gold"}})}}
orders = await call_mcp_tool("Test-Store", "list_orders", {{"status": "delivered"}})
big = sorted(o["id"] for o in orders if o["customer_id"] in gold and o["total"] > 300)
by_customer = {{}}
for o in orders:
    by_customer[o["customer_id"]] = round(by_customer.get(o["customer_id"], 0) + o["total"], 2)
top = max(by_customer, key=by_customer.get)
print(f"checked {{len(orders)}} delivered orders")
{{"now": now, "big": big, "top": top}}
"""
    allowed = [TIME_TOOL, store("list_customers"), store("list_orders")]
    ex = ok_py(client, code, allowed=allowed)
    gold = {c["id"] for c in store_server.CUSTOMERS.values() if c["tier"] == "gold"}
    delivered = [o for o in store_server.ORDERS.values() if o["status"] == "delivered"]
    expected_big = sorted(o["id"] for o in delivered if o["customer_id"] in gold and o["total"] > 300)
    assert expected_big  # the fixture data makes this non-trivial
    assert ex.result["big"] == expected_big, ex.describe()
    totals: dict[str, float] = {}
    for o in delivered:
        totals[o["customer_id"]] = round(totals.get(o["customer_id"], 0) + o["total"], 2)
    assert ex.result["top"] == max(totals, key=totals.get), ex.describe()
    assert_workflow_common(ex, allowed, delivered)


def test_both_call_forms_raw_and_errors(client: McpClient) -> None:
    code = """
a = await call_mcp_tool("Test-Store", "get-Inventory", {"warehouse": "WH-WEST"})
b = await call_mcp_tool("mcp__Test-Store__get-Inventory", {"warehouse": "WH-WEST"})
q = await call_mcp_tool("Test-Store", "GetShippingQuote", {"product_id": "P003", "quantity": 2, "country": "DE"})
summary = await call_mcp_tool("mcp__Test-Store__get_stock_summary", {})
card = await call_mcp_tool("mcp__Test-Store__get_product_card", {"product_id": "P003"}, raw=True)
raw_summary = await call_mcp_tool("Test-Store", "get_stock_summary", {}, raw=True)
try:
    await call_mcp_tool("mcp__Test-Store__fail_with", {"message": "card declined"})
    failure = None
except Exception as e:
    failure = {"type": type(e).__name__, "message": str(e)}
{"a": a, "b": b, "q": q, "summary": summary, "card": card, "raw_summary": raw_summary, "failure": failure}
"""
    allowed = [store(t) for t in ("get-Inventory", "GetShippingQuote", "get_stock_summary", "get_product_card",
                                  "fail_with")]
    ex = ok_py(client, code, allowed=allowed)
    r = ex.result
    west = [p for p in store_server.PRODUCTS.values() if p["warehouse"] == "WH-WEST"]
    assert r["a"] == r["b"]
    assert r["a"]["count"] == len(west)
    assert r["q"] == {"product_id": "P003", "country": "DE", "cost": 19.0}
    assert r["summary"] == store_server.stock_summary().model_dump()
    # The image block left the value: it follows the reply's text block as an image of its own.
    blocks = r["card"]["content"]
    assert [b["type"] for b in blocks[:2]] == ["text", "text"], r["card"]
    assert blocks[2] == f"[image image/png, {len(store_server.PNG_1X1)} bytes: sent as content block 1]", r["card"]
    assert [c.type for c in ex.raw.content] == ["text", "image"], ex.raw.content
    assert not r["card"].get("isError")
    assert r["raw_summary"]["structuredContent"] == store_server.stock_summary().model_dump()
    assert r["failure"] is not None, "a downstream isError result did not raise"
    assert "card declined" in r["failure"]["message"], r["failure"]
    assert ex.summary[store("get-Inventory")]["calls"] == 2
    assert ex.summary[store("get_stock_summary")]["calls"] == 2
    assert ex.summary[store("fail_with")]["errors"] == 1


def test_gather_twenty_calls(client: McpClient) -> None:
    code = """
import asyncio, time
results = await asyncio.gather(*(call_mcp_tool("mcp__Test-Store__echo", {"value": {"i": i, "sq": i * i}})
                                  for i in range(20)))
t0 = time.monotonic()
slow = await asyncio.gather(*(call_mcp_tool("Test-Store", "slow", {"seconds": 0.3}) for _ in range(20)))
{"echo": [r["echo"] for r in results], "slow": len(slow), "ms": (time.monotonic() - t0) * 1000}
"""
    ex = ok_py(client, code, allowed=[store("echo"), store("slow")])
    assert ex.result["echo"] == [{"i": i, "sq": i * i} for i in range(20)], ex.describe()
    assert ex.summary[store("echo")]["calls"] == 20
    assert ex.summary[store("echo")]["errors"] == 0
    assert ex.tool_calls[:20] == [store("echo")] * 20, ex.tool_calls
    # 20 calls of a 0.3 s tool under gather must not be serialized (which would take 6 s).
    assert ex.result["slow"] == 20
    assert ex.result["ms"] < 4000, ex.describe()


def test_allowlist_refusal_raises_and_store_never_sees_it(client: McpClient) -> None:
    before = store_call_counts(client)["byTool"]
    code = """
out = {}
for key, call in (
    ("a", lambda: call_mcp_tool("mcp__Test-Store__delete_customer", {"customer_id": "C001"})),
    ("b", lambda: call_mcp_tool("Test-Store", "delete_customer", {"customer_id": "C002"})),
    ("c", lambda: call_mcp_tool("mcp__Test-Store__delete_customer", {"customer_id": "C003"}, raw=True)),
):
    try:
        await call()
        out[key] = "called"
    except Exception as e:
        out[key] = type(e).__name__ + ": " + str(e)
out["echo"] = (await call_mcp_tool("mcp__Test-Store__echo", {"value": "allowed"}))["echo"]
out
"""
    ex = ok_py(client, code, allowed=[store("echo")])
    assert_refusals(ex, "delete_customer")
    assert store("delete_customer") in ex.result["a"], ex.result["a"]
    assert ex.result["echo"] == "allowed"
    # Uncaught, a refusal fails the execution with the tool's name.
    ex = run_py(client, 'await call_mcp_tool("mcp__Test-Store__get_pid", {})')
    assert not ex.success, ex.describe()
    assert "not in allowedTools" in ex.error and "get_pid" in ex.error, ex.error
    after = store_call_counts(client)["byTool"]
    assert after.get("delete_customer", 0) == before.get("delete_customer", 0) == 0, after
    assert after.get("get_pid", 0) == before.get("get_pid", 0), (before, after)
    ids = ok(client, 'return (await callMCPTool("mcp__Test-Store__list_customers", {})).map((c) => c.id);',
             allowed=[store("list_customers")]).result
    assert {"C001", "C002", "C003"} <= set(ids)


def test_sandbox_discovery_api(client: McpClient) -> None:
    code = """
s = await search_tools("inventory stock", server="Test-Store", limit=3)
g = await get_tool_schema("mcp__time__get_current_time")
l = await list_servers()
{"s": s, "g": g, "l": l}
"""
    # Look-ups see (and start) only what the code may call.
    ex = ok_py(client, code, allowed=["mcp__Test-Store__*", "mcp__time__*"])
    s = ex.result["s"]
    matches = s["matches"]
    assert 1 <= len(matches) <= 3 and {m["server"] for m in matches} == {"Test-Store"}, ex.describe()
    assert "timezone" in ex.result["g"]["signature"]
    assert "timezone" in ex.result["g"]["inputSchema"]["properties"]
    # The helpers answer as the MCP tools do: `{servers: [...]}`.
    servers = ex.result["l"]["servers"]
    assert {s["name"] for s in servers} == {"time", "git", "Test-Store", "broken"}


# --------------------------------------------------------------------------------------------
# Failures
# --------------------------------------------------------------------------------------------


def test_exception_has_class_and_traceback(client: McpClient) -> None:
    code = 'print("before the error")\ndef inner(x):\n    raise ValueError(f"boom {x}")\ninner(7)\n'
    ex = run_py(client, code)
    assert not ex.success, ex.describe()
    assert "ValueError" in ex.error and "boom 7" in ex.error, ex.error
    assert "Traceback" in ex.error, ex.error
    assert re.search(r"line 3\b", ex.error) and 'raise ValueError(f"boom {x}")' in ex.error, (
        f"the traceback does not show the user's line: {ex.error!r}")
    assert re.search(r"line 4\b", ex.error), ex.error  # the call site too
    assert "before the error" in ex.output, ex.describe()
    ex = run_py(client, "def broken(:\n    pass\n")
    assert not ex.success and "SyntaxError" in ex.error, ex.describe()
    assert_alive_py(client)
