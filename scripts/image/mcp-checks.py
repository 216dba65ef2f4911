"""Checks of the running appliance through its real MCP endpoint (used by test-docker-security.sh).

    python mcp-checks.py URL TOKEN_FILE CHECK...

CHECK is one of: auth, hostile, hostile-python, memory-bomb, alive, landlock, host-origin,
module-loader, disk-limit, webgpu, downstream-schema, downstream-answers, downstream-slow,
slow-clients, sidecar-time, egress-allowed, egress-denied, egress-sandbox. Prints one
`PASS name: detail` or `FAIL name: detail` line per check and exits 1 if any failed. The client
is the official MCP Python SDK over streamable HTTP, with the bearer token the appliance
requires. The downstream-* checks expect the hostile server of tests/docker/ as the downstream
server `hostile` (test-docker-security.sh starts it); sidecar-time expects the sidecar `time`
(compose profile `sidecars`) as the downstream server `time`; the egress-* checks expect the
remote servers `allowed` and `denied` of tests/docker/compose.egress.yaml, reached through the
`egress` proxy.

Checks assert refusals and survival, never the wording of a refusal (other than the "out of
memory" the sandbox promises): what the server says when it refuses may change, that it refuses
may not.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

URL, TOKEN_FILE, CHECKS = sys.argv[1], sys.argv[2], sys.argv[3:]
TOKEN = open(TOKEN_FILE).read().strip()
failures = 0


def describe(e: BaseException) -> str:
    """An exception in a line: the first leaf of an exception group (anyio's task groups wrap)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"


def report(name: str, passed: bool, detail: str) -> None:
    global failures
    failures += 0 if passed else 1
    detail = " ".join(detail.split())[:600]
    print(f"{'PASS' if passed else 'FAIL'} {name}: {detail}", flush=True)


async def call_raw(tool: str, args: dict[str, Any], timeout: float = 120) -> CallToolResult:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout, read=timeout)) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.fail_after(60):
                    await session.initialize()
                return await session.call_tool(tool, args)


