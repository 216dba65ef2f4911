// 50_execute.js: execution state and its end (`finishOk`, `finishError`, asynchronous
// failures), the runtimes table (`RUNTIMES`), and running TypeScript: the plain-JavaScript
// function path and the module path (modules made unique to this isolate, held to the import
// rules of 32; `importForUser`, what `import(...)` does for user code). Relies on 00-40; calls
// `linkWrappers`, `wrapperUrl` (55), `linkSkills` and `skillImport` (56) and the Python runtime
// (62).

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
  notePendingCalls();
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

/**
 * Host calls the code sent and never awaited (a forgotten `await` on `callMCPTool`): said on
 * stderr, since the code's answer, printed before the calls answered, may be missing what
 * they would have given.
 */
function notePendingCalls() {
  const pending = pendingCalls.size;
  if (pending === 0) return;
  const calls = pending === 1 ? "1 call was" : `${pending} calls were`;
  printLine(
    "stderr",
    `note: ${calls} still waiting for an answer when the code ended (callMCPTool, searchTools, ...): ` +
      "add `await` before each call whose answer the code uses",
  );
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
  // A lane serves the next execution once reset and checked (51, 63), or asks to be retired.
  const recycle = laneEnv !== null ? recycleLane : launch.mode === "typescript" ? recycleTypeScriptLane : null;
  if (recycle !== null) {
    recycle().then(
      (why) => send(why === null ? { type: "ready" } : { type: "retire", why }),
      (e) => send({ type: "retire", why: "the reset failed: " + oneLine(e) }),
    );
  }
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
      if (pyodide !== null && err?.pyodide_fatal_error === true) {
        pyCrashed = true;
        err = pyCrash(err);
      }
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
 * Language runtimes. `run` returns the user program's value in a box, `{value}` (a value of a
 * context is never awaited by the lane, see 51), or throws its error; `prepare` runs before
 * `ready` when the launch arguments name the runtime.
 * @type {Record<string, {prepare?: () => Promise<void>, run: (ctx: ExecContext) => Promise<{value: unknown}>}>}
 */
const RUNTIMES = {
  typescript: { prepare: prepareContexts, run: runTypeScript },
  python: { prepare: preparePython, run: runPython },
};

/** @param {ExecContext} ctx */
async function runTypeScript(ctx) {
  // In a fresh context when it can run there (51): the code, or the JavaScript the host made of
  // it (`js`: its types and import declarations blanked out, every other character where it
  // was; `imports`: those declarations, bound from modules of the context, 52).
  const js = typeof ctx.message.js === "string" ? ctx.message.js : ctx.code;
  if (contextEligible(js)) {
    const plainJs = buildTypeScriptVariants(js);
    const imports = ctx.message.imports;
    const importPlan = !plainJs.maybePlainJs || imports === undefined ? null : await contextImportPlan(imports, js);
    if (plainJs.maybePlainJs && (imports === undefined || importPlan !== null)) {
      const inContext = runInFreshContext(plainJs.variants[0], plainJs.variants[0].mapLocation, importPlan);
      if (inContext !== null) return await inContext;
    }
  }
  const guarded = guardModule(ctx.code);
  const { variants, maybePlainJs } = buildTypeScriptVariants(guarded.source);
  const toUser = (variant) => (line, col) => {
    const at = variant.mapLocation(line, col);
    return guarded.mapLocation === null ? at : guarded.mapLocation(at[0], at[1]);
  };
  // From here on, the code runs in this isolate's own realm (a lane then retires, see 51).
  laneRealmUsed = true;
  const plain = maybePlainJs ? compilePlainJs(variants[0], toUser(variants[0])) : null;
  if (plain !== null) return { __proto__: null, value: await ReflectApply(plain, undefined, []) };
  let mod;
  let lastError;
  for (const variant of variants) {
    const linked = await linkSkills(linkWrappers(variant.source));
    const url = "data:application/typescript;base64," + base64Utf8(uniqueModule(linked));
    currentModuleMapper = toUser(variant);
    try {
      // Loading compiles and links only: user code runs when `default` is called below, so a
      // variant that fails to load has not run anything.
      mod = await import(url);
      break;
    } catch (e) {
      lastError = e;
    }
  }
  if (mod === undefined) {
    // A module that does not load has a syntax or link error: the respelling may be why.
    if (guarded.respelled > 0 && typeof lastError?.message === "string") {
      try {
        lastError.message += " " + RESPELLED_HINT;
        if (typeof lastError.stack === "string") lastError.stack += "\n" + RESPELLED_HINT;
      } catch {
        // keep the error as it is
      }
    }
    throw lastError;
  }
  return { __proto__: null, value: await ReflectApply(mod.default, undefined, []) };
}

