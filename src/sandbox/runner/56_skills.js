// 56_skills.js: skills, the modules code saves for later executions: the global `saveSkill`
// (its code checked before it leaves: TypeScript must parse, imports must be ones the sandbox
// offers), linking `skills/<name>.ts` references to data: URLs of the skills' text fetched from
// the host, each held to the import rules (`linkSkills`, `skillImport`), and the Python package
// `skills` written into this isolate's Pyodide file system (`installPythonSkills`). Relies on
// 00-32, `uniqueModule`, `WRAPPER_PREFIX` (31, 50), `linkWrappers` (55); uses `pyodide` (60).
// What runs after user code (importing a skill at run time, saving one) keeps to 03's intrinsics
// wherever it decides what is loaded.

// ---------------------------------------------------------------------------------------------
// Skills (docs/interface.md). The host keeps them in the project's workspace, which this
// process may not read: an execution asks for the ones it imports (`loadSkills`, one host call
// per round of imports) before its code runs. Each isolate gets its own copy: TypeScript as
// data: modules (which nothing can change), Python as read-only files in its in-memory file
// system. A skill's tool calls are the caller's: the same allowlist, the same budget.
// ---------------------------------------------------------------------------------------------

/** The language of this isolate's execution (set by `execute`). */
let executionLanguage = "typescript";
/** Most skills one execution loads (the host holds the same bound). */
const MAX_SKILLS_LOADED = 64;
/** name -> data: URL of the linked skill module (this isolate's; read with 03's intrinsics). */
const skillUrls = new MapCtor();
/** name -> text (or the error message) fetched from the host, with its JavaScript (`js`, 52). */
const skillTexts = new MapCtor();

/**
 * The skill names a TypeScript module source references statically (`import`, `export ...
 * from`; its dynamic `import(` calls are `__imp_(` calls once guarded, loaded through
 * `importForUser` when they run), as a list (03).
 */
function tsSkillImports(source) {
  if (StringPrototypeIndexOf(source, "skills/") < 0) return list();
  return referencedNames(source, IMPORTABLE_SKILL_RE);
}

/**
 * Fetches, once per isolate, the named skills and every skill they import (`importsOf` reads a
 * skill's imports, a list); a skill that cannot be loaded is kept as its error message. (What
 * it fetches decides nothing: every text is held to the import rules when it is linked.)
 */
async function fetchSkills(names, language, importsOf, caller) {
  let wanted = list();
  for (let i = 0; i < names.length; i++) if (!skillTexts.has(names[i]) && !listHas(wanted, names[i])) append(wanted, names[i]);
  while (wanted.length > 0) {
    if (skillTexts.size + wanted.length > MAX_SKILLS_LOADED) {
      throw new RangeError(`an execution may import at most ${MAX_SKILLS_LOADED} skills (with the skills they import)`);
    }
    const answer = await hostCall("loadSkills", { names: wanted, language }, caller);
    const next = list();
    for (let i = 0; i < wanted.length; i++) {
      const name = wanted[i];
      const skill = answer.skills.find((s) => s.name === name);
      const text = skill === undefined
        ? { error: safeString(answer.errors?.[name] ?? `skill ${name} not loaded`) }
        : { code: skill.code, js: typeof skill.js === "string" ? skill.js : null };
      skillTexts.set(name, text);
      if (typeof text.code === "string") {
        const deps = importsOf(text.code);
        for (let j = 0; j < deps.length; j++) if (!skillTexts.has(deps[j]) && !listHas(next, deps[j])) append(next, deps[j]);
      }
    }
    wanted = next;
  }
}

/**
 * The data: URL of TypeScript skill `name` (fetched), held to the import rules, its own skill
 * references linked first. A cycle between skills is refused: each module's URL is made of its
 * text, so it must exist before the module that references it. `path` is a list (03).
 */
function skillModuleUrl(name, path) {
  if (MapPrototypeHas(skillUrls, name)) return MapPrototypeGet(skillUrls, name);
  if (listHas(path, name)) {
    let chain = "";
    for (let i = 0; i < path.length; i++) chain += path[i] + " -> ";
    throw new Error(`skills import each other in a cycle (${chain}${name}); move what they share into a skill of its own`);
  }
  const text = skillTexts.get(name);
  const code = text?.code;
  // Before anything runs: a module that threw instead would fail the import as "does not
  // provide an export named ...", which says nothing of why.
  if (typeof code !== "string") throw new Error(safeString(text?.error ?? `skill ${name} not loaded`));
  let source;
  try {
    source = linkWrappers(guardModule(code).source);
  } catch (e) {
    throw new Error(`skill ${name}: ${safeString(e?.message ?? e)}`);
  }
  const inner = list();
  for (let i = 0; i < path.length; i++) append(inner, path[i]);
  append(inner, name);
  if (StringPrototypeIndexOf(source, "skills/") >= 0) {
    source = linkReferences(source, IMPORTABLE_SKILL_RE, (dep) => skillModuleUrl(dep, inner));
  }
  const url = "data:application/typescript;base64," + base64Utf8(uniqueModule(source));
  MapPrototypeSet(skillUrls, name, url);
  return url;
}

