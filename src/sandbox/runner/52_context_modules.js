// 52_context_modules.js: imports in a TypeScript lane's context. The wrappers and skills an
// execution's code imports (and what they import) are evaluated as `vm.SourceTextModule`s of the
// execution's fresh context, made from the JavaScript the host made of them (a wrapper's
// `<name>.context.js`, staged beside it; a skill's `js`, in the `loadSkills` answer). The code's
// own `import` declarations, which the host blanked out and sent as data (`imports`, see
// src/sandbox/typescript.rs), become parameters of the code's function, bound to what the
// modules export once they have been evaluated.
//
// Whether the code can run in a context this way is decided before anything of it runs. Every
// module must be JavaScript the host made, pass the import rules without an edit (so no dynamic
// `import(...)`), import only wrappers and skills (a `node:` module is the lane's) without import
// attributes, name none of the lane's globals nor its hooks (as 51 asks of the code), compile,
// link, and form no cycle (refused in the lane's realm too); each named import the code uses must
// be exported. Otherwise the code runs in the lane's own realm, as it did before, where what is
// wrong is reported precisely (and the lane then retires).
//
// The modules are the context's: their functions, namespaces and errors belong to its realm. The
// lane never awaits nor `then`s what evaluating them returns (a promise of the context): it hands
// that promise to the shim, which runs the code once it has settled. Relies on 00-51; uses
// `fetchSkills`, `skillTexts`, `tsSkillImports` (56). It runs before any code of the execution,
// in a lane whose own realm no code has used (such a lane retires), so it uses plain arrays.

const ReflectHas = Reflect.has;
const ObjectKeys = Object.keys;

/** Logs why the code's imports keep it out of a context (it runs in the lane's realm); null. */
function notInContext(why) {
  diag(`lane ${laneTag()}: imports run in the lane's realm: ${why}`);
  return null;
}

/** Specifier -> the key of the module it names (`wrappers/git`, `skills/report`), or null. */
function contextModuleKey(specifier) {
  if (typeof specifier !== "string") return null;
  const wrapper = RegExpPrototypeExec(IMPORTABLE_WRAPPER_RE, specifier);
  if (wrapper !== null) return "wrappers/" + wrapper[1];
  const skill = RegExpPrototypeExec(IMPORTABLE_SKILL_RE, specifier);
  return skill !== null ? "skills/" + skill[1] : null;
}

/** Wrapper name -> its staged JavaScript (or null): wrappers do not change in a process's life. */
const wrapperJsCache = new MapCtor();

function wrapperJavaScript(name) {
  if (!wrapperJsCache.has(name)) wrapperJsCache.set(name, wrapperText(name + ".context.js"));
  return wrapperJsCache.get(name);
}

/**
 * What a context needs to bind the code's `imports` (the host's data, see the opening comment):
 * `modules` (key -> {identifier, js}), `roots` (the key of each import, in order; null for
 * `import type`), `params` (the local names) and `plan` (for each, [root index, export name], or
 * [index, null] for a namespace); or null when the code cannot run in a context.
 */
async function contextImportPlan(imports, js) {
  if (!ArrayIsArray(imports) || imports.length > 256) return notInContext("not a list of at most 256 imports");
  const roots = [];
  const skillNames = list();
  for (let i = 0; i < imports.length; i++) {
    const from = imports[i]?.from;
    if (imports[i]?.typeOnly === true) {
      // It loads nothing, but must name a module the sandbox offers (the lane's realm refuses it).
      if (typeof from !== "string" || !importable(from)) return notInContext(`${oneLine(from)} is not offered`);
      roots.push(null);
      continue;
    }
    const key = contextModuleKey(from);
    if (key === null) return notInContext(`${oneLine(from)} is not a wrapper or skill`);
    roots.push(key);
    if (StringPrototypeStartsWith(key, "skills/")) append(skillNames, StringPrototypeSlice(key, 7));
  }
  if (skillNames.length > 0) {
    try {
      await fetchSkills(skillNames, "typescript", tsSkillImports, contextImportPlan);
    } catch (e) {
      return notInContext(oneLine(e));
    }
  }
  const modules = contextModuleClosure(roots.filter((key) => key !== null));
  if (modules === null) return null;
  const params = [];
  const plan = [];
  const bind = (local, at) => {
    if (typeof local !== "string") return;
    params.push(local);
    plan.push(at);
  };
  for (let i = 0; i < imports.length; i++) {
    const imp = imports[i];
    bind(imp.default, [i, "default"]);
    bind(imp.namespace, [i, null]);
    const named = ArrayIsArray(imp.named) ? imp.named : [];
    for (let k = 0; k < named.length; k++) bind(named[k]?.[1], [i, safeString(named[k]?.[0])]);
  }
  return { __proto__: null, modules, roots, params, plan, js };
}

/**
 * The modules `roots` need, by key, each with the JavaScript it runs (checked as the opening
 * comment says), or null.
 */
