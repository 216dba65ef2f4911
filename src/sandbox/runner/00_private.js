// Sandbox worker bootstrap: the main module of every sandboxed Deno worker process.
//
// This file owns the worker side of the host <-> worker protocol (docs/worker-protocol.md):
// line-delimited JSON on stdin/stdout, the `callMCPTool` / `searchTools` / `getToolSchema` /
// `listServers` globals that turn into host calls, console capture (with the output budget),
// running one TypeScript program (top-level await/return, REPL-like last-expression value) or
// one Python program (Pyodide, loaded before `ready`), and reporting its result or error. It also
// hides raw stdio from user code (hygiene only: the host treats the worker as hostile; the real
// boundary is Deno's permissions and the jail).
//
// The host runs it with the command line src/sandbox/launch.rs builds (the one place the Deno
// flags are written): no permissions and an empty environment, with the script argument
// `typescript`; Python workers may read the Pyodide distribution and its snapshot and get the
// script arguments `python DIR [SNAP]` (DIR: the Pyodide distribution, SNAP: a memory snapshot
// file; exit code 75 when it is unusable). A trailing `--no-warm-up` (a worker started for an
// execution already waiting) skips the warm-up runs. `snapshot DIR OUT` (trusted, may read DIR
// and write OUT, no stdin protocol) makes that file. Keep this file free of static imports and of literal-string dynamic imports: Deno
// would pre-load those without permission checks.
//
// Layout: "this file" above is the whole runner, the numbered plain scripts of
// src/sandbox/runner/ joined in name order into one source (src/sandbox/runner.rs) and run as
// one data: URL. They share one scope (no imports, no exports: the rule above holds for every
// piece). Code that runs after the whole script has been evaluated (everything but top-level
// initialisers) may use what later pieces declare.
// 00_private.js: the private references (Deno, JSON, Reflect, timers, stdio, the launch
// arguments, Deno's internal console helpers). Relies on nothing.

// ---------------------------------------------------------------------------------------------
// Private references, taken before any user code can run or tamper with globals.
// ---------------------------------------------------------------------------------------------

const D = globalThis.Deno;
const JSONStringify = JSON.stringify;
const JSONParse = JSON.parse;
const ObjectDefineProperty = Object.defineProperty;
const ObjectGetOwnPropertySymbols = Object.getOwnPropertySymbols;
const ReflectApply = Reflect.apply;
const ErrorCaptureStackTrace = Error.captureStackTrace;
const ErrorIsError = typeof Error.isError === "function" ? Error.isError : null;
const StringFromCharCode = String.fromCharCode;
const NumberIsSafeInteger = Number.isSafeInteger;
const NumberIsFinite = Number.isFinite;
const PromiseCtor = Promise;
const MapCtor = Map;
const SetCtor = Set;
const ArrayIsArray = Array.isArray;
const setTimeoutPrivate = globalThis.setTimeout;
const clearTimeoutPrivate = globalThis.clearTimeout;
const setIntervalPrivate = globalThis.setInterval;
const clearIntervalPrivate = globalThis.clearInterval;
const MessageChannelCtor = globalThis.MessageChannel;
const performanceNow = performance.now.bind(performance);
const btoaPrivate = globalThis.btoa;
const addEventListenerPrivate = globalThis.addEventListener.bind(globalThis);
const U8ToBase64 = typeof Uint8Array.prototype.toBase64 === "function" ? Uint8Array.prototype.toBase64 : null;

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();
const encodeUtf8 = textEncoder.encode.bind(textEncoder);
const decodeUtf8 = textDecoder.decode.bind(textDecoder);

const inspect = D.inspect;
const exitPrivate = D.exit;
const stdinReadable = D.stdin.readable;
const stdoutWriteSync = D.stdout.writeSync.bind(D.stdout);
const stderrWriteSync = D.stderr.writeSync.bind(D.stderr);
/**
 * Script arguments: the mode (`typescript`, the default, `python` or `snapshot`), then the
 * Pyodide directory etc. The flag `--no-warm-up`, anywhere, is taken out (see `warmUpWanted`).
 */
const launchArgs = [...D.args];
/**
 * Whether to pay first-use costs before `ready` (a pooled worker waits for its execution; an
 * execution waiting for its worker is better off paying only the costs its own code incurs).
 */
const warmUpWanted = !launchArgs.includes("--no-warm-up");
for (let i = launchArgs.indexOf("--no-warm-up"); i >= 0; i = launchArgs.indexOf("--no-warm-up")) {
  launchArgs.splice(i, 1);
}
/**
 * Deno's Node-compat `process` global: hidden from user code, lent to Pyodide while it loads.
 * Read only in the modes that need it (`main`): the first read loads Deno's Node compatibility
 * layer, about 65 ms of CPU a TypeScript worker has no use for.
 */
let processPrivate;

/** Deno's internal namespace: only used for console formatting helpers, removed from `Deno` below. */
const denoInternalSymbol = ObjectGetOwnPropertySymbols(D).find((s) => s.description === "Deno.internal");
const denoInternal = denoInternalSymbol === undefined ? undefined : D[denoInternalSymbol];
/** Deno's `console.log` argument formatter (handles `%s`/`%o`/... like the real console), if present. */
const inspectArgs = typeof denoInternal?.inspectArgs === "function" ? denoInternal.inspectArgs : null;
/** A Deno Console whose output we route (used only for `console.table`), if present. */
let tableConsole = null;
