"""Resource containment: runaway code is stopped, and the server keeps serving, in both languages.

Over stdio. The module's server runs with a small V8 heap and output cap
(`CODE_EXECUTOR_HEAP_LIMIT_MB=128`, `CODE_EXECUTOR_OUTPUT_LIMIT_BYTES=262144`) so the bombs and
floods end quickly; the concurrency tests start their own servers with
`CODE_EXECUTOR_MAX_CONCURRENT_EXECUTIONS=1` and a queue of 0 or 1.

Every hostile case is followed by a normal execution in the same language that must succeed.
"""

from __future__ import annotations

import json
import time
import re
import uuid
from pathlib import Path

import anyio
import pytest

from harness import (
    McpClient,
    assert_alive,
    assert_alive_py,
    check_exec,
    run_py,
    run_ts,
)

HEAP_MB = 128
OUTPUT_CAP = 256 * 1024
SERVER_ENV = {
    "CODE_EXECUTOR_HEAP_LIMIT_MB": str(HEAP_MB),
    "CODE_EXECUTOR_OUTPUT_LIMIT_BYTES": str(OUTPUT_CAP),
    # Replies show all the host keeps, so that the host's own cap is what these tests see.
    "CODE_EXECUTOR_REPLY_BUDGET_BYTES": str(8 * OUTPUT_CAP),
}
# The end of closed output the worker keeps (UTF-16 units; ASCII here).
OUTPUT_TAIL = 16 * 1024
TAG = uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def client(stdio_client: McpClient) -> McpClient:
    return stdio_client


def marker() -> Path:
    return Path(f"/tmp/code-executor-e2e-spawned-{TAG}-{uuid.uuid4().hex[:6]}")


def sh_cmd(path: Path) -> tuple[str, str]:
    """A shell command that would leave a trace on the host, and the text it would print (a product
    computed by the shell, so it is not in the code we send)."""
    a, b = 98765, 4321
    return f"echo $(({a}*{b})); touch {path}", str(a * b)


def warm_python(client: McpClient) -> None:
    """Timed Python cases: do not also measure Pyodide's start. A first execution starts the
    session's Python process; its lane is ready again right after it (a spare process is only
    kept once Python has been used, so waiting for one before would wait in vain)."""
    ex = run_py(client, "'warm'")
    assert ex.success and ex.result == "warm", ex.describe()


# --------------------------------------------------------------------------------------------
# Infinite loops: killed at the deadline
# --------------------------------------------------------------------------------------------

LOOP_TIMEOUT_MS = 1500
LOOP_BOUND_S = 6.0  # the deadline plus the kill and the report, on a busy 2-core machine

TS_LOOPS = {
    "sync": "while (true) {}",
    # Each callback queues the next and returns nothing: no promise chain grows, so only the
    # deadline can stop it (a chain of promises each resolved with the next ends out of memory).
    "microtask": "const f = () => { queueMicrotask(f); }; f(); await new Promise(() => {});",
}


@pytest.mark.parametrize("case", sorted(TS_LOOPS))
def test_ts_infinite_loop_is_killed(client: McpClient, case: str) -> None:
    ex = run_ts(client, TS_LOOPS[case], timeout_ms=LOOP_TIMEOUT_MS)
    assert not ex.success, ex.describe()
    assert "timed out" in ex.error.lower(), ex.describe()
    assert ex.elapsed < LOOP_BOUND_S, f"took {ex.elapsed:.1f}s to stop a {LOOP_TIMEOUT_MS} ms budget"
    assert_alive(client)


@pytest.mark.pyodide
def test_python_infinite_loop_is_killed(client: McpClient) -> None:
    warm_python(client)
    ex = run_py(client, "while True:\n    pass\n", timeout_ms=LOOP_TIMEOUT_MS)
    assert not ex.success, ex.describe()
    assert "timed out" in ex.error.lower(), ex.describe()
    assert ex.elapsed < LOOP_BOUND_S, f"took {ex.elapsed:.1f}s to stop a {LOOP_TIMEOUT_MS} ms budget"
    assert_alive_py(client)


# --------------------------------------------------------------------------------------------
# Memory bombs
# --------------------------------------------------------------------------------------------


def test_ts_heap_bomb_is_out_of_memory(client: McpClient) -> None:
    ex = run_ts(client, "const a = []; while (true) a.push(new Array(1e6).fill(1));", timeout_ms=30000,
                call_timeout=90)
    assert not ex.success, ex.describe()
    assert "out of memory" in ex.error.lower(), ex.describe()
    assert ex.error.lower().startswith("out of memory"), ex.describe()
    assert ex.elapsed < 25, "the heap bomb ran into the deadline instead of the heap limit: " + ex.describe()
    assert_alive(client)


