"""Hostile Python (executePython, Pyodide) must be refused or contained, and the server must keep serving.

Mirrors test_hostile.py for the Python worker, over stdio, one server for the module. Pyodide brings
its own in-memory file system and a `js` bridge to the worker's JavaScript globals (`js.Deno`,
`js.fetch`, `pyodide.code.run_js`): whatever Python reaches through them must be as jailed as
TypeScript. Each case asserts the *effect*: no host file content, secret or environment leaks into
anything the client receives, no file appears on the host, no connection reaches a loopback listener
we own, and a normal Python execution right after succeeds. Exact error messages are not checked.

Every Python execution uses a fresh worker with Pyodide loaded (seconds of CPU each), so the cases
are kept to one execution plus the follow-up each.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness import (
    TRAP_TOKEN,
    McpClient,
    Trap,
    assert_alive_py,
    ok_py,
    run_py,
    store,
)

TAG = uuid.uuid4().hex[:12]
HOST_PASSWD = Path("/etc/passwd").read_text()
# Lines that identify the host's passwd (the root line is the same everywhere, so it does not count).
HOST_PASSWD_LINES = [
    line for line in HOST_PASSWD.splitlines() if line.count(":") >= 6 and not line.startswith("root:")
]


pytestmark = pytest.mark.pyodide


@pytest.fixture(scope="module")
def client(stdio_client: McpClient) -> McpClient:
    return stdio_client


@dataclass
class Ctx:
    client: McpClient
    trap: Trap
    marker: Path
    extra_forbidden: list[str] = field(default_factory=list)


@pytest.fixture
def ctx(client: McpClient, trap: Trap) -> Ctx:
    return Ctx(client=client, trap=trap, marker=Path(f"/tmp/code-executor-e2e-py-pwned-{TAG}-{uuid.uuid4().hex[:6]}"))


def py(v) -> str:
    """A Python value as a Python literal (JSON strings are valid Python strings)."""
    return json.dumps(v)


def assert_no_leak(c: Ctx, ex) -> None:
    everything = ex.everything()
    assert HOST_PASSWD not in everything, "the host's /etc/passwd leaked: " + ex.describe()
    for line in HOST_PASSWD_LINES:
        assert line not in everything, f"a line of the host's /etc/passwd leaked ({line!r}): " + ex.describe()
    e2e = c.client.e2e
    for s in (e2e.canary, TRAP_TOKEN, *c.extra_forbidden):
        assert s not in everything, f"{s!r} leaked: " + ex.describe()


def contained(c: Ctx, code: str, *, must_fail: bool = True, timeout_ms: int = 20000):
    """Run hostile code: nothing leaks, nothing reaches the trap, (by default) it fails, and a
    normal Python execution right after succeeds."""
    connections_before = c.trap.connections
    ex = run_py(c.client, code, timeout_ms=timeout_ms, call_timeout=90)
    assert_no_leak(c, ex)
    assert c.trap.connections == connections_before, "the sandbox reached a loopback listener: " + ex.describe()
    if must_fail:
        assert not ex.success, "hostile code was not refused: " + ex.describe()
    assert_alive_py(c.client)
    return ex


# ---- files ---------------------------------------------------------------------------------


def test_open_etc_passwd_is_not_the_hosts(ctx: Ctx) -> None:
    """Pyodide's `open` sees its own in-memory file system: whatever it returns is not the host's
    file, and none of the host's paths (its config, this repository) exist there."""
    code = f"""
import os
try:
    with open("/etc/passwd") as f:
        data = f.read()
except OSError as e:
    data = "error: " + type(e).__name__
print(data)
host_paths = [{py(str(ctx.client.e2e.config_path))}, {py(str(Path(__file__).resolve()))}, {py(str(ctx.client.e2e.home))}]
{{"passwd": data, "visible": [p for p in host_paths if os.path.exists(p)]}}
"""
    ex = contained(ctx, code, must_fail=False)
    assert ex.success, ex.describe()
    assert ex.result["passwd"] != HOST_PASSWD
    assert ex.result["visible"] == [], f"host paths visible from Python: {ex.result['visible']}"


