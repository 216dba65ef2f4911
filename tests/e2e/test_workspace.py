"""The project workspace: files that persist between executions, reached only through the host.

Written in one execution and read in the next (TypeScript, Python, across both); quotas; every
escape (`..`, absolute paths, control characters, long names, links planted by the user outside
the sandbox, hard links) refused with a clear error and nothing outside read or written; a full
disk; two concurrent writers; the sandbox's own file APIs refused; another project's workspace
out of reach; the workspace off; the `code-executor workspace` command line.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import start_client
from harness import McpClient, ok, ok_py, run_cli, run_py, run_ts


@pytest.fixture(scope="module", params=["stdio", "http"])
def ws_client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, ce_binary: Path):
    root = tmp_path_factory.mktemp(f"workspace-{request.param}")
    c = start_client(request.param, root, servers=("time",))
    yield c
    c.close()


def workspace_cli(c: McpClient) -> tuple[str, ...]:
    """`code-executor workspace` for the client's workspace: over stdio the project's, over HTTP
    its principal's (the client's peer address: see test_principal_crossings.py)."""
    if c.transport == "http":
        return ("workspace", "--principal", "http-peer:127.0.0.1")
    return ("workspace",)


def files_dir(c: McpClient) -> Path:
    """The workspace's files, as `code-executor workspace path` names them (same settings)."""
    if c.transport == "http":
        ok(c, "await workspace.list()")  # a principal's workspace is made when first used
    proc = run_cli(c.e2e, *workspace_cli(c), "path")
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip())
    assert path.is_dir() and path.name == "files", path
    assert str(path).startswith(str(c.e2e.home)), path
    return path


def refused(ex, *fragments: str) -> None:
    text = ex.error or ""
    assert not ex.success, ex.describe()
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"


def test_written_in_one_execution_read_in_the_next(ws_client):
    ok(ws_client, 'await workspace.writeText("notes/today.txt", "héllo from ts")')
    assert ok(ws_client, 'return await workspace.readText("notes/today.txt")').result == "héllo from ts"
    assert ok_py(ws_client, 'await workspace.read_text("notes/today.txt")').result == "héllo from ts"
    ok_py(ws_client, 'await workspace.write_bytes("bin/data", bytes(range(256)))')
    got = ok(ws_client, 'const b = await workspace.readBytes("bin/data"); return [b.length, b[0], b[255]]').result
    assert got == [256, 0, 255]
    assert (files_dir(ws_client) / "notes" / "today.txt").read_text() == "héllo from ts"
    listing = ok(ws_client, "return await workspace.list()").result
    paths = {e["path"]: (e["kind"], e["size"]) for e in listing["entries"]}
    assert paths["bin/data"] == ("file", 256) and paths["notes"] == ("dir", 0), listing
    assert listing["truncated"] is False
    ok_py(ws_client, 'await workspace.remove("bin")')
    refused(run_ts(ws_client, 'return await workspace.readBytes("bin/data")'), "nothing at")
    ex = run_py(ws_client, 'await workspace.read_text("bin/data")')
    refused(ex, "nothing at")
    assert "WorkspaceError" in ex.error, ex.error


