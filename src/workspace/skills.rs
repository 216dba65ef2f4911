//! Skills: reusable modules that code saves (`saveSkill`) and later executions import
//! (`import { f } from "skills/name.ts"`, `from skills import name`). This module owns the store
//! in a project's `skills/` directory: the name rule, the caps, saving (the code file
//! `<name>.ts` or `<name>.py` and its metadata `<name>.json`, each replaced atomically under the
//! project's write lock), loading, listing, showing and removing, and the exported signatures
//! read from a skill's code. A name holds one skill: saving it in the other language replaces it.
//!
//! Everything read back from disk is untrusted (the user may edit it, or put anything there):
//! names are re-validated, sizes bounded, and the code file is what counts (a skill edited by
//! hand is what the next execution imports; its exports are read again when its size changed).
//! Every call blocks: run it off the async runtime's threads.

use std::io::Read;
use std::path::Path;

use cap_std::fs::{Dir, OpenOptions};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Space, replace_file};
use crate::sandbox::proto::Language;
use crate::wrappers::{PY_RESERVED, TS_RESERVED};

/// Largest skill code (bytes).
pub const MAX_CODE_BYTES: usize = 256 * 1024;
/// Largest description (bytes).
pub const MAX_DESCRIPTION_BYTES: usize = 1024;
/// Most skills one project holds.
pub const MAX_SKILLS: usize = 500;
/// Most exported signatures recorded per skill.
const MAX_EXPORTS: usize = 64;
/// Longest signature line recorded (characters).
const MAX_SIGNATURE_CHARS: usize = 240;
/// Longest name (characters).
const MAX_NAME_CHARS: usize = 64;
/// Largest metadata file read back (bytes).
const MAX_META_BYTES: u64 = 64 * 1024;

/// Words no skill may be named besides those reserved in TypeScript or Python (a skill's name
/// is an identifier in both): the sandbox's own modules, and `undefined`.
const RESERVED: &[&str] = &["undefined", "sandbox", "skills", "wrappers"];

/// What a skill store operation refused or could not do; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("{0}")]
    Refused(String),
    #[error("skill {name}: {source}")]
    Io {
        name: String,
        source: std::io::Error,
    },
}

/// A skill's metadata (`<name>.json`), as listed, searched and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillMeta {
    pub name: String,
    pub language: Language,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub saved_at: String,
    #[serde(default)]
    pub exports: Vec<String>,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub sha256: String,
}

impl SkillMeta {
    /// How code imports it.
    pub fn import_line(&self) -> String {
        import_line(&self.name, self.language, &self.exports)
    }

    /// The module name code imports (`skills/<name>.ts`, `skills/<name>.py`).
    pub fn module(&self) -> String {
        format!("skills/{}.{}", self.name, self.language.extension())
    }
}

/// A skill's code, loaded for an execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadedSkill {
    pub name: String,
    pub language: Language,
    pub code: String,
}

/// Checks a skill name: `^[a-z][a-z0-9_]{0,63}$` and not a reserved word.
pub fn check_name(name: &str) -> Result<(), SkillError> {
    let shown: String = name
        .chars()
        .take(80)
        .collect::<String>()
        .escape_debug()
        .to_string();
    let mut chars = name.chars();
    let well_formed = matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && name.chars().count() <= MAX_NAME_CHARS;
    if !well_formed {
        return Err(SkillError::Refused(format!(
            "skill name \"{shown}\" refused: a name is a lowercase letter then up to {} lowercase letters, digits or `_` (e.g. \"fetch_report\")",
            MAX_NAME_CHARS - 1
        )));
    }
    if RESERVED.contains(&name) || TS_RESERVED.contains(&name) || PY_RESERVED.contains(&name) {
        return Err(SkillError::Refused(format!(
            "skill name \"{name}\" refused: it is a reserved word in TypeScript or Python (or a sandbox module); choose another name"
        )));
    }
    Ok(())
}

/// Checks a description: at most [`MAX_DESCRIPTION_BYTES`], no control characters but line breaks
/// and tabs.
fn check_description(description: &str) -> Result<(), SkillError> {
    if description.len() > MAX_DESCRIPTION_BYTES {
        return Err(SkillError::Refused(format!(
            "skill description refused: {} bytes, over the limit of {MAX_DESCRIPTION_BYTES}; say in a sentence or two what the skill does",
            description.len()
        )));
    }
    if description
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(SkillError::Refused(
            "skill description refused: it holds control characters; use plain text".into(),
        ));
    }
    Ok(())
}

