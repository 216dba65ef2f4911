// 31_typescript.js: TypeScript source preparation on top of the tokenizer: statement
// boundaries, the last expression (`findLastExpression`), the module variants with imports
// hoisted (`buildTypeScriptVariants`, `WRAPPER_PREFIX`) and `mayBePlainJavaScript`. Pure
// functions; relies on 30 and on `SetCtor`, `MapCtor` (00). Tested by tests/runner/.

/** Identifiers after which a line break does not end a statement. */
const NON_ENDING_WORDS = new SetCtor(
  words(
    "typeof instanceof in of new delete void case do else extends await yield as satisfies keyof const let var import export function class if for while with switch try catch finally throw implements async",
  ),
);
/** `)` of these does not end a statement (a body follows). */
const CONTROL_PAREN_OWNERS = new SetCtor(["if", "for", "while", "with", "catch", "switch"]);
/** Identifiers that continue the previous line's expression. */
const BINARY_WORDS = new SetCtor(["in", "instanceof", "as", "satisfies", "of"]);
/** A last statement starting with one of these is not an expression. */
const STATEMENT_WORDS = new SetCtor(
  words(
    "const let var if for while do switch try function class return throw import export break continue debugger with else catch finally case default yield enum interface",
  ),
);
/** Contextual keywords that start a declaration when followed by a name. */
const SOFT_DECLARATION_WORDS = new SetCtor(["type", "declare", "namespace", "module", "abstract", "using"]);
const EXPRESSION_START_PUNCT = new SetCtor(["(", "[", "!", "~", "+", "-", "++", "--", "<"]);

function endsStatement(p) {
  switch (p.t) {
    case "num":
    case "str":
    case "re":
      return true;
    case "tpl":
      return p.open !== true;
    case "id":
      return !NON_ENDING_WORDS.has(p.v);
    default:
      return p.v === "]" || p.v === "}" || p.v === "++" || p.v === "--" ||
        (p.v === ")" && !CONTROL_PAREN_OWNERS.has(p.owner ?? ""));
  }
}

function startsWithoutContinuing(t) {
  switch (t.t) {
    case "num":
    case "str":
      return true;
    case "id":
      return !BINARY_WORDS.has(t.v);
    case "p":
      return t.v === "!" || t.v === "~" || t.v === "++" || t.v === "--" || t.v === "{" || t.v === "@";
    default:
      return false;
  }
}

/** Whether a new top-level statement starts at `tokens[j]`. */
function isBoundary(tokens, j) {
  const tok = tokens[j];
  const prev = tokens[j - 1];
  if (tok.d !== 0 || prev.d !== 0) return false;
  if (prev.t === "p" && prev.v === ";") return true;
  if (!startsWithoutContinuing(tok)) return false;
  if (prev.t === "p" && prev.v === "}") return true;
  return tok.nl && endsStatement(prev);
}

/**
 * Locates the last top-level statement if it looks like an expression statement.
 * @returns {{s: number, e: number, after: number} | null} offsets: statement start/end, and where
 *   the rest of the source resumes (past a trailing `;`)
 */
function findLastExpression(src) {
  const { tokens, ok } = tokenize(src);
  if (!ok || tokens.length === 0) return null;
  let end = tokens.length - 1;
  let after = tokens[end].e;
  while (end >= 0 && tokens[end].t === "p" && tokens[end].v === ";") end--;
  if (end < 0) return null;
  if (end < tokens.length - 1) after = tokens[end + 1].e;
  else after = tokens[end].e;
  let start = 0;
  for (let j = end; j > 0; j--) {
    if (isBoundary(tokens, j)) {
      start = j;
      break;
    }
  }
  const first = tokens[start];
  const second = start + 1 <= end ? tokens[start + 1] : undefined;
  if (first.t === "id") {
    if (STATEMENT_WORDS.has(first.v)) return null;
    if (second !== undefined && second.t === "p" && second.v === ":") return null; // label
    if (
      SOFT_DECLARATION_WORDS.has(first.v) && second !== undefined && !second.nl &&
      (second.t === "id" || second.t === "str")
    ) return null;
    if (first.v === "async" && second?.t === "id" && second.v === "function") return null;
    if (first.v === "await" && second?.t === "id" && second.v === "using" && tokens[start + 2]?.t === "id") return null;
  } else if (first.t === "p") {
    if (!EXPRESSION_START_PUNCT.has(first.v)) return null;
  } else if (first.t === "tpl" && first.cont) {
    return null;
  }
  const last = tokens[end];
  if (last.t === "p" && last.v !== ")" && last.v !== "]" && last.v !== "}" && last.v !== "++" && last.v !== "--") {
    return null;
  }
  return { s: first.s, e: last.e, after };
}

/** The user module wrapper; user line 1 shares the module's line 1. */
const WRAPPER_PREFIX = "export default async function __user__() {";
const RETURN_OPEN = "return (";
const RETURN_CLOSE = ");";

