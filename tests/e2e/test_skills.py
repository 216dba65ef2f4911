"""Skills: modules code saves with saveSkill / save_skill and later executions import
(`skills/<name>.ts`, `from skills import name`), through the real server, the real time server
for tool calls, and the `code-executor skills` command line. Each module-scoped server has its
own HOME and workspace directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import start_client
from harness import E2EEnv, ok, ok_py, run_cli, run_py, run_ts

SERVERS = ("time",)
TIME_TOOL = "mcp__time__get_current_time"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, ce_binary) -> dict:
    root = tmp_path_factory.mktemp("skills")
    extra = {"CODE_EXECUTOR_WORKSPACE_DIR": str(root / "ws")}
    client = start_client("stdio", root, SERVERS, extra)
    yield {"root": root, "client": client, "env": E2EEnv(root, servers=SERVERS, extra_env=extra)}
    client.close()


@pytest.fixture(scope="module")
def c(world):
    return world["client"]


def skills_dir(world) -> Path:
    found = list((world["root"] / "ws").glob("*/skills"))
    assert len(found) == 1, found
    return found[0]


GREET = """
/** Greets someone. */
export function hello(name: string): string {
  return `hello ${name}`;
}
export const shout = (s: string): string => s.toUpperCase();
"""


@pytest.fixture(scope="module")
def greet(c) -> dict:
    ex = ok(c, f"return await saveSkill('greet', {json.dumps(GREET)}, {{description: 'Friendly greetings for people'}});")
    return ex.result


def test_a_typescript_skill_is_saved_and_imported_by_a_later_execution(c, greet) -> None:
    assert greet["name"] == "greet" and greet["language"] == "typescript", greet
    assert greet["import"] == "skills/greet.ts", greet
    assert "export function hello(name: string): string" in greet["exports"], greet
    assert 'import { hello, shout } from "skills/greet.ts"' == greet["usage"], greet
    ex = ok(c, 'import { hello, shout } from "skills/greet.ts";\nshout(hello("ada"))')
    assert ex.result == "HELLO ADA", ex.describe()
    ex = ok(c, 'const m = await import("skills/greet");\nreturn m.hello("bob");')
    assert ex.result == "hello bob", ex.describe()


def test_a_skill_may_import_another_but_not_in_a_cycle(c) -> None:
    ok(c, """await saveSkill("base", "export const factor = 3;\\n");
await saveSkill("scaled", 'import { factor } from "skills/base.ts";\\nexport function scale(n: number): number { return n * factor; }\\n');""")
    ex = ok(c, 'import { scale } from "skills/scaled.ts";\nscale(5)')
    assert ex.result == 15, ex.describe()
    ok(c, """await saveSkill("cyc_a", 'import { b } from "skills/cyc_b.ts";\\nexport const a = 1;\\n');
