// 51_contexts.js: TypeScript lanes: code runs in a fresh V8 context (`node:vm`) made for its
// execution in a long-lived isolate, the lane, which serves the session's executions one after
// another. What is fresh per execution and what crosses between the context and the lane:
//
// - The context has its own global object and its own builtins (`Object`, `Function`, `Promise`,
//   `Error`, ...). The sandbox's globals in it (`console`, timers, `callMCPTool`, `workspace`,
//   ...) are made inside it by `contextShim`, a script compiled once and run in each context
//   before the code: they are functions of the context's realm.
// - Nothing but data crosses from the lane into the context. The shim calls the lane's functions
//   through one function (`invoke`) that answers with a string only: a value as JSON (bytes as
//   base64), an error as its name, message and stack, or "pending", the answer then coming as a
//   string to a callback of the shim's. The shim builds the values, errors and promises user code
//   sees from those strings with its own intrinsics, taken before the code ran. The lane never
//   awaits, `then`s or resolves a promise with a value of the context (a value is boxed first),
//   never calls code of the context but the shim's and the callbacks the code hands to timers
//   (with `this` undefined), and formats the context's values without custom inspect hooks (which
//   would be handed the lane's functions). Errors of the lane thrown while it serves a call are
//   caught by the shim, which throws its own.
// - Values go the other way (the lane reads, formats and serialises what code passes), as they
//   did when code ran in the lane's realm: getters and Proxy traps run with the context's objects
//   only. A context cannot load a module by itself (no dynamic import callback, which code
//   compiled in it inherits, whatever compiles it), so it needs no import guard; the modules
//   code imports are made for it by the lane (52).
//
// Code runs in a context when it can run there as it would in an isolate of its own: plain
// JavaScript (the plain-JavaScript path of 50; its import declarations, blanked by the host, are
// bound by 52) without `import(...)`, naming none of the isolate's globals a context lacks
// (`fetch`, `URL`, `TextEncoder`, `Deno`, ... : `laneOnlyGlobals`) nor `eval` or `Function`
// (source they compile may import what a context cannot load), and using no custom inspect hook
// nor `Error.prepareStackTrace` (`LANE_HOOKS_RE`). Other code runs in the lane's own realm
// exactly as before, and the lane is
// retired after it (the next execution takes a spare lane). After an execution in a context, the
// lane refuses every later call from that context (`contextEpoch`), clears its timers, waits one
// macrotask turn (a context that keeps the microtask queue busy never gets there: the supervisor
// ends a lane that does not say `ready` in time) and drops the context.
//
// Relies on 00-50; `LANE_MAX_EXECUTIONS`, `laneExecutions` (63) and `resetExecutionState` (63),
// `macrotaskTurn` and `userTimers` (70), `makeConsole` (10), the host-call globals (20, 21).

/** node:vm once this isolate is a TypeScript lane (`loadContexts`), else null. */
let vm = null;
/** `contextShim` compiled, run once in each fresh context. */
let shimScript = null;
/** Globals the lane's realm gives code that a context does not: code naming one runs in the lane's realm. */
let laneOnlyGlobals = new SetCtor();
/** Whether code has run in this isolate's own realm (the lane then retires). */
let laneRealmUsed = false;
/** Counts the contexts made: calls from a context whose execution has ended are refused. */
let contextEpoch = 0;
/** The shim's controls of the running execution's context, while it runs (dropped at its end). */
let currentContext = null;
/** Whether the formatter may call custom inspect hooks (not on values of a context). */
let inspectCustom = true;

const PromisePrototypeThen = uncurryThis(Promise.prototype.then);

/** The shim's script name in stack traces (40 drops its frames). */
const CONTEXT_SHIM_NAME = "code-executor-context.js";
/**
 * Names of lane globals that code commonly uses for its own variables and properties; reading
 * them as globals is meaningless in any case (the worker's name and location, `constructor`).
 */
const CONTEXT_IGNORED_NAMES = new SetCtor(["name", "location", "constructor"]);
/**
 * Words that name hooks a context does not offer: custom inspect hooks (which would be handed
 * the lane's functions) and `Error.prepareStackTrace` (which would be handed call sites of the
 * lane's realm); code that names them runs in the lane's realm, where they work.
 */
