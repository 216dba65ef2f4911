// 40_threads.js: the two threads and what passes between them. The main thread starts the
// router (`startRouter`) and then only starts and terminates isolates on the router's request
// (`startIsolateWorker`); the router asks (`toMain`) and is told (`fromMain`, 20), and asks the
// main thread to end the process (`exitProcess`: a Worker's `Deno.exit` ends only the Worker).
// Relies on 00; `fromMain` (20).

/**
 * Each isolate starts from this module: it evaluates the runner it is handed, as one function
 * body, with `init` and its port to the router. The runner's own frames are named
 * `ext:code-executor/isolate.js`, which its stack cleaning drops like Deno's own. V8 compiles it
 * whole as it loads (`allFunctionsCalledOnLoad`), while the isolate is prepared, rather than
 * function by function during its execution: an isolate runs its runner once, so this costs no
 * more CPU, and the execution about 1 ms less.
 */
const BOOT_URL = "data:application/javascript," + encodeURIComponent(
  'addEventListener("message", (e) => { (0, eval)(e.data.source)(e.data.init, e.data.port); }, { once: true });',
);
const runnerFunction = () =>
  '//# allFunctionsCalledOnLoad\n(function (init, port) {\n"use strict";\n' + isolateSource + "\n})\n//# sourceURL=ext:code-executor/isolate.js\n";

// --- router side -------------------------------------------------------------------------------

/** Posts to the main thread (the router's parent). */
function toMain(message) {
  globalThis.postMessage(message);
}

/** Ends the process with `code` (the main thread does it). */
function exitProcess(code) {
  toMain({ exit: code });
}

// --- main thread -------------------------------------------------------------------------------

/** The isolates the main thread started and has not terminated, by id. @type {Map<number, Worker>} */
const isolateWorkers = new Map();

/**
 * Starts the router (it inherits the permissions reaching the host's socket); once it is
 * connected, gives up those permissions here too, before any isolate exists (the router asks for
 * isolates only after it has said so). `setup` is what the router needs; `isolateInit`, a promise
 * of what every isolate is started with; `module`, of Pyodide's compiled module (or null).
 */
function startRouter(socket, setup, isolateInit, module) {
  const router = new Worker(import.meta.url, { type: "module", name: "router" });
  router.onmessage = (event) => {
    const m = event.data;
    if (m.connected === true) giveUpHostAccess(socket);
    else if (m.create !== undefined) startIsolateWorker(router, m.create, isolateInit, module, m.singleUse === true);
    else if (m.terminate !== undefined) {
      isolateWorkers.get(m.terminate)?.terminate();
      isolateWorkers.delete(m.terminate);
    } else if (m.exit !== undefined) D.exit(m.exit);
  };
  router.onerror = (event) => {
    event.preventDefault();
    diag("the router failed: " + oneLine(event.message ?? event.error));
    D.exit(70);
  };
  router.postMessage({ socket, ...setup });
}

/** Gives up every permission that reaches the host's socket (on whichever thread calls it). */
function giveUpHostAccess(socket) {
  D.permissions.revokeSync({ name: "net" });
  D.permissions.revokeSync({ name: "write" });
  D.permissions.revokeSync({ name: "read", path: socket });
}

/**
 * Starts isolate `id` and hands the router its port; the isolate boots while `init` (a promise)
 * is still being prepared, and gets it, with a fresh nonce and `singleUse`, once it is; then
 * `module` (a promise, or null), Pyodide's compiled module, in a message of its own.
 */
function startIsolateWorker(router, id, init, module, singleUse) {
  const channel = new MessageChannel();
  const worker = new Worker(BOOT_URL, { type: "module", name: "isolate" });
  isolateWorkers.set(id, worker);
  worker.onmessage = () => {};
  worker.onmessageerror = () => {};
  worker.onerror = (event) => {
    event.preventDefault();
    router.postMessage({ failed: id, message: safeString(event.message ?? event.error) });
  };
  router.postMessage({ created: id, port: channel.port2 }, [channel.port2]);
  init.then((init) => {
    if (!isolateWorkers.has(id)) return; // terminated meanwhile
    const source = runnerFunction();
    worker.postMessage({ source, init: { ...init, nonce: crypto.randomUUID(), singleUse }, port: channel.port1 }, [channel.port1]);
    module?.then((module) => {
      if (isolateWorkers.has(id)) worker.postMessage({ module });
    });
  });
}
