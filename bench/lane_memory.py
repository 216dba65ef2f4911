#!/usr/bin/env python3
"""Memory over many executions on lanes: RSS of the server tree after 1,000 and after 10,000.

    .venv/bin/python bench/lane_memory.py [--language typescript|python|both] [--executions N]

Starts one `code-executor serve` over stdio (harness.E2EEnv, as bench/load.py), runs N (default
10,000) trivial executions back to back in one session, each checked for its own answer, and
prints the sum of VmRSS of the server and its sandbox workers (downstream servers excluded) after
1,000 executions and after N, and their ratio (the issue's target: within 10 %). Lanes retire after
200 executions, so this also shows that retiring and replacing them leaves nothing behind.
Numbers only: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))

from harness import E2EEnv, McpClient  # noqa: E402
from load import tree_rss_mib  # noqa: E402

CODE = {
    "typescript": ("executeTypescript", lambda t: f'const t = "{t}";\nconsole.log(t);\nt'),
    "python": ("executePython", lambda t: f't = "{t}"\nprint(t)\nt'),
}


def run(language: str, executions: int, root: Path) -> None:
    tool, code = CODE[language]
    env = E2EEnv(root / language, servers=("Test-Store",))
    with McpClient("stdio", env, root / "server.log", call_timeout=120) as client:
        pid = client.server_pid
        if pid is None:
            raise SystemExit("the server process was not found")
        samples: dict[int, float] = {}
        t0 = time.monotonic()
        for i in range(1, executions + 1):
            token = str(uuid.uuid4())
            raw = client.call(tool, {"code": code(token)})
            sc = raw.structured_content or {}
            if not sc.get("success") or sc.get("result") != token:
                raise SystemExit(f"execution {i} did not return its own answer: {sc}")
            if i in (1000, executions):
                time.sleep(1.0)  # let lanes finish their resets
                samples[i] = tree_rss_mib(pid)[0]
        wall = time.monotonic() - t0
        first, last = samples[1000], samples[executions]
        print(f"{language:<10} {executions} executions in {wall:.0f} s ({executions / wall:.0f} exec/s back to back); "
              f"RSS of the server tree after 1,000: {first:.1f} MiB, after {executions:,}: {last:.1f} MiB "
              f"({(last / first - 1) * 100:+.1f} %)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--language", choices=["typescript", "python", "both"], default="both")
    parser.add_argument("--executions", type=int, default=10_000)
    args = parser.parse_args()
    import tempfile

    languages = ["typescript", "python"] if args.language == "both" else [args.language]
    for language in languages:
        with tempfile.TemporaryDirectory(prefix="lane-memory-") as tmp:
            run(language, max(args.executions, 1000), Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
