// 10_host.js (router): the connection to the host: connecting and giving up every way to reach
// it again (`connectToHost`), writing envelopes in order (`toHost`, with the bytes each isolate
// has waiting), reading the host's lines (`readHostLines`). Relies on 00; `exitProcess`,
// `giveUpHostAccess`, `toMain` (40).

/** The longest line the host sends (an execute envelope carries the code, escaped). */
const MAX_HOST_LINE = 64 * 1024 * 1024;
/** The longest envelope the host accepts (src/sandbox/proto.rs `MAX_PROCESS_LINE`). */
const MAX_ENVELOPE = 12 * 1024 * 1024 + 64 * 1024;

/** @type {Deno.UnixConn | null} */
let hostConn = null;
/** Envelopes waiting to be written, each with the isolate it came from (or null). */
const outbox = [];
let writing = false;

/**
 * Connects to the host's socket, then gives up the permissions that reached it (the path is
 * also removed by the host once it has accepted this connection). Isolates started afterwards
 * inherit what is left: nothing, or read access to the Pyodide distribution and the wrappers.
 */
async function connectToHost(path) {
  hostConn = await D.connect({ transport: "unix", path });
  giveUpHostAccess(path);
  toMain({ connected: true });
}

/**
 * Queues one envelope (an object) for the host. `from`, the isolate whose line it carries, is
 * charged its bytes until they are written (see `FLOOD_BYTES`). False (nothing queued) for an
 * envelope over the host's cap.
 */
function toHost(envelope, from = null) {
  const bytes = encodeUtf8(JSONStringify(envelope) + "\n");
  if (bytes.length > MAX_ENVELOPE) return false;
  if (from !== null) from.unwritten += bytes.length;
  outbox.push({ bytes, from });
  if (!writing) writeOutbox();
  return true;
}

/** Writes queued envelopes in order, several per write when they pile up. */
async function writeOutbox() {
  writing = true;
  try {
    while (outbox.length > 0) {
      const batch = outbox.splice(0, 64);
      let bytes = batch[0].bytes;
      if (batch.length > 1) {
        bytes = new Uint8Array(batch.reduce((n, b) => n + b.bytes.length, 0));
        let at = 0;
        for (const b of batch) {
          bytes.set(b.bytes, at);
          at += b.bytes.length;
        }
      }
      for (let at = 0; at < bytes.length;) at += await hostConn.write(bytes.subarray(at));
      for (const b of batch) if (b.from !== null) b.from.unwritten -= b.bytes.length;
    }
  } catch (e) {
    diag("cannot write to the host: " + oneLine(e));
    exitProcess(70);
  } finally {
    writing = false;
  }
}

/**
 * Calls `onLine` for every line the host sends; exits when the host closes the connection
 * (nothing can run without it).
 * @param {(line: string) => void} onLine
 */
async function readHostLines(onLine) {
  const buf = new Uint8Array(256 * 1024);
  let parts = [];
  let partsLength = 0;
  for (;;) {
    let n;
    try {
      n = await hostConn.read(buf);
    } catch (e) {
      diag("cannot read from the host: " + oneLine(e));
      n = null;
    }
    if (n === null) return exitProcess(0);
    let start = 0;
    while (start < n) {
      const nl = buf.subarray(start, n).indexOf(10);
      if (nl < 0) {
        parts.push(buf.slice(start, n));
        partsLength += n - start;
        if (partsLength > MAX_HOST_LINE) {
          diag("the host sent a line over the cap");
          return exitProcess(70);
        }
        break;
      }
      let line = buf.subarray(start, start + nl);
      if (parts.length > 0) {
        const joined = new Uint8Array(partsLength + line.length);
        let at = 0;
        for (const p of parts) {
          joined.set(p, at);
          at += p.length;
        }
        joined.set(line, at);
        line = joined;
        parts = [];
        partsLength = 0;
      }
      start += nl + 1;
      try {
        onLine(decodeUtf8(line));
      } catch (e) {
        diag("failed to handle a host message: " + safeString(e?.stack ?? e));
      }
    }
  }
}
