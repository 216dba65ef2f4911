"""Load driver of the scale-out test (tests/docker/scale-out.sh): many concurrent MCP clients
through the relay of a compose appliance running several executor replicas, one replica killed
mid-load.

    python scale_out.py URL TOKEN_FILE CONTAINER_ID... [--clients N] [--executions N]

Each client is the official MCP Python SDK over streamable HTTP with one kept-alive connection.
It repeats: `health` (whose `instance` names the replica its connection is carried to), then
`executeTypescript` printing a token made for that execution alone; the reply must carry that
token and nothing else. When a share of the executions is done, the replica serving the most
clients at that moment is killed (`docker kill`; CONTAINER_ID... are the executor containers,
whose host names are their short ids). A client whose call fails records the error, counts the
execution as lost and opens a new session (a new connection, which the relay carries to a live
replica). Idle clients, connected before the load and silent through it, call again after the
kill: a connection kept alive to the killed replica must not be kept pinned to it.

Prints one `PASS name: detail` or `FAIL name: detail` line per check, then the figures, and
exits 1 if any check failed. Checks:
  - every reply carries its own token (wrong = 0);
  - every replica serves (replies per replica > 0), and each surviving replica's own execution
    counters (from `health`) rose by the replies it was credited with, plus at most those
    credited to the killed replica that arrived after the kill (they were carried elsewhere);
  - the kill happened mid-load (executions in flight on the killed replica);
  - errors only for executions in flight on the killed replica at the kill (lost = 0 outside
    it), each a clear error that arrived promptly (no timeout, no hang);
  - idle kept-alive clients of the killed replica are served by another one afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

# A call slower than this is a hang (trivial executions queue for seconds at most).
CALL_TIMEOUT = 60.0
# An error of an execution in flight at the kill must arrive within this many seconds of it.
PROMPT_ERROR = 15.0

parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("token_file")
parser.add_argument("containers", nargs="+")
parser.add_argument("--clients", type=int, default=36)
parser.add_argument("--executions", type=int, default=240)
parser.add_argument("--kill-at", type=float, default=0.4, help="share of executions done before the kill")
parser.add_argument("--idle-clients", type=int, default=6)
args = parser.parse_args()
TOKEN = open(args.token_file).read().strip()
URL_HOST_PORT = (httpx2.URL(args.url).host, httpx2.URL(args.url).port)
failures = 0


def report(name: str, passed: bool, detail: str) -> None:
    global failures
    failures += 0 if passed else 1
    print(f"{'PASS' if passed else 'FAIL'} {name}: {' '.join(detail.split())[:700]}", flush=True)


def describe(e: BaseException) -> str:
    """An exception in a line: the first leaf of an exception group (anyio's task groups wrap)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"


@dataclass
class Outcome:
    """One execution as its client saw it."""

    client: int
    instance: str | None  # the replica the client's connection was carried to (from `health`)
    phase: str  # where it ended: "done", or the call that failed: initialize, health, execute
    started: float
    ended: float
    executing: float = 0.0  # when `executeTypescript` was sent
    ok: bool = False
    wrong: str = ""  # what came back instead of the execution's own token
    error: str = ""


@dataclass
class Run:
    outcomes: list[Outcome] = field(default_factory=list)
    # Per client: the replica of its connection, and whether an execution of it is under way.
    instance: dict[int, str | None] = field(default_factory=dict)
    busy: dict[int, bool] = field(default_factory=dict)
    kill_started: float = 0.0
    kill_at: float | None = None  # when `docker kill` returned: the replica is dead
    killed: str | None = None
    in_flight_on_killed: int = 0  # calls under way on it (or on a connection not yet known)
    killed_event: asyncio.Event = field(default_factory=asyncio.Event)


@asynccontextmanager
async def session() -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    timeout = httpx2.Timeout(CALL_TIMEOUT, read=CALL_TIMEOUT)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(args.url, http_client=http) as (read, write):
            async with ClientSession(read, write) as s:
                with anyio.fail_after(CALL_TIMEOUT):
                    await s.initialize()
                yield s


async def health(s: ClientSession) -> dict[str, Any]:
    with anyio.fail_after(CALL_TIMEOUT):
        result = await s.call_tool("health", {})
    return dict(result.structured_content or {})


async def execute(s: ClientSession) -> tuple[bool, str]:
    """Runs trivial TypeScript printing a fresh token; (reply carried exactly it, what came)."""
    token = uuid.uuid4().hex
    with anyio.fail_after(CALL_TIMEOUT):
        result = await s.call_tool("executeTypescript", {"code": f"console.log({json.dumps(token)})"})
    reply = dict(result.structured_content or {})
    output = str(reply.get("output", "")).strip()
    if reply.get("success") is True and output == token:
        return True, ""
    return False, json.dumps(reply)[:200]


async def client(i: int, count: int, run: Run, total: int) -> None:
    remaining = count
    while remaining > 0:
        # A new session's connection may be carried to any replica: unknown until `health`.
        run.instance[i], run.busy[i] = None, True
        outcome = Outcome(i, None, "initialize", time.monotonic(), 0.0)
        try:
            async with session() as s:
                while remaining > 0:
                    run.busy[i] = True
                    outcome = Outcome(i, run.instance.get(i), "health", time.monotonic(), 0.0)
                    run.instance[i] = outcome.instance = (await health(s)).get("instance")
                    outcome.phase, outcome.executing = "execute", time.monotonic()
                    outcome.ok, outcome.wrong = await execute(s)
                    outcome.phase, outcome.ended = "done", time.monotonic()
                    run.outcomes.append(outcome)
                    run.busy[i] = False
                    remaining -= 1
                    await maybe_kill(run, total)
        except Exception as e:  # noqa: BLE001 - every failure is recorded and judged
            outcome.ended, outcome.error = time.monotonic(), describe(e)
            run.outcomes.append(outcome)
            run.busy[i] = False
            remaining -= 1


async def maybe_kill(run: Run, total: int) -> None:
    """Kills, once, the replica serving the most busy clients when the share is reached."""
    if run.kill_at is not None or len(run.outcomes) < args.kill_at * total:
        return
    run.kill_at, run.kill_started = float("inf"), time.monotonic()  # under way
    busy = [run.instance.get(c) for c, b in run.busy.items() if b]
    candidates = [c[:12] for c in args.containers]
    run.killed = max(candidates, key=lambda inst: busy.count(inst))
    proc = await asyncio.create_subprocess_exec(
        "docker", "kill", run.killed, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        report("docker kill", False, err.decode())
    run.kill_at = time.monotonic()
    # In flight at the kill: calls under way on it, or on a new connection (whose replica is not
    # known yet) when it died. Calls that ended before are done; later ones must all succeed.
    lost = {o.client for o in run.outcomes if o.error and o.instance in (run.killed, None)}
    run.in_flight_on_killed = len(lost) + sum(
        1 for c, b in run.busy.items() if b and c not in lost and run.instance.get(c) in (run.killed, None)
    )
    run.killed_event.set()


async def counters_by_instance(wanted: set[str], attempts: int = 15) -> dict[str, int]:
    """Each replica's own execution count (completed + failed), asked through fresh sessions
    (each a new connection, which the relay carries to the next replica in turn)."""
    seen: dict[str, int] = {}
    for _ in range(attempts):
        if wanted <= seen.keys():
            break
        try:
            async with session() as s:
                h = await health(s)
        except Exception:  # noqa: BLE001 - a replica being killed; asked again
            continue
        # A session takes two of the relay's turns (its POSTs and the SDK's GET stream), so
        # with two replicas it would land on the same one each time: one connection that sends
        # nothing moves the turn on.
        _, shift = await asyncio.open_connection(*URL_HOST_PORT)
        shift.close()
        ex = h.get("executions", {})
        seen[h.get("instance")] = int(ex.get("completed", 0)) + int(ex.get("failed", 0))
    return seen


async def idle_client(i: int, run: Run, results: dict[int, tuple[str | None, str | None, bool, str]]) -> None:
    """Connects before the load, stays silent through it and the kill, then calls again."""
    try:
        async with session() as s:
            before = (await health(s)).get("instance")
            await run.killed_event.wait()
            await asyncio.sleep(2)
            ok, wrong = await execute(s)
            after = (await health(s)).get("instance")
            results[i] = (before, after, ok, wrong)
    except Exception as e:  # noqa: BLE001
        results[i] = (None, None, False, describe(e))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


async def main() -> None:
    hosts = {c[:12] for c in args.containers}
    before = await counters_by_instance(hosts)
    run = Run()
    idle: dict[int, tuple[str | None, str | None, bool, str]] = {}
    idle_tasks = [asyncio.create_task(idle_client(i, run, idle)) for i in range(args.idle_clients)]
    await asyncio.sleep(3)  # the idle clients are connected (sequentially: one per replica in turn)
    per_client = [args.executions // args.clients + (i < args.executions % args.clients) for i in range(args.clients)]
    started = time.monotonic()
    await asyncio.gather(*(client(i, n, run, args.executions) for i, n in enumerate(per_client)))
    wall = time.monotonic() - started
    if not run.killed_event.is_set():
        run.killed_event.set()
    await asyncio.gather(*idle_tasks)
    survivors = hosts - {run.killed}
    after = await counters_by_instance(survivors)

    outs = run.outcomes
    oks = [o for o in outs if o.ok]
    wrong = [o for o in outs if o.phase == "done" and not o.ok]
    errors = [o for o in outs if o.error]
    killed = run.killed
    kill_at = run.kill_at or float("inf")
    # An error is the loss of an execution in flight on the killed replica if the client's
    # connection was carried to it and the call was under way at the kill.
    in_flight = [o for o in errors if o.instance in (killed, None) and o.started <= kill_at]
    outside = [o for o in errors if o not in in_flight]
    slow = [o for o in in_flight if o.ended - run.kill_started > PROMPT_ERROR or "Timeout" in o.error or not o.error.strip()]
    per_replica = {h: sum(1 for o in oks if o.instance == h) for h in sorted(hosts)}
    idle_ok = [r for r in idle.values() if r[2]]
    latencies = [o.ended - o.executing for o in oks]

    report(
        "every reply carries its own token",
        not wrong and len(oks) > 0,
        f"{len(oks)} replies with their own token, {len(wrong)} wrong" + (f" (first: {wrong[0].wrong})" if wrong else ""),
    )
    report(
        "every replica serves",
        len(hosts) > 1 and all(n > 0 for n in per_replica.values()),
        "replies per replica: " + ", ".join(f"{h}{' (killed)' if h == killed else ''} {n}" for h, n in per_replica.items()),
    )
    own = {h: after.get(h, -1) - before.get(h, 0) for h in sorted(survivors)}
    credited = {h: per_replica[h] + sum(1 for r in idle.values() if r[1] == h and r[2]) for h in sorted(survivors)}
    # A client credits an execution to the replica its `health` named just before. One whose
    # connection died with the killed replica between the two calls reconnects, through the
    # relay, to a survivor: its reply arrives after the kill, credited to the killed replica but
    # counted by a survivor. Those are the only executions a survivor may count beyond its credit.
    moved = sum(1 for o in oks if o.instance == killed and o.ended >= run.kill_started)
    beyond = sum(own[h] - credited[h] for h in survivors)
    report(
        "each surviving replica's own counters match the replies credited to it",
        all(own[h] >= credited[h] for h in survivors) and beyond <= moved,
        "executions counted by the replica / credited: "
        + ", ".join(f"{h} {own[h]}/{credited[h]}" for h in sorted(survivors))
        + f"; {beyond} counted beyond the credits, {moved} replies credited to {killed} arrived after its kill",
    )
    report(
        "a replica killed mid-load",
        killed is not None and run.in_flight_on_killed > 0,
        f"docker kill {killed} after {int(args.kill_at * 100)}% of {args.executions} executions, "
        f"{run.in_flight_on_killed} executions in flight on it",
    )
    report(
        "only the killed replica's in-flight executions are lost",
        not outside and len(in_flight) <= run.in_flight_on_killed,
        f"lost {len(in_flight)} of {run.in_flight_on_killed} in flight on {killed}; lost elsewhere {len(outside)}"
        + (f" (first: {outside[0].instance} {outside[0].phase}, started {outside[0].started - kill_at:+.2f} s"
        f" from the kill: {outside[0].error})" if outside else ""),
    )
    errors_seen = sorted({o.error[:90] for o in in_flight})
    report(
        "each lost execution ends in a clear, prompt error",
        not slow,
        f"{len(in_flight)} errors within {max((o.ended - run.kill_started for o in in_flight), default=0):.1f} s"
        f" of `docker kill` (which took {kill_at - run.kill_started:.1f} s): "
        + "; ".join(errors_seen[:3])
        + (f"; {len(slow)} late or unclear (first: {slow[0].error})" if slow else ""),
    )
    moved = [r for r in idle.values() if r[0] == killed]
    report(
        "kept-alive connections are not pinned to the killed replica",
        len(idle_ok) == len(idle) == args.idle_clients and len(moved) > 0 and all(r[1] != killed for r in moved),
        f"{len(idle_ok)}/{args.idle_clients} idle clients served after the kill; the {len(moved)} on {killed} now on "
        + ", ".join(str(r[1]) for r in moved)
        + "".join(f"; failed: {r[3]}" for r in idle.values() if not r[2]),
    )
    print(
        f"figures: {len(hosts)} replicas, {args.clients} concurrent clients, {len(outs)} executions, "
        f"{len(oks)} replies ({', '.join(f'{h} {n}' for h, n in per_replica.items())}), "
        f"{len(errors)} errors, lost {len(in_flight)} on the killed replica and {len(outside)} elsewhere, "
        f"latency p50 {percentile(latencies, 0.5) * 1000:.0f} ms p99 {percentile(latencies, 0.99) * 1000:.0f} ms, "
        f"throughput {len(oks) / wall:.1f} executions/s over {wall:.1f} s",
        flush=True,
    )


asyncio.run(main())
sys.exit(1 if failures else 0)
