// 61_snapshot_file.js: the Pyodide memory snapshot: loading it straight into an instance's memory
// (`snapshotLoader`), and the `snapshot` mode that makes it (`makeSnapshot`), reproducibly
// (`makeRunReproducible`).
// Relies on 00-02, `startPyodide` (60); calls `installSandboxModule` (62).

// Snapshot file: "PYSNAP03", SHA-256 of the supervisor's own URL (so of the whole runner), the
// payload's length (u64, little-endian) at byte 40, zeros up to byte 80, then the payload (Pyodide's
// `makeMemorySnapshot()`), then the page table: the runs of the heap image's pages that are not all
// zeros, as [start, end) byte offsets into the image (u32 pairs, little-endian). The host hashes the
// file once and the supervisor checks its header when its process starts (see 30_python.js); the
// supervisor writes it in `snapshot` mode; an isolate reads the payload's head and the runs.
const SNAPSHOT_HEADER = 80;
/** The kernel's page: a page of the memory never written is never resident. */
const IMAGE_PAGE = 4096;
const oneLine = (e) => safeString(e?.message ?? e).replace(/\s+/g, " ").slice(0, 1000);

/** Fills `bytes` from `file`'s position on. */
function readFully(file, bytes) {
  for (let n = 0, at = 0; at < bytes.length; at += n) {
    if (!(n = file.readSync(bytes.subarray(at)))) throw new Error("truncated while reading");
  }
}

/**
 * The runs of `image`'s pages that hold anything but zeros: [start, end) byte pairs, ascending.
 * About 14 of the heap image's 30 MB are zero pages; a lane reads only the runs, so its memory
 * there is never written and never resident (see `restoreImage`).
 */
function nonZeroRuns(image) {
  const runs = [];
  let start = -1;
  for (let a = 0; a < image.length; a += IMAGE_PAGE) {
    const zero = allZero(image, a, Math.min(a + IMAGE_PAGE, image.length));
    if (!zero && start < 0) start = a;
    if (zero && start >= 0) {
      runs.push(start, a);
      start = -1;
    }
  }
  if (start >= 0) runs.push(start, image.length);
  return new Uint32Array(runs);
}

/** Throws unless `runs` are ascending, disjoint, page-aligned runs within an image of `length` bytes. */
function checkRuns(runs, length) {
  let last = 0;
  for (let i = 0; i < runs.length; i += 2) {
    const start = runs[i], end = runs[i + 1];
    if (!(start >= last && start % IMAGE_PAGE === 0 && end > start && end <= length)) {
      throw new Error("the snapshot's page table is malformed");
    }
    last = end;
  }
}

/** Whether `bytes[from, to)` are all zeros (read by words where they are aligned). */
function allZero(bytes, from, to) {
  const wordsFrom = Math.min(to, from + ((4 - ((bytes.byteOffset + from) % 4)) % 4));
  const words = Math.floor((to - wordsFrom) / 4);
  for (let i = from; i < wordsFrom; i++) if (bytes[i] !== 0) return false;
  const view = new Int32Array(bytes.buffer, bytes.byteOffset + wordsFrom, words);
  for (let i = 0; i < words; i++) if (view[i] !== 0) return false;
  for (let i = wordsFrom + words * 4; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

/**
 * Makes `memory` (the instance's memory, as long as the image) hold the heap image: its runs
 * (checked by `checkRuns`) read with `readAt(offset in the image, bytes)`, and between them
 * zeros: a page of the memory already zero (never written: reading it keeps it so) is left as it
 * is, any other is zeroed.
 */
function restoreImage(memory, runs, readAt) {
  let at = 0;
  for (let i = 0; i <= runs.length; i += 2) {
    const gapEnd = i < runs.length ? runs[i] : memory.length;
    // (Looked at page by page only when the gap is not all zeros already, as it usually is.)
    if (!allZero(memory, at, gapEnd)) {
      for (let a = at; a < gapEnd; a += IMAGE_PAGE) {
        const b = Math.min(a + IMAGE_PAGE, gapEnd);
        if (!allZero(memory, a, b)) memory.fill(0, a, b);
      }
    }
    if (i === runs.length) break;
    readAt(runs[i], memory.subarray(runs[i], runs[i + 1]));
    at = runs[i + 1];
  }
}

/**
 * Loads the (verified) snapshot file at `path` into the instance's memory without a 30 MB copy
 * in between, and without writing its zero pages. Pyodide's payload is its own header and
 * metadata, then the heap image; Pyodide takes the memory's size from the length of what it is
 * given (`placeholder`: as long as the payload, never written, so never in memory) and copies the
 * heap image into its memory in `API.restoreSnapshot`. `hook(module)` makes that function check
 * the header and metadata as before (given only them) and then restore the heap image from the
 * file straight into the memory (`restoreImage`).
 */
function snapshotLoader(path) {
  let size, head, runs;
  const file = D.openSync(path);
  try {
    const header = new Uint8Array(SNAPSHOT_HEADER);
    readFully(file, header);
    size = Number(new DataView(header.buffer).getBigUint64(40, true));
    const tableBytes = file.statSync().size - SNAPSHOT_HEADER - size;
    if (!(size > 16 && tableBytes >= 0 && tableBytes % 8 === 0)) throw new Error("not a snapshot file");
    const first = new Uint8Array(16);
    readFully(file, first);
    // Pyodide's payload header: magic, where the heap image starts, the metadata's length.
    const heapAt = new DataView(first.buffer).getUint32(4, true);
    if (!(heapAt >= 16 && heapAt < size)) throw new Error("not a Pyodide snapshot");
    head = new Uint8Array(heapAt);
    head.set(first);
    readFully(file, head.subarray(16));
    const table = new Uint8Array(tableBytes);
    file.seekSync(SNAPSHOT_HEADER + size, D.SeekMode.Start);
    readFully(file, table);
    const view = new DataView(table.buffer);
    runs = new Uint32Array(tableBytes / 4);
    for (let i = 0; i < runs.length; i++) runs[i] = view.getUint32(i * 4, true);
    checkRuns(runs, size - heapAt);
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
        const imageAt = SNAPSHOT_HEADER + head.length;
        restoreImage(new Uint8Array(module.HEAPU8.buffer, 0, size - head.length), runs, (at, bytes) => {
          image.seekSync(imageAt + at, D.SeekMode.Start);
          readFully(image, bytes);
        });
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
  const heapAt = new DataView(payload.buffer, payload.byteOffset).getUint32(4, true);
  const runs = nonZeroRuns(payload.subarray(heapAt));
  postToSupervisor({ snapshot: payload, runs }, [payload.buffer, runs.buffer]);
}
