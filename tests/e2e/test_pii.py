"""Personal data tokenised on its way to the client (`pii = "tokenize"`): a real downstream server
(`tests/servers/people_server.py`) returns records with emails, card numbers, phone numbers,
IBANs, SSNs and IP addresses; the code sees them, the client sees only tokens (text blocks,
`structuredContent`, errors, every progress message); a token code passes to a tool, in a
resource URI or in a prompt's arguments reaches the downstream server as the real value;
tokens mean nothing in another client session; nothing of the map is written anywhere; with
`pii` off the values pass unchanged.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

import people_server
from conftest import start_client
from harness import McpClient, check_exec, ok, run_ts

PII_ON = {"CODE_EXECUTOR_PII": "tokenize"}
TOKEN = re.compile(r"\[(EMAIL|PHONE|CARD|IBAN|NATIONAL_ID|IP)_[0-9a-z]+\]")
ALLOWED = ["mcp__people__*"]

LIST = "const people = (await callMCPTool('mcp__people__list_people', {})).people;\n"

# What the tests look for, besides the values as written: the digits of cards and IBANs.
def forms(value: str) -> set[str]:
    compact = re.sub(r"[ \-]", "", value)
    return {value, compact}


ALL_FORMS = set().union(*(forms(v) for v in people_server.VALUES))


def leaks(text: str) -> list[str]:
    return sorted(v for v in ALL_FORMS if v in text)


def start(transport: str, root: Path, audit: bool = True, pii: bool = True) -> McpClient:
    env = dict(PII_ON) if pii else {}
    if audit:
        env["CODE_EXECUTOR_AUDIT_LOG_DIR"] = str(root / "audit")
    return start_client(transport, root, servers=("people",), extra_env=env)


def received(root: Path) -> list[dict]:
    path = root / "people-received.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module", params=["stdio", "http"])
def tokenizing(request, tmp_path_factory, ce_binary):
    root = tmp_path_factory.mktemp(f"pii-{request.param}")
    c = start(request.param, root)
    yield c, root
    c.close()


def test_the_client_sees_tokens_in_output_result_and_keys(tokenizing) -> None:
    c, _ = tokenizing
    ex = ok(
        c,
        LIST
        + "for (const p of people) console.log(`${p.name}: ${p.email} ${p.card} ${p.phone} ${p.iban} ${p.ssn} ${p.ip}`);\n"
        + "return {people, byEmail: Object.fromEntries(people.map((p) => [p.email, p.name]))};",
        allowed=ALLOWED,
    )
    everything = ex.everything()
    assert leaks(everything) == [], ex.describe()
    for kind in ("EMAIL", "CARD", "PHONE", "IBAN", "NATIONAL_ID", "IP"):
        tokens = {m.group(0) for m in TOKEN.finditer(everything) if m.group(1) == kind}
        assert len(tokens) == 2, (kind, tokens, ex.describe())
    # Stable: the same value has the same token in output, result and keys.
    alice = ex.result["people"][0]
    assert ex.result["byEmail"][alice["email"]] == "Alice Smith", ex.describe()
    assert f"Alice Smith: {alice['email']} {alice['card']}" in ex.output, ex.describe()
    # Names are not personal data of a kind detected: they pass.
    assert "Alice Smith" in everything


def test_errors_from_code_and_from_the_server_carry_tokens(tokenizing) -> None:
    c, _ = tokenizing
    ex = run_ts(c, LIST + "throw new Error(`no refund for ${people[1].email}, card ${people[1].card}`);", allowed=ALLOWED)
    assert not ex.success and "no refund for [EMAIL_" in ex.error, ex.describe()
    assert leaks(ex.everything()) == [], ex.describe()
    # The downstream server's own error message, uncaught.
    ex = run_ts(c, "await callMCPTool('mcp__people__fail_for', {person: 0});", allowed=ALLOWED)
    assert not ex.success and "payment declined for [EMAIL_" in ex.error, ex.describe()
    assert leaks(ex.everything()) == [], ex.describe()


def test_progress_messages_carry_tokens(tokenizing) -> None:
    c, _ = tokenizing
    code = (
        LIST
        + "for (let i = 0; i < 6; i++) { const p = people[i % 2];\n"
        + "  console.log(`${p.email} ${p.card} ${p.phone} ${p.iban} ${p.ssn} ${p.ip}`);\n"
        + "  await new Promise((r) => setTimeout(r, 300)); }\nreturn 'done';"
    )
    seen: list[str | None] = []

    async def go():
        async def on_progress(progress, total, message):
            seen.append(message)

        return await c.session.call_tool(
            "executeTypescript",
            {"code": code, "allowedTools": ALLOWED},
            read_timeout_seconds=90,
            progress_callback=on_progress,
        )

    raw = c.run_async(go)
    ex = check_exec("executeTypescript", raw, 0)
    assert ex.success, ex.describe()
    messages = "\n".join(m or "" for m in seen)
    assert TOKEN.search(messages), f"no token in the progress messages: {seen}"
    assert leaks(messages) == [], seen
    assert leaks(ex.everything()) == [], ex.describe()


def test_a_token_passed_to_a_tool_arrives_as_the_real_value(tokenizing) -> None:
    c, root = tokenizing
    ex = ok(c, LIST + "return [people[0].email, people[0].card];", allowed=ALLOWED)
    email_token, card_token = ex.result
    assert TOKEN.fullmatch(email_token) and TOKEN.fullmatch(card_token), ex.describe()
    before = len(received(root))
    ex = ok(
        c,
        f"return await callMCPTool('mcp__people__remember', {{note: 'write to {email_token}', details: {{'{email_token}': '{card_token}', unknown: '[EMAIL_999]'}}}});",
        allowed=ALLOWED,
    )
    got = received(root)[before:]
    alice = people_server.PEOPLE[0]
    assert got == [
        {
            "note": f"write to {alice['email']}",
            "details": {alice["email"]: alice["card"], "unknown": "[EMAIL_999]"},
        }
    ], got
    # Honest boundary: code that has a tool echo a token gets the value back, which it had
    # already seen; it leaves again only as a token.
    echo = f"const r = await callMCPTool('mcp__people__echo', {{value: '{email_token}'}});\n"
    echo += "const v = typeof r === 'string' ? r : r.result;\n"
    ex = ok(c, echo + "console.log(v); return {v};", allowed=ALLOWED)
    assert ex.result["v"] == email_token and email_token in ex.output, ex.describe()
    assert leaks(ex.everything()) == [], ex.describe()
    ex = ok(c, LIST + echo + "return v === people[0].email;", allowed=ALLOWED)
    assert ex.result is True, ex.describe()


def test_a_token_in_a_resource_uri_or_prompt_arguments_arrives_as_the_real_value(tokenizing) -> None:
    c, root = tokenizing
    ex = ok(c, LIST + "return people[0].email;", allowed=ALLOWED)
    token = ex.result
    assert TOKEN.fullmatch(token), ex.describe()
    before = len(received(root))
    ex = ok(
        c,
        f"const r = await readResource('people://person/{token}', {{server: 'people'}});\n"
        f"const p = await getPrompt('mcp__people__write_to', {{email: '{token}'}});\n"
        "return {text: r.contents[0].text, msg: p.messages[0].content.text};",
        allowed=["mcp__people__@resources", "mcp__people__@prompts"],
    )
    email = people_server.PEOPLE[0]["email"]
    assert received(root)[before:] == [{"resource": email}, {"prompt": email}], received(root)[before:]
    # What came back holds the real address, which reaches the client as the token again.
    assert ex.result == {"text": f"file of {token}", "msg": f"Write a note to {token}."}, ex.describe()
    assert leaks(ex.everything()) == [], ex.describe()


def test_code_cannot_reach_the_token_map(tokenizing) -> None:
    c, _ = tokenizing
    ok(c, LIST + "return people[0].email;", allowed=ALLOWED)
    ex = ok(
        c,
        """
