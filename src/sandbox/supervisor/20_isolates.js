// 20_isolates.js (router): execution isolates as the router sees them: asking the main thread to
// start one (`startIsolate`) and receiving its port (`fromMain`), the stock of ready ones
// (`stock`, `refill`), handing one to an execution (`execute`), routing (`fromIsolate`,
// `toIsolate`), and ending one (`endIsolate`). Relies on 00, 10; `toMain`, `exitProcess` (40).

/** The longest line an isolate may send, in UTF-16 units (the host's cap is 4 MiB of UTF-8). */
const MAX_ISOLATE_LINE = 4 * 1024 * 1024;
/**
 * What an isolate may have waiting to be written to the host, in bytes: past it (a flood the
 * host cannot read as fast), the isolate is ended.
 */
const FLOOD_BYTES = 64 * 1024 * 1024;
/** At most this many isolates prepare at once (each is CPU-bound while it prepares). */
const MAX_PREPARING = 2;
let nextIsolateId = 1;
/** Every isolate not yet ended, by id. @type {Map<number, Isolate>} */
const isolates = new Map();

const StringToWellFormed = String.prototype.toWellFormed;

/**
 * @typedef {object} Isolate
 * @property {number} id
 * @property {MessagePort | null} port its channel to the router (once the main thread started it)
 * @property {"preparing" | "ready" | "running" | "recycling" | "ended"} state
 * @property {number | null} exec the execution it runs
 * @property {number} unwritten bytes of its lines not yet written to the host
 * @property {boolean} singleUse it serves one execution, then ends (see `singleUseNext`)
 * @property {number} [recycleTimer] while it recycles, the timer that ends it if it is not ready in time
 */

/** Ready isolates, oldest first. @type {Isolate[]} */
const stock = [];
/** Executions waiting for an isolate: [exec, execute line]. */
const waiting = [];
/** The isolate of each running execution. @type {Map<number, Isolate>} */
const running = new Map();
let preparing = 0;
let everReady = false;
let failuresInARow = 0;
/** How many ready isolates to keep (set by `routerMain`). */
let stockWanted = 1;
/**
 * The most lanes held at once, ready, preparing, running or resetting (set by `routerMain`):
 * executions beyond them wait for one.
 */
let maxLanes = Infinity;
/**
 * Whether an isolate serves executions one after another (a lane, set by `routerMain`): after
 * its `done`, it resets and checks itself, then says `ready` again or asks to be retired
 * (`{"type":"retire","why":...}`). A TypeScript lane runs each execution in a fresh context; a
 * Python lane keeps its Pyodide behind a verified reset.
 */
let lanes = false;
/**
 * How long a lane may take to say `ready` after its execution: one that does not (code of the
 * ended execution keeps its event loop busy) is ended.
 */
const RECYCLE_MS = 5_000;
/**
 * Whether the next isolate started is single-use (set by `routerMain`, for the first one only):
 * it serves one execution without taking a lane's baseline, and ends after it. A Python
 * process started for an execution waiting for it (launch argument `awaited`) serves that
 * execution 80-100 ms sooner so; its next lane, started as the first one is taken, takes its
 * baseline meanwhile. (A lane that served one execution and ends needs no baseline: nothing
 * runs in it after that execution.)
 */
let singleUseNext = false;
/** How long surplus ready lanes (beyond the stock wanted) are kept once nothing runs (set by `routerMain`). */
let surplusLaneMs = 30_000;
let surplusTimer = null;

/**
 * Starts preparing isolates until the stock (and every waiting execution) will be served, within
 * `maxLanes`. A lane being reset counts as one: it is ready again within milliseconds, a new one
 * takes hundreds.
 */
function refill() {
  while (
    preparing < MAX_PREPARING && isolatesHeld < maxIsolates &&
    stock.length + preparing + recycling + running.size < maxLanes &&
    stock.length + preparing + recycling < Math.max(stockWanted, everReady ? 0 : 1) + waiting.length
  ) {
    startIsolate();
  }
}

/** Lanes resetting after their execution (`recycled` will say whether they are ready again). */
let recycling = 0;

function reportStock() {
  toHost({ v: 2, type: "stock", ready: stock.length });
}