def test_ts_array_buffer_flood_fails(client: McpClient) -> None:
    """ArrayBuffers live outside the V8 heap: the worker's memory limit must stop them."""
    ex = run_ts(client, "const b = []; while (true) b.push(new Uint8Array(64 * 1024 * 1024).fill(1));",
                timeout_ms=30000, call_timeout=90)
    assert not ex.success, ex.describe()
    assert "timed out" not in ex.error.lower(), "the flood was only stopped by the deadline: " + ex.describe()
    assert ex.elapsed < 25, ex.describe()
    assert_alive(client)


def test_ts_wasm_memory_flood_fails(client: McpClient) -> None:
    code = """
const mems = [];
while (true) { const m = new WebAssembly.Memory({ initial: 1024, maximum: 65536 }); m.grow(15000); mems.push(m); }
"""
    ex = run_ts(client, code, timeout_ms=30000, call_timeout=90)
    assert not ex.success, ex.describe()
    assert "timed out" not in ex.error.lower(), "the flood was only stopped by the deadline: " + ex.describe()
    assert_alive(client)


# `bytearray(2**33)` and `[0] * 10**10` cannot even be sized on Pyodide's 32-bit (wasm32) Python:
# CPython refuses them before allocating (OverflowError: cannot fit 'int' into an index-sized
# integer), so for them an OverflowError is accepted. The other sizes fit and must really fail in
# the allocator (MemoryError). They raise without harming the interpreter, so one execution tries
# them all; the incremental bombs, which may take the worker down, run one per execution.
PY_ALLOCATIONS = {
    "bytearray(2**33)": ("MemoryError", "OverflowError"),
    "[0] * 10**10": ("MemoryError", "OverflowError"),
    "bytearray(2**31 - 1)": ("MemoryError",),
    "[0] * 10**9": ("MemoryError",),
    "b'x' * (2**31 - 2)": ("MemoryError",),
}
PY_BOMBS = {
    "incremental_bytes": "a = []\nwhile True:\n    a.append(bytearray(10**7))",
    "incremental_str": "a = []\nwhile True:\n    a.append('x' * 10**7 + str(len(a)))",
}
MEMORY_ERRORS = ("MemoryError", "out of memory")


@pytest.mark.pyodide
def test_python_huge_allocations_fail(client: McpClient) -> None:
    body = "\n".join(
        f"try:\n    _x = {expr}\n    out[{json.dumps(expr)}] = 'allocated ' + str(len(_x))\n    del _x\n"
        f"except BaseException as e:\n    out[{json.dumps(expr)}] = type(e).__name__"
        for expr in PY_ALLOCATIONS
    )
    ex = run_py(client, f"out = {{}}\n{body}\nout", timeout_ms=60000, call_timeout=90)
    assert ex.success, ex.describe()
    assert set(ex.result) == set(PY_ALLOCATIONS), ex.describe()
    wrong = {k: v for k, v in ex.result.items() if v not in PY_ALLOCATIONS[k]}
    assert not wrong, f"allocations that did not fail with a memory error: {wrong}"
    assert_alive_py(client)


@pytest.mark.pyodide
@pytest.mark.parametrize("case", sorted(PY_BOMBS))
def test_python_memory_bomb_fails(client: McpClient, case: str) -> None:
    ex = run_py(client, PY_BOMBS[case], timeout_ms=60000, call_timeout=90)
    assert not ex.success, ex.describe()
    assert any(k in ex.error for k in MEMORY_ERRORS), "not a memory error: " + ex.describe()
    assert_alive_py(client)


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------


def test_ts_spawn_fails(client: McpClient) -> None:
    path = marker()
    cmd, printed = sh_cmd(path)
    code = f"""
const out = new Deno.Command("/bin/sh", {{ args: ["-c", {json.dumps(cmd)}] }}).outputSync();
return new TextDecoder().decode(out.stdout);
"""
    ex = run_ts(client, code, timeout_ms=10000)
    assert not ex.success, ex.describe()
    assert printed not in ex.everything(), ex.describe()
    assert not path.exists(), "the shell ran on the host"
    assert_alive(client)


