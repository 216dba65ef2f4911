//! TypeScript turned into JavaScript on the host, for the lanes' contexts (docs/worker-protocol.md,
//! "TypeScript lanes"): a context runs JavaScript only, and must not need a Deno module graph per
//! execution. The type syntax of an execution's code is blanked out by `swc_ts_fast_strip` in its
//! strip-only mode, which keeps every other character at its line and column (so the runner's
//! error locations stay the user's), and the result is cached by the code's SHA-256.
//!
//! The code is an async function's body (top-level `await` and `return`), so it is stripped inside
//! one. Code the stripper does not take (a syntax error, `import` declarations, syntax that needs a
//! transform: `enum`, `namespace`, parameter properties) gets no JavaScript: the runner then runs it
//! in its lane's own realm, through Deno's module loader, as before lanes.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use sha2::{Digest, Sha256};
use swc_common::errors::Handler;
use swc_common::sync::Lrc;
use swc_common::{GLOBALS, Globals, SourceMap};
use swc_ts_fast_strip::{Mode, Options};

/// Code longer than this is not stripped (it runs in the lane's realm): stripping runs on the
/// executor's thread, and a long source would hold it.
const MAX_STRIPPED_BYTES: usize = 256 * 1024;
/// How many strip results the cache keeps (most recently used).
const CACHED: usize = 256;
/// The code is stripped as the body of this function (the same on one line as in the runner, so
/// that line 1 keeps its columns once the prefix is cut off).
const PREFIX: &str = "async function __user__() {";
const SUFFIX: &str = "\n}";

type Cache = Mutex<Option<LruCache<[u8; 32], Option<Arc<str>>>>>;
static CACHE: Cache = Mutex::new(None);

/// `code` with its type syntax blanked out, or None when it is plain JavaScript already or when
/// the stripper does not take it (see the module comment).
pub(crate) fn javascript_of(code: &str) -> Option<Arc<str>> {
    if code.len() > MAX_STRIPPED_BYTES {
        return None;
    }
    let key: [u8; 32] = Sha256::digest(code.as_bytes()).into();
    if let Some(hit) = cache_get(&key) {
        return hit;
    }
    let stripped = strip(code).and_then(|js| (js != code).then(|| Arc::<str>::from(js)));
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .get_or_insert_with(|| LruCache::new(NonZeroUsize::new(CACHED).expect("nonzero")))
        .put(key, stripped.clone());
    stripped
}

fn cache_get(key: &[u8; 32]) -> Option<Option<Arc<str>>> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.as_mut()?.get(key).cloned()
}

/// The stripped body, or None when the stripper refuses it.
fn strip(code: &str) -> Option<String> {
    let wrapped = format!("{PREFIX}{code}{SUFFIX}");
    let source_map: Lrc<SourceMap> = Default::default();
    let handler = Handler::with_emitter_writer(Box::new(std::io::sink()), None);
    let options = Options {
        module: Some(false),
        mode: Mode::StripOnly,
        ..Default::default()
    };
    let output = GLOBALS.set(&Globals::new(), || {
        swc_ts_fast_strip::operate(&source_map, &handler, wrapped, options)
    });
    let js = output.ok()?.code;
    let body = js.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    // Blanking keeps lengths: anything else would move the user's locations.
    (body.len() == code.len()).then(|| body.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_blanked_and_locations_kept() {
        let code = "const a: number = 1;\ninterface P { x: string }\nconst b = (a as any) satisfies unknown;\nreturn f<string>(b!);";
        let js = javascript_of(code).expect("strippable");
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
            javascript_of("const x = await Promise.resolve(1);\nreturn x"),
            None
        );
    }

    #[test]
    fn what_needs_a_transform_or_does_not_parse_gets_nothing() {
        assert_eq!(javascript_of("enum E { A }\nE.A"), None);
        assert_eq!(
            javascript_of("import * as x from \"wrappers/x.ts\";\nx"),
            None
        );
        assert_eq!(javascript_of("const = ;"), None);
        assert_eq!(
            javascript_of("class A { constructor(private x: number) {} }"),
            None
        );
    }

    #[test]
    fn results_are_cached_by_content() {
        let code = "let cached: string = \"x\"; cached";
        let first = javascript_of(code).expect("strippable");
        let second = javascript_of(code).expect("cached");
        assert!(Arc::ptr_eq(&first, &second));
    }
}
