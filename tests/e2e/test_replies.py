"""What the LLM sees of an execution: the reply budget (output, return value and error together,
counted over the text block and `structuredContent` as a client receives them), compact JSON, the
cut markers, and media (images made by code or passed on from a real downstream server) arriving
as content blocks of their own.

Sizes are measured on the reply as the MCP Python SDK client received it: the UTF-8 bytes of its
text blocks plus `structuredContent` written as compact JSON.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path

import pytest
from mcp.types import ImageContent, TextContent

import store_server
from conftest import start_client
from harness import McpClient, assert_alive, ok, ok_py, run_py, run_ts, store

BUDGET = 40_000
CUT_OUTPUT = "bytes of output cut here to fit the reply budget"
CUT_RESULT = "bytes of the return value (compact JSON) cut here to fit the reply budget"


def visible_bytes(raw) -> int:
    """The bytes a reply puts before the model: text blocks plus compact structuredContent."""
    text = sum(len(c.text.encode()) for c in raw.content if isinstance(c, TextContent))
    structured = json.dumps(raw.structured_content, separators=(",", ":"), ensure_ascii=False)
    return text + len(structured.encode())


def within_budget(ex, budget: int = BUDGET) -> None:
    size = visible_bytes(ex.raw)
    assert size <= budget, f"the reply puts {size} bytes before the model, over {budget}: {ex.describe()}"


def png(width: int = 2, height: int = 2, noise: bool = False) -> bytes:
    """A real PNG (grey pixels, or random ones, which do not compress)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + (os.urandom(width) if noise else b"\x80" * width) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


# --------------------------------------------------------------------------------------------
# The budget
# --------------------------------------------------------------------------------------------


def test_an_output_bomb_stays_within_the_budget_with_head_and_tail(client: McpClient) -> None:
    code = 'console.log("first line");\nconsole.log("x".repeat(5e7));\nconsole.log("last line");\nreturn "done";'
    ex = ok(client, code, call_timeout=120)
    within_budget(ex)
    assert ex.output.startswith("first line\n"), ex.output[:200]
    assert ex.output.endswith("last line\n"), ex.output[-200:]
    assert CUT_OUTPUT in ex.output, ex.output[:400]
    # The marker counts what was cut, the host's own cut of the middle included.
    cut = int(ex.output.split("[... ", 1)[1].split(" of ", 1)[0])
    assert cut > 49_000_000, cut
    assert ex.result == "done"
    assert 'Result: "done"' in ex.text
    # Most of the budget is used: what is shown is not needlessly small.
    assert visible_bytes(ex.raw) > BUDGET * 0.8
    assert_alive(client)


def test_many_lines_keep_their_first_and_last_lines_whole(client: McpClient) -> None:
    ex = ok(client, 'for (let i = 0; i < 100000; i++) console.log(`line ${i}`);')
    within_budget(ex)
    lines = ex.output.split("\n")
    assert lines[0] == "line 0" and lines[1] == "line 1"
    assert ex.output.endswith("line 99999\n")
    marker = next(line for line in lines if CUT_OUTPUT in line)
    assert marker.startswith("[... ") and marker.endswith("...]"), marker
    assert "print less, or filter in code" in marker
    # Cut on line boundaries: every kept line is whole.
    kept = [line for line in lines if line and line != marker]
    assert all(line.startswith("line ") and line[5:].isdigit() for line in kept), kept[:3]


def test_a_huge_return_value_is_cut_and_says_what_to_do(client: McpClient) -> None:
    ex = ok(client, "return Array.from({length: 200000}, (_, i) => i);", call_timeout=60)
    within_budget(ex)
    assert isinstance(ex.result, str), ex.describe()
    assert ex.result.startswith("[0,1,2,3,4,5"), ex.result[:60]
    assert ex.result.endswith("199998,199999]"), ex.result[-60:]
    assert CUT_RESULT in ex.result
    assert "return less, e.g. filter, slice or summarise the data in code" in ex.result
    assert "Result: [0,1,2,3" in ex.text


