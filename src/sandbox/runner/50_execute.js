// 50_execute.js: execution state and its end (`finishOk`, `finishError`, asynchronous
// failures), the runtimes table (`RUNTIMES`), and running TypeScript: the plain-JavaScript
// function path and the module path (modules made unique to this isolate, imports held to what
// the sandbox offers: `importForUser`). Relies on 00-40; calls `linkWrappers` (55),
// `linkSkills` and `skillImport` (56) and the Python runtime (62).

// ---------------------------------------------------------------------------------------------
// Execution
// ---------------------------------------------------------------------------------------------

let executeReceived = false;
let executing = false;
let finished = false;
/** @type {{error: unknown} | null} */
let asyncFailure = null;
/** @type {((e: unknown) => void) | null} */
let rejectAsyncFailure = null;

/** Sentinel thrown by the replaced `Deno.exit` / `close` to unwind user code. */
class ExitSignal {
  constructor(code) {
    this.code = code;
  }
}

function finishOk(value) {
  if (finished) return;
  flushOutputTail();
  let json;
  try {
    json = valueToJson(value);
  } catch (e) {
    finishError(e);
    return;
  }
  if (json !== undefined) {
    const line = `{"v":${PROTOCOL_VERSION},"type":"done","ok":true,"value":${json}}`;
    const size = utf8Length(line) + 1;
    if (size > MAX_WORKER_LINE) {
      finishError(
        new RangeError(
          `the return value is too large to send (${size} bytes of JSON; the limit is ${MAX_WORKER_LINE})`,
        ),
      );
      return;
    }
    finished = true;
    sendLine(line);
  } else {
    finished = true;
    send({ type: "done", ok: true });
  }
  afterDone();
}

function finishError(e) {
  if (finished) return;
  flushOutputTail();
  let error;
  if (e instanceof ExitSignal) {
    if (e.code === 0) {
      finishOk(undefined);
      return;
    }
    error = { name: "Error", message: `the code called Deno.exit(${e.code})` };
  } else {
    error = describeError(e, currentModuleMapper);
  }
  finished = true;
  // Keep the line under the host's cap even if JSON escaping grows the text.
  const maxText = 256 * 1024;
  if (utf8Length(error.message) > maxText) error.message = truncateUtf8(error.message, maxText) + "...";
  if (error.stack !== undefined && utf8Length(error.stack) > maxText) {
    error.stack = truncateUtf8(error.stack, maxText) + "...";
  }
  send({ type: "done", ok: false, error });
  afterDone();
}

function afterDone() {
  executing = false;
  stopReading();
  pendingCalls.clear();
}

/** Errors that escape user code asynchronously (timers, unhandled rejections). */
function onAsyncError(err) {
  if (finished) return;
  if (!executing) {
    diag("uncaught error outside an execution: " + safeString(err?.stack ?? err));
    return;
  }
  if (asyncFailure === null) {
    // Pyodide reports its fatal errors from its event-loop callbacks too.
    try {
      if (pyodide !== null && err?.pyodide_fatal_error === true) err = pyCrash(err);
    } catch {
      // keep err
    }
    asyncFailure = { error: err };
    rejectAsyncFailure?.(err);
  }
}

/**
 * @typedef {object} ExecContext
 * @property {string} code
 * @property {Record<string, unknown>} message the whole execute message
 */

/**
 * Language runtimes. `run` returns the user program's value or throws its error; `prepare` runs
 * before `ready` when the launch arguments name the runtime.
 * @type {Record<string, {prepare?: () => Promise<void>, run: (ctx: ExecContext) => Promise<unknown>}>}
 */
const RUNTIMES = {
  typescript: { run: runTypeScript },
  python: { prepare: preparePython, run: runPython },
};

/** @param {ExecContext} ctx */
async function runTypeScript(ctx) {
  const { variants, maybePlainJs } = buildTypeScriptVariants(ctx.code);
  const plain = maybePlainJs ? compilePlainJs(variants[0]) : null;
  if (plain !== null) return await ReflectApply(plain, undefined, []);
  let mod;
  let lastError;
  for (const variant of variants) {
    const linked = await linkSkills(linkWrappers(guardImports(variant.source)));
    const url = "data:application/typescript;base64," + base64Utf8(uniqueModule(linked));
    currentModuleMapper = variant.mapLocation;
    try {
      // Loading compiles and links only: user code runs when `default` is called below, so a
      // variant that fails to load has not run anything.
      mod = await import(url);
      break;
    } catch (e) {
      lastError = e;
    }
  }
  if (mod === undefined) throw lastError;
  return await ReflectApply(mod.default, undefined, []);
}

/**
 * Deno's module loader keeps what it learns of a module (its analysis, its text, keyed by the
 * module's URL, so by its text) for the whole process, which the isolates of later executions
 * share: loading a module seen before is measurably faster, and what is loaded stays in the
 * process's memory. So that no execution can learn whether another loaded some text, nor fill
 * the process for the ones after it, every module this runner loads is made unique to the
 * isolate (the nonce comment), and the code may import only what the sandbox offers
 * (`importForUser`), however it builds the `import()`: its own source, and any source it
 * evaluates at run time (`guardSource`), has its `import(` calls turned into `__imp_(` calls.
 */
