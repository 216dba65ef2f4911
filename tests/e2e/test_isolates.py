"""Executions as fresh isolates of per-session worker processes.

A client session's executions run in one worker process per language, each in a fresh V8 isolate
(a Deno Web Worker) that is terminated when it ends. These tests try to carry a secret from one
execution to the next (or to one running beside it) through every channel the isolates of one
process could share, and must fail: globals and prototypes, module instances, `BroadcastChannel`
(the global and `node:worker_threads`' own), the Cache API and Web Storage, the module loader's
caches (Deno's on disk, its analysis cache in memory), shared memory, timers, random seeds, and
Python's interpreter state. They check that the process boundary follows the client session
(over HTTP: the principal, here two loopback addresses), that a process is replaced after its
share of executions and after a timeout, what a runaway execution does to the ones running beside
it in the same process (nothing, for loops and output floods; for a V8 heap bomb, which ends the
whole process, a clear error), and that the process's data limit is what its executions may use
plus the address space its isolates reserve.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from harness import McpClient, assert_alive, check_exec, ok, ok_py, run_ts

SECRET = "s3cr3t-" + os.urandom(6).hex()

# A short heap and output limit so the bombs end quickly, and a small process lifetime in
# executions for the replacement test (its own server).
SERVER_ENV = {
    "CODE_EXECUTOR_HEAP_LIMIT_MB": "128",
    "CODE_EXECUTOR_OUTPUT_LIMIT_BYTES": "262144",
}


@pytest.fixture(scope="module")
def client(stdio_client: McpClient) -> McpClient:
    return stdio_client


def pid_of(client: McpClient, language: str = "ts") -> int:
    """The worker process an execution of this session runs in, as the code itself sees it."""
    if language == "ts":
        return ok(client, "Deno.pid").result
    # Pyodide's own os.getpid() is a constant; JavaScript's view of the process is the real one.
    return ok_py(client, "import js\njs.Deno.pid").result


def concurrently(client: McpClient, *calls: tuple[str, str, int | None]) -> list:
    """Runs (tool, code, timeoutMs) executions at once in the client's one session."""
    args = []
    for tool, code, timeout_ms in calls:
        a: dict[str, Any] = {"code": code}
        if timeout_ms is not None:
            a["timeoutMs"] = timeout_ms
        args.append((tool, a))
    t0 = time.monotonic()
    results = client.call_many(args, timeout=120)
    return [check_exec(tool, r, time.monotonic() - t0) for (tool, _), r in zip(args, results)]


# --------------------------------------------------------------------------------------------
# One process per session, one isolate per execution
# --------------------------------------------------------------------------------------------


def test_executions_of_a_session_share_a_process_but_never_a_global(client: McpClient) -> None:
    first = ok(client, f"""
globalThis.secret = {json.dumps(SECRET)};
Object.prototype.polluted = {json.dumps(SECRET)};
Array.prototype.extra = () => {json.dumps(SECRET)};
Symbol.for("kept").description;
JSON.parse = () => {json.dumps(SECRET)};
[Deno.pid, performance.timeOrigin]
""")
    second = ok(client, """
[Deno.pid, performance.timeOrigin, typeof globalThis.secret, ({}).polluted ?? null,
 typeof [].extra, JSON.parse("1")]
""")
    assert second.result[0] == first.result[0], "one session's executions share its worker process"
    assert second.result[1] != first.result[1], "each execution starts a fresh isolate"
    assert second.result[2:] == ["undefined", None, "undefined", 1], second.describe()


def test_python_state_does_not_survive_into_the_next_execution(client: McpClient) -> None:
    ok_py(client, f"""
import sys, builtins, random, js
sys.modules["planted"] = type(sys)("planted")
builtins.planted = {json.dumps(SECRET)}
sys.path.append("/planted")
random.seed(1234)
js.globalThis.planted = {json.dumps(SECRET)}
""")
    ex = ok_py(client, """
import sys, builtins, random, js
["planted" in sys.modules, hasattr(builtins, "planted"), "/planted" in sys.path,
 random.Random(1234).random() == random.random(), str(getattr(js.globalThis, "planted", None))]
""")
    assert ex.result == [False, False, False, False, "None"], ex.describe()


def test_random_sources_differ_between_executions(client: McpClient) -> None:
    code = "[Math.random(), Math.random(), crypto.getRandomValues(new Uint32Array(2)).join()]"
    a, b = ok(client, code).result, ok(client, code).result
    assert a[0] != b[0] and a[1] != b[1] and a[2] != b[2], (a, b)
    py = "import random, os\n[random.random(), os.urandom(8).hex()]"
    c, d = ok_py(client, py).result, ok_py(client, py).result
    assert c[0] != d[0] and c[1] != d[1], (c, d)


