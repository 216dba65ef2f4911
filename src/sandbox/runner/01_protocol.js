// 01_protocol.js: protocol I/O: the protocol constants and limits, posting message lines to the
// supervisor (`send`, `sendLine`, `toJson`), `diag` on stderr, receiving the supervisor's lines
// (`listen`, `stopReading`). Relies on 00; calls `safeString` (02).

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
/**
 * Past `outputLimit`, the newest output kept (UTF-16 units) and sent once as `output_tail` when
 * the execution ends, so that the reply can show how the output ended as well as how it began.
 */
const OUTPUT_TAIL_CHARS = 16 * 1024;

/**
 * Sends one already-serialised message line (without the trailing newline) to the supervisor,
 * which forwards it to the host tagged with this isolate's execution.
 */
function sendLine(line) {
  postToSupervisor(line);
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

let stopReadingRequested = false;

/** Stops handling the supervisor's lines (after `done`); the supervisor terminates the isolate. */
function stopReading() {
  stopReadingRequested = true;
}

/**
 * Calls `onLine` for every line the supervisor posts on the port (host messages for this
 * isolate, as strings).
 * @param {(line: string) => void} onLine
 */
function listen(onLine) {
  supervisorPort.onmessage = (event) => {
    const line = event.data;
    if (stopReadingRequested || typeof line !== "string") return;
    try {
      onLine(line);
    } catch (e) {
      diag("failed to handle a host message: " + safeString(e?.stack ?? e));
    }
  };
}
