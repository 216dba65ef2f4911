// 61_snapshot_file.js: the Pyodide memory snapshot file: its format, reading and verifying it
// (`readSnapshot`), and the `snapshot` mode that writes it (`writeSnapshot`), reproducibly
// (`makeRunReproducible`). Relies on 00-02,
// `startPyodide` (60); calls `installSandboxModule` (62).

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

/** Where the snapshot run's clock starts (2020-01-01T00:00:00Z): see `makeRunReproducible`. */
const SNAPSHOT_CLOCK_START_MS = 1577836800000;

/**
 * Makes the snapshot a function of its inputs only, so that the image holding it is
 * reproducible. A Pyodide heap records what it drew from outside while it started and imported
 * the modules: random bytes (CPython's hash secret, the `random` module's state, its allocator's
 * cookies; Emscripten takes them from `node:crypto`, or `crypto` outside Node mode) and the
 * clock (file times of its in-memory filesystem, `time.time()` at import). For this one trusted
 * run both come from fixed sources: a xorshift stream from a constant seed, and clocks that
 * start at a fixed instant and advance by one millisecond per reading. Nothing in a snapshot
 * was ever secret: every worker starts from the same one, and it lies readable in the image;
 * what must differ per worker is drawn afresh after loading (`random.seed()`, see
 * `preparePython`; `os.urandom` and `secrets` read the real source then).
 */
function makeRunReproducible() {
  let state = 0x2545f491;
  const fill = (view) => {
    const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
    for (let i = 0; i < bytes.length; i++) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      bytes[i] = state & 0xff;
    }
    return view;
  };
  globalThis.crypto.getRandomValues = fill;
  processPrivate.getBuiltinModule("node:crypto").randomFillSync = fill;
  let wallClock = SNAPSHOT_CLOCK_START_MS;
  let monotonic = 0;
  Date.now = () => (wallClock += 1);
  performance.now = () => (monotonic += 1);
}

/** Mode `snapshot DIR OUT` (trusted, at install time): writes a snapshot file to OUT. */
async function writeSnapshot() {
  try {
    const out = launchArgs[2];
    if (typeof out !== "string" || out === "") throw new Error("usage: snapshot <pyodide_dir> <out_file>");
    makeRunReproducible();
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
