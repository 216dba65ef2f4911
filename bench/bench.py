#!/usr/bin/env python3
"""Benchmark of code-executor as a client sees it.

    .venv/bin/python bench/bench.py [--iterations N] [--transport stdio|http]

Starts `code-executor serve` (stdio by default) with the `time` and `Test-Store` downstream servers in
an isolated temporary HOME/project, then prints:
- client-observed latency (median, p99, ms) of (a) a trivial `console.log(1)` execution and
  (b) an execution making 20 tool calls (20x Test-Store echo, sequential and via Promise.all);
- the byte size of our `tools/list` answer next to the sum of the downstream servers' own
  `tools/list` answers (each measured raw over stdio), and the ratio.

Numbers only: nothing here asserts anything about speed. Binary: $CODE_EXECUTOR_BIN (default
target/release/code-executor); runtimes: $CODE_EXECUTOR_RUNTIME_DIR (default target/runtimes).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

import harness  # noqa: E402
from harness import E2EEnv, McpClient  # noqa: E402

TRIVIAL = "console.log(1);"
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


def measure(client: McpClient, code: str, iterations: int, allowed: list[str] | None, expect) -> list[float]:
    args = {"code": code}
    if allowed is not None:
        args["allowedTools"] = allowed
    # One warm-up call (lazy downstream connect, first worker) that is not counted.
    client.call("executeTypescript", args)
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        r = client.call("executeTypescript", args)
        times.append((time.perf_counter() - t0) * 1000)
        sc = r.structured_content or {}
        if r.is_error or not sc.get("success"):
            raise SystemExit(f"execution failed during the benchmark: {harness.dump(r)}")
        if expect is not None and sc.get("result") != expect:
            raise SystemExit(f"unexpected result {sc.get('result')!r}, wanted {expect!r}")
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    args = ap.parse_args()

    binary = harness.binary()
    if not binary.exists():
        print(f"code-executor binary not found at {binary} (set CODE_EXECUTOR_BIN)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="code-executor-bench-") as tmp:
        root = Path(tmp)
        e2e = E2EEnv(root, servers=("time", "Test-Store"))

        # tools/list sizes, raw over stdio.
        ours = harness.raw_stdio_tools_list([str(binary), "serve"], env=e2e.env(), cwd=e2e.project)
        downstream: dict[str, harness.RawToolsList] = {}
        for name, cfg in e2e.server_configs().items():
            env = {"HOME": str(e2e.home), "PATH": e2e.env()["PATH"], **cfg.get("env", {})}
            downstream[name] = harness.raw_stdio_tools_list([cfg["command"], *cfg["args"]], env=env, cwd=e2e.project)

        client = McpClient(args.transport, e2e, root / "server.log", call_timeout=120)
        try:
            client.start()
        except Exception as exc:
            print(f"could not start code-executor: {exc}\n{harness.tail(root / 'server.log')}", file=sys.stderr)
            return 1
        try:
            echo = ["mcp__Test-Store__echo"]
            rows = [
                ("trivial console.log(1)", measure(client, TRIVIAL, args.iterations, None, None)),
                ("20 tool calls, sequential", measure(client, SEQUENTIAL_20, args.iterations, echo, 190)),
                ("20 tool calls, Promise.all", measure(client, PARALLEL_20, args.iterations, echo, 190)),
            ]
        finally:
            client.close()

    print(f"code-executor benchmark: {binary}, transport {args.transport}, {args.iterations} iterations")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
