// The harness of the runner's source-preparation tests (the `*_test.js` files here), run with
// the project's Deno by scripts/test, or by hand from the repository root:
//   deno test --no-prompt --no-config --no-lock --no-remote --no-npm \
//     --allow-read=src/sandbox/runner,tests/runner tests/runner/
// It loads the pieces src/sandbox/runner/02_helpers.js, 03_intrinsics.js, 30_tokenizer.js,
// 31_typescript.js, 32_imports.js, 56_skills.js (its import scanning is tested) and
// 61_snapshot_file.js (the snapshot's page table and restoring an image by it) as the runner
// has them: plain scripts sharing one strict-mode scope, after the private references they use,
// taken verbatim from 00_private.js. No network, no dependencies: a small `assertEquals` is
// defined below.

const RUNNER_DIR = new URL("../../src/sandbox/runner/", import.meta.url);

/** The private references of 00_private.js the pieces rely on. */
const PRIVATE_NAMES = [
  "D",
  "JSONStringify",
  "ReflectApply",
  "ErrorIsError",
  "StringFromCharCode",
  "SetCtor",
  "MapCtor",
  "btoaPrivate",
  "U8ToBase64",
  "textEncoder",
  "textDecoder",
  "encodeUtf8",
  "decodeUtf8",
  "inspect",
];

async function piece(name) {
  return await Deno.readTextFile(new URL(name, RUNNER_DIR));
}

function privateReferences(text) {
  return PRIVATE_NAMES.map((name) => {
    const m = new RegExp(`^const ${name} = [^\\n]*;$`, "m").exec(text);
    if (m === null) throw new Error(`00_private.js no longer defines ${name} on one line`);
    return m[0];
  }).join("\n");
}

const PIECES = [
  "02_helpers.js",
  "03_intrinsics.js",
  "30_tokenizer.js",
  "31_typescript.js",
  "32_imports.js",
  "56_skills.js",
  "61_snapshot_file.js",
];

const source = [
  '"use strict";',
  privateReferences(await piece("00_private.js")),
  ...(await Promise.all(PIECES.map(piece))),
  "return { tokenize, findImports, findModuleReferences, findLastExpression, buildTypeScriptVariants,",
  "  mayBePlainJavaScript, lineColAt, WRAPPER_PREFIX, tsSkillImports, pySkillImports, importable,",
  "  guardModule, guardScript, linkReferences, IMPORTABLE_SKILL_RE, declarationRanges, blankRanges,",
  "  nonZeroRuns, checkRuns, restoreImage, IMAGE_PAGE };",
  `//# sourceURL=runner/${PIECES.join("+")}`,
].join("\n");

const pieces = new Function(source)();

export const {
  findImports,
  findModuleReferences,
  findLastExpression,
  buildTypeScriptVariants,
  mayBePlainJavaScript,
  lineColAt,
  WRAPPER_PREFIX,
  tsSkillImports,
  pySkillImports,
  importable,
  guardModule,
  guardScript,
  linkReferences,
  IMPORTABLE_SKILL_RE,
  declarationRanges,
  blankRanges,
  nonZeroRuns,
  checkRuns,
  restoreImage,
  IMAGE_PAGE,
} = pieces;

/** The tokenizer as the runner has it: its lists and tokens have no prototype. */
export const rawTokenize = pieces.tokenize;

/** `tokenize`, its tokens as ordinary arrays and objects (easier to compare and map). */
export function tokenize(src) {
  const r = rawTokenize(src);
  return { ok: r.ok, tokens: Array.from(r.tokens, (t) => ({ ...t })) };
}

/** Tokens of `src` as `kind:text` strings (the text is the source slice the token covers). */
export function texts(src) {
  return tokenize(src).tokens.map((t) => `${t.t}:${src.slice(t.s, t.e)}`);
}

/** The source text of the last expression `findLastExpression` finds, or null. */
export function lastExpression(src) {
  const r = findLastExpression(src);
  return r === null ? null : src.slice(r.s, r.e);
}

/** The import declarations `findImports` finds, as source text. */
export function imports(src) {
  return findImports(tokenize(src).tokens).map((r) => src.slice(r.s, r.e));
}

/**
 * Deep equality for the plain data the pieces return (objects, arrays, primitives); a property
 * whose value is `undefined` counts as absent, like in JSON.
 */
function equal(a, b) {
  if (Object.is(a, b)) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  // The runner's lists have no prototype: no `every` of their own.
  if (Array.isArray(a)) return a.length === b.length && Array.prototype.every.call(a, (x, i) => equal(x, b[i]));
  const keys = (o) => Object.keys(o).filter((k) => o[k] !== undefined).sort();
  const ka = keys(a);
  const kb = keys(b);
  return equal(ka, kb) && ka.every((k) => equal(a[k], b[k]));
}

/** Throws unless `actual` deeply equals `expected` (see `equal`). */
export function assertEquals(actual, expected, message = "values differ") {
  if (equal(actual, expected)) return;
  const show = (v) => Deno.inspect(v, { depth: 10, colors: false, strAbbreviateSize: 10000 });
  throw new Error(`${message}\n  actual:   ${show(actual)}\n  expected: ${show(expected)}`);
}
