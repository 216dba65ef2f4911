// 62_python_runtime.js: the Python runtime: installing module `sandbox`, `preparePython`
// (before `ready`, from the snapshot file or not) and `runPython`. Relies on 00-02,
// `installPythonWrappers` (55), `installPythonSkills` (56), 60 and `snapshotLoader` (61).

/** Creates module `sandbox` from `PY_PRELUDE`. */
function installSandboxModule(py) {
  const ns = py.runPython("import sys, types\nm = types.ModuleType('sandbox')\nsys.modules['sandbox'] = m\nm.__dict__");
  py.runPython(PY_PRELUDE + PY_LANE, { globals: ns, filename: "<sandbox>" });
  ns.destroy();
}

/**
 * Loads Pyodide into this isolate from the process's verified memory snapshot (`launch.pyodide
 * .snapshot`, a file path), or without one, and connects module `sandbox` to this isolate. A
 * snapshot Pyodide cannot load is reported to the supervisor as unusable (see `main`).
 */
async function preparePython() {
  const file = launch.pyodide.snapshot;
  let connect = "import sandbox, _sandbox_host\nsandbox._connect(_sandbox_host.call)\nsandbox.run";
  if (typeof file !== "string") {
    pyodide = await startPyodide({});
    installSandboxModule(pyodide);
  } else {
    try {
      const { placeholder, hook } = snapshotLoader(file);
      pyodide = await startPyodide({ _loadSnapshot: placeholder }, hook);
    } catch (e) {
      throw new SnapshotUnusable(oneLine(e));
    }
    // `random` was seeded when the snapshot was made: every isolate would draw the same numbers.
    connect = "import random\nrandom.seed()\n" + connect;
  }
  pyodide.setStdout(pyWriter("stdout"));
  pyodide.setStderr(pyWriter("stderr"));
  pyodide.registerJsModule("_sandbox_host", { call: pyHostCall });
  pyRun = pyodide.runPython(connect);
}

/** Why Pyodide could not start from the snapshot file (the supervisor then gives up on it). */
class SnapshotUnusable extends Error {}

/**
 * A Pyodide fatal error (JS stack exhausted by deep C recursion, abort, a signal...): Python is
 * gone, and the error's JS stack says nothing useful to the user.
 */
function pyCrash(e) {
  const crash = new Error(
    `the Python runtime crashed: ${safeString(e?.name ?? "Error")}: ${safeString(e?.message ?? e)}`,
  );
  crash.name = "FatalError";
  crash.stack = undefined;
  return crash;
}

/** Whether user Python code is running (an execution may end before it returns: see 63). */
let pyRunning = false;
/** Whether Pyodide failed fatally in this isolate (it is then never reused). */
let pyCrashed = false;

/** @param {ExecContext} ctx */
async function runPython(ctx) {
  if (pyRun === null) throw new Error("python is not available: this worker was not started for python");
  let result;
  if (ctx.code.includes("wrappers")) installPythonWrappers();
  if (ctx.code.includes("skills")) await installPythonSkills(ctx.code);
  pyRunning = true;
  try {
    result = await pyRun(ctx.code);
  } catch (e) {
    // `run` catches every Python exception: this is a Pyodide fatal error.
    pyCrashed = true;
    throw pyCrash(e);
  } finally {
    pyRunning = false;
  }
  const out = JSONParse(result);
  if (out.ok) return { __proto__: null, value: out.value };
  const { name, message, stack } = out.error;
  const err = new Error(message);
  ObjectDefineProperty(err, "name", { value: name, writable: true, configurable: true });
  ObjectDefineProperty(err, "stack", { value: stack, writable: true, configurable: true });
  throw err;
}
