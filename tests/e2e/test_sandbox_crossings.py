"""Crossings of the sandbox found by hostile testing, each tried through the real client and
refused: WebGPU's native graphics stack (outside Deno's permission checks), one execution
filling the disk through the module cache, and a burst of large concurrent tool calls that used
to deadlock the host<->worker pipes. The kernel layer under them (Landlock) is tested directly in
tests/jail.rs; here `health` must say it is in force.

Over stdio, one server for the module. Every hostile case is followed by a normal execution.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from harness import assert_alive, assert_alive_py, ok, ok_py, run_ts


def _tree(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under `path` with its size and modification time."""
    found: dict[str, tuple[int, int]] = {}
    if path.is_dir():
        for root, _dirs, files in os.walk(path):
            for name in files:
                full = Path(root) / name
                try:
                    st = full.stat()
                except OSError:
                    continue
                found[str(full)] = (st.st_size, st.st_mtime_ns)
    return found


def _real_home_cache() -> Path:
    # Workers run with an empty environment: a graphics library looks the home directory up in
    # the password database, i.e. the real home of the server's user, not the test's HOME.
    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache"


def test_health_reports_landlock_in_force(stdio_client) -> None:
    health = stdio_client.call("health", {}).structured_content
    landlock = health["runtime"]["landlock"]
    assert landlock.startswith("ABI "), landlock
    assert int(landlock.split()[1].rstrip(":")) >= 1, landlock


def test_webgpu_gives_typescript_no_adapter_and_writes_nothing(stdio_client) -> None:
    before = _tree(_real_home_cache())
    ex = ok(
        stdio_client,
        """
        const gpu = navigator.gpu;
        let adapter = null, failure = null;
        try { adapter = gpu ? await gpu.requestAdapter() : null; } catch (e) { failure = String(e); }
        if (adapter) {
          // Had it got one, this is what wrote the shader cache and leaked through its timing.
          const device = await adapter.requestDevice();
          const module = device.createShaderModule({ code: "@compute @workgroup_size(1) fn main() {}" });
          await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } });
        }
        const report = { adapter: adapter !== null, failure };
        report
        """,
    )
    assert ex.result["adapter"] is False, ex.result
    assert _tree(_real_home_cache()) == before, "the graphics stack wrote into the real home"
    assert_alive(stdio_client)


def test_no_worker_of_its_own_can_be_started_for_webgpu(stdio_client) -> None:
    # A Web Worker starts with a fresh global scope: hiding `navigator.gpu` in the runner would
    # not hold there (the kernel layer would). The sandbox starts no Worker for code at all: the
    # global is gone and `node:worker_threads` is not offered, however the import is built.
    ex = ok(
        stdio_client,
        """
        const out = [typeof globalThis.Worker];
        for (const load of [() => import("node:worker_threads"), () => (0, eval)("import('node:worker_threads')"),
                            () => new Function("return import('node:worker_threads')")()]) {
          out.push(await load().then(() => "loaded", (e) => e.message.includes("refused") ? "refused" : e.message));
        }
        out
        """,
    )
    assert ex.result == ["undefined", "refused", "refused", "refused"], ex.describe()


def test_webgpu_from_python_gets_no_adapter(stdio_client) -> None:
    ex = ok_py(
        stdio_client,
        """
import js
gpu = getattr(js.navigator, "gpu", None)
adapter = (await gpu.requestAdapter()) if gpu is not None else None
adapter is None or str(adapter) == "jsnull"
""",
    )
    assert ex.result is True, ex.result
    assert_alive_py(stdio_client)


def test_dynamic_imports_cannot_fill_the_disk(stdio_client) -> None:
    # 40 imports of 3 MiB TypeScript modules. Before worker processes wrote nothing, Deno cached
    # what it analysed in the worker's DENO_DIR: this grew to 417 MiB in one execution. Now such
    # imports are refused however they are built (and Deno, with a read-only cache, would write
    # nothing anyway: the DENO_DIR stays empty).
    pid = ok(stdio_client, "Deno.pid").result
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    deno_dir = Path(next(e for e in environ if e.startswith(b"DENO_DIR=")).split(b"=", 1)[1].decode())
    big = 'const big = "export const x = " + JSON.stringify("a".repeat(3 << 20)) + ";";\n'
    for load in ("(u) => import(u)", '(0, eval)("(u) => import(u)")', 'new Function("u", "return import(u)")'):
        ex = run_ts(
            stdio_client,
            big + f"const load = {load};\n"
            + 'for (let i = 0; i < 40; i++) await load("data:application/typescript;base64," + btoa(big + "// " + i));',
            timeout_ms=120_000,
        )
        assert not ex.success and "refused" in ex.error, ex.describe()
    assert list(deno_dir.rglob("*")) == [], "the worker process wrote to its Deno cache"
    assert_alive(stdio_client)


def test_typed_code_and_imports_work_without_a_writable_module_cache(stdio_client) -> None:
    # Deno would write emitted modules under DENO_DIR/gen; worker processes write nothing.
    # Typed code and the imports the sandbox offers must not notice.
    ex = ok(
        stdio_client,
        """
        import { join } from "node:path";
        const m = await import("node:path");
        const y: number = 41 + 1;
        [y, join("a", "b"), m.sep]
        """,
    )
    assert ex.result == [42, "a/b", "/"]


def test_forty_concurrent_16kb_tool_calls_all_get_their_own_answer(stdio_client) -> None:
    # Each call names a 16 KB tool the execution may not call: the host refuses it at once, and
    # the refusal repeats the name, so 16 KB goes each way with no wait in between. With both
    # pipes full, the host (writing answers) and the worker (writing calls) used to wait on
    # each other until the deadline.
    ex = ok(
        stdio_client,
        """
        const names = Array.from({ length: 40 }, (_, i) => "t" + i + "_" + "y".repeat(16 * 1024));
        const answers = await Promise.all(names.map((name) =>
          callMCPTool("Test-Store", name, {}).then(() => "called", (e) => String(e.message ?? e))));
        const own = answers.filter((text, i) => text.includes("t" + i + "_yyyy")).length;
        own
        """,
        allowed=[],
        timeout_ms=30_000,
    )
    assert ex.result == 40, ex.describe()


def test_a_burst_of_large_calls_and_instant_answers_does_not_stall_the_pipes(stdio_client) -> None:
    # 150 calls of 16 KB to a real server, interleaved with 150 searches the host answers at
    # once with about 5 KB each: the answers arrive while the worker is still writing its calls,
    # and more of them wait than the host's reply queue holds. This stalled until the deadline
    # when the host wrote answers in its read loop.
    ex = ok(
        stdio_client,
        """
        const pending = [];
        for (let i = 0; i < 150; i++) {
          const id = "Z" + i + "_" + "q".repeat(16000);
          pending.push(callMCPTool("Test-Store", "get_product", { product_id: id })
            .then(() => false, (e) => String(e.message ?? e).includes("Z" + i + "_qqqq")));
          pending.push(searchTools("product stock warehouse", { detail: "full", limit: 50 })
            .then((found) => JSON.stringify(found).length > 1000));
        }
        const answers = await Promise.all(pending);
        answers.filter(Boolean).length
        """,
        allowed=["mcp__Test-Store__*"],
        timeout_ms=60_000,
    )
    assert ex.result == 300, ex.describe()
