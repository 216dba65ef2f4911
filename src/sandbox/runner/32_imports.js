// 32_imports.js: the import rules (docs/interface.md, "Imports"), applied to every source before
// it is loaded or evaluated (code, skills, skills imported by skills, wrappers, and source
// evaluated at run time): which modules code may load (`importable`, `importRefusal`), and a
// source held to them (`guardModule`, `guardScript`): every static module reference
// (`findModuleReferences`, 30) must name a module the sandbox offers; `import(...)`,
// `import.defer(...)` and `import.source(...)` become calls of `__imp_` (`importForUser`, 50);
// and an `import` or `export` word the tokenizer reads as text (in a string, template, regex or
// comment as it sees them) is spelled `\x69mport` / `\x65xport`: the same text there, and no
// keyword to any parser that reads the spot as code after all (the tokenizer is lenient: it may
// take a division for a regex). `linkReferences` points references at this isolate's modules.
// Pure functions, written with 03's intrinsics. Rely on 00-30; tested by tests/runner/.

/** The global that `import(...)` calls are rewritten to (as long as `import`). */
const IMPORT_GLOBAL = "__imp_";
const IMPORTABLE_WRAPPER_RE = /^wrappers\/([A-Za-z_][A-Za-z0-9_]*)(?:\.ts)?$/;
const IMPORTABLE_SKILL_RE = /^skills\/([a-z][a-z0-9_]*)(?:\.ts)?$/;
/** A `node:` built-in, spelled exactly (Deno's URL parsing would also take `node:vm ` for `node:vm`). */
const NODE_BUILTIN_RE = /^node:([a-z_][a-z0-9_]*)(?:\/[a-z_][a-z0-9_]*)*$/;
/**
 * The `node:` built-ins the sandbox does not offer: they start isolates of their own
 * (`worker_threads`) or compile code from strings past the guard (`vm`, `repl`, `inspector`,
 * `module`'s `require`, `process.getBuiltinModule`).
 */
const REFUSED_BUILTINS = new SetCtor(["worker_threads", "vm", "repl", "inspector", "module", "process"]);

/** Whether the sandbox offers module `specifier` to user code. */
function importable(specifier) {
  if (typeof specifier !== "string") return false;
  const node = RegExpPrototypeExec(NODE_BUILTIN_RE, specifier);
  if (node !== null) return !SetPrototypeHas(REFUSED_BUILTINS, node[1]);
  return RegExpPrototypeExec(IMPORTABLE_WRAPPER_RE, specifier) !== null ||
    RegExpPrototypeExec(IMPORTABLE_SKILL_RE, specifier) !== null;
}

/** The error for an import the sandbox does not offer. */
function importRefusal(specifier) {
  return new TypeError(
    `import of ${JSONStringify(truncateUtf8(safeString(specifier), 200))} refused: code in the sandbox may import ` +
      "only wrappers/<name>.ts (the typed wrappers), skills/<name>.ts (saved skills) and node: built-in modules (but for node:process, node:module, " +
      "node:vm, node:repl, node:inspector and node:worker_threads)",
  );
}

/**
 * The module specifier a string token of `source` holds, or null when it is not a plain one
 * (unterminated, or with an escape: `"node:\u0076m"` is `node:vm` to the parser).
 */
function specifierOf(source, tok) {
  const quote = StringPrototypeCharCodeAt(source, tok.s);
  if (tok.e - tok.s < 2 || StringPrototypeCharCodeAt(source, tok.e - 1) !== quote) return null;
  const text = StringPrototypeSlice(source, tok.s + 1, tok.e - 1);
  return StringPrototypeIndexOf(text, "\\") < 0 ? text : null;
}

/** Throws the refusal for the first static reference of `source` to a module not offered. */
function checkReferences(source, tokens) {
  const refs = findModuleReferences(tokens);
  for (let i = 0; i < refs.length; i++) {
    const tok = tokens[refs[i].spec];
    const text = specifierOf(source, tok);
    if (!importable(text)) throw importRefusal(text ?? StringPrototypeSlice(source, tok.s + 1, tok.e - 1));
  }
}