await saveSkill("cyc_b", 'import { a } from "skills/cyc_a.ts";\\nexport const b = 2;\\n');""")
    ex = run_ts(c, 'import { a } from "skills/cyc_a.ts";\na')
    assert not ex.success and "cycle" in ex.error and "cyc_a -> cyc_b -> cyc_a" in ex.error, ex.describe()


def test_a_python_skill_is_saved_and_imported(c) -> None:
    ex = ok_py(c, 'await save_skill("pyutil", "def double(x: int) -> int:\\n    return 2 * x\\n", description="Doubles numbers")')
    assert ex.result["import"] == "skills/pyutil.py" and ex.result["exports"] == ["def double(x: int) -> int"], ex.describe()
    ok_py(c, 'await save_skill("pyquad", "from skills import pyutil\\n\\ndef quad(x):\\n    return pyutil.double(pyutil.double(x))\\n")')
    ex = ok_py(c, "from skills import pyutil, pyquad\nfrom skills.pyutil import double\n[pyutil.double(21), double(1), pyquad.quad(2)]")
    assert ex.result == [42, 2, 8], ex.describe()
    # Its copy is read-only.
    ex = run_py(c, "from skills import pyutil\nopen(pyutil.__file__, 'w').write('x = 1')")
    assert not ex.success and "PermissionError" in ex.error + ex.output, ex.describe()
    # What does not compile is not saved.
    ex = run_py(c, 'await save_skill("pybroken", "def (:\\n")')
    assert not ex.success and "does not compile" in ex.error, ex.describe()


def test_broken_typescript_is_refused_at_save(c, world) -> None:
    ex = run_ts(c, 'await saveSkill("tsbroken", "export function (a {");')
    assert not ex.success and "does not parse" in ex.error, ex.describe()
    # Blanking the exports for the check hides nothing after them.
    ex = run_ts(c, 'await saveSkill("tsbroken", "const a = 1;\\nexport { a }\\nfunction (");')
    assert not ex.success and "does not parse" in ex.error, ex.describe()
    # Every export form is accepted (and not run at save time).
    forms = "export * from \"skills/base.ts\";\nexport * as b from \"skills/base.ts\";\nexport { factor } from \"skills/base.ts\";\nconst q = 1;\nexport { q as r };\nexport default function main() { return q; }\nexport interface I { a: number }\nexport type T = I;\nthrow new Error(\"ran\");\n"
    ok(c, f"await saveSkill('forms', {json.dumps(forms)});")
    ex = run_ts(c, 'await saveSkill("tsremote", \'import x from "https://example.com/x.ts";\\nexport const y = x;\');')
    assert not ex.success and "refused" in ex.error, ex.describe()
    assert not (skills_dir(world) / "tsbroken.ts").exists()
    assert not (skills_dir(world) / "tsremote.ts").exists()


def test_a_skill_gains_no_rights_its_caller_lacks(c) -> None:
    ok(c, f"""await saveSkill("clock", 'export async function now() {{ return await callMCPTool("{TIME_TOOL}", {{ timezone: "UTC" }}); }}\\n', {{description: "The current time in UTC"}});""")
    code = 'import { now } from "skills/clock.ts";\nreturn await now();'
    ex = run_ts(c, code, allowed=[])
    assert not ex.success and TIME_TOOL in ex.error and ex.tool_calls == [], ex.describe()
    ex = run_ts(c, code, allowed=["mcp__time__other"])
    assert not ex.success, ex.describe()
    ex = ok(c, code, allowed=[TIME_TOOL])
    assert "UTC" in json.dumps(ex.result), ex.describe()


def test_search_finds_skills_marked_as_skills(c, greet) -> None:
    sc = c.structured("searchTools", {"query": "friendly greetings"})
    top = sc["matches"][0]
    assert top["name"] == "skills/greet.ts" and top["kind"] == "skill", sc
    assert top["description"] == "Friendly greetings for people", sc
    # A summary counts the exports (`full` lists them).
    assert top["exportCount"] == 2 and "exports" not in top and "hello" in top["import"], sc
    assert "skills/greet.ts" in top["import"] and "server" not in top, sc
    raw = c.call("searchTools", {"query": "greetings hello", "detail": "name"})
    first = raw.structured_content["matches"][0]
    assert first["kind"] == "skill" and "description" not in first, first
    assert "skills/greet.ts (skill)" in raw.content[0].text, raw.content[0].text
    # Tools still come back as before.
    sc = c.structured("searchTools", {"query": "current time timezone"})
    assert sc["matches"][0]["name"] == TIME_TOOL and "kind" not in sc["matches"][0], sc
    # From code, in both languages.
    ex = ok(c, 'const r = await searchTools("greetings"); return r.matches.find((m) => m.kind === "skill");')
    assert ex.result["name"] == "skills/greet.ts", ex.describe()
    ex = ok_py(c, 'r = await search_tools("doubles numbers")\nr["matches"][0]')
    assert ex.result["name"] == "skills/pyutil.py" and ex.result["language"] == "python", ex.describe()


def test_missing_skills_and_other_languages_say_what_to_do(c) -> None:
    ex = run_ts(c, 'import { x } from "skills/nope.ts";\nx')
    assert not ex.success and "no skill named nope" in ex.error and "skills ls" in ex.error, ex.describe()
    ex = run_py(c, "from skills import nope")
    assert not ex.success and "ImportError" in ex.error + ex.output and "no skill named nope" in ex.error, ex.describe()
    ex = run_ts(c, 'import { double } from "skills/pyutil.ts";\ndouble(1)')
    assert not ex.success and "written in python" in ex.error, ex.describe()
    ex = run_py(c, "from skills import greet")
    assert not ex.success and "written in typescript" in ex.error, ex.describe()


@pytest.mark.parametrize("name", ["../x", "a/b", "Greet", "class", "a\\u0000b", "x" * 65])
def test_bad_names_are_refused(c, name: str) -> None:
    ex = run_ts(c, f'await saveSkill("{name}", "export const a = 1;");')
    assert not ex.success and "refused" in ex.error, ex.describe()


def test_code_cannot_read_the_skills_directory_but_through_the_api(c, world, greet) -> None:
    d = skills_dir(world)
    ex = run_ts(c, f"return await Deno.readTextFile({json.dumps(str(d / 'greet.ts'))});")
    assert not ex.success and "hello" not in json.dumps(ex.sc), ex.describe()
    ex = run_ts(c, f"return [...Deno.readDirSync({json.dumps(str(d))})].map((e) => e.name);")
    assert not ex.success, ex.describe()
    ex = run_ts(c, f'import * as g from {json.dumps((d / "greet.ts").as_uri())};\ng')
    assert not ex.success and "refused" in ex.error, ex.describe()
    ex = run_ts(c, f'return await import({json.dumps((d / "greet.ts").as_uri())});')
    assert not ex.success and "refused" in ex.error, ex.describe()
    ex = run_py(c, f"open({json.dumps(str(d / 'pyutil.py'))}).read()")
    assert not ex.success and "double" not in json.dumps(ex.sc), ex.describe()


def test_a_skill_edited_on_disk_is_what_the_next_execution_imports(c, world) -> None:
    ok(c, 'await saveSkill("edited", "export const v = 1;\\n", {description: "before"});')
    (skills_dir(world) / "edited.ts").write_text("export const v = 2;\nexport function w(): number { return 3; }\n")
    ex = ok(c, 'import { v, w } from "skills/edited.ts";\n[v, w()]')
    assert ex.result == [2, 3], ex.describe()
    sc = c.structured("searchTools", {"query": "edited", "detail": "full"})
    assert "export function w(): number" in sc["matches"][0]["exports"], sc


def test_the_command_line_lists_shows_and_removes(c, world, greet) -> None:
    env = world["env"]
    ok(c, 'await saveSkill("doomed", "export const d = 1;\\n", {description: "to remove"});')
    proc = run_cli(env, "skills", "ls")
    assert proc.returncode == 0, proc.stderr
    assert "greet (typescript) - Friendly greetings for people" in proc.stdout, proc.stdout
    assert "    export function hello(name: string): string" in proc.stdout, proc.stdout
    listed = json.loads(run_cli(env, "skills", "ls", "--json").stdout)
    assert {"greet", "doomed"} <= {s["name"] for s in listed}, listed
    proc = run_cli(env, "skills", "show", "greet")
    assert proc.returncode == 0 and GREET.strip() in proc.stdout, proc.stdout
    assert json.loads(run_cli(env, "skills", "show", "greet", "--json").stdout)["code"] == GREET
    proc = run_cli(env, "search", "friendly greetings", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["matches"][0]["name"] == "skills/greet.ts", proc.stdout
    proc = run_cli(env, "skills", "rm", "doomed")
    assert proc.returncode == 0 and "removed" in proc.stdout, proc.stdout + proc.stderr
    proc = run_cli(env, "skills", "rm", "doomed")
    assert proc.returncode != 0 and "no skill named doomed" in proc.stderr, proc.stdout + proc.stderr
    proc = run_cli(env, "skills", "show", "../etc")
    assert proc.returncode != 0 and "refused" in proc.stderr, proc.stderr
    ex = run_ts(c, 'import { d } from "skills/doomed.ts";\nd')
    assert not ex.success and "no skill named doomed" in ex.error, ex.describe()


def test_without_the_workspace_skills_say_so(tmp_path: Path, ce_binary) -> None:
    off = start_client("stdio", tmp_path, SERVERS, {"CODE_EXECUTOR_WORKSPACE": "false"})
    try:
        ex = run_ts(off, 'await saveSkill("x", "export const a = 1;");')
        assert not ex.success and "workspace, which is off" in ex.error, ex.describe()
        ex = run_ts(off, 'import { a } from "skills/x.ts";\na')
        assert not ex.success and "workspace, which is off" in ex.error, ex.describe()
    finally:
        off.close()


def test_get_tool_schema_shows_a_skill(c, greet) -> None:
    sc = c.structured("getToolSchema", {"name": "skills/greet.ts"})
    assert sc["kind"] == "skill" and sc["description"] == "Friendly greetings for people", sc
    assert "export function hello(name: string): string" in sc["signature"], sc
    ex = ok(c, 'return await getToolSchema("skills/greet");')
    assert ex.result["import"] == 'import { hello, shout } from "skills/greet.ts"', ex.describe()
    ex = run_ts(c, 'return await getToolSchema("skills/nope.ts");')
    assert not ex.success and "no skill named nope" in ex.error, ex.describe()


def test_a_skill_may_be_saved_for_the_other_language(c) -> None:
    # From Python, TypeScript is still checked to parse before it is saved.
    ex = run_py(c, 'await save_skill("tsfrompy", "export function (", language="typescript")')
    assert not ex.success and "does not parse" in ex.error, ex.describe()
    ok_py(c, 'await save_skill("tsfrompy", "export const three = (): number => 3;\\n", language="typescript")')
    ex = ok(c, 'import { three } from "skills/tsfrompy.ts";\nthree()')
    assert ex.result == 3, ex.describe()
    ok(c, 'await saveSkill("pyfromts", "def four():\\n    return 4\\n", {language: "python"});')
    ex = ok_py(c, "from skills.pyfromts import four\nfour()")
    assert ex.result == 4, ex.describe()