const LANE_HOOKS_RE = /customInspect|inspect\.custom|prepareStackTrace/;

/**
 * Loads node:vm (before the environment is installed: globals that loading it adds to this realm
 * are removed again, so code running in the lane's realm sees what it saw before).
 */
async function loadContexts() {
  const before = new SetCtor(Object.getOwnPropertyNames(globalThis));
  try {
    vm = await import("node:vm");
  } catch (e) {
    diag("node:vm could not be loaded, every execution gets an isolate of its own: " + oneLine(e));
    vm = null;
  }
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (!before.has(name)) tryDelete(globalThis, name);
  }
}

/**
 * Compiles the shim and learns which globals a context lacks (after `installEnvironment`: the
 * lane's globals are the ones code running in the lane's realm would see).
 */
function prepareContexts() {
  if (vm === null) return;
  try {
    shimScript = new vm.Script("(" + contextShim.toString() + ")", { filename: CONTEXT_SHIM_NAME });
    const probe = newContext();
    const surface = contextSurface();
    ReflectApply(shimScript.runInContext, shimScript, [probe])(
      () => "u",
      JSONStringify(surface.paths),
      JSONStringify(functionNames(surface.fns)),
    );
    const inContext = new SetCtor(vm.runInContext("Object.getOwnPropertyNames(globalThis)", probe));
    const names = new SetCtor();
    for (let o = globalThis; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
      for (const name of Object.getOwnPropertyNames(o)) {
        if (!inContext.has(name) && !CONTEXT_IGNORED_NAMES.has(name)) names.add(name);
      }
    }
    // Code compiled from strings may `import()` what the sandbox offers: a context cannot load
    // modules at all, so code that names the compilers runs in the lane's realm, where they are
    // guarded (90) and such imports work.
    names.add("eval");
    names.add("Function");
    laneOnlyGlobals = names;
  } catch (e) {
    diag("contexts unavailable, every execution gets an isolate of its own: " + oneLine(e));
    shimScript = null;
  }
}

/** Whether `code` runs in a context as it would in an isolate of its own (see the opening comment). */
function contextEligible(code) {
  return shimScript !== null && sourceFitsContext(code);
}

/**
 * Whether a source (the code, or a module it imports, 52) runs in a context as in the lane's
 * realm: no hook a context lacks, nothing the import guard would edit, none of the lane's globals.
 */
function sourceFitsContext(code) {
  if (RegExpPrototypeExec(LANE_HOOKS_RE, code) !== null) return false;
  const { tokens, ok } = tokenize(code);
  if (!ok) return false;
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k];
    if (tok.t !== "id") continue;
    if (tok.v === "import") {
      // `import(...)` (and `import.defer(...)`) load what the sandbox offers in the lane's realm;
      // in a context they are refused (it has no dynamic import callback: whatever text compiles
      // them, a context cannot load a module), so code using them runs in the lane's realm.
      const next = tokens[k + 1];
      const meta = tokens[k + 2]?.t === "id" && tokens[k + 2].v === "meta";
      if (next !== undefined && next.t === "p" && (next.v === "(" || (next.v === "." && !meta))) return false;
      continue;
    }
    if (!laneOnlyGlobals.has(tok.v)) continue;
    const prev = tokens[k - 1];
    if (prev !== undefined && prev.t === "p" && (prev.v === "." || prev.v === "?.")) continue;
    return false;
  }
  return true;
}

/**
 * The functions the shim makes globals of, for one execution (a fresh console: its counters and
 * timers are the execution's): `paths` (where each goes: `callMCPTool`, `console.log`,
 * `workspace.readText`) and `fns`, the lane's functions, in the same order.
 */