def test_output_and_return_value_share_the_budget(client: McpClient) -> None:
    code = 'for (let i = 0; i < 20000; i++) console.log("row", i, "x".repeat(40));\nreturn {rows: Array.from({length: 50000}, (_, i) => ({id: i}))};'
    ex = ok(client, code, call_timeout=60)
    within_budget(ex)
    assert CUT_OUTPUT in ex.output and CUT_RESULT in ex.result
    # Neither crowds the other out.
    assert len(ex.output) > 5000 and len(ex.result) > 5000, (len(ex.output), len(ex.result))


def test_a_huge_error_stays_within_the_budget(client: McpClient) -> None:
    ex = run_ts(client, 'console.log("before");\nthrow new Error("e".repeat(2e6));')
    assert not ex.success
    within_budget(ex)
    assert "bytes of the error cut here" in ex.error
    assert ex.output == "before\n"


def test_python_output_bomb_and_huge_return_value(client: McpClient) -> None:
    ex = ok_py(client, 'print("start")\nprint("z" * 30_000_000)\nprint("end")\nlist(range(200000))', call_timeout=120)
    within_budget(ex)
    assert ex.output.startswith("start\n") and ex.output.endswith("end\n"), (ex.output[:50], ex.output[-50:])
    assert CUT_OUTPUT in ex.output
    assert ex.result.startswith("[0,1,2,") and ex.result.endswith("199999]") and CUT_RESULT in ex.result


def test_python_many_lines_alone(client: McpClient) -> None:
    ex = ok_py(client, "for i in range(100000):\n    print(f'line {i}')")
    within_budget(ex)
    assert ex.output.startswith("line 0\nline 1\n") and ex.output.endswith("line 99999\n")


def test_results_are_compact_json(client: McpClient) -> None:
    ex = ok(client, 'console.log("hi");\nreturn {a: [1, 2], b: {c: "d"}};')
    assert ex.text == 'hi\nResult: {"a":[1,2],"b":{"c":"d"}}', repr(ex.text)
    ex = ok_py(client, '{"a": [1, 2], "b": None}')
    assert ex.text == 'Result: {"a":[1,2],"b":null}', repr(ex.text)


def test_a_small_reply_is_whole(client: McpClient) -> None:
    text = "\n".join(f"line {i}" for i in range(2000))
    ex = ok(client, f"console.log({json.dumps(text)}); return 7;")
    assert ex.output == text + "\n" and ex.result == 7
    assert "cut here" not in ex.text


# --------------------------------------------------------------------------------------------
# Media
# --------------------------------------------------------------------------------------------


def images(raw) -> list[ImageContent]:
    return [c for c in raw.content if isinstance(c, ImageContent)]


def test_an_image_made_by_typescript_arrives_as_an_image(client: McpClient) -> None:
    data = png(3, 2)
    ex = ok(client, f"const bytes = new Uint8Array({json.dumps(list(data))});\nreturn image(bytes, 'image/png');")
    [img] = images(ex.raw)
    assert img.mime_type == "image/png"
    assert base64.b64decode(img.data) == data
    assert isinstance(ex.raw.content[0], TextContent)
    assert ex.result == f"[image image/png, {len(data)} bytes: sent as content block 1]"
    # The base64 is not also in the text the model reads.
    assert img.data not in ex.text and img.data not in json.dumps(ex.sc)


def test_an_image_made_by_python_arrives_as_an_image(client: McpClient) -> None:
    data = png(4, 4)
    ex = ok_py(client, f"import base64\nraw = base64.b64decode({json.dumps(base64.b64encode(data).decode())})\n{{'chart': image(raw), 'points': 16}}")
    [img] = images(ex.raw)
    assert base64.b64decode(img.data) == data and img.mime_type == "image/png"
    assert ex.result["points"] == 16
    assert ex.result["chart"].startswith("[image image/png")


