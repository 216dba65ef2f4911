// 30_tokenizer.js: the lenient JS/TS tokenizer (`tokenize`, its tables and character classes,
// `words`) and `findImports` (top-level static import declarations). Pure functions; relies
// only on `SetCtor` (00). Tested by tests/runner/.

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

/** @param {string} list space-separated words */
function words(list) {
  return list.split(" ");
}

const PUNCTUATORS = words(
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
const SPACE_RE = /\s/;

/**
 * A lenient JS/TS tokenizer, good enough to find top-level statement boundaries and import
 * declarations. Returns `ok: false` when brackets do not balance.
 * @param {string} src
 * @returns {{tokens: Token[], ok: boolean}}
 */
function tokenize(src) {
  /** @type {Token[]} */
  const tokens = [];
  /** @type {string[]} */
  const stack = [];
  /** @type {(string|undefined)[]} */
  const parenOwners = [];
  const n = src.length;
  let i = 0;
  let nl = false;
  let ok = true;
  /** @type {Token | null} */
  let prev = null;

  const push = (tok) => {
    tokens.push(tok);
    prev = tok;
    nl = false;
  };
  /** Scans template characters from `j`; returns the end offset and whether it stopped at `${`. */
  const scanTemplate = (j) => {
    while (j < n) {
      const c = src.charCodeAt(j);
      if (c === 92) j += 2;
      else if (c === 96) return { end: j + 1, open: false };
      else if (c === 36 && src.charCodeAt(j + 1) === 123) return { end: j + 2, open: true };
      else j++;
    }
    ok = false;
    return { end: n, open: false };
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
        return REGEX_AFTER_WORDS.has(p.v);
      default:
        return !(p.v === ")" || p.v === "]" || p.v === "}" || p.v === "++" || p.v === "--");
    }
  };

  while (i < n) {
    const c = src.charCodeAt(i);
    if (isLineBreak(c)) {
      nl = true;
      i++;
      continue;
    }
    if (c === 32 || c === 9 || c === 11 || c === 12 || (c >= 128 && SPACE_RE.test(src[i]))) {
      i++;
      continue;
    }
    if (c === 47 && src.charCodeAt(i + 1) === 47) {
      while (i < n && !isLineBreak(src.charCodeAt(i))) i++;
      continue;
    }
    if (c === 47 && src.charCodeAt(i + 1) === 42) {
      const end = src.indexOf("*/", i + 2);
      const stop = end < 0 ? n : end + 2;
      for (let k = i; k < stop; k++) {
        if (isLineBreak(src.charCodeAt(k))) {
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
        const cj = src.charCodeAt(j);
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
      push({ t: "str", v: "", s: start, e: i, d: depth, nl: hadNl });
      continue;
    }
    if (c === 96) {
      const r = scanTemplate(i + 1);
      i = r.end;
      push({ t: "tpl", v: "", s: start, e: i, d: depth, nl: hadNl, open: r.open, cont: false });
      if (r.open) stack.push("${");
      continue;
    }
    if (c === 125 && stack.length > 0 && stack[stack.length - 1] === "${") {
      stack.pop();
      const r = scanTemplate(i + 1);
      i = r.end;
      push({ t: "tpl", v: "", s: start, e: i, d: stack.length, nl: hadNl, open: r.open, cont: true });
      if (r.open) stack.push("${");
      continue;
    }
    if (c === 35 && i === 0 && src.charCodeAt(1) === 33) {
      // #! line: treat as a comment
      while (i < n && !isLineBreak(src.charCodeAt(i))) i++;
      continue;
    }
    if (isIdentStart(c) || c === 35) {
      let j = i + 1;
      while (j < n) {
        const cj = src.charCodeAt(j);
        if (cj >= 128 && SPACE_RE.test(src[j])) break;
        if (!isIdentPart(cj)) break;
        j++;
      }
      i = j;
      push({ t: "id", v: src.slice(start, i), s: start, e: i, d: depth, nl: hadNl });
      continue;
    }
    if ((c >= 48 && c <= 57) || (c === 46 && src.charCodeAt(i + 1) >= 48 && src.charCodeAt(i + 1) <= 57)) {
      let j = i + 1;
      while (j < n) {
        const cj = src.charCodeAt(j);
        if (isIdentPart(cj) || cj === 46) j++;
        else if ((cj === 43 || cj === 45) && (src.charCodeAt(j - 1) | 32) === 101 && src.charCodeAt(i + 1) !== 120) j++;
        else break;
      }
      i = j;
      push({ t: "num", v: "", s: start, e: i, d: depth, nl: hadNl });
      continue;
    }
    if (c === 47 && regexAllowed()) {
      let j = i + 1;
      let inClass = false;
      let closed = false;
      while (j < n) {
        const cj = src.charCodeAt(j);
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
        while (j < n && isIdentPart(src.charCodeAt(j))) j++;
        i = j;
        push({ t: "re", v: "", s: start, e: i, d: depth, nl: hadNl });
        continue;
      }
      // not a regex after all: fall through to punctuation
    }
    // punctuation
    if (c === 40 || c === 91 || c === 123) {
      const v = src[i];
      i++;
      if (c === 40) parenOwners.push(prev !== null && prev.t === "id" ? prev.v : undefined);
      stack.push(v);
      push({ t: "p", v, s: start, e: i, d: depth, nl: hadNl });
      continue;
    }
    if (c === 41 || c === 93 || c === 125) {
      const v = src[i];
      const want = c === 41 ? "(" : c === 93 ? "[" : "{";
      i++;
      /** @type {string | undefined} */
      let owner;
      if (stack.length > 0 && stack[stack.length - 1] === want) {
        stack.pop();
        if (c === 41) owner = parenOwners.pop();
      } else {
        ok = false;
      }
      push({ t: "p", v, s: start, e: i, d: stack.length, nl: hadNl, owner });
      continue;
    }
    let v = src[i];
    for (const p of PUNCTUATORS) {
      if (src.startsWith(p, i)) {
        v = p;
        break;
      }
    }
    if (v === "?." && src.charCodeAt(i + 2) >= 48 && src.charCodeAt(i + 2) <= 57) v = "?";
    i += v.length;
    push({ t: "p", v, s: start, e: i, d: depth, nl: hadNl });
  }
  if (stack.length > 0) ok = false;
  return { tokens, ok };
}

/**
 * Finds top-level static import declarations (`import x from "m"`, `import "m"`,
 * `import type {T} from "m"`, with optional `with {...}` and `;`).
 * @returns {{s: number, e: number}[]}
 */
function findImports(tokens) {
  const found = [];
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k];
    if (tok.t !== "id" || tok.v !== "import" || tok.d !== 0) continue;
    const prev = k > 0 ? tokens[k - 1] : null;
    if (prev !== null && !tok.nl && !(prev.t === "p" && (prev.v === ";" || prev.v === "}"))) continue;
    const next = tokens[k + 1];
    if (next === undefined || (next.t === "p" && (next.v === "(" || next.v === "."))) continue;
    // Find the module specifier: right after `import` / `import type`, or after `from`.
    let j = k + 1;
    let spec = -1;
    if (tokens[j]?.t === "str") spec = j;
    else {
      for (; j < tokens.length; j++) {
        const t = tokens[j];
        if (t.d !== 0) continue;
        if (t.t === "p" && (t.v === ";" || t.v === "=")) break;
        if (t.t === "id" && t.v === "from" && tokens[j + 1]?.t === "str") {
          spec = j + 1;
          break;
        }
      }
    }
    if (spec < 0) continue;
    let last = spec;
    const w = tokens[last + 1];
    if (
      w !== undefined && w.t === "id" && (w.v === "with" || w.v === "assert") && !w.nl && tokens[last + 2]?.v === "{"
    ) {
      let m = last + 3;
      while (m < tokens.length && !(tokens[m].t === "p" && tokens[m].v === "}" && tokens[m].d === 0)) m++;
      if (m < tokens.length) last = m;
    }
    if (tokens[last + 1]?.t === "p" && tokens[last + 1].v === ";") last++;
    found.push({ s: tok.s, e: tokens[last].e });
    k = last;
  }
  return found;
}
