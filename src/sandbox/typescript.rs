//! TypeScript turned into JavaScript on the host, for the lanes' contexts (docs/worker-protocol.md,
//! "TypeScript lanes"): a context runs JavaScript only, and must not need a Deno module graph per
//! execution. Type syntax is blanked out by `swc_ts_fast_strip` in its strip-only mode, which
//! keeps every other character at its line and column (so the runner's error locations stay the
//! user's), and results are cached by the source's SHA-256.
//!
//! - An execution's code ([`for_context`]) is an async function's body (top-level `await` and
//!   `return`), so it is stripped inside one. Its `import` declarations, which a function body
//!   cannot hold, are found by parsing it as a module (`swc_ecma_parser`), blanked out too, and
//!   handed to the runner as data ([`Import`]): the runner binds them from modules it evaluates in
//!   the context. Code the stripper does not take (a syntax error, `export` declarations, syntax
//!   that needs a transform: `enum`, `namespace`, parameter properties) gets nothing: the runner
//!   then runs it in its lane's own realm, through Deno's module loader, as before lanes.
//! - A module (a wrapper, a skill: [`module_javascript`]) is stripped as a module.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use serde::Serialize;
use sha2::{Digest, Sha256};
use swc_common::errors::Handler;
use swc_common::sync::Lrc;
use swc_common::{FileName, GLOBALS, Globals, SourceMap, Spanned};
use swc_ecma_ast::{
    EsVersion, ImportPhase, ImportSpecifier, ModuleDecl, ModuleExportName, ModuleItem,
};
use swc_ecma_parser::error::SyntaxError;
use swc_ecma_parser::{Lexer, Parser, StringInput, Syntax, TsSyntax};
use swc_ts_fast_strip::{Mode, Options};

/// Sources longer than this are not stripped (code runs in the lane's realm): stripping runs on
/// the executor's thread, and a long source would hold it.
const MAX_STRIPPED_BYTES: usize = 256 * 1024;
/// Modules (wrappers, skills) longer than this are not stripped (code importing them runs in
/// the lane's realm). Staged wrappers may be up to 4 MiB.
const MAX_STRIPPED_MODULE_BYTES: usize = 4 * 1024 * 1024;
/// How many strip results each cache keeps (most recently used).
const CACHED: usize = 256;
/// The code is stripped as the body of this function (the same on one line as in the runner, so
/// that line 1 keeps its columns once the prefix is cut off).
const PREFIX: &str = "async function __user__() {";
const SUFFIX: &str = "\n}";

/// What a lane's context runs of an execution's TypeScript.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ForContext {
    /// The code with its type syntax and its `import` declarations blanked out (sent as `js`).
    pub js: String,
    /// Its `import` declarations, in source order (type-only names left out).
    pub imports: Vec<Import>,
}

/// One `import` declaration of an execution's code, as data the runner binds from.
#[derive(Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Import {
    /// The module specifier (`wrappers/git.ts`, `skills/report`, `node:path`, ...).
    pub from: String,
    /// The line the declaration starts on (1-based).
    pub line: usize,
    /// `import x from`: the local name of the default export.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// `import * as x from`: the local name of the module namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `import { a, b as c } from`: `[exported name, local name]` pairs.
    pub named: Vec<[String; 2]>,
    /// `import type ... from`: it binds and loads nothing, but names a module all the same
    /// (which must be one the sandbox offers).
    #[serde(rename = "typeOnly", skip_serializing_if = "std::ops::Not::not")]
    pub type_only: bool,
}

type Cache<V> = Mutex<Option<LruCache<[u8; 32], Option<V>>>>;
static CODE_CACHE: Cache<Arc<ForContext>> = Mutex::new(None);
static MODULE_CACHE: Cache<Arc<str>> = Mutex::new(None);

/// What a context runs of `code`, or None when the code runs as it is (plain JavaScript without
/// imports) or when it cannot run in a context (see the module comment).
pub(crate) fn for_context(code: &str) -> Option<Arc<ForContext>> {
    if code.len() > MAX_STRIPPED_BYTES {
        return None;
    }
    cached(&CODE_CACHE, code, || {
        // Code that does not parse as a module may still be a function body without imports
        // (`new.target`, the word `import` in a string): the body's stripping decides.
        let (blanked, imports) = code
            .contains("import")
            .then(|| split_imports(code))
            .flatten()
            .unwrap_or_else(|| (code.to_owned(), Vec::new()));
        let js = strip_body(&blanked)?;
        (js != code).then(|| Arc::new(ForContext { js, imports }))
    })
}

