//! What a project brings: the servers defined in config files inside the project directory
//! (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, `.codex/config.toml`,
//! `.gemini/settings.json`, the table's rows whose files are all in the project, see
//! `in_project`). Such a file comes with a cloned repository, so what it asks to run is only
//! run once the user approved it (`super::approval`).
//!
//! This module owns identifying one such definition: its fingerprint (SHA-256 of the canonical
//! launch spec, `fingerprint`), the description of what it runs that `trust` shows
//! (`describe`), and the plain data that travels in a [`super::discovery::Discovery`]:
//! [`Pending`] (an enabled, valid definition waiting for the gate) and [`ProjectServer`] (one
//! after the gate, approved or not). No file access, no decisions.

use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::spec::{ConfigSource, ServerSpec};
use super::table::{Loc, SourceKind};

/// The fields of a definition that decide what is launched: an approval covers exactly these,
/// as written in the standard form (before `${VAR}` expansion: the user's own environment is
/// not something a repository brings, and a rotated secret needs no new approval). Any change
/// to one of them needs a new approval; other fields (timeouts, descriptions) do not.
pub(crate) const LAUNCH_FIELDS: &[&str] =
    &["type", "command", "args", "env", "cwd", "url", "headers"];

/// Whether definitions from `kind` come with the project: every file of its row is in the
/// project directory.
pub(crate) fn in_project(kind: SourceKind) -> bool {
    let files = super::table::row(kind).files;
    !files.is_empty() && files.iter().all(|l| matches!(l, Loc::Project(_)))
}

/// `sha256:<hex>` of the canonical JSON of the [`LAUNCH_FIELDS`] of `definition` (object keys
/// sorted, no whitespace; absent fields left out). A definition that is not an object is
/// fingerprinted whole.
pub(crate) fn fingerprint(definition: &Value) -> String {
    let launch = match definition.as_object() {
        Some(obj) => Value::Object(
            LAUNCH_FIELDS
                .iter()
                .filter_map(|&k| obj.get(k).map(|v| (k.to_owned(), v.clone())))
                .collect(),
        ),
        None => definition.clone(),
    };
    let mut canonical = String::new();
    write_canonical(&launch, &mut canonical);
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    )
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// What a definition launches, as written (variables not expanded, so no secret from the
/// environment is shown): `runs: <command and arguments>` or `url: <url>`, then its
/// environment, working directory and header names. For the person approving it.
pub(crate) fn describe(definition: &Value) -> Vec<String> {
    let Some(obj) = definition.as_object() else {
        return vec![format!("definition: {definition}")];
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut lines = Vec::new();
    if let Some(command) = obj.get("command").filter(|v| !v.is_null()) {
        let mut words = vec![shell_word(&text(command))];
        if let Some(Value::Array(args)) = obj.get("args") {
            words.extend(args.iter().map(|a| shell_word(&text(a))));
        }
        lines.push(format!("runs: {}", words.join(" ")));
    }
    if let Some(url) = obj.get("url").filter(|v| !v.is_null()) {
        lines.push(format!("url: {}", text(url)));
    }
    if let Some(Value::Object(env)) = obj.get("env")
        && !env.is_empty()
    {
        let vars: Vec<String> = env
            .iter()
            .map(|(k, v)| shell_word(&format!("{k}={}", text(v))))
            .collect();
        lines.push(format!("env: {}", vars.join(" ")));
    }
    if let Some(cwd) = obj.get("cwd").filter(|v| !v.is_null()) {
        lines.push(format!("cwd: {}", shell_word(&text(cwd))));
    }
    if let Some(Value::Object(headers)) = obj.get("headers")
        && !headers.is_empty()
    {
        let names: Vec<&str> = headers.keys().map(String::as_str).collect();
        lines.push(format!("headers: {}", names.join(", ")));
    }
    if lines.is_empty() {
        lines.push("runs: (nothing: no command and no url)".to_owned());
    }
    lines
}

/// `word` as a POSIX shell reads it back: as is when it is made of safe characters only, else
/// in single quotes. Also keeps control characters from reaching a terminal raw.
pub(crate) fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_owned();
    }
    let mut out = String::from("'");
    for c in word.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            c if c.is_control() => out.push_str(&c.escape_default().to_string()),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// An enabled, valid server from a project's own file, not usable until the gate
