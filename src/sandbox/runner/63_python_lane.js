// 63_python_lane.js: Python lanes: one Pyodide serving the executions of its isolate one after
// another, behind a verified reset (`recycleLane`). Relies on 00-02, 10, 20, 50, 56, 60, 62, 64, 70.
//
// A Python isolate ("lane") keeps its Pyodide between executions: a fresh one costs 300-550 ms
// of CPU, a reset and its check a few ms. After each execution the lane
// - resets: a fresh `__main__`; `sys.modules` back to its baseline (modules the execution
//   imported dropped, with the attributes they added to baseline packages); `sys.path`, the
//   standard streams and the other hooks of `sys`, the working directory, `os.environ`, and every
//   list, dict, set and bytearray held by a baseline module put back as they were; the files the
//   execution left in the in-memory file system (`/tmp`, `/home`, the staged wrappers and skills)
//   removed; `random` reseeded (`os.urandom` draws from the platform each time);
// - checks: every attribute of every baseline module, of builtins, of the classes they hold and
//   of the objects with a `__dict__` they hold is the very object it was, under the same name, in
//   the same order (compared in the interpreter's memory by `laneMemCheck`, 64, or in Python when its
//   layout is not the expected one; list, dict and set contents are compared there too, so that
//   they are put back when changed at the same length); no baseline function's
//   code or defaults were assigned (an audit hook sees it); no trace, profile, monitoring or
//   asyncgen hook, no audit hook (refused when added); no file outside the cleaned places
//   changed; no object the execution made is still alive (so no task, callback or proxy of it
//   can run later; nor hidden by gc.freeze: see `laneCanary`); no timer of the execution is
//   pending; the JavaScript globals Python reaches through `js` (and the Pyodide API objects) are
//   the very objects they were.
// This is hygiene between the executions of one session, not a boundary (see
// docs/worker-protocol.md, "Python lanes", for what it does not see).
// Any difference retires the lane: its isolate is terminated and the next execution gets a fresh
// one (prepared in the background as the spare). A lane is also retired after
// `LANE_MAX_EXECUTIONS` executions, when its WebAssembly memory grew past its baseline by more
// than `LANE_MEMORY_GROWTH_BYTES` (it never shrinks), and, as before, on timeout, cancellation,
// crash or flood, where the supervisor terminates the isolate.

/** Executions one Python lane serves before it is retired (bounds what a slow leak can grow). */
const LANE_MAX_EXECUTIONS = 200;
/**
 * How far a lane's WebAssembly memory may grow past its baseline before the lane is retired:
 * that memory never shrinks, and a lane that once held a large allocation would keep it (and
 * its process near its data limit) for every later execution.
 */
const LANE_MEMORY_GROWTH_BYTES = 96 * 1024 * 1024;

