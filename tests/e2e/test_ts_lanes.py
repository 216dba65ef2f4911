"""TypeScript lanes: a long-lived isolate serving a session's executions, each in a fresh V8 context.

Nothing but data may cross between an execution's context and the lane: no object, function,
error or promise of the lane's realm may reach code. Each escape test below tries one known way
for code in a `node:vm` context to get hold of something of the realm that made it, and `REACH`
tells what it got: a function of another realm would build a function there, and that function
would see the lane's globals (`Deno`). Every value code can get must belong to its own realm.

Which lane ran an execution is read from the server's log: the runner logs each execution it runs
in a context with its lane's id and how many executions the lane has run (debug level).
"""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import McpClient, ok, run_ts

SECRET = "s3cr3t-" + os.urandom(6).hex()
SERVER_ENV = {"CODE_EXECUTOR_LOG": "info,code_executor::sandbox::host=debug"}

# What a value lets code reach: "context" when every function reachable from it in one step
# (itself, its constructor, its prototype's constructor) is of the code's own realm; otherwise
# what a function built from it sees.
REACH = r"""
// (The code must not name `Function` or `eval`: code that does runs in the lane's realm.)
const OwnFunction = (function () {}).constructor;
const ownFunctionProtos = [
  OwnFunction.prototype,
  Object.getPrototypeOf(async function () {}),
  Object.getPrototypeOf(function* () {}),
  Object.getPrototypeOf(async function* () {}),
];
function isOwnFunction(f) {
  if (f === OwnFunction.prototype) return true;
  for (let p = Object.getPrototypeOf(f); p !== null; p = Object.getPrototypeOf(p)) {
    if (ownFunctionProtos.includes(p)) return true;
  }
  return false;
}
function endsAtOwnObject(o) {
  let last = null;
  for (let p = o; p !== null; p = Object.getPrototypeOf(p)) last = p;
  return last === Object.prototype;
}
function reach(v) {
  if (v === null || (typeof v !== "object" && typeof v !== "function")) return "context";
  // (An object without a prototype, such as `Array.prototype[Symbol.unscopables]`, is judged by its constructor.)
  if (Object.getPrototypeOf(v) !== null && !endsAtOwnObject(v)) return "foreign object";
  const fns = [];
  if (typeof v === "function") fns.push(v);
  try { if (typeof v.constructor === "function") fns.push(v.constructor); } catch {}
  try { const c = Object.getPrototypeOf(v)?.constructor; if (typeof c === "function") fns.push(c); } catch {}
  for (const f of fns) {
    if (!isOwnFunction(f)) return "foreign function";
    try {
      const seen = f.constructor("return typeof Deno + typeof fetch + typeof postMessage")();
      if (seen !== "undefinedundefinedundefined") return "lane: " + seen;
    } catch {}
  }
  return "context";
}
const captured = [];
function verdict() {
  const bad = captured.map((v, i) => [i, reach(v)]).filter(([, r]) => r !== "context");
  return { count: captured.length, bad };
}
"""


@pytest.fixture(scope="module")
def client(stdio_client: McpClient) -> McpClient:
    return stdio_client


LANE_LINE = re.compile(r"lane (\w+): execution (\d+) in a fresh context")


def lanes_since(client: McpClient, mark: int) -> list[tuple[str, int]]:
    """The (lane id, its execution count) of the context executions logged after `mark` bytes.
    (A worker's stderr reaches the log a little after the execution's reply.)"""
    time.sleep(0.3)
    client.log_tail(0)
    text = client.log_path.read_text(errors="replace")[mark:]
    return [(m.group(1), int(m.group(2))) for m in LANE_LINE.finditer(text)]


def log_mark(client: McpClient) -> int:
    time.sleep(0.3)
    client.log_tail(0)
    return len(client.log_path.read_text(errors="replace"))


def escape_test(client: McpClient, body: str) -> dict:
    """Runs `body` after `REACH` (it must end by returning `verdict()`), in a context."""
    mark = log_mark(client)
    ex = ok(client, REACH + body, allowed=["mcp__time__get_current_time"])
    assert lanes_since(client, mark), "the escape test must run in a context:\n" + client.log_tail()
    result = ex.result
    assert result["bad"] == [], ex.describe()
    return result