async def call(tool: str, args: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    """An execution's whole report: a success's structured content with the accounting its
    `_meta` holds, a failure's report from `_meta` (failures carry no structured content)."""
    result = await call_raw(tool, args, timeout)
    report = (result.meta or {}).get("code-executor/report")
    report = dict(report) if isinstance(report, dict) else {}
    if result.structured_content is not None:
        return {**result.structured_content, **report}
    if report:
        return report
    return {"success": False, "error": text_of(result), "output": ""}


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def reply_bytes(result: CallToolResult) -> int:
    """Size of a reply as the client received it (text blocks plus structured content)."""
    return len(text_of(result).encode()) + len(json.dumps(result.structured_content or {}).encode())


def run(tool: str, code: str, timeout_ms: int = 30000, allowed: list[str] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"code": code, "timeoutMs": timeout_ms}
    if allowed is not None:
        args["allowedTools"] = allowed
    return anyio.run(call, tool, args, max(120, timeout_ms / 1000 + 60))


def raw_post(headers: dict[str, str]) -> int:
    """POSTs an `initialize` to /mcp with `headers` (which may replace Host) and returns the status."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "docker-test", "version": "1"},
            },
        }
    ).encode()
    req = urllib.request.Request(
        URL,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def check_auth() -> None:
    none = raw_post({})
    wrong = raw_post({"Authorization": "Bearer not-the-token-0123456789"})
    right = raw_post({"Authorization": f"Bearer {TOKEN}"})
    report(
        "token required on /mcp",
        none == 401 and wrong == 401 and right == 200,
        f"no token: {none}, wrong token: {wrong}, right token: {right}",
    )


HOSTILE_TS = r"""
const attempts = {};
async function attempt(name, fn) {
  try { const v = await fn(); attempts[name] = "ALLOWED: " + String(JSON.stringify(v)).slice(0, 200); }
  catch (e) { attempts[name] = "refused: " + String(e?.name ?? e); }
}
await attempt("read /etc/passwd", () => Deno.readTextFile("/etc/passwd"));
await attempt("read the settings", () => Deno.readTextFile("/config/config.toml"));
await attempt("read the token", () => Deno.readTextFile("/run/secrets/http_token"));
await attempt("read /proc/1/environ", () => Deno.readFile("/proc/1/environ"));
await attempt("list /", async () => { const n = []; for await (const e of Deno.readDir("/")) n.push(e.name); return n; });
await attempt("env", () => Deno.env.toObject());
await attempt("write /tmp", () => Deno.writeTextFile("/tmp/x", "x"));
await attempt("spawn", () => new Deno.Command("/usr/local/bin/code-executor", { args: ["--version"] }).output());
await attempt("fetch metadata", () => fetch("http://169.254.169.254/latest/meta-data/"));
await attempt("connect to the server", () => Deno.connect({ hostname: "127.0.0.1", port: 8765 }));
await attempt("ffi", () => Deno.dlopen("/lib/x86_64-linux-gnu/libc.so.6", {}));
console.log(JSON.stringify(attempts));
"""

HOSTILE_PY = r"""
import json, os
attempts = {}
def attempt(name, fn):
    try:
        attempts[name] = "ALLOWED: " + repr(fn())[:200]
    except BaseException as e:
        attempts[name] = "refused: " + type(e).__name__
attempt("read /etc/passwd", lambda: open("/etc/passwd").read())
attempt("read the token", lambda: open("/run/secrets/http_token").read())
attempt("read the settings", lambda: open("/config/config.toml").read())
attempt("host environment", lambda: [k for k in os.environ if k.startswith("CODE_EXECUTOR")] or (_ for _ in ()).throw(PermissionError("no host variables visible")))
def js_env():
    import js
    return js.Deno.env.toObject()
attempt("js Deno.env", js_env)
def js_read():
    import js
    return js.Deno.readTextFileSync("/etc/passwd")
attempt("js Deno.readTextFileSync", js_read)
print(json.dumps(attempts))
"""


def hostile(tool: str, code: str, name: str) -> None:
    r = run(tool, code)
    out = (r.get("output") or "") + json.dumps(r.get("result"))
    try:
        attempts = json.loads((r.get("output") or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        report(name, False, f"no attempt report: {json.dumps(r)[:400]}")
        return
    allowed = {k: v for k, v in attempts.items() if not v.startswith("refused")}
    leaked = TOKEN in out or "executor:x:1001" in out
    report(
        name,
        bool(attempts) and not allowed and not leaked,
        f"{len(attempts)} attempts, allowed: {allowed or 'none'}; token or /etc/passwd in output: {leaked}",
    )


def alive(label: str) -> bool:
    ts = run("executeTypescript", "console.log(6 * 7)")
    py = run("executePython", "print(6 * 7)")
    ok = ts.get("success") and "42" in ts.get("output", "") and py.get("success") and "42" in py.get("output", "")
    report(
        label,
        bool(ok),
        f"TypeScript: {ts.get('success')} {ts.get('output', '').strip()!r}; Python: {py.get('success')} {py.get('output', '').strip()!r} {py.get('error') or ''}",
    )
    return bool(ok)


MEMORY_BOMB = r"""
// Touches memory outside the V8 heap (ArrayBuffers) until something stops it.
const keep = [];
for (let i = 0; i < 256; i++) { const b = new Uint8Array(64 * 1024 * 1024); b.fill(i); keep.push(b); }
console.log("allocated " + keep.length * 64 + " MiB");
"""


def memory_bomb() -> None:
    # The worker's own limit (RLIMIT_DATA, fitted under the container's) must stop it: the
    # execution says "out of memory". A "killed by signal 9" would be the container's OOM
    # killer, i.e. the limits do not fit (the one wording this check asserts, as promised).
    r = run("executeTypescript", MEMORY_BOMB, timeout_ms=60000)
    error = str(r.get("error"))
    report(
        "memory bomb ends as out of memory",
        r.get("success") is False and "out of memory" in error.lower() and "signal" not in error.lower(),
        f"success={r.get('success')} error={error[:200]!r}",
    )


# --- what must never come back -------------------------------------------------------------------

# /etc/passwd lines, and words only the settings file (/config/config.toml) holds.
LEAK_RE = re.compile(r"root:[^:\n]*:0:0:|executor:x:1001|ops_listen|audit_log_dir|http_token_file")


def leaked(text: str) -> list[str]:
    found = sorted(set(LEAK_RE.findall(text)))
    return found + (["the token"] if TOKEN in text else [])


def attempts_of(r: dict[str, Any]) -> dict[str, str] | None:
    """The JSON object of attempts the code printed last, if it printed one."""
    try:
        attempts = json.loads((r.get("output") or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return attempts if isinstance(attempts, dict) and attempts else None


# Each attempt records "ALLOWED: <what it got>" or "refused: <error>"; a promise that settles
# neither way within 5 s counts as allowed (a refusal is immediate).
ATTEMPT_TS = r"""
const attempts = {};
async function attempt(name, fn) {
  let timer;
  const hung = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("HUNG")), 5000); });
  try {
    const v = await Promise.race([fn(), hung]);
    attempts[name] = "ALLOWED: " + String(JSON.stringify(v) ?? v).slice(0, 200);
  } catch (e) {
    const msg = String(e?.message ?? e);
    attempts[name] = msg === "HUNG" ? "ALLOWED: no answer in 5 s" : "refused: " + String(e?.name ?? "Error") + ": " + msg.slice(0, 160);
  } finally { clearTimeout(timer); }
}
"""

MODULE_LOADER_TS = ATTEMPT_TS + r"""
const text = { with: { type: "text" } };
const json = { with: { type: "json" } };
for (const [label, url] of [["/etc/passwd", "file:///etc/passwd"], ["/config/config.toml", "file:///config/config.toml"],
                            ["/run/secrets/http_token", "file:///run/secrets/http_token"]]) {
  await attempt("import " + label + " as text", () => import(url, text).then((m) => m.default));
  await attempt("import " + label + " as JSON", () => import(url, json).then((m) => m.default));
  await attempt("import " + label + " as a module", () => import(url).then((m) => Object.keys(m)));
}
await attempt("import https://", () => import("https://deno.land/std@0.224.0/path/mod.ts").then((m) => Object.keys(m)));
await attempt("import http://executor:8765", () => import("http://executor:8765/mcp").then((m) => Object.keys(m)));
await attempt("import http://hostile:8000", () => import("http://hostile:8000/mcp").then((m) => Object.keys(m)));
await attempt("import npm:", () => import("npm:left-pad@1.3.0").then((m) => Object.keys(m)));
await attempt("import jsr:", () => import("jsr:@std/path@1").then((m) => Object.keys(m)));
const node = (name) => import("node:" + name).then((m) => m.default ?? m);
await attempt("node:fs readFileSync /etc/passwd", () => node("fs").then((fs) => fs.readFileSync("/etc/passwd", "utf8")));
await attempt("node:fs readFileSync the token", () => node("fs").then((fs) => fs.readFileSync("/run/secrets/http_token", "utf8")));
await attempt("node:fs readFileSync the settings", () => node("fs").then((fs) => fs.readFileSync("/config/config.toml", "utf8")));
await attempt("node:fs readdirSync /", () => node("fs").then((fs) => fs.readdirSync("/")));
await attempt("node:fs/promises readFile /etc/passwd", () => node("fs/promises").then((fs) => fs.readFile("/etc/passwd", "utf8")));
await attempt("node:child_process execSync", () => node("child_process").then((cp) => cp.execSync("id").toString()));
await attempt("node:child_process spawnSync", () => node("child_process").then((cp) => {
  const r = cp.spawnSync("/usr/local/bin/code-executor", ["--version"]);
  if (r.error) throw r.error;
  return String(r.stdout);
}));
for (const [host, port] of [["executor", 8765], ["127.0.0.1", 8765], ["127.0.0.1", 9464]]) {
  await attempt(`node:net connect ${host}:${port}`, () => node("net").then((net) => new Promise((resolve, reject) => {
    const s = net.connect({ host, port });
    s.on("connect", () => { s.destroy(); resolve("connected"); });
    s.on("error", reject);
  })));
}
await attempt("node:os userInfo", () => node("os").then((os) => os.userInfo()));
await attempt("node:os homedir", () => node("os").then((os) => os.homedir()));
await attempt("node:process env", () => import("node:process").then((p) => JSON.stringify((p.default ?? p).env)));
await attempt("node:process env.HOME", () => import("node:process").then((p) => {
  const v = (p.default ?? p).env.HOME;
  if (v === undefined) throw new Error("no HOME visible");
  return v;
}));
console.log(JSON.stringify(attempts));
"""


def module_loader() -> None:
    r = run("executeTypescript", MODULE_LOADER_TS, timeout_ms=60000)
    attempts = attempts_of(r)
    if attempts is None:
        report("module loader and node:* refused", False, f"no attempt report: {json.dumps(r)[:400]}")
        return
    allowed = {k: v for k, v in attempts.items() if not v.startswith("refused")}
    leaks = leaked(json.dumps(r))
    report(
        "module loader and node:* refused",
        not allowed and not leaks,
        f"{len(attempts)} attempts (file:, https:, http:, npm:, jsr: imports; node:fs, child_process, net, os, "
        f"process), allowed: {allowed or 'none'}; leaked: {leaks or 'nothing'}",
    )


# 40 dynamic imports of 3 MiB TypeScript modules. Deno used to cache what it analysed in the
# worker's private directory on /tmp (a 256 MiB tmpfs shared by every worker): 417 MiB in one
# execution before the disk limit. Now such imports are refused however the code builds them
# (and worker processes, whose Deno cache is read-only, write nothing anyway).
DISK_FILL_TS = r"""
const big = "export const x = " + JSON.stringify("a".repeat(3 << 20)) + ";";
const refused = [];
for (const load of [(u) => import(u), (0, eval)("(u) => import(u)"), new Function("u", "return import(u)")]) {
  let n = 0;
  try { for (let i = 0; i < 40; i++) { await load("data:application/typescript;base64," + btoa(big + "// " + i)); n++; } } catch {}
  refused.push(n === 0);
}
refused
"""


def disk_limit() -> None:
    r = run("executeTypescript", DISK_FILL_TS, timeout_ms=150000)
    alive = run("executeTypescript", "6 * 7").get("result") == 42
    report(
        "dynamic imports of 3 MiB modules refused however they are built (data:, through eval or Function)",
        r.get("success") is True and r.get("result") == [True, True, True] and alive,
        f"success={r.get('success')} result={r.get('result')!r} error={str(r.get('error'))[:200]!r} alive={alive}",
    )


WEBGPU_TS = r"""
const gpu = navigator.gpu;
let adapter = null, failure = null;
try { adapter = gpu ? await gpu.requestAdapter() : null; } catch (e) { failure = String(e?.name ?? e); }
if (adapter) {
  const device = await adapter.requestDevice();
  const module = device.createShaderModule({ code: "@compute @workgroup_size(1) fn main() {}" });
  await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } });
}
const report = { gpu: gpu !== undefined, adapter: adapter !== null, failure };
report
"""

# A Web Worker would start with a fresh global scope (the runner's hiding of `navigator.gpu` would
# not hold there): the sandbox starts none for code, however the code asks.
WEBGPU_WORKER_TS = r"""
let started = false;
for (const load of [() => import("node:worker_threads"), () => (0, eval)("import('node:worker_threads')")]) {
  try { await load(); started = true; } catch {}
}
const report = { adapter: typeof globalThis.Worker !== "undefined" || started, got: started };
report
"""

WEBGPU_PY = r"""
import js
gpu = getattr(js.navigator, "gpu", None)
adapter = None
try:
    adapter = (await gpu.requestAdapter()) if gpu is not None else None
