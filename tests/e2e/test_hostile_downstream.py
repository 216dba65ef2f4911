"""Hostile downstream servers, as real MCP servers (`tests/servers/hostile_server.py`), through the
real MCP client:

- a server that fails with a secret on stderr, and one that crashes mid-call after writing one:
  the secret reaches the operator's log only, never the LLM or the code;
- a server that writes 200 MiB to stderr without a newline: code-executor's memory stays bounded;
- a tool whose input schema refers to itself from every property: its signature, its search
  entry and argument validation are answered in bounded memory.

Each test then checks that the server keeps serving. Memory is code-executor's own peak resident
set (VmHWM of /proc/PID/status), before and after.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

import harness
from harness import assert_alive, ok, proc_memory, run_cli, run_ts
from test_broker_crossings import custom, hostile, servers_of  # noqa: F401 - `custom` is a fixture

# Growth of code-executor's peak RSS a hostile server may cause (generous: the unbounded
# versions grew it by hundreds of MiB).
MEMORY_BOUND_KIB = 100 * 1024


def peak_kib(c) -> int:
    pid = c.server_pid
    assert pid is not None, "no code-executor process"
    return proc_memory(pid)["VmHWM"]


# --------------------------------------------------------------------------------------------
# 8. Stderr stays in the operator's log
# --------------------------------------------------------------------------------------------


def test_a_failing_servers_stderr_reaches_only_the_operators_log(custom, tmp_path: Path) -> None:
    secret = "s3cr3t-" + secrets.token_hex(8)
    c = custom({"leaky": hostile("--fail-with-secret", secret), "alpha": hostile()})
    seen: list[str] = []
    search = c.call("searchTools", {"query": "echo"})
    seen.append(harness.dump(search, 100000))
    assert not search.is_error, harness.dump(search)
    assert "leaky" in search.structured_content["unavailable"][0]["server"], harness.dump(search)
    listing = c.call("listServers", {})
    seen.append(harness.dump(listing, 100000))
    leaky = servers_of(listing.structured_content)["leaky"]
    assert leaky["state"] == "failed", leaky
    assert "MCP handshake" in leaky["error"] and "see the server log" in leaky["error"], leaky
    seen.append(harness.dump(c.call("health", {}), 100000))
    seen.append(harness.dump(c.call("getToolSchema", {"name": "mcp__leaky__echo"}), 100000))
    code = """
const out = { search: await searchTools("echo"), servers: await listServers() };
try { await callMCPTool("mcp__leaky__echo", { value: 1 }); } catch (e) { out.call = String(e.message ?? e); }
try { await getToolSchema("mcp__leaky__echo"); } catch (e) { out.schema = String(e.message ?? e); }
return out;
"""
    ex = ok(c, code, allowed=["mcp__leaky__*"])
    assert "failed to start" in ex.result["call"], ex.describe()
    seen.append(ex.everything())
    for text in seen:
        assert secret not in text, f"the server's stderr reached the client:\n{text[:3000]}"
    # The operator's log has it.
    assert f"bad credentials {secret}" in c.log_tail(1_000_000), c.log_tail()
    # So does the operator at the command line (in the log on stderr), next to the fixed reason.
    cli = run_cli(c.e2e, "servers")
    row = next(line for line in cli.stdout.splitlines() if line.startswith("leaky"))
    assert "see the server log" in row and secret not in cli.stdout, cli.stdout
    assert secret in cli.stderr, cli.stderr


def test_a_server_that_crashes_mid_call_does_not_leak_its_stderr(custom) -> None:
    secret = "s3cr3t-" + secrets.token_hex(8)
    c = custom({"alpha": hostile()})
    code = f"""
try {{ await callMCPTool("mcp__alpha__leak_and_crash", {{ secret: "{secret}" }}); return "answered"; }}
catch (e) {{ return String(e.message ?? e); }}
"""
    ex = ok(c, code, allowed=["mcp__alpha__leak_and_crash"])
    assert "alpha" in ex.result and ex.result != "answered", ex.describe()
    assert secret not in ex.everything(), ex.describe()
    listing = harness.dump(c.call("listServers", {}), 100000)
    assert secret not in listing, listing
    # The server is started again on next use.
    ex = ok(c, 'return await callMCPTool("mcp__alpha__echo", { value: 7 });', allowed=["mcp__alpha__echo"])
    assert ex.result == {"echo": 7}, ex.describe()


# --------------------------------------------------------------------------------------------
# 9. A stderr flood without newlines
# --------------------------------------------------------------------------------------------


def test_a_stderr_flood_without_newlines_keeps_memory_bounded(custom) -> None:
    c = custom({"flood": hostile()})
    allowed = ["mcp__flood__*"]
    assert ok(c, 'return await callMCPTool("mcp__flood__echo", { value: 1 });', allowed=allowed).result == {"echo": 1}
    before = peak_kib(c)
    ex = ok(c, 'return await callMCPTool("mcp__flood__flood_stderr", { mib: 200 });', allowed=allowed, timeout_ms=120_000)
    # The server wrote all of it (its last write returned): at most a pipe's worth is unread.
    assert ex.result == {"flooded_mib": 200}, ex.describe()
    growth = peak_kib(c) - before
    assert growth < MEMORY_BOUND_KIB, f"200 MiB of stderr grew code-executor's peak RSS by {growth} KiB"
    assert ok(c, 'return await callMCPTool("mcp__flood__echo", { value: 2 });', allowed=allowed).result == {"echo": 2}
    assert_alive(c)


# --------------------------------------------------------------------------------------------
# 10. A self-referring input schema
# --------------------------------------------------------------------------------------------


def test_a_self_referring_schema_is_answered_in_bounded_memory(custom) -> None:
    c = custom({"deep": hostile("--recursive-schema", "45")})
    # Start the server and list its tools (nothing renders a signature yet).
    names = c.structured("searchTools", {"query": "echo", "detail": "name"})
    assert any(m["name"] == "mcp__deep__echo" for m in names["matches"]), names
    before = peak_kib(c)
    schema = c.structured("getToolSchema", {"name": "mcp__deep__deep"})
    signature = schema["signature"]
    assert signature.startswith("function deep(args?: { property_00?: unknown;"), signature[:300]
    assert len(signature) < 64 * 1024, len(signature)
    assert schema["inputSchema"]["properties"]["property_44"] == {"$ref": "#"}
    full = c.structured("searchTools", {"query": "refers to itself", "detail": "full"})
    assert full["matches"][0]["name"] == "mcp__deep__deep" and full["matches"][0]["signature"] == signature, full
    code = """
const schema = await getToolSchema("mcp__deep__deep");
const good = await callMCPTool("mcp__deep__deep", { property_00: { property_01: { property_02: {} } }, property_44: {} });
let bad;
try { await callMCPTool("mcp__deep__deep", { property_00: { property_01: 3 } }); bad = "sent"; }
catch (e) { bad = String(e.message ?? e); }
return { signature: schema.signature.length, good, bad };
"""
    r = ok(c, code, allowed=["mcp__deep__*"]).result
    assert r["good"] == {"keys": ["property_00", "property_44"]}, r
    assert "do not match its input schema" in r["bad"] and "/property_00/property_01" in r["bad"], r
    growth = peak_kib(c) - before
    assert growth < MEMORY_BOUND_KIB, f"a {len(str(schema['inputSchema']))}-byte schema grew the peak RSS by {growth} KiB"
    assert_alive(c)