const names = Object.getOwnPropertyNames(globalThis).join(' ');
const hits = names.split(' ').filter((n) => /pii|vault|token/i.test(n));
return {hits, text: '[EMAIL_1]', same: '[EMAIL_1]' === 'alice.smith@example.com'};
""",
    )
    assert ex.result["hits"] == [] and ex.result["same"] is False, ex.describe()
    # The token stays a token in the sandbox: nothing there turns it back.
    assert ex.result["text"] == "[EMAIL_1]"


def test_search_results_and_schemas_carry_tokens(tokenizing) -> None:
    """A skill's description is text code wrote: the LLM's searchTools and getToolSchema show it
    tokenised like everything else that reaches the client."""
    c, _ = tokenizing
    owner = "skill.owner@example.org"
    ok(
        c,
        "return await saveSkill('contact_owner', 'export function owner(): string { return \"x\"; }', "
        f"{{description: 'Mails the invoices owner {owner}'}});",
    )
    for tool, args in (
        ("searchTools", {"query": "invoices owner"}),
        ("getToolSchema", {"name": "skills/contact_owner.ts"}),
    ):
        raw = c.call(tool, args)
        seen = raw.model_dump_json(by_alias=True)
        assert not raw.is_error, seen
        assert "contact_owner" in seen, seen
        assert owner not in seen and TOKEN.search(seen), seen


def test_tokens_mean_nothing_in_another_session(tmp_path, ce_binary, tokenizing) -> None:
    c, _ = tokenizing
    ex = ok(c, LIST + "return people[1].email;", allowed=ALLOWED)
    token = ex.result
    other = start(c.transport, tmp_path, audit=False)
    try:
        ok(
            other,
            f"return await callMCPTool('mcp__people__remember', {{note: '{token}'}});",
            allowed=ALLOWED,
        )
    finally:
        other.close()
    assert received(tmp_path) == [{"note": token, "details": None}]


def test_tokens_are_not_numbered_in_order(tokenizing) -> None:
    """Tokens carry no guessable order: `[EMAIL_1]`, `[EMAIL_2]`, ... would let anyone who can
    have text put back name the values of a session without having seen a token."""
    c, _ = tokenizing
    ex = ok(c, "return Array.from({length: 30}, (_, i) => `user${i}.guess@example.net`);")
    tokens = ex.result
    assert len(set(tokens)) == 30 and all(TOKEN.fullmatch(t) for t in tokens), ex.describe()
    assert not any(re.fullmatch(r"\[EMAIL_\d+\]", t) for t in tokens), tokens


def test_a_media_block_s_uri_meta_and_annotations_carry_tokens(tokenizing) -> None:
    """Every field of a media block reaches the client through the checkpoint: a block code makes
    and a downstream tool's own resource block passed on unchanged (its URI names the customer)."""
    c, _ = tokenizing
    email = people_server.PEOPLE[0]["email"]
    made = (
        "return {type: 'resource', resource: {uri: `crm://customers/" + email + "/statement.pdf`, "
        "blob: 'JVBERi0xLjQK', mimeType: 'application/pdf'}, _meta: {owner: '" + email + "'}, "
        "annotations: {audience: ['user'], priority: 0.5}};"
    )
    passed_on = "return await callMCPTool('mcp__people__statement', {person: 0});"
    for code in (made, passed_on):
        ex = ok(c, code, allowed=ALLOWED)
        sent = ex.raw.model_dump_json(by_alias=True)
        blocks = [b for b in ex.raw.content if b.type == "resource"]
        assert len(blocks) == 1, sent
        assert leaks(sent) == [], sent
        assert blocks[0].resource.blob == "JVBERi0xLjQK", sent
        assert re.fullmatch(r"crm://customers/\[EMAIL_[0-9a-z]+\]/statement\.pdf", str(blocks[0].resource.uri)), sent


