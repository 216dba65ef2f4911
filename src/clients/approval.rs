//! Consent for what a project brings: the approvals the user already gave, and the gate that
//! keeps every unapproved server a project's own files define (see `super::brought`) out of a
//! [`Discovery`]'s usable servers, so that no subcommand and no execution ever starts it.
//!
//! This module owns reading those approvals and deciding, per definition, whether one applies.
//! It reads files and writes none (`code-executor trust` writes code-executor's own file).
//!
//! # What approves a server from the project's own files
//!
//! | files of | approved by | read from |
//! | --- | --- | --- |
//! | any | `code-executor trust NAME`: this project, this name, this fingerprint (`super::brought::fingerprint`) | the approvals file (`approvals_file`) |
//! | `.mcp.json` | Claude Code: `enableAllProjectMcpServers: true`, or the name in `enabledMcpjsonServers` | this project's entry in `~/.claude.json`; `~/.claude/settings.json` |
//! | `.mcp.json` | the same, from the project's `.claude/settings.json` and `.claude/settings.local.json` | only when this exact project has `hasTrustDialogAccepted: true` in `~/.claude.json` (a cloned repository cannot approve its own servers; Claude Code has the same rule) |
//! | `.codex/config.toml` | Codex: `trust_level = "trusted"` for this project | `[projects."<project>"]` in `~/.codex/config.toml` (Codex loads a project's config only then) |
//! | `.gemini/settings.json` | Gemini CLI: the longest rule covering the project is `TRUST_FOLDER` or `TRUST_PARENT` | `~/.gemini/trustedFolders.json` (or `$GEMINI_CLI_TRUSTED_FOLDERS_PATH`) |
//! | `.vscode/mcp.json`, `.cursor/mcp.json` | only `code-executor trust` | VS Code and Cursor keep their trust in their own databases, not in files to read |
//!
//! Claude Code's `disabledMcpjsonServers` is a switch (`super::table::LISTS`): a server it names
//! is off whatever approves it. Approvals given in a client are by name, as the client gives
//! them; `code-executor trust` approves one definition: when what it launches changes (any of
//! `super::brought::LAUNCH_FIELDS`), it needs approval again. A file that cannot be read or
//! parsed approves nothing (a warning says so).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::brought::{self, ProjectServer};
use super::discovery::Discovery;
use super::parse::{self, type_name};
use super::places::Places;
use super::read;
use super::spec::Transport;
use super::table::{Format, Seg, SourceKind};

/// Environment variable naming code-executor's approvals file.
pub const APPROVALS_FILE_ENV: &str = "CODE_EXECUTOR_APPROVALS_FILE";
/// Environment variable by which Gemini CLI reads its trusted folders from another file.
const GEMINI_TRUSTED_FOLDERS_ENV: &str = "GEMINI_CLI_TRUSTED_FOLDERS_PATH";
/// The version of the approvals file this server writes and reads.
pub(crate) const APPROVALS_VERSION: u64 = 1;

/// code-executor's approvals file: `$CODE_EXECUTOR_APPROVALS_FILE`, else `approvals.json` in
/// code-executor's config directory (`$XDG_CONFIG_HOME/code-executor`, by default
/// `~/.config/code-executor`, beside the default `servers.json`).
pub(crate) fn approvals_file(env: &BTreeMap<String, String>) -> PathBuf {
    match env.get(APPROVALS_FILE_ENV).filter(|v| !v.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => dirs::config_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("code-executor")
            .join("approvals.json"),
    }
}

/// The canonical path of a project: the key of its approvals.
pub(crate) fn project_root(project: &Path) -> PathBuf {
    std::fs::canonicalize(project)
        .or_else(|_| std::path::absolute(project))
        .unwrap_or_else(|_| project.to_owned())
}

/// One approval given with `code-executor trust`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The project's canonical path.
    pub project: String,
    pub name: String,
    /// What was approved (`super::brought::fingerprint`).
    pub fingerprint: String,
    /// The file that defined it then (for people reading the file).
    #[serde(default)]
    pub source: String,
    /// When (RFC 3339).
    #[serde(default)]
    pub approved_at: String,
}

/// The approvals file as a whole.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovalsFile {
    pub version: u64,
    #[serde(default)]
    pub approvals: Vec<Record>,
}

impl Default for ApprovalsFile {
    fn default() -> Self {
        ApprovalsFile {
            version: APPROVALS_VERSION,
            approvals: Vec::new(),
        }
    }
}