/// Module source `source` (a wrapper or a skill) as JavaScript, or None when the stripper does
/// not take it.
pub(crate) fn module_javascript(source: &str) -> Option<Arc<str>> {
    if source.len() > MAX_STRIPPED_MODULE_BYTES {
        return None;
    }
    cached(&MODULE_CACHE, source, || {
        strip(source.to_owned(), true).map(Arc::from)
    })
}

/// `make()` for `source`, from the cache when it was made before.
fn cached<V: Clone>(cache: &Cache<V>, source: &str, make: impl FnOnce() -> Option<V>) -> Option<V> {
    let key: [u8; 32] = Sha256::digest(source.as_bytes()).into();
    let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hit) = lock().as_mut().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let made = make();
    lock()
        .get_or_insert_with(|| LruCache::new(NonZeroUsize::new(CACHED).expect("nonzero")))
        .put(key, made.clone());
    made
}

/// `code` with its `import` declarations blanked out (every character a space, line breaks
/// kept, so nothing else moves), and those declarations as data. None when the code does not
/// parse as a module body but for its top-level `return`s, exports anything, or imports in a
/// form a context cannot bind (import attributes, source-phase imports).
fn split_imports(code: &str) -> Option<(String, Vec<Import>)> {
    let source_map: Lrc<SourceMap> = Default::default();
    let file = source_map.new_source_file(FileName::Anon.into(), code.to_owned());
    let lexer = Lexer::new(
        Syntax::Typescript(TsSyntax::default()),
        EsVersion::latest(),
        StringInput::from(&*file),
        None,
    );
    let mut parser = Parser::new_from(lexer);
    let module = GLOBALS
        .set(&Globals::new(), || parser.parse_module())
        .ok()?;
    if parser
        .take_errors()
        .iter()
        .any(|e| !matches!(e.kind(), SyntaxError::ReturnNotAllowed))
    {
        return None;
    }
    let start = file.start_pos.0;
    let mut ranges = Vec::new();
    let mut imports = Vec::new();
    for item in &module.body {
        let ModuleItem::ModuleDecl(decl) = item else {
            continue;
        };
        let ModuleDecl::Import(import) = decl else {
            return None;
        };
        let span = decl.span();
        let range = (span.lo.0 - start) as usize..(span.hi.0 - start) as usize;
        if import.with.is_some() || import.phase == ImportPhase::Source {
            return None;
        }
        let line = code[..range.start].matches('\n').count() + 1;
        ranges.push(range);
        let mut entry = Import {
            from: import.src.value.as_atom()?.to_string(),
            line,
            default: None,
            namespace: None,
            named: Vec::new(),
            type_only: import.type_only,
        };
        if import.type_only {
            imports.push(entry);
            continue;
        }
        for specifier in &import.specifiers {
            match specifier {
                ImportSpecifier::Default(d) => entry.default = Some(d.local.sym.to_string()),
                ImportSpecifier::Namespace(n) => entry.namespace = Some(n.local.sym.to_string()),
                ImportSpecifier::Named(n) if n.is_type_only => {}
                ImportSpecifier::Named(n) => {
                    let local = n.local.sym.to_string();
                    let exported = match &n.imported {
                        None => local.clone(),
                        Some(ModuleExportName::Ident(i)) => i.sym.to_string(),
                        Some(ModuleExportName::Str(s)) => s.value.as_atom()?.to_string(),
                    };
                    entry.named.push([exported, local]);
                }
            }
        }
        imports.push(entry);
    }
    let mut blanked = String::with_capacity(code.len());
    let mut from = 0;
    for range in ranges {
        blanked.push_str(&code[from..range.start]);
        for c in code[range.clone()].chars() {
            if matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                blanked.push(c);
            } else {
                // One space per UTF-16 unit: JavaScript's columns stay where they were.
                blanked.extend(std::iter::repeat_n(' ', c.len_utf16()));
            }
        }
        from = range.end;
    }
    blanked.push_str(&code[from..]);
    Some((blanked, imports))
}

/// The code stripped as a function body, or None when the stripper refuses it.
fn strip_body(code: &str) -> Option<String> {
    let js = strip(format!("{PREFIX}{code}{SUFFIX}"), false)?;
    let body = js.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    // Blanking keeps lengths: anything else would move the user's locations.
    (body.len() == code.len()).then(|| body.to_owned())
}

