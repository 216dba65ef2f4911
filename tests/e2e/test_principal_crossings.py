"""Crossings between HTTP principals (issue 30, crossings 10 and 11), tried against the real
`serve --http` without a token, where each peer address is a principal of its own: one client
(127.0.0.1) and another (127.0.0.2), each driving the wire by hand (`test_tasks.Wire`, protocol
2026-07-28; `source` picks the peer address).

- The workspace and skills belong to a principal: another principal can neither read a file one
  saved nor import, find or describe its skill, and the command line reaches each principal's
  with `--principal`. `workspace_sharing = "project"` shares them again, on purpose.
- Execution slots are shared fairly: a principal that fills its share with spinning executions
  (or with a task) gets its further ones queued, or refused with a clear message when its queue
  is full, while another principal's trivial execution runs at once. "At once" is shown by the
  executions' own clocks (`Date.now()` in the sandbox, one host clock), not by a time threshold:
  the other principal's execution starts before any of the first one's has ended.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import wire_report, E2EEnv, run_cli
from test_tasks import TASKS, Wire

A = "127.0.0.1"
B = "127.0.0.2"
A_NAME = f"http-peer:{A}"
B_NAME = f"http-peer:{B}"


@contextlib.contextmanager
def http_server(root: Path, settings: dict[str, str] | None = None):
    """A `serve --http` process on loopback without a token (the principal is the peer's
    address), no downstream server; yields its port and its environment (for the CLI)."""
    env = {"CODE_EXECUTOR_WORKSPACE_DIR": str(root / "ws"), **(settings or {})}
    with harness.http_server(root, env) as (port, e2e, _):
        yield port, e2e


def client(port: int, source: str) -> Wire:
    """A client at `source` that runs every call in its request (no tasks)."""
    return Wire(port, capabilities={}, source=source)


def run(wire: Wire, code: str, timeout: float = 60, **args: Any) -> dict[str, Any]:
    """`executeTypescript`'s structuredContent."""
    result = wire.call(code, timeout=timeout, **args)
    assert result.get("resultType", "complete") == "complete", result
    return wire_report(result)


def ok(wire: Wire, code: str, **args: Any) -> Any:
    sc = run(wire, code, **args)
    assert sc["success"], sc
    return sc.get("result")