def test_a_lane_serves_the_next_execution_in_a_fresh_context(client: McpClient) -> None:
    mark = log_mark(client)
    plant = f"""
const secret = {json.dumps(SECRET)};
globalThis.planted = secret;
Object.prototype.polluted = secret;
Array.prototype.map = function () {{ return secret; }};
JSON.stringify = () => secret;
console.log = () => {{}};
callMCPTool = async () => secret;
var declared = secret;
"planted"
"""
    assert ok(client, plant).result == "planted"
    time.sleep(0.2)
    probe = """
console.log("still prints");
[typeof planted, ({}).polluted ?? null, [1, 2].map((x) => x * 2), JSON.stringify({ a: 1 }),
 typeof declared, String(callMCPTool).includes("secret")]
"""
    ex = ok(client, probe)
    assert ex.result == ["undefined", None, [2, 4], '{"a":1}', "undefined", False], ex.describe()
    assert "still prints" in ex.output
    seen = lanes_since(client, mark)
    assert len(seen) == 2, client.log_tail()
    assert seen[0][0] == seen[1][0], f"both executions ran on one lane: {seen}"
    assert seen[1][1] == seen[0][1] + 1, seen


def test_code_that_needs_the_isolate_gets_one_and_its_lane_retires(client: McpClient) -> None:
    mark = log_mark(client)
    ex = ok(client, 'new TextEncoder().encode("é").length + typeof Deno.exit')
    assert ex.result == "2function", ex.describe()
    assert lanes_since(client, mark) == [], "TextEncoder is not in a context: the code ran in the lane's realm"
    time.sleep(0.3)
    assert "lane retired: the execution ran in the lane's own realm" in client.log_tail(20000)
    # And the next execution runs in a context of a fresh lane.
    mark = log_mark(client)
    assert ok(client, "1 + 1").result == 2
    assert lanes_since(client, mark)[0][1] == 1


def test_the_constructor_of_the_global_object_and_of_builtins(client: McpClient) -> None:
    escape_test(client, """
captured.push(globalThis, globalThis.constructor, Object, OwnFunction, Promise, Error, JSON, Math, Reflect);
captured.push(this, (function () { return this; })());
return verdict();
""")


def test_every_global_the_sandbox_defines_is_of_the_context(client: McpClient) -> None:
    escape_test(client, """
const queue = [globalThis];
const seen = new Set();
while (queue.length > 0) {
  const o = queue.shift();
  if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue;
  seen.add(o);
  captured.push(o);
  queue.push(Object.getPrototypeOf(o));
  for (const key of Reflect.ownKeys(o)) {
    const d = Object.getOwnPropertyDescriptor(o, key);
    queue.push(d.value, d.get, d.set);
  }
}
if (captured.length < 200) throw new Error("walked only " + captured.length);
return verdict();
""")


def test_values_returned_by_sandbox_functions(client: McpClient) -> None:
    escape_test(client, """
const now = await callMCPTool("mcp__time__get_current_time", { timezone: "UTC" });
captured.push(now, await listServers(), await searchTools("time"), image(new Uint8Array([1, 2, 3])));
captured.push(await workspace.list(), console, workspace, llm, callMCPTool, setTimeout(() => {}, 0));
await workspace.writeBytes("lanes/bytes.bin", new Uint8Array([7, 8]).buffer);
const bytes = await workspace.readBytes("lanes/bytes.bin");
captured.push(bytes, bytes.buffer);
if (!(bytes instanceof Uint8Array) || bytes[1] !== 8) throw new Error("bytes came back wrong");
return verdict();
""")


def test_errors_thrown_by_sandbox_functions(client: McpClient) -> None:
    escape_test(client, """
try { image(1, "text/plain"); } catch (e) { captured.push(e, Object.getPrototypeOf(e)); }
try { setTimeout(); } catch (e) { captured.push(e); }
for (const call of [
  () => callMCPTool("nope__missing", {}),
  () => callMCPTool("mcp__time__get_current_time", { timezone: "Nowhere/Nothing" }),
  () => callMCPTool(42),
  () => workspace.readText("../escape"),
  () => getToolSchema("nope__missing"),
  () => llm.ask("hello"),
]) {
  try { await call(); } catch (e) { captured.push(e); }
}
if (!captured.every((e) => e instanceof Error || Object.getPrototypeOf(e) === Error.prototype || e === Error.prototype || Object.getPrototypeOf(e) === TypeError.prototype)) {
  throw new Error("an error is not an Error of the context");
}
const deep = () => { try { return deep(); } catch { return console.log("x"); } };
try { deep(); } catch (e) { captured.push(e); }
return verdict();
""")