impl ApprovalsFile {
    /// Reads `path` (none there: no approvals). An error names the file and what is wrong.
    pub fn read(path: &Path) -> Result<ApprovalsFile, String> {
        let parsed = parse::read_config(path, Format::Jsonc).map_err(|e| e.to_string())?;
        let Some(parsed) = parsed else {
            return Ok(ApprovalsFile::default());
        };
        let file: ApprovalsFile = serde_json::from_value(parsed.root)
            .map_err(|e| format!("approvals file {}: {e}", path.display()))?;
        if file.version != APPROVALS_VERSION {
            return Err(format!(
                "approvals file {}: version {} is not supported (expected {APPROVALS_VERSION})",
                path.display(),
                file.version
            ));
        }
        Ok(file)
    }

    /// The file's text, as `trust` writes it.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Every approval that may apply to one project's servers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Approvals {
    /// The project (canonical).
    pub project: PathBuf,
    /// The approvals file and this project's records in it.
    file: PathBuf,
    recorded: Vec<Record>,
    /// Claude Code: where `enableAllProjectMcpServers` is true.
    claude_all: Option<String>,
    /// Claude Code: names in `enabledMcpjsonServers`, and where.
    claude_named: BTreeMap<String, String>,
    /// Codex: where this project is trusted.
    codex: Option<String>,
    /// Gemini CLI: the rule that trusts this folder.
    gemini: Option<String>,
    /// Files that could not be used.
    pub warnings: Vec<String>,
    /// Tests of the merge approve everything.
    #[cfg(test)]
    everything: bool,
}

impl Approvals {
    /// Reads every approval for `places.project`: the clients' files under `places.home`,
    /// the project's own Claude Code settings when Claude Code trusts it, and `file`.
    pub(crate) fn load(places: &Places, env: &BTreeMap<String, String>, file: &Path) -> Approvals {
        let project = project_root(&places.project);
        let mut out = Approvals {
            project: project.clone(),
            file: file.to_owned(),
            ..Approvals::default()
        };
        match ApprovalsFile::read(file) {
            Ok(all) => {
                let key = project.to_string_lossy();
                out.recorded = all
                    .approvals
                    .into_iter()
                    .filter(|r| r.project == key)
                    .collect();
            }
            Err(e) => out
                .warnings
                .push(format!("{e}; no `code-executor trust` approval is used")),
        }
        out.claude(places);
        out.codex(places);
        let gemini = env
            .get(GEMINI_TRUSTED_FOLDERS_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| places.home.join(".gemini/trustedFolders.json"));
        out.gemini(&gemini, &project);
        out
    }

    /// An approval that lets the definition `fingerprint` of `name` from `kind` run, and who
    /// gave it; `None`: it needs approval.
    pub(crate) fn check(&self, kind: SourceKind, name: &str, fingerprint: &str) -> Option<String> {
        #[cfg(test)]
        if self.everything {
            return Some("test".to_owned());
        }
        if self
            .recorded
            .iter()
            .any(|r| r.name == name && r.fingerprint == fingerprint)
        {
            return Some(format!("`code-executor trust` ({})", self.file.display()));
        }
        match kind {
            SourceKind::ClaudeCodeProject => self
                .claude_named
                .get(name)
                .or(self.claude_all.as_ref())
                .cloned(),
            SourceKind::CodexProject => self.codex.clone(),
            SourceKind::GeminiProject => self.gemini.clone(),
            _ => None,
        }
    }

    /// Whether a definition of `name` from `kind`, as written, is one of the project's own and
    /// not approved.
    pub(crate) fn withholds(&self, kind: SourceKind, name: &str, definition: &Value) -> bool {
        brought::in_project(kind)
            && self
                .check(kind, name, &brought::fingerprint(definition))
                .is_none()
    }

    /// Reads `path` as JSON with comments. A problem approves nothing; it becomes a warning
    /// when `warn` (discovery already warns about the files it reads itself).
    fn load_json(&mut self, path: &Path, warn: bool) -> Option<Value> {
        match parse::read_config(path, Format::Jsonc) {
            Ok(parsed) => parsed.map(|p| p.root),
            Err(e) => {
                if warn {
                    self.warnings
                        .push(format!("{e}; no approval in it is used"));
                }
                None
            }
        }
    }

    fn claude(&mut self, places: &Places) {
        let claude_json = places.home.join(".claude.json");
        let mut trusted = false;
        if let Some(root) = self.load_json(&claude_json, false) {
            let at = [Seg::Key("projects"), Seg::ThisProject];
            let keys = places.key_path(&at, Some(&root));
            if let Ok(Some(entry)) = read::walk(&root, &at, &keys) {
                trusted = entry.get("hasTrustDialogAccepted") == Some(&Value::Bool(true));
                let here = format!("this project's entry in {}", claude_json.display());
                self.claude_settings(entry, &here);
            }
        }
        let user = places.home.join(".claude/settings.json");
        if let Some(root) = self.load_json(&user, false) {
            self.claude_settings(&root, &user.display().to_string());
        }
        if trusted {
            for rel in [".claude/settings.json", ".claude/settings.local.json"] {
                let path = places.project.join(rel);
                if let Some(root) = self.load_json(&path, false) {
                    self.claude_settings(&root, &path.display().to_string());
                }
            }
        }
    }