def test_a_refused_call_s_made_up_name_reaches_the_audit_log_redacted(tokenizing) -> None:
    c, root = tokenizing
    email = people_server.PEOPLE[1]["email"]
    for name in (f"mcp__people__{email}", f"mcp__h2__{email}"):
        ex = run_ts(c, f"return await callMCPTool({json.dumps(name)}, {{}});", allowed=["*"])
        assert not ex.success, ex.describe()
        assert leaks(ex.everything()) == [], ex.describe()
    c.call("health", {})  # a round trip, so the audit writer has had time to write
    deadline = time.time() + 10
    text = ""
    while time.time() < deadline:
        text = "".join(p.read_text() for p in (root / "audit").glob("*.jsonl"))
        if "mcp__h2__" in text:
            break
        time.sleep(0.2)
    records = [json.loads(line) for line in text.splitlines()]
    refused = [r["tool"] for r in records if r.get("event") == "tool_call" and r["decision"] == "refused"]
    assert "mcp__people__[EMAIL]" in refused and "mcp__h2__[EMAIL]" in refused, refused
    assert leaks(text) == [], leaks(text)


def test_nothing_of_the_map_is_written(tokenizing) -> None:
    c, root = tokenizing
    ok(c, LIST + "console.log(JSON.stringify(people)); return people;", allowed=ALLOWED)
    c.close()
    audit = list((root / "audit").rglob("*"))
    assert any(p.is_file() for p in audit), "no audit record was written"
    checked = 0
    for path in root.rglob("*"):
        if not path.is_file() or path.name == "people-received.jsonl" or path.is_symlink():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        checked += 1
        assert leaks(text) == [], f"{path} holds {leaks(text)}"
        assert not TOKEN.search(text) or path.suffix == ".log", f"{path} holds a token"
    assert checked >= 2


