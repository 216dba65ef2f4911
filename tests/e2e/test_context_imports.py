"""Imports in a TypeScript lane's context: code that imports wrappers and skills runs in a fresh
V8 context of its lane, the modules evaluated in that context from the JavaScript the host made
of them, and the lane serves the next execution (it is not retired). What cannot be bound there
(a `node:` module, a module that names the lane's globals, a cycle, a missing export) runs in the
lane's own realm, as before, with the same messages.

Against the real server, the real time server (the generated wrapper calls it) and skills saved
with saveSkill. Which lane ran an execution is read from the server's log, as in test_ts_lanes.
"""

from __future__ import annotations

import json
import time

import pytest

from conftest import start_client
from harness import E2EEnv, Exec, ok, run_cli, run_ts
from test_ts_lanes import REACH, lanes_since, log_mark

SERVERS = ("time",)
TIME_TOOL = "mcp__time__get_current_time"


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory, ce_binary):
    root = tmp_path_factory.mktemp("context-imports")
    wrappers = root / "wrappers"
    extra = {
        "CODE_EXECUTOR_WRAPPERS_DIR": str(wrappers),
        "CODE_EXECUTOR_WORKSPACE_DIR": str(root / "ws"),
        "CODE_EXECUTOR_LOG": "info,code_executor::sandbox::host=debug",
    }
    proc = run_cli(E2EEnv(root, servers=SERVERS, extra_env=extra), "wrappers")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    client = start_client("stdio", root, SERVERS, extra)
    save(client, "clock", CLOCK)
    save(client, "counter", COUNTER)
    save(client, "report", REPORT)
    yield client
    client.close()


def save(client, name: str, code: str) -> None:
    ok(client, f"await saveSkill({json.dumps(name)}, {json.dumps(code)}); 1")


# A skill that imports a wrapper, with types, an interface and top-level await.
CLOCK = """
import { getCurrentTime, type GetCurrentTimeArgs } from "wrappers/time.ts";
export interface Stamp { tz: string; at: string }
const zone: string = await Promise.resolve("UTC");
export async function now(tz: string = zone): Promise<Stamp> {
  const args: GetCurrentTimeArgs = { timezone: tz };
  const r: any = await getCurrentTime(args);
  return { tz: r.timezone, at: r.datetime };
}
"""

# Module state: each execution's context evaluates the module afresh.
COUNTER = """
let count = 0;
export function next(): number { return ++count; }
export default "counter";
"""

# A skill that imports another skill.
REPORT = """
import { now } from "skills/clock";
import label, { next } from "skills/counter";
export async function report(): Promise<string> {
  const s = await now();
  return `${label}:${next()}:${s.tz}`;
}
"""


def err(client, code: str, **kw) -> Exec:
    ex = run_ts(client, code, **kw)
    assert not ex.success, ex.describe()
    return ex


def in_context(client, code: str, **kw):
    """Runs `code` and asserts it ran in a context of a lane; returns (execution, lane entry)."""
    mark = log_mark(client)
    ex = ok(client, code, allowed=[TIME_TOOL], **kw)
    seen = lanes_since(client, mark)
    assert len(seen) == 1, "the code must run in a context:\n" + client.log_tail()
    return ex, seen[0]


def test_a_wrapper_import_runs_in_a_context_and_the_lane_serves_on(c) -> None:
    code = """
import * as time from "wrappers/time.ts";
import { getCurrentTime, GetCurrentTimeArgs } from "wrappers/time.ts";
const args: GetCurrentTimeArgs = { timezone: "UTC" };
const r: any = await getCurrentTime(args);
const n: any = await time.getCurrentTime({ timezone: "Europe/Paris" });
return [r.timezone, n.timezone, typeof r.datetime];
"""
    first, lane1 = in_context(c, code)
    assert first.result == ["UTC", "Europe/Paris", "string"], first.describe()
    second, lane2 = in_context(c, code)
    assert second.result == first.result
    assert lane2 == (lane1[0], lane1[1] + 1), f"the lane must serve the next execution: {lane1} then {lane2}"


def test_skills_importing_skills_and_wrappers_run_in_a_context(c) -> None:
    ex, _ = in_context(c, 'import { report } from "skills/report";\nreturn await report();')
    assert ex.result == "counter:1:UTC", ex.describe()


def test_module_state_is_the_executions_own(c) -> None:
    code = 'import { next } from "skills/counter";\nnext(); next();\nreturn next();'
    for _ in range(3):
        ex, _ = in_context(c, code)
        assert ex.result == 3, "each execution evaluates its modules afresh: " + ex.describe()


def test_a_tool_call_from_a_skill_obeys_the_callers_allowed_tools(c) -> None:
    mark = log_mark(c)
    ex = err(c, 'import { now } from "skills/clock";\nreturn await now();', allowed=[])
    assert "not allowed" in ex.error or "allowedTools" in ex.error, ex.describe()
    assert len(lanes_since(c, mark)) == 1