/** An identifier-like run of source text: identifier characters and Unicode escapes. */
const WORD_RUN_RE = /(?:[\p{ID_Continue}$\u200c\u200d]|\\u[0-9a-fA-F]{4}|\\u\{[0-9a-fA-F]+\})+/gu;

/**
 * `source` with its `import(`, `import.defer(` and `import.source(` calls turned into calls of
 * `__imp_` (same length: `import.meta` stays), and every `import` or `export` word that is not
 * one of its code tokens spelled with a `\x` escape: `{source, shifts, respelled}`, `shifts`
 * being where columns moved (`locationMapper`), `respelled` how many words were.
 */
function rewriteModuleWords(source, tokens) {
  /** offset -> end of the code tokens `import` / `export` */
  const keywords = new MapCtor();
  /** the edits, in source order: [start, end, replacement] */
  const edits = list();
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k];
    if (tok.t !== "id" || (tok.v !== "import" && tok.v !== "export")) continue;
    MapPrototypeSet(keywords, tok.s, tok.e);
    const next = tokens[k + 1];
    if (tok.v !== "import" || next === undefined || next.t !== "p") continue;
    const after = tokens[k + 2];
    const meta = next.v === "." && after !== undefined && after.t === "id" && after.v === "meta";
    if (next.v === "(" || (next.v === "." && !meta)) {
      let text = IMPORT_GLOBAL;
      while (text.length < tok.e - tok.s) text += " ";
      append(edits, [tok.s, tok.e, text]);
    }
  }
  const hidden = list();
  if (StringPrototypeIndexOf(source, "mport") >= 0 || StringPrototypeIndexOf(source, "xport") >= 0 ||
      StringPrototypeIndexOf(source, "\\u") >= 0) {
    WORD_RUN_RE.lastIndex = 0;
    for (let m = RegExpPrototypeExec(WORD_RUN_RE, source); m !== null; m = RegExpPrototypeExec(WORD_RUN_RE, source)) {
      const s = m.index;
      const e = s + m[0].length;
      const before = StringPrototypeCharCodeAt(source, s - 1);
      // After `\` no parser reads a keyword; after `#` it is a private name.
      if (before === 92 || before === 35) continue;
      const word = StringPrototypeIndexOf(m[0], "\\") < 0 ? m[0] : cookIdentifier(m[0]);
      if (word !== "import" && word !== "export") continue;
      if (MapPrototypeGet(keywords, s) === e) continue;
      const first = unicodeEscapeAt(source, s);
      append(hidden, [s, first === null ? s + 1 : first.end, word === "import" ? "\\x69" : "\\x65"]);
    }
  }
  const edited = applyEdits(source, mergeEdits(edits, hidden));
  edited.respelled = hidden.length;
  return edited;
}

/** Two lists of edits in source order, merged in source order. */
function mergeEdits(a, b) {
  if (b.length === 0) return a;
  const out = list();
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i][0] < b[j][0])) append(out, a[i++]);
    else append(out, b[j++]);
  }
  return out;
}

/**
 * `source` with `edits` ([start, end, text], in order, not overlapping) made: `{source, shifts}`,
 * a shift being `[offset in the result, length there, length in source]` for an edit that
 * changed the length.
 */
function applyEdits(source, edits) {
  const shifts = list();
  if (edits.length === 0) return { __proto__: null, source, shifts };
  let out = "";
  let from = 0;
  for (let i = 0; i < edits.length; i++) {
    const s = edits[i][0];
    const e = edits[i][1];
    const text = edits[i][2];
    out += StringPrototypeSlice(source, from, s);
    if (text.length !== e - s) append(shifts, [out.length, text.length, e - s]);
    out += text;
    from = e;
  }
  out += StringPrototypeSlice(source, from);
  return { __proto__: null, source: out, shifts };
}

/**
 * A `(line, col) -> [line, col]` mapping of locations in `source` (edited, see `applyEdits`)
 * back to the source before the edits, or null when no column moved.
 */