function uniqueModule(source) {
  return source + "\n// isolate " + launch.nonce + "\n";
}

/** The global that user code's dynamic `import(...)` calls are rewritten to (same length). */
const IMPORT_GLOBAL = "__imp_";
const IMPORTABLE_WRAPPER_RE = /^wrappers\/([A-Za-z_][A-Za-z0-9_]*)(?:\.ts)?$/;
/**
 * The `node:` built-ins the sandbox does not offer: they start isolates of their own
 * (`worker_threads`) or compile code from strings past the guard (`vm`, `repl`, `inspector`,
 * `module`'s `require`, `process.getBuiltinModule`).
 */
const REFUSED_BUILTINS = new SetCtor(["worker_threads", "vm", "repl", "inspector", "module", "process"]);

/** Whether the sandbox offers module `specifier` to user code. */
function importable(specifier) {
  if (specifier.startsWith("node:")) return !REFUSED_BUILTINS.has(specifier.slice(5).split("/")[0]);
  return IMPORTABLE_WRAPPER_RE.test(specifier) || IMPORTABLE_SKILL_RE.test(specifier);
}

/** The error for an import the sandbox does not offer. */
function importRefusal(specifier) {
  return new TypeError(
    `import of ${JSONStringify(truncateUtf8(safeString(specifier), 200))} refused: code in the sandbox may import ` +
      "only wrappers/<name>.ts (the typed wrappers), skills/<name>.ts (saved skills) and node: built-in modules (but for node:process, node:module, " +
      "node:vm, node:repl, node:inspector and node:worker_threads)",
  );
}

/** What `import(specifier)` does for user code: an offered module, or the refusal. */
function importForUser(specifier, options) {
  try {
    const s = typeof specifier === "string" ? specifier : safeString(specifier);
    if (!importable(s)) throw importRefusal(s);
    if (s.startsWith("node:")) return options === undefined ? import(s) : import(s, options);
    const skill = IMPORTABLE_SKILL_RE.exec(s);
    if (skill !== null) return skillImport(skill[1]);
    return import(wrapperUrl(IMPORTABLE_WRAPPER_RE.exec(s)[1]));
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `source` with its `import(` calls turned into `__imp_(` calls (same length: no location moves). */
function rewriteImportCalls(source, tokens) {
  let out = source;
  for (let k = tokens.length - 2; k >= 0; k--) {
    const tok = tokens[k];
    const next = tokens[k + 1];
    if (tok.t === "id" && tok.v === "import" && next.t === "p" && next.v === "(") {
      out = out.slice(0, tok.s) + IMPORT_GLOBAL + out.slice(tok.e);
    }
  }
  return out;
}

/**
 * The module source with its dynamic `import(` calls turned into `__imp_(` calls; throws the
 * refusal for a static import of a module the sandbox does not offer.
 */
function guardImports(source) {
  if (!source.includes("import")) return source;
  const { tokens } = tokenize(source);
  for (const imp of findImports(tokens)) {
    const spec = tokens.find((t) => t.s >= imp.s && t.e <= imp.e && t.t === "str");
    const text = spec === undefined ? "" : source.slice(spec.s + 1, spec.e - 1);
    if (!importable(text)) throw importRefusal(text);
  }
  return rewriteImportCalls(source, tokens);
}

/**
 * Source that code evaluates at run time (`eval`, the function constructors, string timers),
 * guarded like the code itself: its `import(` calls go through `importForUser`. Source the
 * tokenizer cannot follow is refused rather than run unguarded.
 */
function guardSource(text) {
  const source = typeof text === "string" ? text : safeString(text);
  if (!source.includes("import")) return source;
  const { tokens, ok } = tokenize(source);
  if (!ok) throw new SyntaxError("the sandbox cannot check the imports of this source, so it does not run it");
  return rewriteImportCalls(source, tokens);
}

const AsyncFunctionCtor = (async function () {}).constructor;
/** Same length as the module wrapper's, so user columns on line 1 map the same way. */
const PLAIN_JS_PREFIX = '"use strict";'.padEnd(WRAPPER_PREFIX.length, " ");
/** V8 compiles the body as `(async function anonymous(\n) {\n<body>\n})`: body line 1 is line 3. */
const PLAIN_JS_LINE_SHIFT = 2;

/**
 * The fast path for code that is plain JavaScript (most code models write): the best variant
 * compiled as an async function, strict like a module. It skips Deno's module loader, which
 * parses the source as TypeScript, transpiles it and writes both to its caches (about 1 ms of a
 * 2 ms execution). Returns null when V8 does not accept the code (TypeScript syntax, or an
 * error the module path will report precisely); nothing has run then.
 * @param {ModuleVariant} variant
 */
function compilePlainJs(variant) {
  let fn;
  try {
    fn = new AsyncFunctionCtor(PLAIN_JS_PREFIX + variant.body + "\n//# sourceURL=" + PLAIN_JS_NAME);
  } catch {
    return null;
  }
  currentModuleMapper = (line, col) => variant.mapLocation(line - PLAIN_JS_LINE_SHIFT, col);
  return fn;
}
