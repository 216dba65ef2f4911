// 99_main.js: main: the warm-up before `ready`, the launch modes, and the call of `main()` that
// starts the runner. Relies on everything before it.

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

/**
 * Throwaway programs for `warmUp`, each with a last expression and a value to return: one with a
 * type annotation (the module path), one in plain JavaScript (the function path).
 */
const WARM_UP_PROGRAMS = ['const x: number = 1;\n[x, { a: "b" }]', 'const y = 1;\n[y, { a: "b" }]'];

/**
 * Pays the one-time costs of a TypeScript execution before `ready`, so they do not count
 * against the first (and only) real one: compiling this runner's source preparation and result
 * functions, the TypeScript loader's first use, console formatting, the timer and message
 * machinery (about 5-10 ms on a quiet machine). Nothing is printed or sent.
 */
async function warmUp() {
  try {
    for (const code of WARM_UP_PROGRAMS) valueToJson(await runTypeScript({ code, message: {} }));
    formatArgs(["%s", 1, { a: [1, "b"] }]);
    describeError(new Error("warm-up"), currentModuleMapper);
  } catch {
    // not fatal: the real execution reports any problem
  }
  currentModuleMapper = null;
  await new PromiseCtor((resolve) => setTimeoutPrivate(resolve, 0));
  await macrotaskTurn();
}

async function main() {
  const mode = launchArgs.length > 0 ? launchArgs[0] : "typescript";
  if (mode !== "typescript") processPrivate = globalThis.process;
  if (mode === "snapshot") {
    installEnvironment();
    return await writeSnapshot();
  }
  const runtime = typeof mode === "string" && Object.hasOwn(RUNTIMES, mode) ? RUNTIMES[mode] : undefined;
  if (runtime === undefined) throw new Error(`unknown worker mode ${safeString(mode).slice(0, 64)}`);
  installEnvironment();
  if (typeof MessageChannelCtor === "function") turnChannel = new MessageChannelCtor();
  if (runtime.prepare) await runtime.prepare();
  if (mode === "typescript" && warmUpWanted) await warmUp();
  const reading = readLines(onLine);
  send({ type: "ready" });
  await reading;
}

main().catch((e) => {
  diag("runner failed: " + safeString(e?.stack ?? e));
  exitPrivate(70);
});
