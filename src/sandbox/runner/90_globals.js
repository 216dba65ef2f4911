// 90_globals.js: the user-facing global environment (`installEnvironment`): console, timers,
// host-call globals, hidden raw I/O, the channels between isolates closed (`closeSharedState`),
// `Deno.exit`/`close`, error events. Relies on 00-70.

// ---------------------------------------------------------------------------------------------
// The user-facing global environment
// ---------------------------------------------------------------------------------------------

function defineGlobal(name, value) {
  ObjectDefineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
}

function tryDelete(obj, key) {
  try {
    delete obj[key];
  } catch {
    // ignore
  }
}

function exitFromUserCode(code) {
  const n = code === undefined ? 0 : Number(code) | 0;
  if (executing && !finished) finishError(new ExitSignal(n));
  throw new ExitSignal(n);
}

function installEnvironment() {
  // A Deno console that prints through us; only its table formatting is used.
  if (typeof denoInternal?.Console === "function") {
    try {
      tableConsole = new denoInternal.Console((text, level) => {
        emitOutput(level > 1 ? "stderr" : "stdout", indentText(text.endsWith("\n") ? text.slice(0, -1) : text) + "\n");
      });
    } catch {
      tableConsole = null;
    }
  }
  defineGlobal("console", makeConsole());
  for (const [name, fn] of Object.entries(makeTimerGlobals())) defineGlobal(name, fn);
  defineGlobal("callMCPTool", callMCPTool);
  defineGlobal("callMCPToolRaw", callMCPToolRaw);
  defineGlobal("searchTools", searchTools);
  defineGlobal("getToolSchema", getToolSchema);
  defineGlobal("listServers", listServers);
  defineGlobal("llm", makeLlm());
  defineGlobal("listResources", listResources);
  defineGlobal("readResource", readResource);
  defineGlobal("listPrompts", listPrompts);
  defineGlobal("getPrompt", getPrompt);
  defineGlobal("workspace", makeWorkspace());
  defineGlobal("image", image);
  defineGlobal("saveSkill", saveSkill);
  ObjectDefineProperty(globalThis, IMPORT_GLOBAL, { value: importForUser, writable: false, configurable: false });
  guardCodeFromStrings();
  closeSharedState();

  // Raw I/O out of reach (hygiene; node:process / node:fs imports can still reach fds).
  tryDelete(D, "stdin");
  tryDelete(D, "stdout");
  tryDelete(D, "stderr");
  if (denoInternalSymbol !== undefined) tryDelete(D, denoInternalSymbol);
  tryDelete(D, "internal");
  // Deleting does not read it: reading `process` would load Deno's Node compatibility layer.
  tryDelete(globalThis, "process");
  defineGlobal("alert", function alert() {});
  defineGlobal("confirm", function confirm() {
    return false;
  });
  defineGlobal("prompt", function prompt() {
    return null;
  });
  // Ending the process must still produce a `done`.
  try {
    ObjectDefineProperty(D, "exit", {
      value: function exit(code) {
        exitFromUserCode(code);
      },
      writable: true,
      configurable: true,
      enumerable: true,
    });
  } catch {
    // ignore
  }
  defineGlobal("close", function close() {
    exitFromUserCode(0);
  });

  addEventListenerPrivate("unhandledrejection", (event) => {
    event.preventDefault();
    onAsyncError(event.reason);
  });
  addEventListenerPrivate("error", (event) => {
    event.preventDefault();
    onAsyncError(event.error !== undefined ? event.error : event.message);
  });
}

/** Makes `method` of `proto` throw `why`, for good (user code cannot restore the original). */
function disable(proto, method, why) {
  try {
    ObjectDefineProperty(proto, method, {
      value: function disabled() {
        throw new TypeError(why);
      },
      writable: false,
      configurable: false,
    });
  } catch {
    // not there: nothing to disable
  }
}

/**
 * Closes what Deno shares between the isolates of one process, so that no execution can leave
 * anything for a later one (the process serves many executions of one client session, each in
 * its own isolate):
 * - `BroadcastChannel` reaches every isolate of the process: it cannot send (the class is also
 *   what `node:worker_threads` exports, so its prototype is disabled, not only the global);
 * - the Cache API (`caches`) and Web Storage would keep data for the process (or on disk);
 * - a `Worker` started by user code would be another isolate of the process, one the supervisor
 *   does not know of.
 * Module caches are handled where modules are loaded (`uniqueModule`, `importForUser`).
 */
function closeSharedState() {
  const BC = globalThis.BroadcastChannel;
  if (typeof BC === "function") {
    disable(BC.prototype, "postMessage", "BroadcastChannel is not available in the sandbox");
  }
  for (const name of ["BroadcastChannel", "caches", "CacheStorage", "Cache", "localStorage", "sessionStorage", "Worker"]) {
    tryDelete(globalThis, name);
  }
  // The isolate's own message port belongs to the runner: user code posting to it (or closing
  // the isolate) would only confuse its own execution, but it gets no handle to do so.
  tryDelete(globalThis, "postMessage");
  tryDelete(globalThis, "onmessage");
  tryDelete(globalThis, "onmessageerror");
  const scope = Object.getPrototypeOf(globalThis);
  if (scope !== null) {
    disable(scope, "postMessage", "postMessage is not available in the sandbox");
    disable(scope, "close", "close is not available in the sandbox");
  }
}

/**
 * Every way to compile source text at run time goes through `guardScript` (32): the global `eval`
 * (which makes a direct `eval(...)` an indirect one: it sees globals, not the caller's locals),
 * and the four function constructors, reached as globals or through any function's
 * `constructor`. (String timers go through `guardScript` in `makeTimerGlobals`.) Their
 * arguments are guarded with 03's intrinsics: user code may have replaced `Array.prototype.map`.
 */
function guardCodeFromStrings() {
  const guardedEval = (source) => (typeof source === "string" ? evalPrivate(guardScript(source)) : source);
  ObjectDefineProperty(guardedEval, "name", { value: "eval" });
  defineGlobal("eval", guardedEval);
  const constructors = [
    Function,
    AsyncFunctionCtor,
    Object.getPrototypeOf(function* () {}).constructor,
    Object.getPrototypeOf(async function* () {}).constructor,
  ];
  for (const Ctor of constructors) {
    const guarded = function (...args) {
      const sources = list();
      for (let i = 0; i < args.length; i++) append(sources, guardScript(args[i]));
      return ReflectConstruct(Ctor, sources, new.target ?? guarded);
    };
    ObjectDefineProperty(guarded, "name", { value: Ctor.name });
    guarded.prototype = Ctor.prototype;
    ObjectDefineProperty(Ctor.prototype, "constructor", { value: guarded, writable: true, configurable: true });
    if (Ctor === Function) defineGlobal("Function", guarded);
  }
}