function contextModuleClosure(roots) {
  const modules = new MapCtor();
  const todo = [...roots];
  while (todo.length > 0) {
    const key = todo.pop();
    if (modules.has(key)) continue;
    const isWrapper = StringPrototypeStartsWith(key, "wrappers/");
    const name = StringPrototypeSlice(key, isWrapper ? 9 : 7);
    const js = isWrapper ? wrapperJavaScript(name) : skillTexts.get(name)?.js;
    if (typeof js !== "string") return notInContext(`${key}: no JavaScript of it`);
    const facts = moduleFacts(js);
    if (facts.why !== null) return notInContext(`${key} ${facts.why}`);
    for (let i = 0; i < facts.deps.length; i++) todo.push(facts.deps[i]);
    modules.set(key, { identifier: key + ".ts", js });
  }
  return modules;
}

/** Module JavaScript -> what `moduleFacts` found in it (the same text, the same answer). */
const moduleFactsCache = new MapCtor();
const MODULE_FACTS_KEPT = 64;

/**
 * Whether a module's JavaScript can run in a context (`why`: null, or why not) and the modules it
 * imports (`deps`, their keys); kept for the lane's life, so that a wrapper or skill imported by
 * every execution is tokenized once.
 */
function moduleFacts(js) {
  const known = moduleFactsCache.get(js);
  if (known !== undefined) return known;
  let facts = { why: null, deps: [] };
  if (!sourceFitsContext(js)) {
    facts = { why: "needs the lane's realm", deps: [] };
  } else {
    const { tokens } = tokenize(js);
    const refs = findModuleReferences(tokens);
    for (let i = 0; i < refs.length && facts.why === null; i++) {
      const specifier = specifierOf(js, tokens[refs[i].spec]);
      const dep = contextModuleKey(specifier);
      if (dep === null) facts = { why: `imports ${oneLine(specifier)}`, deps: [] };
      else facts.deps.push(dep);
    }
  }
  if (moduleFactsCache.size >= MODULE_FACTS_KEPT) moduleFactsCache.clear();
  moduleFactsCache.set(js, facts);
  return facts;
}

/**
 * The modules of `importPlan` made, linked and instantiated in `context`: `{ root, plan }` (the
 * module whose namespace holds each import's namespace as `m<index>`, and the binding plan with
 * the unused bindings of missing exports left out), or null when they cannot be (nothing has run).
 */
function linkContextModules(context, importPlan) {
  const made = new MapCtor();
  try {
    for (const [key, m] of importPlan.modules) {
      made.set(key, new vm.SourceTextModule(m.js, { context, identifier: m.identifier }));
    }
    for (const mod of made.values()) {
      const deps = [];
      for (const request of mod.moduleRequests) {
        const dep = made.get(contextModuleKey(request.specifier));
        const plain = request.phase === undefined || request.phase === "evaluation";
        if (dep === undefined || !plain || ObjectKeys(request.attributes ?? {}).length > 0) {
          return notInContext(`${oneLine(request.specifier)}: not linked in a context`);
        }
        deps.push(dep);
      }
      mod.linkRequests(deps);
    }
    if (hasCycle(made)) return notInContext("a cycle");
    let rootSource = "";
    for (let i = 0; i < importPlan.roots.length; i++) {
      if (importPlan.roots[i] !== null) rootSource += `export * as m${i} from ${JSONStringify(importPlan.roots[i])};\n`;
    }
    const root = new vm.SourceTextModule(rootSource, { context, identifier: "code-executor-imports.js" });
    // (V8 lists each specifier once, however many imports name it.)
    root.linkRequests(root.moduleRequests.map((request) => made.get(request.specifier)));
    root.instantiate();
    const plan = [];
    const params = [];
    let used = null;
    const namespace = root.namespace;
    for (let i = 0; i < importPlan.plan.length; i++) {
      const [index, name] = importPlan.plan[i];
      if (name !== null && !ReflectHas(namespace["m" + index], name)) {
        // Deno drops an import the code uses only as a type; a value it lacks fails the import.
        used ??= identifiersOf(importPlan.js);
        if (used.has(importPlan.params[i])) return notInContext(`no export ${oneLine(name)}`);
        continue;
      }
      plan.push([index, name]);
      params.push(importPlan.params[i]);
    }
    return { __proto__: null, root, plan, params };
  } catch (e) {
    return notInContext(oneLine(e));
  }
}

/** Whether the linked modules import each other in a cycle. */
function hasCycle(made) {
  const state = new MapCtor(); // module -> 1 while visited, 2 when done
  const visit = (mod) => {
    if (state.get(mod) === 2) return false;
    if (state.get(mod) === 1) return true;
    state.set(mod, 1);
    for (const request of mod.moduleRequests) {
      if (visit(made.get(contextModuleKey(request.specifier)))) return true;
    }
    state.set(mod, 2);
    return false;
  };
  for (const mod of made.values()) if (visit(mod)) return true;
  return false;
}

/** The identifiers a source names (not as properties), as a set. */
function identifiersOf(source) {
  const out = new SetCtor();
  const { tokens } = tokenize(source);
  for (let k = 0; k < tokens.length; k++) {
    const prev = tokens[k - 1];
    if (tokens[k].t !== "id" || (prev !== undefined && prev.t === "p" && (prev.v === "." || prev.v === "?."))) continue;
    out.add(tokens[k].v);
  }
  return out;
}