fn check_code(name: &str, code: &str) -> Result<(), SkillError> {
    if code.len() > MAX_CODE_BYTES {
        return Err(SkillError::Refused(format!(
            "skill {name} refused: its code is {} bytes, over the limit of {MAX_CODE_BYTES}; split it into smaller skills",
            code.len()
        )));
    }
    if code.trim().is_empty() {
        return Err(SkillError::Refused(format!(
            "skill {name} refused: its code is empty"
        )));
    }
    if code.contains('\0') {
        return Err(SkillError::Refused(format!(
            "skill {name} refused: its code holds a NUL character"
        )));
    }
    Ok(())
}

fn code_file(name: &str, language: Language) -> String {
    format!("{name}.{}", language.extension())
}

fn meta_file(name: &str) -> String {
    format!("{name}.json")
}

fn other(language: Language) -> Language {
    match language {
        Language::Typescript => Language::Python,
        Language::Python => Language::Typescript,
    }
}

/// How code imports a skill (the first few exports named, for TypeScript).
pub fn import_line(name: &str, language: Language, exports: &[String]) -> String {
    match language {
        Language::Python => format!("from skills import {name}"),
        Language::Typescript => {
            let names: Vec<&str> = exports
                .iter()
                .filter_map(|s| export_name(s))
                .take(4)
                .collect();
            if names.is_empty() {
                format!("import * as {name} from \"skills/{name}.ts\"")
            } else {
                format!(
                    "import {{ {} }} from \"skills/{name}.ts\"",
                    names.join(", ")
                )
            }
        }
    }
}

/// The exported name in a signature line (`export function f(...)` → `f`).
fn export_name(signature: &str) -> Option<&str> {
    let words = [
        "export ",
        "default ",
        "async ",
        "function ",
        "function* ",
        "const ",
        "let ",
        "class ",
        "interface ",
        "type ",
    ];
    let mut rest = signature.trim_start();
    loop {
        let before = rest;
        for w in words {
            rest = rest.strip_prefix(w).unwrap_or(rest).trim_start();
        }
        if rest == before {
            break;
        }
    }
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(rest.len());
    // Types and the default export are not imported by name.
    let named = !["export interface ", "export type ", "export default "]
        .iter()
        .any(|p| signature.starts_with(p));
    (end > 0 && named).then(|| &rest[..end])
}

/// The exported signatures of a skill's code, one line each, at most [`MAX_EXPORTS`]:
/// TypeScript `export function|async function|const|let|class|interface|type` declarations at
/// the start of a line; Python top-level `def`, `async def` and `class` whose names do not start
/// with `_`. A signature spread over lines is joined up to its body (`{`, `=>` or `:`).
pub fn exports(language: Language, code: &str) -> Vec<String> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if out.len() >= MAX_EXPORTS {
            break;
        }
        let starts = match language {
            Language::Typescript => {
                let l = line.trim_end();
                [
                    "export function ",
                    "export async function ",
                    "export function* ",
                    "export const ",
                    "export let ",
                    "export class ",
                    "export default function",
                    "export default async function",
                    "export default class",
                    "export interface ",
                    "export type ",
                ]
                .iter()
                .any(|p| l.starts_with(p))
            }
            Language::Python => ["def ", "async def ", "class "].iter().any(|p| {
                line.strip_prefix(p)
                    .is_some_and(|rest| !rest.trim_start().starts_with('_'))
            }),
        };
        if !starts {
            continue;
        }
        // Join continuation lines until the signature's end.
        let mut sig = line.trim().to_string();
        let mut depth = paren_depth(&sig);
        let mut j = i + 1;
        while depth > 0 && j < lines.len() && j < i + 12 && sig.len() < MAX_SIGNATURE_CHARS * 2 {
            let next = lines[j].trim();
            if !sig.ends_with('(') && !next.starts_with(')') {
                sig.push(' ');
            }
            sig.push_str(next);
            depth = paren_depth(&sig);
            j += 1;
        }
        out.push(clip_signature(language, &sig));
    }
    out
}

fn paren_depth(text: &str) -> i32 {
    text.chars().fold(0, |d, c| match c {
        '(' => d + 1,
        ')' => d - 1,
        _ => d,
    })
}

