// The isolate runner: what runs in every execution isolate (a Deno Web Worker: a V8 isolate, a
// lane serving the session's executions one after another: for TypeScript each in a fresh V8
// context, see 51; for Python in the lane's Pyodide behind a verified reset, see 63) of a jailed
// worker process.
//
// This script owns the execution side of the protocol (docs/worker-protocol.md): the `callMCPTool`
// / `searchTools` / `getToolSchema` / `listServers` globals that turn into host calls, console
// capture (with the output budget), running one TypeScript program (top-level await/return,
// REPL-like last-expression value) or one Python program (Pyodide, loaded before `ready` from the
// process's compiled WebAssembly module and its verified memory snapshot), and reporting its
// result or error. Its messages are v1 lines exchanged with the supervisor (src/sandbox/supervisor/,
// the process's main module) over a MessagePort; the supervisor tags them with the execution's id
// for the host. It also hides raw I/O from user code (hygiene only: the host treats every isolate
// as hostile; the real boundary is Deno's permissions, the process's jail, and the supervisor,
// which alone holds the connection to the host).
//
// The supervisor starts each isolate from a tiny bootstrap module and hands it this source,
// `port` (a MessagePort to the supervisor) and `init` (what to prepare: `init.mode` is
// `typescript`, `python` or `snapshot`; for Python the Pyodide sources and the snapshot file, the
// compiled module following in a message of its own (`pyodideModule`, 60); `init.nonce`, unique
// to the isolate; `init.singleUse`, see 99). The source is evaluated as one function body (`function (init, port) { ... }`), so its
// declarations stay private to it. Keep it free of `import` declarations and of `import.meta`.
//
// Layout: "this script" is the numbered plain scripts of src/sandbox/runner/ joined in name
// order into one source (src/sandbox/runner.rs). They share one scope. Code that runs after the
// whole script has been evaluated (everything but top-level initialisers) may use what later
// pieces declare.
// 00_private.js: the private references (Deno, JSON, Reflect, timers, the message port, stderr,
// the launch settings, Deno's internal console helpers). Relies on nothing.

// ---------------------------------------------------------------------------------------------
// Private references, taken before any user code can run or tamper with globals.
// ---------------------------------------------------------------------------------------------

const D = globalThis.Deno;
const JSONStringify = JSON.stringify;
const JSONParse = JSON.parse;
const ObjectDefineProperty = Object.defineProperty;
const ObjectFreeze = Object.freeze;
const ObjectGetOwnPropertySymbols = Object.getOwnPropertySymbols;
const ReflectApply = Reflect.apply;
const ReflectConstruct = Reflect.construct;
/** The global `eval`, for the runner's own trusted sources (user code gets a guarded one). */
const evalPrivate = globalThis.eval;
const ErrorCaptureStackTrace = Error.captureStackTrace;
const ErrorIsError = typeof Error.isError === "function" ? Error.isError : null;
const StringFromCharCode = String.fromCharCode;
const NumberIsSafeInteger = Number.isSafeInteger;
const NumberIsFinite = Number.isFinite;
const PromiseCtor = Promise;
const MapCtor = Map;
const SetCtor = Set;
const ArrayIsArray = Array.isArray;
/**
 * Deno loads some globals on first read (its timers take about 4 ms of an isolate's start): such
 * a global is kept as its getter, read when first needed. `lazyGlobal(name)()` is the value.
 */
function lazyGlobal(name) {
  const desc = Object.getOwnPropertyDescriptor(globalThis, name);
  if (desc === undefined || desc.get === undefined) return () => desc?.value;
  let value;
  let read = false;
  return () => {
    if (!read) {
      value = ReflectApply(desc.get, globalThis, []);
      read = true;
    }
    return value;
  };
}
const timersPrivate = {
  setTimeout: lazyGlobal("setTimeout"),
  clearTimeout: lazyGlobal("clearTimeout"),
  setInterval: lazyGlobal("setInterval"),
  clearInterval: lazyGlobal("clearInterval"),
};
const setTimeoutPrivate = (...args) => ReflectApply(timersPrivate.setTimeout(), globalThis, args);
const clearTimeoutPrivate = (...args) => ReflectApply(timersPrivate.clearTimeout(), globalThis, args);
const setIntervalPrivate = (...args) => ReflectApply(timersPrivate.setInterval(), globalThis, args);
const clearIntervalPrivate = (...args) => ReflectApply(timersPrivate.clearInterval(), globalThis, args);
const MessageChannelCtor = globalThis.MessageChannel;
const performanceNow = performance.now.bind(performance);
const btoaPrivate = globalThis.btoa;
const atobPrivate = globalThis.atob;
const addEventListenerPrivate = globalThis.addEventListener.bind(globalThis);
const U8ToBase64 = typeof Uint8Array.prototype.toBase64 === "function" ? Uint8Array.prototype.toBase64 : null;

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();
const encodeUtf8 = textEncoder.encode.bind(textEncoder);
const decodeUtf8 = textDecoder.decode.bind(textDecoder);

const inspect = D.inspect;
const stderrWriteSync = D.stderr.writeSync.bind(D.stderr);
/**
 * This isolate's end of its channel to the supervisor (`port`, handed over with `init`): the
 * only way out. User code cannot reach it.
 */
const supervisorPort = port;
const postToSupervisor = port.postMessage.bind(port);
/**
 * What the supervisor asked this isolate to prepare (see the opening comment): `mode`, `nonce`,
 * and for Python `pyodide`.
 */
const launch = init;
/** Deno's internal namespace: only used for console formatting helpers, removed from `Deno` below. */
const denoInternalSymbol = ObjectGetOwnPropertySymbols(D).find((s) => s.description === "Deno.internal");
const denoInternal = denoInternalSymbol === undefined ? undefined : D[denoInternalSymbol];
/** Deno's `console.log` argument formatter (handles `%s`/`%o`/... like the real console), if present. */
const inspectArgs = typeof denoInternal?.inspectArgs === "function" ? denoInternal.inspectArgs : null;
/** A Deno Console whose output we route (used only for `console.table`), if present. */
let tableConsole = null;
