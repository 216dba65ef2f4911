// 30_tokenizer.js: the lenient JS/TS tokenizer (`tokenize`, its tables and character classes,
// `words`), `findModuleReferences` (every static module reference: import and export-from
// declarations, wherever they stand) and `findImports` (the top-level import declarations, to
// hoist). Pure functions, written with 03's intrinsics (they also run after user code: `eval`,
// skills imported at run time); rely on `SetCtor` (00) and 03. Tested by tests/runner/.

// ---------------------------------------------------------------------------------------------
// TypeScript source preparation
// ---------------------------------------------------------------------------------------------

/**
 * @typedef {object} Token
 * @property {"id"|"num"|"str"|"tpl"|"re"|"p"} t kind (identifier/keyword, number, string,
 *   template piece, regex, punctuator)
 * @property {string} v text (punctuators and identifiers only)
 * @property {number} s start offset
 * @property {number} e end offset
 * @property {number} d bracket depth ((, [, {, ${) the token is at; closers get the outer depth
 * @property {boolean} nl a line break precedes the token
 * @property {boolean} [open] template piece ends with `${`
 * @property {boolean} [cont] template piece starts with `}`
 * @property {string} [owner] for `)`: the identifier before the matching `(`
 */

/** @param {string} text space-separated words */
function words(text) {
  return text.split(" ");
}

/** The words of `text` as a list (03), read at run time. */
function wordList(text) {
  const l = list();
  const w = words(text);
  for (let i = 0; i < w.length; i++) append(l, w[i]);
  return l;
}

const PUNCTUATORS = wordList(
  ">>>= ... === !== **= <<= >>= >>> &&= ||= ??= => == != <= >= && || ?? ?. ++ -- += -= *= %= &= |= ^= ** << >>",
);
/** Words after which a `/` starts a regular expression. */
const REGEX_AFTER_WORDS = new SetCtor(
  words("return typeof instanceof in of new delete void throw case do else yield await extends"),
);

function isLineBreak(c) {
  return c === 10 || c === 13 || c === 0x2028 || c === 0x2029;
}
function isIdentStart(c) {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 36 || c === 95 || c === 92 || c >= 128;
}
function isIdentPart(c) {
  return isIdentStart(c) || (c >= 48 && c <= 57);
}
/** JavaScript white space beyond ASCII (U+FEFF and the `Zs` characters). */
function isWideSpace(c) {
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x202f || c === 0x205f || c === 0x3000 ||
    c === 0xfeff;
}
function hexValue(c) {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * The Unicode escape of an identifier at `src[i]` (`\u0069`, `\u{69}`): `{cp, end}`, or null
 * when there is none.
 */
function unicodeEscapeAt(src, i) {
  if (StringPrototypeCharCodeAt(src, i) !== 92 || StringPrototypeCharCodeAt(src, i + 1) !== 117) return null;
  let cp = 0;
  if (StringPrototypeCharCodeAt(src, i + 2) === 123) {
    let j = i + 3;
    for (; j < src.length; j++) {
      const h = hexValue(StringPrototypeCharCodeAt(src, j));
      if (h < 0) break;
      cp = cp * 16 + h;
      if (cp > 0x10ffff) return null;
    }
    if (j === i + 3 || StringPrototypeCharCodeAt(src, j) !== 125) return null;
    return { __proto__: null, cp, end: j + 1 };
  }
  for (let j = i + 2; j < i + 6; j++) {
    const h = hexValue(StringPrototypeCharCodeAt(src, j));
    if (h < 0) return null;
    cp = cp * 16 + h;
  }
  return { __proto__: null, cp, end: i + 6 };
}

/**
 * An identifier as parsers read it, its Unicode escapes decoded: `\u0069mport` is `import`
 * (TypeScript's parser takes `\u0069mport(...)` for a call of `import`).
 */
function cookIdentifier(text) {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const esc = unicodeEscapeAt(text, i);
    if (esc !== null) {
      out += StringFromCodePoint(esc.cp);
      i = esc.end;
    } else {
      out += StringPrototypeSlice(text, i, i + 1);
      i++;
    }
  }
  return out;
}