/**
 * Deno's module loader keeps what it learns of a module (its analysis, its text, keyed by the
 * module's URL, so by its text) for the whole process, which the isolates of later executions
 * share: loading a module seen before is measurably faster, and what is loaded stays in the
 * process's memory. So that no execution can learn whether another loaded some text, nor fill
 * the process for the ones after it, every module this runner loads is made unique to the
 * isolate (the nonce comment), and the code may import only what the sandbox offers
 * (`importForUser`), however it builds the `import()`: every source is held to the import rules
 * before it is loaded or evaluated (`guardModule`, `guardScript`, 32).
 */
function uniqueModule(source) {
  return source + "\n// isolate " + launch.nonce + "\n";
}

/**
 * What `import(specifier)` does for user code (the `__imp_` its calls are rewritten to): an
 * offered module, or the refusal. Written with 03's intrinsics: it runs after user code.
 */
function importForUser(specifier, options) {
  try {
    const s = typeof specifier === "string" ? specifier : safeString(specifier);
    if (!importable(s)) throw importRefusal(s);
    if (StringPrototypeStartsWith(s, "node:")) return options === undefined ? import(s) : import(s, options);
    const skill = RegExpPrototypeExec(IMPORTABLE_SKILL_RE, s);
    if (skill !== null) return skillImport(skill[1]);
    return import(wrapperUrl(RegExpPrototypeExec(IMPORTABLE_WRAPPER_RE, s)[1]));
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `import.defer(specifier)` (rewritten to `__imp_.defer(...)`): the module, loaded at once. */
importForUser.defer = function defer(specifier, options) {
  return importForUser(specifier, options);
};
/** `import.source(specifier)`: source-phase imports (WebAssembly modules) are not offered. */
importForUser.source = function source(specifier) {
  try {
    const s = typeof specifier === "string" ? specifier : safeString(specifier);
    throw importable(s) ? new TypeError(`import.source(${JSONStringify(s)}) refused: source-phase imports are not offered in the sandbox`) : importRefusal(s);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
};
ObjectFreeze(importForUser);

const AsyncFunctionCtor = (async function () {}).constructor;
/** Same length as the module wrapper's, so user columns on line 1 map the same way. */
const PLAIN_JS_PREFIX = '"use strict";'.padEnd(WRAPPER_PREFIX.length, " ");
/** V8 compiles the body as `(async function anonymous(\n) {\n<body>\n})`: body line 1 is line 3. */
const PLAIN_JS_LINE_SHIFT = 2;

/**
 * The fast path for code that is plain JavaScript (most code models write): the best variant
 * compiled as an async function, strict like a module (`mapLocation` maps its locations back to
 * the user's code). It skips Deno's module loader, which
 * parses the source as TypeScript, transpiles it and writes both to its caches (about 1 ms of a
 * 2 ms execution). Returns null when V8 does not accept the code (TypeScript syntax, or an
 * error the module path will report precisely); nothing has run then.
 * @param {ModuleVariant} variant
 */
function compilePlainJs(variant, mapLocation) {
  let fn;
  try {
    fn = new AsyncFunctionCtor(PLAIN_JS_PREFIX + variant.body + "\n//# sourceURL=" + PLAIN_JS_NAME);
  } catch {
    return null;
  }
  currentModuleMapper = (line, col) => mapLocation(line - PLAIN_JS_LINE_SHIFT, col);
  return fn;
}
