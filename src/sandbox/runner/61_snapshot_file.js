// 61_snapshot_file.js: the Pyodide memory snapshot: reading its payload (`readSnapshotPayload`),
// and the `snapshot` mode that makes it (`makeSnapshot`), reproducibly (`makeRunReproducible`).
// Relies on 00-02, `startPyodide` (60); calls `installSandboxModule` (62).

// Snapshot file: "PYSNAP02", SHA-256 of the supervisor's own URL (so of the whole runner), zeros
// up to byte 80, then the payload: Pyodide's `makeMemorySnapshot()`. The host hashes the file
// once and the supervisor checks its header when its process starts (see 30_python.js); the
// supervisor writes it in `snapshot` mode; an isolate reads only the payload.
const SNAPSHOT_HEADER = 80;
const oneLine = (e) => safeString(e?.message ?? e).replace(/\s+/g, " ").slice(0, 1000);

/** The payload of the (verified) snapshot file at `path`, read in place. */
async function readSnapshotPayload(path) {
  const file = await D.open(path);
  try {
    const size = (await file.stat()).size - SNAPSHOT_HEADER;
    if (!(size > 0)) throw new Error("not a snapshot file");
    await file.seek(SNAPSHOT_HEADER, D.SeekMode.Start);
    const bytes = new Uint8Array(size);
    for (let n = 0, at = 0; at < size; at += n) {
      if (!(n = await file.read(bytes.subarray(at)))) throw new Error("truncated while reading");
    }
    return bytes;
  } finally {
    file.close();
  }
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
  let wallClock = SNAPSHOT_CLOCK_START_MS;
  let monotonic = 0;
  Date.now = () => (wallClock += 1);
  performance.now = () => (monotonic += 1);
}

/**
 * Mode `snapshot` (trusted, at install time, no user code): loads Pyodide fresh, imports the
 * modules, installs module `sandbox`, and hands the memory snapshot to the supervisor, which
 * writes the file.
 */
async function makeSnapshot() {
  makeRunReproducible();
  const py = await startPyodide({ _makeSnapshot: true });
  py.runPython(PY_SNAPSHOT_IMPORTS);
  installSandboxModule(py);
  // Everything so far is frozen in the snapshot (the freeze survives it): the lane's baseline
  // then collects and freezes only what came after (30 ms less on a session's first execution).
  py.runPython("import gc\ngc.collect()\ngc.freeze()");
  const payload = py.makeMemorySnapshot();
  postToSupervisor({ snapshot: payload }, [payload.buffer]);
}
