// Source preparation of src/sandbox/runner/31_typescript.js: the last expression (the REPL-like
// value), the module variants and their location maps, and the plain-JavaScript decision.

import {
  assertEquals,
  buildTypeScriptVariants,
  findLastExpression,
  lastExpression,
  lineColAt,
  mayBePlainJavaScript,
  tokenize,
  WRAPPER_PREFIX,
} from "./harness.js";

/** `mayBePlainJavaScript` of `code` on its own tokens. */
const plain = (code) => mayBePlainJavaScript(code, tokenize(code).tokens);

Deno.test("findLastExpression: offsets, trailing semicolons and comments", () => {
  assertEquals(findLastExpression("1 + 1"), { s: 0, e: 5, after: 5 });
  assertEquals(findLastExpression("x;;"), { s: 0, e: 1, after: 2 });
  assertEquals(findLastExpression("a;\n b ; "), { s: 4, e: 5, after: 7 });
  assertEquals(lastExpression("x = 1; x;  // done"), "x");
  assertEquals(lastExpression(""), null);
  assertEquals(lastExpression(";"), null);
  assertEquals(lastExpression("a /* unterminated"), null); // tokens do not balance
});

Deno.test("findLastExpression: the statement after a boundary", () => {
  assertEquals(lastExpression("let x = 1\nx"), "x");
  assertEquals(lastExpression("if (a) { b }\nc"), "c");
  assertEquals(lastExpression("function f() {}\nf()"), "f()");
  assertEquals(lastExpression("while (a) b()\nc"), "c");
  assertEquals(lastExpression("const f = (a) => {\n  return a\n}\nf(2)"), "f(2)");
  assertEquals(lastExpression("const a = [1,\n2]\na.length"), "a.length");
  assertEquals(lastExpression("a\n++b"), "++b");
  assertEquals(lastExpression("let v = 1\nv++"), "v++");
  assertEquals(lastExpression("type = 5; type"), "type");
});

Deno.test("findLastExpression: a line break that does not end the statement", () => {
  assertEquals(lastExpression("a\n.b"), "a\n.b");
  assertEquals(lastExpression("x = 1\n-y"), "x = 1\n-y");
  assertEquals(lastExpression("x\nin y"), "x\nin y");
  assertEquals(lastExpression("x = y\n(z)"), "x = y\n(z)");
  assertEquals(lastExpression("f(a)\n[1, 2]"), "f(a)\n[1, 2]");
  assertEquals(lastExpression("x\n`t`"), "x\n`t`");
  assertEquals(lastExpression("let v = 1\nv +"), null); // unfinished
});

Deno.test("findLastExpression: expressions", () => {
  for (
    const code of [
      "({a: 1})",
      "await fetchIt()",
      "async () => 1",
      "!done",
      "x ? y : z",
      "<T>x",
      "new Map()",
      "typeof x",
      "void 0",
      '"use strict"',
      "x as number",
      "x satisfies T",
      "f<T>(x)",
      "module.exports",
    ]
  ) {
    assertEquals(lastExpression(code), code, code);
  }
});

Deno.test("findLastExpression: statements and declarations give no value", () => {
  for (
    const code of [
      "const x = 1;",
      "{a: 1}",
      "async function f() {}",
      "for (const x of y) f(x)",
      "foo: bar",
      "label:\nfor(;;) break label",
      "@dec class A {}",
      "export const a = 1",
      "type X = 1",
      "interface I { a: number }",
      "enum E { A }",
      "declare const q: number",
      "namespace N {}",
      "abstract class C {}",
      "await using r = g()",
      "return /x/",
    ]
  ) {
    assertEquals(lastExpression(code), null, code);
  }
});

Deno.test("limitation (pinned): statements the boundary rules misread give no value", () => {
  // `)` of `while` is taken for a loop head, so `z` seems to be its body.
  assertEquals(lastExpression("do x(); while (y)\nz"), null);
  // A regex after a block's `}` is read as division (see tokenizer_test.js).
  assertEquals(lastExpression("function f() {}\n/a/.test(s)"), null);
});

