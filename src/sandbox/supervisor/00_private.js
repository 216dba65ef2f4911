// The supervisor: the main module of every jailed worker process of the sandbox (the process
// src/sandbox/launch.rs starts, one per client session and language, serving many executions).
//
// It never runs user code. It runs on two threads:
// - the main thread starts execution isolates (Deno Web Workers: each a fresh V8 isolate, prepared
//   before an execution arrives; a TypeScript one is used for one execution and then terminated, a
//   Python one is a lane, serving executions one after another behind its verified reset until it
//   retires) and terminates them.
//   Starting a Worker blocks the thread that starts it until the isolate exists (about 15 ms), and
//   a Worker started by a Worker takes a second more to start, so this thread does nothing else.
// - the router (a Worker the main thread starts first) holds the process's one connection to the
//   host (a Unix socket the host listens on; its path, and every permission reaching it, are given
//   up as soon as it is connected, and by the main thread before any isolate exists, so no isolate
//   can reach the host but through the router), keeps the stock of ready isolates, and routes the
//   host's messages to the isolate of their execution (over a MessageChannel port each isolate
//   gets at its start) and the isolates' messages to the host, tagged with their execution's id.
// Everything an isolate sends is treated as hostile: only strings, within the line cap, forwarded
// as opaque text (the host parses them), with a cap on what may wait to be written. The protocol
// is docs/worker-protocol.md.
//
// Its standard input carries the isolate runner's source (src/sandbox/runner/), then ends: the
// main thread reads it before anything else (`readIsolateSource`). Launch arguments (`Deno.args`):
//   typescript SOCKET STOCK MAX LANES FOR            serve TypeScript executions
//   python SOCKET STOCK MAX LANES FOR DIR [SNAPSHOT] serve Python executions (DIR: the Pyodide
//                                                    distribution; SNAPSHOT: its verified memory
//                                                    snapshot, exit code 75 when it is unusable)
//   snapshot DIR OUT                                 (trusted, at install time) write the snapshot
// STOCK is how many lanes to keep ready (isolates that serve executions one after another), MAX
// the most isolates the process may hold at once, its main thread's and the router's included
// (ended ones still being torn down too), LANES the most lanes it holds at once (executions
// beyond them wait for one), FOR `awaited` when an execution waits for the process to start
// (`ahead` otherwise): a Python process's first lane then serves it without taking a baseline,
// and ends after it (see `singleUseNext` in 20).
//
// Layout: the numbered plain scripts of src/sandbox/supervisor/ joined in name order into one
// module (src/sandbox/runner.rs), run as one data: URL. Keep it free of static imports.
// 00_private.js: private references, the launch arguments, `diag`, reading the isolate runner.
// Relies on nothing.

const D = globalThis.Deno;
const JSONStringify = JSON.stringify;
const JSONParse = JSON.parse;
const encodeUtf8 = TextEncoder.prototype.encode.bind(new TextEncoder());
const decodeUtf8 = TextDecoder.prototype.decode.bind(new TextDecoder());
const stderrWriteSync = D.stderr.writeSync.bind(D.stderr);
const launchArgs = [...D.args];
/** Whether this is the router (see above), not the main thread. */
const inRouter = typeof globalThis.WorkerGlobalScope === "function" && globalThis.name === "router";

/** Best-effort diagnostics on stderr (read by the host for diagnosis only). */
function diag(text) {
  try {
    const bytes = encodeUtf8(`supervisor${inRouter ? " (router)" : ""}: ${text}\n`);
    for (let offset = 0; offset < bytes.length;) {
      const n = stderrWriteSync(bytes.subarray(offset));
      if (!(n > 0)) break;
      offset += n;
    }
  } catch {
    // ignore
  }
}

/** `String(v)` that never throws. */
function safeString(v) {
  try {
    return String(v);
  } catch {
    return "[unprintable value]";
  }
}

const oneLine = (e) => safeString(e?.message ?? e).replace(/\s+/g, " ").slice(0, 1000);

/** The isolate runner's source, read from standard input by `readIsolateSource`. */
let isolateSource = "";

/** Reads standard input to its end: the isolate runner's source. */
async function readIsolateSource() {
  const chunks = [];
  for await (const chunk of D.stdin.readable) chunks.push(chunk);
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  isolateSource = decodeUtf8(bytes);
  if (isolateSource === "") throw new Error("no isolate runner on standard input");
}
