"""Crossings through skills and the import guard, refused (issue 30, crossings 1 and 9), through
the real server over stdio with its workspace on.

Imports: the import rules hold for every module code can reach, whatever form brings it in
(`import`, `export ... from`, `import()`, `import.defer()`, a skill, a skill's skill, source
evaluated at run time) and however it is spelled (escaped keywords and specifiers, specifiers
Deno's URL parser would fold into a refused one, a word the guard's tokenizer reads as text),
even after the code replaced the built-ins the guard uses. Each refused attempt gets the same
refusal; nothing an execution started keeps running after its reply (the worker process's CPU
time, read from /proc, stays still).

Search: answers are bounded whatever skills hold (measured as the client receives them: the
JSON of the CallToolResult), and control characters from code-written skills never reach them.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

import harness
from conftest import start_client
from harness import E2EEnv, McpClient, assert_alive, ok, run_cli, run_ts

SERVERS = ("time",)
REFUSAL = "refused: code in the sandbox may import only wrappers/<name>.ts"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, ce_binary) -> dict:
    root = tmp_path_factory.mktemp("skill-crossings")
    extra = {"CODE_EXECUTOR_WORKSPACE_DIR": str(root / "ws")}
    client = start_client("stdio", root, SERVERS, extra)
    yield {"root": root, "client": client, "env": E2EEnv(root, servers=SERVERS, extra_env=extra)}
    client.close()


@pytest.fixture(scope="module")
def c(world) -> McpClient:
    return world["client"]


def assert_refused(ex, specifier: str) -> None:
    """The execution failed with the import guard's refusal of `specifier`."""
    assert not ex.success, ex.describe()
    assert f"import of {json.dumps(specifier)} {REFUSAL}" in ex.error, ex.describe()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (all its threads), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / 100


def cpu_over(pid: int, seconds: float = 2.0) -> float:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


def save(c: McpClient, name: str, code: str) -> None:
    ok(c, f"await saveSkill({json.dumps(name)}, {json.dumps(code)});")


# --------------------------------------------------------------------------------------------
# Crossing 1: imports re-exported by a skill
# --------------------------------------------------------------------------------------------


def test_a_skill_re_exporting_node_worker_threads_is_refused_and_leaves_no_thread_running(start_server, tmp_path) -> None:
    """The issue's repro, on a server of its own (should threads spin, they go with it)."""
    c = start_server({"CODE_EXECUTOR_WORKSPACE_DIR": str(tmp_path / "ws")}, servers=SERVERS)
    pid = ok(c, "Deno.pid").result
    ex = run_ts(c, """
await saveSkill('wt_export', 'export * as wt from "node:worker_threads";');
const { wt } = await import('skills/wt_export.ts');
new wt.Worker('for(;;){}', { eval: true });
new wt.Worker('for(;;){}', { eval: true });
""")
    spent = cpu_over(pid)
    assert spent < 0.5, f"the worker process spent {spent:.2f} CPU-s in the 2 s after the reply; {ex.describe()}"
    assert_refused(ex, "node:worker_threads")
    assert_alive(c)


LEFT_RUNNING = {
    "webcrypto_pbkdf2": (
        "const key = await crypto.subtle.importKey('raw', new Uint8Array(16), 'PBKDF2', false, ['deriveBits']);\n"
        "crypto.subtle.deriveBits({name: 'PBKDF2', hash: 'SHA-512', salt: new Uint8Array(16), iterations: 2 ** 31 - 1}, key, 512);\n"
        "return 'started';"
    ),
    "node_crypto_pbkdf2": (
        "import { pbkdf2 } from 'node:crypto';\n"
        "for (let i = 0; i < 2; i++) pbkdf2('p', 's', 2 ** 31 - 1, 64, 'sha512', () => {});\n"
        "return 'started';"
    ),
}


@pytest.mark.parametrize("case", sorted(LEFT_RUNNING))
def test_work_an_execution_hands_to_the_process_s_threads_ends_with_it(start_server, case) -> None:
    """Work an execution started on the process's own threads (WebCrypto and node:crypto run on
    Deno's blocking threads, past the isolate's end) does not outlive it: the process in which it
    keeps running with no execution is retired within seconds, and the session goes on in a fresh
    one."""
    c = start_server({}, servers=SERVERS)
    pid = ok(c, "Deno.pid").result
    ex = ok(c, LEFT_RUNNING[case])
    assert ex.result == "started", ex.describe()
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists(), f"the worker process still runs: {cpu_over(pid, 1.0):.2f} CPU-s/s"
    assert ok(c, "Deno.pid").result != pid
    assert_alive(c)


