// 70_dispatch.js: the `execute` message (one execution, then `done`), the macrotask turn that
// ends it and the timer globals that feed it, and `onLine`, the dispatch of host messages.
// Relies on 00-62.

/** @param {any} msg */
async function execute(msg) {
  if (executeReceived) {
    diag("ignoring a second execute message");
    return;
  }
  executeReceived = true;
  executing = true;
  const limit = msg.outputLimit;
  outputLimit = typeof limit === "number" && NumberIsFinite(limit) && limit >= 0 ? limit : DEFAULT_OUTPUT_LIMIT;
  const failure = new PromiseCtor((_resolve, reject) => {
    rejectAsyncFailure = reject;
  });
  failure.catch(() => {});
  try {
    const language = msg.language;
    const runtime = typeof language === "string" && Object.hasOwn(RUNTIMES, language) ? RUNTIMES[language] : undefined;
    if (runtime === undefined) throw new Error(`unsupported language: ${safeString(language)}`);
    executionLanguage = language;
    if (typeof msg.code !== "string") throw new TypeError("execute: code must be a string");
    const { value } = await PromiseCtor.race([runtime.run({ code: msg.code, message: msg }), failure]);
    // One macrotask turn so errors thrown by already-due callbacks and rejections left
    // unhandled by the final microtasks still count.
    await macrotaskTurn();
    if (asyncFailure !== null) throw asyncFailure.error;
    finishOk(value);
  } catch (e) {
    finishError(e);
  }
}

/**
 * Timers user code has set and that have neither run nor been cleared: id -> due time. Only
 * used to know whether the end of an execution must wait for a timer turn (see `macrotaskTurn`).
 * @type {Map<unknown, number>}
 */
const userTimers = new MapCtor();
/** A private channel whose messages give one event-loop turn without any timer (about 0.2 ms). */
let turnChannel = null;

/**
 * Waits one macrotask turn: long enough for unhandled rejections to be reported. When a timer
 * of the user's is already due (or due within a millisecond), waits a timer turn instead (1-2
 * ms in Deno) so that its callback runs first, and an error it throws counts.
 */
function macrotaskTurn() {
  const soon = performanceNow() + 1;
  let timerDue = turnChannel === null;
  for (const due of userTimers.values()) {
    if (due <= soon) {
      timerDue = true;
      break;
    }
  }
  if (timerDue) return new PromiseCtor((resolve) => setTimeoutPrivate(resolve, 0));
  const channel = turnChannel;
  return new PromiseCtor((resolve) => {
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(0);
  });
}

/**
 * A timer's delay as a number of milliseconds Deno's timers take without a warning: with Node's
 * compatibility layer loaded (a TypeScript lane loads `node:vm`), a negative, NaN or too large
 * delay makes them emit a Node warning through a `process` global this realm does not have.
 */
function timerDelay(delay) {
  const ms = NumberCtor(delay);
  if (!(ms > 0)) return 0;
  return ms > MAX_TIMER_DELAY ? MAX_TIMER_DELAY : ms;
}
const NumberCtor = Number;
const MAX_TIMER_DELAY = 2 ** 31 - 1;

/**
 * The timer globals for user code: Deno's, plus the bookkeeping of `userTimers` (an interval
 * counts as always due until it is cleared).
 */
function makeTimerGlobals() {
  function setTimeout(callback, delay, ...args) {
    const ms = timerDelay(delay);
    const due = performanceNow() + ms;
    if (typeof callback !== "function") {
      // A string is evaluated when the timer fires: guarded like `eval`.
      const other = setTimeoutPrivate(guardScript(callback), ms, ...args);
      userTimers.set(other, -Infinity); // when it runs is unknown: always treated as due
      return other;
    }
    const run = function () {
      userTimers.delete(id);
      return ReflectApply(callback, this, args);
    };
    const id = setTimeoutPrivate(run, ms);
    userTimers.set(id, due);
    return id;
  }
  function setInterval(callback, delay, ...args) {
    const id = setIntervalPrivate(typeof callback === "function" ? callback : guardScript(callback), timerDelay(delay), ...args);
    userTimers.set(id, -Infinity);
    return id;
  }
  // Timeouts and intervals share their ids: either function clears either kind.
  function clearTimeout(id) {
    userTimers.delete(id);
    return clearTimeoutPrivate(id);
  }
  function clearInterval(id) {
    userTimers.delete(id);
    return clearIntervalPrivate(id);
  }
  return { setTimeout, setInterval, clearTimeout, clearInterval };
}

/** @param {string} line */
function onLine(line) {
  if (line.trim() === "") return;
  let msg;
  try {
    msg = JSONParse(line);
  } catch {
    diag("ignoring a malformed line from the host");
    return;
  }
  if (msg === null || typeof msg !== "object" || msg.v !== PROTOCOL_VERSION) {
    diag("ignoring a message without v:1");
    return;
  }
  switch (msg.type) {
    case "execute":
      execute(msg);
      break;
    case "reply":
      onReply(msg);
      break;
    default:
      diag("ignoring an unknown message type " + safeString(msg.type).slice(0, 64));
  }
}
