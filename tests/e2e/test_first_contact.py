"""First contact with downstream stdio servers: each is started once for its first call, whatever
protocol era it speaks, and the servers an execution's `allowedTools` names start together as
the execution starts, before its code asks.

Every server runs behind `tests/servers/log_starts.sh`, which appends a `spawn` line with the time
to a file per start; `tests/servers/lifecycle_server.py` adds `ready` (serving begins, after its
start delay) and `discover` (a `server/discover` it received). Evidence is counted and ordered
from those files, never taken from wall-clock thresholds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import harness
from conftest import ServerFactory
from harness import E2EEnv, McpClient, run_ts

LOG_STARTS = harness.SERVERS_DIR / "log_starts.sh"
LIFECYCLE = harness.SERVERS_DIR / "lifecycle_server.py"


def logged(log: Path, command: str, *args: str) -> dict[str, Any]:
    """The config entry of a server whose starts are logged in `log`."""
    return {"command": str(LOG_STARTS), "args": [str(log), command, *args]}


def lifecycle(log: Path, *args: str) -> dict[str, Any]:
    return logged(log, sys.executable, str(LIFECYCLE), "--log", str(log), *args)


def events(log: Path, kind: str) -> list[float]:
    if not log.exists():
        return []
    return [float(line.split()[1]) for line in log.read_text().splitlines() if line.split()[0] == kind]


class Servers(ServerFactory):
    """`servers(config)`: a code-executor whose MCP config holds exactly `config`, in `env`
    (a new one unless given: a second process in the same env shares its cache directory)."""

    def __call__(  # type: ignore[override]
        self, config: dict[str, Any], env: E2EEnv | None = None, extra_env: dict[str, str] | None = None
    ) -> McpClient:
        if env is None:
            env = E2EEnv(self.tmp_path_factory.mktemp("first"), servers=(), extra_env=dict(extra_env or {}))
        env.config_path.write_text(json.dumps({"mcpServers": config}, indent=2))
        client = McpClient("stdio", env, env.root / f"code-executor-{len(self.clients)}.log")
        self.clients.append(client)
        try:
            client.start()
        except Exception as exc:  # pragma: no cover - reported as a failure
            pytest.fail(f"could not start code-executor: {exc!r}\n{client.log_tail()}")
        return client


@pytest.fixture
def servers(tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    factory = Servers(tmp_path_factory)
    yield factory
    factory.close()


def protocol_of(client: McpClient, server: str) -> str | None:
    rows = client.structured("listServers", {})["servers"]
    return {row["name"]: row for row in rows}[server].get("protocol")


def call_once(client: McpClient, server: str, tool: str, args: dict[str, Any], timeout_ms: int = 60_000) -> Any:
    code = f"return await callMCPTool({json.dumps(f'mcp__{server}__{tool}')}, {json.dumps(args)});"
    ex = run_ts(client, code, allowed=[f"mcp__{server}__{tool}"], timeout_ms=timeout_ms)
    assert ex.success, ex.describe() + client.log_tail()
    return ex


# --------------------------------------------------------------------------------------------
# One start per first call
# --------------------------------------------------------------------------------------------

CASES = {
    # name: (config builder, tool, args, protocol it speaks)
    "time": (
        lambda log, env: logged(log, harness.venv_script("mcp-server-time"), "--local-timezone", "UTC"),
        "get_current_time",
        {"timezone": "UTC"},
        "2026-07-28",
    ),
    "git": (
        lambda log, env: logged(
            log, harness.venv_script("mcp-server-git"), "--repository", str(harness.make_git_repo(env.root / "repo"))
        ),
        "git_status",
        {"repo_path": "REPO"},
        "2026-07-28",
    ),
    "Test-Store": (
        lambda log, env: logged(log, sys.executable, str(harness.STORE_SERVER)),
        "echo",
        {"value": 1},
        "2026-07-28",
    ),
    # Answers server/discover with "method not found", as a legacy server does.
    "legacy": (lambda log, env: lifecycle(log), "hello", {"name": "a"}, "2025-11-25"),
    # Never answers server/discover at all: taken for legacy once the probe's bound has passed.
    "silent": (lambda log, env: lifecycle(log, "--ignore-discover"), "hello", {"name": "a"}, "2025-11-25"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_server_is_started_once_for_its_first_call(servers: Servers, tmp_path_factory, name: str) -> None:
    build, tool, args, protocol = CASES[name]
    env = E2EEnv(tmp_path_factory.mktemp(f"once-{name}"), servers=())
    log = env.root / "starts.log"
    if "repo_path" in args:
        args = {"repo_path": str(env.root / "repo")}
    client = servers({name: build(log, env)}, env=env)
    # Well under rmcp's own 10 s wait for an unanswered probe (plus the start), for the silent one.
    ex = call_once(client, name, tool, args, timeout_ms=9_000)
    print(f"{name}: first call {ex.sc['executionTimeMs']} ms")
    assert len(events(log, "spawn")) == 1, log.read_text() + client.log_tail()
    assert protocol_of(client, name) == protocol
    if name in ("legacy", "silent"):
        # The probe reached the very process that then served `initialize`.
        assert len(events(log, "discover")) == 1, log.read_text()


def test_a_later_process_skips_the_probe_of_a_legacy_server(servers: Servers, tmp_path_factory) -> None:
    """What a server spoke is remembered in the cache directory (by a digest of its launch spec):
    the next code-executor process opens with `initialize`, without waiting for the probe's bound."""
    env = E2EEnv(tmp_path_factory.mktemp("remember"), servers=())
    log = env.root / "starts.log"
    config = {"silent": lifecycle(log, "--ignore-discover")}
    first = servers(config, env=env)
    call_once(first, "silent", "hello", {"name": "a"})
    first.close()
    assert (len(events(log, "spawn")), len(events(log, "discover"))) == (1, 1), log.read_text()
    second = servers(config, env=env)
    call_once(second, "silent", "hello", {"name": "b"})
    assert (len(events(log, "spawn")), len(events(log, "discover"))) == (2, 1), log.read_text()
    assert protocol_of(second, "silent") == "2025-11-25"


