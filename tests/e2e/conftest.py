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


def start_client(transport: str, root: Path, servers: tuple[str, ...] = harness.ALL_SERVERS) -> McpClient:
    e2e = E2EEnv(root, servers=servers)
    client = McpClient(transport, e2e, root / f"code-executor-{transport}.log")
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
        for name, value in getattr(item, "funcargs", {}).items():
            if isinstance(value, McpClient):
                report.sections.append(
                    (f"code-executor log ({name}, {value.transport}) tail", value.log_tail(4000))
                )
