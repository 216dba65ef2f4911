// The tokenizer of src/sandbox/runner/30_tokenizer.js: token kinds, text, offsets, bracket
// depth, line breaks, template pieces, regex versus division, comments and strings.

import { assertEquals, texts, tokenize } from "./harness.js";

Deno.test("tokens carry kind, offsets, depth, line break and the owner of `)`", () => {
  assertEquals(tokenize("f(a, [b])\n  {x}"), {
    ok: true,
    tokens: [
      { t: "id", v: "f", s: 0, e: 1, d: 0, nl: false },
      { t: "p", v: "(", s: 1, e: 2, d: 0, nl: false },
      { t: "id", v: "a", s: 2, e: 3, d: 1, nl: false },
      { t: "p", v: ",", s: 3, e: 4, d: 1, nl: false },
      { t: "p", v: "[", s: 5, e: 6, d: 1, nl: false },
      { t: "id", v: "b", s: 6, e: 7, d: 2, nl: false },
      { t: "p", v: "]", s: 7, e: 8, d: 1, nl: false },
      { t: "p", v: ")", s: 8, e: 9, d: 0, nl: false, owner: "f" },
      { t: "p", v: "{", s: 12, e: 13, d: 0, nl: true },
      { t: "id", v: "x", s: 13, e: 14, d: 1, nl: false },
      { t: "p", v: "}", s: 14, e: 15, d: 0, nl: false },
    ],
  });
  // Only identifiers and punctuators keep their text in `v`.
  assertEquals(tokenize('"s"; 1; `t`; /r/').tokens.filter((t) => t.v !== ";").map((t) => [t.t, t.v]), [
    ["str", ""],
    ["num", ""],
    ["tpl", ""],
    ["re", ""],
  ]);
  // U+2028 is a line break; U+00A0 is white space.
  assertEquals(tokenize("a\u2028b\u00a0c").tokens.map((t) => [t.v, t.s, t.nl]), [
    ["a", 0, false],
    ["b", 2, true],
    ["c", 4, false],
  ]);
});

Deno.test("brackets that do not balance make `ok` false", () => {
  assertEquals(tokenize("(]").ok, false);
  assertEquals(tokenize(")").ok, false);
  assertEquals(tokenize("{").ok, false);
  assertEquals(tokenize("a /* unterminated").ok, false);
  assertEquals(tokenize('"abc\nx').ok, false);
  assertEquals(tokenize("`abc").ok, false);
});

Deno.test("template literals: pieces, nesting, braces and strings inside substitutions", () => {
  assertEquals(
    tokenize("`a${b}c${d}e`").tokens.map((t) => [t.t, t.s, t.e, t.d, t.open, t.cont]),
    [
      ["tpl", 0, 4, 0, true, false],
      ["id", 4, 5, 1, undefined, undefined],
      ["tpl", 5, 9, 0, true, true],
      ["id", 9, 10, 1, undefined, undefined],
      ["tpl", 10, 13, 0, false, true],
    ],
  );
  // An object literal inside `${}`: its `}` closes the brace, the next one the substitution.
  assertEquals(texts('`a${ {b: "}"}.b }c`'), [
    "tpl:`a${",
    "p:{",
    "id:b",
    "p::",
    'str:"}"',
    "p:}",
    "p:.",
    "id:b",
    "tpl:}c`",
  ]);
  assertEquals(texts("`a${`in${x}`}b`"), ["tpl:`a${", "tpl:`in${", "id:x", "tpl:}`", "tpl:}b`"]);
  assertEquals(texts('`x${ `y` + "}" }z` + 1'), [
    "tpl:`x${",
    "tpl:`y`",
    "p:+",
    'str:"}"',
    "tpl:}z`",
    "p:+",
    "num:1",
  ]);
  // Backticks inside strings, in and out of templates; an escaped `${`.
  assertEquals(texts('const s = "`"; `x`'), ["id:const", "id:s", "p:=", 'str:"`"', "p:;", "tpl:`x`"]);
  assertEquals(texts('`a${"`"}b`'), ["tpl:`a${", 'str:"`"', "tpl:}b`"]);
  assertEquals(texts("`\\${x}`"), ["tpl:`\\${x}`"]);
  // A regex may start a substitution; a template is an operand, so `/` after it divides.
  assertEquals(texts("x = `a${ /r/ }`"), ["id:x", "p:=", "tpl:`a${", "re:/r/", "tpl:}`"]);
  assertEquals(texts("x = `a` / 2"), ["id:x", "p:=", "tpl:`a`", "p:/", "num:2"]);
});

Deno.test("regex or division", () => {
  assertEquals(texts("a / b / c"), ["id:a", "p:/", "id:b", "p:/", "id:c"]);
  assertEquals(texts("x = /re/g"), ["id:x", "p:=", "re:/re/g"]);
  assertEquals(texts("(a) / 2"), ["p:(", "id:a", "p:)", "p:/", "num:2"]);
  assertEquals(texts("a[0] / 2; b++ /2"), [
    "id:a",
    "p:[",
    "num:0",
    "p:]",
    "p:/",
    "num:2",
    "p:;",
    "id:b",
    "p:++",
    "p:/",
    "num:2",
  ]);
  assertEquals(texts("x = {} / 2"), ["id:x", "p:=", "p:{", "p:}", "p:/", "num:2"]);
  assertEquals(texts("return /x/"), ["id:return", "re:/x/"]);
  assertEquals(texts("yield /x/; case /y/: await /z/; typeof /w/"), [
    "id:yield",
    "re:/x/",
    "p:;",
    "id:case",
    "re:/y/",
    "p::",
    "id:await",
    "re:/z/",
    "p:;",
    "id:typeof",
    "re:/w/",
  ]);
  // `/` inside a class, escaped slashes, flags.
  assertEquals(texts("/\\/\\/x[/]/.test(z)"), ["re:/\\/\\/x[/]/", "p:.", "id:test", "p:(", "id:z", "p:)"]);
  // Where a regex may start but none closes on the line, `/` is a punctuator.
  assertEquals(texts("a + /c\nd/"), ["id:a", "p:+", "p:/", "id:c", "id:d", "p:/"]);
});

