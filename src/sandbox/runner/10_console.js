// 10_console.js: output capture: the output budget and `output` messages (`emitOutput`),
// console formatting and the user-facing `console` (`makeConsole`). Relies on 00-02; reads the
// execution state of 50 and `pyodide` (60), and calls `cleanErrorText` (40) and
// `sandboxLimitsText` (41).

// ---------------------------------------------------------------------------------------------
// Output capture (console) with the output budget
// ---------------------------------------------------------------------------------------------

let outputLimit = DEFAULT_OUTPUT_LIMIT;
let outputSent = 0;
let outputClosed = false;
/** Once the output is closed: its newest text, what stream that came from and the bytes not sent. */
let outputTail = "";
let outputTailStream = "stdout";
let outputUnsent = 0;
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
  if (finished || text.length === 0) return;
  if (outputClosed) {
    keepTail(stream, text);
    return;
  }
  text = sandboxLimitsText(text, pyodide !== null);
  const remaining = outputLimit - outputSent;
  let bytes = utf8Length(text);
  if (bytes > remaining) {
    const sent = truncateUtf8(text, Math.max(0, remaining) + OUTPUT_OVERSHOOT);
    keepTail(stream, text.slice(sent.length));
    text = sent;
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

/** Keeps the newest `OUTPUT_TAIL_CHARS` of output the budget closed, counting what it drops. */
function keepTail(stream, text) {
  if (text.length === 0) return;
  outputUnsent += utf8Length(text);
  outputTailStream = stream;
  outputTail = outputTail.length + text.length <= OUTPUT_TAIL_CHARS
    ? outputTail + text
    : (outputTail + text.slice(-OUTPUT_TAIL_CHARS)).slice(-OUTPUT_TAIL_CHARS);
  // Never begin with the second half of a surrogate pair.
  const first = outputTail.charCodeAt(0);
  if (first >= 0xdc00 && first <= 0xdfff) outputTail = outputTail.slice(1);
}

/**
 * Sends the kept tail of closed output (once, before `done`): `skipped` is the bytes between
 * what was sent and the tail.
 */
function flushOutputTail() {
  if (!outputClosed || outputUnsent === 0) return;
  const skipped = outputUnsent - utf8Length(outputTail);
  const text = sandboxLimitsText(outputTail, pyodide !== null);
  outputTail = "";
  outputUnsent = 0;
  send({ type: "output_tail", stream: outputTailStream, text, skipped });
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

/**
 * Primitives as Deno's console prints them (strings as they are), or null for anything else.
 * Deno's formatter is far more than most output needs, and the first use of it in a fresh isolate
 * costs about 4 ms: text and numbers skip it.
 */
function formatPrimitive(v) {
  switch (typeof v) {
    case "string":
      return v;
    case "number":
      return Object.is(v, -0) ? "-0" : String(v);
    case "boolean":
    case "undefined":
      return String(v);
    case "bigint":
      return String(v) + "n";
    default:
      return v === null ? "null" : null;
  }
}

/** Formats console arguments like Deno: strings as is, other values inspected, joined by spaces. */
function formatArgs(args) {
  // Without format specifiers (`%s`, `%o`, ...), primitives need no formatter.
  if (args.length > 0 && !(typeof args[0] === "string" && args[0].includes("%"))) {
    let out = "";
    for (let i = 0; i < args.length; i++) {
      const text = formatPrimitive(args[i]);
      if (text === null) {
        out = null;
        break;
      }
      out += i > 0 ? " " + text : text;
    }
    if (out !== null) return out;
  }
  if (inspectArgs !== null) {
    try {
      return inspectArgs(args, { ...INSPECT_OPTIONS, customInspect: inspectCustom });
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
    const opts = { ...INSPECT_OPTIONS, ...options, colors: false };
    // A value of a context is formatted without its custom inspect hooks, whatever `options` say (51).
    if (!inspectCustom) opts.customInspect = false;
    return inspect(v, opts);
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
          // Deno's table formats cells with their custom inspect hooks: a context's data is copied first (51).
          if (!inspectCustom) {
            data = JSONParse(JSONStringify(data));
            if (properties !== undefined) properties = JSONParse(JSONStringify(properties));
          }
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
