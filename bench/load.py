#!/usr/bin/env python3
"""Load benchmark of code-executor: throughput, latency and cost under concurrent executions.

    .venv/bin/python bench/load.py [--transport stdio|http|both] [--quick] [--duration-scale X]

For each transport (default `both`: stdio first, then HTTP) it starts one `code-executor serve`
(stdio: a child speaking over its stdin/stdout; HTTP: `serve --http` on a free loopback port) with
the `Test-Store` downstream server in an isolated temporary HOME/project (harness.E2EEnv), connects
ONE MCP client session (harness.McpClient, the official MCP Python SDK) and runs these workloads,
each for a fixed number of executions:

    workload                       in flight   executions (default; --quick ÷4, --duration-scale ×X)
    TypeScript, trivial            1, 4, 16    200, 400, 400
    TypeScript, 5 tool calls       16          200
    Python, trivial                1, 4, 16    200, 400, 400

"N in flight": N asyncio tasks sharing the one ClientSession, each sending its next `call_tool` as
soon as its previous reply came back (what one agent issuing parallel tool calls looks like); at 1
in flight the calls are back to back. A workload never issues fewer executions than it has tasks.

Every execution carries its own fresh UUID and every reply is checked for its own answer:
- trivial TypeScript: `const t = "<uuid>"; console.log(t); t`, trivial Python:
  `t = "<uuid>"\\nprint(t)\\nt`: `result` must be the token and `output` must contain it;
- tool calls (allowedTools ["mcp__Test-Store__echo"]): five sequential `callMCPTool` echoes of
  "<uuid>:0" ... "<uuid>:4", then `console.log(t)`; `result` must be the five echoes joined with "|".
A reply is *lost* when the call raised (a transport error, or no reply within 120 s), or came back
with `isError`, `success: false` or no structuredContent; it is *mismatched* when it came back
successful but without its own answer (the printed detail says whether it carried another
request's token). Lost and mismatched replies are printed loudly and make the exit status 1 (after
everything is printed); so do failed warm-up executions and a server that does not start.

Per workload it prints: executions, wall seconds (first request sent to last reply received),
throughput (executions / wall), client-observed latency p50/p95/p99 (ms, nearest rank, of every
call that returned a reply; the clock runs around the SDK's `call_tool` alone, the checks run after
it stops; harness's JSON-schema contract check is not run), lost, mismatched, and:
- CPU per execution (ms) of the server's process tree: the server's utime+stime+cutime+cstime from
  /proc/<pid>/stat (cutime/cstime hold the children it has reaped, e.g. finished workers) plus
  utime+stime+cutime+cstime of every live descendant (a recursive walk of /proc/<pid>/task/*/children),
  sampled before and after the workload, the difference divided by the executions. A child that
  exited during the workload and was not yet reaped by the time of the second sample may be in
  neither sample (its CPU is then missed); that is accepted. Printed for the whole tree and excluding the
  downstream servers (descendants whose command line runs tests/servers/*.py or mcp-server-*, and
  their own descendants): the server plus its sandbox workers. Also the CPU per execution of this
  client process (all its threads), as the client shares the machine with the server.
- peak RSS (MiB) of the server tree: a background thread sums VmRSS over the server and its
  descendants every 50 ms during the workload and keeps the maximum, excluding downstream servers
  and with them.
Before each workload: a few warm-up executions (checked, not counted), then a wait until `health`
reports the server idle: no running or queued executions (read defensively from
structuredContent.executions: keys named running*/queued*, at any depth), then at most 3 s for its
warm pools (keys named warm*/ready*) to reach their pool size (poolSize*), or to stop growing, then
at most 15 s until the server and its workers are quiet (under 3% of a core over 0.3 s), so that
lanes prepared in the background are not counted in the workload's CPU.
Once after start-up (waiting up to 60 s for the pools): idle memory, the sum of VmRSS of the server
and its sandbox workers (downstream servers excluded; a sum of RSS counts shared pages, such as the
Deno binary's, once per process, so the sum of PSS is printed beside it); then the first
TypeScript and the first Python execution of the session (client-observed latency, target for
Python ≤ 350 ms).

Targets are printed beside the figures with ✓/✗, for information only: TypeScript ≥ 300 exec/s at
16 in flight with p99 ≤ 100 ms, ≥ 150 exec/s at 1 in flight with p50 ≤ 4 ms, ≥ 150 exec/s with
five tool calls at 16 in flight; Python ≥ 100 exec/s at 4 in flight, back-to-back p50 ≤ 8 ms; CPU
per execution (excluding downstream servers) ≤ 5 ms for TypeScript workloads, ≤ 10 ms for Python;
idle memory ≤ 100 MiB; 0 lost, 0 mismatched.
Nothing here asserts anything about speed. Also printed: the binary, `git rev-parse --short HEAD`,
the machine's load average before and after (figures from a busy machine are not comparable).

Binary: $CODE_EXECUTOR_BIN (default target/release/code-executor); runtimes:
$CODE_EXECUTOR_RUNTIME_DIR (default target/runtimes); $CODE_EXECUTOR_CACHE_DIR is passed through.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

import anyio  # noqa: E402

import harness  # noqa: E402
from harness import E2EEnv, McpClient  # noqa: E402

CALL_TIMEOUT_S = 120.0
SAMPLE_INTERVAL_S = 0.05
POOL_WAIT_S = 3.0
STARTUP_POOL_WAIT_S = 60.0
BUSY_WAIT_S = 120.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
ECHO = harness.store("echo")
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MAX_EXAMPLES = 5


# --------------------------------------------------------------------------------------------
# Workloads
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """An informational target: `value op bound`, op being "<=" or ">="."""

    op: str
    bound: float

    @property
    def symbol(self) -> str:
        return "≤" if self.op == "<=" else "≥"

    def met(self, value: float) -> bool:
        return value <= self.bound if self.op == "<=" else value >= self.bound

    def cell(self, value: float, digits: int = 1) -> str:
        if math.isnan(value):
            return f"- {self.symbol}{self.bound:g}"
        return f"{value:.{digits}f} {'✓' if self.met(value) else '✗'} {self.symbol}{self.bound:g}"


@dataclass(frozen=True)
class Workload:
    label: str
    tool: str
    concurrency: int
    executions: int  # default count, before --quick / --duration-scale
    warmup: int
    # args: the call's arguments for a token; expect: the `result` its reply must carry
    args: Callable[[str], dict[str, Any]]
    expect: Callable[[str], str]
    cpu_target: Target
    targets: dict[str, Target] = field(default_factory=dict)  # "throughput", "p50", "p99"


def ts_args(token: str) -> dict[str, Any]:
    return {"code": f"const t = {json.dumps(token)}; console.log(t); t"}


def py_args(token: str) -> dict[str, Any]:
    return {"code": f"t = {json.dumps(token)}\nprint(t)\nt"}


def tools_args(token: str) -> dict[str, Any]:
    code = (
        f"const t = {json.dumps(token)};\n"
        "const echoes = [];\n"
        "for (let i = 0; i < 5; i++) {\n"
        f"  echoes.push((await callMCPTool({json.dumps(ECHO)}, {{ value: `${{t}}:${{i}}` }})).echo);\n"
        "}\n"
        "console.log(t);\n"
        'echoes.join("|")'
    )
    return {"code": code, "allowedTools": [ECHO]}


def same_token(token: str) -> str:
    return token


def five_echoes(token: str) -> str:
    return "|".join(f"{token}:{i}" for i in range(5))


TS_CPU = Target("<=", 5)
PY_CPU = Target("<=", 10)
WORKLOADS = (
    Workload("TypeScript, 1 in flight", "executeTypescript", 1, 200, 5, ts_args, same_token, TS_CPU,
             {"throughput": Target(">=", 150), "p50": Target("<=", 4)}),
    Workload("TypeScript, 4 in flight", "executeTypescript", 4, 400, 8, ts_args, same_token, TS_CPU),
    Workload("TypeScript, 16 in flight", "executeTypescript", 16, 400, 16, ts_args, same_token, TS_CPU,
             {"throughput": Target(">=", 300), "p99": Target("<=", 100)}),
    Workload("TS, 5 tool calls, 16 in flight", "executeTypescript", 16, 200, 16, tools_args, five_echoes, TS_CPU,
             {"throughput": Target(">=", 150)}),
    Workload("Python, 1 in flight", "executePython", 1, 200, 4, py_args, same_token, PY_CPU,
             {"p50": Target("<=", 8)}),
    Workload("Python, 4 in flight", "executePython", 4, 400, 8, py_args, same_token, PY_CPU,
             {"throughput": Target(">=", 100)}),
    Workload("Python, 16 in flight", "executePython", 16, 400, 16, py_args, same_token, PY_CPU),
)
IDLE_MEMORY_TARGET = Target("<=", 100)
# The first execution of a language in the client's session, once the server's pools are ready.
FIRST_EXECUTION_TARGETS = {"executeTypescript": None, "executePython": Target("<=", 350)}
ZERO = Target("<=", 0)


def check_reply(workload: Workload, token: str, result: Any, issued: set[str]) -> tuple[str, str]:
    """("ok" | "lost" | "mismatched", detail) of one reply to the execution carrying `token`."""
    sc = result.structured_content
    if not isinstance(sc, dict):
        return "lost", f"no structuredContent: {harness.dump(result, 300)}"
    if result.is_error or sc.get("success") is not True:
        return "lost", f"isError={result.is_error}, success={sc.get('success')!r}, error={str(sc.get('error'))[:300]!r}"
    want = workload.expect(token)
    shown = want if len(want) <= 80 else want[:77] + "..."
    output = sc.get("output")
    if sc.get("result") == want and isinstance(output, str) and token in output:
        return "ok", ""
    others = sorted(set(UUID_RE.findall(json.dumps(sc))) & issued - {token})
    carried = f"carries the token of another request ({', '.join(others[:3])}); " if others else ""
    return "mismatched", (
        f"{carried}expected result {shown!r} and the token in output, got result "
        f"{str(sc.get('result'))[:200]!r}, output {str(output)[:200]!r}"
    )


# --------------------------------------------------------------------------------------------
# The server's process tree, from /proc
# --------------------------------------------------------------------------------------------


def is_downstream(argv: list[str]) -> bool:
    """A downstream MCP server: a test server (tests/servers/*.py) or an `mcp-server-*` command."""
    servers = str(harness.SERVERS_DIR) + os.sep
    return any(a.startswith(servers) or Path(a).name.startswith("mcp-server-") for a in argv[:3])


def process_tree(root: int) -> list[tuple[int, bool]]:
    """(pid, is downstream) of `root` and every live descendant, at any depth (harness.child_pids
    lists direct children only, so the walk recurses); a downstream server's descendants count
    as downstream."""
    out = [(root, False)]
    stack = [(pid, False) for pid in harness.child_pids(root)]
    while stack:
        pid, downstream = stack.pop()
        downstream = downstream or is_downstream(harness.proc_cmdline(pid))
        out.append((pid, downstream))
        stack.extend((child, downstream) for child in harness.child_pids(pid))
    return out


def proc_cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of a process, in clock ticks (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15])
    except (OSError, ValueError, IndexError):
        return 0


def proc_rss_kib(pid: int) -> int:
    return harness.proc_memory(pid).get("VmRSS", 0)


def proc_pss_kib(pid: int) -> int:
    """Pss (RSS with each shared page divided among the processes mapping it), in KiB (0 if unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_pss_mib(root: int) -> float:
    """Sum of Pss (MiB) of the tree without downstream servers."""
    return sum(proc_pss_kib(pid) for pid, downstream in process_tree(root) if not downstream) / 1024


def tree_sums(root: int, measure) -> tuple[float, float]:
    """`measure(pid)` summed over the whole tree, and over the tree without downstream servers."""
    total = excl = 0
    for pid, downstream in process_tree(root):
        value = measure(pid)
        total += value
        if not downstream:
            excl += value
    return total, excl


def tree_cpu_s(root: int) -> tuple[float, float]:
    """CPU seconds of the whole tree, and of the tree without downstream servers."""
    total, excl = tree_sums(root, proc_cpu_ticks)
    return total / CLK_TCK, excl / CLK_TCK


def tree_rss_mib(root: int) -> tuple[float, float]:
    """Sum of VmRSS (MiB) of the tree without downstream servers, and of the whole tree."""
    total, excl = tree_sums(root, proc_rss_kib)
    return excl / 1024, total / 1024


class PeakRss(threading.Thread):
    """Samples the tree's summed VmRSS every 50 ms until stopped; keeps the maxima."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root = root
        self.peak_excl = 0.0
        self.peak_total = 0.0
        self._stop_event = threading.Event()

    def sample(self) -> None:
        excl, total = tree_rss_mib(self.root)
        self.peak_excl = max(self.peak_excl, excl)
        self.peak_total = max(self.peak_total, total)

    def run(self) -> None:
        self.sample()
        while not self._stop_event.wait(SAMPLE_INTERVAL_S):
            self.sample()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self.sample()


# --------------------------------------------------------------------------------------------
# Idle: health's execution counters
# --------------------------------------------------------------------------------------------


def flat_numbers(value: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a JSON object, keyed by dotted path."""
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(flat_numbers(v, f"{prefix}{k}."))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[prefix[:-1]] = float(value)
    return out


def leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1].lower()


def pool_name(key: str) -> str | None:
    """"warmTypescriptWorkers" / "readyPython" -> "typescript" / "python"; None for other keys."""
    m = re.fullmatch(r"(?:warm|ready)_?(.*?)_?(?:workers?)?", leaf(key))
    return m.group(1) if m else None


def counters(client: McpClient) -> dict[str, float]:
    return flat_numbers(client.structured("health", {}).get("executions") or {})


def pools(c: dict[str, float]) -> dict[str, tuple[float, float | None]]:
    """Warm pool key -> (warm workers, pool size if reported)."""
    sizes = {leaf(k)[len("poolsize"):].strip("_"): v for k, v in c.items() if leaf(k).startswith("poolsize")}
    return {k: (v, sizes.get(pool_name(k) or "")) for k, v in c.items() if pool_name(k) is not None}


def wait_idle(client: McpClient, pool_wait: float) -> dict[str, float]:
    """Until no execution is running or queued, then at most `pool_wait` s until every warm pool is
    full (or, for a pool whose size is not reported, has not grown for 1 s). Returns the last counters."""
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        c = counters(client)
        busy = sum(v for k, v in c.items() if leaf(k).startswith(("running", "queued")))
        if busy <= 0:
            break
        if time.monotonic() > deadline:
            print(f"  (warning: health still reports {busy:g} running/queued after {BUSY_WAIT_S:.0f} s)")
            return c
        time.sleep(0.05)
    start = last_change = time.monotonic()
    last = pools(c)
    while last:
        now = time.monotonic()
        if all(size is not None and warm >= size for warm, size in last.values()):
            break
        if all(size is None for _, size in last.values()) and now - last_change >= 1.0:
            break
        if now - start >= pool_wait:
            break
        time.sleep(0.05)
        c = counters(client)
        current = pools(c)
        if any(current.get(k, (0, None))[0] > last.get(k, (0, None))[0] for k in current):
            last_change = time.monotonic()
        last = current
    return c


QUIET_WINDOW_S = 0.3
QUIET_SHARE = 0.03
QUIET_WAIT_S = 15.0


def wait_quiet(server_pid: int) -> None:
    """Until the server and its workers (downstream servers excluded) use less than QUIET_SHARE of
    one core over QUIET_WINDOW_S, at most QUIET_WAIT_S: lanes a process prepares in the background
    (a Python process refilling its lanes, a spare taking its baseline) would otherwise be counted
    in the CPU of the next workload."""
    deadline = time.monotonic() + QUIET_WAIT_S
    last = tree_cpu_s(server_pid)[1]
    while time.monotonic() < deadline:
        time.sleep(QUIET_WINDOW_S)
        now = tree_cpu_s(server_pid)[1]
        if now - last < QUIET_SHARE * QUIET_WINDOW_S:
            return
        last = now
    print(f"  (warning: the server still used CPU after {QUIET_WAIT_S:.0f} s of waiting for it to be quiet)")


def describe_pools(c: dict[str, float]) -> str:
    p = pools(c)
    if not p:
        return "(health reports no warm pools)"
    return ", ".join(f"{k} {w:g}" + (f"/{s:g}" if s is not None else "") for k, (w, s) in p.items())


# --------------------------------------------------------------------------------------------
# Driving a workload
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    workload: Workload
    executions: int = 0
    wall_s: float = math.nan
    latencies_ms: list[float] = field(default_factory=list)
    lost: int = 0
    mismatched: int = 0
    examples: list[str] = field(default_factory=list)
    warmup_problems: int = 0
    cpu_tree_ms: float = math.nan
    cpu_excl_ms: float = math.nan
    cpu_client_ms: float = math.nan
    peak_rss_excl: float = math.nan
    peak_rss_total: float = math.nan

    @property
    def throughput(self) -> float:
        return self.executions / self.wall_s if self.wall_s > 0 else math.nan

    def percentile(self, p: float) -> float:
        """Nearest-rank percentile of the latencies (ms)."""
        if not self.latencies_ms:
            return math.nan
        s = sorted(self.latencies_ms)
        return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    lost: int = 0
    mismatched: int = 0
    examples: list[str] = field(default_factory=list)


async def drive(client: McpClient, workload: Workload, n: int, concurrency: int, issued: set[str]) -> tuple[Tally, float]:
    """`n` executions by `concurrency` tasks over the client's one session; returns them and the
    wall seconds from the first request to the last reply."""
    session = client.session
    assert session is not None
    tally = Tally()
    remaining = n

    def problem(kind: str, detail: str) -> None:
        if kind == "lost":
            tally.lost += 1
        else:
            tally.mismatched += 1
        if len(tally.examples) < MAX_EXAMPLES:
            tally.examples.append(f"{kind}: {detail}")

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            token = str(uuid.uuid4())
            issued.add(token)
            args = workload.args(token)
            t0 = time.perf_counter()
            try:
                with anyio.fail_after(CALL_TIMEOUT_S + 10):
                    result = await session.call_tool(workload.tool, args, read_timeout_seconds=CALL_TIMEOUT_S)
            except Exception as exc:  # a transport error or a timeout: lost
                problem("lost", f"{type(exc).__name__}: {str(exc)[:300]}")
                continue
            tally.latencies_ms.append((time.perf_counter() - t0) * 1000)
            kind, detail = check_reply(workload, token, result, issued)
            if kind != "ok":
                problem(kind, detail)

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return tally, time.perf_counter() - t0


def run_workload(client: McpClient, server_pid: int, workload: Workload, n: int, issued: set[str]) -> Run:
    run = Run(workload, executions=n)
    warm, _ = client.run_async(drive, client, workload, workload.warmup, min(workload.concurrency, workload.warmup), issued)
    run.warmup_problems = warm.lost + warm.mismatched
    run.examples.extend(f"warm-up {e}" for e in warm.examples)
    wait_idle(client, POOL_WAIT_S)
    wait_quiet(server_pid)

    sampler = PeakRss(server_pid)
    cpu_before = tree_cpu_s(server_pid)
    client_before = time.process_time()
    sampler.start()
    tally, run.wall_s = client.run_async(drive, client, workload, n, workload.concurrency, issued)
    client_after = time.process_time()
    cpu_after = tree_cpu_s(server_pid)
    sampler.stop()

    run.latencies_ms = tally.latencies_ms
    run.lost, run.mismatched = tally.lost, tally.mismatched
    run.examples.extend(tally.examples)
    run.cpu_tree_ms = (cpu_after[0] - cpu_before[0]) * 1000 / n
    run.cpu_excl_ms = (cpu_after[1] - cpu_before[1]) * 1000 / n
    run.cpu_client_ms = (client_after - client_before) * 1000 / n
    run.peak_rss_excl, run.peak_rss_total = sampler.peak_excl, sampler.peak_total
    return run


# --------------------------------------------------------------------------------------------
# One transport
# --------------------------------------------------------------------------------------------


@dataclass
class TransportResult:
    transport: str
    ok: bool
    runs: list[Run] = field(default_factory=list)
    idle_excl: float = math.nan
    idle_total: float = math.nan
    idle_pss: float = math.nan
    idle_pools: str = ""
    first_ms: dict[str, float] = field(default_factory=dict)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    seconds: float = 0.0
    log_tail: str = ""

    @property
    def problems(self) -> int:
        return sum(r.lost + r.mismatched + r.warmup_problems for r in self.runs)


def counts(args: argparse.Namespace, workload: Workload) -> int:
    n = workload.executions * args.duration_scale / (4 if args.quick else 1)
    return max(workload.concurrency, round(n))


def run_transport(transport: str, root: Path, args: argparse.Namespace) -> TransportResult:
    res = TransportResult(transport, ok=False, load_before=os.getloadavg())
    started = time.monotonic()
    e2e = E2EEnv(root / transport, servers=("Test-Store",))
    log = root / f"server-{transport}.log"
    client = McpClient(transport, e2e, log, call_timeout=CALL_TIMEOUT_S)
    print(f"[{transport}] starting code-executor ...", flush=True)
    try:
        client.start()
    except Exception as exc:
        print(f"!!! could not start code-executor over {transport}: {exc}\n{harness.tail(log)}", file=sys.stderr)
        return res
    try:
        pid = client.server_pid
        if pid is None:
            print(f"!!! [{transport}] the server process was not found", file=sys.stderr)
            return res
        c = wait_idle(client, STARTUP_POOL_WAIT_S)
        time.sleep(0.5)
        res.idle_excl, res.idle_total = tree_rss_mib(pid)
        res.idle_pss = tree_pss_mib(pid)
        res.idle_pools = describe_pools(c)
        # The first execution of each language in the session (checked), once the pools are ready.
        for tool, make in (("executeTypescript", ts_args), ("executePython", py_args)):
            token = str(uuid.uuid4())
            t0 = time.monotonic()
            raw = client.call(tool, make(token), timeout=CALL_TIMEOUT_S)
            res.first_ms[tool] = (time.monotonic() - t0) * 1000
            sc = raw.structured_content or {}
            if sc.get("result") != token:
                raise RuntimeError(f"the first {tool} did not return its own answer: {sc}")
        # A language's first execution asks for its spare process: the workloads start once it
        # is up, not beside its start.
        wait_idle(client, STARTUP_POOL_WAIT_S)
        issued: set[str] = set()
        for workload in WORKLOADS:
            n = counts(args, workload)
            print(f"[{transport}] {workload.label}: {n} executions ...", flush=True)
            run = run_workload(client, pid, workload, n, issued)
            res.runs.append(run)
            if run.lost or run.mismatched or run.warmup_problems:
                print(f"[{transport}]   !!! {run.lost} lost, {run.mismatched} mismatched, "
                      f"{run.warmup_problems} failed warm-up", flush=True)
        res.ok = True
    except Exception as exc:
        print(f"!!! [{transport}] the benchmark failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        res.log_tail = client.log_tail(3000)
        client.close()
        res.load_after = os.getloadavg()
        res.seconds = time.monotonic() - started
    return res


# --------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------


def fmt(value: float, digits: int = 1) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def cell(value: float, target: Target | None, digits: int = 1) -> str:
    return target.cell(value, digits) if target else fmt(value, digits)


def count_cell(value: int) -> str:
    return f"{value} ✓" if value == 0 else f"{value} ✗ !!!"


def fmt_load(load: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def git_head() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=harness.REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=harness.REPO,
                               capture_output=True, text=True).stdout.strip()
        return head + (" (work tree modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "(unknown)"


def print_transport(res: TransportResult, binary: Path) -> None:
    print()
    print(f"=== code-executor load benchmark, transport {res.transport} "
          f"({'completed' if res.ok else 'DID NOT COMPLETE'}, {res.seconds:.0f} s) ===")
    print(f"binary {binary}, git HEAD {git_head()}")
    print(f"load average (1, 5, 15 min) on {os.cpu_count()} CPUs: before {fmt_load(res.load_before)}, "
          f"after {fmt_load(res.load_after)}")
    if not math.isnan(res.idle_excl):
        print(f"idle memory (VmRSS, server + sandbox workers, downstream servers excluded): "
              f"{IDLE_MEMORY_TARGET.cell(res.idle_excl)} MiB; with downstream servers {res.idle_total:.1f} MiB")
        print(f"  (the same as a sum of PSS, shared pages divided among the processes mapping them: "
              f"{fmt(res.idle_pss)} MiB)")
        print(f"  warm pools then: {res.idle_pools}")
    for tool, ms in res.first_ms.items():
        print(f"first {tool} of the session (client-observed, pools ready): "
              f"{cell(ms, FIRST_EXECUTION_TARGETS.get(tool), 0)} ms")
    if not res.runs:
        return
    print()
    w = 31
    print("throughput and client-observed latency (ms; nearest-rank percentiles)")
    print(f"{'workload':<{w}} {'n':>5} {'wall s':>7} {'exec/s':>16} {'p50 ms':>16} {'p95 ms':>8} "
          f"{'p99 ms':>16} {'lost':>8} {'mismatched':>10}")
    for r in res.runs:
        t = r.workload.targets
        print(f"{r.workload.label:<{w}} {r.executions:>5} {fmt(r.wall_s, 2):>7} "
              f"{cell(r.throughput, t.get('throughput')):>16} {cell(r.percentile(50), t.get('p50')):>16} "
              f"{fmt(r.percentile(95)):>8} {cell(r.percentile(99), t.get('p99')):>16} "
              f"{count_cell(r.lost):>8} {count_cell(r.mismatched):>10}")
    print()
    print("cost: CPU ms per execution (server tree, before/after /proc samples) and peak RSS (MiB, 50 ms samples)")
    print(f"{'workload':<{w}} {'CPU tree':>9} {'CPU excl. downstream':>21} {'client CPU':>11} "
          f"{'peak RSS excl. ds':>18} {'peak RSS tree':>14}")
    for r in res.runs:
        print(f"{r.workload.label:<{w}} {fmt(r.cpu_tree_ms):>9} {cell(r.cpu_excl_ms, r.workload.cpu_target):>21} "
              f"{fmt(r.cpu_client_ms):>11} {fmt(r.peak_rss_excl):>18} {fmt(r.peak_rss_total):>14}")
    examples = [(r.workload.label, e) for r in res.runs for e in r.examples]
    if examples:
        print()
        print(f"!!! problems over {res.transport} (at most {MAX_EXAMPLES} examples per workload):")
        for label, e in examples:
            print(f"  {label}: {e}")
        print(f"  server log (tail):\n{res.log_tail}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    ap.add_argument("--quick", action="store_true", help="a quarter of the executions")
    ap.add_argument("--duration-scale", type=float, default=1.0, metavar="X",
                    help="multiply every workload's executions by X (default 1)")
    args = ap.parse_args()
    if args.duration_scale <= 0:
        ap.error("--duration-scale must be positive")

    binary = harness.binary()
    if not binary.exists():
        print(f"code-executor binary not found at {binary} (set CODE_EXECUTOR_BIN)", file=sys.stderr)
        return 2
    transports = ["stdio", "http"] if args.transport == "both" else [args.transport]
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="code-executor-load-") as tmp:
        for transport in transports:
            results.append(run_transport(transport, Path(tmp), args))

    for res in results:
        print_transport(res, binary)
    print()
    print(f"load average overall: before {fmt_load(load_before)}, after {fmt_load(os.getloadavg())}")
    failed = [r.transport for r in results if not r.ok]
    lost = sum(x.lost for r in results for x in r.runs)
    mismatched = sum(x.mismatched for r in results for x in r.runs)
    warmup = sum(x.warmup_problems for r in results for x in r.runs)
    if failed or lost or mismatched or warmup:
        print(f"!!! FAILED: {lost} lost, {mismatched} mismatched, {warmup} failed warm-up executions"
              + (f"; did not complete: {', '.join(failed)}" if failed else "") + " !!!")
        return 1
    print("every reply accounted for: 0 lost, 0 mismatched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