except Exception as e:
    adapter = None
{"gpu": gpu is not None, "adapter": not (adapter is None or str(adapter) == "jsnull")}
"""


def webgpu() -> None:
    runs = {
        "TypeScript": run("executeTypescript", WEBGPU_TS),
        "Web Worker": run("executeTypescript", WEBGPU_WORKER_TS),
        "Python": run("executePython", WEBGPU_PY),
    }
    # Each execution ran to its end and reported no adapter.
    got = {k: r.get("result") if r.get("success") else f"failed: {str(r.get('error'))[:120]}" for k, r in runs.items()}
    reports = {k: r.get("result") for k, r in runs.items() if r.get("success")}
    ran = len(reports) == len(runs) and all(isinstance(x, dict) and "adapter" in x for x in reports.values())
    adapters = [k for k, x in reports.items() if isinstance(x, dict) and x.get("adapter") is not False]
    report("WebGPU gives no adapter (TypeScript, Web Worker, Python)", ran and not adapters, f"{got}")


def landlock() -> None:
    health = anyio.run(call, "health", {})
    runtime = health.get("runtime") or {}
    value = str(runtime.get("landlock"))
    report("Landlock in force under the workers", value.startswith("ABI "), f"health runtime.landlock={value!r}")


def host_origin() -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    right = raw_post(auth)
    evil_host = raw_post({**auth, "Host": "evil.example"})
    evil_host_port = raw_post({**auth, "Host": "evil.example:8765"})
    evil_origin = raw_post({**auth, "Origin": "http://evil.example"})
    refused = all(400 <= c < 500 for c in (evil_host, evil_host_port, evil_origin))
    report(
        "foreign Host and Origin refused with the token",
        right == 200 and refused,
        f"right Host: {right}; Host evil.example: {evil_host}; Host evil.example:8765: {evil_host_port}; "
        f"Origin http://evil.example: {evil_origin}",
    )


# --- the hostile downstream server (tests/docker/hostile_server.py, server `hostile`) ------------

def tool_name(tool: str) -> str:
    return f"mcp__hostile__{tool}"


PING_TS = 'await callMCPTool("mcp__hostile__ping", {})'


def downstream_reachable() -> str:
    r = run("executeTypescript", PING_TS, allowed=[tool_name("ping")])
    if r.get("success") and "pong" in json.dumps(r.get("result")):
        return "pong"
    return f"no pong: {json.dumps(r)[:200]}"


def front_answer(tool: str, args: dict[str, Any]) -> str:
    """Calls one of the server's own tools; describes the reply (an answer or a clear error)."""
    result = anyio.run(call_raw, tool, args, 180)
    size = reply_bytes(result)
    kind = "error" if result.is_error else "answer"
    ok = size <= 1024 * 1024 and (not result.is_error or bool(text_of(result).strip()))
    return f"{'ok' if ok else 'BAD'} {kind} of {size} bytes: {text_of(result)[:100]!r}"