    /// Claude Code's approval keys in one settings object.
    fn claude_settings(&mut self, settings: &Value, here: &str) {
        if settings.get("enableAllProjectMcpServers") == Some(&Value::Bool(true))
            && self.claude_all.is_none()
        {
            self.claude_all = Some(format!(
                "Claude Code (enableAllProjectMcpServers in {here})"
            ));
        }
        match settings.get("enabledMcpjsonServers") {
            None | Some(Value::Null) => {}
            Some(Value::Array(names)) => {
                for name in names.iter().filter_map(Value::as_str) {
                    self.claude_named.entry(name.to_owned()).or_insert_with(|| {
                        format!("Claude Code (enabledMcpjsonServers in {here})")
                    });
                }
            }
            Some(other) => self.warnings.push(format!(
                "ignoring \"enabledMcpjsonServers\" in {here}: expected an array of names, found {}",
                type_name(other)
            )),
        }
    }

    fn codex(&mut self, places: &Places) {
        let path = places.home.join(".codex/config.toml");
        // Discovery reads (and warns about) this file too.
        let Ok(Some(parsed)) = parse::read_config(&path, Format::Toml) else {
            return;
        };
        let root = parsed.root;
        let Some(projects) = root.get("projects").and_then(Value::as_object) else {
            return;
        };
        for key in places.project_keys() {
            let level = projects.get(&key).and_then(|p| p.get("trust_level"));
            if level.and_then(Value::as_str) == Some("trusted") {
                self.codex = Some(format!(
                    "Codex (trust_level = \"trusted\" for {key} in {})",
                    path.display()
                ));
                return;
            }
        }
    }

    /// Gemini CLI's rule: of the rules whose folder holds the project (`TRUST_PARENT`: the
    /// folder above the one named), the one with the longest path decides.
    fn gemini(&mut self, path: &Path, project: &Path) {
        let Some(root) = self.load_json(path, true) else {
            return;
        };
        let Some(rules) = root.as_object() else {
            self.warnings.push(format!(
                "ignoring {}: expected an object of folders",
                path.display()
            ));
            return;
        };
        let mut best: Option<(usize, &str, &str)> = None;
        for (rule, level) in rules {
            let Some(level) = level.as_str() else {
                continue;
            };
            let folder = match level {
                "TRUST_PARENT" => Path::new(rule).parent().unwrap_or(Path::new(rule)),
                "TRUST_FOLDER" | "DO_NOT_TRUST" => Path::new(rule),
                _ => continue,
            };
            let folder = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_owned());
            if project.starts_with(&folder) && best.is_none_or(|(len, ..)| rule.len() > len) {
                best = Some((rule.len(), rule, level));
            }
        }
        if let Some((_, rule, level @ ("TRUST_FOLDER" | "TRUST_PARENT"))) = best {
            self.gemini = Some(format!(
                "Gemini CLI ({rule}: {level} in {})",
                path.display()
            ));
        }
    }
}

/// Moves every pending server (see `super::brought::Pending`) that an approval covers into
/// `found.servers`, and records every one of them, approved or not, in
/// `found.project_servers`. What is not approved is never handed to anything that starts
/// servers.
pub(crate) fn gate(found: &mut Discovery, approvals: &Approvals) {
    for pending in std::mem::take(&mut found.pending) {
        let spec = pending.spec;
        let approved_by = approvals.check(spec.source.kind, &spec.name, &pending.fingerprint);
        found.project_servers.push(ProjectServer {
            name: spec.name.clone(),
            source: spec.source.clone(),
            project: approvals.project.clone(),
            fingerprint: pending.fingerprint,
            launch: pending.launch,
            transport: match spec.transport {
                Transport::Stdio { .. } => "stdio",
                Transport::Http { .. } => "http",
                Transport::Sse { .. } => "sse",
            },
            approved_by: approved_by.clone(),
        });
        if approved_by.is_some() {
            found.servers.push(spec);
        }
    }
    found.servers.sort_by(|a, b| a.name.cmp(&b.name));
    found.project_servers.sort_by(|a, b| a.name.cmp(&b.name));
    for warning in &approvals.warnings {
        if !found.warnings.contains(warning) {
            found.warnings.push(warning.clone());
        }
    }
}

#[cfg(test)]
impl Approvals {
    /// Approves everything: for tests of the merge itself.
    pub(crate) fn everything() -> Approvals {
        Approvals {
            everything: true,
            ..Approvals::default()
        }
    }
}
