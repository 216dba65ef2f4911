// 56_skills.js: skills, the modules code saves for later executions: the global `saveSkill`
// (its code checked before it leaves: TypeScript must parse, imports must be ones the sandbox
// offers), linking `skills/<name>.ts` imports to data: URLs of the skills' text fetched from
// the host (`linkSkills`, `skillImport`), and the Python package `skills` written into this
// isolate's Pyodide file system (`installPythonSkills`). Relies on 00-31, `guardImports`,
// `uniqueModule`, `WRAPPER_PREFIX` (50), `linkWrappers` (55); uses `pyodide` (60).

// ---------------------------------------------------------------------------------------------
// Skills (docs/interface.md). The host keeps them in the project's workspace, which this
// process may not read: an execution asks for the ones it imports (`loadSkills`, one host call
// per round of imports) before its code runs. Each isolate gets its own copy: TypeScript as
// data: modules (which nothing can change), Python as read-only files in its in-memory file
// system. A skill's tool calls are the caller's: the same allowlist, the same budget.
// ---------------------------------------------------------------------------------------------

/** The language of this isolate's execution (set by `execute`). */
let executionLanguage = "typescript";
const SKILL_SPECIFIER_RE = /(\bfrom\s*|\bimport\s*\(?\s*)(["'])skills\/([a-z][a-z0-9_]*)(?:\.ts)?\2/g;
const IMPORTABLE_SKILL_RE = /^skills\/([a-z][a-z0-9_]*)(?:\.ts)?$/;
/** Most skills one execution loads (the host holds the same bound). */
const MAX_SKILLS_LOADED = 64;
/** name -> data: URL of the linked skill module (this isolate's). */
const skillUrls = new MapCtor();
/** name -> text (or the error message) fetched from the host. */
const skillTexts = new MapCtor();

/**
 * The skill names a TypeScript module source imports statically (its dynamic `import(` calls
 * are `__imp_(` calls once guarded, loaded through `importForUser` when they run).
 */
function tsSkillImports(source) {
  const names = [];
  if (!source.includes("skills/")) return names;
  for (const m of source.matchAll(SKILL_SPECIFIER_RE)) if (!names.includes(m[3])) names.push(m[3]);
  return names;
}

/**
 * Fetches, once per isolate, the named skills and every skill they import (`importsOf` reads a
 * skill's imports); a skill that cannot be loaded is kept as its error message.
 */
async function fetchSkills(names, language, importsOf, caller) {
  let wanted = names.filter((n) => !skillTexts.has(n));
  while (wanted.length > 0) {
    if (skillTexts.size + wanted.length > MAX_SKILLS_LOADED) {
      throw new RangeError(`an execution may import at most ${MAX_SKILLS_LOADED} skills (with the skills they import)`);
    }
    const answer = await hostCall("loadSkills", { names: wanted, language }, caller);
    const next = [];
    for (const name of wanted) {
      const skill = answer.skills.find((s) => s.name === name);
      const text = skill === undefined ? { error: safeString(answer.errors?.[name] ?? `skill ${name} not loaded`) } : { code: skill.code };
      skillTexts.set(name, text);
      if (text.code !== undefined) {
        for (const dep of importsOf(text.code)) if (!skillTexts.has(dep) && !next.includes(dep)) next.push(dep);
      }
    }
    wanted = next;
  }
}

/**
 * The data: URL of TypeScript skill `name` (fetched), its own skill imports linked first. A cycle
 * between skills is refused: each module's URL is made of its text, so it must exist before
 * the module that imports it.
 */
function skillModuleUrl(name, path) {
  const known = skillUrls.get(name);
  if (known !== undefined) return known;
  if (path.includes(name)) {
    throw new Error(
      `skills import each other in a cycle (${[...path, name].join(" -> ")}); move what they share into a skill of its own`,
    );
  }
  const text = skillTexts.get(name);
  // Before anything runs: a module that threw instead would fail the import as "does not
  // provide an export named ...", which says nothing of why.
  if (text === undefined || text.code === undefined) throw new Error(text?.error ?? `skill ${name} not loaded`);
  let source;
  try {
    source = linkWrappers(guardImports(text.code));
  } catch (e) {
    throw new Error(`skill ${name}: ${safeString(e?.message ?? e)}`);
  }
  // Static imports only: dynamic ones are `__imp_(...)` calls now, loaded when they run.
  source = source.replace(SKILL_SPECIFIER_RE, (_all, lead, quote, dep) => lead + quote + skillModuleUrl(dep, [...path, name]) + quote);
  const url = "data:application/typescript;base64," + base64Utf8(uniqueModule(source));
  skillUrls.set(name, url);
  return url;
}

/** Links the `skills/<name>.ts` imports of a TypeScript module source to the skills' modules. */
async function linkSkills(source) {
  const names = tsSkillImports(source);
  if (names.length === 0) return source;
  await fetchSkills(names, "typescript", tsSkillImports, linkSkills);
  return source.replace(SKILL_SPECIFIER_RE, (_all, lead, quote, name) => lead + quote + skillModuleUrl(name, []) + quote);
}

/** `import("skills/<name>.ts")` at run time. */
async function skillImport(name) {
  await fetchSkills([name], "typescript", tsSkillImports, skillImport);
  return await import(skillModuleUrl(name, []));
}

// ---------------------------------------------------------------------------------------------
// Saving
// ---------------------------------------------------------------------------------------------

const SKILL_LANGUAGES = { typescript: "typescript", ts: "typescript", python: "python", py: "python" };

/**
 * Refuses TypeScript that does not parse, or that imports what the sandbox does not offer,
 * without running it: its declarations are compiled as the body of a function that is never
 * called (imports and `export` words blanked in place, so lines and columns stay).
 */
async function checkTypeScriptSkill(name, code) {
  guardImports(code);
  const { tokens } = tokenize(code);
  let body = code;
  const blank = (s, e) => {
    body = body.slice(0, s) + body.slice(s, e).replace(/[^\n\r\u2028\u2029]/g, " ") + body.slice(e);
  };
  for (const imp of findImports(tokens)) blank(imp.s, imp.e);
  for (let k = 0; k < tokens.length; k++) {
    const tok = tokens[k];
    if (tok.t !== "id" || tok.v !== "export" || tok.d !== 0) continue;
    const next = tokens[k + 1];
    if (next !== undefined && next.t === "p" && (next.v === "*" || next.v === "{")) {
      // `export * (as ns) from "m"`, `export { a } (from "m")`: the whole statement.
      let end = k + 1;
      if (next.v === "{") {
        end = k + 2;
        while (end < tokens.length && !(tokens[end].d === 0 && tokens[end].t === "p" && tokens[end].v === "}")) end++;
      }
      let m = end + 1;
      if (tokens[m]?.t === "id" && tokens[m].v === "as") m += 2;
      if (tokens[m]?.t === "id" && tokens[m].v === "from" && tokens[m + 1]?.t === "str") end = m + 1;
      if (tokens[end + 1]?.t === "p" && tokens[end + 1].v === ";") end++;
      end = Math.min(end, tokens.length - 1);
      blank(tok.s, tokens[end].e);
      k = end;
    } else if (next !== undefined && next.t === "id" && next.v === "default") {
      blank(tok.s, next.e);
    } else {
      blank(tok.s, tok.e);
    }
  }
  if (body.startsWith("#!")) body = "//" + body.slice(2);
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
