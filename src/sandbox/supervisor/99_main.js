// 99_main.js: the entry points: the main thread's (`main`: the launch modes) and the router's
// (`routerMain`), the dispatch of the host's messages (`onHostLine`). Relies on everything before.

/** @param {string} text */
function onHostLine(text) {
  if (text.trim() === "") return;
  const msg = JSONParse(text);
  if (msg === null || typeof msg !== "object" || msg.v !== 2) {
    diag("ignoring a malformed message from the host");
    return;
  }
  if (msg.type === "allowed") return allowed();
  if (!Number.isSafeInteger(msg.exec)) {
    diag("ignoring a message without its execution");
    return;
  }
  switch (msg.type) {
    case "execute":
      if (typeof msg.line === "string") execute(msg.exec, msg.line);
      break;
    case "reply":
      if (typeof msg.line === "string") toIsolate(msg.exec, msg.line);
      break;
    case "cancel":
      cancel(msg.exec);
      break;
    default:
      diag("ignoring an unknown message type " + safeString(msg.type).slice(0, 64));
  }
}

/** The main thread: reads the isolate runner, prepares, starts the router, then serves it. */
async function main() {
  const [mode, socket, stockArg, maxArg, lanesArg, startedFor, dir, snapshot] = launchArgs;
  await readIsolateSource();
  if (mode === "snapshot") {
    await writeSnapshot();
    D.exit(0);
  }
  if (mode !== "typescript" && mode !== "python") throw new Error(`unknown mode ${safeString(mode).slice(0, 64)}`);
  const stock = Number(stockArg);
  // Read and compiled while the router starts and connects, and while the first isolate boots:
  // it waits only for what it needs.
  const failed = (e) => {
    diag("cannot prepare Pyodide: " + oneLine(e));
    D.exit(70);
  };
  const python = mode === "python" ? preparePyodide(dir, snapshot) : null;
  const init = (python?.files ?? Promise.resolve(undefined)).then((pyodide) => ({ mode, pyodide }), failed);
  const module = python?.module.catch(failed) ?? null;
  const max = Number(maxArg);
  const most = Number(lanesArg);
  const setup = {
    stock: Number.isSafeInteger(stock) && stock >= 0 ? stock : 1,
    maxIsolates: Number.isSafeInteger(max) && max >= 3 ? max : 3,
    maxLanes: Number.isSafeInteger(most) && most >= 1 ? most : 1,
    lanes: true,
    // A TypeScript lane starts in milliseconds: surplus ones go soon after the load that wanted
    // them. A Python lane takes hundreds of milliseconds of CPU to prepare: they stay longer.
    surplusLaneMs: mode === "python" ? 30_000 : 2_000,
    singleUseFirst: mode === "python" && startedFor === "awaited",
  };
  startRouter(socket, setup, init, module);
}

/** The router: connects to the host, keeps the stock, routes until the host goes away. */
function routerMain() {
  globalThis.onmessage = async (event) => {
    const m = event.data;
    if (typeof m.socket === "string") {
      stockWanted = m.stock;
      maxIsolates = m.maxIsolates;
      maxLanes = m.maxLanes;
      lanes = m.lanes === true;
      surplusLaneMs = m.surplusLaneMs;
      singleUseNext = m.singleUseFirst === true;
      try {
        await connectToHost(m.socket);
      } catch (e) {
        diag("cannot connect to the host: " + oneLine(e));
        return exitProcess(70);
      }
      refill();
      readHostLines(onHostLine);
    } else {
      fromMain(m);
    }
  };
}

if (inRouter) {
  routerMain();
} else {
  main().catch((e) => {
    diag("supervisor failed: " + safeString(e?.stack ?? e));
    D.exit(70);
  });
}