/**
 * @typedef {object} ModuleVariant
 * @property {string} source TypeScript module source
 * @property {string} body the function body inside the module's wrapper
 * @property {(line: number, col: number) => [number, number]} mapLocation module -> user location
 */

/** 1-based line and column of `offset` in `src`. */
function lineColAt(src, offset) {
  let line = 1;
  let lineStart = 0;
  for (let k = src.indexOf("\n"); k >= 0 && k < offset; k = src.indexOf("\n", k + 1)) {
    line++;
    lineStart = k + 1;
  }
  return [line, offset - lineStart + 1];
}

/**
 * Builds the module variants to try, best first: with the last expression returned (if any),
 * then the plain wrapper; and whether the code may be plain JavaScript (`mayBePlainJavaScript`).
 * @param {string} code
 * @returns {{variants: ModuleVariant[], maybePlainJs: boolean}}
 */
function buildTypeScriptVariants(code) {
  const { tokens, ok } = tokenize(code);
  const imports = findImports(tokens);
  let body = code;
  /** @type {{text: string, line: number, col: number}[]} */
  const hoisted = [];
  for (const imp of imports) {
    const [line, col] = lineColAt(code, imp.s);
    hoisted.push({ text: code.slice(imp.s, imp.e), line, col });
    // Blank the declaration in place so every other line and column stays where it was.
    body = body.slice(0, imp.s) + body.slice(imp.s, imp.e).replace(/[^\n\r\u2028\u2029]/g, " ") + body.slice(imp.e);
  }
  if (body.startsWith("#!")) body = "//" + body.slice(2);

  const make = (bodyText, insertions) => {
    const bodyLines = bodyText.split("\n").length;
    let source = WRAPPER_PREFIX + bodyText + "\n}\n";
    /** module line -> [user line, column delta] for hoisted imports */
    const importLines = new MapCtor();
    let moduleLine = bodyLines + 2;
    for (const h of hoisted) {
      source += h.text + "\n";
      const count = h.text.split("\n").length;
      for (let k = 0; k < count; k++) importLines.set(moduleLine + k, [h.line + k, k === 0 ? h.col - 1 : 0]);
      moduleLine += count;
    }
    /** @type {(line: number, col: number) => [number, number]} */
    const mapLocation = (line, col) => {
      const imp = importLines.get(line);
      if (imp !== undefined) return [imp[0], col + imp[1]];
      if (line > bodyLines) return [bodyLines, 1];
      let c = col;
      for (const ins of insertions) {
        if (ins.line === line && c > ins.col) c = Math.max(ins.col, c - ins.len);
      }
      return [line, c];
    };
    return { source, body: bodyText, mapLocation };
  };

  /** @type {ModuleVariant[]} */
  const variants = [];
  const plainInsertions = [{ line: 1, col: 1, len: WRAPPER_PREFIX.length }];
  const lastExpr = findLastExpression(body);
  if (lastExpr !== null) {
    const text = body.slice(0, lastExpr.s) + RETURN_OPEN + body.slice(lastExpr.s, lastExpr.e) + RETURN_CLOSE +
      body.slice(lastExpr.after);
    const [sLine, sCol] = lineColAt(body, lastExpr.s);
    const [eLine, eCol] = lineColAt(body, lastExpr.e);
    const ins = [...plainInsertions];
    // Columns are module columns (the prefix shifts line 1); apply later insertions first.
    const prefixShift = (line) => (line === 1 ? WRAPPER_PREFIX.length : 0);
    const returnIns = { line: sLine, col: sCol + prefixShift(sLine), len: RETURN_OPEN.length };
    const closeIns = {
      line: eLine,
      col: eCol + prefixShift(eLine) + (eLine === sLine ? RETURN_OPEN.length : 0),
      len: RETURN_CLOSE.length,
    };
    variants.push(make(text, [closeIns, returnIns, ...ins]));
  }
  variants.push(make(body, plainInsertions));
  return { variants, maybePlainJs: ok && mayBePlainJavaScript(code, tokens) };
}

/**
 * Whether `code` may be run as plain JavaScript (see `compilePlainJs`): no `import` of any kind
 * (those need the module loader), no HTML-like comment (legacy syntax, left to the module
 * loader's reading of it), and no `>` right before `(` or a template: TypeScript reads
 * `f<T>(x)` as a call with a type argument, JavaScript as two comparisons. Anything else
 * JavaScript accepts, the TypeScript module path would run with the same meaning.
 */
function mayBePlainJavaScript(code, tokens) {
  if (code.includes("<!--") || code.includes("-->")) return false;
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k];
    if (tok.t === "id" && tok.v === "import") return false;
    if (tok.t === "p" && (tok.v === ">" || tok.v === ">>" || tok.v === ">>>")) {
      const next = tokens[k + 1];
      if (next !== undefined && ((next.t === "p" && next.v === "(") || (next.t === "tpl" && !next.cont))) return false;
    }
  }
  return true;
}
