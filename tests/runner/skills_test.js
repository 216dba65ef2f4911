// Skills: which skills a module imports, as 56_skills.js reads them before the code runs
// (TypeScript static imports; Python import statements), so that it fetches exactly those; and
// what the save-time check of a TypeScript skill blanks before it compiles the rest.

import { assertEquals, blankRanges, declarationRanges, pySkillImports, rawTokenize, tsSkillImports } from "./harness.js";

Deno.test("tsSkillImports: static and literal imports of skills/<name>(.ts), once each", () => {
  assertEquals(tsSkillImports('import { a } from "skills/one.ts";\nimport * as t from \'skills/two\';\na'), ["one", "two"]);
  assertEquals(tsSkillImports('import { a } from "skills/one.ts";\nimport { b } from "skills/one.ts";'), ["one"]);
  assertEquals(tsSkillImports('export { f } from "skills/re_export.ts";'), ["re_export"]);
  // Not skills: other prefixes, upper case, paths, plain strings.
  assertEquals(tsSkillImports('import x from "./skills/a.ts"; import y from "skills/B.ts"; const s = "skills/c.ts";'), []);
  // Once guarded, a dynamic import is an `__imp_(` call: loaded when it runs, not before.
  assertEquals(tsSkillImports('const m = await __imp_("skills/later.ts");'), []);
});

Deno.test("pySkillImports: the import statements that name skills", () => {
  const code = "from skills import a, b as bee\nfrom skills.c import f\nimport skills.d, os\nimport skills.e as e";
  assertEquals(pySkillImports(code), ["a", "b", "c", "d", "e"]);
  assertEquals(pySkillImports("from skills import (\n    a,\n    b,\n)\n"), ["a", "b"]);
  assertEquals(pySkillImports("if True:\n    from skills import inner  # comment\n"), ["inner"]);
  // Mentions that are not imports load nothing.
  assertEquals(pySkillImports('print("skills.json")\nx = "from skills import a"\nimport skillsx\nfrom skills import Bad'), []);
});

Deno.test("the save-time check blanks every import and export declaration the finder sees, in place", () => {
  const src = [
    'import { a } from "skills/a.ts";',
    'export * from "skills/b.ts";',
    'export type { T } from "node:path";',
    "const q = 1;",
    "export { q as r };",
    "export type { T as U };",
    "export default function main() { return q; }",
    "export const s = 'export * from \"x\"';",
  ].join("\n");
  const body = blankRanges(src, declarationRanges(rawTokenize(src).tokens));
  assertEquals(body.split("\n").map((l) => l.trim()), [
    "",
    "",
    "",
    "const q = 1;",
    "",
    "",
    "function main() { return q; }",
    "const s = 'export * from \"x\"';",
  ]);
  assertEquals(body.length, src.length);
});
