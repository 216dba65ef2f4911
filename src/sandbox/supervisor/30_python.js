// 30_python.js (main thread): what the isolates of a Python process start Pyodide from, prepared
// once per process (`preparePyodide`): the compiled WebAssembly module (its code shared by every
// isolate), the Emscripten module's source made evaluable as a script, the lock file, the
// standard library's zip, and the snapshot file, its header checked (`verifySnapshot`); and the
// `snapshot` mode that writes that file (`writeSnapshot`). Relies on 00; `BOOT_URL`,
// `runnerFunction` (40) for the snapshot isolate.

// Snapshot file: "PYSNAP03", SHA-256 of the whole runner (this module's own URL and the isolate
// runner's source: a runner that changed cannot load an old snapshot), the payload's length (u64,
// little-endian) at byte 40, zeros up to byte 80, then the payload (Pyodide's
// `makeMemorySnapshot()`), then the page table of its heap image (u32 pairs, little-endian: the
// runs of pages not all zeros, which the isolates read; see the runner's 61_snapshot_file.js).
// The payload's integrity is the host's to check:
// it hashes the file once when it adopts it, and starts a process with it only while the file is
// the one it hashed (`src/sandbox/prepared.rs`), so a process reads just the header.
const SNAPSHOT_MAGIC = "PYSNAP03";
const SNAPSHOT_HEADER = 80;
const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const runnerDigest = () => sha256(encodeUtf8(import.meta.url + "\n" + isolateSource));

/** Throws unless the file at `path` is a snapshot made by this very runner (its header says so). */
async function verifySnapshot(path) {
  const file = await D.open(path);
  try {
    const header = new Uint8Array(SNAPSHOT_HEADER);
    let at = 0;
    for (let n; at < header.length && (n = await file.read(header.subarray(at))) !== null; at += n);
    if (at < SNAPSHOT_HEADER || decodeUtf8(header.subarray(0, 8)) !== SNAPSHOT_MAGIC) {
      throw new Error("not a snapshot file");
    }
    if (!sameBytes(header.subarray(8, 40), await runnerDigest())) {
      throw new Error("made by another runner version");
    }
    const payload = Number(new DataView(header.buffer).getBigUint64(40, true));
    const table = (await file.stat()).size - SNAPSHOT_HEADER - payload;
    if (!(payload > 16 && table >= 0 && table % 8 === 0)) throw new Error("not a snapshot file");
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
 * Everything isolates need to start Pyodide, read once per process, as two promises: `files`
 * (the Emscripten source, the lock file, the standard library, the snapshot's path: each isolate
 * gets them when it starts) and `module`, the compiled WebAssembly module (sent to each isolate
 * once compiled: an isolate boots and reads meanwhile). `snapshot`, when given, is checked
 * meanwhile (exit code 75 when unusable: the host then makes a new one).
 */
function preparePyodide(dirArg, snapshot) {
  const dir = pyodideDir(dirArg);
  const verified = snapshot === undefined ? Promise.resolve() : verifySnapshot(snapshot).catch((e) => {
    diag("snapshot unusable: " + oneLine(e));
    D.exit(75);
  });
  const module = D.readFile(dir + "pyodide.asm.wasm").then((bytes) => WebAssembly.compile(bytes));
  const files = Promise.all([
    D.readTextFile(dir + "pyodide.asm.mjs"),
    D.readTextFile(dir + "pyodide-lock.json").then(JSONParse),
    D.readFile(dir + "python_stdlib.zip"),
    verified,
  ]).then(([text, lock, stdlib]) => ({ dir, emscriptenSource: emscriptenScript(dir, text), lock, stdlib, snapshot }));
  return { files, module };
}

/**
 * Mode `snapshot DIR OUT` (trusted, at install time, no user code): one isolate loads Pyodide
 * fresh and hands back its memory snapshot, written here to OUT with its header.
 */
async function writeSnapshot() {
  const out = launchArgs[2];
  if (typeof out !== "string" || out === "") throw new Error("usage: snapshot <pyodide_dir> <out_file>");
  const { files, module } = preparePyodide(launchArgs[1], undefined);
  const pyodide = await files;
  const { payload, runs } = await new Promise((resolve, reject) => {
    const worker = new Worker(BOOT_URL, { type: "module", name: "snapshot" });
    const channel = new MessageChannel();
    channel.port2.onmessage = (event) => {
      const data = event.data;
      if (data?.snapshot instanceof Uint8Array && data.runs instanceof Uint32Array) {
        resolve({ payload: data.snapshot, runs: data.runs });
      } else reject(new Error("the snapshot isolate failed: " + safeString(data)));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      reject(new Error(oneLine(event.message ?? event.error)));
    };
    const init = { mode: "snapshot", nonce: "snapshot", pyodide };
    worker.postMessage({ source: runnerFunction(), init, port: channel.port1 }, [channel.port1]);
    module.then((module) => worker.postMessage({ module }), reject);
  });
  const file = new Uint8Array(SNAPSHOT_HEADER + payload.length + runs.length * 4);
  file.set(encodeUtf8(SNAPSHOT_MAGIC));
  file.set(await runnerDigest(), 8);
  const view = new DataView(file.buffer);
  view.setBigUint64(40, BigInt(payload.length), true);
  file.set(payload, SNAPSHOT_HEADER);
  runs.forEach((offset, i) => view.setUint32(SNAPSHOT_HEADER + payload.length + i * 4, offset, true));
  D.writeFileSync(out, file);
}