SCHEMA_TS = r"""
const out = {};
try { const s = await getToolSchema("mcp__hostile__recursive_schema"); out.schema = JSON.stringify(s).length; }
catch (e) { out.schema = "error: " + String(e?.message ?? e).slice(0, 120); }
try { const s = await searchTools("recursive tree property", { detail: "full" }); out.search = JSON.stringify(s).length; }
catch (e) { out.search = "error: " + String(e?.message ?? e).slice(0, 120); }
try { out.call = await callMCPTool("mcp__hostile__recursive_schema", { node: { p00: { p01: { p02: {} } } } }); }
catch (e) { out.call = "error: " + String(e?.message ?? e).slice(0, 120); }
out
"""


def downstream_schema() -> None:
    reach = downstream_reachable()
    details = [f"ping: {reach}"]
    ok = reach == "pong"
    for tool, args in (
        ("getToolSchema", {"name": tool_name("recursive_schema")}),
        ("searchTools", {"query": "recursive tree property", "detail": "full"}),
    ):
        try:
            answer = front_answer(tool, args)
        except Exception as e:  # the server died or dropped the connection
            answer = f"BAD no answer: {describe(e)}"
        ok = ok and answer.startswith("ok")
        details.append(f"{tool}: {answer}")
    # From code: the lookups and a call with a nested argument end (answer or error) within the
    # execution, and what comes back is bounded by the output cap.
    try:
        r = run("executeTypescript", SCHEMA_TS, timeout_ms=60000, allowed=[tool_name("recursive_schema")])
        in_code = r.get("success") is True and len(json.dumps(r)) <= 2 * 1024 * 1024
        details.append(
            f"from code: success={r.get('success')} {json.dumps(r.get('result'))[:200]} {str(r.get('error') or '')[:120]}"
        )
    except Exception as e:
        in_code = False
        details.append(f"from code: BAD no answer: {describe(e)}")
    ok = ok and in_code
    report("recursive input schema answered, bounded", ok, "; ".join(details))


