// 99_main.js: main: the launch modes, and the call of `main()` that prepares the isolate.
// Relies on everything before it.

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

/**
 * Runs the TypeScript execution path once on a throwaway program that needs no module loader
 * (plain JavaScript, a console line, a value), so that the real execution finds V8's inline
 * caches warm. Nothing is sent.
 */
async function warmUp() {
  try {
    valueToJson((await runTypeScript({ code: 'const x = [1, { a: "b" }];\nx', message: {} })).value);
    formatArgs(["x", 1]);
  } catch {
    // not fatal: the real execution reports any problem
  }
  // Only the runner's own program ran (in a context when the lane has them).
  laneRealmUsed = false;
  endContext();
  currentModuleMapper = null;
  await macrotaskTurn();
}

/**
 * Prepares this isolate for `launch.mode` (and for `snapshot`, makes the snapshot), then tells
 * the supervisor it is `ready`, or why it cannot be: `{"v":1,"type":"failed","snapshot":bool,
 * "message":...}` (a snapshot Pyodide cannot load makes the supervisor give up on that file).
 */
async function main() {
  const mode = launch.mode;
  if (mode === "typescript") await loadContexts();
  installEnvironment();
  if (mode === "snapshot") return await makeSnapshot();
  const runtime = typeof mode === "string" && Object.hasOwn(RUNTIMES, mode) ? RUNTIMES[mode] : undefined;
  if (runtime === undefined) throw new Error(`unknown isolate mode ${safeString(mode).slice(0, 64)}`);
  if (typeof MessageChannelCtor === "function") turnChannel = new MessageChannelCtor();
  if (runtime.prepare) await runtime.prepare();
  if (mode === "typescript") await warmUp();
  // A single-use lane serves one execution and ends (see the supervisor's `singleUseNext`).
  if (mode === "python" && launch.singleUse !== true) await takeLaneBaseline();
  listen(onLine);
  send({ type: "ready" });
}

main().catch((e) => {
  diag("isolate failed to start: " + safeString(e?.stack ?? e));
  send({ type: "failed", snapshot: e instanceof SnapshotUnusable, message: oneLine(e) });
});