def test_promises_returned_by_sandbox_functions(client: McpClient) -> None:
    escape_test(client, """
const calls = [callMCPTool("mcp__time__get_current_time", { timezone: "UTC" }), listServers(),
  callMCPTool("nope__missing", {}), workspace.list()];
for (const p of calls) p.catch(() => {});
for (const p of calls) {
  captured.push(p, p.then, p.constructor);
  if (!(p instanceof Promise)) throw new Error("a promise of another realm");
  await p.then((v) => captured.push(v), (e) => captured.push(e));
}
return verdict();
""")


def test_proxy_traps_see_only_the_context(client: McpClient) -> None:
    escape_test(client, """
const handler = new Proxy({}, {
  get(_t, trap) {
    return function (...args) {
      captured.push(this, ...args);
      return Reflect[trap](...args);
    };
  },
});
const px = new Proxy({ timezone: "UTC", nested: [1, { a: 2 }] }, handler);
console.log(px, [px], { px });
console.dir(px, { showProxy: false });
console.table([px]);
await callMCPTool("mcp__time__get_current_time", px).catch(() => {});
await workspace.writeText(new Proxy(["x"], handler), "t").catch(() => {});
setTimeout(new Proxy(() => {}, handler), new Proxy({}, handler));
if (captured.length === 0) throw new Error("no trap ran");
return verdict();
""")


def test_symbol_species(client: McpClient) -> None:
    escape_test(client, """
class Evil extends Array {
  static get [Symbol.species]() {
    return function (...args) { captured.push(...args, new.target); return []; };
  }
}
const evil = Evil.from([1, 2, 3]);
console.log(evil);
await callMCPTool("mcp__time__get_current_time", { timezone: "UTC", list: evil }).catch(() => {});
const OriginalPromise = Promise;
Object.defineProperty(Promise, Symbol.species, {
  get() { return function (executor) { captured.push(executor); return new OriginalPromise(executor); }; },
});
Array.prototype.constructor = Evil;
await listServers().then((v) => captured.push(v));
return Object.assign(verdict(), { list: evil });
""")


def test_error_prepare_stack_trace_is_not_handed_call_sites(client: McpClient) -> None:
    # Call sites are objects of the lane's realm: the hook cannot be set in a context.
    result = escape_test(client, """
const key = "prepare" + "StackTrace";
const hook = (error, frames) => {
  for (const f of frames) {
    captured.push(f, f.getThis(), f.getFunction(), f.getTypeName?.());
  }
  return "prepared";
};
const refusals = [];
try { Error[key] = hook; } catch (e) { refusals.push(e.name); }
try { Object.defineProperty(Error, key, { value: hook }); } catch (e) { refusals.push(e.name); }
const OwnError = Error;
try { globalThis.Error = { [key]: hook }; } catch (e) { refusals.push(e.name); }
class Sub extends OwnError {}
Object.defineProperty(Sub, key, { value: hook });
new Sub("sub").stack;
new OwnError("own").stack;
const getterObject = { get probe() { new Error("inside the lane").stack; return 1; } };
JSON.parse(JSON.stringify(getterObject));
await callMCPTool("mcp__time__get_current_time", { timezone: "UTC", probe: getterObject }).catch(() => {});
console.log({ toString() { new Error("x").stack; return "y"; } } + "");
console.log("%s", { [Symbol.toPrimitive]() { new Error("toPrimitive").stack; return "z"; } });
await callMCPTool(42).catch((e) => e.stack);
await callMCPTool("nope__missing", {}).catch((e) => e.stack);
setTimeout(() => { new Error("in a timer").stack; }, 0);
await new Promise((r) => setTimeout(r, 5));
return Object.assign(verdict(), { refusals, stack: new OwnError("s").stack.split("\\n")[0] });
""")
    assert result["refusals"] == ["TypeError", "TypeError", "TypeError"], result
    assert result["count"] == 0, result
    assert result["stack"] == "Error: s", result


