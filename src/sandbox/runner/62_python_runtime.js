// 62_python_runtime.js: the Python runtime: installing module `sandbox`, `preparePython`
// (before `ready`, from the snapshot file or not) and `runPython`. Relies on 00-02,
// `installPythonWrappers` (55), 60 and `readSnapshot` (61).

/** Creates module `sandbox` from `PY_PRELUDE`. */
function installSandboxModule(py) {
  const ns = py.runPython("import sys, types\nm = types.ModuleType('sandbox')\nsys.modules['sandbox'] = m\nm.__dict__");
  py.runPython(PY_PRELUDE, { globals: ns, filename: "<sandbox>" });
  ns.destroy();
}

/**
 * Loads Pyodide from the directory named by the second launch argument, or from the snapshot
 * file named by the third (read-only access to both).
 */
async function preparePython() {
  const file = launchArgs[2];
  let connect = "import sandbox, _sandbox_host\nsandbox._connect(_sandbox_host.call)\nsandbox.run";
  if (file === undefined) {
    pyodide = await startPyodide({});
    installSandboxModule(pyodide);
  } else {
    // Unusable snapshot: exit code 75, the host discards the file and makes a new one.
    try {
      // Read while Pyodide's code loads.
      const snapshot = readSnapshot(file);
      snapshot.catch(() => {}); // awaited by loadPyodide
      pyodide = await startPyodide({ _loadSnapshot: snapshot });
      (await snapshot).buffer.transfer?.(0); // frees the file's bytes now, not at some later GC
      // `random` was seeded when the snapshot was made: every worker would draw the same numbers.
      connect = "import random\nrandom.seed()\n" + connect;
    } catch (e) {
      diag("snapshot unusable: " + oneLine(e));
      exitPrivate(75);
    }
  }
  pyodide.setStdout(pyWriter("stdout"));
  pyodide.setStderr(pyWriter("stderr"));
  pyodide.registerJsModule("_sandbox_host", { call: pyHostCall });
  pyRun = pyodide.runPython(connect);
  if (!warmUpWanted) return;
  // Run the execution paths once (compiling, awaiting JS promises, value and traceback
  // conversion) so their first-use costs are paid before `ready`: print(1) then takes ~15 ms, not ~45.
  await pyRun("import asyncio, js\nawait asyncio.sleep(0)\nawait js.Promise.resolve(1)\n[1, {'a': (2.5, None)}]");
  await pyRun("def f():\n    raise ValueError('x')\nf()");
}

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

/** @param {ExecContext} ctx */
async function runPython(ctx) {
  if (pyRun === null) throw new Error("python is not available: this worker was not started for python");
  let result;
  if (ctx.code.includes("wrappers")) installPythonWrappers();
  try {
    result = await pyRun(ctx.code);
  } catch (e) {
    // `run` catches every Python exception: this is a Pyodide fatal error.
    throw pyCrash(e);
  }
  const out = JSONParse(result);
  if (out.ok) return out.value;
  const { name, message, stack } = out.error;
  const err = new Error(message);
  ObjectDefineProperty(err, "name", { value: name, writable: true, configurable: true });
  ObjectDefineProperty(err, "stack", { value: stack, writable: true, configurable: true });
  throw err;
}