def py_spawns(path: Path) -> dict[str, str]:
    cmd, _ = sh_cmd(path)
    c = json.dumps(cmd)
    return {
        "fork": f"import os\npid = os.fork()\nif pid == 0:\n    os.execv('/bin/sh', ['sh', '-c', {c}])\npid",
        "subprocess": f"import subprocess\nsubprocess.run(['/bin/sh', '-c', {c}], capture_output=True).stdout",
        "subprocess_ls": "import subprocess\nsubprocess.run(['ls', '/'], capture_output=True).stdout",
        "os_system": f"import os\nos.system({c})",
        "os_popen": f"import os\nos.popen({c}).read()",
        "posix_spawn": f"import os\nos.posix_spawn('/bin/sh', ['sh', '-c', {c}], {{}})",
        "js_deno_command": f"import js\nfrom pyodide.ffi import to_js\n"
                           f"res = js.Deno.Command.new('/bin/sh', to_js({{'args': ['-c', {c}]}}, dict_converter=js.Object.fromEntries)).outputSync()\n"
                           f"bytes(res.stdout.to_py()).decode()",
    }


@pytest.mark.pyodide
def test_python_spawns_have_no_effect(client: McpClient) -> None:
    """Every way Python has to start a process: each must raise or do nothing (one execution; the
    attempts are independent, and the marker file shows whether any process ran on the host)."""
    path = marker()
    attempts = py_spawns(path)
    _, printed = sh_cmd(path)
    parts = []
    for name, code in attempts.items():
        lines = code.splitlines()
        fn = "async def _attempt():\n" + "".join(f"    {line}\n" for line in lines[:-1]) + f"    return {lines[-1]}\n"
        parts.append(
            fn + f"try:\n    out[{json.dumps(name)}] = 'returned ' + repr(await _attempt())[:300]\n"
            f"except BaseException as e:\n    out[{json.dumps(name)}] = 'raised ' + type(e).__name__ + ': ' + str(e)[:200]\n"
        )
    ex = run_py(client, "out = {}\n" + "".join(parts) + "out", timeout_ms=30000, call_timeout=90)
    everything = ex.everything()
    assert printed not in everything, "a command ran: " + ex.describe()
    assert not path.exists(), "a process ran on the host: " + ex.describe()
    assert ex.success, ex.describe()
    assert set(ex.result) == set(attempts), "not every attempt ran: " + ex.describe()
    # `ls /` would list the host's root.
    ls = ex.result["subprocess_ls"]
    assert not (ls.startswith("returned") and "etc" in ls), "ls ran: " + ex.describe()
    assert_alive_py(client)


# --------------------------------------------------------------------------------------------
# Output floods
# --------------------------------------------------------------------------------------------

SLACK = 1024


def check_capped(ex) -> None:
    """The host kept the output's first OUTPUT_CAP bytes and its end, and said how much it cut."""
    size = len(ex.output.encode())
    assert size <= OUTPUT_CAP + OUTPUT_TAIL + SLACK, f"output is {size} bytes, cap {OUTPUT_CAP}"
    markers = [line[:300] for line in ex.output.splitlines() if line.startswith("[...")]
    assert re.search(r"^\[\.\.\. \d+ of \d+ bytes of output cut here \(past output_limit_bytes, what the host keeps\)[^\]]*\]$", ex.output, re.M), (
        f"success={ex.success} error={str(ex.error)[:2000]!r} time={ex.sc.get('executionTimeMs')} ms, markers={markers}"
    )
    assert size > OUTPUT_CAP, f"output is {size} bytes: capped, not dropped"


@pytest.mark.pyodide
def test_python_output_flood_is_capped(client: McpClient) -> None:
    code = 'import sys\nfor i in range(5000):\n    print("x" * 1000)\nsys.stderr.write("e" * (2 * 1024 * 1024))\n"done"'
    ex = run_py(client, code, timeout_ms=60000, call_timeout=90)
    check_capped(ex)
    assert_alive_py(client)


def test_ts_output_flood_is_capped_by_the_setting(client: McpClient) -> None:
    ex = run_ts(client, 'const line = "x".repeat(999);\nfor (let i = 0; i < 5000; i++) console.log(line);\nreturn 1;',
                timeout_ms=60000, call_timeout=90)
    check_capped(ex)
    assert_alive(client)


# --------------------------------------------------------------------------------------------
# Deep recursion
# --------------------------------------------------------------------------------------------


def test_ts_deep_recursion_is_a_range_error(client: McpClient) -> None:
    ex = run_ts(client, "function f() { return f(); }\nf();")
    assert not ex.success, ex.describe()
    assert "RangeError" in ex.error, ex.describe()
    assert_alive(client)


