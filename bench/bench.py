#!/usr/bin/env python3
"""Benchmark of code-executor as a client sees it.

    .venv/bin/python bench/bench.py [--iterations N] [--py-iterations M] [--quick] [--transport stdio|http]

Starts `code-executor serve` (stdio by default) with the `time` and `Test-Store` downstream servers in
an isolated temporary HOME/project, then prints:
- client-observed latency (median, p99, ms) of (a) a trivial `console.log(1)` execution and
  (b) an execution making 20 tool calls (20x Test-Store echo, sequential and via Promise.all);
- the byte size of our `tools/list` answer next to the sum of the downstream servers' own
  `tools/list` answers (each measured raw over stdio), and the ratio;
- warm vs cold start of a trivial execution in each language: warm against the default pools
  (sequential calls, each after a 50 ms pause and once `health` reports the pool full again: the
  steady state of a client whose calls come seconds apart), cold against a second server started with
  `CODE_EXECUTOR_POOL_SIZE_TYPESCRIPT=0` and `CODE_EXECUTOR_POOL_SIZE_PYTHON=0` (every call starts
  its worker), with the cold/warm ratios;
- memory (VmHWM = peak RSS, and VmRSS, from /proc) of the idle server process and of each kind of
  pooled, idle worker (the server's `deno` children; Python workers are those whose command line
  says "python");
- the floor: the same client's latency for `health` and `listServers`, tools that start no worker,
  and for each warm/cold row the server's own `executionTimeMs` (from admission to the report), so
  client + transport overhead and the execution itself can be told apart;
- first contact: the client-observed latency of an execution whose one tool call goes to a
  stdio downstream server not yet started (median, p99, min of N fresh servers, default 10: each a
  distinct configured server with its own launch spec, so nothing about it is known or running),
  for mcp-server-time (it speaks 2026-07-28) and for `tests/servers/lifecycle_server.py` (only the
  legacy `initialize`); beside it the server's own start, measured directly with the MCP Python SDK
  client against the same command (spawn to `initialize` answered, and to the first tool call
  answered), and the difference of the medians;
- the machine's load average before and after (timings on a busy machine are not comparable).

Latency is the SDK's `call_tool` alone: the test harness's own contract check of each result
(a JSON-schema validation, which real clients do not do) runs after the clock stops.

Numbers only: nothing here asserts anything about speed. Binary: $CODE_EXECUTOR_BIN (default
target/release/code-executor); runtimes: $CODE_EXECUTOR_RUNTIME_DIR (default target/runtimes).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

import anyio  # noqa: E402
import json  # noqa: E402

import harness  # noqa: E402
from harness import E2EEnv, McpClient  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

TRIVIAL = "console.log(1);"
TRIVIAL_PY = "print(1)"
WARM_PAUSE_S = 0.05
POOL_KEYS = {"executeTypescript": "warmTypescriptWorkers", "executePython": "warmPythonWorkers"}
POOL_SIZE_KEYS = {"warmTypescriptWorkers": "poolSizeTypescript", "warmPythonWorkers": "poolSizePython"}
SEQUENTIAL_20 = """
let n = 0;
for (let i = 0; i < 20; i++) n += (await callMCPTool("mcp__Test-Store__echo", { value: i })).echo;
return n;
"""
PARALLEL_20 = """
const r = await Promise.all(Array.from({ length: 20 }, (_, i) => callMCPTool("mcp__Test-Store__echo", { value: i })));
return r.reduce((a, x) => a + x.echo, 0);
"""


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    k = max(0, math.ceil(p / 100 * len(s)) - 1)
    return s[k]


def wait_for_pool(client: McpClient, key: str, timeout: float = 120.0) -> None:
    """Until `health` reports that pool full: every worker process of that language (the
    session's and the spare, where the server reports them) with all its isolates prepared, none
    still preparing (an isolate preparing beside an execution competes with it, and with the
    client, for the CPU)."""
    language = "typescript" if "Typescript" in key else "python"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counters = client.structured("health", {}).get("executions", {})
        processes = counters.get("workerProcesses")
        count = 1
        if isinstance(processes, dict):
            count = max(1, processes.get(f"{language}Sessions", 0) + processes.get(f"{language}Spare", 0))
        # A server that does not report these: do not wait.
        if counters.get(key, 1) >= count * max(1, counters.get(POOL_SIZE_KEYS[key], 1)):
            return
        time.sleep(0.05)
    raise SystemExit(f"the {key} pool was not full within {timeout:.0f} s")


def timed_call(client: McpClient, tool: str, args: dict) -> tuple[float, object]:
    """One call through the MCP SDK, timed (ms); then the harness's contract check, untimed."""
    assert client.session is not None
    session = client.session

    async def one():
        return await session.call_tool(tool, args)

    t0 = time.perf_counter()
    r = client._portal.call(one)
    elapsed = (time.perf_counter() - t0) * 1000
    client.check_result(tool, r)
    return elapsed, r


class Timings(list):
    """Client-observed ms of a series of calls; `server`: their executionTimeMs."""

    server: list[float]


def measure(
    client: McpClient,
    code: str,
    iterations: int,
    allowed: list[str] | None,
    expect,
    tool: str = "executeTypescript",
    warm: bool = False,
) -> Timings:
    """Client-observed ms of sequential calls. `warm`: before each call, pause 50 ms and wait until
    the pool is full again (every call finds a ready worker and no other one starting)."""
    args = {"code": code}
    if allowed is not None:
        args["allowedTools"] = allowed
    # One warm-up call (lazy downstream connect, first worker) that is not counted.
    client.call(tool, args)
    times = Timings()
    server = []
    for _ in range(iterations):
        if warm:
            time.sleep(WARM_PAUSE_S)
            wait_for_pool(client, POOL_KEYS[tool])
        elapsed, r = timed_call(client, tool, args)
        times.append(elapsed)
        sc = r.structured_content or {}
        if r.is_error or not sc.get("success"):
            raise SystemExit(f"execution failed during the benchmark: {harness.dump(r)}")
        if expect is not None and sc.get("result") != expect:
            raise SystemExit(f"unexpected result {sc.get('result')!r}, wanted {expect!r}")
        server.append(float(sc.get("executionTimeMs", math.nan)))
    times.server = server
    return times


def measure_floor(client: McpClient, tool: str, iterations: int) -> list[float]:
    """Client-observed ms of a tool that starts no worker (after 20 ms pauses, like an execution's)."""
    client.call(tool, {})
    times = []
    for _ in range(iterations):
        time.sleep(0.02)
        elapsed, r = timed_call(client, tool, {})
        if r.is_error:
            raise SystemExit(f"{tool} failed during the benchmark: {harness.dump(r)}")
        times.append(elapsed)
    return times


def memory_snapshot(client: McpClient) -> dict[str, list[dict[str, int]]]:
    """VmHWM/VmRSS (KiB) of the server process and of its pooled workers, by kind."""
    pid = client.server_pid
    if pid is None:
        return {}
    workers = harness.sandbox_workers(pid)
    snap = {"server": [harness.proc_memory(pid)]}
    for kind, pids in workers.items():
        snap[kind] = [m for m in map(harness.proc_memory, pids) if m]
    return snap


def start(e2e: E2EEnv, transport: str, log: Path) -> McpClient | None:
    client = McpClient(transport, e2e, log, call_timeout=120)
    try:
        client.start()
    except Exception as exc:
        print(f"could not start code-executor: {exc}\n{harness.tail(log)}", file=sys.stderr)
        return None
    return client


# First contact: (label, server name prefix, command builder, tool, arguments).
FIRST_CONTACT = (
    ("mcp-server-time (2026-07-28)", "time", lambda: [harness.venv_script("mcp-server-time"), "--local-timezone", "UTC"],
     "get_current_time", {"timezone": "UTC"}),
    ("lifecycle_server (legacy)", "legacy", lambda: [sys.executable, str(harness.SERVERS_DIR / "lifecycle_server.py")],
     "hello", {"name": "bench"}),
)


def fresh_servers(n: int) -> dict[str, dict]:
    """`n` distinct servers of each kind: the same command, each with its own environment entry,
    so no two share a launch spec (and nothing remembered about one applies to another)."""
    config = {}
    for _, prefix, command, _, _ in FIRST_CONTACT:
        cmd = command()
        for i in range(n):
            config[f"{prefix}{i}"] = {"command": cmd[0], "args": cmd[1:], "env": {"BENCH_SAMPLE": f"{time.time_ns()}-{i}"}}
    return config


def sdk_start(cfg: dict, env: dict[str, str], cwd: Path, tool: str, targs: dict, errlog) -> tuple[float, float]:
    """ms from spawning a server's command with the MCP Python SDK client to `initialize`
    answered, and to its first tool call answered."""
    params = StdioServerParameters(command=cfg["command"], args=cfg["args"], env={**env, **cfg["env"]}, cwd=str(cwd))

    async def one() -> tuple[float, float]:
        t0 = time.perf_counter()
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                t1 = time.perf_counter()
                await session.call_tool(tool, targs)
                t2 = time.perf_counter()
        return (t1 - t0) * 1000, (t2 - t0) * 1000

    return anyio.run(one)


def measure_first_contact(
    client: McpClient, config: dict[str, dict], env: dict[str, str], cwd: Path, n: int
) -> dict[str, tuple[Timings, list[float], list[float]]]:
    """Per kind: client-observed ms of an execution making one call to a server not yet started
    (each once the pool is full again: the worker is ready and nothing else is starting), and,
    alternating with it so both see the same machine, the same command's own start through the
    SDK client (to `initialize`, to the first call)."""
    out = {}
    with open(os.devnull, "w") as devnull:
        for label, prefix, _, tool, targs in FIRST_CONTACT:
            times, server, init, first = Timings(), [], [], []
            for i in range(n):
                name = f"{prefix}{i}"
                wait_for_pool(client, "warmTypescriptWorkers")
                time.sleep(WARM_PAUSE_S)
                qualified = f"mcp__{name}__{tool}"
                code = f"return await callMCPTool({json.dumps(qualified)}, {json.dumps(targs)});"
                elapsed, r = timed_call(client, "executeTypescript", {"code": code, "allowedTools": [qualified]})
                sc = r.structured_content or {}
                if r.is_error or not sc.get("success"):
                    raise SystemExit(f"first contact with {name} failed: {harness.dump(r)}")
                times.append(elapsed)
                server.append(float(sc.get("executionTimeMs", math.nan)))
                a, b = sdk_start(config[name], env, cwd, tool, targs, devnull)
                init.append(a)
                first.append(b)
            times.server = server
            out[label] = (times, init, first)
    return out


def fmt_load(load: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def stats_row(label: str, times: list[float], width: int = 30) -> str:
    return (
        f"{label:<{width}} {len(times):>4} {statistics.median(times):>10.1f} {percentile(times, 99):>10.1f} "
        f"{min(times):>10.1f} {max(times):>10.1f}"
    )


def mem_row(label: str, samples: list[dict[str, int]], width: int = 38) -> str:
    if not samples:
        return f"{label:<{width}} {'-':>10} {'-':>10} {'(none found)':>14}"
    hwm = [m.get("VmHWM", 0) / 1024 for m in samples]
    rss = [m.get("VmRSS", 0) / 1024 for m in samples]
    return (
        f"{label:<{width}} {statistics.median(hwm):>10.1f} {statistics.median(rss):>10.1f} "
        f"{len(samples):>14}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=None, help="TypeScript iterations per row (default 30)")
    ap.add_argument("--py-iterations", type=int, default=None,
                    help="Python iterations per row (default 6: each warm one waits for Pyodide to reload)")
    ap.add_argument("--quick", action="store_true", help="fewer iterations (10 TypeScript, 3 Python)")
    ap.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    ap.add_argument("--fresh-servers", type=int, default=10,
                    help="fresh downstream servers of each kind for the first-contact rows (default 10)")
    ap.add_argument("--only-first-contact", action="store_true", help="measure the first-contact rows only")
    args = ap.parse_args()
    if args.iterations is None:
        args.iterations = 10 if args.quick else 30
    if args.py_iterations is None:
        args.py_iterations = 3 if args.quick else 6
    started = time.monotonic()
    load_before = os.getloadavg()

    binary = harness.binary()
    if not binary.exists():
        print(f"code-executor binary not found at {binary} (set CODE_EXECUTOR_BIN)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="code-executor-bench-") as tmp:
        root = Path(tmp)
        first_e2e = E2EEnv(root / "first-contact", servers=())
        first_config = fresh_servers(args.fresh_servers)
        first_e2e.config_path.write_text(json.dumps({"mcpServers": first_config}, indent=2))
        first_client = start(first_e2e, args.transport, root / "server-first-contact.log")
        if first_client is None:
            return 1
        try:
            wait_for_pool(first_client, "warmTypescriptWorkers")
            first_contact = measure_first_contact(
                first_client, first_config, first_e2e.env(), first_e2e.project, args.fresh_servers
            )
            trivial_first = measure(first_client, TRIVIAL, args.iterations, None, None, warm=True)
        finally:
            first_client.close()
        if args.only_first_contact:
            print_first_contact(first_contact, trivial_first, binary, args)
            return 0

        e2e = E2EEnv(root, servers=("time", "Test-Store"))

        # tools/list sizes, raw over stdio.
        ours = harness.raw_stdio_tools_list([str(binary), "serve"], env=e2e.env(), cwd=e2e.project)
        downstream: dict[str, harness.RawToolsList] = {}
        for name, cfg in e2e.server_configs().items():
            env = {"HOME": str(e2e.home), "PATH": e2e.env()["PATH"], **cfg.get("env", {})}
            downstream[name] = harness.raw_stdio_tools_list([cfg["command"], *cfg["args"]], env=env, cwd=e2e.project)

        client = start(e2e, args.transport, root / "server.log")
        if client is None:
            return 1
        try:
            # Idle: the TypeScript spare process's isolates prepared, no execution yet (a Python
            # spare is kept only from Python's first execution on).
            wait_for_pool(client, POOL_KEYS["executeTypescript"])
            time.sleep(0.5)
            idle_mem = memory_snapshot(client)
            echo = ["mcp__Test-Store__echo"]
            floor = {
                "health": measure_floor(client, "health", args.iterations),
                "listServers": measure_floor(client, "listServers", args.iterations),
            }
            rows = [
                ("trivial console.log(1)", measure(client, TRIVIAL, args.iterations, None, None)),
                ("20 tool calls, sequential", measure(client, SEQUENTIAL_20, args.iterations, echo, 190)),
                ("20 tool calls, Promise.all", measure(client, PARALLEL_20, args.iterations, echo, 190)),
            ]
            warm = {
                "TypeScript": measure(client, TRIVIAL, args.iterations, None, None, warm=True),
                "Python": measure(client, TRIVIAL_PY, args.py_iterations, None, None, tool="executePython", warm=True),
            }
            for key in POOL_KEYS.values():
                wait_for_pool(client, key)
            time.sleep(0.5)
            end_mem = memory_snapshot(client)
        finally:
            client.close()

        cold_e2e = E2EEnv(root / "cold", servers=("time", "Test-Store"), extra_env={
            "CODE_EXECUTOR_POOL_SIZE_TYPESCRIPT": "0",
            "CODE_EXECUTOR_POOL_SIZE_PYTHON": "0",
        })
        cold_client = start(cold_e2e, args.transport, root / "server-cold.log")
        if cold_client is None:
            return 1
        try:
            time.sleep(0.5)
            cold_idle_mem = memory_snapshot(cold_client)
            cold = {
                "TypeScript": measure(cold_client, TRIVIAL, args.iterations, None, None),
                "Python": measure(cold_client, TRIVIAL_PY, args.py_iterations, None, None, tool="executePython"),
            }
        finally:
            cold_client.close()

    load_after = os.getloadavg()
    print(f"code-executor benchmark: {binary}, transport {args.transport}, {args.iterations} iterations")
    print(f"load average (1, 5, 15 min) on {os.cpu_count()} CPUs: before {fmt_load(load_before)}, after {fmt_load(load_after)}")
    print()
    print(f"{'floor: no worker':<30} {'median ms':>10} {'p99 ms':>10} {'min ms':>10} {'max ms':>10}")
    for tool, times in floor.items():
        print(f"{tool:<30} {statistics.median(times):>10.1f} {percentile(times, 99):>10.1f} "
              f"{min(times):>10.1f} {max(times):>10.1f}")
    print()
    print(f"{'execution':<30} {'median ms':>10} {'p99 ms':>10} {'min ms':>10} {'max ms':>10}")
    for label, times in rows:
        print(
            f"{label:<30} {statistics.median(times):>10.1f} {percentile(times, 99):>10.1f} "
            f"{min(times):>10.1f} {max(times):>10.1f}"
        )
    print()
    total = sum(d.size for d in downstream.values())
    ntools = sum(len(d.tools) for d in downstream.values())
    print(f"{'tools/list answer':<30} {'bytes':>10} {'tools':>10}")
    print(f"{'code-executor':<30} {ours.size:>10} {len(ours.tools):>10}")
    for name, d in downstream.items():
        print(f"{'  downstream ' + name:<30} {d.size:>10} {len(d.tools):>10}")
    print(f"{'  downstream total':<30} {total:>10} {ntools:>10}")
    print(f"{'ratio ours / downstream':<30} {ours.size / total:>10.3f}")

    print()
    print("warm vs cold start, trivial execution (console.log(1) / print(1)), sequential calls:")
    print(f"  warm: default pools (TypeScript 2, Python 1); before each call a {WARM_PAUSE_S * 1000:.0f} ms pause, then a wait")
    print("        until `health` reports the pool full again, no worker still starting (waits not counted)")
    print("  cold: a server with CODE_EXECUTOR_POOL_SIZE_TYPESCRIPT=0 and CODE_EXECUTOR_POOL_SIZE_PYTHON=0")
    print("  (p99 is the nearest-rank percentile: with few iterations it is the maximum)")
    print()
    print("  (server ms: the server's own executionTimeMs, admission to report, whole milliseconds)")
    print()
    print(f"{'execution':<30} {'n':>4} {'median ms':>10} {'p99 ms':>10} {'min ms':>10} {'max ms':>10} {'server ms':>10}")
    for lang in ("TypeScript", "Python"):
        for kind, d in (("warm", warm), ("cold", cold)):
            print(stats_row(f"{lang} {kind}", d[lang]) + f" {statistics.median(d[lang].server):>10.1f}")
    print()
    med = {(lang, kind): statistics.median(d[lang]) for lang in warm for kind, d in (("warm", warm), ("cold", cold))}
    p99 = {(lang, kind): percentile(d[lang], 99) for lang in warm for kind, d in (("warm", warm), ("cold", cold))}
    print(f"{'ratio':<30} {'median':>10} {'p99':>10}")
    for lang in ("TypeScript", "Python"):
        print(f"{lang + ' cold / warm':<30} {med[(lang, 'cold')] / med[(lang, 'warm')]:>10.1f} "
              f"{p99[(lang, 'cold')] / p99[(lang, 'warm')]:>10.1f}")
    for kind in ("warm", "cold"):
        print(f"{'Python / TypeScript, ' + kind:<30} {med[('Python', kind)] / med[('TypeScript', kind)]:>10.1f} "
              f"{p99[('Python', kind)] / p99[('TypeScript', kind)]:>10.1f}")

    print()
    print("memory (MiB, from /proc/<pid>/status; median over processes of a kind)")
    print(f"{'process':<38} {'VmHWM':>10} {'VmRSS':>10} {'processes':>14}")
    if not idle_mem:
        print("  (server process not found)")
    else:
        print(mem_row("server, idle, pools full", idle_mem["server"]))
        print(mem_row("server, idle, no pools (cold server)", cold_idle_mem.get("server", [])))
        print(mem_row("server, after the benchmark", end_mem.get("server", [])))
        print(mem_row("TypeScript worker, pooled, idle", idle_mem["typescript"]))
        print(mem_row("Python worker, pooled, idle", idle_mem["python"]))
        print(mem_row("  the same, after the benchmark: TS", end_mem.get("typescript", [])))
        print(mem_row("  the same, after the benchmark: Python", end_mem.get("python", [])))
        other = idle_mem.get("other", []) + end_mem.get("other", [])
        if other:
            print(mem_row("other deno children (snapshot maker)", other))
        ts, py = idle_mem["typescript"], idle_mem["python"]
        if ts and py:
            ratio = statistics.median(m["VmHWM"] for m in py) / statistics.median(m["VmHWM"] for m in ts)
            print(f"{'Python / TypeScript worker VmHWM':<38} {ratio:>10.1f}")
    print()
    print_first_contact(first_contact, trivial_first, binary, args)
    print()
    print(f"total benchmark time {time.monotonic() - started:.0f} s")
    return 0


def print_first_contact(first_contact, trivial, binary, args) -> None:
    print(f"first call to a new stdio downstream server (median of {args.fresh_servers} fresh servers), {binary}:")
    print("  call: an execution making one tool call to a configured server not yet started, client-observed")
    print("  start: the same command spawned by the MCP Python SDK client, to `initialize` answered /")
    print("         to its first tool call answered (the server's own start: the floor), alternating with the calls")
    print(f"  load average now: {fmt_load(os.getloadavg())}")
    print()
    print(f"{'':<40} {'n':>4} {'median ms':>10} {'p99 ms':>10} {'min ms':>10} {'max ms':>10}")
    print(stats_row("trivial execution, warm (for reference)", trivial, 40))
    for label, (times, init, first) in first_contact.items():
        print(label)
        print(stats_row("  first call through code-executor", times, 40))
        print(stats_row("  server start: spawn to initialize", init, 40))
        print(stats_row("  server start: spawn to first call", first, 40))
        print(f"{'  first call - start to first call':<40} {'':>4} {statistics.median(times) - statistics.median(first):>10.1f}")
        print(f"{'  first call - start to initialize':<40} {'':>4} {statistics.median(times) - statistics.median(init):>10.1f}")


if __name__ == "__main__":
    sys.exit(main())