def test_a_modern_server_slower_than_the_probe_bound_is_reached_and_remembered(
    servers: Servers, tmp_path_factory
) -> None:
    """A 2026-07-28 server that starts after the probe's bound: its late answer to the probe is
    never taken for the answer to the `initialize` that followed (it refuses that), it is
    started once more with `server/discover` alone, and the next process starts it once."""
    env = E2EEnv(tmp_path_factory.mktemp("slow-modern"), servers=())
    log = env.root / "starts.log"
    config = {"slow": lifecycle(log, "--era", "dual", "--start-delay", "4")}
    first = servers(config, env=env)
    call_once(first, "slow", "hello", {"name": "a"})
    assert protocol_of(first, "slow") == "2026-07-28"
    first.close()
    assert len(events(log, "spawn")) == 2, log.read_text()
    second = servers(config, env=env)
    call_once(second, "slow", "hello", {"name": "b"})
    assert len(events(log, "spawn")) == 3, log.read_text()


# --------------------------------------------------------------------------------------------
# Servers named by allowedTools start together, as the execution starts
# --------------------------------------------------------------------------------------------

SEQUENTIAL = """
const a = await callMCPTool("mcp__slowA__hello", { name: "a" });
const b = await callMCPTool("mcp__slowB__hello", { name: "b" });
return [a, b];
"""


def slow_pair(root: Path) -> tuple[dict[str, Any], Path, Path]:
    log_a, log_b = root / "a.log", root / "b.log"
    config = {
        "slowA": lifecycle(log_a, "--start-delay", "1"),
        "slowB": lifecycle(log_b, "--start-delay", "1"),
    }
    return config, log_a, log_b


def test_named_servers_start_together_before_the_code_calls_them(servers: Servers, tmp_path: Path) -> None:
    config, log_a, log_b = slow_pair(tmp_path)
    client = servers(config)
    ex = run_ts(client, SEQUENTIAL, allowed=["mcp__slowA__hello", "mcp__slowB__*"])
    assert ex.success, ex.describe() + client.log_tail()
    assert ex.result == [{"result": "hello a"}, {"result": "hello b"}], ex.describe()
    print(f"two slow servers called one after the other: {ex.sc['executionTimeMs']} ms")
    (spawn_a,), (spawn_b,) = events(log_a, "spawn"), events(log_b, "spawn")
    (ready_a,), (ready_b,) = events(log_a, "ready"), events(log_b, "ready")
    # B was started while A was still starting (A's first call had not been answered): the two
    # starts overlap instead of following each other.
    assert spawn_b < ready_a and spawn_a < ready_b, (spawn_a, ready_a, spawn_b, ready_b)


def test_only_servers_named_exactly_are_started_ahead(servers: Servers, tmp_path: Path) -> None:
    config, log_a, log_b = slow_pair(tmp_path)
    client = servers(config, extra_env={"CODE_EXECUTOR_POLICY_DENY": "[mcp__slowB__*]"})

    def states() -> dict[str, str]:
        # `listServers` waits for a connection under way, so a started server shows `connected`.
        return {row["name"]: row["state"] for row in client.structured("listServers", {})["servers"]}

    # A glob over every server names none: nothing is started for code that calls nothing.
    for allowed in (["*"], ["mcp__*__hello"], ["mcp__slow*__hello"]):
        ex = run_ts(client, "return 1;", allowed=allowed)
        assert ex.success, ex.describe()
    assert states() == {"slowA": "idle", "slowB": "idle"}
    assert not log_a.exists() and not log_b.exists()
    # slowB is named too, but the server-wide policy denies every one of its tools: it may not
    # be started by this execution, so it is not started ahead either. slowA is, although the
    # code never calls it.
    ex = run_ts(client, "return 1;", allowed=["mcp__slowA__hello", "mcp__slowB__hello"])
    assert ex.success, ex.describe()
    assert states() == {"slowA": "connected", "slowB": "idle"}
    assert len(events(log_a, "spawn")) == 1 and not log_b.exists()
