"""Crossings of the broker and the catalogue, tried through the real MCP client against real
downstream servers, and refused:

- a glob for one server (`mcp__fx__*`) reaching another whose name extends it (`fx__admin`), in
  `allowedTools` and in the server-wide policy;
- look-ups that start servers the code may not call, and look-ups and refused calls that cost
  nothing (every host call spends the execution's budget; one that spins on refusals is stopped);
- refusals of made-up 16 KB names that blow up the reply and the audit log;
- tools the policy refuses that are still visible in search, schemas and server listings.

The downstream servers are `tests/servers/hostile_server.py` instances (and Test-Store), each
with a marker file it creates when it starts: a missing marker proves a server never started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import harness
from conftest import ServerFactory
from harness import E2EEnv, McpClient, assert_alive, audit_records, ok, ok_py, run_cli, run_ts

HOSTILE = harness.SERVERS_DIR / "hostile_server.py"


def hostile(*args: str) -> dict[str, Any]:
    """The MCP config entry of one hostile test server."""
    return {"command": sys.executable, "args": [str(HOSTILE), *args]}


def marked(marker: Path, *args: str) -> dict[str, Any]:
    """A hostile test server that creates `marker` when it starts."""
    return hostile("--marker", str(marker), *args)


def store() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(harness.STORE_SERVER)]}


class CustomServers(ServerFactory):
    """`custom(servers, extra_env)`: a code-executor whose MCP config holds exactly `servers`."""

    def __call__(  # type: ignore[override]
        self,
        servers: dict[str, Any],
        extra_env: dict[str, str] | None = None,
        transport: str = "stdio",
    ) -> McpClient:
        root = self.tmp_path_factory.mktemp("custom")
        e2e = E2EEnv(root, servers=(), extra_env=dict(extra_env or {}))
        e2e.config_path.write_text(json.dumps({"mcpServers": servers}, indent=2))
        client = McpClient(transport, e2e, root / f"code-executor-{transport}.log")
        self.clients.append(client)
        try:
            client.start()
        except Exception as exc:  # pragma: no cover - reported as a failure
            pytest.fail(f"could not start code-executor: {exc!r}\n{client.log_tail()}")
        return client


@pytest.fixture
def custom(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    factory = CustomServers(tmp_path_factory)
    yield factory
    factory.close()


def servers_of(listing: Any) -> dict[str, dict[str, Any]]:
    rows = listing["servers"]
    return {row["name"]: row for row in rows}


# --------------------------------------------------------------------------------------------
# 5. A glob for one server never reaches another
# --------------------------------------------------------------------------------------------

CROSSING = """
const out = {};
for (const [key, call] of [
  ["split", () => callMCPTool("fx__admin", "echo", { value: 1 })],
  ["qualified", () => callMCPTool("mcp__fx__admin__echo", { value: 2 })],
  ["own", () => callMCPTool("mcp__fx__echo", { value: 3 })],
]) {
  try { out[key] = await call(); } catch (e) { out[key] = String(e.message ?? e); }
}
return out;
"""


def test_a_glob_for_one_server_never_reaches_another(custom, tmp_path: Path) -> None:
    fx, admin = tmp_path / "fx.started", tmp_path / "fx__admin.started"
    c = custom({"fx": marked(fx), "fx__admin": marked(admin)})
    ex = ok(c, CROSSING, allowed=["mcp__fx__*"])
    out = ex.result
    assert out["own"] == {"echo": 3}, ex.describe()
    for key in ("split", "qualified"):
        assert "`mcp__fx__admin__echo` is not in allowedTools" in out[key], ex.describe()
    assert ex.tool_calls == ["mcp__fx__echo"], ex.describe()
    # fx__admin never even started: no tool of it may be called under that allowlist.
    assert fx.exists() and not admin.exists()
    py = ok_py(
        c,
        """
try:
    await call_mcp_tool("fx__admin", "echo", {"value": 1})
    r = "called"
except Exception as e:
    r = str(e)