def tool(wire: Wire, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = wire.send("tools/call", {"name": name, "arguments": arguments})
    assert "result" in reply, reply
    return reply["result"]


def cli(e2e: E2EEnv, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(e2e, *args, timeout=60)


def greet(who: str) -> str:
    """A skill's code, as a JavaScript string literal."""
    return json.dumps(f"export function hello(): string {{ return 'hello from {who}'; }}\n")


def test_another_principal_cannot_read_a_principals_workspace_file(tmp_path):
    with http_server(tmp_path) as (port, e2e):
        a, b = client(port, A), client(port, B)
        ok(a, "await workspace.writeText('notes/plan.md', 'the plan of a')")
        assert ok(a, "await workspace.readText('notes/plan.md')") == "the plan of a"
        # The other principal reads nothing there, by any path, nor sees it listed.
        seen = run(b, "await workspace.readText('notes/plan.md')")
        assert not seen["success"] and "nothing at" in seen["error"], seen
        assert ok(b, "(await workspace.list()).entries.map((e) => e.path)") == []
        # Its own file of the same name is its own: the first principal's is untouched.
        ok(b, "await workspace.writeText('notes/plan.md', 'the plan of b')")
        assert ok(b, "await workspace.readText('notes/plan.md')") == "the plan of b"
        assert ok(a, "await workspace.readText('notes/plan.md')") == "the plan of a"
        # Removing everything it has removes only its own.
        ok(b, "await workspace.remove('notes')")
        assert ok(a, "await workspace.readText('notes/plan.md')") == "the plan of a"

        # The command line: `--principal` reaches each one's, the project's holds neither.
        shown = cli(e2e, "workspace", "--principal", A_NAME, "cat", "notes/plan.md")
        assert shown.returncode == 0 and shown.stdout == "the plan of a", shown
        project = cli(e2e, "workspace", "cat", "notes/plan.md")
        assert project.returncode != 0 and "nothing at" in project.stderr, project
        listed = cli(e2e, "workspace", "principals")
        assert listed.returncode == 0 and A_NAME in listed.stdout and B_NAME in listed.stdout, listed
        path = cli(e2e, "workspace", "path", "--principal", A_NAME)
        assert path.returncode == 0 and "/principals/" in path.stdout, path
        assert (Path(path.stdout.strip()) / "notes" / "plan.md").read_text() == "the plan of a"
        # A name in another form is refused; one without a workspace is not created.
        bad = cli(e2e, "workspace", "--principal", "127.0.0.1", "ls")
        assert bad.returncode != 0 and "names no principal" in bad.stderr, bad
        none = cli(e2e, "workspace", "--principal", "http-peer:127.0.0.9", "ls")
        assert none.returncode != 0 and "has no workspace" in none.stderr, none
        assert "127.0.0.9" not in cli(e2e, "workspace", "principals").stdout


def test_another_principal_cannot_import_a_principals_skill(tmp_path):
    with http_server(tmp_path) as (port, e2e):
        a, b = client(port, A), client(port, B)
        saved = ok(a, f"await saveSkill('greet', {greet('a')}, {{description: 'Friendly greetings'}})")
        assert saved["import"] == "skills/greet.ts", saved
        assert ok(a, 'import { hello } from "skills/greet.ts";\nhello()') == "hello from a"
        # Static and dynamic imports, from the other principal, find no such skill.
        for code in (
            'import { hello } from "skills/greet.ts";\nhello()',
            'const { hello } = await import("skills/greet.ts");\nhello()',
        ):
            tried = run(b, code)
            assert not tried["success"] and "no skill named greet" in tried["error"], tried
        # Nor does it find or describe it: not in its searches (the MCP tool and from code).
        found = tool(b, "searchTools", {"query": "friendly greetings", "detail": "full"})
        assert not any(m.get("kind") == "skill" for m in wire_report(found)["matches"]), found
        assert ok(b, 'const r = await searchTools("friendly greetings"); r.matches.filter((m) => m.kind === "skill").length') == 0
        described = tool(b, "getToolSchema", {"name": "skills/greet.ts"})
        assert described["isError"] is True and "no skill named greet" in str(described["content"]), described
        # The first principal still finds its own.
        mine = tool(a, "searchTools", {"query": "friendly greetings"})
        assert wire_report(mine)["matches"][0]["name"] == "skills/greet.ts", mine
        # The other principal's skill of the same name is its own, and replaces nothing.
        ok(b, f"await saveSkill('greet', {greet('b')})")
        assert ok(b, 'import { hello } from "skills/greet.ts";\nhello()') == "hello from b"
        assert ok(a, 'import { hello } from "skills/greet.ts";\nhello()') == "hello from a"
        # The command line shows each principal's skills apart, and the project's has none.
        shown = cli(e2e, "skills", "--principal", A_NAME, "show", "greet")
        assert shown.returncode == 0 and "hello from a" in shown.stdout, shown
        shown = cli(e2e, "skills", "show", "greet", "--principal", B_NAME)
        assert shown.returncode == 0 and "hello from b" in shown.stdout, shown
        project = cli(e2e, "skills", "ls")
        assert project.returncode == 0 and "greet" not in project.stdout, project


def test_with_project_sharing_principals_share_the_workspace_and_skills(tmp_path):
    with http_server(tmp_path, {"CODE_EXECUTOR_WORKSPACE_SHARING": "project"}) as (port, e2e):
        a, b = client(port, A), client(port, B)
        ok(a, "await workspace.writeText('shared.md', 'for everyone')")
        ok(a, f"await saveSkill('greet', {greet('a')})")
        assert ok(b, "await workspace.readText('shared.md')") == "for everyone"
        assert ok(b, 'import { hello } from "skills/greet.ts";\nhello()') == "hello from a"
        # It is the project's workspace: the command line reaches it without `--principal`.
        shown = cli(e2e, "workspace", "cat", "shared.md")
        assert shown.returncode == 0 and shown.stdout == "for everyone", shown
        listed = cli(e2e, "workspace", "principals")
        assert listed.returncode == 0 and A_NAME not in listed.stdout, listed


def test_an_unknown_workspace_sharing_is_refused_at_start(tmp_path):
    e2e = E2EEnv(tmp_path, servers=(), extra_env={"CODE_EXECUTOR_WORKSPACE_SHARING": "everyone"})
    started = cli(e2e, "workspace", "path")
    assert started.returncode != 0 and "workspace_sharing" in started.stderr.lower(), started


# ------------------------------------------------------------------------------------------
# Execution slots
# ------------------------------------------------------------------------------------------

# Holds its slot for `ms` (a busy loop: it spins), then returns the host clock when it ended.
SPIN = "const end = Date.now() + {ms}; while (Date.now() < end) {{}}\nDate.now()"
# Returns the host clock when it ran.
NOW = "Date.now()"


def in_background(wire: Wire, code: str, out: list, **args: Any) -> threading.Thread:
    """Runs `code` in its request on a thread; its structuredContent goes to `out`."""
    def go() -> None:
        out.append(run(wire, code, **args))
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def executions(wire: Wire) -> dict[str, Any]:
    return tool(wire, "health", {})["structuredContent"]["executions"]


def wait_for(wire: Wire, done, what: str, timeout: float = 60) -> dict[str, Any]:
    """Polls `health` until `done(executions)`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = executions(wire)
        if done(seen):
            return seen
        time.sleep(0.1)
    pytest.fail(f"never {what}: {seen}")


SLOT_SETTINGS = {
    # Four slots and a queue of four: each principal may run two and have two waiting.
    "CODE_EXECUTOR_MAX_CONCURRENT_EXECUTIONS": "4",
    "CODE_EXECUTOR_MAX_QUEUED_EXECUTIONS": "4",
    "CODE_EXECUTOR_MAX_TIMEOUT_MS": "60000",
    "CODE_EXECUTOR_TIMEOUT_MS": "30000",
    "CODE_EXECUTOR_POOL_SIZE_PYTHON": "0",
    "CODE_EXECUTOR_WORKSPACE": "false",
}


def test_one_principal_cannot_take_every_execution_slot(tmp_path):
    with http_server(tmp_path, SLOT_SETTINGS) as (port, _):
        a, b = client(port, A), client(port, B)
        spun: list = []
        spinning = [in_background(a, SPIN.format(ms=10000), spun, timeoutMs=40000) for _ in range(4)]
        # All four asked for a slot (running or waiting).
        wait_for(b, lambda e: e["running"] + e["queued"] == 4, "placed A's four executions")
        # The other principal's trivial execution runs while the first one's still spin.
        served = run(b, NOW)
        # A fifth of A's, past its share and with its queue full, is refused at once.
        refused = run(a, NOW)
        for thread in spinning:
            thread.join(60)
        assert len(spun) == 4 and all(s["success"] for s in spun), spun
        first_end = min(s["result"] for s in spun)
        assert served["success"], served
        assert served["result"] < first_end, (
            f"B's execution ran {served['result'] - first_end} ms after the first of A's ended: it waited for A's slots"
        )
        assert not refused["success"], refused
        assert "busy" in refused["error"] and "max_queued_executions_per_principal" in refused["error"], refused


def test_a_principals_tasks_count_against_its_share(tmp_path):
    settings = {**SLOT_SETTINGS, "CODE_EXECUTOR_TASK_MAX_MS": "60000"}
    with http_server(tmp_path, settings) as (port, _):
        a_tasks = Wire(port, capabilities={"extensions": TASKS}, source=A)
        a, b = client(port, A), client(port, B)
        # A long task (answered with a task handle after a second) and a spinning execution.
        created = a_tasks.call(SPIN.format(ms=10000), timeout=30, timeoutMs=40000)
        assert created["resultType"] == "task", created
        spun: list = []
        spinning = in_background(a, SPIN.format(ms=10000), spun, timeoutMs=40000)
        wait_for(b, lambda e: e["running"] == 2, "ran A's task and execution")
        # A third execution of A waits for one of its own to end: the task holds one of its two.
        third: list = []
        waiting = in_background(a, NOW, third)
        wait_for(b, lambda e: third or e["queued"] == 1 or e["running"] == 3, "placed A's third execution")
        # Another principal is served at once.
        served = run(b, NOW)
        assert served["success"], served
        task = a_tasks.wait(created["taskId"], timeout=60)
        assert task["status"] == "completed" and wire_report(task["result"])["success"], task
        spinning.join(60)
        waiting.join(60)
        assert spun and spun[0]["success"] and third and third[0]["success"], (spun, third)
        first_end = min(wire_report(task["result"])["result"], spun[0]["result"])
        assert third[0]["result"] >= first_end, "A's third execution ran beside its task and execution: the task took a slot beyond A's share"
        assert served["result"] < first_end, "B's execution waited for A's task or execution to end"