def downstream_call_ts(tool: str, args: dict[str, Any]) -> str:
    return f"""
let size = null, error = null;
try {{
  const r = await callMCPTool({json.dumps(tool_name(tool))}, {json.dumps(args)});
  size = (typeof r === "string" ? r : JSON.stringify(r) ?? "").length;
}} catch (e) {{ error = String(e?.message ?? e).slice(0, 300); }}
const outcome = {{ size, error }};
outcome
"""


# What the sandbox may receive from one downstream answer (max_result_bytes, default 8 MiB).
MAX_RESULT_BYTES = 8 * 1024 * 1024


def downstream_answers() -> None:
    details = [f"ping: {downstream_reachable()}"]
    ok = True
    for tool, args in (("huge_answer", {}), ("deep_answer", {})):
        r = run("executeTypescript", downstream_call_ts(tool, args), timeout_ms=60000, allowed=[tool_name(tool)])
        res = r.get("result") if isinstance(r.get("result"), dict) else {}
        # Refused with an error the code sees, or handed over capped (never the whole answer).
        refused = bool(res.get("error"))
        capped = res.get("size") is not None and res["size"] <= MAX_RESULT_BYTES
        this = r.get("success") is True and (refused or capped)
        ok = ok and this
        details.append(
            f"{tool}: {'ok' if this else 'BAD'} success={r.get('success')} size={res.get('size')} "
            f"error={str(res.get('error') or r.get('error'))[:160]!r}"
        )
    # 4 MiB of text, printed: the reply is capped by the output limit (1 MiB, carried twice).
    code = (
        'const t = await callMCPTool("mcp__hostile__large_text", { mib: 4 });\n'
        'const s = typeof t === "string" ? t : JSON.stringify(t);\n'
        "console.log(s);\n"
        "s.length"
    )
    args = {"code": code, "timeoutMs": 60000, "allowedTools": [tool_name("large_text")]}
    result = anyio.run(call_raw, "executeTypescript", args, 180)
    size = reply_bytes(result)
    sc = result.structured_content or (result.meta or {}).get("code-executor/report") or {}
    this = size <= 3 * 1024 * 1024
    ok = ok and this
    details.append(
        f"large_text (4 MiB, printed): {'ok' if this else 'BAD'} reply {size} bytes, success={sc.get('success')} "
        f"error={str(sc.get('error'))[:120]!r}"
    )
    details.append(f"ping after: {downstream_reachable()}")
    report("huge, deep and large downstream answers refused or capped", ok, "; ".join(details))