r
""",
        allowed=["mcp__fx__*"],
    )
    assert "not in allowedTools" in py.result, py.describe()
    assert not admin.exists()
    # The longer name is reached by its own pattern.
    ex = ok(c, 'return await callMCPTool("fx__admin", "echo", { value: 4 });', allowed=["mcp__fx__admin__*"])
    assert ex.result == {"echo": 4} and admin.exists(), ex.describe()


def test_the_policy_matches_whole_server_names_too(custom, tmp_path: Path) -> None:
    fx, admin = tmp_path / "a-fx.started", tmp_path / "a-fx__admin.started"
    c = custom({"fx": marked(fx), "fx__admin": marked(admin)}, {"CODE_EXECUTOR_POLICY_ALLOW": "[mcp__fx__*]"})
    out = ok(c, CROSSING, allowed=["*"]).result
    assert out["own"] == {"echo": 3}, out
    for key in ("split", "qualified"):
        assert "outside the tools the server's policy allows" in out[key], out
    assert not admin.exists()
    # Nor can the LLM see or start it.
    r = c.call("getToolSchema", {"name": "mcp__fx__admin__echo"})
    assert r.is_error and "has no tool named `echo`" in r.content[0].text, harness.dump(r)
    assert not admin.exists()

    fx, admin = tmp_path / "d-fx.started", tmp_path / "d-fx__admin.started"
    c = custom({"fx": marked(fx), "fx__admin": marked(admin)}, {"CODE_EXECUTOR_POLICY_DENY": "[mcp__fx__*]"})
    out = ok(c, CROSSING, allowed=["*"]).result
    assert "denied by the server's policy" in out["own"], out
    assert out["split"] == {"echo": 1} and out["qualified"] == {"echo": 2}, out
    # A server whose every tool the policy denies is never started.
    assert not fx.exists()


# --------------------------------------------------------------------------------------------
# 6. Look-ups start only what the code may call, and every host call is metered
# --------------------------------------------------------------------------------------------

LOOKUPS = """
const search = await searchTools("echo a value back");
const servers = await listServers();
let schema;
try { schema = await getToolSchema("mcp__alpha__echo"); } catch (e) { schema = String(e.message ?? e); }
return { search, servers, schema };
"""


def test_lookups_start_only_servers_the_code_may_call(custom, tmp_path: Path) -> None:
    markers = {name: tmp_path / f"{name}.started" for name in ("alpha", "beta", "gamma")}
    c = custom({name: marked(m) for name, m in markers.items()})
    r = ok(c, LOOKUPS, allowed=[]).result
    assert r["search"]["matches"] == [], r
    assert sorted(r["search"]["notSearched"]) == ["alpha", "beta", "gamma"], r
    servers = servers_of(r["servers"])
    assert all(s["callable"] is False and s["state"] == "idle" for s in servers.values()), servers
    # Outside allowedTools: the answer says how to allow it (alpha is not started to say so).
    assert r["schema"] == (
        'tool `mcp__alpha__echo` is not in allowedTools for this execution: add "mcp__alpha__echo" to allowedTools to call it'
    ), r
    assert not any(m.exists() for m in markers.values()), "a look-up started a server"
    py = ok_py(c, 'r = await search_tools("echo a value back")\nr', allowed=[])
    assert py.result["matches"] == [] and not any(m.exists() for m in markers.values()), py.describe()

    # Allowed one tool of alpha: only alpha starts, and only that tool shows.
    r = ok(c, LOOKUPS, allowed=["mcp__alpha__echo"]).result
    assert [m["name"] for m in r["search"]["matches"]] == ["mcp__alpha__echo"], r
    # alpha, named by allowedTools, starts connecting as the execution starts: the search either
    # finds it connected already or waits for it and says it connected it.
    assert r["search"].get("connected", []) in ([], ["alpha"]), r
    assert sorted(r["search"]["notSearched"]) == ["beta", "gamma"], r
    assert r["schema"]["name"] == "mcp__alpha__echo", r
    servers = servers_of(r["servers"])
    assert (servers["alpha"]["callable"], servers["alpha"]["tools"]) == (True, 1), servers
    assert markers["alpha"].exists() and not markers["beta"].exists() and not markers["gamma"].exists()

    # The LLM's own search is bounded by the server-wide policy only: it may start every server,
    # and says which it connected.
    sc = c.structured("searchTools", {"query": "echo a value back"})
    assert sorted(sc["connected"]) == ["beta", "gamma"], sc
    assert all(m.exists() for m in markers.values())


def test_every_host_call_spends_the_budget_and_spinning_on_refusals_ends_the_execution(
    custom, tmp_path: Path
) -> None:
    marker = tmp_path / "alpha.started"
    audit = tmp_path / "audit"
    c = custom(
        {"alpha": marked(marker)},
        {"CODE_EXECUTOR_MAX_TOOL_CALLS_PER_EXECUTION": "20", "CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit)},
    )
    code = """