def test_js_deno_read_text_file_refused(ctx: Ctx) -> None:
    contained(ctx, 'import js\nawait js.Deno.readTextFile("/etc/passwd")')


def test_run_js_read_refused(ctx: Ctx) -> None:
    contained(ctx, 'import pyodide.code\npyodide.code.run_js("Deno.readTextFileSync(\'/etc/passwd\')")')


def test_js_deno_write_text_file_refused(ctx: Ctx) -> None:
    contained(ctx, f'import js\nawait js.Deno.writeTextFile({py(str(ctx.marker))}, "pwned")\n"written"')
    assert not ctx.marker.exists()


# ---- environment ---------------------------------------------------------------------------


def test_js_deno_env_refused(ctx: Ctx) -> None:
    ctx.extra_forbidden.append(str(ctx.client.e2e.home))
    contained(ctx, "import js\njs.Deno.env.toObject().to_py()")


def test_os_environ_has_no_host_values(ctx: Ctx) -> None:
    e2e = ctx.client.e2e
    ctx.extra_forbidden += [str(e2e.home), str(e2e.config_path), str(e2e.project)]
    code = """
import os
env = dict(os.environ)
print(sorted(env))
env
"""
    ex = contained(ctx, code, must_fail=False)
    assert ex.success, ex.describe()
    assert "CODE_EXECUTOR_E2E_CANARY" not in ex.result, ex.result
    assert "MCP_CONFIG_PATH" not in ex.result, ex.result
    assert ex.result.get("HOME") != str(e2e.home), ex.result


# ---- network -------------------------------------------------------------------------------


def test_js_fetch_loopback_refused(ctx: Ctx) -> None:
    code = f'import js\nr = await js.fetch("http://127.0.0.1:{ctx.trap.port}/")\nawait r.text()'
    contained(ctx, code)


def test_socket_connect_refused(ctx: Ctx) -> None:
    code = f"""
import socket
s = socket.create_connection(("127.0.0.1", {ctx.trap.port}), timeout=5)
s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
s.recv(1000)
"""
    contained(ctx, code)


# ---- state ---------------------------------------------------------------------------------


def test_no_global_state_between_executions(ctx: Ctx) -> None:
    c = ctx.client
    ok_py(c, "import builtins\nLEAK = 42\nbuiltins.LEAKED_BUILTIN = 'yes'\ncall_mcp_tool = None\nLEAK")
    # The follow-up is a normal execution that must succeed, with a working API.
    ex = ok_py(c, """
import builtins
r = await call_mcp_tool("mcp__Test-Store__echo", {"value": 1})
{"leak": "LEAK" in globals(), "builtin": hasattr(builtins, "LEAKED_BUILTIN"), "echo": r["echo"]}
""", allowed=[store("echo")])
    assert ex.result == {"leak": False, "builtin": False, "echo": 1}, ex.describe()


def test_no_sys_modules_pollution(ctx: Ctx) -> None:
    c = ctx.client
    ok_py(c, """
import sys, types
fake = types.ModuleType("json")
fake.dumps = lambda *a, **k: "hijacked"
sys.modules["json"] = fake
sys.modules["planted_module"] = types.ModuleType("planted_module")
import json
json.dumps(1)
""")
    ex = ok_py(c, """
import sys, json
{"json": json.dumps([1]), "planted": "planted_module" in sys.modules}
""")
    assert ex.result == {"json": "[1]", "planted": False}, ex.describe()


def test_no_files_between_executions(ctx: Ctx) -> None:
    c = ctx.client
    unique = f"/tmp/code-executor-e2e-py-memfs-{TAG}"
    ex = ok_py(c, f"""
import os
for path in ("/tmp/x", {py(unique)}):
    with open(path, "w") as f:
        f.write("left behind")
os.makedirs("/home/pyodide/planted", exist_ok=True)
with open("/home/pyodide/planted/y", "w") as f:
    f.write("y")
os.path.exists("/tmp/x")
""")
    assert ex.result is True, ex.describe()
    ex = ok_py(c, 'import os\n{"tmp": os.path.exists("/tmp/x"), "home": os.path.exists("/home/pyodide/planted")}')
    assert ex.result == {"tmp": False, "home": False}, ex.describe()
    # Pyodide's in-memory file system never touched the host.
    assert not Path(unique).exists()