/** The reset and the check, installed into module `sandbox` (`_lane_baseline`, `_lane_reset`). */
const PY_LANE = String.raw`
import asyncio, gc, random, stat as _stat
from itertools import chain as _chain, compress as _compress, repeat as _repeat
from operator import contains as _contains, is_ as _is, not_ as _not

# Exact types none of whose instances has a __dict__ the check looks into (functions, modules and
# methods are left out on purpose, see _dict_of): _lane_baseline skips them without a call.
_NO_DICT = frozenset((str, int, float, complex, bool, type(None), bytes, tuple, frozenset, range,
                      types.FunctionType, types.BuiltinFunctionType, types.ModuleType, types.MethodType,
                      types.MethodDescriptorType, types.WrapperDescriptorType, types.GetSetDescriptorType,
                      types.MemberDescriptorType, list, dict, set))

def _dict_of(v):
    "The real __dict__ of a mutable class or of an instance, or None."
    try:
        if isinstance(v, type):
            if v.__flags__ & (1 << 8):  # Py_TPFLAGS_IMMUTABLETYPE
                return None
            r = gc.get_referents(v.__dict__)
            return r[0] if len(r) == 1 and type(r[0]) is dict else None
        if isinstance(v, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            return None
        d = object.__getattribute__(v, "__dict__")
        return d if type(d) is dict else None
    except BaseException:
        return None

def _lane_reset(stage, restore):
    "Puts the interpreter back to its baseline; returns why it cannot be reused, or ''."
    # Runs as a function made afresh by the lane's JavaScript for each reset, from this code and
    # from references only the JavaScript holds (see _lane_baseline), so nothing user code can
    # reach replaces what it calls or what it compares with. It is called twice: stage 1 puts
    # modules, sys, files back; then the JavaScript compares every baseline dict (keys and
    # values, by identity, in order) and every list and dict held by a baseline module with the
    # baseline, in the interpreter's memory (laneMemCheck in 63), and names in restore the
    # containers to put back; stage 2 puts those back and checks the rest. Until the JavaScript's
    # comparison has passed it calls only built-in (C) functions. Without the memory comparison
    # (walked is False: the interpreter's layout is not the one laneMemCheck reads), stage 1
    # makes the same checks in Python. What the execution made and left alive is counted
    # afterwards (see survivors in 63).
    def fs_state():
        out = {}
        todo = ["/"]
        while todo:
            d = todo.pop()
            for n in listdir(d):
                p = ("" if d == "/" else d) + "/" + n
                if p in ("/proc", "/dev", "/sys"):
                    continue
                s = lstat(p)
                out[p] = (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ino)
                if isdir(s.st_mode):
                    todo.append(p)
        return out
    try:
        if stage == 1:
            main = modules.get("__main__")
            if main is not base_main and isinstance(main, ModuleType):
                dict_clear(main.__dict__)
            main = None
            modules["__main__"] = base_main
            for n in [n for n in modules if n not in base_names]:
                m = modules.pop(n, None)
                parent, _, child = n.rpartition(".")
                pm = modules.get(parent) if parent in base_names else None
                pd = pm.__dict__ if isinstance(pm, ModuleType) else None
                if type(pd) is dict and m is not None and pd.get(child) is m:
                    del pd[child]
            m = pm = pd = None
            for n, m in base_modules:
                if modules.get(n) is not m:
                    return f"module {n} was replaced"
            m = None
            for k, v in sys_kept:
                if sys_dict.get(k, sys_dict) is not v:
                    sys_dict[k] = v
            for k in sys_dropped:
                sys_dict.pop(k, None)
            if getrecursionlimit() != limits[0]:
                setrecursionlimit(limits[0])
            if get_int_max_str_digits() != limits[1]:
                set_int_max_str_digits(limits[1])
            if getcwd() != cwd:
                chdir(cwd)
            linecache_cache.pop(user_file, None)
            now = fs_state()
            fs_state = None
            for p in sorted([p for p in now if p not in fs_paths], key=len, reverse=True):
                if not (p in cleaned or p.startswith(cleaned_below)):
                    return f"the execution created {p}"
                if isdir(now[p][0]):
                    rmdir(p)
                else:
                    unlink(p)
            for p, was in fs:
                found = now.get(p)
                if found is None:
                    return f"the execution removed {p}"
                if found != was and not (isdir(was[0]) and p in cleaned_dirs and found[0] == was[0] and found[3] == was[3]):
                    return f"the execution changed {p}"
            now = found = None
            if walked:
                return ""
            # The same checks in Python (slower; containers put back only when their length changed).
            for c, copy in zip(dict_cs, dict_copies):
                if len(c) != len(copy):
                    c.clear()
                    c.update(copy)
            for c, copy in zip(list_cs, list_copies):
                if len(c) != len(copy):
                    c[:] = copy
            c = None
            if tuple(map(len, dicts)) != lens_of_dicts:
                for d, n in zip(dicts, lens_of_dicts):
                    if len(d) != n:
                        what = d.get("__name__") if type(d.get("__name__")) is str else "a class or object"
                        return f"a baseline module, class or object gained or lost an attribute ({what})"
            if tuple(map(next, map(reversed, nonempty))) != last_keys:
                return "an attribute of a baseline module, class or object was renamed"
            if not all(map(is_, chain_from(map(dict_values, dicts)), values)):
                return "an attribute of a baseline module, class or object was replaced"
            return ""
        # Stage 2: the baseline's dicts are intact.
        if restore:
            # Indices into the dicts, then the lists, then the sets modules hold (as laneMemCheck).
            for i in map(int, restore.split(",")):
                c, copy = restorable[i]
                if type(c) is list:
                    c[:] = copy
                else:
                    c.clear()
                    c.update(copy)
        if not walked:
            for c, ids, copy in zip(set_cs, set_ids, set_copies):
                if frozenset(map(id, c)) != ids:
                    c.clear()
                    c.update(copy)
        for c, copy in zip(bytearray_cs, bytearray_copies):
            if c != copy:
                c[:] = copy
        c = None
        if patched:
            return "a baseline function's code or defaults were replaced"
        if gettrace() is not None or getprofile() is not None:
            return "a trace or profile hook was left"
        if tuple(get_asyncgen_hooks()) != asyncgen or tuple(get_tool(i) for i in range(6)) != tools:
            return "an asyncgen or monitoring hook was left"
        # The baseline's functions are intact: Python-level ones may run now.
        flush()
        purge()
        if tuple(environ.items()) != environ_was:
            for k in [k for k in environ if k not in dict(environ_was)]:
                del environ[k]
            for k, v in environ_was:
                if environ.get(k) != v:
                    environ[k] = v
        if get_event_loop() is not loop:
            return "the event loop was replaced"
        if all_tasks(loop):
            return "tasks of the execution are still pending"
        seed()
        return ""
    except BaseException as e:
        tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        return f"the reset failed: {type(e).__name__}: {e} (line {tb.tb_lineno})"[:300]

class _Probe:
    def __init__(self):
        self.a = 1
        self.b = 2
        self.c = 3

def _lane_probe():
    "Dicts and a list of each layout laneMemBaseline reads, and what they hold, for its self-test."
    combined = dict.fromkeys("abcdefghij", 0)
    del combined["c"]
    combined["z"] = combined
    general = {1: "x", (2,): "y", "s": 3, 4.5: None}
    del general[(2,)]
    general[7] = general
    p = _Probe()
    split = p.__dict__
    del p.b
    p.d = 4
    q = _Probe()
    q.__dict__
    dicts = (combined, general, split, q.__dict__, gc.get_referents(_Probe.__dict__)[0], {})
    lists = ([1, "a", None, dicts], [])
    small = {1, "a", None}
    big = set(range(100, 140))
    big.discard(120)
    sets = (small, big, set())
    flat = tuple(_chain.from_iterable(_chain(_chain.from_iterable(map(dict.items, dicts)), lists)))
    return (tuple(map(id, dicts)), tuple(map(id, lists)), id(flat), len(flat),
            tuple(map(id, sets)), tuple(sorted(map(id, _chain.from_iterable(sets)))), (flat, dicts, lists, sets, p, q))

def _lane_baseline():
    "Records the state later executions must find; returns the reset's references (see above)."
    linecache.cache.pop(_F, None)
    re.purge()
    main = sys.modules["__main__"]
    main.__dict__.clear()
    main.__dict__.update(__name__="__main__", __builtins__=builtins)
    chain_from = _chain.from_iterable
    dicts, seen = [], set()
    def add(d):
        if d is not None and id(d) not in seen:
            seen.add(id(d))
            dicts.append(d)
    for n, m in sys.modules.items():
        if n != "__main__" and isinstance(m, types.ModuleType):
            add(m.__dict__)
    add(builtins.__dict__)
    modules_end = len(dicts)
    # The values of module dicts that may have a __dict__, each once, in order (C-level filters:
    # what _dict_of would answer None for without a look is skipped).
    module_values = tuple(chain_from(map(dict.values, dicts)))
    maybe = tuple(_compress(module_values, map(_not, map(_contains, _repeat(_NO_DICT), map(type, module_values)))))
    maybe = list(dict(zip(map(id, maybe), maybe)).values())
    for d in map(_dict_of, maybe):
        add(d)
    maybe = module_values = None
    values = tuple(chain_from(map(dict.values, dicts)))
    types_of = tuple(map(type, values))
    fns = frozenset(_compress(values, map(_is, types_of, _repeat(types.FunctionType))))
    patched = []
    def audit(event, args):
        # Assigning a function's __code__, __defaults__ or __kwdefaults__ is audited; a class's
        # or module's attributes are compared instead (audit hooks cannot be removed: no other
        # may be added, so none can watch later executions). (Assigning a class attribute
        # raises no audit event.)
        if event == "object.__setattr__":
            if args[0] in fns:
                patched.append(args[1])
        elif event == "sys.addaudithook":
            raise RuntimeError("audit hooks are not available in the sandbox")
    sys.addaudithook(audit)
    def held(t):
        "The values of type t (exactly) in the dicts, each once, in order."
        c = tuple(_compress(values, map(_is, types_of, _repeat(t))))
        return tuple(dict(zip(map(id, c), c)).values())
    dict_cs, list_cs, set_cs, bytearray_cs = held(dict), held(list), held(set), held(bytearray)
    kept = ("stdout", "stderr", "stdin", "__stdout__", "__stderr__", "__stdin__", "displayhook",
            "excepthook", "unraisablehook", "breakpointhook", "ps1", "ps2", "last_exc", "last_type",
            "last_value", "last_traceback", "tracebacklimit")
    cleaned = ("/tmp", "/home", "/code-executor", "/code-executor-skills")
    fs = []
    todo = ["/"]
    while todo:
        d = todo.pop()
        for n in os.listdir(d):
            p = ("" if d == "/" else d) + "/" + n
            if p in ("/proc", "/dev", "/sys"):
                continue
            s = os.lstat(p)
            fs.append((p, (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ino)))
            if _stat.S_ISDIR(s.st_mode):
                todo.append(p)
    # Renaming is looked for in every dict (the last key: a rename of any other attribute moves
    # the values). Used only when the memory comparison is not (see laneMemBaseline).
    nonempty = tuple(d for d in dicts if d)
    dict_copies = tuple(map(tuple, map(dict.items, dict_cs)))
    list_copies = tuple(map(tuple, list_cs))
    set_copies = tuple(map(frozenset, set_cs))
    env = dict(
        code=_lane_reset.__code__, FunctionType=types.FunctionType, id=id,
        base_main=main, base_modules=tuple(sys.modules.items()), base_names=frozenset(sys.modules),
        modules=sys.modules, ModuleType=types.ModuleType, dict_clear=dict.clear, dict_values=dict.values,
        sys_dict=sys.__dict__, sys_kept=tuple((k, sys.__dict__[k]) for k in kept if k in sys.__dict__),
        sys_dropped=tuple(k for k in kept if k not in sys.__dict__),
        getrecursionlimit=sys.getrecursionlimit, setrecursionlimit=sys.setrecursionlimit,
        get_int_max_str_digits=sys.get_int_max_str_digits, set_int_max_str_digits=sys.set_int_max_str_digits,
        limits=(sys.getrecursionlimit(), sys.get_int_max_str_digits()),
        getcwd=os.getcwd, chdir=os.chdir, cwd=os.getcwd(), linecache_cache=linecache.cache, user_file=_F,
        dict_cs=dict_cs, dict_copies=dict_copies, list_cs=list_cs, list_copies=list_copies,
        set_cs=set_cs, set_copies=set_copies,
        set_ids=tuple(map(frozenset, map(map, _repeat(id), set_cs))),
        bytearray_cs=bytearray_cs, bytearray_copies=tuple(map(bytes, bytearray_cs)),
        restorable=tuple(zip(dict_cs + list_cs + set_cs, dict_copies + list_copies + set_copies)),
        listdir=os.listdir, lstat=os.lstat, isdir=_stat.S_ISDIR, rmdir=os.rmdir, unlink=os.unlink,
        fs=tuple(fs), fs_paths=frozenset(p for p, _ in fs), cleaned=cleaned,
        cleaned_below=tuple(r + "/" for r in cleaned),
        cleaned_dirs=frozenset(cleaned) | {"/home/pyodide"},
        dicts=tuple(dicts), lens_of_dicts=tuple(map(len, dicts)), nonempty=nonempty,
        last_keys=tuple(next(reversed(d)) for d in nonempty), is_=_is,
        values=values, chain_from=chain_from,
        mem_dicts=tuple(map(id, _chain(dicts, dict_cs))), mem_lists=tuple(map(id, list_cs)),
        mem_sets=tuple(map(id, set_cs)),
        mem_modules_end=modules_end, mem_probe=_lane_probe(),
        mem_layout=(sys.version_info[:2] == (3, 14) and sys.maxsize == 2**31 - 1 and dict.__basicsize__ == 32
                    and list.__basicsize__ == 20 and tuple.__basicsize__ == 16 and set.__basicsize__ == 100),
        patched=patched, gettrace=sys.gettrace, getprofile=sys.getprofile,
        get_asyncgen_hooks=sys.get_asyncgen_hooks, asyncgen=tuple(sys.get_asyncgen_hooks()),
        get_tool=sys.monitoring.get_tool, tools=tuple(sys.monitoring.get_tool(i) for i in range(6)),
        flush=_flush, purge=re.purge, environ=os.environ, environ_was=tuple(os.environ.items()),
        get_event_loop=asyncio.get_event_loop, loop=asyncio.get_event_loop(), all_tasks=asyncio.all_tasks,
        seed=random.seed, get_objects=gc.get_objects, collect=gc.collect, freeze=gc.freeze,
        builtins={n: getattr(builtins, n) for n in (
            "len", "list", "map", "zip", "id", "set", "dict", "tuple", "type", "isinstance", "any", "all",
            "next", "reversed", "sorted", "range", "bytearray", "BaseException", "frozenset", "int", "str")},
    )
    # Garbage of the warm-up, before freezing (the snapshot's objects are frozen already: see
    # makeSnapshot in 61).
    gc.collect()
    gc.freeze()
    return env
`;

