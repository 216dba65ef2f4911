// 01_protocol.js: protocol I/O: the protocol constants and limits, writing message lines to
// stdout (`send`, `sendLine`, `toJson`), `diag` on stderr, reading host lines from stdin
// (`readLines`, `stopReading`). Relies on 00; calls `safeString` (02), `onStdinClosed` (50).

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
