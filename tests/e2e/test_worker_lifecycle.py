"""Worker processes and isolates around executions: errors escaping at the very end of the code
still count (the end-of-run turn is cheap but not blind); a client session takes the spare worker
process of a language, a new spare is started over HTTP, and the session keeps its process; over
stdio (one session) no spare is kept beside the session's process until it nears its retirement;
a Python process started for a waiting execution serves it on a single-use lane; each
execution's isolate is ended once it has reported (the process's threads do not pile up) and the
process prepares the next; a process with no prepared isolates (no pool) runs the same programs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import harness
from harness import McpClient, assert_alive, ok, ok_py, run_py, run_ts

pytestmark = pytest.mark.pyodide

# One prepared isolate per process, so counting is simple.
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


def _threads(pid: int) -> int:
    return int(Path(f"/proc/{pid}/status").read_text().split("Threads:")[1].split()[0])


def _wait_for(what: str, check, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    pytest.fail(f"{what} within {timeout:.0f} s")


def test_a_session_takes_the_spare_process_and_keeps_it(start_server) -> None:
    """A spare TypeScript process waits from the start; Python's only from the language's first
    execution on (its process holds about 200 MiB). A server of its own, over HTTP (its process
    is then known exactly): nothing ran in it before."""
    c = start_server(SERVER_ENV, transport="http")

    def processes():
        return c.structured("health", {})["executions"]["workerProcesses"]

    def spares():
        procs = processes()
        workers = _workers(c)
        if procs["typescriptSpare"] == 1 and len(workers["typescript"]) == 1:
            return workers
        return None

    first = _wait_for("no spare TypeScript process", spares)
    assert first["python"] == [] and processes()["pythonSpare"] == 0, (first, processes())
    ts = ok(c, "Deno.pid").result
    py = ok_py(c, "import js\njs.Deno.pid").result
    assert ts in first["typescript"], (ts, first)
    # A new spare per language, besides the session's own processes.
    both = _wait_for(
        "no new spare after the session took one",
        lambda: (lambda w: w if len(w["typescript"]) == 2 and len(w["python"]) == 2 else None)(_workers(c)),
    )
    assert ts in both["typescript"] and py in both["python"], both
    procs = _wait_for(
        "the new spares are not ready",
        lambda: (lambda p: p if (p["typescriptSpare"], p["pythonSpare"]) == (1, 1) else None)(processes()),
    )
    assert (procs["typescriptSessions"], procs["pythonSessions"]) == (1, 1), procs
    # The session keeps its process; each execution's isolate ends with it.
    threads = _threads(ts)
    for _ in range(20):
        assert ok(c, "Deno.pid").result == ts
    assert ok_py(c, "import js\njs.Deno.pid").result == py
    _wait_for(
        "the isolates of ended executions still run",
        lambda: _threads(ts) <= threads + 2,
        timeout=20,
    )
    counters = _wait_for(
        "the process did not prepare the next isolate",
        lambda: (lambda e: e if e["warmTypescriptWorkers"] >= 2 else None)(c.structured("health", {})["executions"]),
        timeout=30,
    )
    assert counters["warmTypescriptWorkers"] >= 2, counters  # the session's process and the spare
    assert_alive(c)


def test_over_stdio_a_spare_waits_only_for_the_sessions_next_process(start_server) -> None:
    """Over stdio the one client session is the only one that could take a spare: one waits before
    its first execution; once the session has its process, none is kept (each would hold 75-160
    MiB for nothing) until that process nears its retirement (90% of its executions: here 9 of
    10), when its successor starts; the session then moves on to it, and again no spare is kept."""
    c = start_server({**SERVER_ENV, "CODE_EXECUTOR_WORKER_PROCESS_EXECUTIONS": "10"})

    def processes():
        return c.structured("health", {})["executions"]["workerProcesses"]

    first = _wait_for(
        "no spare TypeScript process before the first execution",
        lambda: (lambda w: w if processes()["typescriptSpare"] == 1 and len(w["typescript"]) == 1 else None)(_workers(c)),
    )
    ts = ok(c, "Deno.pid").result
    assert first["typescript"] == [ts], (ts, first)
    py = ok_py(c, "import js\njs.Deno.pid").result
    time.sleep(3)  # several times what a spare takes to start
    procs, workers = processes(), _workers(c)
    assert (procs["typescriptSpare"], procs["pythonSpare"]) == (0, 0), procs
    assert workers["typescript"] == [ts] and workers["python"] == [py], workers
    # Executions 2 to 9 of the session's TypeScript process: its successor starts as the 9th ends.
    for _ in range(8):
        assert ok(c, "Deno.pid").result == ts
    successor = _wait_for(
        "no successor started as the session's process neared its retirement",
        lambda: (lambda w: [p for p in w["typescript"] if p != ts] if len(w["typescript"]) == 2 else None)(_workers(c)),
    )
    _wait_for("the successor is not ready", lambda: processes()["typescriptSpare"] == 1)
    assert ok(c, "Deno.pid").result == ts  # the 10th, its last
    assert ok(c, "Deno.pid").result == successor[0]
    time.sleep(3)
    assert processes()["typescriptSpare"] == 0, processes()
    assert _wait_for("the retired process is still there", lambda: _workers(c)["typescript"] == successor)
    assert_alive(c)


def test_a_process_that_ran_its_share_goes_without_waiting_for_another_execution(start_server) -> None:
    """A process is retired once it ran its share of executions even when none follows (the
    periodic sweep, every 5 s): it does not live on beside its successor until the session's next
    execution. The successor stays ready, and takes that next execution."""
    c = start_server({**SERVER_ENV, "CODE_EXECUTOR_WORKER_PROCESS_EXECUTIONS": "3"})
    pids = {ok(c, "Deno.pid").result for _ in range(3)}
    assert len(pids) == 1, pids
    (first,) = pids
    successor = _wait_for(
        "the process that ran its share is still there, or no successor",
        lambda: (lambda w: w if first not in w and len(w) == 1 else None)(_workers(c)["typescript"]),
        timeout=15,
    )
    assert ok(c, "Deno.pid").result == successor[0]
    assert_alive(c)


def _resident_mib(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def test_a_process_resting_with_memory_its_work_left_is_replaced_by_a_fresh_one(start_server) -> None:
    """V8 keeps the pages of the heaps it freed: after an execution that built a large heap, the
    process holds far more than a fresh one while it runs nothing. Once it has rested (1 s), it
    is retired, and the session's next execution runs in a fresh process holding what a fresh
    one holds. (V8 sometimes gives the pages back first: then the process rightly stays, and the
    heap is built again, up to three times.)"""
    c = start_server(SERVER_ENV)
    big_heap = "const a = [];\nfor (let i = 0; i < 60; i++) a.push(Array.from({ length: 100000 }, (_, j) => ({ j })));\na.length"
    pid = ok(c, "Deno.pid").result
    fresh = _resident_mib(pid)
    for _ in range(3):
        pid = ok(c, "Deno.pid").result
        assert ok(c, big_heap).result == 60
        if _resident_mib(pid) < fresh + 64:
            continue  # already given back: nothing to retire it for

        def retired_or_given_back():
            workers = _workers(c)["typescript"]
            if pid not in workers:
                return ("retired", workers) if len(workers) == 1 else None
            return ("given back", workers) if _resident_mib(pid) < fresh + 48 else None

        outcome, workers = _wait_for("the process neither retired nor gave its heap back", retired_or_given_back, timeout=60)
        if outcome == "retired":
            assert ok(c, "Deno.pid").result == workers[0]
            assert _resident_mib(workers[0]) < fresh + 48, (fresh, _resident_mib(workers[0]))
            assert_alive(c)
            return
    pytest.fail("V8 gave the heap back each time: no process rested holding it (the test saw no retirement)")


def test_a_python_process_started_for_an_execution_serves_it_on_a_single_use_lane(start_server) -> None:
    """The first execution, which waited for its process, runs on a lane that takes no baseline
    and ends after it: afterwards the process holds the one lane of its stock (a reused lane
    would be ready again beside the one started when it was taken), nothing the first execution
    left is seen, and later executions run on reused lanes."""
    c = start_server(SERVER_ENV)

    def ready() -> int:
        return c.structured("health", {})["executions"]["warmPythonWorkers"]

    ex = ok_py(c, "import json\njson.planted = 'first'\nimport js\njs.Deno.pid")
    py = ex.result
    _wait_for("the process's first reusable lane is not ready", lambda: ready() >= 1)
    time.sleep(2)  # a reused first lane would be ready again long before
    assert ready() == 1, ready()
    ex = ok_py(c, "import json, js\n[getattr(json, 'planted', None), js.Deno.pid]")
    assert ex.result == [None, py], ex.describe()
    for i in range(3):
        assert ok_py(c, f"{i} * 2").result == i * 2
    _wait_for("the reused lane is not ready again", lambda: ready() >= 1, timeout=20)
    assert _workers(c)["python"] == [py], _workers(c)
    assert_alive(c)


def test_workers_started_on_demand_run_everything(start_server) -> None:
    """With no pools (no spare process, no prepared isolate), each execution waits for its own."""
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
