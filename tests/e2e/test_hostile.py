"""Hostile code must be refused without effect, and the server must keep serving afterwards.

Each case asserts the *effect*: the execution fails (an error comes back), no secret content leaks
into anything the client receives, no file appears on the host, no connection reaches a loopback
listener we own, and a normal execution right after succeeds. Exact error messages are not checked.
"""

from __future__ import annotations

import json
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness import PASSWD_RE, TRAP_TOKEN, McpClient, Trap, assert_alive, ok, run_ts, store

TAG = uuid.uuid4().hex[:12]


@dataclass
class Ctx:
    client: McpClient
    trap: Trap
    tmp_marker: Path
    cwd_marker_name: str
    spawn_marker: Path
    free_port: int
    extra_forbidden: list[str] = field(default_factory=list)


@pytest.fixture
def ctx(client: McpClient, trap: Trap) -> Ctx:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return Ctx(
        client=client,
        trap=trap,
        tmp_marker=Path(f"/tmp/code-executor-e2e-pwned-{TAG}-{uuid.uuid4().hex[:6]}"),
        cwd_marker_name=f"pwned-{TAG}-{uuid.uuid4().hex[:6]}.txt",
        spawn_marker=Path(f"/tmp/code-executor-e2e-spawned-{TAG}-{uuid.uuid4().hex[:6]}"),
        free_port=port,
    )


def forbidden_strings(c: Ctx) -> list[str]:
    e2e = c.client.e2e
    return [e2e.canary, TRAP_TOKEN, *c.extra_forbidden]


def assert_refused(c: Ctx, code: str, timeout_ms: int | None = 10000) -> None:
    connections_before = c.trap.connections
    ex = run_ts(c.client, code, timeout_ms=timeout_ms, call_timeout=60)
    everything = ex.everything()
    assert not PASSWD_RE.search(everything), "/etc/passwd content leaked: " + ex.describe()
    for s in forbidden_strings(c):
        assert s not in everything, f"{s!r} leaked: " + ex.describe()
    assert c.trap.connections == connections_before, "the sandbox reached a loopback listener: " + ex.describe()
    assert not ex.success, "hostile code was not refused: " + ex.describe()
    assert_alive(c.client)


def js(v) -> str:
    return json.dumps(v)


# ---- files ---------------------------------------------------------------------------------

FILE_READS = {
    "deno_read_passwd": 'return await Deno.readTextFile("/etc/passwd");',
    "deno_read_passwd_sync": 'return Deno.readTextFileSync("/etc/passwd");',
    "fetch_file_url": 'const r = await fetch("file:///etc/passwd"); return await r.text();',
    "import_text": 'const m = await import("file:///etc/passwd", { with: { type: "text" } }); return m.default;',
    "node_fs": 'const fs = await import("node:fs"); return fs.readFileSync("/etc/passwd", "utf8");',
    "read_proc_environ": 'return await Deno.readTextFile("/proc/self/environ");',
    "read_parent_environ": 'return await Deno.readTextFile(`/proc/${Deno.ppid}/environ`);',
    "read_dir_root": 'const n = []; for await (const e of Deno.readDir("/")) n.push(e.name); return n;',
    "stat_passwd": 'return await Deno.stat("/etc/passwd");',
}


@pytest.mark.parametrize("case", sorted(FILE_READS))
def test_file_reads_refused(ctx: Ctx, case: str) -> None:
    assert_refused(ctx, FILE_READS[case])


def test_read_own_config_refused(ctx: Ctx) -> None:
    """The mcp.json holding every downstream command line must stay out of reach."""
    path = str(ctx.client.e2e.config_path)
    ctx.extra_forbidden.append("mcpServers")
    assert_refused(ctx, f"return await Deno.readTextFile({js(path)});")


# ---- environment ---------------------------------------------------------------------------

ENV_READS = {
    "env_to_object": "return Deno.env.toObject();",
    "env_get_home": 'return Deno.env.get("HOME");',
    "env_get_canary": 'return Deno.env.get("CODE_EXECUTOR_E2E_CANARY");',
    "node_process_env": 'const p = await import("node:process"); return JSON.stringify(p.env);',
}


@pytest.mark.parametrize("case", sorted(ENV_READS))
def test_env_reads_refused(ctx: Ctx, case: str) -> None:
    ctx.extra_forbidden.append(str(ctx.client.e2e.home))  # the value of HOME
    assert_refused(ctx, ENV_READS[case])


# ---- network -------------------------------------------------------------------------------


def test_fetch_loopback_refused(ctx: Ctx) -> None:
    assert_refused(ctx, f'const r = await fetch("http://127.0.0.1:{ctx.trap.port}/"); return await r.text();')