/** Links the `skills/<name>.ts` references of a (guarded) TypeScript module source to the skills' modules. */
async function linkSkills(source) {
  const names = tsSkillImports(source);
  if (names.length === 0) return source;
  await fetchSkills(names, "typescript", tsSkillImports, linkSkills);
  return linkReferences(source, IMPORTABLE_SKILL_RE, (name) => skillModuleUrl(name, list()));
}

/** `import("skills/<name>.ts")` at run time. */
async function skillImport(name) {
  const names = list();
  append(names, name);
  await fetchSkills(names, "typescript", tsSkillImports, skillImport);
  return await import(skillModuleUrl(name, list()));
}

// ---------------------------------------------------------------------------------------------
// Saving
// ---------------------------------------------------------------------------------------------

const SKILL_LANGUAGES = { typescript: "typescript", ts: "typescript", python: "python", py: "python" };

/** `source` with each range of `ranges` (a list of [start, end], in order) blanked in place (line breaks kept). */
function blankRanges(source, ranges) {
  let out = "";
  let from = 0;
  for (let i = 0; i < ranges.length; i++) {
    const s = ranges[i][0];
    const e = ranges[i][1];
    out += StringPrototypeSlice(source, from, s);
    for (let k = s; k < e; k++) out += isLineBreak(StringPrototypeCharCodeAt(source, k)) ? StringPrototypeSlice(source, k, k + 1) : " ";
    from = e;
  }
  return out + StringPrototypeSlice(source, from);
}

/**
 * The ranges that hold a module's declarations of imports and exports as they would be blanked
 * to compile its body as a function's: each static module reference (`import ... from`,
 * `export ... from`), `export { ... }` lists, and the words `export` (and `default`).
 */
function declarationRanges(tokens) {
  const refs = findModuleReferences(tokens);
  const ranges = list();
  let r = 0;
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k];
    while (r < refs.length && refs[r].s < tok.s) r++;
    if (r < refs.length && refs[r].s === tok.s) {
      append(ranges, [refs[r].s, refs[r].e]);
      while (k + 1 < tokens.length && tokens[k + 1].s < refs[r].e) k++;
      r++;
      continue;
    }
    if (tok.t !== "id" || tok.v !== "export" || tok.d !== 0) continue;
    let next = tokens[k + 1];
    let end = k;
    if (next !== undefined && next.t === "id" && next.v === "type" && isPunct(tokens[k + 2], "{")) next = tokens[++end + 1];
    if (isPunct(next, "{")) {
      // `export { a }`: the whole list.
      end += 2;
      while (end < tokens.length && !(isPunct(tokens[end], "}") && tokens[end].d === 0)) end++;
      if (isPunct(tokens[end + 1], ";")) end++;
      if (end >= tokens.length) end = tokens.length - 1;
    } else if (next !== undefined && next.t === "id" && next.v === "default") {
      end = k + 1;
    }
    append(ranges, [tok.s, tokens[end].e]);
    k = end;
  }
  return ranges;
}

/**
 * Refuses TypeScript that does not parse, or that imports what the sandbox does not offer,
 * without running it: the guarded source's declarations are compiled as the body of a function
 * that is never called (imports and `export` words blanked in place, so lines and columns stay).
 */
async function checkTypeScriptSkill(name, code) {
  const guarded = guardModule(code).source;
  let body = blankRanges(guarded, declarationRanges(tokenize(guarded).tokens));
  if (StringPrototypeStartsWith(body, "#!")) body = "//" + StringPrototypeSlice(body, 2);
  const url = "data:application/typescript;base64," + base64Utf8(uniqueModule(WRAPPER_PREFIX + body + "\n}\n"));
  try {
    await import(url);
  } catch (e) {
    const why = safeString(e?.message ?? e).split(url).join(`skills/${name}.ts`);
    throw new SyntaxError(`saveSkill: skill ${name} was not saved, its TypeScript does not parse: ${truncateUtf8(why, 2000)}`);
  }
}