/** Executions this lane has served. */
let laneExecutions = 0;
/** The size of the lane's WebAssembly memory when its baseline was taken. */
let laneMemoryBytes = 0;
/**
 * What the JavaScript globals were when the lane became ready: for each object checked, its
 * own keys and each property's value, getter, setter and flags (see `jsFingerprint`).
 */
let jsGlobalsBaseline = null;
/**
 * The references `_lane_reset` runs with, held only here (name -> value or PyProxy), and its
 * built-ins (`builtins`), from which each reset makes its globals afresh; null until the
 * baseline is taken (and in TypeScript isolates).
 * @type {Map<string, unknown> | null}
 */
let laneEnv = null;
let laneBuiltins = null;
/**
 * The baseline of the dicts and lists compared in memory (`laneMemCheck`), or null when that
 * comparison is not used (the interpreter's layout failed `laneMemBaseline`'s self-test).
 */
let laneMem = null;
/**
 * A list made after the baseline was frozen, held only here: `survivors` must find it among the
 * collector's objects, or the execution froze them (gc.freeze), hiding what it left alive.
 */
let laneCanary = null;

const ReflectOwnKeys = Reflect.ownKeys;
const ObjectIsExtensible = Object.isExtensible;
const ObjectIs = Object.is;

/**
 * The objects whose properties are fingerprinted: the global object, every object or function
 * a global property holds (value, getter or setter), their `prototype`s and prototypes, and the
 * Pyodide API (what Python reaches through `js` and `pyodide_js`).
 */