/**
 * Isolates the process holds, counting the main thread's and the router's, and those the host
 * has been asked to allow. Each reserves address space the kernel counts against the process's
 * data limit (V8's code range: about 520 MiB, never touched), so the host raises that limit by
 * one isolate's reservation before each is started, and lowers it once each has ended (a while
 * after it was terminated, see `TEARDOWN_MS`): the limit keeps meaning the memory the executions
 * may really use.
 */
let isolatesHeld = 2;
/** How long after it is terminated an isolate is taken to be gone (its memory unmapped). */
const TEARDOWN_MS = 50;
/** The most isolates the process may hold (set by `routerMain`: the host's cap). */
let maxIsolates = 8;
/** Requests to the host, in order: the isolate to start once allowed, or null (a report). */
const awaitingHost = [];

/** Tells the host how many isolates the process holds (the host answers each `allowed`). */
function reportIsolates(startingIso) {
  awaitingHost.push(startingIso);
  toHost({ v: 2, type: "isolates", count: isolatesHeld });
}

/** The host allowed the request at the head of the queue: start its isolate, if any. */
function allowed() {
  const iso = awaitingHost.shift();
  if (iso === undefined) {
    diag("an `allowed` nobody asked for");
    return;
  }
  if (iso !== null && iso.state === "preparing") toMain({ create: iso.id, singleUse: iso.singleUse });
}

function startIsolate() {
  preparing++;
  /** @type {Isolate} */
  const iso = { id: nextIsolateId++, port: null, state: "preparing", exec: null, unwritten: 0, singleUse: singleUseNext };
  singleUseNext = false;
  isolates.set(iso.id, iso);
  isolatesHeld++;
  reportIsolates(iso);
}

/** The main thread's news of an isolate: started (with its port), or failed with an error. */
function fromMain(m) {
  if (m.created !== undefined) {
    const iso = isolates.get(m.created);
    if (iso === undefined) {
      m.port.close();
      return;
    }
    iso.port = m.port;
    iso.port.onmessage = (event) => fromIsolate(iso, event.data);
  } else if (m.failed !== undefined) {
    const iso = isolates.get(m.failed);
    if (iso !== undefined) isolateFailed(iso, "uncaught error: " + oneLine(m.message));
  }
}

/** Hands the execution to a ready isolate, or queues it until one is. */
function execute(exec, line) {
  if (running.has(exec) || waiting.some(([id]) => id === exec)) {
    diag(`execution ${exec} started twice`);
    return;
  }
  const iso = stock.shift();
  if (iso === undefined) {
    waiting.push([exec, line]);
  } else {
    run(iso, exec, line);
    reportStock();
  }
  refill();
}

function run(iso, exec, line) {
  iso.state = "running";
  iso.exec = exec;
  running.set(exec, iso);
  iso.port.postMessage(line);
}

/** A host line for the isolate of `exec` (a reply); dropped when that execution has ended. */
function toIsolate(exec, line) {
  running.get(exec)?.port?.postMessage(line);
}

/** Ends execution `exec` at the host's request (deadline or cancellation). */
function cancel(exec) {
  const queued = waiting.findIndex(([id]) => id === exec);
  if (queued >= 0) waiting.splice(queued, 1);
  const iso = running.get(exec);
  if (iso !== undefined) endIsolate(iso);
  toHost({ v: 2, exec, type: "ended", reason: "cancelled" });
}

/** What an isolate posts: `ready` (and `failed`) while preparing, then its execution's lines. */
function fromIsolate(iso, data) {
  if (iso.state === "ended") return;
  if (iso.state === "preparing") return prepared(iso, data);
  if (iso.state === "recycling") return recycled(iso, data);
  if (iso.state !== "running" || typeof data !== "string") return;
  const exec = iso.exec;
  if (data.length > MAX_ISOLATE_LINE) {
    endIsolate(iso);
    toHost({ v: 2, exec, type: "ended", reason: "protocol", message: "the isolate sent a line over 4 MiB" });
    return;
  }
  if (iso.unwritten > FLOOD_BYTES) {
    endIsolate(iso);
    toHost({ v: 2, exec, type: "ended", reason: "flood", message: "the isolate sent faster than the host reads" });
    return;
  }
  const line = typeof StringToWellFormed === "function" ? StringToWellFormed.call(data) : data;
  if (!toHost({ v: 2, exec, line }, iso)) {
    endIsolate(iso);
    toHost({ v: 2, exec, type: "ended", reason: "protocol", message: "the isolate sent a line too long to forward" });
    return;
  }
  // The runner's `done` starts with exactly this: the execution is over.
  if (line.startsWith('{"v":1,"type":"done"')) {
    if (!lanes || iso.singleUse) return endIsolate(iso);
    running.delete(exec);
    iso.exec = null;
    iso.state = "recycling";
    recycling++;
    iso.recycleTimer = setTimeout(() => {
      if (iso.state !== "recycling") return;
      diag("lane retired: not ready " + RECYCLE_MS + " ms after its execution");
      endIsolate(iso);
      refill();
    }, RECYCLE_MS);
  }
}

