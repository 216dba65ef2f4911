// Static module references: `findModuleReferences` (30_tokenizer.js) finds every import and
// export-from declaration of a source, in every form and wherever it stands, and nothing that
// merely looks like one inside a string, comment, template or regex. The import guard, skill
// linking and the skill check at save time all read references through it.

import { assertEquals, findModuleReferences, rawTokenize, tsSkillImports } from "./harness.js";

/** The references of `src` as [keyword, specifier text, declaration text, top]. */
function refs(src) {
  const { tokens } = rawTokenize(src);
  const found = findModuleReferences(tokens);
  return Array.from(found, (r) => {
    const spec = tokens[r.spec];
    return [r.keyword, src.slice(spec.s + 1, spec.e - 1), src.slice(r.s, r.e), r.top];
  });
}

Deno.test("references: every import declaration form", () => {
  for (
    const [src, spec] of [
      ['import x from "m";', "m"],
      ['import "m"', "m"],
      ["import * as ns from 'm'", "m"],
      ['import x, { a as b, "c-d" as e } from "m"', "m"],
      ['import x, * as y from "m"', "m"],
      ['import type { T } from "m"', "m"],
      ['import type T from "m"', "m"],
      ['import { type T, u } from "m"', "m"],
      ['import defer * as ns from "m"', "m"],
      ['import source s from "m"', "m"],
      ['import from from "m"', "m"],
      ['import {\n  a,\n  b,\n} from "m"', "m"],
      ['import /* a comment */ x /* another */ from /* and */ "m"', "m"],
    ]
  ) {
    assertEquals(refs(src).map((r) => [r[0], r[1], r[3]]), [["import", spec, true]], src);
  }
  // Attributes and the semicolon belong to the declaration.
  assertEquals(refs('import j from "./j.json" with { type: "json" };\nj'), [
    ["import", "./j.json", 'import j from "./j.json" with { type: "json" };', true],
  ]);
  assertEquals(refs('import j from "./j.json" assert { type: "json" }')[0][2], 'import j from "./j.json" assert { type: "json" }');
});

Deno.test("references: every export-from declaration form", () => {
  for (
    const src of [
      'export * from "m"',
      'export * as ns from "m"',
      'export * as "a name" from "m"',
      'export { a } from "m"',
      'export { a as b, c } from "m"',
      'export { default } from "m"',
      'export { a }\nfrom "m"',
      'export type { T } from "m"',
      'export type * from "m"',
      'export type * as T from "m"',
      'export * from "m" with { type: "json" }',
    ]
  ) {
    assertEquals(refs(src).map((r) => [r[0], r[1], r[2]]), [["export", "m", src]], src);
  }
});

Deno.test("references: exports of a module's own bindings are not references", () => {
  for (
    const src of [
      "export { a }",
      "export { a as b };",
      "export type { T }",
      "export const from = 1;",
      "export default function f() {}",
      "export function g() {}",
      'export default "m"',
      "export * as ns",
    ]
  ) {
    assertEquals(refs(src), [], src);
  }
});

Deno.test("references: found wherever they stand, marked when not at the top level", () => {
  assertEquals(refs('const a = 1; import { b } from "m"; export * from "n"').map((r) => [r[1], r[3]]), [["m", true], [
    "n",
    true,
  ]]);
  assertEquals(refs('x\nexport { y } from "z"').map((r) => r[3]), [true]);
  // Not where a declaration may stand, still found: a parser may read the source otherwise.
  assertEquals(refs('if (x) { import y from "m" }').map((r) => [r[1], r[3]]), [["m", false]]);
  assertEquals(refs('foo import x from "m"').map((r) => [r[1], r[3]]), [["m", false]]);
  assertEquals(refs('function f() { export * from "m" }').map((r) => [r[1], r[3]]), [["m", false]]);
  assertEquals(refs('a.import x from "m"').map((r) => r[1]), ["m"]);
  // Escaped keywords are the keywords as parsers read them.
  assertEquals(refs('\\u0065xport * fr\\u006fm "m"').map((r) => r[1]), ["m"]);
  assertEquals(refs('import * as v fr\\u006fm "m"').map((r) => r[1]), ["m"]);
});

Deno.test("references: strings, comments, templates and regexes that hold the text count for nothing", () => {
  for (
    const src of [
      'const s = \'export * from "node:vm"\';',
      "const s = \"import x from 'node:vm'\";",
      '// export * from "node:vm"\n1',
      '/* import x from "node:vm" */ 1',
      '/*\nexport { a } from "node:vm"\n*/',
      'const t = `export * from "node:vm"`;',
      'const t = `${1} import x from "node:vm" ${2}`;',
      'const r = /export * from "node:vm"/;',
      'const r = /import x from "node:vm"/g.test(s);',
    ]
  ) {
    assertEquals(refs(src), [], src);
  }
  // Dynamic imports and import.meta are not references (the guard routes them to `__imp_`).
  assertEquals(refs('const m = await import("m"); import.meta.url; import.defer("n")'), []);
  // TypeScript's import-equals loads nothing: Deno refuses it (tests/e2e/test_skill_crossings.py).
  assertEquals(refs('import x = require("m")'), []);
  assertEquals(refs('export import x = require("m")'), []);
  assertEquals(refs("import { a }"), []);
  assertEquals(refs("const o = { import: 1, export: 2 };"), []);
});

Deno.test("references: skills named by any form, once each, in order", () => {
  assertEquals(
    Array.from(tsSkillImports('export * from "skills/a.ts";\nexport { b } from "skills/b";\nimport c from "skills/c.ts";\nexport * as a2 from "skills/a";')),
    ["a", "b", "c"],
  );
  assertEquals(Array.from(tsSkillImports('const s = \'from "skills/a.ts"\'; // import x from "skills/b.ts"')), []);
});
