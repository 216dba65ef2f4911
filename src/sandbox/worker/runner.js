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
// The host runs it as `deno run --no-prompt --no-config --no-lock --no-remote --no-npm --quiet
// --no-code-cache --v8-flags=--max-old-space-size=N data:application/javascript;base64,...
// typescript` with no permissions and an empty environment; Python workers get
// `--allow-read=DIR[,SNAP]` and the script arguments `python DIR [SNAP]` (DIR: the Pyodide
// distribution, SNAP: a memory snapshot file; exit code 75 when it is unusable). A trailing
// `--no-warm-up` (a worker started for an execution already waiting) skips the warm-up runs.
// `snapshot DIR OUT` (trusted, `--allow-read=DIR --allow-write=OUT`, no stdin protocol) makes
// that file. Keep this file free of static imports and of literal-string dynamic imports: Deno
// would pre-load those without permission checks.

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

// ---------------------------------------------------------------------------------------------
// Protocol I/O
// ---------------------------------------------------------------------------------------------

const PROTOCOL_VERSION = 1;
/** The host refuses worker lines longer than this (docs/worker-protocol.md). */
const MAX_WORKER_LINE = 4 * 1024 * 1024;
/** Largest single `output` text (bytes); JSON escaping may grow it up to 6x, still under the cap. */
const MAX_OUTPUT_CHUNK = 512 * 1024;
/** Used when the execute message carries no usable `outputLimit`. */
const DEFAULT_OUTPUT_LIMIT = 1024 * 1024;
/**
 * How far past `outputLimit` the worker may go so the host can see that output was cut
 * (the host caps at the limit and adds its own truncation marker).
 */
const OUTPUT_OVERSHOOT = 64;

/** Writes all of `bytes` to fd 1 (blocking; loops on partial writes). */
function writeAll(bytes) {
  let offset = 0;
  while (offset < bytes.length) {
    const n = stdoutWriteSync(bytes.subarray(offset));
    if (!(n > 0)) throw new Error("stdout write returned " + n);
    offset += n;
  }
}

/** Sends one already-serialised message line (without the trailing newline). */
function sendLine(line) {
  try {
    writeAll(encodeUtf8(line + "\n"));
  } catch (e) {
    // The host is gone (EPIPE) or stdout is broken: nothing useful is left to do.
    diag("cannot write to stdout: " + safeString(e));
    exitPrivate(70);
  }
}

const StringToWellFormed = String.prototype.toWellFormed;
const wellFormed = (s) => ReflectApply(StringToWellFormed, s, []);
const wellFormedStrings = (_key, v) => {
  if (typeof v === "string") return wellFormed(v);
  if (v === null || typeof v !== "object" || ArrayIsArray(v)) return v;
  const keys = Object.keys(v);
  return keys.every((k) => wellFormed(k) === k) ? v : Object.fromEntries(keys.map((k) => [wellFormed(k), v[k]]));
};

/**
 * `JSON.stringify`, but lone UTF-16 surrogates in strings and keys become U+FFFD: their `\udXXX`
 * escapes are not valid Unicode and the host's JSON parser refuses them.
 */
function toJson(v) {
  const json = JSONStringify(v);
  return typeof json === "string" && typeof StringToWellFormed === "function" && /\\ud[89a-f]/.test(json)
    ? JSONStringify(v, wellFormedStrings)
    : json;
}

/** @param {Record<string, unknown>} msg */
function send(msg) {
  sendLine(toJson({ v: PROTOCOL_VERSION, ...msg }));
}

/** Best-effort diagnostics on the real stderr (read by the host for diagnosis only). */
function diag(text) {
  try {
    const bytes = encodeUtf8("runner: " + text + "\n");
    let offset = 0;
    while (offset < bytes.length) {
      const n = stderrWriteSync(bytes.subarray(offset));
      if (!(n > 0)) break;
      offset += n;
    }
  } catch {
    // ignore
  }
}

let stdinReader = null;
let stopReadingRequested = false;

/** Stops consuming stdin (after `done`); the host kills the process anyway. */
function stopReading() {
  stopReadingRequested = true;
  const reader = stdinReader;
  stdinReader = null;
  if (reader !== null) {
    try {
      reader.cancel().catch(() => {});
    } catch {
      // ignore
    }
  }
}

/**
 * Reads stdin and calls `onLine` for every `\n`-terminated line. Lines may be arbitrarily large
 * and span any number of chunks.
 * @param {(line: string) => void} onLine
 */
async function readLines(onLine) {
  const reader = stdinReadable.getReader();
  stdinReader = reader;
  /** @type {Uint8Array[]} */
  let parts = [];
  let partsLength = 0;
  while (!stopReadingRequested) {
    let chunk;
    try {
      const r = await reader.read();
      if (r.done) break;
      chunk = r.value;
    } catch (e) {
      if (!stopReadingRequested) diag("stdin read failed: " + safeString(e));
      break;
    }
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) {
        parts.push(chunk.slice(start));
        partsLength += chunk.length - start;
        break;
      }
      let lineBytes = chunk.subarray(start, nl);
      if (parts.length > 0) {
        const joined = new Uint8Array(partsLength + lineBytes.length);
        let o = 0;
        for (const p of parts) {
          joined.set(p, o);
          o += p.length;
        }
        joined.set(lineBytes, o);
        lineBytes = joined;
        parts = [];
        partsLength = 0;
      }
      start = nl + 1;
      try {
        onLine(decodeUtf8(lineBytes));
      } catch (e) {
        diag("failed to handle a host message: " + safeString(e?.stack ?? e));
      }
      if (stopReadingRequested) return;
    }
  }
  if (!stopReadingRequested) onStdinClosed();
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/** `String(v)` that never throws. */
function safeString(v) {
  try {
    return String(v);
  } catch {
    try {
      return inspect(v, { colors: false });
    } catch {
      return "[unprintable value]";
    }
  }
}

function isErrorLike(v) {
  if (v === null || (typeof v !== "object" && typeof v !== "function")) return false;
  if (ErrorIsError !== null && ErrorIsError(v)) return true;
  return v instanceof Error;
}

/** UTF-8 byte length of a string. */
function utf8Length(s) {
  return encodeUtf8(s).length;
}