def test_an_imported_module_is_a_fresh_instance(client: McpClient) -> None:
    ok(client, f'const p = await import("node:path"); p.default.planted = {json.dumps(SECRET)}; p.default.join = () => "x";')
    ex = ok(client, 'const p = await import("node:path"); [p.default.planted ?? null, p.default.join("a", "b")]')
    assert ex.result == [None, "a/b"], ex.describe()


# --------------------------------------------------------------------------------------------
# Channels between isolates of one process
# --------------------------------------------------------------------------------------------


BROADCAST_CHANNEL = """
async function channel(name) {
  const routes = [
    () => globalThis.BroadcastChannel,
    async () => (await import("node:worker_threads")).BroadcastChannel,
    async () => (await (0, eval)("import('node:worker_threads')")).BroadcastChannel,
  ];
  const refusals = [];
  for (const route of routes) {
    try {
      const BC = await route();
      if (typeof BC === "function") return [new BC(name), refusals];
      refusals.push(typeof BC);
    } catch (e) {
      refusals.push(e.message.includes("refused") ? "refused" : e.message);
    }
  }
  return [null, refusals];
}
"""


def test_broadcast_channel_carries_nothing_between_executions(client: McpClient) -> None:
    """BroadcastChannel reaches every isolate of a process: no execution gets one (and its class
    cannot send where Deno's own code reaches it)."""
    listener = BROADCAST_CHANNEL + """
const [bc, refusals] = await channel("ce-test");
let got = null;
if (bc) bc.onmessage = (e) => { got = e.data; };
await new Promise((r) => setTimeout(r, 1500));
bc?.close();
[refusals, got]
"""
    sender = BROADCAST_CHANNEL + f"""
await new Promise((r) => setTimeout(r, 400));
const [bc, refusals] = await channel("ce-test");
let outcome = "no channel";
if (bc) {{ try {{ bc.postMessage({json.dumps(SECRET)}); outcome = "sent"; }} catch (e) {{ outcome = "refused: " + e.message; }} }}
return [refusals, outcome];
"""
    a, b = concurrently(client, ("executeTypescript", listener, None), ("executeTypescript", sender, None))
    assert a.success and b.success, (a.describe(), b.describe())
    assert a.result == [["undefined", "refused", "refused"], None], a.describe()
    assert b.result == [["undefined", "refused", "refused"], "no channel"], b.describe()


def test_the_cache_api_and_web_storage_are_absent(client: McpClient) -> None:
    ex = ok(client, """
const out = [typeof caches, typeof CacheStorage, typeof localStorage, typeof sessionStorage];
try { await caches.open("x"); out.push("opened"); } catch (e) { out.push(e.name); }
out
""")
    assert ex.result == ["undefined", "undefined", "undefined", "undefined", "ReferenceError"], ex.describe()


def test_no_way_out_of_an_isolate_but_its_execution(client: McpClient) -> None:
    ex = ok(client, """
const sab = new SharedArrayBuffer(8);
const out = [typeof Worker];
for (const f of [() => postMessage(sab), () => Object.getPrototypeOf(globalThis).postMessage(sab),
                 () => Object.getPrototypeOf(globalThis).close()]) {
  try { f(); out.push("done"); } catch (e) { out.push(e.message); }
}
out
""")
    assert ex.result == [
        "undefined",
        "postMessage is not available in the sandbox", "postMessage is not available in the sandbox",
        "close is not available in the sandbox",
    ], ex.describe()


def test_the_host_socket_and_its_permissions_are_out_of_reach(client: McpClient) -> None:
    """The supervisor connected to the host with permissions for one socket path, then gave them
    up (and the host removed the path) before any isolate existed: code can neither reach that
    socket nor get the permissions back."""
    ex = ok(client, """
const out = {};
let dir = "/tmp";
try { dir = Deno.cwd().replace(/\\/cwd$/, ""); } catch (e) { out.cwd = e.name; }
const sock = dir + "/host.sock";
for (const [name, d] of [["net", { name: "net" }], ["read", { name: "read", path: sock }],
                         ["write", { name: "write", path: sock }]]) {
  try { out[name] = (await Deno.permissions.query(d)).state; } catch (e) { out[name] = e.name; }
  try { out[name + "Request"] = (await Deno.permissions.request(d)).state; } catch (e) { out[name + "Request"] = e.name; }
}
try { const c = await Deno.connect({ transport: "unix", path: sock }); c.close(); out.connect = "connected"; }
catch (e) { out.connect = e.name; }
out
""")
    result = ex.result
    assert isinstance(result, dict) and result.get("connect") not in (None, "connected"), ex.describe()
    granted = {k: v for k, v in result.items() if v == "granted"}
    assert not granted, f"permissions an isolate holds or got back: {granted}; {ex.describe()}"


