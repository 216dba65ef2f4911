"""Shared machinery for the end-to-end tests and the benchmark.

- `E2EEnv`: an isolated world for one `code-executor` process (HOME, project dir, mcp.json, a git repo).
- `McpClient`: a synchronous wrapper over the official MCP Python SDK client (stdio or streamable HTTP),
  running the async SDK in a background event loop (anyio blocking portal), so tests stay plain functions
  and one server process can be shared by a whole module.
- `run_ts` / `run_py` / `Exec`: call `executeTypescript` / `executePython` and check the contract invariants
  of the result.
- `Trap`: a loopback TCP listener that counts the connections the sandbox manages to open.
- `server_children` / `proc_memory`: the worker processes of a server and their memory, from /proc.
- `raw_stdio_tools_list`: speak raw JSON-RPC over stdio to measure the exact `tools/list` answer size.

Paths: the binary comes from `CODE_EXECUTOR_BIN` (default `<repo>/target/release/code-executor`), the
runtime dir from `CODE_EXECUTOR_RUNTIME_DIR` (default `<repo>/target/runtimes`).
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
import json
import os
import queue
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import anyio
import anyio.from_thread
import jsonschema

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent

REPO = Path(__file__).resolve().parents[2]
SERVERS_DIR = REPO / "tests" / "servers"
STORE_SERVER = SERVERS_DIR / "store_server.py"
ASKER_SERVER = SERVERS_DIR / "asker_server.py"
PEOPLE_SERVER = SERVERS_DIR / "people_server.py"
# The venv's bin dir (not resolved: a venv's python is a symlink to the base interpreter).
VENV_BIN = Path(sys.executable).parent

OUR_TOOLS = {"executeTypescript", "executePython", "searchTools", "getToolSchema", "listServers", "health"}
# The tools that run code; they share one result shape.
EXEC_TOOLS = ("executeTypescript", "executePython")

MISSING_BINARY = "/nonexistent/definitely-missing-binary"

if str(SERVERS_DIR) not in sys.path:
    sys.path.insert(0, str(SERVERS_DIR))


def binary() -> Path:
    return Path(os.environ.get("CODE_EXECUTOR_BIN") or REPO / "target" / "release" / "code-executor")


def runtime_dir() -> Path:
    return Path(os.environ.get("CODE_EXECUTOR_RUNTIME_DIR") or REPO / "target" / "runtimes")


def runtime_mirror() -> Path | None:
    """A local runtime mirror, if one is known: `CODE_EXECUTOR_RUNTIME_MIRROR`, else `<repo>/../shared/runtime-mirror`."""
    env = os.environ.get("CODE_EXECUTOR_RUNTIME_MIRROR")
    if env:
        return Path(env)
    guess = REPO.parent / "shared" / "runtime-mirror"
    return guess if guess.is_dir() else None


def venv_script(name: str) -> str:
    p = VENV_BIN / name
    if p.exists():
        return str(p)
    found = shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} not found (install tests/e2e/requirements.txt into the venv)")
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc: subprocess.Popen, port: int, log: Path, timeout: float = 60.0) -> None:
    """Wait until `proc` accepts connections on 127.0.0.1:`port`; fail with its log if it exits
    or does not listen within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"{proc.args!r} exited with {proc.returncode}:\n{tail(log)}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"{proc.args!r} did not listen within {timeout} s:\n{tail(log)}"
            time.sleep(0.1)