@pytest.mark.parametrize(
    "path,rule",
    [
        ("../x", "`..` components are not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("a\u0000b", "NUL"),
        ("a\u001bb", "control character"),
        ("a" * 256, "over the limit of 255"),
        ("/".join(["d"] * 40), "components, over the limit of 32"),
        ("", "it is empty"),
    ],
)
def test_bad_paths_are_refused_by_rule(ws_client, path, rule):
    before = sorted(p.name for p in files_dir(ws_client).parent.parent.iterdir())
    refused(run_ts(ws_client, f"await workspace.writeText({json.dumps(path)}, 'x')"), rule)
    refused(run_py(ws_client, f"await workspace.read_text({json.dumps(path)})"), rule)
    assert sorted(p.name for p in files_dir(ws_client).parent.parent.iterdir()) == before


def test_planted_links_are_refused_and_nothing_outside_is_touched(ws_client, tmp_path):
    files = files_dir(ws_client)
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    outside = tmp_path / "outside"
    outside.mkdir()
    (files / "link-file").symlink_to(secret)
    (files / "link-dir").symlink_to(outside)
    os.link(secret, files / "hard")
    try:
        for path in ["link-file", "link-dir/x"]:
            refused(run_ts(ws_client, f'return await workspace.readText("{path}")'), "symbolic link")
            refused(run_py(ws_client, f'await workspace.write_text("{path}", "pwned")'), "symbolic link")
        refused(run_ts(ws_client, 'return await workspace.readText("hard")'), "hard links")
        # A write replaces the hard link; the file outside keeps its content.
        ok(ws_client, 'await workspace.writeText("hard", "replaced")')
        assert secret.read_text() == "do not read"
        assert list(outside.iterdir()) == []
        kinds = {e["path"]: e["kind"] for e in ok(ws_client, "return (await workspace.list()).entries").result}
        assert kinds["link-dir"] == "link" and "link-dir/x" not in kinds
    finally:
        for name in ["link-file", "link-dir", "hard"]:
            (files / name).unlink(missing_ok=True)


def test_another_projects_workspace_is_out_of_reach(ws_client):
    files = files_dir(ws_client)
    other = files.parent.parent / "other-0123456789abcdef" / "files"
    other.mkdir(parents=True, exist_ok=True)
    (other / "x").write_text("other project")
    refused(run_ts(ws_client, 'return await workspace.readText("../other-0123456789abcdef/files/x")'), "`..`")
    # The sandbox's own file APIs reach neither workspace.
    for path in [files / "anything", other / "x"]:
        ex = run_ts(ws_client, f'return await Deno.readTextFile({json.dumps(str(path))})')
        assert not ex.success and "other project" not in ex.describe()
        ex = run_ts(ws_client, f'const f = await Deno.open({json.dumps(str(path))}, {{write: true, create: true}}); return 1')
        assert not ex.success
        ex = run_py(ws_client, f'open({json.dumps(str(path))}).read()')
        assert not ex.success and "other project" not in ex.describe()
    assert (other / "x").read_text() == "other project"


def test_concurrent_writers_leave_one_whole_file(ws_client):
    a, b = "a" * 100_000, "b" * 100_000
    writer = "for (let i = 0; i < 15; i++) await workspace.writeText('race.txt', %r.repeat(100000));"
    reader = (
        "const seen = new Set(); for (let i = 0; i < 15; i++) { const t = await workspace.readText('race.txt');"
        " seen.add(t.length + ':' + t[0] + t[t.length - 1] + ':' + new Set(t).size) } return [...seen]"
    )
    ok(ws_client, "await workspace.writeText('race.txt', 'a'.repeat(100000))")
    with ThreadPoolExecutor(3) as pool:
        jobs = [
            pool.submit(run_ts, ws_client, writer % "a"),
            pool.submit(run_ts, ws_client, writer % "b"),
            pool.submit(run_ts, ws_client, reader),
        ]
        results = [j.result() for j in jobs]
    for ex in results:
        assert ex.success, ex.describe()
    assert set(results[2].result) <= {"100000:aa:1", "100000:bb:1"}, results[2].result
    assert (files_dir(ws_client) / "race.txt").read_text() in (a, b)


def test_quotas(start_server):
    c = start_server(
        {
            "CODE_EXECUTOR_WORKSPACE_MAX_BYTES": "1000",
            "CODE_EXECUTOR_WORKSPACE_MAX_FILES": "3",
            "CODE_EXECUTOR_WORKSPACE_MAX_FILE_BYTES": "600",
            "CODE_EXECUTOR_MAX_TOOL_CALLS_PER_EXECUTION": "5",
        },
        servers=("time",),
    )
    refused(run_ts(c, "await workspace.writeText('big', 'x'.repeat(601))"), "workspace_max_file_bytes")
    ok(c, "await workspace.writeText('a', 'x'.repeat(600))")
    refused(run_py(c, "await workspace.write_text('b', 'x' * 500)"), "workspace quota", "1.1 KiB", "workspace_max_bytes")
    ok(c, "await workspace.writeText('b', 'x'.repeat(100)); await workspace.writeText('c', '')")
    refused(run_ts(c, "await workspace.writeText('d', '')"), "workspace_max_files")
    # Each operation spends a host call of the execution's budget.
    ex = run_ts(c, "const out = []; for (let i = 0; i < 7; i++) { try { await workspace.readText('a'); out.push('read') } catch (e) { out.push(e.message) } } return out")
    assert ex.result[:5] == ["read"] * 5 and "limit" in ex.result[5], ex.describe()


def test_the_global_is_frozen(ws_client):
    got = ok(ws_client, "try { workspace.readText = () => 'fake' } catch {} return [Object.isFrozen(workspace), typeof workspace.list, workspace.readText.name]").result
    assert got == [True, "function", "workspace.readText"]


def test_workspace_off(start_server):
    c = start_server({"CODE_EXECUTOR_WORKSPACE": "false"}, servers=("time",))
    refused(run_ts(c, "await workspace.writeText('a', 'x')"), "the workspace is off (setting workspace = false)")
    refused(run_py(c, "await workspace.list()"), "the workspace is off")
    proc = run_cli(c.e2e, "workspace", "ls")
    assert proc.returncode != 0 and "the workspace is off" in proc.stderr


def test_a_full_disk(start_server, tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"mounting a small tmpfs is not permitted here: {proc.stderr.strip()}")
    try:
        c = start_server({"CODE_EXECUTOR_WORKSPACE_DIR": str(mount)}, servers=("time",))
        ok(c, "await workspace.writeText('one', 'a'.repeat(150000))")
        ok(c, "await workspace.writeText('two', 'b'.repeat(20000))")
        refused(run_ts(c, "await workspace.writeText('two', 'c'.repeat(150000))"), "the disk holding the workspace is full")
        assert ok(c, "return (await workspace.readText('two')).length").result == 20000
        files = next(mount.glob("*/files"))
        assert sorted(p.name for p in files.iterdir()) == ["one", "two"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_the_command_line(ws_client):
    ok(ws_client, "await workspace.writeText('cli/x.txt', 'from code')")
    e2e, workspace = ws_client.e2e, workspace_cli(ws_client)
    ls = run_cli(e2e, *workspace, "ls")
    assert ls.returncode == 0 and "cli/x.txt" in ls.stdout and "9" in ls.stdout, ls
    as_json = json.loads(run_cli(e2e, *workspace, "ls", "--json", "cli").stdout)
    assert as_json["entries"] == [{"path": "cli/x.txt", "kind": "file", "size": 9}]
    assert run_cli(e2e, *workspace, "cat", "cli/x.txt").stdout == "from code"
    bad = run_cli(e2e, *workspace, "cat", "../../../etc/passwd")
    assert bad.returncode != 0 and "`..` components are not allowed" in bad.stderr
    assert run_cli(e2e, *workspace, "rm", "cli").returncode == 0
    refused(run_ts(ws_client, "return await workspace.readText('cli/x.txt')"), "nothing at")