def test_the_module_loader_takes_only_what_the_sandbox_offers(client: McpClient) -> None:
    """Deno's module loader keeps what it learns of a module for the whole process, keyed by its
    URL (so by its text for a data: URL): a module loaded before loads measurably faster. An
    execution that could load a data: URL of its choosing could tell whether an earlier one had.
    Only wrappers and node: built-ins may be imported, however the import is built (source
    evaluated at run time is guarded too); the runner's own modules are unique to their
    isolate."""
    url = "data:application/javascript," + json.dumps(f"export const s = '{SECRET}';")[1:-1]
    for code in (
        f"const m = await import({json.dumps(url)}); m.s",
        f"import {{ s }} from {json.dumps(url)};\ns",
        'const u = URL.createObjectURL(new Blob(["export default 1"], {type: "text/javascript"}));\n(await import(u)).default',
        'const m = await import("npm:left-pad"); m',
        'const m = await import("file:///etc/passwd"); m',
        f"const m = await (0, eval)({json.dumps(f'import({json.dumps(url)})')}); m.s",
        f"const m = await new Function({json.dumps(f'return import({json.dumps(url)})')})(); m.s",
        f"const m = await eval({json.dumps(f'import({json.dumps(url)})')}); m.s",
        'const m = await import("node:vm"); m',
    ):
        ex = run_ts(client, code)
        assert not ex.success, ex.describe()
        assert "refused: code in the sandbox may import only wrappers/<name>.ts" in ex.error, ex.describe()
    # What is offered still works, type annotations included (the module path).
    ex = ok(client, 'import { join } from "node:path";\nconst a: string = join("a", "b");\na')
    assert ex.result == "a/b", ex.describe()


def test_nothing_is_written_to_the_process_deno_dir(client: McpClient) -> None:
    pid = pid_of(client)
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    deno_dir = Path(next(e for e in environ if e.startswith(b"DENO_DIR=")).split(b"=", 1)[1].decode())
    ok(client, 'import { join } from "node:path";\ninterface A { x: number }\nconst a: A = { x: 1 };\njoin("a", String(a.x))')
    ok(client, "const v: number[] = [1, 2];\nv.length")
    assert deno_dir.is_dir()
    assert list(deno_dir.rglob("*")) == [], "the worker process wrote to its Deno cache"


def test_timers_of_an_ended_execution_never_fire(client: McpClient) -> None:
    ok(client, f'setInterval(() => console.log("late {SECRET}"), 5);\nsetTimeout(() => console.log("later"), 200);\n1')
    ex = ok(client, 'await new Promise((r) => setTimeout(r, 500));\nconsole.log("second");')
    assert SECRET not in ex.output and "later" not in ex.output, ex.describe()


# --------------------------------------------------------------------------------------------
# Process boundaries
# --------------------------------------------------------------------------------------------