REFUSED_SKILLS = {
    # name: (the skill, the use the execution makes of it, the specifier refused)
    "vm": ('export * as vm from "node:vm";', "vm.runInThisContext('1')", "node:vm"),
    "module_create_require": (
        'export { createRequire } from "node:module";',
        "m.createRequire('/x.js')('worker_threads')",
        "node:module",
    ),
    "process_get_builtin_module": (
        'export { default as proc } from "node:process";',
        "m.proc.getBuiltinModule('worker_threads')",
        "node:process",
    ),
    "inspector": ('export * from "node:inspector";', "m.Session", "node:inspector"),
    "repl": ('export * as repl from "node:repl";', "m.repl.start", "node:repl"),
    "data_module": (
        'export * from "data:text/javascript,export const spin = () => 1;";',
        "m.spin()",
        "data:text/javascript,export const spin = () => 1;",
    ),
    "type_only_export": ('export type { Script } from "node:vm";\nexport const a = 1;', "m.a", "node:vm"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_SKILLS))
def test_a_skill_re_exporting_a_refused_module_is_refused(c, case: str) -> None:
    skill, use, specifier = REFUSED_SKILLS[case]
    name = f"re_{case}"
    ex = run_ts(c, f"await saveSkill({json.dumps(name)}, {json.dumps(skill)});\nconst m = await import('skills/{name}.ts');\n{use}")
    assert_refused(ex, specifier)


def test_a_skill_saved_by_hand_that_re_exports_a_refused_module_is_refused(c, world) -> None:
    save(c, "by_hand", "export const placeholder = 1;\n")
    skills = next((world["root"] / "ws").glob("*/skills"))
    (skills / "by_hand.ts").write_text('export * as wt from "node:worker_threads";\n')
    ex = run_ts(c, "import { wt } from 'skills/by_hand.ts';\ntypeof wt.Worker")
    assert_refused(ex, "node:worker_threads")


def test_a_skill_re_exporting_a_skill_that_re_exports_a_refused_module_is_refused(c, world) -> None:
    # Saved in this order the inner skill is refused at save; written by hand it is on disk anyway.
    save(c, "inner_reexport", "export const placeholder = 1;\n")
    skills = next((world["root"] / "ws").glob("*/skills"))
    (skills / "inner_reexport.ts").write_text('export * as wt from "node:worker_threads";\n')
    save(c, "outer_reexport", 'export * from "skills/inner_reexport.ts";\n')
    for code in (
        "import { wt } from 'skills/outer_reexport.ts';\ntypeof wt.Worker",
        "const m = await import('skills/outer_reexport.ts');\ntypeof m.wt.Worker",
    ):
        assert_refused(run_ts(c, code), "node:worker_threads")


def test_a_skill_that_re_exports_a_refused_module_is_not_saved(c, world) -> None:
    ex = run_ts(c, "await saveSkill('refused_at_save', 'export { Worker } from \"node:worker_threads\";');")
    assert_refused(ex, "node:worker_threads")
    assert not list((world["root"] / "ws").glob("*/skills/refused_at_save.*"))


@pytest.mark.parametrize(
    "code, specifier",
    [
        ('export * from "node:vm";\n1', "node:vm"),
        ('export { Worker } from "node:worker_threads";\n1', "node:worker_threads"),
        ('import defer * as vm from "node:vm";\ntypeof vm.runInThisContext', "node:vm"),
        ('import type { Script } from "node:vm";\n1', "node:vm"),
    ],
    ids=["export_star", "export_named", "import_defer", "import_type"],
)
def test_a_re_export_or_phase_import_written_directly_in_code_is_refused(c, code: str, specifier: str) -> None:
    assert_refused(run_ts(c, code), specifier)


@pytest.mark.parametrize(
    "code",
    [
        "const m = await import.defer('data:text/javascript,export const y = 7');\nm.y",
        "const m = await (0, eval)('import.defer(\"data:text/javascript,export const y = 7\")');\nm.y",
        "const m = await new Function('return import.defer(\"data:text/javascript,export const y = 7\")')();\nm.y",
    ],
    ids=["in_code", "in_eval", "in_function_constructor"],
)
def test_import_defer_of_a_data_module_is_refused(c, code: str) -> None:
    assert_refused(run_ts(c, code), "data:text/javascript,export const y = 7")