def test_errors_in_a_module_and_in_the_code_keep_their_locations(c) -> None:
    save(c, "thrower", "export function fail(): never {\n  throw new RangeError('from the skill');\n}\n")
    ex = err(c, 'import { fail } from "skills/thrower";\n\nfail();')
    text = ex.error
    assert "from the skill" in text and "RangeError" in text, ex.describe()
    assert "skills/thrower.ts:2" in text, ex.describe()
    ex = err(c, 'import { next } from "skills/counter";\nconst x: number = next();\n\nnull.boom;')
    assert "line 4" in ex.error or ":4:" in ex.error, ex.describe()


def test_a_module_that_throws_while_evaluated_fails_only_its_execution(c) -> None:
    save(c, "broken_at_load", "export const x = 1;\nthrow new TypeError('broken at load');\n")
    mark = log_mark(c)
    ex = err(c, 'import { x } from "skills/broken_at_load";\nreturn x;')
    assert "broken at load" in ex.error, ex.describe()
    seen = lanes_since(c, mark)
    assert len(seen) == 1
    _, after = in_context(c, "return 2")
    assert after == (seen[0][0], seen[0][1] + 1), "the lane serves on after a module's error"


def test_a_module_patching_promises_reaches_nothing_of_the_lane(c) -> None:
    # Its top level runs while the modules are evaluated: whatever `then`, `constructor` or
    # species gets handed must be of the context.
    save(
        c,
        "snoop",
        """
export const seen: unknown[] = [];
const then = Promise.prototype.then;
Promise.prototype.then = function (this: Promise<unknown>, a?: any, b?: any) {
  seen.push(a, b, this);
  return then.call(this, a, b);
};
Object.defineProperty(Promise.prototype, "constructor", {
  configurable: true,
  get() { seen.push(new Error().stack); return Promise; },
});
Object.defineProperty(Promise, Symbol.species, { configurable: true, get() { seen.push("species"); return Promise; } });
export const answer = await Promise.resolve(42);
""",
    )
    body = """
import { seen, answer } from "skills/snoop";
captured.push(...seen.filter((v) => typeof v !== "string"));
const r = await callMCPTool("mcp__time__get_current_time", { timezone: "UTC" });
captured.push(...seen.filter((v) => typeof v !== "string"), r);
return { ...verdict(), answer };
"""
    ex, _ = in_context(c, REACH + body)
    assert ex.result["bad"] == [], ex.describe()
    assert ex.result["answer"] == 42 and ex.result["count"] > 0, ex.describe()


def test_what_cannot_be_bound_in_a_context_runs_in_the_lanes_realm(c) -> None:
    # A node: module is the lane's.
    mark = log_mark(c)
    ex = ok(c, 'import { basename } from "node:path";\nreturn basename("/a/b.txt");')
    assert ex.result == "b.txt", ex.describe()
    assert lanes_since(c, mark) == []
    time.sleep(0.3)
    assert "lane retired: the execution ran in the lane's own realm" in c.log_tail(20000)
    # A skill naming one of the lane's globals.
    save(c, "encoder", "export const size = (s: string): number => new TextEncoder().encode(s).length;\n")
    mark = log_mark(c)
    ex = ok(c, 'import { size } from "skills/encoder";\nreturn size("é");')
    assert ex.result == 2 and lanes_since(c, mark) == [], ex.describe()
    # A value import the module lacks: the same error as ever.
    ex = err(c, 'import { nope } from "skills/counter";\nreturn nope;')
    assert "does not provide an export named" in ex.error and "nope" in ex.error, ex.describe()
    # A cycle is refused as before.
    save(c, "ping", 'import { pong } from "skills/pong";\nexport const ping = () => pong;\n')
    save(c, "pong", 'import { ping } from "skills/ping";\nexport const pong = () => ping;\n')
    ex = err(c, 'import { ping } from "skills/ping";\nreturn typeof ping;')
    assert "cycle" in ex.error, ex.describe()
    # And the next plain execution runs in a context again.
    in_context(c, "return 1")


def test_a_missing_wrapper_says_how_to_make_it(c) -> None:
    ex = err(c, 'import * as nope from "wrappers/nope.ts";\nreturn nope;')
    assert "code-executor wrappers" in ex.error, ex.describe()


def test_a_context_cannot_load_a_module_however_the_import_is_spelled(c) -> None:
    # Code compiled from a string by a constructor the code reaches without naming it: the
    # context has no dynamic import callback, so every `import()` is refused, with an error of
    # the context's own realm (nothing is loaded, nothing of the lane reaches the code).
    body = """
const F = (function () {}).constructor;
const AF = (async function () {}).constructor;
const tries = [
  () => F("return import('node:fs')")(),
  () => new AF("return await import('data:text/javascript,export default 1')")(),
  () => F("return import('wrappers/time.ts')")(),
];
const outcomes = [];
for (const t of tries) {
  try { const m = await t(); captured.push(m); outcomes.push("loaded"); }
  catch (e) { captured.push(e); outcomes.push(e instanceof Error ? "refused" : "foreign error"); }
}
return { ...verdict(), outcomes };
"""
    ex, _ = in_context(c, REACH + body)
    assert ex.result["outcomes"] == ["refused"] * 3, ex.describe()
    assert ex.result["bad"] == [], ex.describe()


def test_the_word_import_in_text_keeps_code_in_a_context(c) -> None:
    code = '// import nothing here\nconst s = "import x from y";\nreturn s.length;'
    ex, _ = in_context(c, code)
    assert ex.result == 15, ex.describe()
