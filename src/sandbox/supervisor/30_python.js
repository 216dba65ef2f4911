// 30_python.js (main thread): what the isolates of a Python process start Pyodide from, prepared
// once per process (`preparePyodide`): the compiled WebAssembly module (its code shared by every
// isolate), the Emscripten module's source made evaluable as a script, the lock file, and the
// verified snapshot file (`verifySnapshot`); and the `snapshot` mode that writes that file
// (`writeSnapshot`). Relies on 00; `BOOT_URL`, `runnerFunction` (40) for the snapshot isolate.

// Snapshot file: "PYSNAP01", SHA-256 of the whole runner (this module's own URL and the isolate
// runner's source: a runner that changed cannot load an old snapshot), a checksum of the
// payload, zeros up to byte 80, then the payload: Pyodide's `makeMemorySnapshot()`.
const SNAPSHOT_MAGIC = "PYSNAP01";
const SNAPSHOT_HEADER = 80;
const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const runnerDigest = () => sha256(encodeUtf8(import.meta.url + "\n" + isolateSource));

/**
 * 64-bit checksum of 4-aligned bytes, fed in pieces (against damage, not attacks: 3x faster
 * than SHA-256).
 */
class Checksum {
  a = -2128831035;
  b = 1;
  /** @param {Uint8Array} bytes a multiple of 4 long */
  update(bytes) {
    const words = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
    let { a, b } = this;
    for (let i = 0; i < words.length; i++) {
      a = Math.imul(a ^ words[i], 16777619);
      b = (Math.imul(b, 31) + words[i]) | 0;
    }
    this.a = a;
    this.b = b;
    return this;
  }
  digest() {
    return new Uint8Array(new Int32Array([this.a, this.b]).buffer);
  }
}

/** Fills `buffer` from `file`'s position on, or up to its end; how many bytes were read. */
async function readUpTo(file, buffer) {
  let at = 0;
  for (let n; at < buffer.length && (n = await file.read(buffer.subarray(at))) !== null; at += n);
  return at;
}

/**
 * Throws unless the file at `path` is a whole snapshot made by this very runner. It is read a
 * mebibyte at a time: a whole copy (30 MB) would stay in the process until some collection.
 */
async function verifySnapshot(path) {
  const file = await D.open(path);
  try {
    const header = new Uint8Array(SNAPSHOT_HEADER);
    if ((await readUpTo(file, header)) < SNAPSHOT_HEADER || decodeUtf8(header.subarray(0, 8)) !== SNAPSHOT_MAGIC) {
      throw new Error("not a snapshot file");
    }
    if (!sameBytes(header.subarray(8, 40), await runnerDigest())) {
      throw new Error("made by another runner version");
    }
    const sum = new Checksum();
    const chunk = new Uint8Array(1 << 20);
    let payload = 0;
    for (let n; (n = await readUpTo(file, chunk)) > 0; payload += n) {
      if (n % 16 !== 0) throw new Error("checksum mismatch");
      sum.update(chunk.subarray(0, n));
    }
    if (payload === 0) throw new Error("not a snapshot file");
    if (!sameBytes(header.subarray(40, 48), sum.digest())) throw new Error("checksum mismatch");
  } finally {
    file.close();
  }
}

/** The Pyodide distribution's directory, absolute, with a trailing slash. */
function pyodideDir(arg) {
  if (typeof arg !== "string" || !arg.startsWith("/")) {
    throw new Error("python: the Pyodide directory must be given as an absolute path");
  }
  return arg.endsWith("/") ? arg : arg + "/";
}

/**
 * The Emscripten module (`pyodide.asm.mjs`, an ES module whose one export is its factory) as a
 * script that evaluates to the factory: every isolate evaluates it without the module loader.
 */
function emscriptenScript(dir, text) {
  const exported = "export default _createPyodideModule;";
  if (text.split(exported).length !== 2) throw new Error("pyodide.asm.mjs: unexpected layout (its export)");
  const url = new URL("file:///");
  url.pathname = dir + "pyodide.asm.mjs";
  const script = text.replace(exported, "").replaceAll("import.meta.url", JSONStringify(url.href));
  if (/\bimport\.meta\b|^\s*(?:import|export)\s/m.test(script)) {
    throw new Error("pyodide.asm.mjs: unexpected layout (module syntax left)");
  }
  return "(() => {\n" + script + "\nreturn _createPyodideModule;\n})()\n//# sourceURL=" + url.href + "\n";
}

/**
 * Everything isolates need to start Pyodide, read once per process; `snapshot`, when given, is
 * verified meanwhile (exit code 75 when unusable: the host then makes a new one).
 */
async function preparePyodide(dirArg, snapshot) {
  const dir = pyodideDir(dirArg);
  // The snapshot is checked while the WebAssembly module compiles (each takes tens of ms).
  const verified = snapshot === undefined ? Promise.resolve() : verifySnapshot(snapshot).catch((e) => {
    diag("snapshot unusable: " + oneLine(e));
    D.exit(75);
  });
  const [module, text, lock] = await Promise.all([
    D.readFile(dir + "pyodide.asm.wasm").then((bytes) => WebAssembly.compile(bytes)),
    D.readTextFile(dir + "pyodide.asm.mjs"),
    D.readTextFile(dir + "pyodide-lock.json").then(JSONParse),
    verified,
  ]);
  return { dir, module, emscriptenSource: emscriptenScript(dir, text), lock, snapshot };
}

/**
 * Mode `snapshot DIR OUT` (trusted, at install time, no user code): one isolate loads Pyodide
 * fresh and hands back its memory snapshot, written here to OUT with its header.
 */
async function writeSnapshot() {
  const out = launchArgs[2];
  if (typeof out !== "string" || out === "") throw new Error("usage: snapshot <pyodide_dir> <out_file>");
  const pyodide = await preparePyodide(launchArgs[1], undefined);
  const payload = await new Promise((resolve, reject) => {
    const worker = new Worker(BOOT_URL, { type: "module", name: "snapshot" });
    const channel = new MessageChannel();
    channel.port2.onmessage = (event) => {
      const data = event.data;
      if (data?.snapshot instanceof Uint8Array) resolve(data.snapshot);
      else reject(new Error("the snapshot isolate failed: " + safeString(data)));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      reject(new Error(oneLine(event.message ?? event.error)));
    };
    const init = { mode: "snapshot", nonce: "snapshot", pyodide };
    worker.postMessage({ source: runnerFunction(), init, port: channel.port1 }, [channel.port1]);
  });
  const file = new Uint8Array(SNAPSHOT_HEADER + payload.length);
  file.set(encodeUtf8(SNAPSHOT_MAGIC));
  file.set(await runnerDigest(), 8);
  file.set(new Checksum().update(payload).digest(), 40);
  file.set(payload, SNAPSHOT_HEADER);
  D.writeFileSync(out, file);
}