function jsCheckedObjects() {
  const out = new SetCtor();
  const add = (v) => {
    if ((typeof v === "object" && v !== null) || typeof v === "function") out.add(v);
  };
  add(globalThis);
  add(pyodide);
  add(pyodide?._api);
  for (const key of ReflectOwnKeys(globalThis)) {
    const d = ObjectGetOwnPropertyDescriptor(globalThis, key);
    add(d.value);
    add(d.get);
    add(d.set);
  }
  for (const o of [...out]) {
    add(ObjectGetPrototypeOf(o));
    if (typeof o === "function") add(ObjectGetOwnPropertyDescriptor(o, "prototype")?.value);
  }
  return [...out];
}

function jsFingerprint(target) {
  const keys = ReflectOwnKeys(target);
  const parts = [];
  for (const key of keys) {
    const d = ObjectGetOwnPropertyDescriptor(target, key);
    parts.push(d.value, d.get, d.set, d.writable, d.configurable);
  }
  return { target, keys, parts, proto: ObjectGetPrototypeOf(target), extensible: ObjectIsExtensible(target) };
}

/**
 * Which fingerprinted object no longer has exactly its baseline properties (the key that
 * differs, for the diagnostics), or null when all have.
 */
function jsGlobalsChanged() {
  for (const was of jsGlobalsBaseline) {
    const now = jsFingerprint(was.target);
    const name = typeof was.target === "function" ? safeString(was.target.name) : "an object";
    if (now.proto !== was.proto || now.extensible !== was.extensible) return `${name}: its prototype`;
    if (now.keys.length !== was.keys.length) return `${name}: a property added or removed`;
    for (let i = 0; i < now.keys.length; i++) {
      if (now.keys[i] !== was.keys[i]) return `${name}: ${safeString(was.keys[i])}`;
    }
    for (let i = 0; i < now.parts.length; i++) {
      if (!ObjectIs(now.parts[i], was.parts[i])) return `${name}: ${safeString(was.keys[Math.floor(i / 5)])}`;
    }
  }
  return null;
}