def downstream_slow() -> None:
    # The tool sleeps an hour. The tool-call timeout (5 s, set by tests/docker/compose.hostile.yaml)
    # ends the call well before the execution's own 60 s deadline: the code sees an error.
    code, allowed = downstream_call_ts("slow", {"seconds": 3600}), [tool_name("slow")]
    r = run("executeTypescript", code, timeout_ms=60000, allowed=allowed)
    res = r.get("result") if isinstance(r.get("result"), dict) else {}
    timed_out = r.get("success") is True and bool(res.get("error"))
    # And an execution whose deadline comes first ends at it, the call abandoned.
    d = run("executeTypescript", code, timeout_ms=2000, allowed=allowed)
    deadline = d.get("success") is False or bool((d.get("result") or {}).get("error"))
    report(
        "slow downstream tool ends at the timeouts",
        timed_out and deadline,
        f"tool-call timeout: success={r.get('success')} error={str(res.get('error') or r.get('error'))[:160]!r}; "
        f"execution deadline first: success={d.get('success')} error={str(d.get('error'))[:120]!r}",
    )


# --- slow clients -------------------------------------------------------------------------------

SLOW_CLIENTS = 300  # above the relay's 256 relayed connections and the server's pending cap
SLOW_CLIENT_BOUND_S = 60  # how long the authenticated execution may take while they hang on


async def slow_clients_async() -> tuple[bool, str]:
    host, port = re.match(r"http://([^:/]+):(\d+)", URL).groups()
    conns = [await asyncio.open_connection(host, int(port)) for _ in range(SLOW_CLIENTS)]
    head = f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nContent-Length: 99\r\n"
    # Every other one sends its request head a byte a second; the rest send nothing.
    dripping = [w for _, w in conns[::2]]

    async def drip() -> None:
        for byte in head.encode():
            for w in dripping:
                if not w.is_closing():
                    w.write(bytes([byte]))
            await asyncio.sleep(1)

    dripper = asyncio.create_task(drip())
    try:
        with anyio.fail_after(SLOW_CLIENT_BOUND_S):
            r = await call("executeTypescript", {"code": "console.log(6 * 7)"}, SLOW_CLIENT_BOUND_S)
        ok = bool(r.get("success")) and "42" in (r.get("output") or "")
        detail = f"authenticated execution: success={r.get('success')} output={str(r.get('output')).strip()!r}"
    except TimeoutError:
        ok, detail = False, f"authenticated execution: no answer in {SLOW_CLIENT_BOUND_S} s"
    except Exception as e:
        ok, detail = False, f"authenticated execution: {type(e).__name__}: {e}"
    dripper.cancel()
    closed = sum(await asyncio.gather(*(closed_by_peer(r) for r, _ in conns)))
    for _, w in conns:
        w.close()
    return ok, (
        f"{SLOW_CLIENTS} tokenless connections through the relay ({len(dripping)} sending a byte a second, "
        f"the rest idle), {closed} of them closed by the far side by then; {detail}"
    )


