// 90_globals.js: the user-facing global environment (`installEnvironment`): console, timers,
// host-call globals, hidden raw I/O, `Deno.exit`/`close`, error events. Relies on 00-70.

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

  // Raw I/O out of reach (hygiene; node:process / node:fs imports can still reach fds).
  tryDelete(D, "stdin");
  tryDelete(D, "stdout");
  tryDelete(D, "stderr");
  if (denoInternalSymbol !== undefined) tryDelete(D, denoInternalSymbol);
  tryDelete(D, "internal");
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