/** The params of a `saveSkill` host call, checked (TypeScript code must parse). */
async function saveSkillParams(name, code, options, fn) {
  if (typeof name !== "string") throw new TypeError(`${fn}: name must be a string such as "fetch_report"`);
  if (typeof code !== "string" || code.trim() === "") throw new TypeError(`${fn}: code must be a non-empty string`);
  const opts = optionsObject(options, fn);
  const language = opts.language === undefined || opts.language === null
    ? executionLanguage
    : SKILL_LANGUAGES[typeof opts.language === "string" ? opts.language : ""];
  if (language === undefined) throw new TypeError(`${fn}: language must be "typescript" or "python"`);
  /** @type {Record<string, unknown>} */
  const params = { name, code, language };
  if (opts.description !== undefined && opts.description !== null) {
    if (typeof opts.description !== "string") throw new TypeError(`${fn}: description must be a string`);
    params.description = opts.description;
  }
  if (language === "typescript") await checkTypeScriptSkill(name, code);
  return params;
}

/**
 * `saveSkill(name, code, {description?, language?}?)`: saves a module later executions import
 * (`import { f } from "skills/<name>.ts"`, `from skills import <name>`); resolves to
 * `{name, language, import, usage, exports, size}`.
 */
async function saveSkill(name, code, options) {
  const params = await saveSkillParams(name, code, options, "saveSkill");
  return await hostCall("saveSkill", params, saveSkill);
}

// ---------------------------------------------------------------------------------------------
// Python: the package `skills`
// ---------------------------------------------------------------------------------------------

const PY_SKILLS_ROOT = "/code-executor-skills";
const PY_FROM_SKILLS_RE = /^[ \t]*from[ \t]+skills[ \t]+import[ \t]*(\([^)]*\)|[^\n#;]*)/gm;
const PY_FROM_SKILL_RE = /^[ \t]*from[ \t]+skills\.([a-z][a-z0-9_]*)[ \t]+import\b/gm;
const PY_IMPORT_RE = /^[ \t]*import[ \t]+([^\n#;]*)/gm;
const PY_SKILL_NAME_RE = /^[a-z][a-z0-9_]*$/;

/** The skill names Python `code` imports (`from skills import a, b`, `from skills.a import f`, `import skills.a`). */
function pySkillImports(code) {
  const names = [];
  if (!code.includes("skills")) return names;
  const add = (n) => {
    if (PY_SKILL_NAME_RE.test(n) && !names.includes(n)) names.push(n);
  };
  for (const m of code.matchAll(PY_FROM_SKILLS_RE)) {
    for (const part of m[1].replace(/[()\\]/g, " ").split(",")) add(part.trim().split(/\s+/)[0] ?? "");
  }
  for (const m of code.matchAll(PY_FROM_SKILL_RE)) add(m[1]);
  for (const m of code.matchAll(PY_IMPORT_RE)) {
    for (const part of m[1].split(",")) {
      const dotted = part.trim().split(/\s+/)[0] ?? "";
      if (dotted.startsWith("skills.")) add(dotted.slice(7).split(".")[0]);
    }
  }
  return names;
}

/**
 * Writes the skills `code` imports (and theirs) into this isolate's file system as the package
 * `skills`, read-only; a skill that could not be loaded becomes a module raising ImportError
 * with the reason.
 */
async function installPythonSkills(code) {
  const names = pySkillImports(code);
  if (names.length === 0 || pyodide === null) return;
  await fetchSkills(names, "python", pySkillImports, installPythonSkills);
  const pkg = PY_SKILLS_ROOT + "/skills";
  const FS = pyodide.FS;
  FS.mkdirTree(pkg);
  const write = (file, text) => {
    const path = pkg + "/" + file;
    if (FS.analyzePath(path).exists) return;
    FS.writeFile(path, text);
    FS.chmod(path, 0o444);
  };
  write("__init__.py", '"""Skills saved with save_skill (read-only copies for this execution)."""\n');
  for (const [name, text] of skillTexts) {
    write(name + ".py", text.code ?? "raise ImportError(" + JSONStringify(text.error) + ")\n");
  }
  pyodide.runPython(
    `import sys, importlib\nif ${JSONStringify(PY_SKILLS_ROOT)} not in sys.path: sys.path.insert(0, ${JSONStringify(PY_SKILLS_ROOT)})\nimportlib.invalidate_caches()`,
  );
}