/**
 * A lenient JS/TS tokenizer, good enough to find top-level statement boundaries and import
 * declarations. Returns `ok: false` when brackets do not balance. Identifiers' `v` has their
 * escapes decoded. Written with 03's intrinsics (it also runs after user code, for `eval` and
 * skills): tokens and the token list have no prototype.
 * @param {string} src
 * @returns {{tokens: Token[], ok: boolean}}
 */
function tokenize(src) {
  /** @type {Token[]} */
  const tokens = list();
  /** @type {string[]} */
  const stack = list();
  /** @type {(string|undefined)[]} */
  const parenOwners = list();
  const n = src.length;
  let i = 0;
  let nl = false;
  let ok = true;
  /** @type {Token | null} */
  let prev = null;

  const at = (j) => StringPrototypeCharCodeAt(src, j);
  const push = (t, v, s, e, d, hadNl, open, cont, owner) => {
    const tok = { __proto__: null, t, v, s, e, d, nl: hadNl, open, cont, owner };
    append(tokens, tok);
    prev = tok;
    nl = false;
  };
  const pushStack = (v) => append(stack, v);
  const popStack = () => {
    stack.length = stack.length - 1;
  };
  const top = () => (stack.length > 0 ? stack[stack.length - 1] : undefined);
  /** Scans template characters from `j`; returns the end offset and whether it stopped at `${`. */
  const scanTemplate = (j) => {
    while (j < n) {
      const c = at(j);
      if (c === 92) j += 2;
      else if (c === 96) return { __proto__: null, end: j + 1, open: false };
      else if (c === 36 && at(j + 1) === 123) return { __proto__: null, end: j + 2, open: true };
      else j++;
    }
    ok = false;
    return { __proto__: null, end: n, open: false };
  };
  const regexAllowed = () => {
    const p = prev;
    if (p === null) return true;
    switch (p.t) {
      case "num":
      case "str":
      case "re":
        return false;
      case "tpl":
        return p.open === true;
      case "id":
        return SetPrototypeHas(REGEX_AFTER_WORDS, p.v);
      default:
        return !(p.v === ")" || p.v === "]" || p.v === "}" || p.v === "++" || p.v === "--");
    }
  };

  while (i < n) {
    const c = at(i);
    if (isLineBreak(c)) {
      nl = true;
      i++;
      continue;
    }
    if (c === 32 || c === 9 || c === 11 || c === 12 || (c >= 128 && isWideSpace(c))) {
      i++;
      continue;
    }
    if (c === 47 && at(i + 1) === 47) {
      while (i < n && !isLineBreak(at(i))) i++;
      continue;
    }
    if (c === 47 && at(i + 1) === 42) {
      const end = StringPrototypeIndexOf(src, "*/", i + 2);
      const stop = end < 0 ? n : end + 2;
      for (let k = i; k < stop; k++) {
        if (isLineBreak(at(k))) {
          nl = true;
          break;
        }
      }
      if (end < 0) ok = false;
      i = stop;
      continue;
    }
    const start = i;
    const depth = stack.length;
    const hadNl = nl;
    if (c === 34 || c === 39) {
      let j = i + 1;
      while (j < n) {
        const cj = at(j);
        if (cj === 92) j += 2;
        else if (cj === c) {
          j++;
          break;
        } else if (cj === 10 || cj === 13) {
          ok = false;
          break;
        } else j++;
      }
      i = j;
      push("str", "", start, i, depth, hadNl);
      continue;
    }
    if (c === 96) {
      const r = scanTemplate(i + 1);
      i = r.end;
      push("tpl", "", start, i, depth, hadNl, r.open, false);
      if (r.open) pushStack("${");
      continue;
    }
    if (c === 125 && top() === "${") {
      popStack();
      const r = scanTemplate(i + 1);
      i = r.end;
      push("tpl", "", start, i, stack.length, hadNl, r.open, true);
      if (r.open) pushStack("${");
      continue;
    }
    if (c === 35 && i === 0 && at(1) === 33) {
      // #! line: treat as a comment
      while (i < n && !isLineBreak(at(i))) i++;
      continue;
    }
    if (isIdentStart(c) || c === 35) {
      let escaped = false;
      let j = i;
      while (j < n) {
        const cj = at(j);
        if (j > i && (cj >= 128 ? isWideSpace(cj) || isLineBreak(cj) : !isIdentPart(cj))) break;
        if (cj === 92) {
          escaped = true;
          const esc = unicodeEscapeAt(src, j);
          j = esc === null ? j + 1 : esc.end;
        } else j++;
      }
      i = j;
      const text = StringPrototypeSlice(src, start, i);
      push("id", escaped ? cookIdentifier(text) : text, start, i, depth, hadNl);
      continue;
    }
    if ((c >= 48 && c <= 57) || (c === 46 && at(i + 1) >= 48 && at(i + 1) <= 57)) {
      let j = i + 1;
      while (j < n) {
        const cj = at(j);
        if (isIdentPart(cj) || cj === 46) j++;
        else if ((cj === 43 || cj === 45) && (at(j - 1) | 32) === 101 && at(i + 1) !== 120) j++;
        else break;
      }
      i = j;
      push("num", "", start, i, depth, hadNl);
      continue;
    }
    if (c === 47 && regexAllowed()) {
      let j = i + 1;
      let inClass = false;
      let closed = false;
      while (j < n) {
        const cj = at(j);
        if (isLineBreak(cj)) break;
        if (cj === 92) j += 2;
        else if (cj === 91) {
          inClass = true;
          j++;
        } else if (cj === 93) {
          inClass = false;
          j++;
        } else if (cj === 47 && !inClass) {
          j++;
          closed = true;
          break;
        } else j++;
      }
      if (closed) {
        while (j < n && isIdentPart(at(j))) j++;
        i = j;
        push("re", "", start, i, depth, hadNl);
        continue;
      }
      // not a regex after all: fall through to punctuation
    }
    // punctuation
    if (c === 40 || c === 91 || c === 123) {
      const v = StringPrototypeSlice(src, i, i + 1);
      i++;
      if (c === 40) append(parenOwners, prev !== null && prev.t === "id" ? prev.v : undefined);
      pushStack(v);
      push("p", v, start, i, depth, hadNl);
      continue;
    }
    if (c === 41 || c === 93 || c === 125) {
      const v = StringPrototypeSlice(src, i, i + 1);
      const want = c === 41 ? "(" : c === 93 ? "[" : "{";
      i++;
      /** @type {string | undefined} */
      let owner;
      if (top() === want) {
        popStack();
        if (c === 41 && parenOwners.length > 0) {
          owner = parenOwners[parenOwners.length - 1];
          parenOwners.length = parenOwners.length - 1;
        }
      } else {
        ok = false;
      }
      push("p", v, start, i, stack.length, hadNl, undefined, undefined, owner);
      continue;
    }
    let v = StringPrototypeSlice(src, i, i + 1);
    for (let k = 0; k < PUNCTUATORS.length; k++) {
      if (StringPrototypeStartsWith(src, PUNCTUATORS[k], i)) {
        v = PUNCTUATORS[k];
        break;
      }
    }
    if (v === "?." && at(i + 2) >= 48 && at(i + 2) <= 57) v = "?";
    i += v.length;
    push("p", v, start, i, depth, hadNl);
  }
  if (stack.length > 0) ok = false;
  return { __proto__: null, tokens, ok };
}

