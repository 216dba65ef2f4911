"""A worker's life around one execution, as sped up for the benchmark targets: errors escaping at
the very end of the code still count (the end-of-run turn is cheap but not blind), the used worker
is killed and reaped even though the reply no longer waits for it, the pools refill, and a worker
started for a waiting execution (no pool) runs the same programs as a pooled one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import harness
from harness import McpClient, assert_alive, ok, ok_py, run_py, run_ts

pytestmark = pytest.mark.pyodide

# One TypeScript and one Python worker in stock, so counting processes is simple.
SERVER_ENV = {"CODE_EXECUTOR_POOL_SIZE_TYPESCRIPT": "1", "CODE_EXECUTOR_POOL_SIZE_PYTHON": "1"}


def test_errors_escaping_at_the_end_count(stdio_client: McpClient) -> None:
    c = stdio_client
    # A timer due right away, set as the last thing: its error is the execution's.
    ex = run_ts(c, 'setTimeout(() => { throw new Error("late timer"); }, 0);\nreturn 1;')
    assert not ex.success and "late timer" in ex.error, ex.describe()
    # A timer that became due while the code was still busy.
    ex = run_ts(c, 'setTimeout(() => { throw new Error("overdue"); }, 1);\n'
                   'const t = Date.now(); while (Date.now() - t < 20) {}\nreturn 1;')
    assert not ex.success and "overdue" in ex.error, ex.describe()
    # A rejection nobody handles, left by the last statement.
    ex = run_ts(c, 'Promise.reject(new Error("nobody caught me"));\nreturn 1;')
    assert not ex.success and "nobody caught me" in ex.error, ex.describe()
    # Timers that were cleared, or are far from due, do not hold anything up or fail anything.
    ex = ok(c, 'const a = setTimeout(() => { throw new Error("cleared"); }, 0);\nclearTimeout(a);\n'
               'const b = setInterval(() => { throw new Error("cleared interval"); }, 0);\nclearInterval(b);\n'
               'setTimeout(() => { throw new Error("too late to matter"); }, 60000);\n"fine"')
    assert ex.result == "fine", ex.describe()
    # Timers still behave as timers for the code itself.
    ex = ok(c, 'let n = 0;\nconst i = setInterval(() => n++, 1);\n'
               'await new Promise((r) => setTimeout(r, 30));\nclearInterval(i);\nconst seen = n;\n'
               'await new Promise((r) => setTimeout(r, 10));\nreturn [seen > 0, n === seen];')
    assert ex.result == [True, True], ex.describe()
    assert_alive(c)


def _workers(c: McpClient) -> dict[str, list[int]]:
    pid = c.server_pid
    assert pid is not None
    return harness.sandbox_workers(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _full_stock(c: McpClient, timeout: float = 120) -> list[int]:
    """The pids of the stock once both pools are full and nothing else is starting."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counters = c.structured("health", {})["executions"]
        workers = _workers(c)
        if (counters["warmTypescriptWorkers"], counters["warmPythonWorkers"]) == (1, 1) and (
            len(workers["typescript"]), len(workers["python"])
        ) == (1, 1):
            return workers["typescript"] + workers["python"]
        time.sleep(0.1)
    pytest.fail(f"the pools did not fill up: {_workers(c)}")


def test_used_workers_are_reaped_and_the_pools_refill(stdio_client: McpClient) -> None:
    c = stdio_client
    used: list[int] = []
    for _ in range(2):
        stock = _full_stock(c)
        ok(c, 'console.log("ts");')
        ok_py(c, 'print("py")')
        used += stock  # both stock workers ran one execution each
        deadline = time.monotonic() + 30
        while any(_state(pid) != "gone" for pid in stock):  # a zombie ("Z") is not reaped yet
            assert time.monotonic() < deadline, {pid: _state(pid) for pid in stock}
            time.sleep(0.05)
    stock = _full_stock(c)
    assert not set(stock) & set(used), (stock, used)
    # No pooled worker was left stopped (a refill is paused only while an execution runs).
    for pid in stock:
        assert _state(pid) != "T", f"pooled worker {pid} is stopped"
    assert_alive(c)


def test_workers_started_on_demand_run_everything(start_server) -> None:
    """With no pools, each execution starts its worker without the warm-up runs."""
    c = start_server({"CODE_EXECUTOR_POOL_SIZE_TYPESCRIPT": "0", "CODE_EXECUTOR_POOL_SIZE_PYTHON": "0"})
    ex = ok(c, 'const x: number = 2;\nconsole.log("out", { a: [x] });\n[x, { b: "c" }]')
    assert ex.result == [2, {"b": "c"}] and "out { a: [ 2 ] }" in ex.output, ex.describe()
    ex = run_ts(c, 'function f() { throw new TypeError("bad"); }\nf();')
    assert not ex.success and "TypeError: bad" in ex.error, ex.describe()
    ex = ok_py(c, 'import asyncio, json\nawait asyncio.sleep(0)\nprint(json.dumps({"a": 1}))\n{"x": (1, 2.5, None)}')
    assert ex.result == {"x": [1, 2.5, None]} and '{"a": 1}' in ex.output, ex.describe()
    ex = run_py(c, 'def g():\n    raise ValueError("nope")\ng()')
    assert not ex.success and "ValueError: nope" in ex.error and "line 3" in ex.error, ex.describe()
    assert_alive(c)
