"""Fixtures for the code-executor end-to-end tests (see harness.py for the machinery)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import harness
from harness import E2EEnv, McpClient

TRANSPORTS = ["stdio", "http"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_binary: needs the code-executor binary")
    config.addinivalue_line(
        "markers", "pyodide: runs Python executions (a Pyodide worker start, seconds of CPU, per execution)"
    )


@pytest.fixture(scope="session")
def ce_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The code-executor binary, with the runtime dir prepared (fetched from a local mirror if missing)."""
    b = harness.binary()
    if not b.exists():
        pytest.fail(f"code-executor binary not found at {b} (set CODE_EXECUTOR_BIN or build it)")
    rd = harness.runtime_dir()
    if not rd.exists():
        mirror = harness.runtime_mirror()
        if mirror is None:
            pytest.fail(
                f"runtime dir {rd} is missing and no mirror is known: run "
                f"`{b} fetch-runtimes --mirror DIR` with CODE_EXECUTOR_RUNTIME_DIR={rd}"
            )
        home = tmp_path_factory.mktemp("fetch-home")
        env = {
            "HOME": str(home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "CODE_EXECUTOR_RUNTIME_DIR": str(rd),
        }
        proc = subprocess.run(
            [str(b), "fetch-runtimes", "--mirror", str(mirror)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            pytest.fail(f"fetch-runtimes failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return b


def start_client(
    transport: str,
    root: Path,
    servers: tuple[str, ...] = harness.ALL_SERVERS,
    extra_env: dict[str, str] | None = None,
    http_headers: dict[str, str] | None = None,
) -> McpClient:
    """Start one code-executor server (its settings overridable through `extra_env`, e.g.
    `{"CODE_EXECUTOR_HEAP_LIMIT_MB": "128"}`) and connect to it (over HTTP with `http_headers`)."""
    e2e = E2EEnv(root, servers=servers, extra_env=dict(extra_env or {}))
    client = McpClient(transport, e2e, root / f"code-executor-{transport}.log", http_headers=http_headers)
    try:
        client.start()
    except Exception as exc:
        pytest.fail(
            f"could not start and connect to `code-executor serve` over {transport}: {exc!r}\n"
            f"--- server log ---\n{harness.tail(client.log_path)}"
        )
    return client


@pytest.fixture(scope="module", params=TRANSPORTS)
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    """One code-executor server per test module and transport, with all four downstream servers."""
    root = tmp_path_factory.mktemp(f"{request.module.__name__.rsplit('.', 1)[-1]}-{request.param}")
    c = start_client(request.param, root)
    yield c
    c.close()


@pytest.fixture(scope="module")
def stdio_client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    """One code-executor server per test module over stdio only, with all four downstream servers.
    A module may set `SERVER_ENV = {...}` to start it with other settings."""
    name = request.module.__name__.rsplit(".", 1)[-1]
    root = tmp_path_factory.mktemp(f"{name}-stdio")
    c = start_client("stdio", root, extra_env=getattr(request.module, "SERVER_ENV", None))
    yield c
    c.close()


class ServerFactory:
    """Starts extra servers with their own settings inside one test; all are closed after it."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.clients: list[McpClient] = []

    def __call__(
        self,
        extra_env: dict[str, str] | None = None,
        servers: tuple[str, ...] = ("time", "Test-Store"),
        transport: str = "stdio",
        http_headers: dict[str, str] | None = None,
    ) -> McpClient:
        c = start_client(transport, self.tmp_path_factory.mktemp("server"), servers, extra_env, http_headers)
        self.clients.append(c)
        return c

    def close(self) -> None:
        for c in self.clients:
            c.close()


@pytest.fixture
def start_server(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    """`start_server(extra_env)`: a code-executor server with other settings, for one test."""
    factory = ServerFactory(tmp_path_factory)
    yield factory
    factory.close()


@pytest.fixture
def e2e_env(tmp_path: Path) -> E2EEnv:
    """A fresh isolated environment with all four downstream servers configured (for CLI tests)."""
    return E2EEnv(tmp_path)


@pytest.fixture
def good_env(tmp_path: Path) -> E2EEnv:
    """A fresh isolated environment with only the working downstream servers."""
    return E2EEnv(tmp_path, servers=("time", "git", "Test-Store"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        seen: set[int] = set()
        for name, value in getattr(item, "funcargs", {}).items():
            clients = value.clients if isinstance(value, ServerFactory) else [value]
            for i, c in enumerate(clients):
                if isinstance(c, McpClient) and id(c) not in seen:
                    seen.add(id(c))
                    label = name if isinstance(value, McpClient) else f"{name}[{i}]"
                    report.sections.append((f"code-executor log ({label}, {c.transport}) tail", c.log_tail(4000)))


@pytest.fixture(scope="module")
def trap():
    """A loopback listener that records any connection: sandboxed code must never reach it."""
    from harness import Trap

    t = Trap()
    yield t
    t.close()