/**
 * @typedef {object} ModuleReference
 * @property {"import"|"export"} keyword the declaration's first word
 * @property {number} spec index of the module specifier's string token
 * @property {number} s offset where the declaration starts (its keyword)
 * @property {number} e offset where it ends (past the specifier, its attributes and `;`)
 * @property {boolean} top whether it stands where a declaration may: at the top level, starting a
 *   statement (only those are hoisted, `findImports`)
 */

/** Whether `tokens[k]` starts a statement at the top level (as far as the tokenizer sees). */
function startsTopStatement(tokens, k) {
  const tok = tokens[k];
  if (tok.d !== 0) return false;
  const prev = k > 0 ? tokens[k - 1] : null;
  return prev === null || tok.nl || (prev.t === "p" && (prev.v === ";" || prev.v === "}"));
}

/** Whether `tok` is punctuator `v`. */
function isPunct(tok, v) {
  return tok !== undefined && tok.t === "p" && tok.v === v;
}

/**
 * The specifier of the import declaration whose `import` is `tokens[k]` (`import "m"`, and
 * `import <clause> from "m"` whatever the clause: default, namespace, named, `type`, `defer`,
 * `source`), or -1. The clause is scanned at the keyword's depth, through names, `*`, `,` and
 * braces only: anything else (`(`, `.`, `=`, `:`, `;`) is no declaration of a module.
 */
