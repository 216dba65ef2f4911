// 61_snapshot_file.js: the Pyodide memory snapshot: loading it straight into an instance's memory
// (`snapshotLoader`), and the `snapshot` mode that makes it (`makeSnapshot`), reproducibly
// (`makeRunReproducible`).
// Relies on 00-02, `startPyodide` (60); calls `installSandboxModule` (62).

// Snapshot file: "PYSNAP02", SHA-256 of the supervisor's own URL (so of the whole runner), zeros
// up to byte 80, then the payload: Pyodide's `makeMemorySnapshot()`. The host hashes the file
// once and the supervisor checks its header when its process starts (see 30_python.js); the
// supervisor writes it in `snapshot` mode; an isolate reads only the payload.
const SNAPSHOT_HEADER = 80;
const oneLine = (e) => safeString(e?.message ?? e).replace(/\s+/g, " ").slice(0, 1000);

/** Fills `bytes` from `file`'s position on. */
function readFully(file, bytes) {
  for (let n = 0, at = 0; at < bytes.length; at += n) {
    if (!(n = file.readSync(bytes.subarray(at)))) throw new Error("truncated while reading");
  }
}

/**
 * Loads the (verified) snapshot file at `path` into the instance's memory without a 30 MB copy
 * in between. Pyodide's payload is its own header and metadata, then the heap image; Pyodide
 * takes the memory's size from the length of what it is given (`placeholder`: as long as the
 * payload, never written, so never in memory) and copies the heap image into its memory in
 * `API.restoreSnapshot`. `hook(module)` makes that function check the header and metadata as
 * before (given only them) and then read the heap image from the file straight into the memory.
 */
function snapshotLoader(path) {
  let size, head;
  const file = D.openSync(path);
  try {
    size = file.statSync().size - SNAPSHOT_HEADER;
    if (!(size > 16)) throw new Error("not a snapshot file");
    file.seekSync(SNAPSHOT_HEADER, D.SeekMode.Start);
    const first = new Uint8Array(16);
    readFully(file, first);
    // Pyodide's payload header: magic, where the heap image starts, the metadata's length.
    const heapAt = new DataView(first.buffer).getUint32(4, true);
    if (!(heapAt >= 16 && heapAt < size)) throw new Error("not a Pyodide snapshot");
    head = new Uint8Array(heapAt);
    head.set(first);
    readFully(file, head.subarray(16));
  } finally {
    file.close();
  }
  const placeholder = new Uint8Array(size);
  const hook = (module) => {
    const restore = module.API.restoreSnapshot;
    module.API.restoreSnapshot = function (snapshot) {
      if (snapshot !== placeholder) return ReflectApply(restore, this, [snapshot]);
      const metadata = ReflectApply(restore, this, [head]);
      const image = D.openSync(path);
      try {
        image.seekSync(SNAPSHOT_HEADER + head.length, D.SeekMode.Start);
        readFully(image, new Uint8Array(module.HEAPU8.buffer, 0, size - head.length));
      } finally {
        image.close();
      }
      return metadata;
    };
  };
  return { placeholder, hook };
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