function contextSurface() {
  const paths = list();
  const fns = list();
  const add = (path, fn) => {
    append(paths, path);
    append(fns, fn);
  };
  const con = makeConsole();
  for (const key of Object.keys(con)) add("console." + key, con[key]);
  const timers = makeContextTimers();
  for (const key of Object.keys(timers)) add(key, timers[key]);
  add("callMCPTool", callMCPTool);
  add("callMCPToolRaw", callMCPToolRaw);
  add("searchTools", searchTools);
  add("getToolSchema", getToolSchema);
  add("listServers", listServers);
  add("llm.ask", llmAsk);
  add("llm.think", llmThink);
  add("listResources", listResources);
  add("readResource", readResource);
  add("listPrompts", listPrompts);
  add("getPrompt", getPrompt);
  const ws = makeWorkspace();
  for (const key of Object.keys(ws)) add("workspace." + key, ws[key]);
  add("image", image);
  add("saveSkill", saveSkill);
  return { paths, fns };
}

/**
 * The timer globals for code in a context: the lane's timers, which call the code's callback with
 * `this` undefined (a timer of the lane's would hand it the lane's global object), counted in
 * `userTimers` as in 70 and all cleared when the execution ends. A string callback is compiled by
 * the shim, in the context.
 */
function makeContextTimers() {
  /** The execution's timer ids (numbers, which cross as data) -> Deno's handles. */
  const handles = new MapCtor();
  let nextId = 1;
  const start = (repeat, callback, delay, args) => {
    if (typeof callback !== "function") throw new TypeError("the callback must be a function");
    const wait = timerDelay(delay);
    const id = nextId++;
    const handle = (repeat ? setIntervalPrivate : setTimeoutPrivate)(() => {
      if (!repeat) {
        userTimers.delete(handle);
        handles.delete(id);
      }
      ReflectApply(callback, undefined, args);
    }, wait);
    handles.set(id, handle);
    userTimers.set(handle, repeat ? -Infinity : performanceNow() + wait);
    return id;
  };
  const stop = (id) => {
    const handle = handles.get(id);
    if (handle === undefined) return;
    handles.delete(id);
    userTimers.delete(handle);
    clearTimeoutPrivate(handle);
  };
  return {
    setTimeout: (callback, delay, ...args) => start(false, callback, delay, args),
    setInterval: (callback, delay, ...args) => start(true, callback, delay, args),
    clearTimeout: stop,
    clearInterval: stop,
  };
}

/** The names of the lane's functions (code sees them as its globals' names: `workspace.readText`). */
function functionNames(fns) {
  const names = list();
  for (let i = 0; i < fns.length; i++) append(names, safeString(fns[i].name));
  return names;
}

/** A value of the lane as the string the shim decodes (see `contextShim`'s `decode`). */
function encodeForContext(v) {
  if (v === undefined) return "u";
  if (v instanceof Uint8Array) return "b" + base64Bytes(v);
  let json;
  try {
    json = JSONStringify(v);
  } catch (e) {
    return encodeErrorForContext(e);
  }
  return json === undefined ? "u" : "j" + json;
}

/** An error as the string the shim turns into an error of the context's. */
function encodeErrorForContext(e) {
  let name = "Error";
  let message = "";
  let stack = "";
  try {
    if (isErrorLike(e)) {
      name = safeString(e.name);
      message = safeString(e.message);
      stack = typeof e.stack === "string" ? e.stack : "";
    } else {
      message = safeString(e);
    }
  } catch {
    // keep what was read
  }
  return "e" + JSONStringify([name, message, stack]);
}

/**
 * The lane's one function a context's shim calls: runs the `index`th function of the surface with
 * `args` (the shim's array) and answers a string. A promise's outcome goes, as a string, to
 * `settle`, a function of the shim's; nothing is answered to a context whose execution ended.
 */
function contextInvoker(epoch, fns) {
  return function invoke(index, args, settle) {
    if (epoch !== contextEpoch) return "e" + JSONStringify(["Error", "the execution has already finished", ""]);
    const fn = fns[index];
    if (typeof fn !== "function") return "e" + JSONStringify(["TypeError", "no such function", ""]);
    let result;
    try {
      result = ReflectApply(fn, undefined, args);
    } catch (e) {
      return encodeErrorForContext(e);
    }
    if (!(result instanceof PromiseCtor)) return encodeForContext(result);
    const answer = (text) => {
      if (epoch !== contextEpoch || typeof settle !== "function") return;
      try {
        ReflectApply(settle, undefined, [text]);
      } catch {
        // the shim's callback does not throw; a stack overflow in it is the code's own doing
      }
    };
    PromisePrototypeThen(result, (v) => answer(encodeForContext(v)), (e) => answer(encodeErrorForContext(e)));
    return "p";
  };
}