def test_a_downstream_image_is_passed_on_as_an_image(client: McpClient) -> None:
    code = f'return await callMCPTool("{store("get_product_card")}", {{product_id: "P003"}});'
    ex = ok(client, code, allowed=[store("get_product_card")])
    [img] = images(ex.raw)
    assert img.data == store_server.PNG_1X1_B64 and img.mime_type == "image/png"
    # The text blocks of the downstream result stay in the value.
    assert ex.result[0] == {"type": "text", "text": "27in 4K Monitor (P003)"}
    assert ex.result[2].startswith("[image image/png")


def test_a_media_block_s_other_fields_count_in_the_reply_budget(client: McpClient) -> None:
    """A media block's URI, MIME type, annotations and `_meta` are read by the client as text:
    they take their bytes from the reply budget, and a block whose fields would not fit is
    named in the value instead of sent. Measured on the whole reply as the client serialised it."""
    huge = [
        "return {type: 'resource', resource: {uri: 'x:' + 'U'.repeat(3 << 20), blob: 'aGk='}};",
        "return {type: 'image', data: 'aGk=', mimeType: 'image/png', _meta: {note: 'M'.repeat(3 << 20)}};",
        "return {type: 'audio', data: 'aGk=', mimeType: 'audio/wav', annotations: {audience: ['user'], lastModified: 'L'.repeat(3 << 20)}};",
        "return {type: 'resource', resource: {uri: 'x:a', blob: 'aGk=', mimeType: 'application/' + 'T'.repeat(3 << 20)}};",
        "return Array.from({length: 16}, (_, i) => ({type: 'resource', resource: {uri: `x:${i}:` + 'U'.repeat(4000), blob: 'aGk='}}));",
    ]
    for code in huge:
        ex = ok(client, code)
        whole = len(ex.raw.model_dump_json(by_alias=True, exclude_none=True).encode())
        # The budget, what the media payloads take (a few bytes here) and the envelope's keys.
        assert whole <= BUDGET + 2_000, f"{whole} bytes: {ex.describe()}"
    # A block whose fields fit is still sent, and its fields are what the text gave up.
    ex = ok(client, "return [{type: 'resource', resource: {uri: 'x:' + 'U'.repeat(5000), blob: 'aGk='}}, 'y'.repeat(60000)];")
    assert [b.type for b in ex.raw.content] == ["text", "resource"], ex.describe()
    assert len(ex.raw.model_dump_json(by_alias=True, exclude_none=True).encode()) <= BUDGET + 2_000


def test_image_refuses_what_is_not_an_image(client: McpClient) -> None:
    ex = run_ts(client, 'return image(new Uint8Array([1]), "text/html");')
    assert not ex.success and "mimeType must be an image type" in ex.error
    ex = run_py(client, 'image("not base64!!")')
    assert not ex.success and "base64" in ex.error
    # A value merely shaped like an image with bad data stays a value.
    ex = ok(client, 'return {type: "image", data: "@@@", mimeType: "image/png"};')
    assert not images(ex.raw) and ex.result["data"] == "@@@"


def test_media_and_budget_limits_are_settings(tmp_path: Path) -> None:
    env = {"CODE_EXECUTOR_REPLY_BUDGET_BYTES": "4096", "CODE_EXECUTOR_MEDIA_LIMIT_BYTES": "100"}
    with start_client("stdio", tmp_path, servers=("Test-Store",), extra_env=env) as client:
        small, big = png(1, 1), png(64, 64, noise=True)
        assert len(small) <= 100 < len(big)
        code = f"return [image(new Uint8Array({json.dumps(list(small))})), image(new Uint8Array({json.dumps(list(big))}))];"
        ex = ok(client, code)
        [img] = images(ex.raw)
        assert base64.b64decode(img.data) == small
        assert "not sent, over the reply's media limit of 100 bytes" in ex.result[1], ex.result
        ex = ok(client, 'console.log("q".repeat(100000)); return 1;')
        within_budget(ex, 4096)
        assert "fit the reply budget (4096 bytes)" in ex.output