@contextlib.contextmanager
def http_server(root: Path, settings: dict[str, str] | None = None, servers: tuple[str, ...] = ()):
    """A `serve --http` process on loopback without a token (each peer address is a principal,
    and a client session), with `servers` downstream and `settings` in its environment; yields
    its port, its world (for the CLI) and the process. Its log is shown if the body fails."""
    e2e = E2EEnv(root, servers=servers, extra_env=settings or {})
    port = free_port()
    log_path = root / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [str(binary()), "serve", "--http", f"127.0.0.1:{port}"],
            cwd=e2e.project, env=e2e.env(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            wait_listening(proc, port, log_path)
            yield port, e2e, proc
        except BaseException:
            print(tail(log_path))
            raise
        finally:
            proc.terminate()
            proc.wait(10)


def tail(path: Path | None, limit: int = 6000) -> str:
    if path is None or not path.exists():
        return "(no log)"
    data = path.read_bytes()[-limit:]
    return data.decode("utf-8", "replace")


# --------------------------------------------------------------------------------------------
# The isolated environment
# --------------------------------------------------------------------------------------------

GIT_COMMITS = [
    # (file, content, message), oldest first
    ("README.md", "# demo shop\n", "Initial commit: README"),
    ("inventory.py", "STOCK = {}\n", "Add inventory module"),
    ("reports.py", "def total(x):\n    return round(x, 2)\n", "Fix stock rounding in reports"),
    ("tickets.py", "def export():\n    return []\n", "Add ticket export"),
    ("inventory.py", "STOCK = {}\nWAREHOUSES = []\n", "Fix crash when warehouse is empty"),
    ("VERSION", "1.1.0\n", "Bump version to 1.1.0"),
]


def make_git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(path.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "E2E Tester",
        "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_NAME": "E2E Tester",
        "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
    }

    def git(*args: str, extra: dict[str, str] | None = None) -> None:
        subprocess.run(["git", *args], cwd=path, env={**env, **(extra or {})}, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for i, (name, content, message) in enumerate(GIT_COMMITS):
        (path / name).write_text(content)
        git("add", name)
        date = f"2024-03-{10 + i:02d}T12:00:00+00:00"
        git("commit", "-q", "-m", message, extra={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return path


ALL_SERVERS = ("time", "git", "Test-Store", "broken")


@dataclass
class E2EEnv:
    root: Path
    servers: tuple[str, ...] = ALL_SERVERS
    home: Path = field(init=False)
    project: Path = field(init=False)
    config_path: Path = field(init=False)
    # Extra environment of the code-executor process, e.g. {"CODE_EXECUTOR_HEAP_LIMIT_MB": "128"}.
    extra_env: dict[str, str] = field(default_factory=dict)
    git_repo: Path = field(init=False)
    canary: str = field(init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.config_path = self.root / "mcp.json"
        self.git_repo = self.root / "repo"
        self.canary = "canary-" + secrets.token_hex(8)
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)
        if "git" in self.servers:
            make_git_repo(self.git_repo)
        self.config_path.write_text(json.dumps({"mcpServers": self.server_configs()}, indent=2))

    def server_configs(self) -> dict[str, Any]:
        all_configs: dict[str, Any] = {
            "time": {"command": venv_script("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "git": {
                "type": "stdio",
                "command": venv_script("mcp-server-git"),
                "args": ["--repository", str(self.git_repo)],
                "env": {"GIT_PYTHON_GIT_EXECUTABLE": shutil.which("git") or "git"},
            },
            "Test-Store": {"command": sys.executable, "args": [str(STORE_SERVER)]},
            "broken": {"command": MISSING_BINARY, "args": []},
            "asker": {"command": sys.executable, "args": [str(ASKER_SERVER)]},
            # Records what it receives in `people-received.jsonl` beside the test's other files.
            "people": {
                "command": sys.executable,
                "args": [str(PEOPLE_SERVER)],
                "env": {"PEOPLE_RECEIVED": str(self.root / "people-received.jsonl")},
            },
        }
        return {name: all_configs[name] for name in self.servers}

    def env(self) -> dict[str, str]:
        """The whole environment of a code-executor process: nothing else is inherited."""
        env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "CODE_EXECUTOR_PROJECT_DIR": str(self.project),
            "MCP_CONFIG_PATH": str(self.config_path),
            "CODE_EXECUTOR_RUNTIME_DIR": str(runtime_dir()),
            # A fake secret: it must never show up in anything the sandbox can return.
            "CODE_EXECUTOR_E2E_CANARY": self.canary,
        }
        # The cache holds the verified Pyodide snapshot; sharing it spares each server making one.
        for passthrough in ("CODE_EXECUTOR_RUNTIME_MIRROR", "CODE_EXECUTOR_CACHE_DIR", "CODE_EXECUTOR_LOG", "RUST_LOG", "RUST_BACKTRACE", "LANG"):
            if os.environ.get(passthrough):
                env[passthrough] = os.environ[passthrough]
        env.update(self.extra_env)
        return env


def run_cli(e2e: E2EEnv, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary()), *args],
        cwd=e2e.project,
        env=e2e.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --------------------------------------------------------------------------------------------
# MCP client
# --------------------------------------------------------------------------------------------


class ServerStartError(RuntimeError):
    pass


class McpClient:
    """A synchronous MCP client over stdio or streamable HTTP to one `code-executor serve` process."""

    def __init__(
        self,
        transport: str,
        e2e: E2EEnv | None,
        log_path: Path,
        call_timeout: float = 90.0,
        stdio_params: StdioServerParameters | None = None,
        http_headers: dict[str, str] | None = None,
        callbacks: dict[str, Any] | None = None,
    ):
        """`stdio_params` connects to some other stdio MCP server instead of code-executor (used to
        check the downstream test servers themselves)."""
        assert transport in ("stdio", "http")
        assert e2e is not None or stdio_params is not None
        self.transport = transport
        self.e2e = e2e
        self.stdio_params = stdio_params
        # Sent with every HTTP request (e.g. `Authorization`).
        self.http_headers = dict(http_headers or {})
        # Our own contract (structuredContent + text block) only holds for code-executor's tools.
        self.check_contract = stdio_params is None
        self.log_path = log_path
        self.call_timeout = call_timeout
        self.port: int | None = None
        self.url: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.output_schemas: dict[str, Any] = {}
        self._stack = contextlib.ExitStack()
        self._log_file = None
        self.session: ClientSession | None = None
        # `ClientSession` keyword arguments, e.g. `sampling_callback`, `elicitation_callback`.
        self.callbacks = dict(callbacks or {})

    # ---- lifecycle ----
    def start(self) -> "McpClient":
        try:
            self._log_file = self._stack.enter_context(open(self.log_path, "w"))
            self._portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
            if self.transport == "http":
                self._start_http_process()
            self.session = self._stack.enter_context(self._portal.wrap_async_context_manager(self._connect()))
            tools = self.list_tools()
            self.output_schemas = {t.name: t.output_schema for t in tools.tools}
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self) -> "McpClient":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)

    def log_tail(self, limit: int = 6000) -> str:
        if self._log_file is not None and not self._log_file.closed:
            self._log_file.flush()
        return tail(self.log_path, limit)

    def _start_http_process(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [str(binary()), "serve", "--http", f"127.0.0.1:{self.port}"],
            cwd=self.e2e.project,
            env=self.e2e.env(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(
                    f"code-executor serve --http exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise ServerStartError(f"code-executor serve --http did not listen within 60 s:\n{self.log_tail()}")

    @asynccontextmanager
    async def _connect(self):
        if self.transport == "stdio":
            params = self.stdio_params or StdioServerParameters(
                command=str(binary()), args=["serve"], env=self.e2e.env(), cwd=str(self.e2e.project)
            )
            async with stdio_client(params, errlog=self._log_file) as (read, write):
                async with ClientSession(read, write, **self.callbacks) as session:
                    with anyio.fail_after(60):
                        await session.initialize()
                    yield session
        else:
            assert self.url
            http_client = create_mcp_http_client(headers=self.http_headers) if self.http_headers else None
            async with streamable_http_client(self.url, http_client=http_client) as (read, write):
                async with ClientSession(read, write, **self.callbacks) as session:
                    with anyio.fail_after(60):
                        await session.initialize()
                    yield session

    # ---- calls ----
    def list_tools(self):
        assert self.session is not None
        return self._portal.call(self.session.list_tools)

    def _call_async(self, name: str, args: dict[str, Any], timeout: float | None):
        assert self.session is not None
        return self.session.call_tool(name, args, read_timeout_seconds=timeout or self.call_timeout)

    def call(self, name: str, args: dict[str, Any] | None = None, timeout: float | None = None) -> CallToolResult:
        async def one() -> CallToolResult:
            return await self._call_async(name, args or {}, timeout)

        result = self._portal.call(one)
        self.check_result(name, result)
        return result

    def call_many(self, calls: Iterable[tuple[str, dict[str, Any]]], timeout: float | None = None) -> list[CallToolResult]:
        """Run several tool calls concurrently on the one session; results in call order."""
        calls = list(calls)

        async def all_() -> list[CallToolResult]:
            results: list[Any] = [None] * len(calls)

            async def one(i: int, name: str, args: dict[str, Any]) -> None:
                results[i] = await self._call_async(name, args, timeout)

            async with anyio.create_task_group() as tg:
                for i, (name, args) in enumerate(calls):
                    tg.start_soon(one, i, name, args)
            return results

        results = self._portal.call(all_)
        for (name, _), r in zip(calls, results):
            self.check_result(name, r)
        return results

    def check_result(self, name: str, result: CallToolResult) -> None:
        """Contract: structuredContent matching the tool's outputSchema, plus one readable text block."""
        if not self.check_contract:
            return
        texts = [c for c in result.content if isinstance(c, TextContent)]
        assert texts, f"{name}: result has no text block: {dump(result)}"
        if result.is_error and name not in EXEC_TOOLS:
            return  # a failed search/schema lookup may carry only its message
        if result.is_error:
            # A failed execution's report is in `_meta`, not structured content (which clients
            # validate only on success, and which some put before the model instead of the text).
            assert result.structured_content is None, f"{name}: a failure carries structuredContent: {dump(result)}"
            refused = texts[0].text.startswith(f"invalid arguments for {name}")  # nothing ran
            assert refused or isinstance(exec_report(result), dict), f"{name}: a failure without its report in _meta: {dump(result)}"
            return
        sc = result.structured_content
        assert isinstance(sc, dict), f"{name}: no structuredContent: {dump(result)}"
        schema = self.output_schemas.get(name)
        if schema:
            try:
                jsonschema.validate(sc, schema)
            except jsonschema.ValidationError as e:  # pragma: no cover - reported as a failure
                raise AssertionError(f"{name}: structuredContent does not match outputSchema: {e.message}\n{dump(result)}")

    async def acall(self, name: str, args: dict[str, Any] | None = None, timeout: float | None = None) -> CallToolResult:
        """One tool call, awaited on the client's event loop (inside `run_async`); checked like `call`."""
        result = await self._call_async(name, args or {}, timeout)
        self.check_result(name, result)
        return result

    def run_async(self, fn: Any, *args: Any) -> Any:
        """Run `await fn(*args)` on the client's event loop, for tests that need their own concurrency
        (e.g. a second call started while a first one is running); use `acall` inside."""
        return self._portal.call(fn, *args)

    @property
    def server_pid(self) -> int | None:
        """The pid of the code-executor process (stdio: the child of this process running the binary
        with this client's HOME, when several servers run)."""
        if self.proc is not None:
            return self.proc.pid
        wanted = str(binary())
        home = f"HOME={self.e2e.home}".encode() if self.e2e is not None else None
        found = None
        for pid in child_pids(os.getpid()):
            try:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv0 != wanted:
                continue
            if home is None or home in environ:
                return pid
            found = found or pid
        return found

    def structured(self, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(name, args)
        assert not result.is_error, f"{name} failed: {dump(result)}"
        assert isinstance(result.structured_content, dict)
        return result.structured_content


def dump(result: Any, limit: int = 3000) -> str:
    try:
        text = result.model_dump_json(by_alias=True, exclude_none=True)
    except Exception:
        text = repr(result)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


# --------------------------------------------------------------------------------------------
# executeTypescript helper
# --------------------------------------------------------------------------------------------


@dataclass
class Exec:
    raw: CallToolResult
    sc: dict[str, Any]
    elapsed: float
    tool: str = "executeTypescript"

    @property
    def success(self) -> bool:
        return self.sc["success"]

    @property
    def output(self) -> str:
        return self.sc["output"]

    @property
    def error(self) -> str | None:
        return self.sc["error"]

    @property
    def result(self) -> Any:
        return self.sc.get("result")

    @property
    def has_result(self) -> bool:
        return "result" in self.sc

    @property
    def tool_calls(self) -> list[str]:
        return self.sc["toolCallsMade"]

    @property
    def summary(self) -> dict[str, dict[str, Any]]:
        return {row["tool"]: row for row in self.sc["toolCallSummary"]}

    @property
    def text(self) -> str:
        return "\n".join(c.text for c in self.raw.content if isinstance(c, TextContent))

    def everything(self) -> str:
        """All the text the client got back (for leak checks)."""
        return json.dumps(self.sc, default=str) + "\n" + self.text

    def describe(self) -> str:
        sc = dict(self.sc)
        if isinstance(sc.get("output"), str) and len(sc["output"]) > 2000:
            sc["output"] = sc["output"][:2000] + f"... ({len(self.sc['output'])} chars)"
        return f"{self.tool} result ({self.elapsed:.2f}s): " + json.dumps(sc, indent=1, default=str)[:6000]


def run_code(
    client: McpClient,
    tool: str,
    code: str,
    allowed: list[str] | None = None,
    timeout_ms: int | None = None,
    call_timeout: float | None = None,
) -> Exec:
    """Call `executeTypescript` or `executePython` and check the invariants of the result."""
    assert tool in EXEC_TOOLS, tool
    args: dict[str, Any] = {"code": code}
    if allowed is not None:
        args["allowedTools"] = allowed
    if timeout_ms is not None:
        args["timeoutMs"] = timeout_ms
    t0 = time.monotonic()
    raw = client.call(tool, args, timeout=call_timeout)
    elapsed = time.monotonic() - t0
    return check_exec(tool, raw, elapsed)


REPORT_META = "code-executor/report"


def exec_report(raw: CallToolResult) -> dict[str, Any] | None:
    """An execution's report: on failure `_meta[REPORT_META]`; on success its structured content
    with the accounting (call lists, sampling) `_meta[REPORT_META]` holds."""
    report = (raw.meta or {}).get(REPORT_META)
    if raw.is_error:
        return report if isinstance(report, dict) else None
    sc = raw.structured_content
    if not isinstance(sc, dict):
        return None
    assert report is None or (isinstance(report, dict) and not set(report) & set(sc)), dump(raw)
    return {**sc, **(report or {})}


def wire_report(result: dict[str, Any]) -> Any:
    """`exec_report` of a result read as JSON off the wire (a task's result, a raw reply): its
    structuredContent with what `_meta[REPORT_META]` holds, or that report alone on failure."""
    report = (result.get("_meta") or {}).get(REPORT_META)
    sc = result.get("structuredContent")
    if sc is None:
        return report or {}
    return {**sc, **report} if isinstance(sc, dict) and isinstance(report, dict) else sc


def check_exec(tool: str, raw: CallToolResult, elapsed: float) -> Exec:
    sc = exec_report(raw)
    assert isinstance(sc, dict), f"{tool} returned no report: {dump(raw)}"
    for key in ("success", "output", "executionTimeMs"):
        assert key in sc, f"{tool} result lacks {key!r}: {dump(raw)}"
    # Left out when empty, so that a model reading the report reads no more than it must.
    for key, empty in (("error", None), ("toolCallsMade", []), ("toolCallSummary", [])):
        assert sc.get(key, empty) != empty or key not in sc, f"{tool} result carries an empty {key!r}: {dump(raw)}"
        sc = {key: empty, **sc}
    ex = Exec(raw, sc, elapsed, tool)
    assert bool(raw.is_error) == (not ex.success), f"isError must be true exactly when success is false: {dump(raw)}"
    if ex.success:
        assert ex.error is None, ex.describe()
    else:
        assert isinstance(ex.error, str) and ex.error, ex.describe()
    return ex


def run_ts(client: McpClient, code: str, **kw: Any) -> Exec:
    return run_code(client, "executeTypescript", code, **kw)


def run_py(client: McpClient, code: str, **kw: Any) -> Exec:
    return run_code(client, "executePython", code, **kw)


def ok(client: McpClient, code: str, **kw: Any) -> Exec:
    ex = run_ts(client, code, **kw)
    assert ex.success, ex.describe()
    return ex


def ok_py(client: McpClient, code: str, **kw: Any) -> Exec:
    ex = run_py(client, code, **kw)
    assert ex.success, ex.describe()
    return ex


ALIVE_CODE = 'console.log("alive"); return 6 * 7;'
ALIVE_PY = 'print("alive")\n6 * 7'


def _assert_alive(ex: Exec, language: str) -> None:
    assert ex.success, f"server did not recover ({language}): " + ex.describe()
    assert ex.result == 42, ex.describe()
    assert "alive" in ex.output, ex.describe()


def assert_alive(client: McpClient) -> None:
    """The server still serves a normal execution after whatever just happened."""
    _assert_alive(run_ts(client, ALIVE_CODE), "typescript")


def assert_alive_py(client: McpClient) -> None:
    """The server still serves a normal Python execution (a fresh Python worker) after whatever just happened."""
    _assert_alive(run_py(client, ALIVE_PY), "python")


def assert_alive_both(client: McpClient) -> None:
    assert_alive(client)
    assert_alive_py(client)


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


def store(tool: str) -> str:
    return tool_name("Test-Store", tool)


# --------------------------------------------------------------------------------------------
# Raw JSON-RPC over stdio (exact byte sizes of `tools/list`)
# --------------------------------------------------------------------------------------------


@dataclass
class RawToolsList:
    pages: list[bytes]
    tools: list[dict[str, Any]]
    junk: list[bytes] = field(default_factory=list)  # stdout lines that were not JSON-RPC

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.pages)


def raw_stdio_tools_list(
    command: list[str], env: dict[str, str] | None = None, cwd: str | Path | None = None, timeout: float = 60.0
) -> RawToolsList:
    """Start an MCP server over stdio, initialize, and return the raw bytes of its tools/list answer(s)."""
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    lines: queue.Queue[bytes | None] = queue.Queue()
    junk: list[bytes] = []

    def reader() -> None:
        assert proc.stdout
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.monotonic() + timeout

    def send(msg: dict[str, Any]) -> None:
        assert proc.stdin
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def wait_for(req_id: int) -> tuple[bytes, dict[str, Any]]:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{command[0]}: no answer to request {req_id}")
            line = lines.get(timeout=remaining)
            if line is None:
                raise RuntimeError(f"{command[0]} closed stdout before answering request {req_id}")
            line = line.rstrip(b"\r\n")
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                junk.append(line)
                continue
            if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                junk.append(line)
                continue
            if msg.get("id") == req_id:
                if "error" in msg:
                    raise RuntimeError(f"{command[0]}: request {req_id} failed: {msg['error']}")
                return line, msg

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "e2e-raw", "version": "0"},
                },
            }
        )
        wait_for(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        pages: list[bytes] = []
        tools: list[dict[str, Any]] = []
        cursor = None
        req = 2
        while True:
            params = {"cursor": cursor} if cursor else {}
            send({"jsonrpc": "2.0", "id": req, "method": "tools/list", "params": params})
            line, msg = wait_for(req)
            pages.append(line)
            tools.extend(msg["result"]["tools"])
            cursor = msg["result"].get("nextCursor")
            req += 1
            if not cursor:
                break
        return RawToolsList(pages, tools, junk)
    finally:
        with contextlib.suppress(Exception):
            assert proc.stdin
            proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def audit_records(
    audit_dir: Path, want: int, timeout: float = 30.0, event: str | None = None
) -> list[dict[str, Any]]:
    """The records of the audit files (JSON lines; each line must parse), once at least `want` of
    them, or of those whose `event` is `event`, are there: the writer is asynchronous, and the
    records of one execution's tool calls may land before its own record."""
    deadline = time.monotonic() + timeout
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        # Whole lines only: the writer may be halfway through the last one.
        texts = [f.read_text() for f in sorted(audit_dir.glob("audit.*.jsonl"))]
        lines = [line for text in texts for line in text[: text.rfind("\n") + 1].splitlines()]
        records = [json.loads(line) for line in lines]
        if len([r for r in records if event is None or r.get("event") == event]) >= want:
            break
        time.sleep(0.05)
    return records


# --------------------------------------------------------------------------------------------
# A loopback trap for network escapes
# --------------------------------------------------------------------------------------------

PASSWD_RE = re.compile(r"root:[^:\n]*:0:0:")
# What the trap listener answers; it never appears in any code we send, so seeing it means a leak.
TRAP_TOKEN = "trapped-" + secrets.token_hex(16)


class Trap:
    """A loopback TCP listener that records every connection the sandbox manages to open."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            self.connections += 1
            try:
                body = TRAP_TOKEN.encode()
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
                )
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(2)


# --------------------------------------------------------------------------------------------
# Processes and their memory, from /proc
# --------------------------------------------------------------------------------------------


def child_pids(pid: int) -> list[int]:
    """The direct children of a process: /proc/<pid>/task/*/children, else a scan of /proc."""
    found: set[int] = set()
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found.update(int(x) for x in (task / "children").read_text().split())
        return sorted(found)
    except OSError:
        pass
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return sorted(found)


def proc_cmdline(pid: int) -> list[str]:
    try:
        return [a.decode("utf-8", "replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return []


def proc_memory(pid: int) -> dict[str, int]:
    """VmHWM (peak RSS) and VmRSS of a process, in KiB (empty if it is gone)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def sandbox_workers(server_pid: int) -> dict[str, list[int]]:
    """The server's Deno processes by kind: "python" and "typescript" workers, and "other" Deno
    processes (e.g. the one making the Pyodide memory snapshot); downstream servers are skipped."""
    kinds: dict[str, list[int]] = {"python": [], "typescript": [], "other": []}
    for pid in child_pids(server_pid):
        argv = proc_cmdline(pid)
        if not argv or Path(argv[0]).name != "deno":
            continue
        if "python" in argv:
            kinds["python"].append(pid)
        elif "typescript" in argv:
            kinds["typescript"].append(pid)
        else:
            kinds["other"].append(pid)
    return kinds


def assert_workflow_common(ex, allowed: list[str], delivered: list[dict]) -> None:
    """What every multi-server workflow test (TypeScript or Python) checks of its result."""
    now = ex.result["now"]
    assert now["timezone"] == "UTC"
    stamp = datetime.fromisoformat(now["datetime"])
    assert abs((stamp - datetime.now(timezone.utc)).total_seconds()) < 300, now
    assert f"checked {len(delivered)} delivered orders" in ex.output
    # Only the filtered data came back: the full order list stayed in the sandbox.
    assert "O1001" not in ex.everything()
    assert sorted(ex.tool_calls) == sorted(allowed), ex.tool_calls
    assert {t: row["calls"] for t, row in ex.summary.items()} == {t: 1 for t in allowed}


def assert_refusals(ex, tool: str, keys=("a", "b", "c")) -> None:
    """Each of `keys` in the result holds the refusal message for `tool` (never "called")."""
    for key in keys:
        msg = ex.result[key]
        assert msg != "called", ex.describe()
        assert tool in msg and "not in allowedTools" in msg, msg
