"""The programs in examples/ run through the real server against real downstream servers
(store_server.py, mcp-server-time, mcp-server-git), and give the answers the data implies."""

from __future__ import annotations

import json
import re

import pytest

import harness
import store_server
from harness import GIT_COMMITS, ok, ok_py

EXAMPLES = harness.REPO / "examples"


def load(name: str) -> tuple[str, list[str]]:
    """The example's code and the allowedTools its header names."""
    code = (EXAMPLES / name).read_text()
    m = re.search(r"^(?://|#) allowedTools: (\[.*\])$", code, re.M)
    assert m, f"{name} names no allowedTools"
    return code, json.loads(m.group(1))


def test_every_example_is_covered() -> None:
    files = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".ts", ".py"))
    assert files == sorted(COVERED), files


def test_low_stock_reorder(stdio_client) -> None:
    code, allowed = load("low_stock_reorder.ts")
    ex = ok(stdio_client, code, allowed=allowed)
    expected = sorted(
        (p for p in store_server.PRODUCTS.values() if p["stock"] <= 10 and p["warehouse"] != "WH-DIGITAL"),
        key=lambda p: (p["stock"], p["id"]),
    )
    assert ex.result["products"] == [p["id"] for p in expected], ex.describe()
    assert ex.result["suppliers"] == len({p["supplier_id"] for p in expected}), ex.describe()
    assert f"{len(expected)} products at or below 10 units" in ex.output, ex.describe()
    assert set(ex.tool_calls) == set(allowed), ex.describe()


def test_files_in_recent_commits(stdio_client) -> None:
    code, allowed = load("files_in_recent_commits.ts")
    repo = stdio_client.e2e.git_repo
    code = code.replace('const REPO = "/path/to/your/repository";', f"const REPO = {json.dumps(str(repo))};")
    ex = ok(stdio_client, code, allowed=allowed)
    expected: dict[str, int] = {}
    for file, _content, _message in GIT_COMMITS:
        expected[file] = expected.get(file, 0) + 1
    assert ex.result == {"commits": len(GIT_COMMITS), "files": expected}, ex.describe()
    assert ex.summary["mcp__git__git_show"]["calls"] == len(GIT_COMMITS), ex.describe()


def test_error_handling(stdio_client) -> None:
    code, allowed = load("error_handling.ts")
    ex = ok(stdio_client, code, allowed=allowed)
    mine = [o for c in ("C002", "C003") for o in store_server.ORDERS.values() if o["customer_id"] == c]
    delivered = [o["id"] for o in mine if o["status"] == "delivered"]
    assert delivered and len(delivered) < len(mine), "the data must have both outcomes"
    assert ex.result["refunded"] == delivered, ex.describe()
    assert [r["order"] for r in ex.result["refused"]] == [o["id"] for o in mine if o["status"] != "delivered"]
    assert all("refund refused" in r["reason"] for r in ex.result["refused"]), ex.describe()
    assert "not in allowedTools" in ex.result["guard"], ex.describe()
    assert ex.result["deadline"] == "answered in time", ex.describe()
    assert "mcp__Test-Store__delete_customer" not in ex.tool_calls, ex.describe()


@pytest.mark.pyodide
def test_gold_customers(stdio_client) -> None:
    code, allowed = load("gold_customers.py")
    ex = ok_py(stdio_client, code, allowed=allowed)
    gold = [c["id"] for c in store_server.CUSTOMERS.values() if c["tier"] == "gold"]
    values = {
        cid: round(
            sum(o["total"] for o in store_server.ORDERS.values() if o["customer_id"] == cid and o["status"] != "cancelled"),
            2,
        )
        for cid in gold
    }
    expected = sorted(gold, key=lambda c: (-values[c], c))
    assert [r["id"] for r in ex.result] == expected, ex.describe()
    assert all(abs(r["value"] - values[r["id"]]) < 0.01 for r in ex.result), ex.describe()


COVERED = ["low_stock_reorder.ts", "files_in_recent_commits.ts", "error_handling.ts", "gold_customers.py"]