def test_code_naming_prepare_stack_trace_runs_with_its_hook(client: McpClient) -> None:
    ex = ok(client, 'Error.prepareStackTrace = (e, frames) => "frames: " + frames.length;\nnew Error("x").stack')
    assert ex.result.startswith("frames: "), ex.describe()


def test_arguments_callee_caller_and_function_caller(client: McpClient) -> None:
    escape_test(client, """
// Sloppy functions (the code itself is strict): their caller would be the lane's function.
const sloppy = OwnFunction("captured", "return function spy() { captured.push(arguments.callee.caller, spy.caller, this); return 'UTC'; }")(captured);
const obj = { toJSON: sloppy };
await callMCPTool("mcp__time__get_current_time", { timezone: obj }).catch(() => {});
const getterObject = {};
Object.defineProperty(getterObject, "timezone", { get: sloppy, enumerable: true });
await callMCPTool("mcp__time__get_current_time", getterObject).catch(() => {});
console.log("%s", { toString: sloppy });
setTimeout(sloppy, 0);
setTimeout(sloppy, { valueOf: sloppy });
await new Promise((r) => setTimeout(r, 5));
const spyCount = captured.length;
if (spyCount < 9) throw new Error("the sloppy functions ran " + spyCount / 3 + " times");
const callers = captured.filter((_, i) => i % 3 !== 2);
if (callers.some((c) => c !== null && c !== undefined && typeof c === "function" && !isOwnFunction(c))) {
  throw new Error("a caller of another realm");
}
return verdict();
""")


def test_getters_and_hooks_on_values_passed_in(client: McpClient) -> None:
    escape_test(client, """
const spy = function (...args) { captured.push(this, ...args); return "UTC"; };
const value = {
  get timezone() { captured.push(this, ...arguments); return "UTC"; },
  toJSON(key) { captured.push(this, key); return { timezone: "UTC" }; },
  [Symbol.toPrimitive](hint) { captured.push(this, hint); return "p"; },
  valueOf: spy,
  toString: spy,
};
const thrown = {
  get name() { captured.push(this); return "Boom"; },
  get message() { captured.push(this); return "boom"; },
  get stack() { captured.push(this); return "Boom: boom"; },
};
await callMCPTool("mcp__time__get_current_time", value).catch(() => {});
console.log(value, "%s %d %i %f %o %O %j", value, value, value, value, value, value, value);
setTimeout(() => {}, value);
await workspace.writeText(value, value).catch(() => {});
// Custom inspect hooks are not called on a context's values (they would get the lane's functions).
const hook = Symbol.for("Deno.custom" + "Inspect");
const nodeHook = Symbol.for("nodejs.util.inspect." + "custom");
const hooked = { [hook]: (...a) => { captured.push(...a); return "HOOKED"; }, [nodeHook]: (...a) => { captured.push(...a); return "HOOKED"; } };
console.log(hooked);
console.dir(hooked, { ["custom" + "Inspect"]: true });
console.table([hooked]);
try { throw thrown; } catch (e) { captured.push(e); }
queueMicrotask(() => {});
return verdict();
""")


def test_custom_inspect_hooks_are_not_called(client: McpClient) -> None:
    body = """
const hook = Symbol.for("Deno.custom" + "Inspect");
let called = 0;
const hooked = { a: 1, [hook]() { called++; return "HOOKED"; } };
console.log(hooked);
console.dir(hooked, { ["custom" + "Inspect"]: true });
called
"""
    mark = log_mark(client)
    ex = ok(client, body)
    assert lanes_since(client, mark), "runs in a context"
    assert ex.result == 0
    assert "HOOKED" not in ex.output and "a: 1" in ex.output, ex.output


def test_timers_of_an_ended_execution_never_run(client: McpClient) -> None:
    first = f"""
setTimeout(() => console.log("LATE timeout {SECRET}"), 150);
setInterval(() => console.log("LATE interval {SECRET}"), 40);
callMCPTool("mcp__time__get_current_time", {{ timezone: "UTC" }}).then(() => console.log("LATE reply {SECRET}"));
"left"
"""
    assert ok(client, first, allowed=["mcp__time__get_current_time"]).result == "left"
    ex = ok(client, 'await new Promise((r) => setTimeout(r, 400)); "waited"')
    assert ex.result == "waited"
    assert "LATE" not in ex.output and SECRET not in ex.output, ex.describe()