Deno.test("variants: the last expression returned first, then the plain body", () => {
  const r = buildTypeScriptVariants("1 + 1");
  assertEquals(r.maybePlainJs, true);
  assertEquals(r.variants.map((v) => [v.source, v.body]), [
    [WRAPPER_PREFIX + "return (1 + 1);\n}\n", "return (1 + 1);"],
    [WRAPPER_PREFIX + "1 + 1\n}\n", "1 + 1"],
  ]);
  assertEquals(buildTypeScriptVariants("x = 1; x;  // done").variants.map((v) => v.body), [
    "x = 1; return (x);  // done",
    "x = 1; x;  // done",
  ]);
  assertEquals(
    buildTypeScriptVariants("const o = {a: 1}\no.a\n// trailing comment").variants[0].body,
    "const o = {a: 1}\nreturn (o.a);\n// trailing comment",
  );
  // No last expression: one variant.
  assertEquals(buildTypeScriptVariants("const x = 1;").variants.map((v) => v.source), [
    WRAPPER_PREFIX + "const x = 1;\n}\n",
  ]);
  // A `#!` line becomes a comment.
  assertEquals(
    buildTypeScriptVariants("#!/usr/bin/env -S deno run\n42").variants[0].body,
    "///usr/bin/env -S deno run\nreturn (42);",
  );
});

Deno.test("variants: module locations map back to user locations", () => {
  const P = WRAPPER_PREFIX.length;
  // Line 1 shares its line with the wrapper and `return (`.
  const one = buildTypeScriptVariants("1 + foo").variants[0];
  assertEquals([one.mapLocation(1, P + 9 + 4), one.mapLocation(1, P + 1), one.mapLocation(1, P + 9)], [
    [1, 5],
    [1, 1],
    [1, 1],
  ]);
  const two = buildTypeScriptVariants("const a = 1\nbar(a)").variants[0];
  assertEquals(two.source, WRAPPER_PREFIX + "const a = 1\nreturn (bar(a));\n}\n");
  assertEquals([two.mapLocation(1, P + 7), two.mapLocation(2, 9), two.mapLocation(2, 12), two.mapLocation(2, 15)], [
    [1, 7],
    [2, 1],
    [2, 4],
    [2, 7],
  ]);
  // Past the body (the closing `}`): the last user line.
  assertEquals([two.mapLocation(3, 1), two.mapLocation(9, 9)], [[2, 1], [2, 1]]);
  // An expression over two lines: `return (` on the first, `);` on the second.
  const multi = buildTypeScriptVariants("foo(1,\n  2)").variants[0];
  assertEquals(multi.source, WRAPPER_PREFIX + "return (foo(1,\n  2));\n}\n");
  assertEquals([multi.mapLocation(1, P + 12), multi.mapLocation(2, 3)], [[1, 4], [2, 3]]);
  assertEquals([lineColAt("ab\ncd\nef", 4), lineColAt("ab", 0)], [[2, 2], [1, 1]]);
});

Deno.test("mayBePlainJavaScript: no import of any kind", () => {
  assertEquals(plain('import x from "m"; x'), false);
  assertEquals(plain('const m = await import("m"); m'), false);
  assertEquals(plain("import.meta.url"), false);
  assertEquals(plain("const important = 1"), true);
});

Deno.test("mayBePlainJavaScript: no HTML-like comment, even inside a string", () => {
  assertEquals(plain("<!-- hi"), false);
  assertEquals(plain("x --> 0"), false);
  assertEquals(plain('const s = "<!--"; s'), false);
  assertEquals(plain("const s = '-->'"), false);
});

Deno.test("mayBePlainJavaScript: no `>` right before `(` or a template", () => {
  assertEquals(plain("f<T>(x)"), false);
  assertEquals(plain("a < b > (c)"), false);
  assertEquals(plain("f<T>`x`"), false);
  assertEquals(plain("x > `t`"), false);
  assertEquals(plain("a >> (b)"), false);
  assertEquals(plain("a >>> (b)"), false);
  assertEquals(plain("const y = <T,>(v: T) => v\ny(1)"), false);
  assertEquals(plain("a >= (b)"), true);
  assertEquals(plain("(a > b)"), true);
  assertEquals(plain("a > b\n`t`"), true);
});

Deno.test("mayBePlainJavaScript: other type syntax is left to V8 to refuse", () => {
  // `compilePlainJs` returns null when V8 does not accept the code; the module path runs it.
  assertEquals(plain("type A = string\n1"), true);
  assertEquals(plain("x as number"), true);
  assertEquals(plain("interface I { a: number }"), true);
  assertEquals(plain("export const a = 1"), true);
  // Tokens that do not balance: the variants say no, whatever the rules above say.
  assertEquals(plain("x; /* unterminated"), true);
  const r = buildTypeScriptVariants("x; /* unterminated");
  assertEquals([r.maybePlainJs, r.variants.length], [false, 1]);
});