/// A signature line without its body: cut at the body's opening (`{` after the parameters,
/// `=>`, or Python's final `:`), then to [`MAX_SIGNATURE_CHARS`].
fn clip_signature(language: Language, sig: &str) -> String {
    let mut text = sig.to_string();
    match language {
        Language::Python => {
            if let Some(stripped) = text.strip_suffix(':') {
                text = stripped.trim_end().to_string();
            } else if let Some(pos) = text.rfind("):") {
                text.truncate(pos + 1);
            }
        }
        Language::Typescript => {
            let close = text.rfind(')').unwrap_or(0);
            if let Some(arrow) = text[close..].find("=>") {
                text.truncate(close + arrow + 2);
            } else if let Some(brace) = text[close..].find('{') {
                text.truncate(close + brace);
            } else if text.ends_with('{') {
                text.pop();
            }
            text = text
                .trim_end()
                .trim_end_matches(['=', ';'])
                .trim_end()
                .to_string();
        }
    }
    if text.chars().count() > MAX_SIGNATURE_CHARS {
        text = text.chars().take(MAX_SIGNATURE_CHARS).collect::<String>() + "...";
    }
    text
}

/// Reads `path` of `dir` when it is a regular file of at most `max` bytes (None when missing).
fn read_bounded(dir: &Dir, path: &str, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let file = match dir.open_with(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > max {
        return Err(std::io::Error::other(format!(
            "{} bytes, over the limit of {max}",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.into_std().take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "over the limit of {max} bytes"
        )));
    }
    Ok(Some(bytes))
}

/// The code of skill `name` in `language`, if that file exists.
fn read_code(dir: &Dir, name: &str, language: Language) -> Result<Option<String>, SkillError> {
    let io = |source| SkillError::Io {
        name: name.to_string(),
        source,
    };
    let Some(bytes) =
        read_bounded(dir, &code_file(name, language), MAX_CODE_BYTES as u64).map_err(io)?
    else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| io(std::io::Error::other("its code is not UTF-8")))
}

/// The metadata file of `name`, when it is there and sound.
fn read_meta(dir: &Dir, name: &str) -> Option<SkillMeta> {
    let bytes = read_bounded(dir, &meta_file(name), MAX_META_BYTES).ok()??;
    let meta: SkillMeta = serde_json::from_slice(&bytes).ok()?;
    (meta.name == name && check_description(&meta.description).is_ok()).then_some(meta)
}

/// The skill's metadata as its code on disk now is: the saved description, and the exports
/// read again unless the code is the one saved (same size and SHA-256).
fn describe(dir: &Dir, name: &str, language: Language, code: &str) -> SkillMeta {
    let sha256 = hex::encode(Sha256::digest(code.as_bytes()));
    let saved = read_meta(dir, name).filter(|m| m.language == language);
    let (description, saved_at, exports) = match saved {
        Some(m) if m.sha256 == sha256 && m.exports.len() <= MAX_EXPORTS => {
            let exports = m
                .exports
                .iter()
                .map(|s| clip_signature(language, s))
                .collect();
            (m.description, m.saved_at, exports)
        }
        Some(m) => (m.description, m.saved_at, exports(language, code)),
        None => (String::new(), String::new(), exports(language, code)),
    };
    SkillMeta {
        name: name.to_string(),
        language,
        description,
        saved_at,
        exports,
        size: code.len() as u64,
        sha256,
    }
}

/// The language a saved skill `name` is written in, if any.
fn saved_language(dir: &Dir, name: &str) -> Option<Language> {
    [Language::Typescript, Language::Python]
        .into_iter()
        .find(|&l| dir.exists(code_file(name, l)))
}

/// Saves skill `name` (replacing one of that name, in either language), returns its metadata.
pub fn save(
    space: &Space,
    name: &str,
    language: Language,
    code: &str,
    description: &str,
) -> Result<SkillMeta, SkillError> {
    check_name(name)?;
    check_description(description)?;
    check_code(name, code)?;
    let dir = space.skills();
    let io = |source| SkillError::Io {
        name: name.to_string(),
        source,
    };
    let _lock = space.exclusive().map_err(io)?;
    if saved_language(dir, name).is_none() && skill_names(dir).len() >= MAX_SKILLS {
        return Err(SkillError::Refused(format!(
            "skill {name} refused: the project already holds {MAX_SKILLS} skills, the limit; remove unused ones with `code-executor skills rm NAME`"
        )));
    }
    let meta = SkillMeta {
        name: name.to_string(),
        language,
        description: description.trim().to_string(),
        saved_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        exports: exports(language, code),
        size: code.len() as u64,
        sha256: hex::encode(Sha256::digest(code.as_bytes())),
    };
    let json = serde_json::to_vec_pretty(&meta).map_err(|e| io(std::io::Error::other(e)))?;
    replace_file(dir, Path::new(&code_file(name, language)), code.as_bytes()).map_err(io)?;
    replace_file(dir, Path::new(&meta_file(name)), &json).map_err(io)?;
    match dir.remove_file(code_file(name, other(language))) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    Ok(meta)
}