const calls = [() => searchTools("echo"), () => getToolSchema("mcp__alpha__echo"), () => listServers(),
               () => callMCPTool("mcp__alpha__echo", { value: 1 })];
let answered = 0, overBudget = 0, first = null, message = null;
for (let i = 0; i < 60; i++) {
  try { await calls[i % 4](); answered++; }
  catch (e) {
    const m = String(e.message ?? e);
    if (m.includes("limit of 20 host calls")) { overBudget++; first ??= i; message ??= m; } else answered++;
  }
}
return { answered, overBudget, first, message };
"""
    r = ok(c, code, allowed=[]).result
    # Look-ups and refused calls (allowedTools is empty) count: the 21st host call is refused.
    assert (r["answered"], r["overBudget"], r["first"]) == (20, 40, 20), r
    assert "tool calls, refused calls and look-ups" in r["message"], r
    assert not marker.exists()

    spin = 'for (let i = 0; i < 1000000; i++) { try { await searchTools("x"); } catch {} } return "finished";'
    ex = run_ts(c, spin, allowed=[])
    assert not ex.success and ex.result != "finished", ex.describe()
    assert "kept making host calls after reaching its limit of 20" in ex.error, ex.describe()
    records = audit_records(audit, want=2, event="execution")
    executions = [rec for rec in records if rec["event"] == "execution"]
    assert [rec["outcome"] for rec in executions] == ["ok", "host_call_limit"], executions
    assert executions[0]["hostCalls"] == 60 and executions[1]["hostCalls"] == 20 + 100 + 1, executions
    assert_alive(c)


def test_refusals_of_huge_names_leave_a_bounded_reply_and_audit(custom, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    marker = tmp_path / "alpha.started"
    c = custom({"alpha": marked(marker)}, {"CODE_EXECUTOR_AUDIT_LOG_DIR": str(audit)})
    code = """
const pad = "x".repeat(16 * 1024);
let refused = 0, overBudget = 0;
for (let i = 0; i < 1100; i++) {
  try { await callMCPTool(`mcp__alpha__${i}_${pad}`, {}); }
  catch (e) { refused++; if (String(e.message).includes("host calls")) overBudget++; }
}
return { refused, overBudget };
"""
    ex = ok(c, code, allowed=[])
    # The default budget is 1000 host calls: the last 100 are refused for that.
    assert ex.result == {"refused": 1100, "overBudget": 100}, ex.describe()
    reply = len(json.dumps(ex.sc)) + len(ex.text)
    assert reply < 256 * 1024, f"the reply is {reply} bytes"
    summary = ex.sc["toolCallSummary"]
    assert len(summary) == 100 and all(len(row["tool"].encode()) < 300 for row in summary), len(summary)
    assert ex.sc["toolCallSummaryRest"]["refused"] == 1000, ex.sc.get("toolCallSummaryRest")
    assert sum(row["refused"] for row in summary) == 100
    records = audit_records(audit, want=1101)
    assert len(records) == 1101
    assert all(len(rec["tool"].encode()) < 300 for rec in records if rec["event"] == "tool_call")
    size = sum(f.stat().st_size for f in audit.glob("audit.*.jsonl"))
    assert size < 1024 * 1024, f"the audit log grew by {size} bytes"
    assert records[-1]["toolCallsRefused"] == 1100 and records[-1]["hostCalls"] == 1100, records[-1]
    assert not marker.exists()


# --------------------------------------------------------------------------------------------
# 7. What the policy refuses is not visible
# --------------------------------------------------------------------------------------------

DENIED = ["delete_customer", "get_customer_lifetime_value"]


def test_tools_the_policy_refuses_are_invisible(custom, tmp_path: Path) -> None:
    beta = tmp_path / "beta.started"
    c = custom(
        {"Test-Store": store(), "beta": marked(beta)},
        {"CODE_EXECUTOR_POLICY_DENY": "[mcp__Test-Store__delete_*, mcp__Test-Store__get_customer_lifetime_value, mcp__beta__*]"},
    )
    everything = c.structured("searchTools", {"query": "", "server": "Test-Store", "limit": 100, "detail": "name"})
    names = {m["tool"] for m in everything["matches"]}
    assert names and not names & set(DENIED), names
    for query in ("delete customer", "customer lifetime value"):
        found = c.structured("searchTools", {"query": query, "detail": "full"})
        assert not {m["tool"] for m in found["matches"]} & set(DENIED), found
    # A denied tool answers as one the server does not have: what it suggests comes from the
    # tools shown, never a denied one.
    for tool in DENIED:
        r = c.call("getToolSchema", {"name": f"mcp__Test-Store__{tool}"})
        text = r.content[0].text
        assert r.is_error and text.startswith(f"MCP server `Test-Store` has no tool named `{tool}`"), harness.dump(r)
        assert not any(f"`mcp__Test-Store__{d}`" in text for d in DENIED), text
    missing = c.call("getToolSchema", {"name": "mcp__Test-Store__no_such_tool"})
    assert missing.content[0].text.startswith("MCP server `Test-Store` has no tool named `no_such_tool`")
    servers = servers_of(c.structured("listServers", {}))
    assert servers["Test-Store"]["tools"] == len(names), servers
    # A server the policy closes entirely is not started by the LLM's search.
    assert servers["beta"]["callable"] is False and not beta.exists(), servers

    # Code sees the same, even when its allowlist names the tools.
    code = """