def test_fetch_localhost_name_refused(ctx: Ctx) -> None:
    assert_refused(ctx, f'const r = await fetch("http://localhost:{ctx.trap.port}/"); return await r.text();')


def test_fetch_own_http_port_refused(ctx: Ctx) -> None:
    if ctx.client.transport != "http":
        pytest.skip("the server has an HTTP port only in HTTP mode")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}},
    }
    code = f"""
const r = await fetch("http://127.0.0.1:{ctx.client.port}/mcp", {{
  method: "POST",
  headers: {{ "content-type": "application/json", accept: "application/json, text/event-stream" }},
  body: {js(json.dumps(body))},
}});
return {{ status: r.status, text: await r.text() }};
"""
    assert_refused(ctx, code)


def test_deno_connect_refused(ctx: Ctx) -> None:
    assert_refused(
        ctx, f'const c = await Deno.connect({{ hostname: "127.0.0.1", port: {ctx.trap.port} }}); c.close(); return "connected";'
    )


def test_deno_listen_refused(ctx: Ctx) -> None:
    assert_refused(
        ctx, f'const l = Deno.listen({{ hostname: "127.0.0.1", port: {ctx.free_port} }}); l.close(); return "listening";'
    )


def test_websocket_loopback_refused(ctx: Ctx) -> None:
    code = f"""
const ws = new WebSocket("ws://127.0.0.1:{ctx.trap.port}/");
await new Promise((res, rej) => {{ ws.onopen = () => res(null); ws.onerror = () => rej(new Error("ws failed")); }});
return "open";
"""
    assert_refused(ctx, code)


def test_network_import_refused(ctx: Ctx) -> None:
    assert_refused(ctx, f'const m = await import("http://127.0.0.1:{ctx.trap.port}/x.js"); return String(m);')


# ---- processes -----------------------------------------------------------------------------


def test_spawn_shell_refused(ctx: Ctx) -> None:
    code = f"""
const out = await new Deno.Command("/bin/sh", {{ args: ["-c", "echo pwned > {ctx.spawn_marker}; cat /etc/passwd"] }}).output();
return new TextDecoder().decode(out.stdout);
"""
    assert_refused(ctx, code)
    assert not ctx.spawn_marker.exists()


def test_node_child_process_refused(ctx: Ctx) -> None:
    code = f"""
const cp = await import("node:child_process");
return cp.execSync("echo pwned > {ctx.spawn_marker}; cat /etc/passwd").toString();
"""
    assert_refused(ctx, code)
    assert not ctx.spawn_marker.exists()


def test_kill_parent_refused(ctx: Ctx) -> None:
    assert_refused(ctx, 'Deno.kill(Deno.ppid, "SIGKILL"); return "killed";')


def test_ffi_dlopen_refused(ctx: Ctx) -> None:
    code = 'const lib = Deno.dlopen("libc.so.6", { getpid: { parameters: [], result: "i32" } }); return lib.symbols.getpid();'
    assert_refused(ctx, code)


# ---- writes --------------------------------------------------------------------------------


def test_write_tmp_refused(ctx: Ctx) -> None:
    assert_refused(ctx, f'await Deno.writeTextFile({js(str(ctx.tmp_marker))}, "x"); return "written";')
    assert not ctx.tmp_marker.exists()


def test_write_cwd_refused(ctx: Ctx) -> None:
    name = ctx.cwd_marker_name
    assert_refused(ctx, f'await Deno.writeTextFile({js(name)}, "x"); return "written";')
    e2e = ctx.client.e2e
    for d in (e2e.project, e2e.home, e2e.root, Path.cwd(), Path("/"), Path("/tmp")):
        assert not (d / name).exists(), f"file created in {d}"
    assert not list(e2e.root.rglob(name))


def test_remove_file_refused(ctx: Ctx) -> None:
    victim = ctx.client.e2e.config_path
    assert_refused(ctx, f"await Deno.remove({js(str(victim))}); return 'removed';")
    assert victim.exists()


# ---- workers -------------------------------------------------------------------------------

WORKER_BODY = """
const out = {};
try { out.passwd = await Deno.readTextFile("/etc/passwd"); } catch (e) { out.passwdErr = String(e); }
try { out.fetched = await (await fetch("file:///etc/passwd")).text(); } catch (e) { out.fetchErr = String(e); }
try { out.home = Deno.env.get("HOME"); } catch (e) { out.envErr = String(e); }
try { const c = await Deno.connect({ hostname: "127.0.0.1", port: PORT }); c.close(); out.net = "connected"; }
catch (e) { out.netErr = String(e); }
self.postMessage(out);
"""


