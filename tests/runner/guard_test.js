// The import rules (32_imports.js): which specifiers code may load, a source held to them
// (`guardModule`, `guardScript`), links to this isolate's modules (`linkReferences`), and the
// guard unmoved by built-ins that user code replaced before it runs again.

import {
  assertEquals,
  guardModule,
  guardScript,
  IMPORTABLE_SKILL_RE,
  importable,
  linkReferences,
  tsSkillImports,
} from "./harness.js";

/** The refusal `f(src)` throws, or the source it returns. */
function outcome(f, src) {
  try {
    const r = f(src);
    return typeof r === "string" ? r : r.source;
  } catch (e) {
    return `refused: ${e.message.split(" refused")[0]}`;
  }
}

Deno.test("importable: wrappers, skills and node: built-ins but six, spelled exactly", () => {
  for (const ok of ["node:path", "node:fs/promises", "node:_http_agent", "wrappers/git.ts", "wrappers/Git_2", "skills/a_b.ts", "skills/x"]) {
    assertEquals(importable(ok), true, ok);
  }
  for (
    const no of [
      "node:vm",
      "node:worker_threads",
      "node:module",
      "node:process",
      "node:repl",
      "node:inspector/promises",
      // Deno's URL parsing strips or folds these into a refused built-in.
      "node:vm ",
      " node:vm",
      "node:v\tm",
      "node:vm\n",
      "NODE:vm",
      "node:VM",
      "node:%76m",
      "data:text/javascript,1",
      "blob:x",
      "https://example.com/x.ts",
      "file:///etc/passwd",
      "npm:left-pad",
      "./x.ts",
      "skills/A.ts",
      "skills/../x",
      "wrappers/git.py",
      "",
    ]
  ) {
    assertEquals(importable(no), false, JSON.stringify(no));
  }
  assertEquals(importable(undefined), false);
});

Deno.test("guardModule: every form of reference to a refused module is refused", () => {
  for (
    const [src, spec] of [
      ['export * as wt from "node:worker_threads";', "node:worker_threads"],
      ['export * from "node:vm"', "node:vm"],
      ['export { runInThisContext } from "node:vm"', "node:vm"],
      ['export type { Script } from "node:vm"', "node:vm"],
      ['export * from "data:text/javascript,export const a = 1"', "data:text/javascript,export const a = 1"],
      ['import type { Script } from "node:vm"', "node:vm"],
      ['import defer * as vm from "node:vm"', "node:vm"],
      ['import "node:inspector"', "node:inspector"],
      ['import x from "node:vm "', "node:vm "],
      ['import x from "node:\\u0076m"', "node:\\u0076m"],
      ['export * from "node:\\x76m"', "node:\\x76m"],
      ['const a = 1;\nif (a) { export * from "node:module" }', "node:module"],
    ]
  ) {
    assertEquals(outcome(guardModule, src), `refused: import of ${JSON.stringify(spec)}`, src);
  }
  // What is offered passes unchanged.
  const fine = 'import { join } from "node:path";\nexport * from "skills/base.ts";\nexport { x } from "wrappers/git.ts";';
  assertEquals(outcome(guardModule, fine), fine);
});

Deno.test("guardModule: dynamic and phase imports go through __imp_, import.meta stays", () => {
  assertEquals(
    outcome(guardModule, 'await import("a"); await import.defer("b"); await import.source("c"); import.meta.url;'),
    'await __imp_("a"); await __imp_.defer("b"); await __imp_.source("c"); import.meta.url;',
  );
  assertEquals(outcome(guardModule, "import\n  .defer(x); import /* c */ (y)"), "__imp_\n  .defer(x); __imp_ /* c */ (y)");
  // Escaped spellings are `import` to TypeScript's parser: the whole word is replaced.
  assertEquals(outcome(guardModule, 'await \\u0069mport("node:vm")'), 'await __imp_     ("node:vm")');
  assertEquals(outcome(guardModule, 'await \\u{69}mport.defer("x")'), 'await __imp_     .defer("x")');
});

Deno.test("guardModule: an import or export read as text is spelled so no parser reads a keyword", () => {
  // The tokenizer takes `of /.../` for a division... or a regex: whichever, no keyword is left.
  assertEquals(outcome(guardModule, 'let of = 2; of /import("node:vm")/ 1'), 'let of = 2; of /\\x69mport("node:vm")/ 1');
  assertEquals(
    outcome(guardModule, 'const a = {return: 2}; a.return /import("node:vm")/ 1'),
    'const a = {return: 2}; a.return /\\x69mport("node:vm")/ 1',
  );
  assertEquals(
    outcome(guardModule, 'const s = "import \\u0069mport export"; // export *\n`${import("y")} import`'),
    'const s = "\\x69mport \\x69mport \\x65xport"; // \\x65xport *\n`${__imp_("y")} \\x69mport`',
  );
  // The same text to a string, a template and a regex.
  const values = (0, eval)(outcome(guardModule, '["import", `export`, /^import$/.test("import"), "\\u0069mport"]'));
  assertEquals(values, ["import", "export", true, "import"]);
  // Left alone: other words, private names, escaped backslashes, property names in code.
  for (const src of ["important; exports; reimport;", "class A { #import = 1 }", '"\\\\import"', "o.import = 1; o.export"]) {
    assertEquals(outcome(guardModule, src), src, src);
  }
});

