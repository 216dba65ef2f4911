"""The downstream servers the e2e tests rely on, checked directly with the SDK (no code-executor needed).

If these fail, the problem is in the test fixtures, not in code-executor.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

import harness
import store_server
from harness import E2EEnv, McpClient
from mcp import StdioServerParameters


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> E2EEnv:
    return E2EEnv(tmp_path_factory.mktemp("fixtures"), servers=("time", "git", "Test-Store"))


def direct(env: E2EEnv, name: str, tmp: Path) -> McpClient:
    cfg = env.server_configs()[name]
    params = StdioServerParameters(
        command=cfg["command"], args=cfg["args"], env={**cfg.get("env", {}), "HOME": str(env.home)}
    )
    return McpClient("stdio", None, tmp / f"{name}.log", stdio_params=params).start()


@pytest.fixture(scope="module")
def store(env: E2EEnv, tmp_path_factory: pytest.TempPathFactory):
    c = direct(env, "Test-Store", tmp_path_factory.mktemp("store-log"))
    yield c
    c.close()


def text_json(result) -> object:
    assert len(result.content) == 1 and result.content[0].type == "text", result
    return json.loads(result.content[0].text)


def test_store_catalogue(store: McpClient) -> None:
    tools = {t.name: t for t in store.list_tools().tools}
    assert len(tools) >= 40
    for name in ("get-Inventory", "GetShippingQuote", "track-shipment", "echo", "slow", "crash", "count_calls"):
        assert name in tools
    assert tools["get_stock_summary"].output_schema is not None
    assert tools["list_products"].output_schema is None
    # Every tool is documented, so search has something to match.
    assert all(t.description for t in tools.values())


def test_store_results(store: McpClient) -> None:
    inv = text_json(store.call("get-Inventory", {"warehouse": "WH-WEST"}))
    assert inv["count"] == sum(1 for p in store_server.PRODUCTS.values() if p["warehouse"] == "WH-WEST")

    summary = store.call("get_stock_summary", {})
    assert summary.structured_content == store_server.stock_summary().model_dump()

    card = store.call("get_product_card", {"product_id": "P003"})
    assert [c.type for c in card.content] == ["text", "text", "image"]
    assert base64.b64decode(card.content[2].data) == store_server.PNG_1X1

    thread = store.call("get_ticket_thread", {"ticket_id": "T-002"})
    assert [c.type for c in thread.content] == ["text", "text"]

    err = store.call("fail_with", {"message": "card declined"})
    assert err.is_error and err.content[0].text == "card declined"

    assert text_json(store.call("echo", {"value": {"a": [1, 2]}})) == {"echo": {"a": [1, 2]}}
    counts = text_json(store.call("count_calls", {}))
    assert counts["byTool"]["echo"] == 1 and "delete_customer" not in counts["byTool"]


def test_store_crash_kills_process(env: E2EEnv, tmp_path: Path) -> None:
    c = direct(env, "Test-Store", tmp_path)
    try:
        with pytest.raises(Exception):
            c.call("crash", {}, timeout=20)
    finally:
        c.close()


def test_time_server(env: E2EEnv, tmp_path: Path) -> None:
    c = direct(env, "time", tmp_path)
    try:
        r = c.call("get_current_time", {"timezone": "UTC"})
        assert r.structured_content["timezone"] == "UTC"
    finally:
        c.close()


def test_git_server_sees_fixture_repo(env: E2EEnv, tmp_path: Path) -> None:
    c = direct(env, "git", tmp_path)
    try:
        r = c.call("git_log", {"repo_path": str(env.git_repo), "max_count": 20})
        text = r.content[0].text
        for _, _, message in harness.GIT_COMMITS:
            assert f"Message: {message}" in text
    finally:
        c.close()


def test_raw_tools_list_size(env: E2EEnv) -> None:
    raw = harness.raw_stdio_tools_list([sys.executable, str(harness.STORE_SERVER)], env={"HOME": str(env.home)})
    assert len(raw.tools) >= 40
    assert raw.size > 5000  # a realistic catalogue is big: that is what code-executor hides