@pytest.mark.pyodide
def test_python_deep_recursion_is_a_recursion_error(client: McpClient) -> None:
    ex = run_py(client, "def f():\n    return f()\nf()", timeout_ms=30000, call_timeout=90)
    assert not ex.success, ex.describe()
    assert "RecursionError" in ex.error, ex.describe()
    assert_alive_py(client)


@pytest.mark.pyodide
def test_python_recursion_past_the_stack_fails_cleanly(client: McpClient) -> None:
    """With Python's own limit lifted, the recursion exhausts the worker's stack instead: the
    execution must still end with an error, and the server must not care."""
    code = "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return f(n + 1) + 1\nf(0)"
    ex = run_py(client, code, timeout_ms=30000, call_timeout=90)
    assert not ex.success, ex.describe()
    assert "timed out" not in ex.error.lower(), ex.describe()
    assert_alive_py(client)


# --------------------------------------------------------------------------------------------
# Concurrency bound
# --------------------------------------------------------------------------------------------

LONG_MS = 3000
LONG_TS = f'await new Promise((r) => setTimeout(r, {LONG_MS})); return "long";'
QUICK_TS = 'return "quick";'


async def wait_running(c: McpClient, n: int, timeout: float = 30) -> None:
    """Until `health` says `n` executions are running (falls back to a pause if it does not say)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = await c.acall("health", {})
        counters = (r.structured_content or {}).get("executions", {})
        if "running" not in counters:
            await anyio.sleep(1.0)
            return
        if counters["running"] >= n:
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"{n} execution(s) never ran: {counters}")


def timed(c: McpClient, tool: str, args: dict, out: dict, key: str):
    async def go() -> None:
        t0 = time.monotonic()
        raw = await c.acall(tool, args, 60)
        out[key] = check_exec(tool, raw, time.monotonic() - t0)
        out[key + "_done"] = time.monotonic()
    return go


BUSY_ENV = {
    "CODE_EXECUTOR_MAX_CONCURRENT_EXECUTIONS": "1",
    "CODE_EXECUTOR_POOL_SIZE_PYTHON": "0",  # no Python needed beyond admission: spare the CPU
}


def test_full_queue_is_busy_at_once(start_server) -> None:
    c = start_server({**BUSY_ENV, "CODE_EXECUTOR_MAX_QUEUED_EXECUTIONS": "0"})
    out: dict = {}

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(timed(c, "executeTypescript", {"code": LONG_TS}, out, "long"))
            await wait_running(c, 1)
            await timed(c, "executeTypescript", {"code": QUICK_TS}, out, "second")()
            await timed(c, "executePython", {"code": "1"}, out, "second_py")()

    c.run_async(scenario)
    long, second, second_py = out["long"], out["second"], out["second_py"]
    assert long.success and long.result == "long", long.describe()
    for ex in (second, second_py):
        assert not ex.success, "a second execution ran with max_concurrent 1 and no queue: " + ex.describe()
        assert "busy" in ex.error.lower(), ex.describe()
        assert ex.elapsed < 2.0, "the refusal was not immediate: " + ex.describe()
    assert out["second_py_done"] < out["long_done"], "the refusals came only after the long execution"
    # After the first finished, a new one runs.
    assert_alive(c)


def test_queued_execution_waits_and_succeeds(start_server) -> None:
    c = start_server({**BUSY_ENV, "CODE_EXECUTOR_MAX_QUEUED_EXECUTIONS": "1"})
    out: dict = {}

    async def scenario() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(timed(c, "executeTypescript", {"code": LONG_TS}, out, "long"))
            await wait_running(c, 1)
            tg.start_soon(timed(c, "executeTypescript", {"code": QUICK_TS}, out, "queued"))
            await anyio.sleep(0.5)
            # One running and one queued: a third one is refused.
            await timed(c, "executeTypescript", {"code": QUICK_TS}, out, "third")()

    c.run_async(scenario)
    long, queued, third = out["long"], out["queued"], out["third"]
    assert long.success and long.result == "long", long.describe()
    assert queued.success and queued.result == "quick", "the queued execution did not run: " + queued.describe()
    assert out["queued_done"] >= out["long_done"] - 0.05, "the queued execution ran alongside the first"
    assert queued.elapsed > 1.0, "the queued execution did not wait: " + queued.describe()
    assert not third.success and "busy" in third.error.lower(), third.describe()
    assert third.elapsed < 2.0, third.describe()
    assert_alive(c)
