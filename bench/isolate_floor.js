// The floor under the sandbox's cost per execution: what a fresh isolate costs in this Deno, and
// a fresh Pyodide in one, with nothing of code-executor around them. Numbers only.
//
//   DENO=target/runtimes/deno-2.9.6/package/deno
//   $DENO run --no-code-cache --allow-read=PYODIDE_DIR bench/isolate_floor.js PYODIDE_DIR [N]
//
// (PYODIDE_DIR: target/runtimes/pyodide-314.0.7/package.) Prints, per isolate, the process CPU
// (user + system of every thread, `process.cpuUsage()`) and the wall time of:
// - an empty Web Worker started, sent one message, answered, terminated (the isolate floor of
//   every execution: a fresh V8 isolate per execution is at least this);
// - a V8 context made in a kept Worker (`node:vm`, an ordinary global object), a snippet run in
//   it, the answer sent (the floor under a TypeScript lane's execution, before the sandbox's
//   globals are made in the context);
// - the same Worker that first loads Pyodide, the way the sandbox does: its compiled WebAssembly
//   module shared from this thread, its Emscripten script evaluated in the Worker, instantiated
//   from a memory snapshot of Python made here once (the floor of a fresh Python);
// - one such Pyodide kept and reused: a program run in a fresh globals dict, the modules it
//   imported dropped (the floor under a Python lane, before its reset's check).

const dir = (Deno.args[0] ?? "").replace(/\/?$/, "/");
const n = Number(Deno.args[1] ?? 30);
if (!dir.startsWith("/")) throw new Error("usage: isolate_floor.js PYODIDE_DIR [N]");

const { default: process } = await import("node:process");
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

async function measure(label, count, run) {
  await run(); // the first one pays one-time costs
  const c0 = cpuMs();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await run();
  const cpu = (cpuMs() - c0) / count;
  const wall = (performance.now() - t0) / count;
  console.log(`${label.padEnd(52)} CPU ${cpu.toFixed(1).padStart(6)} ms   wall ${wall.toFixed(1).padStart(6)} ms`);
}

const empty = "data:application/javascript," + encodeURIComponent("self.onmessage = (e) => self.postMessage(e.data);");
await measure("empty isolate: start, one message, terminate", n, async () => {
  const w = new Worker(empty, { type: "module" });
  await new Promise((r) => {
    w.onmessage = r;
    w.postMessage(1);
  });
  w.terminate();
});

const contextWorker = "data:application/javascript," + encodeURIComponent(`
const vm = await import("node:vm");
self.onmessage = (e) => {
  const context = vm.createContext(vm.constants.DONT_CONTEXTIFY);
  self.postMessage(vm.runInContext("[1, 2, 3].map((x) => x * " + e.data + ").length", context));
};`);
const kept = new Worker(contextWorker, { type: "module" });
await measure("fresh context in a kept isolate: make, run, answer", n * 10, async () => {
  await new Promise((r) => {
    kept.onmessage = r;
    kept.postMessage(2);
  });
});
kept.terminate();

// Pyodide: a snapshot made here, and its parts read once, as a worker process's main thread does.
const dirUrl = new URL("file:///");
dirUrl.pathname = dir;
const module = await WebAssembly.compile(Deno.readFileSync(dir + "pyodide.asm.wasm"));
const lock = JSON.parse(Deno.readTextFileSync(dir + "pyodide-lock.json"));
const asmUrl = new URL("pyodide.asm.mjs", dirUrl).href;
const emscripten = "(() => {\n" +
  Deno.readTextFileSync(dir + "pyodide.asm.mjs").replace("export default _createPyodideModule;", "")
    .replaceAll("import.meta.url", JSON.stringify(asmUrl)) + "\nreturn _createPyodideModule;\n})()";
const pyWorker = "data:application/javascript," + encodeURIComponent(`
self.onmessage = async (e) => {
  const { module, emscripten, lock, dir, snapshot, make } = e.data;
  const wasm = globalThis.WebAssembly;
  const { instantiate, instantiateStreaming } = wasm;
  const fromModule = async (imports) => ({ instance: await instantiate(module, imports), module });
  wasm.instantiate = (s, i) => (s?.byteLength > 1e6 ? fromModule(i) : instantiate(s, i));
  wasm.instantiateStreaming = async (r, i) => { r = await r; r.body?.cancel(); return fromModule(i); };
  const saved = Object.getOwnPropertyDescriptor(globalThis, "Deno");
  delete globalThis.process; // (reading it would load the Node compatibility layer)
  delete globalThis.Deno; // Pyodide then runs as in a browser worker, as in the sandbox
  const { loadPyodide } = await import(new URL("pyodide.mjs", dir).href);
  const py = await loadPyodide({ indexURL: dir, lockFileContents: lock, createPyodideModule: (0, eval)(emscripten),
    ...(make ? { _makeSnapshot: true } : { _loadSnapshot: snapshot }) });
  Object.defineProperty(globalThis, "Deno", saved);
  if (make) { py.runPython("import json, re, asyncio, traceback"); self.postMessage(py.makeMemorySnapshot()); return; }
  if (!e.data.keep) return self.postMessage(py.runPython("1 + 1"));
  // Kept: every later message runs one program in a fresh globals dict and drops the modules
  // it imported (the floor under a Python lane, without its check).
  const run = py.runPython(
    "import sys\\nbase = set(sys.modules)\\ndef run(code):\\n    g = {'__name__': '__main__'}\\n" +
      "    exec(compile(code, '<user code>', 'exec'), g)\\n" +
      "    for n in [n for n in sys.modules if n not in base]:\\n        del sys.modules[n]\\n    return 2\\nrun",
  );
  self.onmessage = (m) => self.postMessage(run(m.data));
  self.postMessage(2);
};`);
const pyodideOnce = (extra) => new Promise((resolve, reject) => {
  const w = new Worker(pyWorker, { type: "module" });
  w.onmessage = (e) => {
    w.terminate();
    resolve(e.data);
  };
  w.onerror = (e) => {
    e.preventDefault();
    reject(e.message);
  };
  w.postMessage({ module, emscripten, lock, dir: dirUrl.href, ...extra });
});
const snapshot = await pyodideOnce({ make: true });
await measure("isolate with a fresh Pyodide from the snapshot", Math.max(3, n >> 2), async () => {
  if ((await pyodideOnce({ snapshot })) !== 2) throw new Error("Python did not answer");
});

// One Pyodide kept in one isolate: a run in a fresh globals dict, its imports dropped.
const lane = new Worker(pyWorker, { type: "module" });
const ask = (data) => new Promise((resolve) => {
  lane.onmessage = (e) => resolve(e.data);
  lane.postMessage(data);
});
await ask({ module, emscripten, lock, dir: dirUrl.href, snapshot, keep: true });
await measure("reused Pyodide: fresh globals, imports dropped", n * 10, async () => {
  if ((await ask("x = [i * i for i in range(100)]")) !== 2) throw new Error("Python did not answer");
});
lane.terminate();