async def closed_by_peer(reader: asyncio.StreamReader) -> bool:
    """Whether the far side has closed (whatever it sent before closing is read and dropped)."""
    try:
        while True:
            data = await asyncio.wait_for(reader.read(65536), 0.05)
            if not data:
                return True
    except asyncio.TimeoutError:
        return False
    except ConnectionError:
        return True


# --- egress: remote servers only through the proxy (tests/docker/compose.egress.yaml) ---------
# Server `allowed` is http://mcp.allowed.example:8000/mcp (on the proxy's allow-list), `denied`
# http://mcp.denied.example:8000/mcp (not on it). Neither name resolves on `inner`: only the
# proxy, on the `outside` network, can reach them.

def remote_ping(server: str) -> dict[str, Any]:
    code = f"""
let answer = null, error = null;
try {{ answer = await callMCPTool("mcp__{server}__ping", {{}}); }}
catch (e) {{ error = String(e?.message ?? e).slice(0, 400); }}
const outcome = {{ answer, error }};
outcome
"""
    r = run("executeTypescript", code, timeout_ms=60000, allowed=[f"mcp__{server}__ping"])
    res = r.get("result") if isinstance(r.get("result"), dict) else {}
    return {"success": r.get("success"), "answer": res.get("answer"), "error": res.get("error") or r.get("error")}


def egress_allowed() -> None:
    # The remote server may still be starting (its Python takes seconds): up to 30 s of retries,
    # past the pool's retry window for a failed server.
    for _ in range(6):
        r = remote_ping("allowed")
        if "pong" in json.dumps(r["answer"]):
            break
        time.sleep(6)
    ok = r["success"] is True and "pong" in json.dumps(r["answer"]) and not r["error"]
    report("remote server on the allow-list reached through the proxy", ok,
           f"mcp__allowed__ping from TypeScript: answer={json.dumps(r['answer'])[:120]} error={r['error']!r}")


def egress_denied() -> None:
    r = remote_ping("denied")
    error = str(r["error"] or "")
    # The call fails, and the error says why: the proxy answered 403 (tinyproxy's "Filtered").
    ok = r["success"] is True and r["answer"] is None and ("403" in error or "Forbidden" in error)
    report("remote server not on the allow-list refused by the proxy, clearly", ok,
           f"mcp__denied__ping from TypeScript: answer={json.dumps(r['answer'])[:120]} error={error[:300]!r}")


EGRESS_SANDBOX_TS = r"""
const attempts = {};
async function attempt(name, fn) {
  try { attempts[name] = "ALLOWED: " + String(await fn()).slice(0, 120); }
  catch (e) { attempts[name] = "refused: " + (e?.name ?? "Error") + ": " + String(e?.message ?? e).slice(0, 80); }
}
await attempt("fetch http://egress:8888/", () => fetch("http://egress:8888/").then((r) => r.status));
await attempt("fetch through the proxy (absolute URL)", () => fetch("http://egress:8888/http://mcp.allowed.example:8000/mcp").then((r) => r.status));
await attempt("fetch http://mcp.allowed.example:8000/mcp", () => fetch("http://mcp.allowed.example:8000/mcp").then((r) => r.status));
await attempt("Deno.connect egress:8888", () => Deno.connect({ hostname: "egress", port: 8888 }).then((c) => { c.close(); return "connected"; }));
await attempt("Deno.env HTTPS_PROXY", () => Deno.env.get("HTTPS_PROXY"));
await attempt("import via http://egress:8888", () => import("http://egress:8888/x.js").then((m) => Object.keys(m)));
attempts
"""


