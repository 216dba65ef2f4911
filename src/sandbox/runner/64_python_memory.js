// 64_python_memory.js: the Python lane's check in the interpreter's memory (`laneMemBaseline`,
// `laneMemCheck`, used by 63): every baseline dict (keys and values, by identity, in order) and
// every list, dict and set a baseline module holds, compared with the baseline by reading
// CPython's objects in the WebAssembly heap. Comparing them in Python took 5-9 ms per reset (the
// interpreter's wasm stays in V8's baseline tier); this takes about 1 ms. It reads CPython 3.14's
// layout on wasm32 only: `_lane_baseline` (63) checks the version and the object sizes, and
// `laneMemBaseline` first reads probe dicts, lists and sets of each layout and compares what it
// read with what Python iterates; on any difference the lane compares in Python instead (slower,
// never less clean). Relies on 00-02, `pyodide` (60) and `laneEnv`, `laneMem` (63).

const Uint32ArrayCtor = Uint32Array;
const TypedArraySort = Object.getPrototypeOf(Uint32Array.prototype).sort;

// The baseline's dicts and containers, compared in the interpreter's memory: CPython 3.14 on
// wasm32 (checked by `mem_layout` and by the self-test on `_lane_probe`'s dicts). A dict
// (PyDictObject) holds ma_used at byte 8, ma_keys at 24, ma_values at 28; its keys object
// (PyDictKeysObject) dk_log2_index_bytes at 5, dk_kind at 6, dk_nentries at 16, its indices from
// 20 and then its entries: {key, value} (unicode kinds) or {hash, key, value} (general). A split
// dict's values (ma_values) hold capacity at byte 0, size at 1, the values from 4 and then the
// insertion order, a byte an entry. A list holds ob_size at 8 and its items' address at 12.

/**
 * Appends the key and value addresses of the dict at `d` (in iteration order) to `out` from
 * `at` on and returns where they end; -1 when `out` is full. The entries are those of the
 * current keys and values: a dict that grew, shrank or changed layout is read as it now is.
 */
function memDictRead(h32, h8, d, out, at) {
  const keys = h32[(d + 24) >>> 2];
  const vals = h32[(d + 28) >>> 2];
  const entries = (keys + 20 + (1 << h8[keys + 5])) >>> 2;
  if (vals === 0) {
    const general = h8[keys + 6] === 0;
    const stride = general ? 3 : 2;
    const n = h32[(keys + 16) >>> 2];
    for (let i = 0, e = entries + (general ? 1 : 0); i < n; i++, e += stride) {
      const v = h32[e + 1];
      if (v === 0) continue;
      if (at + 2 > out.length) return -1;
      out[at++] = h32[e];
      out[at++] = v;
    }
  } else {
    const size = h8[vals + 1];
    const order = vals + 4 + 4 * h8[vals];
    const v0 = (vals + 4) >>> 2;
    for (let i = 0; i < size; i++) {
      const ix = h8[order + i];
      const v = h32[v0 + ix];
      if (v === 0) continue;
      if (at + 2 > out.length) return -1;
      out[at++] = h32[entries + 2 * ix];
      out[at++] = v;
    }
  }
  return at;
}

/** Where `memDictSame` reads a dict before comparing it (grown as needed). */
let memScratch = new Uint32ArrayCtor(1024);

/**
 * Whether the dict at `d` holds exactly the keys and values `base[at, at + n)` (n words), read
 * by `memDictRead` (the reading the baseline's self-test checked).
 */
function memDictSame(h32, h8, d, base, at, n) {
  if (h32[(d + 8) >>> 2] * 2 !== n) return false;
  if (memScratch.length < n + 2) memScratch = new Uint32ArrayCtor(2 * n + 2);
  if (memDictRead(h32, h8, d, memScratch, 0) !== n) return false;
  for (let i = 0; i < n; i++) if (memScratch[i] !== base[at + i]) return false;
  return true;
}

/** Appends the item addresses of the list at `l` to `out` from `at` on; where they end, or -1 when `out` is full. */
function memListRead(h32, l, out, at) {
  const n = h32[(l + 8) >>> 2];
  const items = h32[(l + 12) >>> 2] >>> 2;
  if (at + n > out.length) return -1;
  for (let i = 0; i < n; i++) out[at++] = h32[items + i];
  return at;
}

/**
 * The element addresses of the set at `s` (PySetObject: used at byte 12, mask at 16, table at
 * 20; entries {key, hash}, a dummy's hash -1), sorted (the table's order depends on its history).
 */
function memSetRead(h32, s) {
  const used = h32[(s + 12) >>> 2], slots = h32[(s + 16) >>> 2] + 1, table = h32[(s + 20) >>> 2] >>> 2;
  const out = new Uint32ArrayCtor(used);
  let n = 0;
  for (let i = 0; i < slots; i++) {
    const k = h32[table + 2 * i];
    if (k === 0 || h32[table + 2 * i + 1] === 0xffffffff) continue;
    if (n === used) return null;
    out[n++] = k;
  }
  return n === used ? ReflectApply(TypedArraySort, out, []) : null;
}

/** Whether the list at `l` holds exactly the items `base[at, at + n)`. */
function memListSame(h32, l, base, at, n) {
  if (h32[(l + 8) >>> 2] !== n) return false;
  const items = h32[(l + 12) >>> 2] >>> 2;
  for (let i = 0; i < n; i++) if (h32[items + i] !== base[at + i]) return false;
  return true;
}

/**
 * Records the baseline of the dicts (`mem_dicts`: the checked dicts, then the dicts held by
 * modules) and lists (`mem_lists`) of `laneEnv`, after a self-test: the dicts and lists of
 * `_lane_probe` (each layout: combined, general, split, with deleted entries) must read as
 * Python iterates them. Returns null when the layout is not the one these functions read.
 */