def test_a_context_that_never_yields_ends_only_its_own_execution(client: McpClient) -> None:
    ex = run_ts(client, '(async () => { for (;;) await null; })();\n"spinning"', timeout_ms=1500)
    assert not ex.success and "timed out" in (ex.error or ""), ex.describe()
    assert ok(client, "6 * 7").result == 42


def test_an_infinite_loop_ends_only_its_own_execution(client: McpClient) -> None:
    ex = run_ts(client, "for (;;) {}", timeout_ms=1500)
    assert not ex.success
    assert "time" in (ex.error or "").lower(), ex.describe()
    assert ok(client, "[1, 2, 3].map((x) => x * 2)").result == [2, 4, 6]


def test_errors_keep_the_user_locations(client: McpClient) -> None:
    mark = log_mark(client)
    ex = run_ts(client, 'const a = 1;\nfunction f() {\n  throw new TypeError("bad " + a);\n}\nf();')
    assert lanes_since(client, mark), "runs in a context"
    assert not ex.success
    assert "TypeError: bad 1" in ex.error, ex.describe()
    assert "user.ts:3" in ex.error, ex.describe()
    assert "code-executor-context" not in ex.error and "deno_node" not in ex.error, ex.describe()


def test_typescript_runs_in_a_context_with_its_own_locations(client: McpClient) -> None:
    # The host blanks out the types (same lines and columns): the context runs the JavaScript.
    mark = log_mark(client)
    code = (
        "interface Row { id: number; name: string }\n"
        'const rows: Row[] = [{ id: 1, name: "a" }, { id: 2, name: "b" }];\n'
        "const ids = rows.map((r): number => r.id) as number[];\n"
        "ids satisfies number[]"
    )
    assert ok(client, code).result == [1, 2]
    assert lanes_since(client, mark), "typed code runs in a context"
    mark = log_mark(client)
    ex = run_ts(client, 'type T = { a: string };\nconst t: T = { a: "x" };\nconst n: any = null;\nn!.boom;')
    assert lanes_since(client, mark), "typed code runs in a context"
    assert not ex.success
    assert "TypeError" in ex.error and "user.ts:4:" in ex.error, ex.describe()
    # Syntax a strip cannot handle (an enum) runs in the lane's realm, as before.
    mark = log_mark(client)
    assert ok(client, "enum Color { Red, Green }\nColor.Green").result == 1
    assert lanes_since(client, mark) == []


def test_an_infinite_loop_in_one_lane_leaves_the_other_lanes_unharmed(client: McpClient) -> None:
    with ThreadPoolExecutor(3) as pool:
        loop = pool.submit(run_ts, client, "for (;;) {}", timeout_ms=3000)
        # An execution on another lane, running across the loop's timeout, and others after it.
        across = pool.submit(run_ts, client, 'await new Promise((r) => setTimeout(r, 4000));\n"across"')
        time.sleep(0.3)
        during = [ok(client, f"[{i}].map((x) => x * 2)[0]").result for i in range(5)]
        looped = loop.result()
        crossed = across.result()
    assert during == [0, 2, 4, 6, 8]
    assert not looped.success and "timed out" in (looped.error or ""), looped.describe()
    assert crossed.success and crossed.result == "across", crossed.describe()
    assert ok(client, "6 * 7").result == 42


def test_finalization_callbacks_are_the_executions_own(client: McpClient) -> None:
    # A finalization callback runs whenever V8 collects, maybe during a later execution: code gets
    # only the registry constructor that stops its callbacks once its execution ended, however it
    # reaches it.
    mark = log_mark(client)
    ex = ok(client, """
const r = new FinalizationRegistry(() => {});
r.register({}, 1);
const reached = [Object.getPrototypeOf(r).constructor, FinalizationRegistry.prototype.constructor, r.constructor];
let refused = "";
try { FinalizationRegistry(() => {}); } catch (e) { refused = e.name; }
return [reached.every((c) => c === FinalizationRegistry), FinalizationRegistry.name, refused];
""")
    assert lanes_since(client, mark), "runs in a context"
    assert ex.result == [True, "FinalizationRegistry", "TypeError"], ex.describe()