def egress_sandbox() -> None:
    r = run("executeTypescript", EGRESS_SANDBOX_TS, timeout_ms=60000)
    attempts = r.get("result") if isinstance(r.get("result"), dict) else {}
    allowed = {k: v for k, v in attempts.items() if not str(v).startswith("refused")}
    report("sandboxed code cannot reach the egress proxy or its variables", bool(attempts) and not allowed,
           f"{len(attempts)} attempts, allowed: {allowed or 'none'}; "
           + "; ".join(f"{k}: {v}" for k, v in list(attempts.items())[:3])
           if attempts else f"no attempt report: {json.dumps(r)[:300]}")


def slow_clients() -> None:
    ok, detail = asyncio.run(slow_clients_async())
    report("slow clients without the token do not starve one with it", ok, detail)


# --- sidecar: the real third-party server mcp-server-time behind mcp-proxy (profile `sidecars`) ---
SIDECAR_TIME_TS = r"""
const out = {};
for (const zone of ["UTC", "Europe/Paris"]) {
  try {
    const r = await callMCPTool("mcp__time__get_current_time", { timezone: zone });
    const text = typeof r === "string" ? r : (r?.content?.[0]?.text ?? JSON.stringify(r));
    out[zone] = text.trim().startsWith("{") ? JSON.parse(text) : (r?.datetime ? r : { raw: text });
  } catch (e) { out[zone] = { error: String(e?.message ?? e).slice(0, 300) }; }
}
// The sidecar is reachable through callMCPTool only, never by the code itself.
try { const f = await fetch("http://time:8000/status"); out.fetch = "ALLOWED: " + f.status; }
catch (e) { out.fetch = "refused: " + String(e?.name ?? e); }
out
"""


def sidecar_time() -> None:
    """Code calls get_current_time of the `time` sidecar: the answers are the current time (within
    two minutes of this clock) in UTC and in Europe/Paris, with the offset the tz database gives;
    the same code's own fetch of the sidecar is refused."""
    allowed = ["mcp__time__get_current_time"]
    r = run("executeTypescript", SIDECAR_TIME_TS, timeout_ms=60000, allowed=allowed)
    answers = r.get("result") if isinstance(r.get("result"), dict) else {}
    now = datetime.now(UTC)
    details, ok = [], bool(r.get("success"))
    for zone in ("UTC", "Europe/Paris"):
        answer = answers.get(zone) or {}
        try:
            when = datetime.fromisoformat(str(answer.get("datetime")))
            skew = abs((when - now).total_seconds())
            offset_ok = when.utcoffset() == now.astimezone(ZoneInfo(zone)).utcoffset()
            good = answer.get("timezone") == zone and skew < 120 and offset_ok
            details.append(f"{zone}: {answer.get('datetime')} ({skew:.1f} s from this clock, offset {when.utcoffset()})")
        except (TypeError, ValueError):
            good = False
            details.append(f"{zone}: no time in {json.dumps(answer)[:200]}")
        ok = ok and good
    fetched = str(answers.get("fetch"))
    ok = ok and fetched.startswith("refused")
    details.append(f"fetch http://time:8000/status from code: {fetched[:80]}")
    if not r.get("success"):
        details.append(f"error: {str(r.get('error'))[:200]}")
    report("code calls the real time server through its sidecar, cannot reach it itself", ok, "; ".join(details))


CHECK_FUNCTIONS = {
    "landlock": landlock,
    "host-origin": host_origin,
    "module-loader": module_loader,
    "disk-limit": disk_limit,
    "webgpu": webgpu,
    "downstream-schema": downstream_schema,
    "downstream-answers": downstream_answers,
    "downstream-slow": downstream_slow,
    "slow-clients": slow_clients,
    "sidecar-time": sidecar_time,
    "egress-allowed": egress_allowed,
    "egress-denied": egress_denied,
    "egress-sandbox": egress_sandbox,
}


for check in CHECKS:
    try:
        if check == "auth":
            check_auth()
        elif check == "hostile":
            hostile("executeTypescript", HOSTILE_TS, "hostile TypeScript reads no file, env, net or process")
        elif check == "hostile-python":
            hostile("executePython", HOSTILE_PY, "hostile Python reads no file or env")
        elif check == "memory-bomb":
            memory_bomb()
        elif check == "alive":
            alive("server answers (TypeScript and Python)")
        elif check in CHECK_FUNCTIONS:
            CHECK_FUNCTIONS[check]()
        else:
            report(check, False, "unknown check")
    except Exception as e:  # a check that cannot run is a failure (the server died, say)
        report(check, False, describe(e))

sys.exit(1 if failures else 0)