/**
 * A fresh context, its global object an ordinary one. Not `vm.createContext()`: that global
 * forwards to an object of the lane's realm, the "sandbox", so `globalThis.constructor` would
 * be the lane's `Object` and its `constructor` the lane's `Function` (the classic escape).
 */
function newContext() {
  const plain = vm.constants?.DONT_CONTEXTIFY;
  return plain !== undefined ? vm.createContext(plain) : vm.createContext(ObjectSetPrototypeOf({}, null));
}

/**
 * Runs `variant` (the plain-JavaScript body of 31) in a fresh context, its imports bound as
 * `importPlan` says (52; null: it has none): a promise for `{value}`, or null when the code or
 * its modules do not compile or link there (nothing has run: the caller takes the lane's realm,
 * whose path reports the error precisely).
 */
function runInFreshContext(variant, mapLocation, importPlan) {
  const context = newContext();
  const epoch = ++contextEpoch;
  const { paths, fns } = contextSurface();
  let controls;
  try {
    const shim = ReflectApply(shimScript.runInContext, shimScript, [context]);
    controls = shim(contextInvoker(epoch, fns), JSONStringify(paths), JSONStringify(functionNames(fns)));
  } catch (e) {
    diag("a context could not be prepared: " + oneLine(e));
    return null;
  }
  const linked = importPlan === null ? null : linkContextModules(context, importPlan);
  if (importPlan !== null && linked === null) return null;
  const params = linked === null ? "[]" : JSONStringify(linked.params);
  const fn = controls.compile(PLAIN_JS_PREFIX + variant.body + "\n//# sourceURL=" + PLAIN_JS_NAME, params);
  if (fn === null) return null;
  currentContext = controls;
  inspectCustom = false;
  if (executeReceived) diag(`lane ${laneTag()}: execution ${laneExecutions + 1} in a fresh context`);
  currentModuleMapper = (line, col) => mapLocation(line - PLAIN_JS_LINE_SHIFT, col);
  let settle;
  const ended = new PromiseCtor((resolve, reject) => {
    settle = { resolve, reject };
  });
  // `value` is boxed: a value of the context is never used to resolve a promise of the lane.
  const report = (ok, value) => (ok ? settle.resolve({ __proto__: null, value }) : settle.reject({ __proto__: null, error: value }));
  if (linked === null) {
    controls.run(fn, report);
  } else {
    // The modules' code runs from here (their evaluation's promise is the context's: the shim
    // waits for it, see 52).
    let evaluation;
    try {
      evaluation = linked.root.evaluate();
    } catch (e) {
      report(false, e);
    }
    if (evaluation !== undefined) controls.run(fn, report, evaluation, linked.root.namespace, JSONStringify(linked.plan));
  }
  return PromisePrototypeThen(ended, undefined, (box) => {
    throw box.error;
  });
}

/** A short name of this lane for the logs (from its nonce). */
function laneTag() {
  return StringPrototypeSlice(safeString(launch.nonce), 0, 8);
}

/**
 * After an execution of a TypeScript lane: null when the lane may serve the next one, else why it
 * retires. The ended execution's context gets no answer from now on and its timers are cleared.
 */
async function recycleTypeScriptLane() {
  endContext();
  if (laneRealmUsed) return "the execution ran in the lane's own realm";
  await macrotaskTurn();
  laneExecutions++;
  if (laneExecutions >= LANE_MAX_EXECUTIONS) return `served ${laneExecutions} executions`;
  resetExecutionState();
  return null;
}

/**
 * Ends the current context's execution for the lane: its later calls are refused (so it can set
 * no timer either), its timers are cleared, its finalization callbacks stopped, and it is dropped.
 */
function endContext() {
  contextEpoch++;
  try {
    currentContext?.end();
  } catch {
    // the shim's `end` does not throw
  }
  currentContext = null;
  inspectCustom = true;
  for (const id of userTimers.keys()) clearTimeoutPrivate(id);
  userTimers.clear();
}