/**
 * Before `ready`: runs a warm-up program (so the baseline holds what running code loads), then
 * takes the baseline of both sides.
 */
async function takeLaneBaseline() {
  executeReceived = true;
  finished = true; // output of the warm-up goes nowhere
  try {
    // The JavaScript modules are part of the baseline: importing one again gives the same object.
    // So are the caches a first file, print, error or import fills.
    await pyRun(
      "import json, os, js, pyodide_js, _sandbox_host\nprint(json.dumps([1]))\n" +
        "with open('/tmp/.lane', 'w') as f:\n    f.write('x')\nwith open('/tmp/.lane') as f:\n    f.read()\n" +
        "open('/tmp/.lane', 'w').write('unclosed')\n" +
        "os.remove('/tmp/.lane')\ntry:\n    raise ValueError('x')\nexcept ValueError:\n    pass\n",
    );
    await pyRun("raise KeyError('warm-up')");
  } finally {
    executeReceived = false;
    finished = false;
  }
  const env = pyodide.runPython("import sandbox\nsandbox._lane_baseline()");
  laneEnv = env.toJs({ depth: 1, dict_converter: (entries) => new MapCtor(entries) });
  env.destroy();
  const builtins = laneEnv.get("builtins");
  laneBuiltins = builtins.toJs({ depth: 1, dict_converter: (entries) => new MapCtor(entries) });
  builtins.destroy();
  laneEnv.delete("builtins");
  laneMem = laneMemBaseline();
  if (laneMem === null) diag("the Python lane compares its baseline in Python (the interpreter's layout is not the one expected)");
  // A first reset, then everything made so far (the proxies' own caches included) is frozen too.
  const why = pyLaneReset();
  laneEnv.get("collect")();
  laneEnv.get("freeze")();
  laneCanary = laneBuiltins.get("list")();
  // (It reports the objects the baseline's own conversions made, frozen just above.) Anything
  // else means each lane will retire after its first execution: slower, never less clean.
  if (why !== "" && !why.startsWith("objects made")) diag("the Python lane's baseline does not hold: " + why);
  jsGlobalsBaseline = jsCheckedObjects().map(jsFingerprint);
  laneMemoryBytes = pyodide._module.HEAPU8.length;
}