function laneMemBaseline() {
  const M = pyodide._module;
  const toArray = (t) => {
    const a = t.toJs();
    t.destroy?.();
    return Int32Array.from(a, (x) => x >>> 0);
  };
  const layout = laneEnv.get("mem_layout");
  const probe = laneEnv.get("mem_probe");
  for (const k of ["mem_layout", "mem_probe"]) laneEnv.delete(k);
  try {
    if (layout !== true) return null;
    const h32 = M.HEAPU32, h8 = M.HEAPU8;
    const pDicts = toArray(probe.get(0)), pLists = toArray(probe.get(1));
    const flat = probe.get(2) >>> 0, flatLen = probe.get(3);
    const got = new Uint32Array(flatLen + 2);
    let at = 0;
    for (const d of pDicts) {
      const was = at;
      at = memDictRead(h32, h8, d >>> 0, got, at);
      if (at < 0 || h32[((d >>> 0) + 8) >>> 2] * 2 !== at - was) return null;
    }
    for (const l of pLists) {
      at = memListRead(h32, l >>> 0, got, at);
      if (at < 0) return null;
    }
    if (at !== flatLen) return null;
    for (let i = 0; i < flatLen; i++) if (got[i] !== h32[((flat + 16) >>> 2) + i]) return null;
    const setElements = Uint32Array.from(probe.get(5).toJs());
    const read = [];
    for (const p of toArray(probe.get(4))) {
      const r = memSetRead(h32, p >>> 0);
      if (r === null) return null;
      read.push(...r);
    }
    read.sort((a, b) => a - b);
    if (read.length !== setElements.length || read.some((x, i) => x !== setElements[i])) return null;
  } finally {
    probe.destroy();
  }
  const h32 = M.HEAPU32, h8 = M.HEAPU8;
  const dicts = toArray(laneEnv.get("mem_dicts")), lists = toArray(laneEnv.get("mem_lists"));
  const setAddrs = toArray(laneEnv.get("mem_sets"));
  const modulesEnd = laneEnv.get("mem_modules_end");
  const checked = laneEnv.get("lens_of_dicts").length;
  for (const k of ["mem_dicts", "mem_lists", "mem_sets", "mem_modules_end"]) laneEnv.delete(k);
  const sets = [];
  for (const a of setAddrs) {
    const r = memSetRead(h32, a >>> 0);
    if (r === null) return null;
    sets.push({ addr: a >>> 0, elements: r });
  }
  let words = 0;
  for (const d of dicts) words += 2 * h32[((d >>> 0) + 8) >>> 2];
  for (const l of lists) words += h32[((l >>> 0) + 8) >>> 2];
  const base = new Uint32Array(words);
  const dictAt = new Int32Array(dicts.length + 1), listAt = new Int32Array(lists.length + 1);
  let at = 0;
  for (let i = 0; i < dicts.length; i++) {
    dictAt[i] = at;
    at = memDictRead(h32, h8, dicts[i] >>> 0, base, at);
    if (at < 0) return null;
  }
  dictAt[dicts.length] = at;
  for (let i = 0; i < lists.length; i++) {
    listAt[i] = at;
    at = memListRead(h32, lists[i] >>> 0, base, at);
    if (at < 0) return null;
  }
  listAt[lists.length] = at;
  if (at !== words) return null;
  // Only the Python checks' own data is no longer needed.
  for (const k of ["values", "lens_of_dicts", "nonempty", "last_keys", "set_ids"]) laneEnv.get(k)?.destroy?.(), laneEnv.delete(k);
  return { M, dicts, lists, sets, modulesEnd, checked, base, dictAt, listAt };
}

/**
 * Compares the baseline's dicts and the containers held by modules with `laneMem`: why the
 * lane cannot be reused (an attribute of a module, class or object added, removed, renamed or
 * replaced), or the containers to put back ("" for none), as the indices stage 2 takes.
 */
function laneMemCheck() {
  const { M, dicts, lists, sets, modulesEnd, checked, base, dictAt, listAt } = laneMem;
  const h32 = M.HEAPU32, h8 = M.HEAPU8;
  for (let i = 0; i < checked; i++) {
    const at = dictAt[i], n = dictAt[i + 1] - at;
    if (!memDictSame(h32, h8, dicts[i] >>> 0, base, at, n)) {
      const what = i < modulesEnd ? "module" : "class or object";
      return h32[((dicts[i] >>> 0) + 8) >>> 2] * 2 !== n
        ? { why: `a baseline ${what} gained or lost an attribute`, restore: "" }
        : { why: `an attribute of a baseline ${what} was replaced or renamed`, restore: "" };
    }
  }
  let restore = "";
  for (let i = checked; i < dicts.length; i++) {
    const at = dictAt[i];
    if (!memDictSame(h32, h8, dicts[i] >>> 0, base, at, dictAt[i + 1] - at)) restore += (restore ? "," : "") + (i - checked);
  }
  for (let i = 0; i < lists.length; i++) {
    const at = listAt[i];
    if (!memListSame(h32, lists[i] >>> 0, base, at, listAt[i + 1] - at)) {
      restore += (restore ? "," : "") + (dicts.length - checked + i);
    }
  }
  for (let i = 0; i < sets.length; i++) {
    const now = memSetRead(h32, sets[i].addr), was = sets[i].elements;
    let same = now !== null && now.length === was.length;
    for (let j = 0; same && j < was.length; j++) same = now[j] === was[j];
    if (!same) restore += (restore ? "," : "") + (dicts.length - checked + lists.length + i);
  }
  return { why: "", restore };
}