/**
 * The shim: compiled from this function's text and run in each fresh context, before the code,
 * so it and everything it makes belong to the context's realm. It takes what it uses from the
 * context's intrinsics at once (code may replace any of them later), defines the sandbox's
 * globals as functions that call the lane through `invoke`, and returns `compile` and `run`.
 * It must not use anything of the runner's scope: it is compiled from its text.
 */
function contextShim(invoke, pathsJson, namesJson) {
  "use strict";
  const g = globalThis;
  const JSONParse = JSON.parse;
  const ReflectApply = Reflect.apply;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectFreeze = Object.freeze;
  const PromiseCtor = Promise;
  const PromiseThen = Promise.prototype.then;
  const StringSlice = String.prototype.slice;
  const StringCharCodeAt = String.prototype.charCodeAt;
  const StringSplit = String.prototype.split;
  const U8FromBase64 = Uint8Array.fromBase64;
  const AsyncFunction = (async function () {}).constructor;
  const indirectEval = g.eval;
  const ErrorCtor = Error;
  const RangeErrorCtor = RangeError;
  const errorKinds = {
    __proto__: null,
    Error,
    TypeError,
    RangeError,
    SyntaxError,
    ReferenceError,
    EvalError,
    URIError,
  };
  const paths = JSONParse(pathsJson);
  const names = JSONParse(namesJson);

  // Deno formats stack traces with `globalThis.Error.prepareStackTrace` of the error's context,
  // and hands that function call sites of the lane's realm (whose prototype chain ends at the
  // lane's `Object.prototype`). Neither can be set in a context (code that names
  // `prepareStackTrace` runs in the lane's realm instead, where the hook works as usual).
  ObjectDefineProperty(ErrorCtor, "prepareStackTrace", { value: undefined, writable: false, configurable: false });
  ObjectDefineProperty(g, "Error", { value: ErrorCtor, writable: false, enumerable: false, configurable: false });

  /** An error of this realm from the lane's [name, message, stack]. */
  function errorFrom(parts) {
    const Kind = errorKinds[parts[0]] ?? ErrorCtor;
    const err = new Kind(parts[1]);
    if (Kind === ErrorCtor && parts[0] !== "Error") {
      ObjectDefineProperty(err, "name", { value: parts[0], writable: true, configurable: true, enumerable: false });
    }
    if (parts[2] !== "") {
      ObjectDefineProperty(err, "stack", { value: parts[2], writable: true, configurable: true, enumerable: false });
    }
    return err;
  }

  /** A value (or a thrown error) from the lane's answer; `"p"` is not decoded here. */
  function decode(text) {
    const tag = ReflectApply(StringCharCodeAt, text, [0]);
    const rest = ReflectApply(StringSlice, text, [1]);
    if (tag === 117) return undefined; // u
    if (tag === 106) return JSONParse(rest); // j
    if (tag === 98) return U8FromBase64(rest); // b
    if (tag === 101) throw errorFrom(JSONParse(rest)); // e
    throw new ErrorCtor("the sandbox's answer was lost");
  }

  /** The global for the lane's `index`th function, named as code calls it. */
  function gateFunction(index, name) {
    const holder = {
      [name](...args) {
        let answer = null;
        let resolveIt = null;
        let rejectIt = null;
        const settle = (text) => {
          if (resolveIt === null) {
            answer = text;
            return;
          }
          let value;
          try {
            value = decode(text);
          } catch (e) {
            rejectIt(e);
            return;
          }
          resolveIt(value);
        };
        let text;
        try {
          text = invoke(index, args, settle);
        } catch {
          // Whatever the lane threw (a stack overflow) is not handed to the code.
          throw new RangeErrorCtor(name + ": the sandbox could not serve this call (is the stack nearly full?)");
        }
        if (text !== "p") return decode(text);
        return new PromiseCtor((resolve, reject) => {
          resolveIt = resolve;
          rejectIt = reject;
          if (answer !== null) settle(answer);
        });
      },
    };
    return holder[name];
  }

  function define(target, key, value) {
    ObjectDefineProperty(target, key, { value, writable: true, configurable: true, enumerable: false });
  }

  const namespaces = { __proto__: null };
  for (let i = 0; i < paths.length; i++) {
    const parts = ReflectApply(StringSplit, paths[i], ["."]);
    if (parts.length === 1) {
      define(g, parts[0], gateFunction(i, names[i] || parts[0]));
      continue;
    }
    let ns = namespaces[parts[0]];
    if (ns === undefined) {
      ns = {};
      namespaces[parts[0]] = ns;
    }
    ns[parts[1]] = gateFunction(i, names[i] || parts[1]);
  }
  for (const key in namespaces) {
    const ns = namespaces[key];
    define(g, key, key === "console" ? ns : ObjectFreeze(ns));
  }
  // String timer callbacks are compiled here, in the context (as the global `eval` would).
  for (const key of ["setTimeout", "setInterval"]) {
    const start = g[key];
    if (typeof start !== "function") continue;
    const holder = {
      [key](callback, delay, ...args) {
        if (typeof callback === "function") return ReflectApply(start, undefined, [callback, delay, ...args]);
        const source = "" + callback;
        return ReflectApply(start, undefined, [() => indirectEval(source), delay]);
      },
    };
    define(g, key, holder[key]);
  }
  // A finalization callback would run whenever V8 collects, maybe during a later execution:
  // the context's run only while its execution does (`end`). The constructor code reaches
  // (also as the prototype's `constructor`) makes registries whose callback checks that.
  let live = true;
  const FinalizationRegistryCtor = FinalizationRegistry;
  const ReflectConstruct = Reflect.construct;
  const TypeErrorCtor = TypeError;
  function FinalizationRegistryOfTheExecution(cleanup) {
    if (new.target === undefined) throw new TypeErrorCtor("Constructor FinalizationRegistry requires 'new'");
    if (typeof cleanup !== "function") throw new TypeErrorCtor("FinalizationRegistry: cleanup must be callable");
    const checked = (held) => {
      if (live) ReflectApply(cleanup, undefined, [held]);
    };
    return ReflectConstruct(FinalizationRegistryCtor, [checked], new.target);
  }
  ObjectDefineProperty(FinalizationRegistryOfTheExecution, "name", { value: "FinalizationRegistry" });
  ObjectDefineProperty(FinalizationRegistryOfTheExecution, "prototype", { value: FinalizationRegistryCtor.prototype });
  define(FinalizationRegistryCtor.prototype, "constructor", FinalizationRegistryOfTheExecution);
  define(g, "FinalizationRegistry", FinalizationRegistryOfTheExecution);
  define(g, "alert", function alert() {});
  define(g, "confirm", function confirm() {
    return false;
  });
  define(g, "prompt", function prompt() {
    return null;
  });

  return {
    /**
     * The code as an async function of this realm, its parameters named by `paramsJson` (the
     * code's imports, 52), or null when it does not compile.
     */
    compile(source, paramsJson) {
      try {
        return ReflectConstruct(AsyncFunction, [...JSONParse(paramsJson), source]);
      } catch {
        return null;
      }
    },
    /** The execution has ended: finalization callbacks of the context no longer run. */
    end() {
      live = false;
    },
    /**
     * Runs `fn` and reports how it ended to `report(ok, value)`, the lane's. With imports (52):
     * once `evaluation` (the modules', a promise of this realm) has settled, with the arguments
     * `planJson` names in `namespace` ([index, export name] from namespace `m<index>`, or
     * [index, null] for that namespace itself).
     */
    run(fn, report, evaluation, namespace, planJson) {
      const start = () => {
        let promise;
        try {
          const args = { __proto__: null, length: 0 };
          if (planJson !== undefined) {
            const plan = JSONParse(planJson);
            args.length = plan.length;
            for (let i = 0; i < plan.length; i++) {
              const ns = namespace["m" + plan[i][0]];
              args[i] = plan[i][1] === null ? ns : ns[plan[i][1]];
            }
          }
          promise = ReflectApply(fn, undefined, args);
        } catch (e) {
          report(false, e);
          return;
        }
        ReflectApply(PromiseThen, promise, [(v) => report(true, v), (e) => report(false, e)]);
      };
      if (evaluation === undefined) start();
      else ReflectApply(PromiseThen, evaluation, [start, (e) => report(false, e)]);
    },
  };
}
