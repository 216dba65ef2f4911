//! What a worker may read besides its runtime: the typed wrapper modules, staged as a private
//! copy in the worker's own working directory before it starts. Only plain files with
//! identifier names are copied, opened without following links, so nothing but those files'
//! bytes reaches the sandbox; the worker is then allowed to read that copy and nothing else. A
//! TypeScript wrapper is staged with its JavaScript beside it, for the lanes' contexts.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::proto::Language;
use super::typescript;

/// What a staged TypeScript wrapper's JavaScript is called (`git.ts` -> `git.context.js`): no
/// wrapper is copied under such a name (a stem is an identifier, and only `.ts` files are copied).
pub(crate) const CONTEXT_SUFFIX: &str = ".context.js";

/// Largest wrapper module copied into a worker.
const MAX_WRAPPER_BYTES: u64 = 4 * 1024 * 1024;

/// Typed wrapper modules (`code-executor wrappers`): copies the current `<name>.ts` (or `.py`)
/// files of the wrappers directory into `wrappers/` in the worker's private working directory
/// and returns that directory, the only one the worker may read (none when nothing was copied). Only regular files
/// with identifier names are copied, opened without following links, so nothing but those
/// files' bytes reaches the sandbox. The runner links `import ... from "wrappers/<name>.ts"` to
/// them (TypeScript) or puts them on Python's path as the package `wrappers`.
pub(crate) fn wrappers(source: Option<&Path>, language: Language, cwd: &Path) -> Option<PathBuf> {
    let source = source?;
    let ext = format!(".{}", language.extension());
    let staged = cwd.join("wrappers");
    let mut any = false;
    for entry in std::fs::read_dir(source).ok()?.flatten() {
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(ext.as_str())) else {
            continue;
        };
        let mut chars = stem.chars();
        if !(matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            continue;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(entry.path())
        else {
            continue;
        };
        if !file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() <= MAX_WRAPPER_BYTES)
        {
            continue;
        }
        let mut text = Vec::new();
        if file.take(MAX_WRAPPER_BYTES).read_to_end(&mut text).is_err()
            || (!any && std::fs::create_dir(&staged).is_err())
            || std::fs::write(staged.join(&name), &text).is_err()
        {
            continue;
        }
        any = true;
        if language == Language::Typescript {
            // The module as JavaScript, for the lanes' contexts (none: code importing it runs
            // in its lane's own realm).
            let javascript = std::str::from_utf8(&text)
                .ok()
                .and_then(typescript::module_javascript);
            if let Some(js) = javascript {
                let _ = std::fs::write(staged.join(format!("{stem}{CONTEXT_SUFFIX}")), &*js);
            }
        }
    }
    any.then_some(staged)
}

/// What [`wrappers`] would copy now, in a few bytes: the names, sizes and modification times of
/// the candidate modules (none when the directory cannot be read). A process given other
/// modules than these is replaced (see `pool`).
pub(crate) fn fingerprint(source: Option<&Path>, language: Language) -> Option<String> {
    let ext = format!(".{}", language.extension());
    let mut entries: Vec<String> = std::fs::read_dir(source?)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.ends_with(ext.as_str()) {
                return None;
            }
            let meta = entry.metadata().ok()?;
            let modified = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_nanos();
            Some(format!("{name}:{}:{modified}", meta.len()))
        })
        .collect();
    entries.sort();
    Some(entries.join("/"))
}