Deno.test("guardModule: locations after a respelled word map back to the user's columns", () => {
  const { source, mapLocation } = guardModule('const s = "import"; throw 1;');
  assertEquals(source, 'const s = "\\x69mport"; throw 1;');
  // `throw` is at column 22 of the guarded line and 21 of the user's; line 2 is untouched.
  assertEquals([mapLocation(1, 25), mapLocation(1, 5), mapLocation(2, 25)], [[1, 22], [1, 5], [2, 25]]);
  assertEquals(guardModule("const a = 1;").mapLocation, null);
});

Deno.test("guardScript: source evaluated at run time, held to the same rules", () => {
  assertEquals(outcome(guardScript, 'import.defer("data:x")'), '__imp_.defer("data:x")');
  assertEquals(outcome(guardScript, 'x = "import"'), 'x = "\\x69mport"');
  assertEquals(outcome(guardScript, 'import x from "node:vm"'), 'refused: import of "node:vm"');
  assertEquals(outcome(guardScript, "import(`"), "refused: the sandbox cannot check the imports of this source, so it does not run it");
  assertEquals(outcome(guardScript, "1 + 1"), "1 + 1");
});

Deno.test("linkReferences: static references of any form, not strings that look like them", () => {
  const src = 'import a from "skills/a.ts";\nexport * from "skills/b";\nconst s = \'from "skills/c.ts"\';\nawait __imp_("skills/d.ts");';
  assertEquals(
    linkReferences(src, IMPORTABLE_SKILL_RE, (name) => `data:${name}`),
    'import a from "data:a";\nexport * from "data:b";\nconst s = \'from "skills/c.ts"\';\nawait __imp_("skills/d.ts");',
  );
});

Deno.test("the guard is unmoved by built-ins that user code replaced", () => {
  const saved = [];
  const replace = (obj, key, value) => {
    saved.push([obj, key, Object.getOwnPropertyDescriptor(obj, key)]);
    Object.defineProperty(obj, key, { value, configurable: true, writable: true });
  };
  const trap = { get: () => ({ t: "str", v: "", s: 0, e: 0, d: 0 }), set: () => {}, configurable: true };
  try {
    replace(String.prototype, "includes", () => false);
    replace(String.prototype, "indexOf", () => -1);
    replace(String.prototype, "charCodeAt", () => 32);
    replace(String.prototype, "slice", () => "");
    replace(String.prototype, "startsWith", () => false);
    replace(Set.prototype, "has", () => false);
    replace(Map.prototype, "get", () => undefined);
    replace(RegExp.prototype, "exec", () => null);
    replace(RegExp.prototype, Symbol.replace, () => "");
    replace(Array.prototype, "push", () => 0);
    replace(Array.prototype, "map", () => []);
    replace(Array.prototype, Symbol.iterator, function* () {});
    saved.push([Array.prototype, "0", undefined], [Object.prototype, "open", undefined]);
    Object.defineProperty(Array.prototype, "0", trap);
    Object.defineProperty(Object.prototype, "open", { get: () => true, configurable: true });

    // (No arrays are filled while the built-ins are replaced: the test's own would suffer.)
    const reexport = outcome(guardModule, 'export * as wt from "node:worker_threads";');
    const spaced = outcome(guardModule, 'import x from "node:vm "');
    const hidden = outcome(guardModule, 'let of = 2; of /import("node:vm")/ 1');
    const rewritten = outcome(guardScript, 'import.defer("data:x")');
    const names = tsSkillImports('export * from "skills/a.ts"');
    const vm = importable("node:vm");
    const path = importable("node:path");
    const count = names.length;
    const first = names[0];
    for (const [obj, key, desc] of saved.reverse()) {
      if (desc === undefined) delete obj[key];
      else Object.defineProperty(obj, key, desc);
    }
    saved.length = 0;
    assertEquals([reexport, spaced, hidden], [
      'refused: import of "node:worker_threads"',
      'refused: import of "node:vm "',
      'let of = 2; of /\\x69mport("node:vm")/ 1',
    ]);
    assertEquals(rewritten, '__imp_.defer("data:x")');
    assertEquals([vm, path, count, first], [false, true, 1, "a"]);
  } finally {
    for (const [obj, key, desc] of saved.reverse()) {
      if (desc === undefined) delete obj[key];
      else Object.defineProperty(obj, key, desc);
    }
  }
});
