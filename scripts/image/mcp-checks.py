"""Checks of the running appliance through its real MCP endpoint (used by test-docker-security.sh).

    python mcp-checks.py URL TOKEN_FILE CHECK...

CHECK is one of: auth, hostile, hostile-python, memory-bomb, alive. Prints one `PASS name: detail`
or `FAIL name: detail` line per check and exits 1 if any failed. The client is the official MCP
Python SDK over streamable HTTP, with the bearer token the appliance requires.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

URL, TOKEN_FILE, CHECKS = sys.argv[1], sys.argv[2], sys.argv[3:]
TOKEN = open(TOKEN_FILE).read().strip()
failures = 0


def report(name: str, passed: bool, detail: str) -> None:
    global failures
    failures += 0 if passed else 1
    detail = " ".join(detail.split())[:600]
    print(f"{'PASS' if passed else 'FAIL'} {name}: {detail}", flush=True)


async def call(tool: str, args: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout, read=timeout)) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.fail_after(60):
                    await session.initialize()
                result = await session.call_tool(tool, args)
                if result.structured_content is not None:
                    return dict(result.structured_content)
                text = "".join(getattr(c, "text", "") for c in result.content)
                return {"success": False, "error": text, "output": ""}


def run(tool: str, code: str, timeout_ms: int = 30000) -> dict[str, Any]:
    return anyio.run(call, tool, {"code": code, "timeoutMs": timeout_ms})


def raw_post(headers: dict[str, str]) -> int:
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
    r = run("executeTypescript", MEMORY_BOMB, timeout_ms=60000)
    report(
        "memory bomb contained",
        r.get("success") is False,
        f"success={r.get('success')} error={str(r.get('error'))[:200]!r}",
    )


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
        else:
            report(check, False, "unknown check")
    except Exception as e:  # a check that cannot run is a failure
        report(check, False, f"{type(e).__name__}: {e}")

sys.exit(1 if failures else 0)