/**
 * Runs `_lane_reset` as a function made now from its code and from `laneEnv` (see 63's top):
 * stage 1, the comparison in memory (`laneMemCheck`), then stage 2.
 */
function pyLaneReset() {
  const globals = pyodide.toPy(new MapCtor([...laneEnv, ["__builtins__", laneBuiltins], ["walked", laneMem !== null]]));
  let fn = null;
  try {
    fn = laneEnv.get("FunctionType")(laneEnv.get("code"), globals);
    const why = String(fn(1, ""));
    if (why !== "") return why;
    let restore = "";
    if (laneMem !== null) {
      const found = laneMemCheck();
      if (found.why !== "") return found.why;
      restore = found.restore;
    }
    return String(fn(2, restore));
  } finally {
    fn?.destroy();
    globals.destroy();
  }
}

/**
 * How many objects made since the baseline are still alive, after a collection: everything of
 * the baseline is frozen out of the collector's sight (gc.freeze), so what it tracks was made
 * since (but `laneCanary`), and none of it may outlive the execution (no task, callback, proxy
 * or cycle of it).
 */
function survivors() {
  laneEnv.get("collect")();
  const alive = laneEnv.get("get_objects")();
  try {
    const types = new SetCtor();
    let canary = laneCanary === null;
    for (let i = 0; i < alive.length && types.size < 6; i++) {
      const o = alive.get(i);
      if (!canary && laneEnv.get("is_")(o, laneCanary)) canary = true;
      else types.add(typeof o === "object" && o !== null ? safeString(o.type) : typeof o);
      o?.destroy?.();
    }
    // Not found: gc.freeze() moved it, with whatever else the collector tracked, out of sight.
    if (!canary) types.add("(hidden by gc.freeze)");
    return [...types];
  } finally {
    alive.destroy();
  }
}