/** The longest prefix of `s` whose UTF-8 encoding fits in `maxBytes` (cut on a character boundary). */
function truncateUtf8(s, maxBytes) {
  const bytes = encodeUtf8(s);
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return decodeUtf8(bytes.subarray(0, end));
}

function base64Utf8(s) {
  const bytes = encodeUtf8(s);
  if (U8ToBase64 !== null) return ReflectApply(U8ToBase64, bytes, []);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += ReflectApply(StringFromCharCode, null, bytes.subarray(i, i + 0x8000));
  }
  return btoaPrivate(bin);
}

// deno-lint-ignore no-control-regex
const ANSI_RE = /\u001b\[[0-9;?]*[ -\/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

function stripAnsi(s) {
  return s.replace(ANSI_RE, "");
}

// ---------------------------------------------------------------------------------------------
// Output capture (console) with the output budget
// ---------------------------------------------------------------------------------------------

let outputLimit = DEFAULT_OUTPUT_LIMIT;
let outputSent = 0;
let outputClosed = false;
let groupIndent = "";

/**
 * Sends captured output, enforcing the byte budget shared by stdout and stderr. Once the budget
 * is exceeded, a last piece slightly over the limit is sent (so the host sees the cut) and then
 * nothing more.
 * @param {"stdout" | "stderr"} stream
 * @param {string} text
 */
function emitOutput(stream, text) {
  if (!executeReceived) {
    // Nothing may precede `ready`/`execute` on stdout (e.g. warnings while Pyodide loads).
    if (text.length > 0) diag(`${stream} before execute: ${truncateUtf8(text, 4096)}`);
    return;
  }
  if (finished || outputClosed || text.length === 0) return;
  const remaining = outputLimit - outputSent;
  let bytes = utf8Length(text);
  if (bytes > remaining) {
    text = truncateUtf8(text, Math.max(0, remaining) + OUTPUT_OVERSHOOT);
    bytes = utf8Length(text);
    outputClosed = true;
  }
  outputSent += bytes;
  while (text.length > 0) {
    let piece = text;
    if (bytes > MAX_OUTPUT_CHUNK) {
      piece = truncateUtf8(text, MAX_OUTPUT_CHUNK);
      if (piece.length === 0) piece = text.slice(0, 1);
    }
    send({ type: "output", stream, text: piece });
    text = text.slice(piece.length);
    if (text.length > 0) bytes = utf8Length(text);
  }
}

/** Applies the current `console.group` indentation to every line of `text`. */
function indentText(text) {
  if (groupIndent === "") return text;
  return groupIndent + text.replace(/\n(?!$)/g, "\n" + groupIndent);
}

/** @param {"stdout" | "stderr"} stream */
function printLine(stream, text) {
  // Printed errors and stacks: show `user.ts:L:C` rather than the module's data: URL.
  if (text.includes("data:application/") || text.includes(PLAIN_JS_NAME)) {
    text = cleanErrorText(text, currentModuleMapper);
  }
  emitOutput(stream, indentText(text) + "\n");
}

const INSPECT_OPTIONS = { colors: false, depth: 6 };

/** Formats console arguments like Deno: strings as is, other values inspected, joined by spaces. */
function formatArgs(args) {
  if (inspectArgs !== null) {
    try {
      return inspectArgs(args, { ...INSPECT_OPTIONS });
    } catch {
      // fall through to the simple formatter
    }
  }
  let out = "";
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (i > 0) out += " ";
    out += typeof a === "string" ? a : inspectValue(a);
  }
  return out;
}

function inspectValue(v, options) {
  try {
    return inspect(v, { ...INSPECT_OPTIONS, ...options, colors: false });
  } catch {
    return safeString(v);
  }
}

/** The `console` user code sees: nothing reaches the real stdout/stderr. */
function makeConsole() {
  const counts = new MapCtor();
  const timers = new MapCtor();
  const out = (...args) => printLine("stdout", formatArgs(args));
  const err = (...args) => printLine("stderr", formatArgs(args));
  const label = (l) => (l === undefined ? "default" : safeString(l));
  const con = {
    log: out,
    info: out,
    debug: out,
    dirxml: out,
    warn: err,
    error: err,
    dir(value, options) {
      const opts = options !== null && typeof options === "object" ? options : {};
      printLine("stdout", inspectValue(value, opts));
    },
    trace(...args) {
      const holder = { name: "Trace", message: formatArgs(args) };
      ErrorCaptureStackTrace(holder, con.trace);
      printLine("stderr", cleanErrorText(safeString(holder.stack), currentModuleMapper));
    },
    table(data, properties) {
      if (tableConsole !== null) {
        try {
          tableConsole.table(data, properties);
          return;
        } catch {
          // fall back to a plain log
        }
      }
      out(data);
    },
    assert(condition, ...args) {
      if (condition) return;
      if (args.length === 0) printLine("stderr", "Assertion failed");
      else printLine("stderr", "Assertion failed: " + formatArgs(args));
    },
    count(l) {
      const key = label(l);
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      printLine("stdout", `${key}: ${n}`);
    },
    countReset(l) {
      counts.delete(label(l));
    },
    time(l) {
      const key = label(l);
      if (timers.has(key)) {
        printLine("stderr", `Timer '${key}' already exists`);
        return;
      }
      timers.set(key, performanceNow());
    },
    timeLog(l, ...args) {
      const key = label(l);
      if (!timers.has(key)) {
        printLine("stderr", `Timer '${key}' does not exist`);
        return;
      }
      const ms = performanceNow() - timers.get(key);
      const extra = args.length > 0 ? " " + formatArgs(args) : "";
      printLine("stdout", `${key}: ${Number(ms.toFixed(3))}ms${extra}`);
    },
    timeEnd(l) {
      const key = label(l);
      if (!timers.has(key)) {
        printLine("stderr", `Timer '${key}' does not exist`);
        return;
      }
      const ms = performanceNow() - timers.get(key);
      timers.delete(key);
      printLine("stdout", `${key}: ${Number(ms.toFixed(3))}ms`);
    },
    group(...args) {
      if (args.length > 0) out(...args);
      groupIndent += "  ";
    },
    groupCollapsed(...args) {
      con.group(...args);
    },
    groupEnd() {
      groupIndent = groupIndent.slice(2);
    },
    clear() {},
    profile() {},
    profileEnd() {},
    timeStamp() {},
  };
  return con;
}

// ---------------------------------------------------------------------------------------------
// Host calls
// ---------------------------------------------------------------------------------------------

let nextCallId = 1;
/** @type {Map<number, {resolve: (v: unknown) => void, reject: (e: unknown) => void, site: {stack?: string}}>} */
const pendingCalls = new MapCtor();

/**
 * Sends a `call` and returns a promise for the host's reply.
 * @param {string} method
 * @param {Record<string, unknown>} params
 * @param {Function} caller the user-facing global, to start the call-site stack below it
 */
function hostCall(method, params, caller) {
  const site = {};
  ErrorCaptureStackTrace(site, caller);
  return new PromiseCtor((resolve, reject) => {
    if (finished) {
      reject(callError(`${method}: the execution has already finished`, site));
      return;
    }
    const id = nextCallId++;
    let line;
    try {
      line = toJson({ v: PROTOCOL_VERSION, type: "call", id, method, params });
    } catch (e) {
      reject(
        callError(
          `${caller.name}: arguments must be JSON-serialisable (${safeString(e?.message ?? e)})`,
          site,
          "TypeError",
        ),
      );
      return;
    }
    const size = utf8Length(line) + 1;
    if (size > MAX_WORKER_LINE) {
      reject(
        callError(
          `${caller.name}: arguments are too large (${size} bytes of JSON, the limit is ${MAX_WORKER_LINE})`,
          site,
          "RangeError",
        ),
      );
      return;
    }
    pendingCalls.set(id, { resolve, reject, site });
    sendLine(line);
  });
}

/** An Error for a failed host call, with the user's call site as its stack. */
function callError(message, site, kind = "Error") {
  const ctor = kind === "TypeError" ? TypeError : kind === "RangeError" ? RangeError : Error;
  const err = new ctor(message);
  const siteStack = typeof site.stack === "string" ? site.stack : "";
  const nl = siteStack.indexOf("\n");
  if (nl >= 0) {
    try {
      ObjectDefineProperty(err, "stack", {
        value: `${err.name}: ${message}${siteStack.slice(nl)}`,
        writable: true,
        configurable: true,
        enumerable: false,
      });
    } catch {
      // keep V8's stack
    }
  }
  return err;
}

/** @param {any} msg */
function onReply(msg) {
  const id = msg.id;
  const entry = typeof id === "number" ? pendingCalls.get(id) : undefined;
  if (entry === undefined) {
    diag("reply for unknown call id " + safeString(id));
    return;
  }
  pendingCalls.delete(id);
  if (msg.ok === true) entry.resolve(msg.value);
  else {entry.reject(
      callError(typeof msg.error === "string" ? msg.error : safeString(msg.error ?? "call failed"), entry.site),
    );}
}

function rejectAllPending(message) {
  for (const [id, entry] of pendingCalls) {
    pendingCalls.delete(id);
    entry.reject(callError(message, entry.site));
  }
}

function isPlainArgs(v) {
  return v !== null && typeof v === "object" && !ArrayIsArray(v);
}

function optionsObject(v, fn) {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object") throw new TypeError(`${fn}: options must be an object`);
  return v;
}

/**
 * `callMCPTool(name, args?, options?)` or `callMCPTool(server, tool, args?, options?)`.
 * `options.raw: true` asks the host for the tool's untouched result.
 */
function callMCPTool(first, second, third, fourth) {
  try {
    /** @type {Record<string, unknown>} */
    let params;
    let args;
    let options;
    if (typeof second === "string") {
      if (typeof first !== "string" || first === "") {
        throw new TypeError("callMCPTool: server name must be a non-empty string");
      }
      if (second === "") throw new TypeError("callMCPTool: tool name must be a non-empty string");
      params = { server: first, tool: second };
      args = third;
      options = fourth;
    } else {
      if (typeof first !== "string" || first === "") {
        throw new TypeError("callMCPTool: expected callMCPTool(name, args) or callMCPTool(server, tool, args)");
      }
      params = { name: first };
      args = second;
      options = third;
    }
    if (args === undefined || args === null) args = {};
    if (!isPlainArgs(args)) throw new TypeError("callMCPTool: args must be an object");
    params.args = args;
    if (optionsObject(options, "callMCPTool").raw === true) params.raw = true;
    return hostCall("callTool", params, callMCPTool);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `callMCPToolRaw(name, args?)` or `callMCPToolRaw(server, tool, args?)`: the whole downstream result. */
function callMCPToolRaw(first, second, third) {
  return typeof second === "string"
    ? callMCPTool(first, second, third, { raw: true })
    : callMCPTool(first, second, { raw: true });
}

const SEARCH_DETAILS = ["name", "summary", "full"];

/** `searchTools(query, { server?, limit?, detail? }?)` */
function searchTools(query, options) {
  try {
    if (typeof query !== "string") throw new TypeError("searchTools: query must be a string");
    const opts = optionsObject(options, "searchTools");
    /** @type {Record<string, unknown>} */
    const params = { query };
    if (opts.server !== undefined && opts.server !== null) {
      if (typeof opts.server !== "string") throw new TypeError("searchTools: options.server must be a string");
      params.server = opts.server;
    }
    if (opts.limit !== undefined && opts.limit !== null) {
      if (!NumberIsSafeInteger(opts.limit) || opts.limit < 0) {
        throw new TypeError("searchTools: options.limit must be a non-negative integer");
      }
      params.limit = opts.limit;
    }
    if (opts.detail !== undefined && opts.detail !== null) {
      if (!SEARCH_DETAILS.includes(opts.detail)) {
        throw new TypeError('searchTools: options.detail must be "name", "summary" or "full"');
      }
      params.detail = opts.detail;
    }
    return hostCall("searchTools", params, searchTools);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `getToolSchema(name)` with a qualified name (`mcp__server__tool`). */
function getToolSchema(name) {
  if (typeof name !== "string") return PromiseCtor.reject(new TypeError("getToolSchema: name must be a string"));
  return hostCall("getToolSchema", { name }, getToolSchema);
}

/** `listServers()` */
function listServers() {
  return hostCall("listServers", {}, listServers);
}

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

// ---------------------------------------------------------------------------------------------
// Errors and values
// ---------------------------------------------------------------------------------------------

/** Names the plain-JavaScript function in stack traces (`cleanErrorText` maps it to `user.ts`). */
const PLAIN_JS_NAME = "user-code.js";
/** Where user code runs: its module's data: URL, or the plain-JavaScript function's name. */
const USER_LOCATION_RE = new RegExp(
  "(?:data:application/typescript;base64,[A-Za-z0-9+/=]*(?:\\.{3,}[A-Za-z0-9+/=]*)?|" +
    PLAIN_JS_NAME.replace(".", "\\.") + "(?:, <anonymous>)?)(?::(\\d+)(?::(\\d+))?)?",
  "g",
);
const RUNNER_URL_RE = /data:application\/javascript;base64,[A-Za-z0-9+\/=]*(?:\.{3,}[A-Za-z0-9+\/=]*)?/g;
/** Stack frames that are not the user's: this runner's and Deno's internal (`ext:`) ones. */
const FOREIGN_FRAME_RE = /^\s*at (?:.*[( ])?(?:data:application\/javascript;base64,|ext:)/;

/** `1 | <wrapper>` in a code frame, with the caret line below it (if any) to shift left too. */
const FRAME_LINE1_RE = new RegExp(
  "^( *)1 \\| " + WRAPPER_PREFIX.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") +
    "(.*)(?:\\n( *\\| )" + " ".repeat(WRAPPER_PREFIX.length) + ")?",
  "gm",
);

/** @type {((line: number, col: number) => [number, number]) | null} */
let currentModuleMapper = null;

/**
 * Removes colours, replaces the user module's data: URL by `user.ts` (with user line numbers),
 * and drops stack frames that belong to this runner.
 */
function cleanErrorText(text, mapper) {
  let s = stripAnsi(text);
  s = s.replace(USER_LOCATION_RE, (_m, line, col) => {
    if (line === undefined) return "user.ts";
    let l = Number(line);
    let c = col === undefined ? undefined : Number(col);
    if (mapper !== null) {
      const [ml, mc] = mapper(l, c ?? 1);
      l = ml;
      if (c !== undefined) c = mc;
    }
    return c === undefined ? `user.ts:${l}` : `user.ts:${l}:${c}`;
  });
  const lines = s.split("\n").filter((l) => !FOREIGN_FRAME_RE.test(l));
  s = lines.join("\n").replace(RUNNER_URL_RE, "runner.js");
  // The plain-JavaScript function's frames are named `eval` by V8 (its callbacks `X.eval`).
  s = s.replace(/\bat (?:async )?(?:Module\.__user__|eval) \((user\.ts[^)]*)\)/g, "at $1")
    .replace(/\.eval \((user\.ts[^)]*)\)/g, ".<anonymous> ($1)")
    .replace(/\bModule\.__user__\b/g, "<main>");
  // Code frames of parse errors: user line 1 shares its module line with the wrapper.
  return s.replace(
    FRAME_LINE1_RE,
    (_m, pad, rest, caretPad) => `${pad}1 | ${rest}` + (caretPad === undefined ? "" : `\n${caretPad}`),
  );
}

/**
 * Converts anything thrown into the protocol's error object.
 * @returns {{name: string, message: string, stack?: string}}
 */
function describeError(e, mapper) {
  if (!isErrorLike(e)) {
    let message;
    if (e !== null && (typeof e === "object" || typeof e === "function")) message = inspectValue(e);
    else message = safeString(e);
    return { name: "Error", message: cleanErrorText(message, mapper) };
  }
  let name = "Error";
  let message = "";
  let stack;
  try {
    name = safeString(e.name ?? "Error");
  } catch {
    // keep default
  }
  try {
    message = safeString(e.message ?? "");
  } catch {
    // keep default
  }
  try {
    if (typeof e.stack === "string") stack = e.stack;
  } catch {
    // no stack
  }
  // Deno reports TypeScript parse errors as TypeError("SyntaxError: ...").
  if (name === "TypeError" && message.startsWith("SyntaxError: ")) {
    name = "SyntaxError";
    message = message.slice("SyntaxError: ".length);
    if (stack !== undefined && stack.startsWith("TypeError: SyntaxError: ")) stack = stack.slice("TypeError: ".length);
  }
  message = cleanErrorText(message, mapper);
  if (stack !== undefined) {
    stack = cleanErrorText(stack, mapper);
    try {
      const cause = e.cause;
      if (cause !== undefined) {
        const c = isErrorLike(cause) ? safeString(cause.stack ?? cause) : inspectValue(cause);
        stack += "\nCaused by: " + cleanErrorText(c, mapper);
      }
    } catch {
      // ignore
    }
  }
  /** @type {{name: string, message: string, stack?: string}} */
  const out = { name, message };
  if (stack !== undefined) out.stack = stack;
  return out;
}

/**
 * JSON text for a returned value, or `undefined` when there is no value. Values JSON cannot
 * represent (BigInt, functions, symbols, cycles) become their `Deno.inspect` string.
 */
function valueToJson(v) {
  if (v === undefined) return undefined;
  let json;
  try {
    json = toJson(v);
  } catch {
    json = undefined;
  }
  if (json === undefined) json = toJson(inspectValue(v));
  return json;
}

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

function onStdinClosed() {
  if (executing && !finished) rejectAllPending("the host closed the connection");
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
    const url = "data:application/typescript;base64," + base64Utf8(linkWrappers(variant.source));
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

// ---------------------------------------------------------------------------------------------
// Typed wrapper modules (`code-executor wrappers`, docs/interface.md). The host copies the
// current modules into `wrappers/` in the worker's working directory and may only grant read
// access to that directory. TypeScript: `import * as git from "wrappers/git.ts"` (static or
// dynamic) is linked to that file's text as a data: URL. Python: the `.py` files become the
// package `wrappers` in Pyodide's in-memory file system (`from wrappers import git`).
// ---------------------------------------------------------------------------------------------

const WRAPPERS_DIR = "wrappers";
const readTextFilePrivate = typeof D.readTextFileSync === "function" ? D.readTextFileSync.bind(D) : null;
const readDirPrivate = typeof D.readDirSync === "function" ? D.readDirSync.bind(D) : null;
const WRAPPER_SPECIFIER_RE = /(\bfrom\s*|\bimport\s*\(?\s*)(["'])wrappers\/([A-Za-z_][A-Za-z0-9_]*)(?:\.ts)?\2/g;
const WRAPPER_FILE_RE = /^[A-Za-z_][A-Za-z0-9_]*\.py$/;

function wrapperText(file) {
  if (readTextFilePrivate === null) return null;
  try {
    return readTextFilePrivate(WRAPPERS_DIR + "/" + file);
  } catch {
    return null;
  }
}

/** Links `wrappers/<name>.ts` import specifiers to the staged modules. */
function linkWrappers(source) {
  if (!source.includes("wrappers/")) return source;
  return source.replace(WRAPPER_SPECIFIER_RE, (_all, lead, quote, name) => {
    let text = wrapperText(name + ".ts");
    if (text === null) {
      const msg = `no wrapper module wrappers/${name}.ts: generate it with \`code-executor wrappers\``;
      text = "throw new Error(" + JSONStringify(msg) + ");\n";
    }
    return lead + quote + "data:application/typescript;base64," + base64Utf8(text) + quote;
  });
}

/** Makes the staged `.py` modules importable as the package `wrappers`. */
function installPythonWrappers() {
  if (readDirPrivate === null || pyodide === null) return;
  const root = "/code-executor";
  const pkg = root + "/wrappers";
  try {
    pyodide.FS.mkdirTree(pkg);
    pyodide.FS.writeFile(pkg + "/__init__.py", '"""Typed wrappers generated by `code-executor wrappers`."""\n');
    for (const entry of readDirPrivate(WRAPPERS_DIR)) {
      if (!entry.isFile || !WRAPPER_FILE_RE.test(entry.name)) continue;
      const text = wrapperText(entry.name);
      if (text !== null) pyodide.FS.writeFile(pkg + "/" + entry.name, text);
    }
  } catch {
    // no staged modules: `import wrappers.x` then fails with Python's own ModuleNotFoundError
  }
  pyodide.runPython(
    `import sys, importlib\nif ${JSONStringify(root)} not in sys.path: sys.path.insert(0, ${JSONStringify(root)})\nimportlib.invalidate_caches()`,
  );
}

// ---------------------------------------------------------------------------------------------
// Python (Pyodide)
// ---------------------------------------------------------------------------------------------

/**
 * The in-sandbox Python API and the execution driver, module `sandbox` (file `<sandbox>`; its
 * frames and Pyodide's are cut from user tracebacks). Installed when the memory snapshot is
 * made (so a worker starting from it does not compile it again), or in `prepare` without one.
 * It holds no JavaScript object until `_connect` gives it `_sandbox_host.call` (`pyHostCall`
 * below) in each worker.
 */
const PY_PRELUDE = String.raw`
import builtins, json, linecache, math, re, sys, traceback, types
from collections.abc import Mapping
from pyodide.code import eval_code_async
from pyodide.ffi import JsException, JsProxy
_F = "<user code>"
_INTERNAL = re.compile(r"<sandbox>$|/lib/python[0-9.]*(?:\.zip)?/(?:_?pyodide|site-packages/_?pyodide)/")

class ToolCallError(Exception):
    "A tool call or lookup was refused or failed (the message is the host's)."
ToolCallError.__module__ = "builtins"

async def _call(method, params):
    try:
        s = json.dumps(params, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"arguments must be JSON-serialisable ({e})") from None
    try:
        r = await _host_call(method, s)
    except JsException as e:
        err = {"TypeError": TypeError, "RangeError": ValueError}.get(getattr(e, "name", ""), ToolCallError)
        raise err(getattr(e, "message", str(e))) from None
    return None if r is None else json.loads(r)

def _str(v, what, fn):
    if not isinstance(v, str) or not v:
        raise TypeError(f"{fn}: {what} must be a non-empty string")
    return v

async def call_mcp_tool(name, tool=None, args=None, *, raw=False):
    """call_mcp_tool("mcp__server__tool", args) or call_mcp_tool("server", "tool", args); raw=True: the untouched result."""
    fn = "call_mcp_tool"
    if isinstance(tool, str):
        p = {"server": _str(name, "server name", fn), "tool": _str(tool, "tool name", fn)}
    else:
        if args is not None:
            raise TypeError(f"{fn}: expected {fn}(name, args) or {fn}(server, tool, args)")
        p = {"name": _str(name, "tool name", fn)}
        args = tool
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise TypeError(f"{fn}: args must be a dict, not {type(args).__name__}")
    p["args"] = dict(args)
    if raw:
        p["raw"] = True
    return await _call("callTool", p)

async def search_tools(query, server=None, limit=None, detail=None):
    "Tools matching a query: [{name, server, description}...]; detail: 'name', 'summary' or 'full'."
    if not isinstance(query, str):
        raise TypeError("search_tools: query must be a string")
    p = {"query": query}
    if server is not None:
        p["server"] = _str(server, "server", "search_tools")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise TypeError("search_tools: limit must be a non-negative integer")
        p["limit"] = limit
    if detail is not None:
        if detail not in ("name", "summary", "full"):
            raise TypeError("search_tools: detail must be 'name', 'summary' or 'full'")
        p["detail"] = detail
    return await _call("searchTools", p)

async def get_tool_schema(name):
    "The input schema and description of a tool (qualified name mcp__server__tool)."
    return await _call("getToolSchema", {"name": _str(name, "name", "get_tool_schema")})

async def list_servers():
    "The configured MCP servers."
    return await _call("listServers", {})

API = {"call_mcp_tool": call_mcp_tool, "search_tools": search_tools, "get_tool_schema": get_tool_schema,
       "list_servers": list_servers, "ToolCallError": ToolCallError,
       "callMCPTool": call_mcp_tool, "searchTools": search_tools, "getToolSchema": get_tool_schema,
       "listServers": list_servers}

def _jsonable(v, depth=0, seen=None):
    "JSON-safe copy: dict/list/tuple/str/int/float/bool/None as such, anything else as repr."
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v) if -2**53 < v < 2**53 else str(v)
    if isinstance(v, float):
        return float(v) if math.isfinite(v) else repr(v)
    if isinstance(v, JsProxy) and depth < 100:
        try:
            w = v.to_py()
        except BaseException:
            w = v
        if not isinstance(w, JsProxy):
            return _jsonable(w, depth + 1, seen)
    if isinstance(v, (dict, list, tuple)):
        if depth >= 100:
            return f"<{type(v).__name__} nested too deeply>"
        seen = seen if seen is not None else set()
        if id(v) not in seen:
            seen.add(id(v))
            try:
                if isinstance(v, dict):
                    return {k if isinstance(k, str) else _repr(k): _jsonable(x, depth + 1, seen) for k, x in v.items()}
                return [_jsonable(x, depth + 1, seen) for x in v]
            finally:
                seen.discard(id(v))
    return _repr(v)

def _repr(v):
    try:
        return repr(v)
    except BaseException:
        return f"<{type(v).__name__} object>"

def _trim(te, seen):
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    fs = list(te.stack)
    first = next((i for i, f in enumerate(fs) if f.filename == _F), 0)
    te.stack = traceback.StackSummary.from_list([f for f in fs[first:] if not _INTERNAL.search(f.filename or "")])
    for t in (te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())):
        _trim(t, seen)

def _error(e):
    try:
        te = traceback.TracebackException.from_exception(e, limit=-300)
        _trim(te, set())
        stack = "".join(te.format()).rstrip("\n")
    except BaseException as f:
        stack = f"(traceback unavailable: {_repr(f)})"
    try:
        msg = str(e)
    except BaseException:
        msg = _repr(e)
    return {"name": type(e).__name__, "message": msg, "stack": stack}

def _flush():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass

async def run(code):
    "Runs one user program in a fresh __main__; returns the outcome as JSON."
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    g = main.__dict__
    g["__builtins__"] = builtins
    g.update(API)
    linecache.cache[_F] = (len(code), None, code.splitlines(True), _F)
    try:
        r = await eval_code_async(code, g, filename=_F)
        out = {"ok": True} if r is None else {"ok": True, "value": _jsonable(r)}
    except SystemExit as e:
        c = e.code
        if c is None or c == 0:
            out = {"ok": True}
        else:
            out = {"ok": False, "error": {"name": "SystemExit", "message": f"the code called sys.exit({_repr(c)})"}}
    except BaseException as e:
        out = {"ok": False, "error": _error(e)}
    finally:
        _flush()
    return json.dumps(out, ensure_ascii=False)

_host_call = None

def _connect(host_call):
    "Per worker: the host-call bridge, and line-buffered output through the worker's writers."
    global _host_call
    _host_call = host_call
    for s in (sys.stdout, sys.stderr):
        try:
            s.reconfigure(line_buffering=True)
        except BaseException:
            pass

# Emscripten would run these through Node APIs the worker may not use (a fatal error for Pyodide).
def _system(command):
    raise OSError(38, "processes are not available in the sandbox")
def _exit(status):
    raise SystemExit(status)
import os, posix
os.system = posix.system = _system
os._exit = posix._exit = _exit
`;

/** @type {any} the Pyodide API, once loaded */
let pyodide = null;
/** @type {((code: string) => Promise<string>) | null} the prelude's `run` */
let pyRun = null;

/** Bridge for the prelude's `_call`: params and result travel as JSON text. */
function pyHostCall(method, paramsJson) {
  let params;
  try {
    params = JSONParse(String(paramsJson));
  } catch (e) {
    return PromiseCtor.reject(e);
  }
  return hostCall(String(method), params, pyHostCall).then((v) => (v === undefined ? undefined : JSONStringify(v)));
}

/** Writes Python's stdout/stderr bytes into the output messages (UTF-8 decoded across writes). */
function pyWriter(stream) {
  const decoder = new TextDecoder();
  return {
    isatty: false,
    write(buf) {
      emitOutput(stream, decoder.decode(buf, { stream: true }));
      return buf.length;
    },
  };
}

/**
 * Loads Pyodide from the directory named by the second launch argument (`extra`: snapshot
 * options), lending it `process` while it loads.
 */
async function startPyodide(extra) {
  let dir = launchArgs[1];
  if (typeof dir !== "string" || !dir.startsWith("/")) {
    throw new Error("python: the Pyodide directory must be given as an absolute path (second argument)");
  }
  if (!dir.endsWith("/")) dir += "/";
  const url = new URL("file:///");
  url.pathname = dir + "pyodide.mjs";
  // Pyodide (and its Emscripten glue) choose their Node-compatible code paths by looking at
  // `process` while loading; user code never sees it.
  if (processPrivate !== undefined) defineGlobal("process", processPrivate);
  try {
    const { loadPyodide } = await import(url.href);
    return await loadPyodide({
      indexURL: dir,
      // `_` would otherwise name the worker's real working directory.
      env: { HOME: "/home/pyodide", _: undefined },
      _sysExecutable: "/usr/bin/python3",
      stdin: () => null,
      stdout: (s) => diag("python stdout while loading: " + s),
      stderr: (s) => diag("python stderr while loading: " + s),
      ...extra,
    });
  } finally {
    // Emscripten still reads `process` for getuid/umask/exit codes: a stand-in with nothing of the host.
    defineGlobal("process", { getuid: () => 0, umask: () => 0o022, exitCode: undefined });
  }
}

// Snapshot file: "PYSNAP01", SHA-256 of this runner's own URL (so of its source), checksum of
// the payload, zeros up to byte 80, then the payload: Pyodide's `makeMemorySnapshot()`.
const SNAPSHOT_MAGIC = "PYSNAP01";
const SNAPSHOT_HEADER = 80;
const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const oneLine = (e) => safeString(e?.message ?? e).replace(/\s+/g, " ").slice(0, 1000);

/** 64-bit checksum of a 4-aligned Uint8Array (against damage, not attacks: 3x faster than SHA-256). */
function checksum(bytes) {
  const words = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
  let a = -2128831035;
  let b = 1;
  for (let i = 0; i < words.length; i++) {
    a = Math.imul(a ^ words[i], 16777619);
    b = (Math.imul(b, 31) + words[i]) | 0;
  }
  return new Uint8Array(new Int32Array([a, b]).buffer);
}

/** The payload of snapshot file `path` if the file is whole and was made by this very runner. */
async function readSnapshot(path) {
  const file = await D.open(path);
  const size = (await file.stat()).size;
  const bytes = new Uint8Array(size); // read in place: half the cost of readFile
  for (let n = 0, at = 0; at < size; at += n) {
    if (!(n = await file.read(bytes.subarray(at)))) throw new Error("truncated while reading");
  }
  file.close();
  const payload = bytes.subarray(SNAPSHOT_HEADER);
  if (size <= SNAPSHOT_HEADER || decodeUtf8(bytes.subarray(0, 8)) !== SNAPSHOT_MAGIC) {
    throw new Error("not a snapshot file");
  }
  if (!sameBytes(bytes.subarray(8, 40), await sha256(encodeUtf8(import.meta.url)))) {
    throw new Error("made by another runner version");
  }
  if (size % 16 !== 0 || !sameBytes(bytes.subarray(40, 48), checksum(payload))) throw new Error("checksum mismatch");
  return payload;
}

/**
 * Standard-library modules imported into the snapshot (compiling them is most of a cold start:
 * the stdlib has no .pyc files). Nothing here may keep JS objects.
 */
const PY_SNAPSHOT_IMPORTS = `
import abc, argparse, array, ast, asyncio, base64, binascii, bisect, calendar, cmath, collections
import collections.abc, colorsys, contextlib, copy, csv, dataclasses, datetime, decimal, difflib
import enum, fnmatch, fractions, functools, glob, hashlib, heapq, hmac, html, inspect, io
import itertools, json, keyword, linecache, locale, logging, math, numbers, operator, os, pathlib
import pprint, queue, random, re, secrets, shlex, statistics, string, struct, sys, textwrap, time
import traceback, types, typing, unicodedata, uuid, warnings, weakref, zlib
import urllib.parse, html.parser, email.utils, xml.etree.ElementTree, tempfile, zoneinfo
import pyodide.code, pyodide.ffi
sys.path.remove("")  # loadPyodide adds it again
`;

/** Mode `snapshot DIR OUT` (trusted, at install time): writes a snapshot file to OUT. */
async function writeSnapshot() {
  try {
    const out = launchArgs[2];
    if (typeof out !== "string" || out === "") throw new Error("usage: snapshot <pyodide_dir> <out_file>");
    const py = await startPyodide({ _makeSnapshot: true });
    py.runPython(PY_SNAPSHOT_IMPORTS);
    installSandboxModule(py);
    const payload = py.makeMemorySnapshot();
    const file = new Uint8Array(SNAPSHOT_HEADER + payload.length);
    file.set(encodeUtf8(SNAPSHOT_MAGIC));
    file.set(await sha256(encodeUtf8(import.meta.url)), 8);
    file.set(checksum(payload), 40);
    file.set(payload, SNAPSHOT_HEADER);
    D.writeFileSync(out, file);
  } catch (e) {
    diag("snapshot failed: " + oneLine(e));
    exitPrivate(1);
  }
  exitPrivate(0);
}

/** Creates module `sandbox` from `PY_PRELUDE`. */
function installSandboxModule(py) {
  const ns = py.runPython("import sys, types\nm = types.ModuleType('sandbox')\nsys.modules['sandbox'] = m\nm.__dict__");
  py.runPython(PY_PRELUDE, { globals: ns, filename: "<sandbox>" });
  ns.destroy();
}

/**
 * Loads Pyodide from the directory named by the second launch argument, or from the snapshot
 * file named by the third (read-only access to both).
 */
async function preparePython() {
  const file = launchArgs[2];
  let connect = "import sandbox, _sandbox_host\nsandbox._connect(_sandbox_host.call)\nsandbox.run";
  if (file === undefined) {
    pyodide = await startPyodide({});
    installSandboxModule(pyodide);
  } else {
    // Unusable snapshot: exit code 75, the host discards the file and makes a new one.
    try {
      // Read while Pyodide's code loads.
      const snapshot = readSnapshot(file);
      snapshot.catch(() => {}); // awaited by loadPyodide
      pyodide = await startPyodide({ _loadSnapshot: snapshot });
      (await snapshot).buffer.transfer?.(0); // frees the file's bytes now, not at some later GC
      // `random` was seeded when the snapshot was made: every worker would draw the same numbers.
      connect = "import random\nrandom.seed()\n" + connect;
    } catch (e) {
      diag("snapshot unusable: " + oneLine(e));
      exitPrivate(75);
    }
  }
  pyodide.setStdout(pyWriter("stdout"));
  pyodide.setStderr(pyWriter("stderr"));
  pyodide.registerJsModule("_sandbox_host", { call: pyHostCall });
  pyRun = pyodide.runPython(connect);
  if (!warmUpWanted) return;
  // Run the execution paths once (compiling, awaiting JS promises, value and traceback
  // conversion) so their first-use costs are paid before `ready`: print(1) then takes ~15 ms, not ~45.
  await pyRun("import asyncio, js\nawait asyncio.sleep(0)\nawait js.Promise.resolve(1)\n[1, {'a': (2.5, None)}]");
  await pyRun("def f():\n    raise ValueError('x')\nf()");
}

/**
 * A Pyodide fatal error (JS stack exhausted by deep C recursion, abort, a signal...): Python is
 * gone, and the error's JS stack says nothing useful to the user.
 */
function pyCrash(e) {
  const crash = new Error(
    `the Python runtime crashed: ${safeString(e?.name ?? "Error")}: ${safeString(e?.message ?? e)}`,
  );
  crash.name = "FatalError";
  crash.stack = undefined;
  return crash;
}

/** @param {ExecContext} ctx */
async function runPython(ctx) {
  if (pyRun === null) throw new Error("python is not available: this worker was not started for python");
  let result;
  if (ctx.code.includes("wrappers")) installPythonWrappers();
  try {
    result = await pyRun(ctx.code);
  } catch (e) {
    // `run` catches every Python exception: this is a Pyodide fatal error.
    throw pyCrash(e);
  }
  const out = JSONParse(result);
  if (out.ok) return out.value;
  const { name, message, stack } = out.error;
  const err = new Error(message);
  ObjectDefineProperty(err, "name", { value: name, writable: true, configurable: true });
  ObjectDefineProperty(err, "stack", { value: stack, writable: true, configurable: true });
  throw err;
}

/** @param {any} msg */
async function execute(msg) {
  if (executeReceived) {
    diag("ignoring a second execute message");
    return;
  }
  executeReceived = true;
  executing = true;
  const limit = msg.outputLimit;
  outputLimit = typeof limit === "number" && NumberIsFinite(limit) && limit >= 0 ? limit : DEFAULT_OUTPUT_LIMIT;
  const failure = new PromiseCtor((_resolve, reject) => {
    rejectAsyncFailure = reject;
  });
  failure.catch(() => {});
  try {
    const language = msg.language;
    const runtime = typeof language === "string" && Object.hasOwn(RUNTIMES, language) ? RUNTIMES[language] : undefined;
    if (runtime === undefined) throw new Error(`unsupported language: ${safeString(language)}`);
    if (typeof msg.code !== "string") throw new TypeError("execute: code must be a string");
    const value = await PromiseCtor.race([runtime.run({ code: msg.code, message: msg }), failure]);
    // One macrotask turn so errors thrown by already-due callbacks and rejections left
    // unhandled by the final microtasks still count.
    await macrotaskTurn();
    if (asyncFailure !== null) throw asyncFailure.error;
    finishOk(value);
  } catch (e) {
    finishError(e);
  }
}

/**
 * Timers user code has set and that have neither run nor been cleared: id -> due time. Only
 * used to know whether the end of an execution must wait for a timer turn (see `macrotaskTurn`).
 * @type {Map<unknown, number>}
 */
const userTimers = new MapCtor();
/** A private channel whose messages give one event-loop turn without any timer (about 0.2 ms). */
let turnChannel = null;

/**
 * Waits one macrotask turn: long enough for unhandled rejections to be reported. When a timer
 * of the user's is already due (or due within a millisecond), waits a timer turn instead (1-2
 * ms in Deno) so that its callback runs first, and an error it throws counts.
 */
function macrotaskTurn() {
  const soon = performanceNow() + 1;
  let timerDue = turnChannel === null;
  for (const due of userTimers.values()) {
    if (due <= soon) {
      timerDue = true;
      break;
    }
  }
  if (timerDue) return new PromiseCtor((resolve) => setTimeoutPrivate(resolve, 0));
  const channel = turnChannel;
  return new PromiseCtor((resolve) => {
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(0);
  });
}

/**
 * The timer globals for user code: Deno's, plus the bookkeeping of `userTimers` (an interval
 * counts as always due until it is cleared).
 */
function makeTimerGlobals() {
  function setTimeout(callback, delay, ...args) {
    const ms = Number(delay);
    const due = performanceNow() + (ms > 0 ? ms : 0);
    if (typeof callback !== "function") {
      const other = setTimeoutPrivate(callback, delay, ...args);
      userTimers.set(other, -Infinity); // when it runs is unknown: always treated as due
      return other;
    }
    const run = function () {
      userTimers.delete(id);
      return ReflectApply(callback, this, args);
    };
    const id = setTimeoutPrivate(run, delay);
    userTimers.set(id, due);
    return id;
  }
  function setInterval(callback, delay, ...args) {
    const id = setIntervalPrivate(callback, delay, ...args);
    userTimers.set(id, -Infinity);
    return id;
  }
  // Timeouts and intervals share their ids: either function clears either kind.
  function clearTimeout(id) {
    userTimers.delete(id);
    return clearTimeoutPrivate(id);
  }
  function clearInterval(id) {
    userTimers.delete(id);
    return clearIntervalPrivate(id);
  }
  return { setTimeout, setInterval, clearTimeout, clearInterval };
}

/** @param {string} line */
function onLine(line) {
  if (line.trim() === "") return;
  let msg;
  try {
    msg = JSONParse(line);
  } catch {
    diag("ignoring a malformed line from the host");
    return;
  }
  if (msg === null || typeof msg !== "object" || msg.v !== PROTOCOL_VERSION) {
    diag("ignoring a message without v:1");
    return;
  }
  switch (msg.type) {
    case "execute":
      execute(msg);
      break;
    case "reply":
      onReply(msg);
      break;
    default:
      diag("ignoring an unknown message type " + safeString(msg.type).slice(0, 64));
  }
}

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

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

/**
 * Throwaway programs for `warmUp`, each with a last expression and a value to return: one with a
 * type annotation (the module path), one in plain JavaScript (the function path).
 */
const WARM_UP_PROGRAMS = ['const x: number = 1;\n[x, { a: "b" }]', 'const y = 1;\n[y, { a: "b" }]'];

/**
 * Pays the one-time costs of a TypeScript execution before `ready`, so they do not count
 * against the first (and only) real one: compiling this runner's source preparation and result
 * functions, the TypeScript loader's first use, console formatting, the timer and message
 * machinery (about 5-10 ms on a quiet machine). Nothing is printed or sent.
 */
async function warmUp() {
  try {
    for (const code of WARM_UP_PROGRAMS) valueToJson(await runTypeScript({ code, message: {} }));
    formatArgs(["%s", 1, { a: [1, "b"] }]);
    describeError(new Error("warm-up"), currentModuleMapper);
  } catch {
    // not fatal: the real execution reports any problem
  }
  currentModuleMapper = null;
  await new PromiseCtor((resolve) => setTimeoutPrivate(resolve, 0));
  await macrotaskTurn();
}

async function main() {
  const mode = launchArgs.length > 0 ? launchArgs[0] : "typescript";
  if (mode !== "typescript") processPrivate = globalThis.process;
  if (mode === "snapshot") {
    installEnvironment();
    return await writeSnapshot();
  }
  const runtime = typeof mode === "string" && Object.hasOwn(RUNTIMES, mode) ? RUNTIMES[mode] : undefined;
  if (runtime === undefined) throw new Error(`unknown worker mode ${safeString(mode).slice(0, 64)}`);
  installEnvironment();
  if (typeof MessageChannelCtor === "function") turnChannel = new MessageChannelCtor();
  if (runtime.prepare) await runtime.prepare();
  if (mode === "typescript" && warmUpWanted) await warmUp();
  const reading = readLines(onLine);
  send({ type: "ready" });
  await reading;
}

main().catch((e) => {
  diag("runner failed: " + safeString(e?.stack ?? e));
  exitPrivate(70);
});