def test_an_escaped_import_keyword_is_refused(c) -> None:
    # TypeScript's parser reads `\u0069mport(...)` as a call of `import`, and emits it so.
    for code in (
        "const m = await \\u0069mport('node:vm');\ntypeof m.runInThisContext",
        "const m = await \\u{69}mport.defer('node:vm');\ntypeof m.runInThisContext",
    ):
        assert_refused(run_ts(c, code), "node:vm")
    save(c, "escaped_keyword", "export const load = () => \\u0069mport('node:vm');\n")
    assert_refused(run_ts(c, "import { load } from 'skills/escaped_keyword.ts';\ntypeof (await load()).runInThisContext"), "node:vm")


@pytest.mark.parametrize(
    "specifier",
    ["node:vm ", "node:v\tm", "node:vm\n", "node:worker_threads "],
    ids=["trailing_space", "tab_inside", "trailing_newline", "worker_threads_trailing_space"],
)
def test_a_node_specifier_the_url_parser_would_fold_into_a_refused_one_is_refused(c, specifier: str) -> None:
    dynamic = f"const m = await import({json.dumps(specifier)});\nObject.keys(m).length"
    assert_refused(run_ts(c, dynamic), specifier)
    static = f"import * as m from {json.dumps(specifier)};\nObject.keys(m).length"
    # Written in a string literal, a tab or line break is an escape: refused as written.
    assert_refused(run_ts(c, static), json.dumps(specifier)[1:-1])


def test_an_escaped_specifier_is_refused(c) -> None:
    assert_refused(run_ts(c, "import * as m from 'node:\\u0076m';\ntypeof m.runInThisContext"), "node:\\u0076m")
    ex = run_ts(c, "await saveSkill('escaped_spec', 'export * from \"node:\\\\x76m\";');")
    assert_refused(ex, "node:\\x76m")


@pytest.mark.parametrize(
    "code",
    [
        "let of = 2; let p; of /(p = import('node:vm'))/ 1;\ntypeof (await p).runInThisContext",
        "const a = { return: 2 }; let p; a.return /(p = import('node:vm'))/ 1;\ntypeof (await p).runInThisContext",
        "const s = ''; let p; if (s) /'/.test(s); p = import('node:vm'); '';\ntypeof (await p).runInThisContext",
    ],
    ids=["of_divided", "keyword_property_divided", "regex_after_if"],
)
def test_an_import_the_guard_reads_as_text_loads_nothing(c, code: str) -> None:
    """The guard's tokenizer takes these divisions for regexes (or the reverse) and sees no
    `import(`; whatever it sees, no module is loaded: in the lane's realm the guard respelled the
    word it read as text, and in a context (where code the tokenizer sees no `import(` in runs)
    no module can be loaded at all."""
    ex = run_ts(c, code)
    assert not ex.success and ex.result != "function", ex.describe()
    assert (
        "the sandbox spelled `import` or `export` as" in ex.error
        or "A dynamic import callback was not specified" in ex.error
    ), ex.describe()


@pytest.mark.parametrize(
    "code",
    [
        "Set.prototype.has = () => false;\nconst m = await import('node:vm');\ntypeof m.runInThisContext",
        "String.prototype.includes = () => false;\nconst m = await eval('import(\"node:vm\")');\ntypeof m.runInThisContext",
    ],
    ids=["set_has", "string_includes"],
)
def test_built_ins_replaced_by_the_code_do_not_switch_the_guard_off(c, code: str) -> None:
    assert_refused(run_ts(c, code), "node:vm")


def test_a_replaced_array_map_does_not_change_what_the_function_constructor_compiles(c) -> None:
    ex = run_ts(c, """const map = Array.prototype.map;
Array.prototype.map = function () { return ['return import("node:vm")']; };
const f = new Function('return 42');
Array.prototype.map = map;
typeof (await f())""")
    assert ex.success and ex.result == "number", ex.describe()


def test_saving_a_skill_that_closes_its_check_early_runs_no_unguarded_import(c) -> None:
    """The save-time check compiles the skill as a function's body; a skill that closes that
    function runs its remaining statements at the top level, still guarded."""
    ex = run_ts(c, "await saveSkill('closes_early', '}; globalThis.leak = import(\"node:vm\"); function z() {');\n"
                "typeof (await globalThis.leak).runInThisContext")
    assert_refused(ex, "node:vm")