def test_with_pii_off_values_pass_unchanged(tmp_path, ce_binary) -> None:
    c = start("stdio", tmp_path, audit=False, pii=False)
    try:
        ex = ok(c, LIST + "console.log(people[0].email); return people[0];", allowed=ALLOWED)
    finally:
        c.close()
    assert ex.result == people_server.PEOPLE[0], ex.describe()
    assert people_server.PEOPLE[0]["email"] in ex.output
    assert not TOKEN.search(ex.everything())


# Issue 30, crossing 3: values right next to other digits (an expiry date and CVV, a street
# number, a date, an SSN, another value) were left in clear.
ADJACENT = [
    # (the line printed, the values in it, what stays as it is, tokens in the line)
    ("Ada +1 650-253-0000 4111 1111 1111 1111", ["+1 650-253-0000", "4111 1111 1111 1111"], ["Ada "], 2),
    ("card 5555 5555 5555 4444 12/28 123", ["5555 5555 5555 4444"], [" 12/28 123"], 1),
    ("call +1 650-253-0000 221 Baker Street", ["+1 650-253-0000"], [" 221 Baker Street"], 1),
    ("seen +1 650-253-0000 2024-01-15", ["+1 650-253-0000"], [" 2024-01-15"], 1),
    ("ids +1 650-253-0000 123-45-6789", ["+1 650-253-0000", "123-45-6789"], ["ids "], 2),
    ("uk +44 20 7946 0958 12", ["+44 20 7946 0958"], [" 12"], 1),
]


def test_values_next_to_other_digits_reach_the_client_as_tokens(tmp_path, ce_binary) -> None:
    # A client of its own: the module's tokenising clients are closed by the test before.
    c = start("stdio", tmp_path, audit=False)
    try:
        code = "\n".join(f"console.log({json.dumps(line)});" for line, _, _, _ in ADJACENT)
        ex = ok(c, code + "\nreturn 'printed';", allowed=ALLOWED)
    finally:
        c.close()
    everything = ex.everything()
    for line, values, kept, tokens in ADJACENT:
        for value in values:
            for form in forms(value) | {re.sub(r"\D", "", value)}:
                assert form not in everything, f"{form!r} of {line!r} reached the client: {ex.describe()}"
    printed = ex.output.strip().splitlines()
    assert len(printed) == len(ADJACENT), ex.describe()
    for (line, _, kept, tokens), seen in zip(ADJACENT, printed):
        assert len(TOKEN.findall(seen)) == tokens, f"{line!r} became {seen!r}"
        for part in kept:
            assert part in seen, f"{line!r} became {seen!r}"