function importSpecifier(tokens, k) {
  const d = tokens[k].d;
  const next = tokens[k + 1];
  if (next === undefined) return -1;
  if (next.t === "str") return k + 1;
  for (let j = k + 1; j < tokens.length; j++) {
    const t = tokens[j];
    if (t.d < d) return -1;
    if (t.d > d) continue;
    if (t.t === "id") {
      if (t.v === "from" && tokens[j + 1]?.t === "str" && tokens[j + 1].d === d) return j + 1;
      continue;
    }
    if (t.t === "p" && (t.v === "*" || t.v === "," || t.v === "{" || t.v === "}")) continue;
    return -1;
  }
  return -1;
}

/**
 * The specifier of the export-from declaration whose `export` is `tokens[k]` (`export * from
 * "m"`, `export * as ns from "m"`, `export { a } from "m"`, `export type { T } from "m"`,
 * `export type * from "m"`), or -1 (an export of the module's own bindings).
 */
function exportSpecifier(tokens, k) {
  const d = tokens[k].d;
  let j = k + 1;
  if (tokens[j]?.t === "id" && tokens[j].v === "type" && (isPunct(tokens[j + 1], "*") || isPunct(tokens[j + 1], "{"))) j++;
  if (isPunct(tokens[j], "*")) {
    j++;
    if (tokens[j]?.t === "id" && tokens[j].v === "as") j += 2;
  } else if (isPunct(tokens[j], "{")) {
    j++;
    while (j < tokens.length && !(isPunct(tokens[j], "}") && tokens[j].d === d)) j++;
    j++;
  } else {
    return -1;
  }
  const from = tokens[j];
  const spec = tokens[j + 1];
  return from?.t === "id" && from.v === "from" && spec?.t === "str" ? j + 1 : -1;
}

/**
 * Every static module reference of a source: import declarations in all their forms (`import x
 * from "m"`, `import "m"`, `import type`, `import defer`, `import source`, with attributes) and
 * export-from declarations (`export * from "m"`, `export * as ns from "m"`, `export { a } from
 * "m"`, `export type ...`), wherever they stand: one the tokenizer places inside a block,
 * mid-statement or after a `.` is found too (`top` false), so that no specifier a parser might
 * load is missed. Dynamic `import(...)` calls are not references (see `rewriteModuleWords`, 32).
 * Returns a list (03).
 * @param {Token[]} tokens
 * @returns {ModuleReference[]}
 */
function findModuleReferences(tokens) {
  const found = list();
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k];
    if (tok.t !== "id" || (tok.v !== "import" && tok.v !== "export")) continue;
    const spec = tok.v === "import" ? importSpecifier(tokens, k) : exportSpecifier(tokens, k);
    if (spec < 0) continue;
    let last = spec;
    const w = tokens[last + 1];
    if (w !== undefined && w.t === "id" && (w.v === "with" || w.v === "assert") && !w.nl && isPunct(tokens[last + 2], "{")) {
      let m = last + 3;
      while (m < tokens.length && !(isPunct(tokens[m], "}") && tokens[m].d === tok.d)) m++;
      if (m < tokens.length) last = m;
    }
    if (isPunct(tokens[last + 1], ";")) last++;
    append(found, {
      __proto__: null,
      keyword: tok.v,
      spec,
      s: tok.s,
      e: tokens[last].e,
      top: startsTopStatement(tokens, k),
    });
  }
  return found;
}

/**
 * The top-level static import declarations (`import x from "m"`, `import "m"`, `import type
 * {T} from "m"`, with optional attributes and `;`): the ones hoisted out of the user function
 * (before any user code runs, so an ordinary array).
 * @returns {{s: number, e: number}[]}
 */
function findImports(tokens) {
  const refs = findModuleReferences(tokens);
  const out = [];
  for (let i = 0; i < refs.length; i++) {
    if (refs[i].keyword === "import" && refs[i].top) out.push({ s: refs[i].s, e: refs[i].e });
  }
  return out;
}