/// (`super::approval::gate`) finds it approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub spec: ServerSpec,
    /// `fingerprint` of its definition.
    pub fingerprint: String,
    /// `describe` of its definition.
    pub launch: Vec<String>,
}

/// A server from a project's own file, after the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectServer {
    pub name: String,
    pub source: ConfigSource,
    /// The project it belongs to (canonical path): approvals are per project.
    pub project: PathBuf,
    pub fingerprint: String,
    pub launch: Vec<String>,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// Who approved it (e.g. `code-executor trust`, or Claude Code and the file), or `None`:
    /// it needs approval and is never started.
    pub approved_by: Option<String>,
}

impl ProjectServer {
    /// The command that approves it.
    pub fn trust_command(&self) -> String {
        format!("code-executor trust {}", shell_word(&self.name))
    }

    /// What `servers`, `doctor` and `listServers` say about it when it is not approved.
    pub fn needs_approval(&self) -> String {
        format!(
            "needs approval: run `{}` in {} (defined in {})",
            self.trust_command(),
            shell_word(&self.project.to_string_lossy()),
            self.source.path.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fingerprint_covers_the_launch_fields_only_in_any_key_order() {
        let a = json!({"command": "python", "args": ["s.py"], "env": {"A": "1", "B": "2"}});
        let b = json!({"env": {"B": "2", "A": "1"}, "timeout": 5, "args": ["s.py"], "command": "python", "description": "x"});
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert!(fingerprint(&a).starts_with("sha256:"));
        assert_eq!(fingerprint(&a).len(), "sha256:".len() + 64);
        for changed in [
            json!({"command": "python3", "args": ["s.py"], "env": {"A": "1", "B": "2"}}),
            json!({"command": "python", "args": ["s.py", "-x"], "env": {"A": "1", "B": "2"}}),
            json!({"command": "python", "args": ["s.py"], "env": {"A": "1", "B": "3"}}),
            json!({"command": "python", "args": ["s.py"], "env": {"A": "1", "B": "2", "LD_PRELOAD": "x.so"}}),
            json!({"command": "python", "args": ["s.py"], "env": {"A": "1", "B": "2"}, "cwd": "sub"}),
            json!({"command": "python", "args": ["s.py"], "env": {"A": "1", "B": "2"}, "type": "stdio"}),
        ] {
            assert_ne!(fingerprint(&a), fingerprint(&changed), "{changed}");
        }
        let http = json!({"type": "http", "url": "https://a.example/mcp", "headers": {"X": "1"}});
        let other = json!({"type": "http", "url": "https://a.example/mcp", "headers": {"X": "2"}});
        assert_ne!(fingerprint(&http), fingerprint(&other));
        // Strings that would collide if joined naively do not.
        assert_ne!(
            fingerprint(&json!({"command": "a b", "args": []})),
            fingerprint(&json!({"command": "a", "args": ["b"]}))
        );
    }

    #[test]
    fn only_files_inside_the_project_are_brought_by_it() {
        use SourceKind::*;
        let brought: Vec<SourceKind> = super::super::table::ROWS
            .iter()
            .map(|r| r.kind)
            .filter(|&k| in_project(k))
            .collect();
        assert_eq!(
            brought,
            [
                VsCode,
                CursorProject,
                CodexProject,
                GeminiProject,
                ClaudeCodeProject
            ]
        );
    }

    #[test]
    fn descriptions_show_what_runs_quoted() {
        let def = json!({"command": "sh", "args": ["-c", "touch /tmp/x; echo 'hi'"],
                         "env": {"LD_PRELOAD": "./evil.so"}, "cwd": "sub dir",
                         "headers": {"Authorization": "Bearer ${TOKEN}"}});
        assert_eq!(
            describe(&def),
            [
                r#"runs: sh -c 'touch /tmp/x; echo '\''hi'\'''"#,
                "env: LD_PRELOAD=./evil.so",
                "cwd: 'sub dir'",
                "headers: Authorization",
            ]
        );
        assert_eq!(shell_word("a\nb"), "'a\\nb'");
        assert_eq!(shell_word(""), "''");
    }
}
