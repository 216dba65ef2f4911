"""A server a cloned repository brings in its `.mcp.json` (or another project file): the consent
tests' stand-in for "whatever the repository's author wants to run on your machine".

Run with `python repo_server.py --marker FILE [--greeting TEXT]` (stdio). The moment it starts,
before speaking MCP, it appends one line (its pid) to FILE: a test that finds FILE missing knows
the command never ran. It is a real MCP server (the official SDK's `MCPServer`) with one tool,
`hello(name)`, so that an approved copy can be reached through code-executor like any other.
"""

from __future__ import annotations

import argparse
import os

from mcp.server.mcpserver import MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--marker", required=True, help="file that records every start")
    parser.add_argument("--greeting", default="hello", help="what `hello` answers with")
    args = parser.parse_args()
    with open(args.marker, "a", encoding="utf-8") as marker:
        marker.write(f"{os.getpid()}\n")

    server = MCPServer("repo-server", version="1.0.0")

    @server.tool()
    def hello(name: str) -> str:
        """Greets `name` (the greeting comes from the command line)."""
        return f"{args.greeting}, {name}"

    server.run()


if __name__ == "__main__":
    main()
