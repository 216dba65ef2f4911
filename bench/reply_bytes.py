#!/usr/bin/env python3
"""The bytes a client receives for the README's example, the programs in examples/, our own
look-up tools and a few floods, as the client receives them.

    .venv/bin/python bench/reply_bytes.py [--before OLD_BINARY]

Starts `code-executor serve` over stdio (the binary `CODE_EXECUTOR_BIN` or target/release) with
the test servers (`Test-Store`, `mcp-server-time`, `mcp-server-git`, and a server that fails to
start), runs each case through the MCP Python SDK client, checks it succeeded, and prints per
case:
- `visible`: what the reply puts before the model: its text blocks (UTF-8) plus
  `structuredContent` as compact JSON;
- `reply`: the whole `CallToolResult` as the client serialises it (`model_dump_json`, by alias,
  without unset fields).
With `--before`, the same cases run against that binary first, and the table shows both and the
ratio after/before of `visible`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

import harness  # noqa: E402
from harness import E2EEnv, McpClient  # noqa: E402
from mcp.types import TextContent  # noqa: E402

EXAMPLES = harness.REPO / "examples"


def example(name: str) -> tuple[str, list[str]]:
    code = (EXAMPLES / name).read_text()
    header = next(line for line in code.splitlines() if "allowedTools:" in line)
    return code, json.loads(header.split("allowedTools:", 1)[1])


def cases(repo: Path) -> list[tuple[str, str, dict]]:
    """(name, tool, arguments)."""
    readme = f"""
const now = await callMCPTool("mcp__time__get_current_time", {{ timezone: "UTC" }});
const log = await callMCPTool("git", "git_log", {{ repo_path: {json.dumps(str(repo))}, max_count: 50 }});
const mine = String(log).split("\\n").filter((l) => l.includes("Author: "));
console.log(`${{mine.length}} of the last 50 commits are the author's (as of ${{now.datetime}})`);
"""
    out: list[tuple[str, str, dict]] = [
        ("README: commits and time", "executeTypescript", {"code": readme, "allowedTools": ["mcp__git__git_log", "mcp__time__*"]}),
    ]
    for name in ("low_stock_reorder.ts", "files_in_recent_commits.ts", "error_handling.ts", "gold_customers.py"):
        code, allowed = example(name)
        code = code.replace('const REPO = "/path/to/your/repository";', f"const REPO = {json.dumps(str(repo))};")
        tool = "executePython" if name.endswith(".py") else "executeTypescript"
        out.append((f"examples/{name}", tool, {"code": code, "allowedTools": allowed}))
    summary = f"""
const log = await callMCPTool("mcp__git__git_log", {{ repo_path: {json.dumps(str(repo))}, max_count: 5 }});
const commits = String(log).split("\\n\\n").filter((c) => c.startsWith("Commit")).map((c) => c.split("\\n")[0]);
return {{ count: commits.length, newest: commits[0] ?? null, authors: ["Test"] }};
"""
    out += [
        ("git-log summary (returned object)", "executeTypescript", {"code": summary, "allowedTools": ["mcp__git__git_log"]}),
        ("searchTools 'time', first call", "searchTools", {"query": "time"}),
        ("searchTools 'current time', next call", "searchTools", {"query": "current time"}),
        ("listServers", "listServers", {}),
        ("print 50 MB: console.log('x'.repeat(5e7))", "executeTypescript", {"code": "console.log('x'.repeat(5e7))"}),
        ("return list(range(200000)) (Python)", "executePython", {"code": "list(range(200000))"}),
    ]
    return out


def measure(binary: str | None) -> dict[str, tuple[int, int]]:
    if binary:
        os.environ["CODE_EXECUTOR_BIN"] = binary
    with tempfile.TemporaryDirectory() as tmp:
        e2e = E2EEnv(Path(tmp), servers=("time", "git", "Test-Store", "broken"))
        client = McpClient("stdio", e2e, Path(tmp) / "server.log")
        client.check_contract = False
        client.start()
        sizes = {}
        try:
            for name, tool, args in cases(e2e.git_repo):
                raw = client.call(tool, args, timeout=180)
                sc = raw.structured_content
                if tool.startswith("execute") and not (sc and sc.get("success")):
                    raise SystemExit(f"{name}: failed: {harness.dump(raw)}")
                text = sum(len(c.text.encode()) for c in raw.content if isinstance(c, TextContent))
                structured = len(json.dumps(sc, separators=(",", ":"), ensure_ascii=False).encode()) if sc is not None else 0
                reply = len(raw.model_dump_json(by_alias=True, exclude_none=True).encode())
                sizes[name] = (text + structured, reply)
        finally:
            client.close()
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="an earlier binary to compare with")
    args = parser.parse_args()
    before = measure(args.before) if args.before else None
    os.environ.pop("CODE_EXECUTOR_BIN", None)
    after = measure(None)
    width = max(len(n) for n in after)
    if before:
        print(f"| {'case':<{width}} | visible before | visible after | after/before | reply before | reply after |")
        print(f"| {'-' * width} | ---: | ---: | ---: | ---: | ---: |")
        for name, (visible, reply) in after.items():
            b_visible, b_reply = before[name]
            print(f"| {name:<{width}} | {b_visible:,} | {visible:,} | {visible / b_visible:.2f} | {b_reply:,} | {reply:,} |")
    else:
        print(f"| {'case':<{width}} | visible | reply |")
        print(f"| {'-' * width} | ---: | ---: |")
        for name, (visible, reply) in after.items():
            print(f"| {name:<{width}} | {visible:,} | {reply:,} |")


if __name__ == "__main__":
    main()
