"""searchTools through the real server: detail levels, and a search that connects configured
servers that were not connected yet says so."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, ce_binary):
    from conftest import start_client

    c = start_client("stdio", tmp_path_factory.mktemp("search"), ("time", "Test-Store"))
    yield c
    c.close()


def test_first_search_connects_and_says_so(fresh) -> None:
    before = {s["name"]: s["state"] for s in fresh.structured("listServers")["servers"]}
    assert before == {"time": "idle", "Test-Store": "idle"}, before
    raw = fresh.call("searchTools", {"query": "current time in a timezone", "detail": "name"})
    sc = raw.structured_content
    assert sc["connected"] == ["Test-Store", "time"], sc
    assert "connected Test-Store, time" in raw.content[0].text, raw.content[0].text
    top = sc["matches"][0]
    assert top["name"] == "mcp__time__get_current_time", sc
    assert "description" not in top and "signature" not in top, top
    # Now connected: nothing to announce.
    again = fresh.structured("searchTools", {"query": "time", "limit": 3})
    assert "connected" not in again, again
    assert all(isinstance(m["description"], str) for m in again["matches"]), again


def test_full_detail_has_signatures(fresh) -> None:
    raw = fresh.call("searchTools", {"query": "convert time between timezones", "detail": "full", "limit": 2})
    top = raw.structured_content["matches"][0]
    assert top["name"] == "mcp__time__convert_time", raw.structured_content
    assert top["signature"].startswith(
        "function convert_time(args: { source_timezone: string; target_timezone: string; time: string }): Promise<"
    ), top
    assert top["description"] == "Convert time between timezones", top
    assert top["signature"] in raw.content[0].text


def test_unknown_detail_is_refused(fresh) -> None:
    raw = fresh.call("searchTools", {"query": "time", "detail": "everything"})
    assert raw.is_error
    assert "detail" in raw.content[0].text or "variant" in raw.content[0].text, raw.content[0].text


def test_sandbox_search_takes_the_same_detail_levels(fresh) -> None:
    from harness import ok, ok_py, run_ts

    code = """
const q = "convert time between timezones";
const [name, summary, full] = await Promise.all(
  ["name", "summary", "full"].map((detail) => searchTools(q, { limit: 1, detail })),
);
return { name: name.matches[0], summary: summary.matches[0], full: full.matches[0], plain: (await searchTools(q, { limit: 1 })).matches[0] };
"""
    # Look-ups see (and start) only what the code may call.
    r = ok(fresh, code, allowed=["mcp__time__*"]).result
    assert r["name"] == {"name": "mcp__time__convert_time", "server": "time", "tool": "convert_time"}, r
    assert r["summary"]["description"] == "Convert time between timezones" and "signature" not in r["summary"], r
    assert r["plain"] == r["summary"], r
    assert r["full"]["signature"].startswith("function convert_time(args: {"), r
    ex = run_ts(fresh, 'await searchTools("time", { detail: "everything" });')
    assert not ex.success and 'options.detail must be "name", "summary" or "full"' in ex.error, ex.describe()
    py = ok_py(fresh, 'r = await search_tools("convert time between timezones", limit=1, detail="full")\nr["matches"][0]', allowed=["mcp__time__*"])
    assert py.result == r["full"], py.describe()