def test_typescript_import_equals_require_loads_nothing(c) -> None:
    for code in ("import vm = require('node:vm');\ntypeof vm", "export import vm = require('node:vm');\n1"):
        ex = run_ts(c, code)
        assert not ex.success and ex.result != "object", ex.describe()
    ex = run_ts(c, "await saveSkill('import_equals', 'import vm = require(\"node:vm\");\\nexport const t = typeof vm;');")
    assert not ex.success and "not saved" in ex.error, ex.describe()


def test_what_the_sandbox_offers_still_loads_through_every_form(c) -> None:
    save(c, "base_value", "export const base = 20;\n")
    save(c, "reexports", 'export * from "skills/base_value.ts";\nexport * as path from "node:path";\n'
         'export { join } from "node:path";\nexport type { ParsedPath } from "node:path";\n')
    ex = ok(c, """import { base, path, join } from "skills/reexports.ts";
const d = await import.defer("node:path");
const text = "import export: " + `import ${1}`;
[base + 1, path.join("a", "b"), join("c", "d"), d.basename("/x/y"), text, /^import$/.test("import")]""")
    assert ex.result == [21, "a/b", "c/d", "y", "import export: import 1", True], ex.describe()


# --------------------------------------------------------------------------------------------
# Crossing 9: skills make searchTools answers unbounded
# --------------------------------------------------------------------------------------------

# The bound docs/interface.md states for a search answer's matches (JSON bytes).
MAX_MATCHES_BYTES = 32 * 1024
# What the client receives for one search answer (structuredContent, the text block, the JSON
# around them) stays under this.
MAX_ANSWER_BYTES = 80_000

WIDGETS = """
const sig = (k, i) => `export function widget_${k}_${i}_${"w".repeat(40)}(first_argument: string, second_argument: number, third: Record<string, unknown>): Promise<Array<Record<string, string>>> { return Promise.resolve([]); }`;
for (let k = 0; k < 12; k++) {
  const code = Array.from({ length: 64 }, (_, i) => sig(k, i)).join("\\n") + "\\n";
  const saved = await saveSkill(`widgets_${k}`, code, { description: "Widget helpers: " + "widget gadget ".repeat(60) });
  if (saved.exports.length !== 64) throw new Error(`saved ${saved.exports.length} exports`);
}
"""


def received(raw) -> int:
    """Bytes of a tool result as the client receives it: the JSON of the CallToolResult."""
    return len(raw.model_dump_json(by_alias=True, exclude_none=True).encode())


def matches_bytes(sc: dict) -> int:
    return len(json.dumps(sc["matches"], separators=(",", ":"), ensure_ascii=False).encode())


@pytest.fixture(scope="module")
def widgets(c) -> None:
    ok(c, WIDGETS)


def test_twelve_skills_with_64_exports_each_keep_search_answers_bounded(c, widgets) -> None:
    sizes = {}
    for detail in ("summary", "full"):
        raw = c.call("searchTools", {"query": "widget helpers", "limit": 100, "detail": detail})
        sc = raw.structured_content
        sizes[detail] = received(raw)
        assert sizes[detail] < MAX_ANSWER_BYTES and matches_bytes(sc) <= MAX_MATCHES_BYTES + 2, (detail, sizes)
        skills = [m for m in sc["matches"] if m.get("kind") == "skill"]
        assert skills and all(m["exportCount"] == 64 for m in skills), sc["matches"][:1]
        if detail == "summary":
            # A summary names each skill once: its description's first line, its import line, a count.
            assert len(skills) == 12 and all("exports" not in m for m in skills), skills[:1]
            assert "(64 exported signatures)" in raw.content[0].text
        else:
            assert all(len(m["exports"]) <= 16 for m in skills), skills[:1]
            assert all(len(e) <= 240 for m in skills for e in m["exports"]), skills[:1]
            assert "…and 48 more" in raw.content[0].text
            assert sc.get("omitted", 0) + len(skills) == 12, sc.get("omitted")
            if sc.get("omitted"):
                assert "left out" in raw.content[0].text
    print(f"searchTools answers with 12 skills x 64 exports: {sizes}")