/// The code of the named skills, for an execution in `language`. A missing skill, or one
/// written in the other language, is refused with what to do.
pub fn load(
    space: &Space,
    names: &[String],
    language: Language,
) -> Result<Vec<LoadedSkill>, SkillError> {
    let dir = space.skills();
    let mut out = Vec::new();
    for name in names {
        check_name(name)?;
        match read_code(dir, name, language)? {
            Some(code) => out.push(LoadedSkill {
                name: name.clone(),
                language,
                code,
            }),
            None => {
                let why = match saved_language(dir, name) {
                    Some(other) => format!(
                        "skill {name} is written in {}, so a {} execution cannot import it; save a {} version under another name, or run this code in {}",
                        other.as_str(),
                        language.as_str(),
                        language.as_str(),
                        other.as_str()
                    ),
                    None => format!(
                        "no skill named {name}: save it first with saveSkill(\"{name}\", code, {{description}}) (Python: save_skill), or find the saved ones with searchTools(\"...\") or `code-executor skills ls`"
                    ),
                };
                return Err(SkillError::Refused(why));
            }
        }
    }
    Ok(out)
}

/// The valid skill names with a code file in `dir`, sorted, at most [`MAX_SKILLS`] + 1.
fn skill_names(dir: &Dir) -> Vec<String> {
    let Ok(entries) = dir.entries() else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter_map(|f| {
            let stem = f.strip_suffix(".ts").or_else(|| f.strip_suffix(".py"))?;
            check_name(stem).is_ok().then(|| stem.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names.truncate(MAX_SKILLS + 1);
    names
}

/// Every saved skill (sorted by name), described as its code now is; unreadable ones are left out.
pub fn list(space: &Space) -> Vec<SkillMeta> {
    let dir = space.skills();
    skill_names(dir)
        .into_iter()
        .take(MAX_SKILLS)
        .filter_map(|name| {
            let language = saved_language(dir, &name)?;
            let code = read_code(dir, &name, language).ok()??;
            Some(describe(dir, &name, language, &code))
        })
        .collect()
}

/// One skill's metadata and code.
pub fn show(space: &Space, name: &str) -> Result<(SkillMeta, String), SkillError> {
    check_name(name)?;
    let dir = space.skills();
    let missing = || {
        SkillError::Refused(format!(
            "no skill named {name}; list them with `code-executor skills ls`"
        ))
    };
    let language = saved_language(dir, name).ok_or_else(missing)?;
    let code = read_code(dir, name, language)?.ok_or_else(missing)?;
    Ok((describe(dir, name, language, &code), code))
}

/// Removes a skill (its code in either language and its metadata); false when there was none.
pub fn remove(space: &Space, name: &str) -> Result<bool, SkillError> {
    check_name(name)?;
    let dir = space.skills();
    let io = |source| SkillError::Io {
        name: name.to_string(),
        source,
    };
    let _lock = space.exclusive().map_err(io)?;
    let mut removed = false;
    for file in [
        code_file(name, Language::Typescript),
        code_file(name, Language::Python),
        meta_file(name),
    ] {
        match dir.remove_file(&file) {
            Ok(()) => removed |= !file.ends_with(".json"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::WorkspaceQuota;

    fn space() -> (tempfile::TempDir, Space) {
        let base = tempfile::tempdir().unwrap();
        let quota = WorkspaceQuota {
            max_bytes: 1 << 20,
            max_files: 100,
            max_file_bytes: 1 << 16,
        };
        let space = Space::open_at(&base.path().join("ws"), base.path(), quota).unwrap();
        (base, space)
    }

    #[test]
    fn names_are_identifiers_in_both_languages_and_not_reserved() {
        for ok in ["a", "fetch_report", "x1", &format!("a{}", "b".repeat(63))] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            "a\0b",
            "Fetch",
            "_x",
            "1x",
            "a-b",
            "a.b",
            "é",
            &format!("a{}", "b".repeat(64)),
            "class",
            "import",
            "def",
            "lambda",
            "await",
            "skills",
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.contains("refused"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn caps_refuse_what_is_too_large() {
        let (_base, space) = space();
        let big = "x".repeat(MAX_CODE_BYTES + 1);
        let err = save(&space, "big", Language::Typescript, &big, "").unwrap_err();
        assert!(err.to_string().contains("over the limit"), "{err}");
        let long = "d".repeat(MAX_DESCRIPTION_BYTES + 1);
        let err = save(&space, "a", Language::Python, "x = 1\n", &long).unwrap_err();
        assert!(err.to_string().contains("description"), "{err}");
        let err = save(&space, "a", Language::Python, "x = 1\n", "bell\u{7}").unwrap_err();
        assert!(err.to_string().contains("control"), "{err}");
        assert!(save(&space, "a", Language::Python, "  \n", "").is_err());
        assert!(list(&space).is_empty());
    }

    #[test]
    fn signatures_are_read_from_both_languages() {
        let ts = "import { x } from \"skills/y.ts\";\nexport function add(a: number, b: number): number {\n  return a + b;\n}\nexport async function fetchAll(\n  urls: string[],\n): Promise<string[]> {\n  return [];\n}\nexport const twice = (n: number) => n * 2;\nexport class Box<T> {}\nfunction hidden() {}\n  export function indented() {}\n";
        let py = "import json\ndef add(a: int, b: int) -> int:\n    return a + b\nasync def fetch(url,\n          timeout=3):\n    pass\nclass Box:\n    def inner(self): pass\ndef _private(): pass\n";
        let expected: [(Language, &str, &[&str]); 2] = [
            (
                Language::Typescript,
                ts,
                &[
                    "export function add(a: number, b: number): number",
                    "export async function fetchAll(urls: string[],): Promise<string[]>",
                    "export const twice = (n: number) =>",
                    "export class Box<T>",
                ],
            ),
            (
                Language::Python,
                py,
                &[
                    "def add(a: int, b: int) -> int",
                    "async def fetch(url, timeout=3)",
                    "class Box",
                ],
            ),
        ];
        for (language, code, signatures) in expected {
            assert_eq!(exports(language, code), signatures, "{language:?}");
        }
        let many: String = (0..100).map(|i| format!("def f{i}(): pass\n")).collect();
        assert_eq!(exports(Language::Python, &many).len(), MAX_EXPORTS);
        let wide = format!("def f({}): pass\n", "a, ".repeat(200));
        assert!(exports(Language::Python, &wide)[0].chars().count() <= MAX_SIGNATURE_CHARS + 3);
        assert_eq!(
            import_line(
                "m",
                Language::Typescript,
                &exports(Language::Typescript, ts)
            ),
            "import { add, fetchAll, twice, Box } from \"skills/m.ts\""
        );
        let only_default = exports(Language::Typescript, "export default function main() {}\n");
        assert_eq!(
            import_line("m", Language::Typescript, &only_default),
            "import * as m from \"skills/m.ts\""
        );
    }

    #[test]
    fn a_skill_round_trips_and_one_name_holds_one_skill() {
        let (_base, space) = space();
        let code = "export function hi(name: string): string {\n  return `hi ${name}`;\n}\n";
        let meta = save(&space, "greet", Language::Typescript, code, "Says hi.").unwrap();
        assert_eq!(meta.exports, ["export function hi(name: string): string"]);
        assert_eq!(meta.module(), "skills/greet.ts");
        let loaded = load(&space, &["greet".into()], Language::Typescript).unwrap();
        assert_eq!(loaded[0].code, code);
        let err = load(&space, &["greet".into()], Language::Python).unwrap_err();
        assert!(err.to_string().contains("written in typescript"), "{err}");
        let err = load(&space, &["nope".into()], Language::Python).unwrap_err();
        assert!(err.to_string().contains("no skill named nope"), "{err}");
        let (shown, text) = show(&space, "greet").unwrap();
        assert_eq!(
            (shown.description.as_str(), text.as_str()),
            ("Says hi.", code)
        );
        // Saved again in Python: it replaces the TypeScript one.
        save(
            &space,
            "greet",
            Language::Python,
            "def hi(n):\n    return n\n",
            "Py.",
        )
        .unwrap();
        let all = list(&space);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].language, Language::Python);
        assert_eq!(all[0].exports, ["def hi(n)"]);
        // Edited by hand: the next read sees the new code and its exports.
        std::fs::write(
            space.root().join("skills/greet.py"),
            "def hello(n, m):\n    return n\n",
        )
        .unwrap();
        assert_eq!(list(&space)[0].exports, ["def hello(n, m)"]);
        assert_eq!(list(&space)[0].description, "Py.");
        // Files that are not skills are not listed; a link out of the directory is not followed.
        std::fs::write(space.root().join("skills/Bad-Name.ts"), "x").unwrap();
        let outside = space.root().join("secret.ts");
        std::fs::write(&outside, "export const s = 1;\n").unwrap();
        std::os::unix::fs::symlink(&outside, space.root().join("skills/leak.ts")).unwrap();
        assert_eq!(
            list(&space)
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>(),
            ["greet"]
        );
        assert!(load(&space, &["leak".into()], Language::Typescript).is_err());
        assert!(remove(&space, "greet").unwrap());
        assert!(!remove(&space, "greet").unwrap());
        assert!(list(&space).is_empty());
    }
}