function locationMapper(source, shifts) {
  if (shifts.length === 0) return null;
  /** per shift: [line, column (1-based), length there, length before] */
  const at = list();
  let line = 1;
  let lineStart = 0;
  let pos = 0;
  for (let i = 0; i < shifts.length; i++) {
    const offset = shifts[i][0];
    for (; pos < offset; pos++) {
      if (StringPrototypeCharCodeAt(source, pos) === 10) {
        line++;
        lineStart = pos + 1;
      }
    }
    append(at, [line, offset - lineStart + 1, shifts[i][1], shifts[i][2]]);
  }
  return (l, c) => {
    let col = c;
    for (let i = 0; i < at.length; i++) {
      const sc = at[i][1];
      const now = at[i][2];
      if (at[i][0] !== l || c < sc) continue;
      if (c >= sc + now) col -= now - at[i][3];
      else col = sc - (c - col);
    }
    return [l, col];
  };
}

/**
 * A module source held to the import rules (see the opening comment): throws the refusal for a
 * reference to a module the sandbox does not offer; otherwise `{source, mapLocation,
 * respelled}`, the source to load, the mapping of its locations back (null when none moved)
 * and how many words read as text were respelled.
 */
function guardModule(source) {
  if (StringPrototypeIndexOf(source, "mport") < 0 && StringPrototypeIndexOf(source, "xport") < 0 &&
      StringPrototypeIndexOf(source, "\\u") < 0) {
    return { __proto__: null, source, mapLocation: null, respelled: 0 };
  }
  const { tokens } = tokenize(source);
  checkReferences(source, tokens);
  const edited = rewriteModuleWords(source, tokens);
  return {
    __proto__: null,
    source: edited.source,
    mapLocation: locationMapper(edited.source, edited.shifts),
    respelled: edited.respelled,
  };
}

/**
 * What a syntax error says besides when the guard respelled words: a respelled word that the
 * parser reads as code is an `import` or `export` the guard could not see.
 */
const RESPELLED_HINT = "(the sandbox spelled `import` or `export` as `\\x69mport` / `\\x65xport` where it read " +
  "them as text; if the parser reads one as code, write the code around it plainly: a regex right after `)`, `}` " +
  "or a keyword used as a name can be read as a division)";

/**
 * Source that code evaluates at run time (`eval`, the function constructors, string timers),
 * held to the same rules. Source the tokenizer cannot follow is refused rather than run.
 */
function guardScript(text) {
  const source = typeof text === "string" ? text : safeString(text);
  if (typeof source !== "string") throw new TypeError("the sandbox evaluates only strings");
  if (StringPrototypeIndexOf(source, "mport") < 0 && StringPrototypeIndexOf(source, "xport") < 0 &&
      StringPrototypeIndexOf(source, "\\u") < 0) {
    return source;
  }
  const { tokens, ok } = tokenize(source);
  if (!ok) throw new SyntaxError("the sandbox cannot check the imports of this source, so it does not run it");
  checkReferences(source, tokens);
  return rewriteModuleWords(source, tokens).source;
}

/**
 * `source` with the specifiers of its static module references that `re` matches (its group 1
 * being the name) replaced by `urlOf(name)`, a URL string.
 */
function linkReferences(source, re, urlOf) {
  const { tokens } = tokenize(source);
  const refs = findModuleReferences(tokens);
  const edits = list();
  for (let i = 0; i < refs.length; i++) {
    const tok = tokens[refs[i].spec];
    const text = specifierOf(source, tok);
    const m = text === null ? null : RegExpPrototypeExec(re, text);
    if (m !== null) append(edits, [tok.s, tok.e, JSONStringify(urlOf(m[1]))]);
  }
  return applyEdits(source, edits).source;
}

/** The names that `source`'s static references give to modules `re` matches (its group 1), once each. */
function referencedNames(source, re) {
  const names = list();
  const { tokens } = tokenize(source);
  const refs = findModuleReferences(tokens);
  for (let i = 0; i < refs.length; i++) {
    const text = specifierOf(source, tokens[refs[i].spec]);
    const m = text === null ? null : RegExpPrototypeExec(re, text);
    if (m !== null && !listHas(names, m[1])) append(names, m[1]);
  }
  return names;
}