Deno.test("limitation (pinned): after `)` of if/while/for and after a block's `}`, `/` is division", () => {
  // JavaScript reads a regex in both places; the tokenizer only looks at the previous token.
  // With no quote, backtick or bracket inside, the tokens still balance.
  assertEquals(texts("if (x) /re/.test(s)"), [
    "id:if",
    "p:(",
    "id:x",
    "p:)",
    "p:/",
    "id:re",
    "p:/",
    "p:.",
    "id:test",
    "p:(",
    "id:s",
    "p:)",
  ]);
  assertEquals(texts("{}\n/x/g"), ["p:{", "p:}", "p:/", "id:x", "p:/", "id:g"]);
  // With a bracket inside, they do not.
  assertEquals(tokenize('function f() {}\n/[(]/.test("(")').ok, false);
});

Deno.test("comments: line, block, and comment markers inside strings and regexes", () => {
  assertEquals(texts("a // b\nc"), ["id:a", "id:c"]);
  assertEquals(texts("/* // */ x"), ["id:x"]);
  // A block comment with a line break counts as one.
  assertEquals(tokenize("a /* 1\n2 */ b").tokens.map((t) => [t.v, t.nl]), [["a", false], ["b", true]]);
  assertEquals(tokenize("a /* 1 */ b").tokens[1].nl, false);
  assertEquals(texts('"/*" + y'), ['str:"/*"', "p:+", "id:y"]);
  assertEquals(texts('"a // b"; c'), ['str:"a // b"', "p:;", "id:c"]);
  assertEquals(texts("x = /\\/\\//; // c"), ["id:x", "p:=", "re:/\\/\\//", "p:;"]);
  assertEquals(texts("'it\\'s' // x"), ["str:'it\\'s'"]);
  // `#!` is a comment only at offset 0.
  assertEquals(texts("#!/usr/bin/env deno\nx"), ["id:x"]);
  assertEquals(texts("x = 1 #!y"), ["id:x", "p:=", "num:1", "id:#", "p:!", "id:y"]);
});

Deno.test("HTML-like comments are not comments to the tokenizer", () => {
  // `mayBePlainJavaScript` sends code containing them to the module path instead.
  assertEquals(texts("<!-- hi"), ["p:<", "p:!", "p:--", "id:hi"]);
  assertEquals(texts("x --> 0"), ["id:x", "p:--", "p:>", "num:0"]);
});

Deno.test("numbers, identifiers and punctuators", () => {
  assertEquals(texts("0b101n + 1_000 + .5e+3"), ["num:0b101n", "p:+", "num:1_000", "p:+", "num:.5e+3"]);
  // An exponent sign belongs to decimal numbers only: 0x1e-5 is 0x1e minus 5.
  assertEquals(texts("1e-5 + 0x1e-5"), ["num:1e-5", "p:+", "num:0x1e", "p:-", "num:5"]);
  assertEquals(texts("a\\u0062c = #p"), ["id:a\\u0062c", "p:=", "id:#p"]);
  assertEquals(texts("a ??= b ?? c?.d"), ["id:a", "p:??=", "id:b", "p:??", "id:c", "p:?.", "id:d"]);
  // `?.` followed by a digit is a conditional.
  assertEquals(texts("a?.5:1"), ["id:a", "p:?", "num:.5", "p::", "num:1"]);
  assertEquals(texts("a >>>= 1; b **= 2; c => d; ...e"), [
    "id:a",
    "p:>>>=",
    "num:1",
    "p:;",
    "id:b",
    "p:**=",
    "num:2",
    "p:;",
    "id:c",
    "p:=>",
    "id:d",
    "p:;",
    "p:...",
    "id:e",
  ]);
  // A line continuation inside a string.
  assertEquals(tokenize('x = "a\\\nb"'), {
    ok: true,
    tokens: [
      { t: "id", v: "x", s: 0, e: 1, d: 0, nl: false },
      { t: "p", v: "=", s: 2, e: 3, d: 0, nl: false },
      { t: "str", v: "", s: 4, e: 10, d: 0, nl: false },
    ],
  });
});

Deno.test("type-only syntax tokenizes as identifiers and punctuators", () => {
  assertEquals(texts("f<T>(x)"), ["id:f", "p:<", "id:T", "p:>", "p:(", "id:x", "p:)"]);
  assertEquals(texts("type A = string"), ["id:type", "id:A", "p:=", "id:string"]);
  assertEquals(texts("interface I { a: number }"), ["id:interface", "id:I", "p:{", "id:a", "p::", "id:number", "p:}"]);
  assertEquals(texts("x as number satisfies T"), ["id:x", "id:as", "id:number", "id:satisfies", "id:T"]);
  assertEquals(texts("const y = <T,>(v: T) => v"), [
    "id:const",
    "id:y",
    "p:=",
    "p:<",
    "id:T",
    "p:,",
    "p:>",
    "p:(",
    "id:v",
    "p::",
    "id:T",
    "p:)",
    "p:=>",
    "id:v",
  ]);
});