/// `source` with its type syntax blanked out (as a module or a script), or None.
fn strip(source: String, module: bool) -> Option<String> {
    let source_map: Lrc<SourceMap> = Default::default();
    let handler = Handler::with_emitter_writer(Box::new(std::io::sink()), None);
    let options = Options {
        module: Some(module),
        mode: Mode::StripOnly,
        ..Default::default()
    };
    let output = GLOBALS.set(&Globals::new(), || {
        swc_ts_fast_strip::operate(&source_map, &handler, source, options)
    });
    Some(output.ok()?.code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js_of(code: &str) -> Option<String> {
        for_context(code).map(|c| c.js.clone())
    }

    #[test]
    fn types_are_blanked_and_locations_kept() {
        let code = "const a: number = 1;\ninterface P { x: string }\nconst b = (a as any) satisfies unknown;\nreturn f<string>(b!);";
        let js = js_of(code).expect("strippable");
        assert_eq!(js.len(), code.len());
        assert_eq!(js.lines().count(), code.lines().count());
        assert!(js.starts_with("const a         = 1;\n"), "{js}");
        assert!(
            !js.contains("interface") && !js.contains("as any") && !js.contains("<string>"),
            "{js}"
        );
        // Every line keeps where its code starts.
        let col = |s: &str, needle: &str| s.lines().find_map(|l| l.find(needle));
        assert_eq!(col(&js, "return f"), col(code, "return f"));
    }

    #[test]
    fn plain_javascript_and_top_level_await_need_nothing() {
        assert_eq!(
            for_context("const x = await Promise.resolve(1);\nreturn x"),
            None
        );
    }

    #[test]
    fn what_needs_a_transform_or_does_not_parse_gets_nothing() {
        assert_eq!(for_context("enum E { A }\nE.A"), None);
        assert_eq!(for_context("const = ;"), None);
        assert_eq!(
            for_context("class A { constructor(private x: number) {} }"),
            None
        );
        assert_eq!(for_context("export const x = 1;\nx"), None);
        assert_eq!(
            for_context("import data from \"wrappers/x.ts\" with { type: \"json\" };\ndata"),
            None
        );
    }

    #[test]
    fn imports_are_blanked_and_handed_over_as_data() {
        let code = "const a: number = 1;\nimport * as git from \"wrappers/git.ts\";\nimport type { T } from \"wrappers/t.ts\";\nimport d, { type S, st as s, \"odd name\" as o } from \"skills/report\";\nreturn [git, d, s, o, a];";
        let made = for_context(code).expect("bindable");
        assert_eq!(made.js.len(), code.len());
        assert!(
            !made.js.contains("import") && !made.js.contains("wrappers"),
            "{}",
            made.js
        );
        assert!(
            made.js.ends_with("return [git, d, s, o, a];"),
            "{}",
            made.js
        );
        assert_eq!(made.js.lines().count(), code.lines().count());
        assert_eq!(
            made.imports,
            vec![
                Import {
                    from: "wrappers/git.ts".into(),
                    line: 2,
                    default: None,
                    namespace: Some("git".into()),
                    named: vec![],
                    type_only: false,
                },
                Import {
                    from: "wrappers/t.ts".into(),
                    line: 3,
                    default: None,
                    namespace: None,
                    named: vec![],
                    type_only: true,
                },
                Import {
                    from: "skills/report".into(),
                    line: 4,
                    default: Some("d".into()),
                    namespace: None,
                    named: vec![["st".into(), "s".into()], ["odd name".into(), "o".into()]],
                    type_only: false,
                },
            ]
        );
        let wire = serde_json::to_value(&made.imports[0]).expect("serializes");
        assert_eq!(
            wire,
            serde_json::json!({"from": "wrappers/git.ts", "line": 2, "namespace": "git", "named": []})
        );
    }

    #[test]
    fn code_that_is_no_module_is_still_stripped_as_a_body() {
        let code = "const s: string = \"import\";\nreturn typeof new.target + s";
        let made = for_context(code).expect("strippable");
        assert!(made.imports.is_empty());
        assert_eq!(
            made.js,
            "const s         = \"import\";\nreturn typeof new.target + s"
        );
    }

    #[test]
    fn blanking_keeps_utf16_columns() {
        let code = "import { \u{e9}t\u{e9} } from \"skills/s\"; const x = \u{e9}t\u{e9};\nreturn x";
        let made = for_context(code).expect("bindable");
        let utf16_col = |s: &str, needle: &str| s[..s.find(needle).unwrap()].encode_utf16().count();
        assert_eq!(utf16_col(&made.js, "const x"), utf16_col(code, "const x"));
    }

    #[test]
    fn modules_are_stripped_as_modules() {
        let js = module_javascript(
            "export interface I { a: string }\nexport function f(x: I): string { return x.a; }",
        )
        .expect("strippable");
        assert!(
            js.contains("export function f(x   )") && !js.contains("interface"),
            "{js}"
        );
        assert_eq!(module_javascript("export enum E { A }"), None);
    }

    #[test]
    fn results_are_cached_by_content() {
        let code = "let cached: string = \"x\"; cached";
        let first = for_context(code).expect("strippable");
        let second = for_context(code).expect("cached");
        assert!(Arc::ptr_eq(&first, &second));
    }
}
