#!/usr/bin/env python3
"""What persistence and PII tokenisation cost, as the client sees it.

    .venv/bin/python bench/persist.py [--n 40]

Starts `code-executor serve` over stdio (the binary `CODE_EXECUTOR_BIN` or target/release) with
no downstream servers, and measures at the client (the MCP Python SDK), one call after another,
the latency of `executeTypescript` for:

- `return <token>` (the baseline);
- writing a 1 KiB file to the workspace, then reading it back (`workspace.writeText/readText`);
- writing and reading 1 MiB;
- importing a saved skill and calling it (`import { echo } from "skills/echo.ts"`);

then, with `pii = "tokenize"` and without, code returning 100 customer records (an email, a card
number, a phone number and an IP address each): latency, the bytes the client received
(`structuredContent` as compact JSON) and the time the server spent (`executionTimeMs`).

Every reply is checked for its own answer. Prints per case: n, p50, p99 (ms, nearest rank) and
the ratio of p50 to the baseline's p50.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from harness import E2EEnv, McpClient, check_exec  # noqa: E402

SKILL = "export function echo(x: string): string { return x; }\n"

RECORDS = """
const people = [];
for (let i = 0; i < 100; i++) {
  people.push({
    id: i,
    email: `customer${i}@example.com`,
    card: "4111 1111 1111 1111",
    phone: "+44 20 7946 0" + String(100 + i).slice(-3),
    ip: `10.0.${i >> 8}.${i & 255}`,
  });
}
return { tag: "TAG", people };
"""


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


def timed(client: McpClient, code: str, check: Callable[[Any], bool]) -> tuple[float, dict[str, Any], int]:
    import time

    t0 = time.monotonic()
    raw = client.call("executeTypescript", {"code": code})
    elapsed = (time.monotonic() - t0) * 1000
    ex = check_exec("executeTypescript", raw, elapsed / 1000)
    if not ex.success or not check(ex.result):
        raise SystemExit(f"unexpected reply: {ex.describe()}")
    visible = len(json.dumps(ex.sc, separators=(",", ":"), ensure_ascii=False).encode())
    return elapsed, ex.sc, visible


def cases() -> dict[str, tuple[str, Callable[[str, Any], bool]]]:
    return {
        "return a value (baseline)": ("return '{t}'", lambda t, r: r == t),
        "write 1 KiB": ("await workspace.writeText('b/{t}.txt', '{t}'.repeat(32)); return '{t}'", lambda t, r: r == t),
        "write + read 1 KiB": (
            "await workspace.writeText('b/small.txt', '{t}'.repeat(32)); return (await workspace.readText('b/small.txt')).slice(0, 32)",
            lambda t, r: r == t,
        ),
        "write + read 1 MiB": (
            "await workspace.writeText('b/big.txt', '{t}' + 'x'.repeat(1024 * 1024 - 32)); return (await workspace.readText('b/big.txt')).slice(0, 32)",
            lambda t, r: r == t,
        ),
        "import a skill": ("import { echo } from 'skills/echo.ts';\nreturn echo('{t}')", lambda t, r: r == t),
    }


def measure(client: McpClient, n: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {}
    for name, (template, check) in cases().items():
        values = []
        for i in range(n + 3):
            token = uuid.uuid4().hex[:32]
            elapsed, _, _ = timed(client, template.replace("{t}", token), lambda r, t=token: check(t, r))
            if i >= 3:  # the first calls warm the worker and the skill
                values.append(elapsed)
        timings[name] = values
    return timings


def pii_case(client: McpClient, n: int, mode: str) -> tuple[list[float], list[float], int]:
    latencies, server = [], []
    visible = 0
    for i in range(n + 3):
        token = uuid.uuid4().hex[:16]
        elapsed, sc, visible = timed(
            client,
            RECORDS.replace("TAG", token),
            lambda r, t=token: isinstance(r, dict) and r.get("tag") == t and len(r.get("people", [])) == 100,
        )
        people = sc["result"]["people"]
        tokenised = people[0]["email"].startswith("[EMAIL_")
        if tokenised != (mode == "tokenize"):
            raise SystemExit(f"pii={mode}: the email came back as {people[0]['email']!r}")
        if i >= 3:
            latencies.append(elapsed)
            server.append(float(sc["executionTimeMs"]))
    return latencies, server, visible


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40, help="measured calls per case (after 3 warm-up calls)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = E2EEnv(root / "plain", servers=())
        with McpClient("stdio", env, root / "plain.log") as client:
            saved = client.call("executeTypescript", {"code": f"return await saveSkill('echo', {json.dumps(SKILL)}, {{description: 'echo'}})"})
            if saved.is_error:
                raise SystemExit(f"saveSkill failed: {saved}")
            timings = measure(client, args.n)
        base = statistics.median(timings["return a value (baseline)"])
        print(f"{'case':<32} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'p50/base':>9}")
        for name, values in timings.items():
            p50, p99 = statistics.median(values), percentile(values, 99)
            print(f"{name:<32} {len(values):>4} {p50:8.1f} {p99:8.1f} {p50 / base:9.2f}")
        print()
        print(f"{'100 records, pii':<32} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'server p50':>10} {'bytes':>8}")
        rows = {}
        for mode in ("off", "tokenize"):
            env = E2EEnv(root / f"pii-{mode}", servers=(), extra_env={"CODE_EXECUTOR_PII": mode})
            with McpClient("stdio", env, root / f"pii-{mode}.log") as client:
                rows[mode] = pii_case(client, args.n, mode)
        for mode, (latencies, server, visible) in rows.items():
            print(
                f"{mode:<32} {len(latencies):>4} {statistics.median(latencies):8.1f} {percentile(latencies, 99):8.1f} "
                f"{statistics.median(server):10.1f} {visible:>8}"
            )
        off, on = (statistics.median(rows[m][0]) for m in ("off", "tokenize"))
        print(f"tokenize/off p50 ratio: {on / off:.2f}")


if __name__ == "__main__":
    main()