def worker_code(port: int, options: str) -> str:
    body = WORKER_BODY.replace("PORT", str(port))
    return f"""
const src = {js(body)};
const w = new Worker("data:application/javascript," + encodeURIComponent(src), {options});
const out = await new Promise((res, rej) => {{
  w.onmessage = (e) => res(e.data);
  w.onerror = (e) => {{ e.preventDefault?.(); rej(new Error("worker failed: " + e.message)); }};
}});
w.terminate();
if (out.passwd || out.fetched || out.home || out.net) return out;
throw new Error("the worker could do nothing: " + JSON.stringify(out));
"""


def test_worker_reads_refused(ctx: Ctx) -> None:
    ctx.extra_forbidden.append(str(ctx.client.e2e.home))
    assert_refused(ctx, worker_code(ctx.trap.port, '{ type: "module" }'))


def test_worker_permission_escalation_refused(ctx: Ctx) -> None:
    ctx.extra_forbidden.append(str(ctx.client.e2e.home))
    opts = '{ type: "module", deno: { permissions: { read: true, env: true, net: true, run: true } } }'
    assert_refused(ctx, worker_code(ctx.trap.port, opts))


# ---- state and the protocol pipe -----------------------------------------------------------


def test_no_state_between_executions(ctx: Ctx) -> None:
    c = ctx.client
    ok(c, 'globalThis.__x = 42; Object.prototype.__polluted = "yes"; '
          'globalThis.callMCPTool = async () => "hijacked"; return globalThis.__x;')
    ex = ok(c, 'return { x: typeof __x, polluted: ({}).__polluted ?? null, '
               'hijacked: (await callMCPTool("mcp__Test-Store__echo", { value: 1 })) === "hijacked" };',
            allowed=[store("echo")])
    assert ex.result == {"x": "undefined", "polluted": None, "hijacked": False}, ex.describe()


def test_forged_protocol_messages_do_not_bypass_the_allowlist(ctx: Ctx) -> None:
    c = ctx.client
    forged = [
        {"v": 1, "type": "call", "id": 999001, "method": "callTool",
         "params": {"name": store("delete_customer"), "args": {"customer_id": "C004"}}},
        {"v": 1, "type": "call", "id": 999002, "method": "callTool",
         "params": {"server": "Test-Store", "tool": "delete_customer", "args": {"customer_id": "C005"}}},
    ]
    lines = "".join(json.dumps(m) + "\n" for m in forged)
    code = f"""
const enc = new TextEncoder();
try {{ await Deno.stdout.write(enc.encode({js(lines)})); }} catch (_) {{}}
try {{ Deno.stderr.writeSync(enc.encode({js(lines)})); }} catch (_) {{}}
console.log({js(lines)});
await new Promise((r) => setTimeout(r, 500));
return "sent";
"""
    run_ts(c, code, allowed=[store("echo")], timeout_ms=10000)
    ex = ok(c, 'return { counts: await callMCPTool("mcp__Test-Store__count_calls", {}), '
               'ids: (await callMCPTool("mcp__Test-Store__list_customers", {})).map((x) => x.id) };',
            allowed=[store("count_calls"), store("list_customers")])
    assert "delete_customer" not in ex.result["counts"]["byTool"], ex.describe()
    assert {"C004", "C005"} <= set(ex.result["ids"])
    assert_alive(c)


def test_garbage_on_stdout_does_not_break_the_stream(ctx: Ctx) -> None:
    c = ctx.client
    code = r"""
const enc = new TextEncoder();
try { await Deno.stdout.write(enc.encode('not json\n{{{\n{"jsonrpc":"2.0","id":1,"result":{}}\n')); } catch (_) {}
console.log('{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}');
return "done";
"""
    run_ts(c, code, timeout_ms=10000)
    assert_alive(c)
    assert {t.name for t in c.list_tools().tools} >= {"executeTypescript", "health"}


def test_deno_exit_is_a_failure(ctx: Ctx) -> None:
    ex = run_ts(ctx.client, 'console.log("before"); Deno.exit(3);', timeout_ms=10000)
    assert not ex.success, ex.describe()
    assert_alive(ctx.client)


def test_memory_bomb_is_contained(ctx: Ctx) -> None:
    code = "const a = []; while (true) a.push(new Array(1 << 20).fill(1.5));"
    ex = run_ts(ctx.client, code, timeout_ms=15000, call_timeout=90)
    assert not ex.success, ex.describe()
    assert_alive(ctx.client)