/**
 * After an execution's `done`: resets the lane and checks it. Returns why it cannot serve
 * another execution, or null when it can (and is ready again).
 */
async function recycleLane() {
  await macrotaskTurn();
  laneExecutions++;
  if (laneExecutions >= LANE_MAX_EXECUTIONS) return `served ${laneExecutions} executions`;
  if (pyRunning) return "the execution's Python code is still running";
  if (pyCrashed) return "the Python runtime crashed";
  if (userTimers.size > 0) return "timers of the execution are pending";
  const memory = pyodide._module.HEAPU8.length;
  if (memory > laneMemoryBytes + LANE_MEMORY_GROWTH_BYTES) {
    return `its memory grew to ${Math.round(memory / 1048576)} MiB (from ${Math.round(laneMemoryBytes / 1048576)} MiB)`;
  }
  let why;
  try {
    why = String(pyLaneReset());
  } catch (e) {
    return "the reset failed: " + oneLine(e);
  }
  if (why !== "") return why;
  const alive = survivors();
  if (alive.length > 0) return "objects made by the execution are still alive: " + alive.join(", ");
  if (userTimers.size > 0) return "timers of the execution are pending";
  const changed = jsGlobalsChanged();
  if (changed !== null) return "a JavaScript global was changed (" + changed + ")";
  resetExecutionState();
  return null;
}

/** The runner's own per-execution state, as before the first execution. */
function resetExecutionState() {
  executeReceived = false;
  executing = false;
  finished = false;
  asyncFailure = null;
  rejectAsyncFailure = null;
  outputLimit = DEFAULT_OUTPUT_LIMIT;
  outputSent = 0;
  outputClosed = false;
  outputTail = "";
  outputTailStream = "stdout";
  outputUnsent = 0;
  groupIndent = "";
  pendingCalls.clear();
  currentModuleMapper = null;
  inspectCustom = true;
  skillUrls.clear();
  skillTexts.clear();
  for (const writer of pyWriters) writer.reset();
  stopReadingRequested = false;
}