def _pids_from(url: str, local_address: str, n: int) -> list[int]:
    """Runs `n` executions at once from a real client whose connections come from `local_address`
    (a loopback address: without a token, the server's principal is the peer address)."""

    async def main() -> list[int]:
        transport = httpx2.AsyncHTTPTransport(local_address=local_address)
        async with httpx2.AsyncClient(transport=transport, timeout=120) as http_client:
            async with streamable_http_client(url, http_client=http_client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    out: list[int] = []

                    async def one() -> None:
                        r = await session.call_tool("executeTypescript", {"code": "await new Promise((r) => setTimeout(r, 50));\nDeno.pid"})
                        assert r.structured_content and r.structured_content["success"], r
                        out.append(r.structured_content["result"])

                    async with anyio.create_task_group() as tg:
                        for _ in range(n):
                            tg.start_soon(one)
                    return out

    return anyio.run(main)


def test_one_client_session_never_runs_in_another_session_process(start_server) -> None:
    served = start_server(transport="http")
    assert served.url
    first = _pids_from(served.url, "127.0.0.1", 4)
    second = _pids_from(served.url, "127.0.0.2", 4)
    third = _pids_from(served.url, "127.0.0.1", 2)
    assert len(set(first)) == 1 and len(set(second)) == 1, (first, second)
    assert set(first).isdisjoint(second), f"two client sessions shared worker process {set(first) & set(second)}"
    assert set(third) == set(first), "a session keeps its own process"


def test_a_process_is_replaced_after_its_share_of_executions(start_server) -> None:
    c = start_server({"CODE_EXECUTOR_WORKER_PROCESS_EXECUTIONS": "3"})
    pids = [pid_of(c) for _ in range(7)]
    assert len(set(pids[:3])) == 1 and len(set(pids[3:6])) == 1 and pids[6] not in pids[:6], pids
    assert pids[0] != pids[3], pids


def test_a_timeout_replaces_the_process(client: McpClient) -> None:
    before = pid_of(client)
    ex = run_ts(client, "while (true) {}", timeout_ms=1000)
    assert not ex.success and "timed out" in ex.error, ex.describe()
    after = pid_of(client)
    assert after != before, "the process an execution timed out in took another execution"
    deadline = time.monotonic() + 10
    while Path(f"/proc/{before}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{before}").exists() or "Z" in Path(f"/proc/{before}/stat").read_text().split(")")[1][:3], \
        "the retired process still runs"


# --------------------------------------------------------------------------------------------
# What a runaway execution does to the ones beside it in the same process
# --------------------------------------------------------------------------------------------

BESIDE = f'await new Promise((r) => setTimeout(r, 2500));\nconsole.log("beside");\n{json.dumps(SECRET)}'


def test_an_infinite_loop_leaves_the_execution_beside_it_unharmed(client: McpClient) -> None:
    loop, beside = concurrently(
        client, ("executeTypescript", "while (true) {}", 1000), ("executeTypescript", BESIDE, None)
    )
    assert not loop.success and "timed out" in loop.error, loop.describe()
    assert beside.success and beside.result == SECRET and "beside" in beside.output, beside.describe()
    assert_alive(client)


def test_an_output_flood_leaves_the_execution_beside_it_unharmed(client: McpClient) -> None:
    flood, beside = concurrently(
        client,
        ("executeTypescript", 'for (let i = 0; i < 1e6; i++) console.log("x".repeat(1000));', 20000),
        ("executeTypescript", BESIDE, None),
    )
    assert len(flood.output.encode()) <= 262144 + 1024, len(flood.output)
    assert beside.success and beside.result == SECRET and beside.output.strip() == "beside", beside.describe()


def test_a_python_loop_leaves_the_python_execution_beside_it_unharmed(client: McpClient) -> None:
    loop, beside = concurrently(
        client,
        ("executePython", "while True:\n    pass", 2000),
        ("executePython", f"import asyncio\nawait asyncio.sleep(3)\nprint('beside')\n{json.dumps(SECRET)}", None),
    )
    assert not loop.success and "timed out" in loop.error, loop.describe()
    assert beside.success and beside.result == SECRET, beside.describe()


def test_a_heap_bomb_ends_its_process_and_says_so_to_the_execution_beside_it(client: McpClient) -> None:
    """V8 ends the whole process when one isolate's heap is full: the executions running beside
    the bomb in it (all of the same client session) end too, each told why. The next execution
    gets a new process."""
    bomb, beside = concurrently(
        client,
        ("executeTypescript", "await new Promise((r) => setTimeout(r, 300));\nconst a = []; while (true) a.push(new Array(1e6).fill(1));", 30000),
        ("executeTypescript", BESIDE, None),
    )
    assert not bomb.success and bomb.error.startswith("out of memory"), bomb.describe()
    assert not beside.success, beside.describe()
    assert beside.error.startswith("out of memory") and "running 2 executions" in beside.error, beside.describe()
    assert_alive(client)


# --------------------------------------------------------------------------------------------
# The data limit
# --------------------------------------------------------------------------------------------

RESERVATION_MIB = 520  # jail::ISOLATE_RESERVATION_BYTES


def _kib(status: str, key: str) -> int:
    return int(re.search(rf"^{key}:\s+(\d+) kB", status, re.M).group(1))


def test_the_data_limit_is_the_memory_allowed_plus_the_isolates_reservations(client: McpClient) -> None:
    """Each isolate reserves ~520 MiB of address space for its code, counted against RLIMIT_DATA
    though never touched; the host keeps the limit at `worker_memory_mb` plus one reservation per
    isolate the process holds. If Deno's reservation grew, isolates would fail to start; if it
    shrank, executions could use more than `worker_memory_mb`: both show here."""
    pid = pid_of(client)
    time.sleep(1)  # the stock refilled
    limits = Path(f"/proc/{pid}/limits").read_text()
    soft = int(re.search(r"^Max data size\s+(\d+)", limits, re.M).group(1))
    status = Path(f"/proc/{pid}/status").read_text()
    vm_data_mib = _kib(status, "VmData") / 1024
    rss_mib = _kib(status, "VmRSS") / 1024
    worker_mib = 1536
    isolates = (soft / 2**20 - worker_mib) / RESERVATION_MIB
    assert isolates == int(isolates) and 3 <= isolates <= 16, f"limit {soft / 2**20} MiB"
    assert vm_data_mib <= soft / 2**20
    # What is mapped beyond the reservations is what the process really uses, give or take.
    beyond = vm_data_mib - isolates * RESERVATION_MIB
    assert -64 < beyond < rss_mib + 256, f"VmData {vm_data_mib:.0f} MiB for {isolates:.0f} isolates, RSS {rss_mib:.0f} MiB"
