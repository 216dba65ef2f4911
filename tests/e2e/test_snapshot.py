"""The Pyodide memory snapshot: a snapshot the runner cannot use (here: garbage whose recorded
SHA-256 matches, as a snapshot made by another build would be) is discarded loudly and Python
keeps working; a snapshot whose content no longer matches its recorded SHA-256 is never used: it
is made again."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness import binary, ok_py, runtime_dir

pytestmark = pytest.mark.pyodide


def make_snapshot(cache: Path) -> Path:
    """Runs the real fetch step against `cache` and returns the snapshot it made."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cache.parent),
        "CODE_EXECUTOR_RUNTIME_DIR": str(runtime_dir()),
        "CODE_EXECUTOR_CACHE_DIR": str(cache),
    }
    if os.environ.get("CODE_EXECUTOR_RUNTIME_MIRROR"):
        env["CODE_EXECUTOR_RUNTIME_MIRROR"] = os.environ["CODE_EXECUTOR_RUNTIME_MIRROR"]
    out = subprocess.run(
        [str(binary()), "fetch-runtimes"], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    line = next(l for l in out.stdout.splitlines() if l.startswith("snapshot:"))
    path = Path(line.split(":", 1)[1].strip())
    assert path.is_file() and path.parent == cache
    digest = Path(str(path) + ".sha256").read_text().strip()
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    return path


def test_an_unusable_snapshot_is_discarded_and_python_still_works(tmp_path, start_server):
    cache = tmp_path / "cache"
    snapshot = make_snapshot(cache)
    garbage = os.urandom(4096)
    snapshot.write_bytes(garbage)
    Path(str(snapshot) + ".sha256").write_text(hashlib.sha256(garbage).hexdigest())
    client = start_server({"CODE_EXECUTOR_CACHE_DIR": str(cache)})
    ex = ok_py(client, "import sys\nsys.version_info[:2]", timeout_ms=120_000, call_timeout=240)
    assert ex.result == [3, 14], ex.describe()
    assert "discarding the Pyodide snapshot" in client.log_tail(20_000)


def test_a_snapshot_that_fails_verification_is_remade(tmp_path, start_server):
    cache = tmp_path / "cache"
    snapshot = make_snapshot(cache)
    with open(snapshot, "r+b") as f:
        f.seek(1000)
        f.write(b"\x00tampered\x00")
    client = start_server({"CODE_EXECUTOR_CACHE_DIR": str(cache)})
    ok_py(client, "print('works')", timeout_ms=120_000, call_timeout=240)
    # The server made it afresh in the background; wait for it, then check it verifies.
    deadline = time.time() + 120
    while time.time() < deadline:
        digest = Path(str(snapshot) + ".sha256").read_text().strip()
        if hashlib.sha256(snapshot.read_bytes()).hexdigest() == digest:
            break
        time.sleep(1)
    else:
        pytest.fail("the tampered snapshot was not remade")
    assert b"\x00tampered\x00" not in snapshot.read_bytes()
