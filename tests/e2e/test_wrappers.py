"""Typed wrappers: `code-executor wrappers` against real downstream servers (mcp-server-time,
store_server.py), deterministic regeneration, stale detection by schema hash, and importing the
modules inside the sandbox (TypeScript and Python) through the real server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import start_client
from harness import E2EEnv, ok, ok_py, run_cli, run_ts

SERVERS = ("time", "Test-Store")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, ce_binary) -> dict:
    root = tmp_path_factory.mktemp("wrappers")
    out = root / "wrappers"
    env = E2EEnv(root, servers=SERVERS, extra_env={"CODE_EXECUTOR_WRAPPERS_DIR": str(out)})
    proc = run_cli(env, "wrappers")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # A link placed in the wrappers directory (before any worker starts) must not be followed
    # into the sandbox.
    secret = root / "secret.txt"
    secret.write_text("top secret " + env.canary)
    os.symlink(secret, out / "evil.ts")
    return {"root": root, "out": out, "env": env, "secret": secret}


def generated(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if not p.is_symlink())


@pytest.fixture(scope="module")
def server(world):
    c = start_client("stdio", world["root"], SERVERS, {"CODE_EXECUTOR_WRAPPERS_DIR": str(world["out"])})
    yield c
    c.close()


def test_one_module_per_server_and_language(world) -> None:
    names = [p.name for p in generated(world["out"])]
    assert names == ["test_store.py", "test_store.ts", "time.py", "time.ts"], names
    ts = (world["out"] / "time.ts").read_text()
    assert "export async function getCurrentTime(args: GetCurrentTimeArgs): Promise<GetCurrentTimeResult>" in ts
    assert "  timezone: string;" in ts
    assert "schema-hash: sha256:" in ts
    py = (world["out"] / "time.py").read_text()
    assert "async def get_current_time(*, timezone: str) -> dict[str, Any]:" in py
    assert "Get current time in a specific timezone" in py


def test_regeneration_is_deterministic_and_check_passes(world) -> None:
    before = {p.name: p.read_bytes() for p in generated(world["out"])}
    proc = run_cli(world["env"], "wrappers")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("unchanged") == 4, proc.stdout
    assert {p.name: p.read_bytes() for p in generated(world["out"])} == before
    proc = run_cli(world["env"], "wrappers", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stale_wrappers_are_detected(world, tmp_path: Path) -> None:
    stale_dir = tmp_path / "stale"
    stale_dir.mkdir()
    for p in generated(world["out"]):
        (stale_dir / p.name).write_bytes(p.read_bytes())
    # As if the server's schemas had changed since the module was made.
    text = (stale_dir / "time.ts").read_text()
    old_hash = text.split("schema-hash: ")[1].split("\n")[0]
    (stale_dir / "time.ts").write_text(text.replace(old_hash, "sha256:" + "0" * 64))
    (stale_dir / "test_store.py").unlink()
    proc = run_cli(world["env"], "wrappers", "--check", "--out", str(stale_dir))
    assert proc.returncode != 0, proc.stdout
    assert "time.ts" in proc.stdout and "changed" in proc.stdout, proc.stdout
    assert "test_store.py" in proc.stdout and "missing" in proc.stdout, proc.stdout
    assert "time.py" not in proc.stdout, proc.stdout


def test_typescript_imports_a_wrapper(server) -> None:
    ex = ok(
        server,
        'import * as time from "wrappers/time.ts";\n'
        'import { SERVER } from "wrappers/test_store.ts";\n'
        'const now = await time.getCurrentTime({ timezone: "Europe/Paris" });\n'
        "return { tz: now.timezone, server: SERVER, hasDate: typeof now.datetime === 'string' };",
        allowed=["mcp__time__*"],
    )
    assert ex.result == {"tz": "Europe/Paris", "server": "Test-Store", "hasDate": True}, ex.describe()
    assert ex.tool_calls == ["mcp__time__get_current_time"], ex.describe()


def test_wrapper_calls_still_obey_allowed_tools(server) -> None:
    ex = run_ts(
        server,
        'import * as time from "wrappers/time.ts";\nawait time.getCurrentTime({ timezone: "UTC" });',
        allowed=[],
    )
    assert not ex.success
    assert "not in allowedTools" in ex.error, ex.describe()


def test_a_missing_wrapper_says_how_to_make_it(server) -> None:
    ex = run_ts(server, 'import * as gh from "wrappers/github.ts";\ngh;')
    assert not ex.success
    assert "code-executor wrappers" in ex.error, ex.describe()


def test_only_the_wrapper_files_are_readable(server, world) -> None:
    secret = world["secret"]
    ex = run_ts(
        server,
        'let read = "";\n'
        'try { read = Deno.readTextFileSync("wrappers/evil.ts"); } catch (e) { read = "denied: " + e.name; }\n'
        'let outside = "";\n'
        f'try {{ outside = Deno.readTextFileSync({json.dumps(str(secret))}); }} catch (e) {{ outside = "denied: " + e.name; }}\n'
        'return { read, outside, listing: [...Deno.readDirSync("wrappers")].map((e) => e.name).sort() };',
    )
    assert ex.success, ex.describe()
    assert world["env"].canary not in ex.everything(), ex.describe()
    assert ex.result["read"].startswith("denied"), ex.describe()
    assert ex.result["outside"].startswith("denied"), ex.describe()
    # Each TypeScript wrapper is staged with the JavaScript the host made of it (for the lanes'
    # contexts), and nothing else.
    assert ex.result["listing"] == ["test_store.context.js", "test_store.ts", "time.context.js", "time.ts"], ex.describe()


@pytest.mark.pyodide
def test_python_imports_a_wrapper(server) -> None:
    ex = ok_py(
        server,
        "from wrappers import time as t, test_store\n"
        "r = await t.get_current_time(timezone='Asia/Tokyo')\n"
        "{'tz': r['timezone'], 'server': test_store.SERVER, 'hash': t.SCHEMA_HASH.startswith('sha256:')}",
        allowed=["mcp__time__get_current_time"],
    )
    assert ex.result == {"tz": "Asia/Tokyo", "server": "Test-Store", "hash": True}, ex.describe()