def test_search_answers_for_code_and_the_operator_are_bounded_alike(c, world, widgets) -> None:
    ex = ok(c, """const r = await searchTools("widget helpers", { limit: 100, detail: "full" });
const s = await getToolSchema("skills/widgets_0.ts");
return { search: JSON.stringify(r).length, schema: JSON.stringify(s).length, exports: s.exports.length, count: s.exportCount };""")
    assert ex.result["search"] <= MAX_MATCHES_BYTES + 4096, ex.describe()
    assert ex.result["exports"] == 64 == ex.result["count"] and ex.result["schema"] < 48_000, ex.describe()
    raw = c.call("getToolSchema", {"name": "skills/widgets_0.ts"})
    assert received(raw) < 2 * 48_000, received(raw)
    out = run_cli(world["env"], "search", "widget helpers", "--detail", "full", "--limit", "100")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.encode()) < MAX_MATCHES_BYTES + 8192 and "…and 48 more" in out.stdout, len(out.stdout)


FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u2069")


def strings_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings_in(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def assert_clean(raw_or_value, what: str) -> None:
    """No control or bidirectional formatting character in anything the client gets."""
    if hasattr(raw_or_value, "structured_content"):
        texts = (
            strings_in(raw_or_value.structured_content)
            + strings_in(raw_or_value.meta)
            + [b.text for b in raw_or_value.content]
        )
    else:
        texts = strings_in(raw_or_value)
    bad = [(t[:80], [hex(ord(ch)) for ch in FORBIDDEN if ch in t]) for t in texts if any(ch in t for ch in FORBIDDEN)]
    assert not bad, f"{what}: {bad}"


PAINTED_SKILL = (
    'export function paint(colour = "\x1b[31m\x07red\x9b"): string {\n  return colour;\n}\n'
    'export const flip = (s = "\u202e\u2066abc\u2069"): string => s;\n'
)


def test_control_and_bidi_characters_in_a_skill_never_reach_answers(c, world) -> None:
    ok(c, f"await saveSkill('painted_skill', {json.dumps(PAINTED_SKILL)}, {{description: 'Paints\\u202e\\u2066 walls red'}});")
    for detail in ("name", "summary", "full"):
        raw = c.call("searchTools", {"query": "paints walls red", "detail": detail})
        assert raw.structured_content["matches"][0]["name"] == "skills/painted_skill.ts", raw.structured_content
        assert_clean(raw, f"searchTools {detail}")
    raw = c.call("searchTools", {"query": "paints walls red", "detail": "full"})
    top = raw.structured_content["matches"][0]
    assert top["description"] == "Paints walls red" and 'colour = "[31mred"' in top["exports"][0], top
    schema = c.call("getToolSchema", {"name": "skills/painted_skill.ts"})
    assert_clean(schema, "getToolSchema")
    ex = ok(c, """return [await searchTools("paints walls red", { detail: "full" }), await getToolSchema("skills/painted_skill.ts")];""")
    assert_clean(ex.result, "from code")
    out = run_cli(world["env"], "search", "paints walls red", "--detail", "full")
    assert out.returncode == 0 and "painted_skill" in out.stdout, out.stderr
    assert_clean(out.stdout, "code-executor search")
    # The skill itself is unchanged: its code keeps the characters it was written with.
    ex = ok(c, "import { paint } from 'skills/painted_skill.ts';\nreturn paint().length;")
    assert ex.result == len("\x1b[31m\x07red\x9b"), ex.describe()


def test_control_and_bidi_characters_in_a_downstream_tools_description_never_reach_answers(start_server, tmp_path) -> None:
    root = tmp_path / "painted"
    e2e = E2EEnv(root, servers=())
    painted = {"command": sys.executable, "args": [str(harness.SERVERS_DIR / "painted_server.py")]}
    e2e.config_path.write_text(json.dumps({"mcpServers": {"painted": painted}}))
    client = McpClient("stdio", e2e, root / "code-executor-stdio.log")
    start_server.clients.append(client)
    client.start()
    for detail in ("summary", "full"):
        raw = client.call("searchTools", {"query": "paint a wall", "detail": detail})
        assert raw.structured_content["matches"][0]["name"] == "mcp__painted__paint", raw.structured_content
        assert_clean(raw, f"searchTools {detail}")
    # getToolSchema: its description, signature and text (the JSON Schema itself is the tool's own,
    # and its property names are what the tool takes).
    schema = client.call("getToolSchema", {"name": "mcp__painted__paint"})
    sc = schema.structured_content
    assert_clean([sc["description"], sc["signature"], schema.content[0].text], "getToolSchema")
    ex = ok(client, 'return await searchTools("paint a wall", { detail: "full" });', allowed=["mcp__painted__*"])
    assert_clean(ex.result, "from code")
    assert "in colour (painted text)" in ex.result["matches"][0]["description"], ex.describe()