/** A lane after its execution: `ready` once reset and checked, anything else retires it. */
function recycled(iso, data) {
  clearTimeout(iso.recycleTimer);
  const msg = isolateMessage(data);
  if (msg?.type !== "ready") {
    if (msg?.type === "retire") diag("lane retired: " + safeString(msg.why).slice(0, 200));
    else diag("a lane sent something else than ready or retire after its execution");
    endIsolate(iso);
    refill();
    return;
  }
  recycling--;
  iso.state = "ready";
  const next = waiting.shift();
  if (next !== undefined) return run(iso, next[0], next[1]);
  // The lane used last serves next: its caches are warm.
  stock.unshift(iso);
  reportStock();
  trimSurplusLater();
}

/** Once nothing has run for a while, ends the ready lanes beyond the stock wanted. */
function trimSurplusLater() {
  if (surplusTimer !== null) clearTimeout(surplusTimer);
  surplusTimer = setTimeout(() => {
    surplusTimer = null;
    if (running.size > 0) return trimSurplusLater();
    while (stock.length > Math.max(stockWanted, 1)) endIsolate(stock[stock.length - 1]);
  }, surplusLaneMs);
}

/** What an isolate says of itself (`ready`, `failed`, `retire`): the parsed line, or null. */
function isolateMessage(data) {
  try {
    return typeof data === "string" ? JSONParse(data) : null;
  } catch {
    return null;
  }
}

function prepared(iso, data) {
  const msg = isolateMessage(data);
  if (msg?.type === "ready") {
    preparing--;
    failuresInARow = 0;
    iso.state = "ready";
    const next = waiting.shift();
    if (next !== undefined) run(iso, next[0], next[1]);
    else stock.push(iso);
    if (!everReady) {
      everReady = true;
      // The first isolate proves the process can serve: it says so.
      toHost({ v: 2, type: "ready" });
    }
    reportStock();
    refill();
  } else if (msg?.type === "failed") {
    if (msg.snapshot === true) {
      diag("snapshot unusable: " + safeString(msg.message));
      return exitProcess(75);
    }
    isolateFailed(iso, safeString(msg.message));
  } else {
    isolateFailed(iso, "unexpected message while preparing");
  }
}

/** An isolate that errored: its execution ends; one that could not even start is retried. */
function isolateFailed(iso, why) {
  const state = iso.state;
  const exec = iso.exec;
  endIsolate(iso);
  if (state === "running") {
    toHost({ v: 2, exec, type: "ended", reason: "crashed", message: why });
    return;
  }
  if (state !== "preparing") return;
  preparing--;
  diag("an isolate failed to start: " + why);
  failuresInARow++;
  if (!everReady || failuresInARow >= 5) {
    diag("isolates keep failing to start: giving up");
    return exitProcess(70);
  }
  setTimeout(refill, 100 * failuresInARow);
}

/** Terminates the isolate (V8 stops it wherever it is) and forgets it. */
function endIsolate(iso) {
  if (iso.state === "ended") return;
  if (iso.state === "recycling") {
    recycling--;
    clearTimeout(iso.recycleTimer);
  }
  if (iso.exec !== null) running.delete(iso.exec);
  if (iso.state === "ready") {
    stock.splice(stock.indexOf(iso), 1);
    reportStock();
  }
  iso.state = "ended";
  isolates.delete(iso.id);
  if (iso.port !== null) {
    iso.port.onmessage = null;
    iso.port.close();
  }
  toMain({ terminate: iso.id });
  // Its thread takes a moment to tear it down: its reservation is counted until then.
  setTimeout(() => {
    isolatesHeld--;
    reportIsolates(null);
    refill();
  }, TEARDOWN_MS);
}