const found = await searchTools("delete customer lifetime value", { limit: 50 });
const errors = [];
for (const name of ["mcp__Test-Store__delete_customer", "mcp__Test-Store__get_customer_lifetime_value"]) {
  try { await getToolSchema(name); errors.push("shown"); } catch (e) { errors.push(String(e.message ?? e)); }
}
return { names: found.matches.map((m) => m.tool), errors };
"""
    r = ok(c, code, allowed=["mcp__Test-Store__*", "mcp__beta__*"]).result
    assert r["names"] and not set(r["names"]) & set(DENIED), r
    assert [e.split(";")[0] for e in r["errors"]] == [f"MCP server `Test-Store` has no tool named `{t}`" for t in DENIED], r
    assert not any(f"`mcp__Test-Store__{d}`" in e for e in r["errors"] for d in DENIED), r
    assert not beta.exists()


def test_wrapper_modules_hold_only_what_the_policy_allows(tmp_path: Path, ce_binary: Path) -> None:
    beta = tmp_path / "beta.started"
    out = tmp_path / "wrappers"
    env = E2EEnv(
        tmp_path / "world",
        servers=(),
        extra_env={
            "CODE_EXECUTOR_WRAPPERS_DIR": str(out),
            "CODE_EXECUTOR_POLICY_DENY": "[mcp__Test-Store__delete_*, mcp__Test-Store__get_customer_lifetime_value, mcp__beta__*]",
        },
    )
    env.config_path.write_text(json.dumps({"mcpServers": {"Test-Store": store(), "beta": marked(beta)}}))
    proc = run_cli(env, "wrappers", "--lang", "ts")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    module = (out / "test_store.ts").read_text()
    assert "listCustomers" in module and "list_customers" in module, module[:2000]
    for tool in DENIED:
        assert tool not in module, f"{tool} is in the wrapper module"
    # A server the policy closes is neither started nor given a module.
    assert not (out / "beta.ts").exists() and not beta.exists()


def test_search_queries_too_large_to_search_are_refused(custom, tmp_path: Path) -> None:
    c = custom({"alpha": hostile()})
    r = c.call("searchTools", {"query": "echo " * 300})
    assert r.is_error and "over the limit of 1024 bytes" in r.content[0].text, harness.dump(r)
    words = " ".join(f"w{i}" for i in range(40))
    ex = ok(c, f'try {{ await searchTools("{words}"); return "searched"; }} catch (e) {{ return String(e.message ?? e); }}',
            allowed=["mcp__alpha__*"])
    assert "40 distinct words, over the limit of 32" in ex.result, ex.describe()
    found = c.structured("searchTools", {"query": "echo a value back"})
    assert found["matches"][0]["name"] == "mcp__alpha__echo", found