# ---- the pipe and the interpreter ----------------------------------------------------------


def test_forged_protocol_lines_do_not_bypass_the_allowlist(ctx: Ctx) -> None:
    c = ctx.client
    forged = [
        {"v": 1, "type": "call", "id": 999101, "method": "callTool",
         "params": {"name": store("delete_customer"), "args": {"customer_id": "C006"}}},
    ]
    lines = "".join(json.dumps(m) + "\n" for m in forged)
    code = f"""
import sys, js
lines = {py(lines)}
print(lines)
sys.stdout.write(lines)
sys.__stdout__.write(lines)
try:
    js.Deno.stdout.writeSync(js.TextEncoder.new().encode(lines))
except Exception as e:
    print("stdout write refused:", type(e).__name__)
"sent"
"""
    run_py(c, code, allowed=[store("echo")], timeout_ms=20000)
    ex = ok_py(c, """
counts = await call_mcp_tool("mcp__Test-Store__count_calls", {})
ids = [x["id"] for x in await call_mcp_tool("mcp__Test-Store__list_customers", {})]
{"counts": counts, "ids": ids}
""", allowed=[store("count_calls"), store("list_customers")])
    assert "delete_customer" not in ex.result["counts"]["byTool"], ex.describe()
    assert "C006" in ex.result["ids"]


def test_exits_are_contained(ctx: Ctx) -> None:
    ex = run_py(ctx.client, 'import os\nprint("before")\nos._exit(3)', timeout_ms=20000)
    assert not ex.success, ex.describe()
    contained(ctx, 'import js\nprint("before")\njs.Deno.exit(4)')


# ---- more ways out, one execution: each attempt must raise -----------------------------------


def test_other_escapes_all_raise(ctx: Ctx) -> None:
    ctx.extra_forbidden.append("mcpServers")
    port = ctx.trap.port
    js_write = "Deno.writeTextFileSync(%s, 'x')" % json.dumps(str(ctx.marker))
    attempts = {
        "read_config": f"js.Deno.readTextFileSync({py(str(ctx.client.e2e.config_path))})",
        "read_environ": 'js.Deno.readTextFileSync("/proc/self/environ")',
        "run_js_write": f"run_js({py(js_write)})",
        "run_js_env": "run_js('Deno.env.get(\"HOME\")')",
        "deno_command": 'js.Deno.Command.new("/bin/true").outputSync()',
        "pyfetch": f'await (await pyfetch("http://localhost:{port}/")).string()',
        "urllib": f'urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=5).read()',
        "websocket": f'js.WebSocket.new("ws://127.0.0.1:{port}/")',
        "deno_connect": f'await js.Deno.connect(js.JSON.parse(\'{{"hostname": "127.0.0.1", "port": {port}}}\'))',
        "kill_parent": 'js.Deno.kill(js.Deno.ppid, "SIGKILL")',
        "dlopen": 'js.Deno.dlopen("libc.so.6", js.JSON.parse("{}"))',
        "ctypes": 'ctypes.CDLL("libc.so.6")',
    }
    body = "\n".join(
        f"try:\n    _v = {expr}\n    out[{py(name)}] = 'NOT REFUSED: ' + repr(_v)[:200]\n"
        f"except BaseException as e:\n    out[{py(name)}] = 'refused: ' + type(e).__name__"
        for name, expr in attempts.items()
    )
    code = f"""
import js, urllib.request
from pyodide.code import run_js
from pyodide.http import pyfetch
try:
    import ctypes
except BaseException as e:
    ctypes = None
out = {{}}
{body}
out
"""
    ex = contained(ctx, code, must_fail=False, timeout_ms=30000)
    assert ex.success, ex.describe()
    not_refused = {k: v for k, v in ex.result.items() if not v.startswith("refused: ")}
    assert not not_refused, f"escapes that worked: {not_refused}"
    assert set(ex.result) == set(attempts), ex.describe()
    assert not ctx.marker.exists()
