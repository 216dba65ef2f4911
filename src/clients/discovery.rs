//! Discovery of the downstream MCP servers a user has already configured.
//!
//! This module owns finding, reading and merging the MCP client config files
//! that exist on the machine (Claude Desktop, Claude Code, Cursor, VS Code,
//! Codex, Gemini CLI, plus an explicit `MCP_CONFIG_PATH`), interpreting each
//! the way its client does, and turning every entry into a launchable
//! [`ServerSpec`] or a reason why it is disabled or invalid. It does not
//! launch anything. Variable expansion lives in [`super::expand`], the Codex
//! and Gemini CLI spellings in [`super::dialects`].
//!
//! Everything it looks at comes from [`DiscoveryInputs`]: it never reads the
//! process environment or the real home directory by itself.
//!
//! # Sources, lowest precedence first
//!
//! | # | file | key | [`SourceKind`] |
//! |---|------|-----|----------------|
//! | 1 | `~/.config/Claude/claude_desktop_config.json`, `~/Library/Application Support/Claude/claude_desktop_config.json` | `mcpServers` | `ClaudeDesktop` |
//! | 2 | `~/.cursor/mcp.json` | `mcpServers` | `CursorGlobal` |
//! | 3 | `~/.codex/config.toml` (TOML) | `[mcp_servers.<name>]` | `CodexUser` |
//! | 4 | `~/.gemini/settings.json` | `mcpServers` | `GeminiUser` |
//! | 5 | `~/.config/Code/User/mcp.json`, `~/Library/Application Support/Code/User/mcp.json` | `servers` | `VsCodeUser` |
//! | 6 | `~/.claude.json` | `mcpServers` | `ClaudeCodeUser` |
//! | 7 | `~/.claude.json` | `projects[<project dir>].mcpServers` | `ClaudeCodeLocal` |
//! | 8 | `<project>/.vscode/mcp.json` | `servers` | `VsCode` |
//! | 9 | `<project>/.cursor/mcp.json` | `mcpServers` | `CursorProject` |
//! | 10 | `<project>/.codex/config.toml` (TOML) | `[mcp_servers.<name>]` | `CodexProject` |
//! | 11 | `<project>/.gemini/settings.json` | `mcpServers` | `GeminiProject` |
//! | 12 | `<project>/.mcp.json` | `mcpServers` | `ClaudeCodeProject` |
//! | 13 | `MCP_CONFIG_PATH` (JSON whatever its name) | `servers`, then `mcpServers` | `Explicit` |
//!
//! Codex and Gemini CLI definitions are first rewritten into the standard form
//! ([`super::dialects`]): Codex's `url` is streamable HTTP and its headers come
//! from `http_headers`, `env_http_headers` and `bearer_token_env_var`; Gemini
//! CLI's `httpUrl` is streamable HTTP, its `url` is SSE (not supported), and
//! its `$VAR` is `${VAR}`.
//!
//! A definition replaces every earlier definition **of the same name**,
//! whatever state either is in: a project entry that is disabled or invalid
//! hides a working global one of the same name (the replaced ones are listed
//! in [`Discovery::overridden`]). Files are parsed as JSON with comments and
//! trailing commas (what VS Code writes); a UTF-8 byte-order mark is skipped.
//!
//! # Disabling
//!
//! An entry is disabled by `"disabled": true` or `"enabled": false` on it; by
//! its name in `disabledMcpServers` at the top level of `~/.claude.json` or in
//! that file's entry for the project (whichever source defines it); and, when
//! the winning definition comes from `.mcp.json`, by its name in
//! `disabledMcpjsonServers` in that project entry or in
//! `~/.claude/settings.json`, `<project>/.claude/settings.json` or
//! `<project>/.claude/settings.local.json` (servers the user rejected in
//! Claude Code). A Gemini CLI server is also disabled by its name in
//! `mcp.excluded` (or `excludeMCPServers`) of either Gemini CLI settings file,
//! or by its name missing from an `mcp.allowed` (or `allowMCPServers`) of
//! either file (Gemini CLI merges the two files' lists this way).
//! Claude Code's approval lists (`enabledMcpjsonServers`,
//! `enableAllProjectMcpServers`) are not consulted: an unapproved `.mcp.json`
//! server is used.
//!
//! # Errors and warnings
//!
//! - An explicit `MCP_CONFIG_PATH` that is missing, unreadable, unparsable or
//!   of the wrong shape makes [`discover`] fail with a [`DiscoveryError`].
//! - Any other file that exists but cannot be read or parsed, or has the wrong
//!   shape, is skipped with a warning naming the file (and line and column for
//!   a syntax error); the other files keep working. A missing file is normal
//!   and silent. An empty file counts as an empty config.
//! - A single entry that cannot be used (unset variable, missing `command`,
//!   SSE transport, `${input:...}`, wrong field type, ...) is listed in
//!   [`Discovery::invalid`] with its reason; its siblings are unaffected.
//!
//! # Entries
//!
//! Stdio: `{"type"?: "stdio", "command", "args"?, "env"?, "cwd"?}`. HTTP:
//! `{"type": "http" | "streamable-http" | "streamableHttp", "url",
//! "headers"?}`, or `{"url", "headers"?}` without a type. Without a type,
//! `command` wins over `url` (with a warning). `"type": "sse"` is invalid.
//! Unknown fields are ignored, except `envFile`, which earns a warning
//! because the server will run without those variables. Strings, numbers
//! and booleans are accepted in `args`, `env` and `headers` (numbers and
//! booleans are written out as JSON writes them); a `null` env or header
//! value is dropped. `command`, `args`, `env` values, `cwd`, `url` and
//! header values go through [`super::expand::expand`] with `${workspaceFolder}`
//! = the project directory and `${userHome}` = the home directory. A relative
//! `cwd` (after expansion) is relative to the directory of the file that
//! defines it; no `cwd` leaves the choice to the launcher. `env` holds only
//! the variables the entry sets, not the inherited environment. A relative
//! `command` is left as written.
//!
//! # Skipping ourselves
//!
//! An entry whose `command` has a file name (ignoring `.exe`, `.cmd`, `.bat`)
//! in [`DiscoveryInputs::self_names`], or that runs `npx`/`bunx`/`pnpx`/`uvx`
//! with a package (`-p`/`--package`/`--from` value or first positional
//! argument, version and scope stripped) in `self_names`, is dropped with a
//! warning, checked both before and after expansion; so is an entry named
//! like this server (`setup` registers it under that name, whatever the
//! command). `setup` uses the same rules.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::dialects::{self, Dialect};
use super::expand::{self, Vars};

/// Where to look. Passed in explicitly so that tests never touch the real
/// home directory or environment.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryInputs {
    /// The user's home directory.
    pub home: PathBuf,
    /// The project root: the directory the client launched us in.
    pub project_dir: PathBuf,
    /// `MCP_CONFIG_PATH`, if set. A relative path is relative to
    /// `project_dir`; a leading `~/` means `home`.
    pub explicit: Option<PathBuf>,
    /// The environment used for `${VAR}` expansion.
    pub env: BTreeMap<String, String>,
    /// Command file names that launch this server itself, e.g.
    /// `["code-executor"]`.
    pub self_names: Vec<String>,
}

/// Which kind of config file a definition came from. The order of the
/// variants is the precedence order, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Cursor's global `~/.cursor/mcp.json`.
    CursorGlobal,
    /// Codex's user config `~/.codex/config.toml`.
    CodexUser,
    /// Gemini CLI's user settings `~/.gemini/settings.json`.
    GeminiUser,
    /// VS Code's user `mcp.json` (`~/.config/Code/User/`, macOS `~/Library/Application Support/Code/User/`).
    VsCodeUser,
    /// Claude Code's user scope: top-level `mcpServers` in `~/.claude.json`.
    ClaudeCodeUser,
    /// Claude Code's local scope: `projects[<dir>].mcpServers` in `~/.claude.json`.
    ClaudeCodeLocal,
    /// VS Code's workspace `.vscode/mcp.json`.
    VsCode,
    /// Cursor's project `.cursor/mcp.json`.
    CursorProject,
    /// Codex's project config `.codex/config.toml`.
    CodexProject,
    /// Gemini CLI's project settings `.gemini/settings.json`.
    GeminiProject,
    /// Claude Code's project scope: `.mcp.json` in the project root.
    ClaudeCodeProject,
    /// The file named by `MCP_CONFIG_PATH`.
    Explicit,
}

impl SourceKind {
    /// A short human-readable name.
    pub fn label(self) -> &'static str {
        match self {
            SourceKind::ClaudeDesktop => "Claude Desktop",
            SourceKind::CursorGlobal => "Cursor (global)",
            SourceKind::CodexUser => "Codex (user)",
            SourceKind::GeminiUser => "Gemini CLI (user)",
            SourceKind::VsCodeUser => "VS Code (user)",
            SourceKind::ClaudeCodeUser => "Claude Code (user scope)",
            SourceKind::ClaudeCodeLocal => "Claude Code (local scope)",
            SourceKind::VsCode => "VS Code (workspace)",
            SourceKind::CursorProject => "Cursor (project)",
            SourceKind::CodexProject => "Codex (project)",
            SourceKind::GeminiProject => "Gemini CLI (project)",
            SourceKind::ClaudeCodeProject => "Claude Code (project scope)",
            SourceKind::Explicit => "MCP_CONFIG_PATH",
        }
    }
}

/// The file (and the part of it) a definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfigSource {
    pub kind: SourceKind,
    pub path: PathBuf,
}

impl ConfigSource {
    /// A placeholder source for other modules' unit tests.
    #[cfg(test)]
    pub fn test() -> Self {
        ConfigSource {
            kind: SourceKind::Explicit,
            path: PathBuf::from("/test/mcp.json"),
        }
    }
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} config {}", self.kind.label(), self.path.display())
    }
}

/// How to reach a server, with every variable already expanded.
///
/// `Debug` hides env and header values, which often hold credentials.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Only the variables the entry sets.
        env: BTreeMap<String, String>,
        /// Absolute unless the config file's own path was relative.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Redacted<'a>(&'a BTreeMap<String, String>);
        impl fmt::Debug for Redacted<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map()
                    .entries(self.0.keys().map(|k| (k, "<redacted>")))
                    .finish()
            }
        }
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &Redacted(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &Redacted(headers))
                .finish(),
        }
    }
}

/// A server that is enabled and valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    pub source: ConfigSource,
}

/// A server that the user turned off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisabledEntry {
    pub name: String,
    /// The winning definition.
    pub source: ConfigSource,
    /// What turned it off, e.g. `"disabled": true`.
    pub reason: String,
}

/// A definition that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidEntry {
    pub name: String,
    pub source: ConfigSource,
    /// Why, naming the field where there is one, e.g.
    /// `env.API_KEY: environment variable `API_KEY` is not set`.
    pub error: String,
}

/// A definition replaced by a later one of the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overridden {
    pub name: String,
    /// The definition that lost.
    pub source: ConfigSource,
    /// The definition that won.
    pub by: ConfigSource,
}

/// The merged result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// Enabled, valid servers, sorted by name.
    pub servers: Vec<ServerSpec>,
    /// Disabled servers, sorted by name.
    pub disabled: Vec<DisabledEntry>,
    /// Unusable definitions, sorted by name; the others keep working.
    pub invalid: Vec<InvalidEntry>,
    /// Definitions hidden by a later one of the same name, sorted by name,
    /// then lowest precedence first.
    pub overridden: Vec<Overridden>,
    /// Every config file read and parsed, in reading order, each once.
    pub sources_read: Vec<PathBuf>,
    /// Things the user may want to know: skipped files, skipped
    /// self-references, ignored fields.
    pub warnings: Vec<String>,
}

/// A config file that exists but cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The explicit config file does not exist.
    #[error("MCP config file {} (MCP_CONFIG_PATH) does not exist", .path.display())]
    NotFound { path: PathBuf },
    /// The file exists but cannot be read (permissions, a directory, not UTF-8).
    #[error("cannot read MCP config file {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file is not valid JSON (comments and trailing commas allowed), or for Codex not
    /// valid TOML.
    #[error("cannot parse MCP config file {} at line {line}, column {column}: {message}", .path.display())]
    Parse {
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// 1-based, in characters.
        column: usize,
        message: String,
    },
    /// The file is JSON but not shaped like a config (e.g. `mcpServers` is an array).
    #[error("unexpected structure in MCP config file {}: {message}", .path.display())]
    Shape { path: PathBuf, message: String },
}

impl DiscoveryError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            DiscoveryError::NotFound { path }
            | DiscoveryError::Read { path, .. }
            | DiscoveryError::Parse { path, .. }
            | DiscoveryError::Shape { path, .. } => path,
        }
    }
}

/// Reads every config file in [`DiscoveryInputs`] and merges the servers they
/// define (see the module docs for the rules).
///
/// Fails only on a problem with the explicit `MCP_CONFIG_PATH` file; problems
/// with any other file become [`Discovery::warnings`].
pub fn discover(inputs: &DiscoveryInputs) -> Result<Discovery, DiscoveryError> {
    let mut run = Run::new(inputs);
    let home = &inputs.home;
    let project = &inputs.project_dir;

    for path in [
        home.join(".config/Claude/claude_desktop_config.json"),
        home.join("Library/Application Support/Claude/claude_desktop_config.json"),
    ] {
        run.file_source(SourceKind::ClaudeDesktop, &path)?;
    }
    run.file_source(SourceKind::CursorGlobal, &home.join(".cursor/mcp.json"))?;
    run.dialect_source(SourceKind::CodexUser, &home.join(".codex/config.toml"));
    run.dialect_source(SourceKind::GeminiUser, &home.join(".gemini/settings.json"));
    for path in [
        home.join(".config/Code/User/mcp.json"),
        home.join("Library/Application Support/Code/User/mcp.json"),
    ] {
        run.file_source(SourceKind::VsCodeUser, &path)?;
    }
    run.claude_json(&home.join(".claude.json"));
    run.file_source(SourceKind::VsCode, &project.join(".vscode/mcp.json"))?;
    run.file_source(SourceKind::CursorProject, &project.join(".cursor/mcp.json"))?;
    run.dialect_source(
        SourceKind::CodexProject,
        &project.join(".codex/config.toml"),
    );
    run.dialect_source(
        SourceKind::GeminiProject,
        &project.join(".gemini/settings.json"),
    );
    run.file_source(SourceKind::ClaudeCodeProject, &project.join(".mcp.json"))?;
    for path in [
        home.join(".claude/settings.json"),
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
    ] {
        run.claude_settings(&path);
    }
    if let Some(explicit) = &inputs.explicit {
        let path = resolve_explicit(explicit, inputs);
        run.file_source(SourceKind::Explicit, &path)?;
    }
    Ok(run.finish())
}

/// Reads one MCP config file on its own (`servers` or `mcpServers`), with the same rules as
/// the explicit file; used for this server's own servers file.
pub fn discover_file(inputs: &DiscoveryInputs, path: &Path) -> Result<Discovery, DiscoveryError> {
    let mut run = Run::new(inputs);
    run.file_source(SourceKind::Explicit, path)?;
    Ok(run.finish())
}

fn resolve_explicit(explicit: &Path, inputs: &DiscoveryInputs) -> PathBuf {
    if let Ok(rest) = explicit.strip_prefix("~") {
        return inputs.home.join(rest);
    }
    if explicit.is_relative() {
        return inputs.project_dir.join(explicit);
    }
    explicit.to_owned()
}

/// What one definition amounts to on its own.
enum State {
    Enabled(Transport),
    Disabled(String),
    Invalid(String),
    /// It launches this server; already warned about.
    SelfSkip,
}

struct Candidate {
    source: ConfigSource,
    state: State,
}

/// What an entry needs to know besides itself.
struct Context<'a> {
    inputs: &'a DiscoveryInputs,
    workspace: String,
    home: String,
}

impl Context<'_> {
    fn vars(&self) -> Vars<'_> {
        Vars {
            env: &self.inputs.env,
            workspace_folder: Some(&self.workspace),
            user_home: Some(&self.home),
        }
    }
}

struct Run<'a> {
    ctx: Context<'a>,
    /// Definitions by name, lowest precedence first.
    candidates: BTreeMap<String, Vec<Candidate>>,
    /// `disabledMcpServers`: name → reason.
    disabled_names: BTreeMap<String, String>,
    /// `disabledMcpjsonServers`: name → reason; applies to `.mcp.json` only.
    disabled_mcpjson: BTreeMap<String, String>,
    /// Gemini CLI's `mcp.excluded` of either settings file: name → reason; applies to Gemini
    /// CLI's servers only.
    gemini_excluded: BTreeMap<String, String>,
    /// Gemini CLI's `mcp.allowed` lists: (file, names); a Gemini CLI server missing from any
    /// of them is off.
    gemini_allowed: Vec<(PathBuf, Vec<String>)>,
    sources_read: Vec<PathBuf>,
    warnings: Vec<String>,
}

impl<'a> Run<'a> {
    fn new(inputs: &'a DiscoveryInputs) -> Self {
        Run {
            ctx: Context {
                inputs,
                workspace: inputs.project_dir.to_string_lossy().into_owned(),
                home: inputs.home.to_string_lossy().into_owned(),
            },
            candidates: BTreeMap::new(),
            disabled_names: BTreeMap::new(),
            disabled_mcpjson: BTreeMap::new(),
            gemini_excluded: BTreeMap::new(),
            gemini_allowed: Vec::new(),
            sources_read: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Returns the error for the explicit file; records a warning otherwise.
    fn soft(&mut self, strict: bool, err: DiscoveryError) -> Result<(), DiscoveryError> {
        if strict {
            Err(err)
        } else {
            self.warnings.push(format!("{err}; skipping it"));
            Ok(())
        }
    }

    /// Reads and parses `path`. `None` when it is missing or (unless
    /// `strict`) unusable.
    fn load(
        &mut self,
        path: &Path,
        strict: bool,
        toml: bool,
    ) -> Result<Option<Value>, DiscoveryError> {
        match read_config(path, toml) {
            Ok(Some(root)) => {
                if !self.sources_read.iter().any(|p| p == path) {
                    self.sources_read.push(path.to_owned());
                }
                Ok(Some(root))
            }
            Ok(None) if strict => Err(DiscoveryError::NotFound {
                path: path.to_owned(),
            }),
            Ok(None) => Ok(None),
            Err(err) => self.soft(strict, err).map(|()| None),
        }
    }

    /// `root[key]` as a server map: `None` when absent, `null`, or (unless
    /// `strict`) not an object.
    fn section<'v>(
        &mut self,
        root: &'v Value,
        key: &str,
        path: &Path,
        strict: bool,
    ) -> Result<Option<&'v Map<String, Value>>, DiscoveryError> {
        match root.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(other) => {
                let err = DiscoveryError::Shape {
                    path: path.to_owned(),
                    message: format!("\"{key}\" must be an object, found {}", type_name(other)),
                };
                self.soft(strict, err).map(|()| None)
            }
        }
    }

    /// A file whose servers are all of one kind.
    fn file_source(&mut self, kind: SourceKind, path: &Path) -> Result<(), DiscoveryError> {
        let strict = kind == SourceKind::Explicit;
        let Some(root) = self.load(path, strict, false)? else {
            return Ok(());
        };
        let (keys, other): (&[&str], Option<&str>) = match kind {
            SourceKind::VsCode | SourceKind::VsCodeUser => (&["servers"], Some("mcpServers")),
            SourceKind::Explicit => (&["servers", "mcpServers"], None),
            _ => (&["mcpServers"], Some("servers")),
        };
        let source = ConfigSource {
            kind,
            path: path.to_owned(),
        };
        let mut found = false;
        for key in keys {
            if let Some(map) = self.section(&root, key, path, strict)? {
                found = true;
                self.add_entries(map, &source);
            }
        }
        if !found
            && let Some(other) = other
            && root.get(other).is_some_and(Value::is_object)
        {
            self.warnings.push(format!(
                "{source} has \"{other}\" but {} reads \"{}\"; ignoring those servers",
                kind.label(),
                keys[0],
            ));
        }
        Ok(())
    }

    /// `~/.claude.json`: user scope, this project's local scope and the
    /// disable lists.
    fn claude_json(&mut self, path: &Path) {
        let Ok(Some(root)) = self.load(path, false, false) else {
            return;
        };
        let user = ConfigSource {
            kind: SourceKind::ClaudeCodeUser,
            path: path.to_owned(),
        };
        if let Ok(Some(map)) = self.section(&root, "mcpServers", path, false) {
            self.add_entries(map, &user);
        }
        self.name_list(&root, "disabledMcpServers", path, false);

        let projects = match root.get("projects") {
            None | Some(Value::Null) => return,
            Some(Value::Object(projects)) => projects,
            Some(other) => {
                self.warnings.push(format!(
                    "ignoring \"projects\" in {}: expected an object, found {}",
                    path.display(),
                    type_name(other)
                ));
                return;
            }
        };
        let Some(entry) = project_keys(&self.ctx.inputs.project_dir)
            .iter()
            .find_map(|key| projects.get(key))
        else {
            return;
        };
        if !entry.is_object() {
            self.warnings.push(format!(
                "ignoring this project's entry in {}: expected an object, found {}",
                path.display(),
                type_name(entry)
            ));
            return;
        }
        let local = ConfigSource {
            kind: SourceKind::ClaudeCodeLocal,
            path: path.to_owned(),
        };
        if let Ok(Some(map)) = self.section(entry, "mcpServers", path, false) {
            self.add_entries(map, &local);
        }
        self.name_list(entry, "disabledMcpServers", path, false);
        self.name_list(entry, "disabledMcpjsonServers", path, true);
    }

    /// A Claude Code settings file: only its `disabledMcpjsonServers`.
    fn claude_settings(&mut self, path: &Path) {
        if let Ok(Some(root)) = self.load(path, false, false) {
            self.name_list(&root, "disabledMcpjsonServers", path, true);
        }
    }

    /// Records the names in `obj[key]` as disabled.
    fn name_list(&mut self, obj: &Value, key: &str, path: &Path, mcpjson_only: bool) {
        let names = match obj.get(key) {
            None | Some(Value::Null) => return,
            Some(Value::Array(names)) => names,
            Some(other) => {
                self.warnings.push(format!(
                    "ignoring \"{key}\" in {}: expected an array of names, found {}",
                    path.display(),
                    type_name(other)
                ));
                return;
            }
        };
        let reason = format!("listed in \"{key}\" in {}", path.display());
        let target = if mcpjson_only {
            &mut self.disabled_mcpjson
        } else {
            &mut self.disabled_names
        };
        for name in names.iter().filter_map(Value::as_str) {
            target
                .entry(name.to_owned())
                .or_insert_with(|| reason.clone());
        }
    }

    fn add_entries(&mut self, map: &Map<String, Value>, source: &ConfigSource) {
        for (name, value) in map {
            let state = evaluate(name, value, source, &self.ctx, &mut self.warnings);
            self.add_candidate(name, source, state);
        }
    }

    fn add_candidate(&mut self, name: &str, source: &ConfigSource, state: State) {
        self.candidates
            .entry(name.to_owned())
            .or_default()
            .push(Candidate {
                source: source.clone(),
                state,
            });
    }

    /// A Codex (TOML) or Gemini CLI file: its servers rewritten into the standard form, and
    /// for Gemini CLI its lists of excluded and allowed servers, which apply to the servers of
    /// both Gemini CLI settings files (as Gemini CLI merges them).
    fn dialect_source(&mut self, kind: SourceKind, path: &Path) {
        let dialect = Dialect::of_file(path);
        let Ok(Some(root)) = self.load(path, false, dialect == Dialect::Codex) else {
            return;
        };
        if dialect == Dialect::Gemini {
            let excluded = self.gemini_list(
                &root,
                &["/mcp/excluded", "/excludeMCPServers"],
                "mcp.excluded",
                path,
            );
            let reason = format!("listed in \"mcp.excluded\" in {}", path.display());
            for name in excluded.unwrap_or_default() {
                self.gemini_excluded
                    .entry(name)
                    .or_insert_with(|| reason.clone());
            }
            if let Some(allowed) = self.gemini_list(
                &root,
                &["/mcp/allowed", "/allowMCPServers"],
                "mcp.allowed",
                path,
            ) {
                self.gemini_allowed.push((path.to_owned(), allowed));
            }
        }
        let key = match dialect {
            Dialect::Codex => "mcp_servers",
            Dialect::Gemini | Dialect::Standard => "mcpServers",
        };
        let Ok(Some(map)) = self.section(&root, key, path, false) else {
            return;
        };
        let source = ConfigSource {
            kind,
            path: path.to_owned(),
        };
        for (name, value) in map {
            let state = if let Some(definition) = value.as_object() {
                let standard = Value::Object(dialects::standard_form(dialect, definition));
                evaluate(name, &standard, &source, &self.ctx, &mut self.warnings)
            } else {
                evaluate(name, value, &source, &self.ctx, &mut self.warnings)
            };
            self.add_candidate(name, &source, state);
        }
    }

    /// The names in any of `pointers` (both spellings of one Gemini CLI list); `None` when
    /// the file has neither.
    fn gemini_list(
        &mut self,
        root: &Value,
        pointers: &[&str],
        label: &str,
        path: &Path,
    ) -> Option<Vec<String>> {
        let mut out: Option<Vec<String>> = None;
        for pointer in pointers {
            match root.pointer(pointer) {
                None | Some(Value::Null) => {}
                Some(Value::Array(names)) => out
                    .get_or_insert_with(Vec::new)
                    .extend(names.iter().filter_map(|n| n.as_str().map(str::to_owned))),
                Some(other) => self.warnings.push(format!(
                    "ignoring \"{label}\" in {}: expected an array of names, found {}",
                    path.display(),
                    type_name(other)
                )),
            }
        }
        out
    }

    fn finish(self) -> Discovery {
        let mut out = Discovery {
            sources_read: self.sources_read,
            warnings: self.warnings,
            ..Discovery::default()
        };
        for (name, mut candidates) in self.candidates {
            let Some(winner) = candidates.pop() else {
                continue;
            };
            for loser in candidates {
                out.overridden.push(Overridden {
                    name: name.clone(),
                    source: loser.source,
                    by: winner.source.clone(),
                });
            }
            let gemini = matches!(
                winner.source.kind,
                SourceKind::GeminiUser | SourceKind::GeminiProject
            );
            let not_allowed = self
                .gemini_allowed
                .iter()
                .find(|(_, names)| !names.contains(&name))
                .map(|(path, _)| format!("not in \"mcp.allowed\" in {}", path.display()));
            let listed = self
                .disabled_names
                .get(&name)
                .cloned()
                .or_else(|| {
                    (winner.source.kind == SourceKind::ClaudeCodeProject)
                        .then(|| self.disabled_mcpjson.get(&name).cloned())
                        .flatten()
                })
                .or_else(|| {
                    gemini
                        .then(|| self.gemini_excluded.get(&name).cloned().or(not_allowed))
                        .flatten()
                });
            let source = winner.source;
            match (winner.state, listed) {
                (State::SelfSkip, _) => {}
                (State::Disabled(reason), _) => out.disabled.push(DisabledEntry {
                    name,
                    source,
                    reason,
                }),
                (_, Some(reason)) => out.disabled.push(DisabledEntry {
                    name,
                    source,
                    reason,
                }),
                (State::Invalid(error), None) => out.invalid.push(InvalidEntry {
                    name,
                    source,
                    error,
                }),
                (State::Enabled(transport), None) => out.servers.push(ServerSpec {
                    name,
                    transport,
                    source,
                }),
            }
        }
        out
    }
}

/// The keys under which Claude Code may have stored this project: the path
/// as given, without a trailing separator, made absolute, and with symlinks
/// resolved (Claude Code uses the physical working directory).
fn project_keys(project_dir: &Path) -> Vec<String> {
    let mut keys = Vec::new();
    let mut push = |p: &Path| {
        let s = p.to_string_lossy();
        for key in [s.as_ref(), s.trim_end_matches('/')] {
            if !key.is_empty() && !keys.iter().any(|k| k == key) {
                keys.push(key.to_owned());
            }
        }
    };
    push(project_dir);
    if let Ok(abs) = std::path::absolute(project_dir) {
        push(&abs);
    }
    if let Ok(canonical) = std::fs::canonicalize(project_dir) {
        push(&canonical);
    }
    keys
}

/// `Ok(None)` when the file does not exist. `toml`: Codex's `config.toml`; otherwise JSON with
/// comments.
fn read_config(path: &Path, toml: bool) -> Result<Option<Value>, DiscoveryError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(source) => {
            return Err(DiscoveryError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let text = String::from_utf8(bytes).map_err(|_| DiscoveryError::Read {
        path: path.to_owned(),
        source: io::Error::new(io::ErrorKind::InvalidData, "the file is not valid UTF-8"),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if toml {
        return toml::from_str::<Value>(text).map(Some).map_err(|e| {
            let at = e.span().map_or(0, |span| span.start);
            let before = &text[..at.min(text.len())];
            DiscoveryError::Parse {
                path: path.to_owned(),
                line: before.matches('\n').count() + 1,
                column: before.rsplit('\n').next().unwrap_or("").chars().count() + 1,
                message: e.message().to_owned(),
            }
        });
    }
    let options = jsonc_options();
    let root: Value =
        jsonc_parser::parse_to_serde_value(text, &options).map_err(|e| DiscoveryError::Parse {
            path: path.to_owned(),
            line: e.line_display(),
            column: e.column_display(),
            message: e.kind().to_string(),
        })?;
    match root {
        Value::Null => Ok(Some(Value::Object(Map::new()))),
        Value::Object(_) => Ok(Some(root)),
        other => Err(DiscoveryError::Shape {
            path: path.to_owned(),
            message: format!(
                "expected an object at the top level, found {}",
                type_name(&other)
            ),
        }),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Classifies one definition.
fn evaluate(
    name: &str,
    value: &Value,
    source: &ConfigSource,
    ctx: &Context<'_>,
    warnings: &mut Vec<String>,
) -> State {
    let Some(obj) = value.as_object() else {
        return State::Invalid(format!(
            "a server definition must be an object, found {}",
            type_name(value)
        ));
    };
    if name.trim().is_empty() {
        return State::Invalid("the server name is empty".to_owned());
    }
    let self_names = &ctx.inputs.self_names;
    if let Some(hit) = self_entry(name, obj, self_names) {
        warnings.push(self_warning(name, source, &hit));
        return State::SelfSkip;
    }
    if obj.get("disabled") == Some(&Value::Bool(true)) {
        return State::Disabled("\"disabled\": true".to_owned());
    }
    if obj.get("enabled") == Some(&Value::Bool(false)) {
        return State::Disabled("\"enabled\": false".to_owned());
    }
    let base_dir = source.path.parent().unwrap_or(Path::new(""));
    match transport(name, obj, source, base_dir, ctx.vars(), warnings) {
        Err(error) => State::Invalid(error),
        Ok(Transport::Stdio { command, args, .. })
            if launches_self(&command, &args, self_names).is_some() =>
        {
            let hit = launches_self(&command, &args, self_names).unwrap_or_default();
            warnings.push(self_warning(name, source, &hit));
            State::SelfSkip
        }
        Ok(transport) => State::Enabled(transport),
    }
}

fn self_warning(name: &str, source: &ConfigSource, hit: &str) -> String {
    format!("skipping server \"{name}\" from {source}: it launches this server itself ({hit})")
}

const SSE_UNSUPPORTED: &str = "SSE transport is not supported; use streamable HTTP (\"type\": \"http\") if the server offers it";

/// Builds the transport of an enabled entry, expanding variables.
fn transport(
    name: &str,
    obj: &Map<String, Value>,
    source: &ConfigSource,
    base_dir: &Path,
    vars: Vars<'_>,
    warnings: &mut Vec<String>,
) -> Result<Transport, String> {
    let present = |key: &str| obj.get(key).is_some_and(|v| !v.is_null());
    let is_http = match obj.get("type") {
        None | Some(Value::Null) => {
            if present("command") {
                if present("url") {
                    warnings.push(format!(
                        "server \"{name}\" in {source} has both \"command\" and \"url\" and no \"type\"; using \"command\""
                    ));
                }
                false
            } else if present("url") {
                true
            } else {
                return Err(
                    "needs a \"command\" (stdio server) or a \"url\" (HTTP server)".to_owned(),
                );
            }
        }
        Some(Value::String(ty)) => match ty.to_ascii_lowercase().as_str() {
            "stdio" => false,
            "http" | "streamable-http" | "streamablehttp" | "streamable_http" => true,
            "sse" => return Err(SSE_UNSUPPORTED.to_owned()),
            _ => {
                return Err(format!(
                    "unknown \"type\" {ty:?}; expected \"stdio\", \"http\" or \"streamable-http\""
                ));
            }
        },
        Some(other) => {
            return Err(format!(
                "\"type\" must be a string, found {}",
                type_name(other)
            ));
        }
    };

    let mut f = Fields {
        obj,
        vars,
        problems: Vec::new(),
    };
    if is_http {
        let url = f.required_string("url", "an HTTP server needs a \"url\"")?;
        let headers = f.string_map("headers");
        f.finish()?;
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err("url: must start with http:// or https://".to_owned());
        }
        return Ok(Transport::Http { url, headers });
    }

    let command = f.required_string("command", "a stdio server needs a \"command\"")?;
    let args = f.args();
    let env = f.string_map("env");
    let cwd = f.optional_string("cwd").filter(|c| !c.is_empty()).map(|c| {
        let cwd = PathBuf::from(c);
        if cwd.is_relative() {
            base_dir.join(cwd)
        } else {
            cwd
        }
    });
    f.finish()?;
    if command.trim().is_empty() {
        return Err("command: is empty".to_owned());
    }
    if present("envFile") {
        warnings.push(format!(
            "server \"{name}\" in {source}: \"envFile\" is not supported; the variables in it are not passed to the server"
        ));
    }
    Ok(Transport::Stdio {
        command,
        args,
        env,
        cwd,
    })
}

/// Reads and expands the fields of one entry, collecting every problem.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    vars: Vars<'a>,
    problems: Vec<String>,
}

impl Fields<'_> {
    fn expand(&mut self, field: &str, raw: &str) -> String {
        expand::expand(raw, &self.vars).unwrap_or_else(|e| {
            self.problems.push(format!("{field}: {e}"));
            String::new()
        })
    }

    /// Fails at once when the field is missing: nothing else is worth
    /// reporting then.
    fn required_string(&mut self, key: &str, missing: &str) -> Result<String, String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Err(missing.to_owned()),
            Some(Value::String(raw)) => Ok(self.expand(key, raw)),
            Some(other) => Err(format!(
                "{key}: must be a string, found {}",
                type_name(other)
            )),
        }
    }

    fn optional_string(&mut self, key: &str) -> Option<String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(raw)) => Some(self.expand(key, raw)),
            Some(other) => {
                self.problems.push(format!(
                    "{key}: must be a string, found {}",
                    type_name(other)
                ));
                None
            }
        }
    }

    fn args(&mut self) -> Vec<String> {
        let items = match self.obj.get("args") {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.problems.push(format!(
                    "args: must be an array of strings, found {}",
                    type_name(other)
                ));
                return Vec::new();
            }
        };
        let mut args = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = format!("args[{i}]");
            match scalar_string(item) {
                Some(raw) => args.push(self.expand(&field, &raw)),
                None => self.problems.push(format!(
                    "{field}: must be a string, found {}",
                    type_name(item)
                )),
            }
        }
        args
    }

    fn string_map(&mut self, key: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let items = match self.obj.get(key) {
            None | Some(Value::Null) => return out,
            Some(Value::Object(items)) => items,
            Some(other) => {
                self.problems.push(format!(
                    "{key}: must be an object, found {}",
                    type_name(other)
                ));
                return out;
            }
        };
        for (name, item) in items {
            let field = format!("{key}.{name}");
            match item {
                Value::Null => {}
                _ => match scalar_string(item) {
                    Some(raw) => {
                        let value = self.expand(&field, &raw);
                        out.insert(name.clone(), value);
                    }
                    None => self.problems.push(format!(
                        "{field}: must be a string, found {}",
                        type_name(item)
                    )),
                },
            }
        }
        out
    }

    fn finish(&mut self) -> Result<(), String> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(self.problems.join("; "))
        }
    }
}

/// Strings as they are; numbers and booleans as JSON writes them.
fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The last component of a `/`- or `\`-separated path, without a Windows
/// executable extension.
fn file_stem_of_command(command: &str) -> &str {
    let base = command
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(command);
    for ext in [".exe", ".cmd", ".bat"] {
        if base.len() > ext.len()
            && let Some((stem, tail)) = base.split_at_checked(base.len() - ext.len())
            && tail.eq_ignore_ascii_case(ext)
        {
            return stem;
        }
    }
    base
}

/// The bare package name in an npm or PyPI spec: `@scope/name@1.2` → `name`,
/// `name==1.0` → `name`, `name[extra]>=2` → `name`.
fn package_name(spec: &str) -> &str {
    let spec = spec.rsplit('/').next().unwrap_or(spec);
    let end = spec
        .char_indices()
        .find(|&(i, c)| matches!(c, '=' | '<' | '>' | '~' | '!' | '[' | ' ') || (c == '@' && i > 0))
        .map_or(spec.len(), |(i, _)| i);
    &spec[..end]
}

/// Flags of npx/uvx that take the next argument as their value.
const VALUE_FLAGS: &[&str] = &[
    "-p",
    "--package",
    "--from",
    "-c",
    "--call",
    "--with",
    "--with-editable",
    "--with-requirements",
    "--python",
    "--index",
    "--index-url",
    "--extra-index-url",
];

/// Flags whose value names the package that gets run.
const PACKAGE_FLAGS: &[&str] = &["-p", "--package", "--from"];

/// What makes a definition (as written, before expansion) this server's own entry: its
/// `command` launches this server ([`launches_self`]), or it bears this server's name.
pub(crate) fn self_entry(
    name: &str,
    definition: &Map<String, Value>,
    self_names: &[String],
) -> Option<String> {
    let raw_args: Vec<String> = match definition.get("args") {
        Some(Value::Array(args)) => args.iter().filter_map(scalar_string).collect(),
        _ => Vec::new(),
    };
    if let Some(Value::String(command)) = definition.get("command")
        && let Some(hit) = launches_self(command, &raw_args, self_names)
    {
        return Some(hit);
    }
    self_names
        .iter()
        .any(|s| s == name)
        .then(|| format!("name {name:?}"))
}

/// Returns what matched when `command args...` launches this server.
fn launches_self(command: &str, args: &[String], self_names: &[String]) -> Option<String> {
    let is_self = |candidate: &str| {
        self_names
            .iter()
            .any(|s| file_stem_of_command(s).eq_ignore_ascii_case(candidate))
    };
    let stem = file_stem_of_command(command);
    if is_self(stem) {
        return Some(format!("command {stem:?}"));
    }
    if !matches!(stem, "npx" | "bunx" | "pnpx" | "uvx") {
        return None;
    }
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if let Some(flag) = arg.strip_prefix('-') {
            let (flag, inline) = match flag.split_once('=') {
                Some((f, v)) => (format!("-{f}"), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            let value = match inline {
                Some(v) => Some(v),
                None if VALUE_FLAGS.contains(&flag.as_str()) => iter.next().cloned(),
                None => None,
            };
            if PACKAGE_FLAGS.contains(&flag.as_str())
                && let Some(value) = value
                && is_self(package_name(&value))
            {
                return Some(format!("{stem} package {value:?}"));
            }
            continue;
        }
        let package = package_name(arg);
        return is_self(package).then(|| format!("{stem} package {arg:?}"));
    }
    None
}

/// What the clients' JSON files may hold: comments and trailing commas (VS Code writes them),
/// nothing looser. Shared with `setup`, which edits the same files.
pub fn jsonc_options() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Fixture {
        _tmp: tempfile::TempDir,
        home: PathBuf,
        project: PathBuf,
    }

    impl Fixture {
        fn new() -> Self {
            let tmp = tempfile::tempdir().unwrap();
            let home = tmp.path().join("home/ana");
            let project = tmp.path().join("work/my-app");
            fs::create_dir_all(&home).unwrap();
            fs::create_dir_all(&project).unwrap();
            Fixture {
                _tmp: tmp,
                home,
                project,
            }
        }

        fn write(&self, path: &Path, text: &str) -> PathBuf {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
            path.to_owned()
        }

        fn home_file(&self, rel: &str, text: &str) -> PathBuf {
            self.write(&self.home.join(rel), text)
        }

        fn project_file(&self, rel: &str, text: &str) -> PathBuf {
            self.write(&self.project.join(rel), text)
        }

        fn project_str(&self) -> String {
            self.project.to_string_lossy().into_owned()
        }

        fn inputs(&self) -> DiscoveryInputs {
            DiscoveryInputs {
                home: self.home.clone(),
                project_dir: self.project.clone(),
                explicit: None,
                env: [
                    ("HOME", self.home.to_string_lossy().as_ref()),
                    ("GITHUB_TOKEN", "ghp_test123"),
                    ("PATH", "/usr/bin:/bin"),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
                self_names: vec!["code-executor".to_owned()],
            }
        }

        fn discover(&self) -> Discovery {
            discover(&self.inputs()).unwrap()
        }

        /// `~/.claude.json` the way Claude Code writes it, with `mcpServers`
        /// at the top level and in this project's entry.
        fn claude_json(&self, user_servers: &str, project_extra: &str) -> PathBuf {
            let key = serde_json::to_string(&self.project_str()).unwrap();
            self.home_file(
                ".claude.json",
                &format!(
                    r##"{{
  "numStartups": 187,
  "installMethod": "native",
  "autoUpdates": false,
  "theme": "dark",
  "verbose": false,
  "tipsHistory": {{ "new-user-warmup": 7, "memory-command": 58, "theme-command": 12 }},
  "userID": "0f3c9b1e5d2a4c8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6",
  "firstStartTime": "2025-03-02T09:14:22.531Z",
  "hasCompletedOnboarding": true,
  "lastOnboardingVersion": "1.0.51",
  "subscriptionNoticeCount": 0,
  "hasAvailableSubscription": false,
  "cachedChangelog": "# Changelog\n\n## 1.0.51\n\n- Added support for native Windows",
  "oauthAccount": {{
    "accountUuid": "8a1d0f2e-1111-2222-3333-444455556666",
    "emailAddress": "ana@example.com",
    "organizationRole": "admin"
  }},
  "mcpServers": {user_servers},
  "projects": {{
    "/home/ana/old-project": {{
      "allowedTools": [],
      "history": [{{ "display": "fix the tests", "pastedContents": {{}} }}],
      "mcpContextUris": [],
      "mcpServers": {{ "old-only": {{ "command": "old-server" }} }},
      "enabledMcpjsonServers": [],
      "disabledMcpjsonServers": [],
      "hasTrustDialogAccepted": true,
      "projectOnboardingSeenCount": 4,
      "lastCost": 0.4211,
      "lastDuration": 812345
    }},
    {key}: {{
      "allowedTools": ["Bash(npm test:*)"],
      "history": [
        {{ "display": "add a login page", "pastedContents": {{}} }},
        {{ "display": "/mcp", "pastedContents": {{}} }}
      ],
      "mcpContextUris": [],
      "enabledMcpjsonServers": [],
      "hasTrustDialogAccepted": true,
      "hasClaudeMdExternalIncludesApproved": false,
      "hasClaudeMdExternalIncludesWarningShown": false,
      "projectOnboardingSeenCount": 1,
      "exampleFiles": ["src/App.tsx", "src/main.tsx"],
      "lastAPIDuration": 35012,
      "lastLinesAdded": 120,
      "lastLinesRemoved": 7,
      "lastSessionId": "4c2b9a2e-aaaa-bbbb-cccc-ddddeeeeffff"{project_extra}
    }}
  }},
  "shiftEnterKeyBindingInstalled": true,
  "fallbackAvailableWarningThreshold": 0.5
}}"##
                ),
            )
        }
    }

    fn server<'d>(d: &'d Discovery, name: &str) -> &'d ServerSpec {
        d.servers
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no server {name:?} in {d:#?}"))
    }

    fn names(d: &Discovery) -> Vec<&str> {
        d.servers.iter().map(|s| s.name.as_str()).collect()
    }

    fn invalid<'d>(d: &'d Discovery, name: &str) -> &'d InvalidEntry {
        d.invalid
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("no invalid entry {name:?} in {d:#?}"))
    }

    fn disabled<'d>(d: &'d Discovery, name: &str) -> &'d DisabledEntry {
        d.disabled
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("no disabled entry {name:?} in {d:#?}"))
    }

    fn stdio(command: &str, args: &[&str]) -> Transport {
        Transport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn codex_toml_user_and_project() {
        let fx = Fixture::new();
        let user = fx.home_file(
            ".codex/config.toml",
            r#"model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time", "--local-timezone", "UTC"]
env = { TZ_DATA = "${HOME}/tz" }
startup_timeout_sec = 20

[mcp_servers.figma]
url = "https://mcp.figma.example/mcp"
bearer_token_env_var = "GITHUB_TOKEN"
http_headers = { "X-Team" = "core" }

[mcp_servers.old]
command = "old-server"
enabled = false

[mcp_servers.me]
command = "/usr/local/bin/code-executor"
args = ["serve"]
"#,
        );
        fx.project_file(
            ".codex/config.toml",
            "[mcp_servers.time]\ncommand = \"project-time\"\n",
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["figma", "time"]);
        let time = server(&d, "time");
        assert_eq!(
            time.source.kind,
            SourceKind::CodexProject,
            "the project file wins"
        );
        assert_eq!(time.transport, stdio("project-time", &[]));
        assert!(
            d.overridden
                .iter()
                .any(|o| o.name == "time" && o.source.kind == SourceKind::CodexUser)
        );
        let figma = server(&d, "figma");
        assert_eq!(
            figma.source,
            ConfigSource {
                kind: SourceKind::CodexUser,
                path: user
            }
        );
        assert_eq!(
            figma.transport,
            Transport::Http {
                url: "https://mcp.figma.example/mcp".into(),
                headers: map(&[("Authorization", "Bearer ghp_test123"), ("X-Team", "core")]),
            }
        );
        assert_eq!(disabled(&d, "old").reason, "\"enabled\": false");
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains("\"me\"") && w.contains("launches this server"))
        );
    }

    #[test]
    fn codex_user_servers_with_their_variables() {
        let fx = Fixture::new();
        fx.home_file(
            ".codex/config.toml",
            "[mcp_servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\nenv = { DATA = \"${HOME}/tz\" }\n",
        );
        let d = fx.discover();
        let Transport::Stdio { env, .. } = &server(&d, "time").transport else {
            panic!("not stdio");
        };
        assert_eq!(env, &map(&[("DATA", &format!("{}/tz", fx.home.display()))]));
    }

    #[test]
    fn broken_codex_toml_is_skipped_with_its_line() {
        let fx = Fixture::new();
        fx.home_file(
            ".codex/config.toml",
            "model = \"x\"\n\n[mcp_servers.a\ncommand = \"a\"\n",
        );
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"b": {"command": "b"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["b"]);
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains(".codex/config.toml") && w.contains("line 3")),
            "{:?}",
            d.warnings
        );
    }

    #[test]
    fn gemini_settings_dialect_and_lists() {
        let fx = Fixture::new();
        fx.home_file(
            ".gemini/settings.json",
            r#"{
  "theme": "GitHub",
  "mcp": { "excluded": ["noisy"] },
  "mcpServers": {
    "api": { "httpUrl": "https://api.example/mcp", "headers": { "Authorization": "Bearer $GITHUB_TOKEN" }, "timeout": 30000, "trust": true },
    "events": { "url": "http://localhost:8080/sse" },
    "local": { "command": "$HOME/bin/local-server", "args": ["--verbose"] },
    "noisy": { "command": "noisy-server" }
  }
}"#,
        );
        fx.project_file(
            ".gemini/settings.json",
                        r#"{ "mcp": { "allowed": ["kept", "api", "events", "local"] }, "mcpServers": { "kept": { "command": "kept" }, "dropped": { "command": "dropped" } } }"#,
        );
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"noisy": {"command": "noisy-from-claude"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["api", "kept", "local", "noisy"]);
        assert_eq!(
            server(&d, "api").transport,
            Transport::Http {
                url: "https://api.example/mcp".into(),
                headers: map(&[("Authorization", "Bearer ghp_test123")]),
            }
        );
        assert_eq!(
            server(&d, "local").transport,
            stdio(
                &format!("{}/bin/local-server", fx.home.display()),
                &["--verbose"]
            )
        );
        assert!(
            invalid(&d, "events").error.contains("SSE"),
            "{:?}",
            invalid(&d, "events")
        );
        assert!(
            disabled(&d, "dropped")
                .reason
                .contains("not in \"mcp.allowed\"")
        );
        assert_eq!(server(&d, "kept").source.kind, SourceKind::GeminiProject);
        // Gemini CLI's exclusions are its own: Claude Code's `noisy` is used.
        assert_eq!(
            server(&d, "noisy").transport,
            stdio("noisy-from-claude", &[])
        );
    }

    #[test]
    fn nothing_configured() {
        let fx = Fixture::new();
        let d = fx.discover();
        assert_eq!(d, Discovery::default());
    }

    #[test]
    fn claude_desktop_linux() {
        let fx = Fixture::new();
        let path = fx.home_file(
            ".config/Claude/claude_desktop_config.json",
            r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/ana/Desktop", "/home/ana/Downloads"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}" }
    }
  },
  "globalShortcut": "Ctrl+Space",
  "isUsingBuiltInNodeForMcp": true
}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["filesystem", "github"]);
        let gh = server(&d, "github");
        assert_eq!(
            gh.source,
            ConfigSource {
                kind: SourceKind::ClaudeDesktop,
                path: path.clone()
            }
        );
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &gh.transport
        else {
            panic!("not stdio: {gh:?}");
        };
        assert_eq!(command, "docker");
        assert_eq!(args.last().unwrap(), "ghcr.io/github/github-mcp-server");
        assert_eq!(
            env,
            &map(&[("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_test123")])
        );
        assert_eq!(cwd, &None);
        assert_eq!(d.sources_read, [path]);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    }

    #[test]
    fn claude_desktop_macos() {
        let fx = Fixture::new();
        let path = fx.home_file(
            "Library/Application Support/Claude/claude_desktop_config.json",
            r#"{"mcpServers": {"sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "/Users/ana/test.db"]}}}"#,
        );
        let d = fx.discover();
        let s = server(&d, "sqlite");
        assert_eq!(s.source.kind, SourceKind::ClaudeDesktop);
        assert_eq!(s.source.path, path);
        assert_eq!(
            s.transport,
            stdio(
                "uvx",
                &["mcp-server-sqlite", "--db-path", "/Users/ana/test.db"]
            )
        );
    }

    #[test]
    fn cursor_global_with_http_entries() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{
  "mcpServers": {
    "context7": { "url": "https://mcp.context7.com/mcp", "headers": { "CONTEXT7_API_KEY": "${env:GITHUB_TOKEN}" } },
    "linear": { "type": "streamable-http", "url": "https://mcp.linear.app/mcp" },
    "notion": { "type": "streamableHttp", "url": "https://mcp.notion.com/mcp" },
    "sentry": { "type": "http", "url": "https://mcp.sentry.dev/mcp", "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" } },
    "puppeteer": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-puppeteer"], "env": {} }
  }
}"#,
        );
        let d = fx.discover();
        assert_eq!(
            names(&d),
            ["context7", "linear", "notion", "puppeteer", "sentry"]
        );
        assert_eq!(
            server(&d, "context7").transport,
            Transport::Http {
                url: "https://mcp.context7.com/mcp".into(),
                headers: map(&[("CONTEXT7_API_KEY", "ghp_test123")]),
            }
        );
        assert_eq!(
            server(&d, "sentry").transport,
            Transport::Http {
                url: "https://mcp.sentry.dev/mcp".into(),
                headers: map(&[("Authorization", "Bearer ghp_test123")]),
            }
        );
        for name in ["linear", "notion"] {
            assert!(matches!(server(&d, name).transport, Transport::Http { .. }));
        }
        assert_eq!(server(&d, "linear").source.kind, SourceKind::CursorGlobal);
    }

    #[test]
    fn claude_json_user_and_local_scopes() {
        let fx = Fixture::new();
        let path = fx.claude_json(
            r#"{
    "memory": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {} },
    "shared": { "type": "stdio", "command": "user-shared", "args": [], "env": {} }
  }"#,
            r#",
      "mcpServers": {
        "shared": { "type": "stdio", "command": "local-shared", "args": ["--verbose"], "env": { "DEBUG": "1" } },
        "postgres": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/mydb"], "env": {} }
      }"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["memory", "postgres", "shared"]);
        assert_eq!(server(&d, "memory").source.kind, SourceKind::ClaudeCodeUser);
        assert_eq!(
            server(&d, "postgres").source.kind,
            SourceKind::ClaudeCodeLocal
        );
        let shared = server(&d, "shared");
        assert_eq!(shared.source.kind, SourceKind::ClaudeCodeLocal);
        assert_eq!(shared.source.path, path);
        assert_eq!(
            shared.transport,
            Transport::Stdio {
                command: "local-shared".into(),
                args: vec!["--verbose".into()],
                env: map(&[("DEBUG", "1")]),
                cwd: None,
            }
        );
        assert_eq!(
            d.overridden,
            [Overridden {
                name: "shared".into(),
                source: ConfigSource {
                    kind: SourceKind::ClaudeCodeUser,
                    path: path.clone()
                },
                by: ConfigSource {
                    kind: SourceKind::ClaudeCodeLocal,
                    path: path.clone()
                },
            }]
        );
        // Another project's servers are not ours.
        assert!(d.servers.iter().all(|s| s.name != "old-only"));
        assert_eq!(d.sources_read, [path]);
    }

    #[test]
    fn claude_json_project_key_with_trailing_slash_and_symlink() {
        let fx = Fixture::new();
        fx.claude_json("{}", r#", "mcpServers": { "local": { "command": "x" } }"#);
        let mut inputs = fx.inputs();
        inputs.project_dir = PathBuf::from(format!("{}/", fx.project_str()));
        assert_eq!(names(&discover(&inputs).unwrap()), ["local"]);

        #[cfg(unix)]
        {
            let link = fx.home.join("link-to-app");
            std::os::unix::fs::symlink(&fx.project, &link).unwrap();
            inputs.project_dir = link;
            assert_eq!(names(&discover(&inputs).unwrap()), ["local"]);
        }
    }

    #[test]
    fn vscode_workspace_config() {
        let fx = Fixture::new();
        let path = fx.project_file(
            ".vscode/mcp.json",
            r#"{
  // 💡 Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    {
      "type": "promptString",
      "id": "perplexity-key",
      "description": "Perplexity API Key",
      "password": true
    }
  ],
  "servers": {
    // https://github.com/ppl-ai/modelcontextprotocol/
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {
        "PERPLEXITY_API_KEY": "${input:perplexity-key}"
      }
    },
    "fetch": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-fetch"],
    },
    /* remote */
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    },
    "legacy": { "type": "sse", "url": "http://localhost:3001/sse" },
    "tools": {
      "type": "stdio",
      "command": "node",
      "args": ["${workspaceFolder}/tools/mcp-server.js", "--root", "${workspaceFolder}"],
      "envFile": "${workspaceFolder}/.env",
    },
  },
}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["fetch", "github", "tools"]);
        assert_eq!(server(&d, "fetch").source.kind, SourceKind::VsCode);
        assert_eq!(server(&d, "fetch").source.path, path);
        let root = fx.project_str();
        assert_eq!(
            server(&d, "tools").transport,
            stdio(
                "node",
                &[&format!("{root}/tools/mcp-server.js"), "--root", &root]
            )
        );
        let perplexity = invalid(&d, "Perplexity");
        assert!(
            perplexity.error.contains("env.PERPLEXITY_API_KEY")
                && perplexity.error.contains("${input:perplexity-key}")
                && perplexity.error.contains("cannot be resolved"),
            "{}",
            perplexity.error
        );
        let legacy = invalid(&d, "legacy");
        assert!(
            legacy
                .error
                .starts_with("SSE transport is not supported; use streamable HTTP")
        );
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains("\"tools\"") && w.contains("envFile")),
            "{:?}",
            d.warnings
        );
    }

    #[test]
    fn vscode_ignores_mcp_servers_key_with_a_warning() {
        let fx = Fixture::new();
        fx.project_file(
            ".vscode/mcp.json",
            r#"{ "mcpServers": { "x": { "command": "x" } } }"#,
        );
        fx.project_file(".mcp.json", r#"{ "servers": { "y": { "command": "y" } } }"#);
        let d = fx.discover();
        assert!(d.servers.is_empty());
        assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
        assert!(
            d.warnings[0].contains("has \"mcpServers\" but VS Code (workspace) reads \"servers\"")
        );
        assert!(
            d.warnings[1]
                .contains("has \"servers\" but Claude Code (project scope) reads \"mcpServers\"")
        );
    }

    #[test]
    fn cursor_project_and_dot_mcp_json() {
        let fx = Fixture::new();
        fx.project_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"browser": {"command": "npx", "args": ["@browsermcp/mcp@latest"]}}}"#,
        );
        fx.project_file(
            ".mcp.json",
            r#"{
  "mcpServers": {
    "airtable": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "airtable-mcp-server"],
      "env": { "AIRTABLE_API_KEY": "${AIRTABLE_API_KEY:-none}" }
    }
  }
}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["airtable", "browser"]);
        assert_eq!(server(&d, "browser").source.kind, SourceKind::CursorProject);
        let airtable = server(&d, "airtable");
        assert_eq!(airtable.source.kind, SourceKind::ClaudeCodeProject);
        let Transport::Stdio { env, .. } = &airtable.transport else {
            panic!()
        };
        assert_eq!(env, &map(&[("AIRTABLE_API_KEY", "none")]));
        assert_eq!(d.sources_read.len(), 2);
    }

    #[test]
    fn explicit_file_accepts_servers_and_mcp_servers() {
        let fx = Fixture::new();
        let path = fx.write(
            &fx.home.join("configs/code-executor.json"),
            r#"{
  "servers": { "a": { "command": "a" }, "both": { "command": "from-servers" } },
  "mcpServers": { "b": { "command": "b" }, "both": { "command": "from-mcpServers" } }
}"#,
        );
        let mut inputs = fx.inputs();
        inputs.explicit = Some(path.clone());
        let d = discover(&inputs).unwrap();
        assert_eq!(names(&d), ["a", "b", "both"]);
        assert_eq!(server(&d, "both").transport, stdio("from-mcpServers", &[]));
        assert_eq!(server(&d, "a").source.kind, SourceKind::Explicit);
        assert_eq!(d.sources_read, [path]);
    }

    #[test]
    fn explicit_relative_and_tilde_paths() {
        let fx = Fixture::new();
        fx.project_file(
            "conf/mcp.json",
            r#"{"mcpServers": {"rel": {"command": "r"}}}"#,
        );
        fx.home_file("mcp.json", r#"{"mcpServers": {"tilde": {"command": "t"}}}"#);
        let mut inputs = fx.inputs();
        inputs.explicit = Some(PathBuf::from("conf/mcp.json"));
        assert_eq!(names(&discover(&inputs).unwrap()), ["rel"]);
        inputs.explicit = Some(PathBuf::from("~/mcp.json"));
        assert_eq!(names(&discover(&inputs).unwrap()), ["tilde"]);
    }

    #[test]
    fn precedence_by_name_across_all_sources() {
        let fx = Fixture::new();
        let entry = |cmd: &str| {
            format!(
                r#"{{ "shared": {{ "command": "{cmd}" }}, "only-{cmd}": {{ "command": "{cmd}" }} }}"#
            )
        };
        let explicit = fx.home.join("explicit.json");
        // Highest precedence first, so that each step can remove the winner.
        let layers: Vec<(SourceKind, PathBuf, String)> = vec![
            (
                SourceKind::Explicit,
                explicit.clone(),
                format!(r#"{{"mcpServers": {}}}"#, entry("explicit")),
            ),
            (
                SourceKind::ClaudeCodeProject,
                fx.project.join(".mcp.json"),
                format!(r#"{{"mcpServers": {}}}"#, entry("dotmcp")),
            ),
            (
                SourceKind::CursorProject,
                fx.project.join(".cursor/mcp.json"),
                format!(r#"{{"mcpServers": {}}}"#, entry("cursor-project")),
            ),
            (
                SourceKind::VsCode,
                fx.project.join(".vscode/mcp.json"),
                format!(r#"{{"servers": {}}}"#, entry("vscode")),
            ),
            (
                SourceKind::ClaudeCodeUser,
                fx.home.join(".claude.json"),
                String::new(),
            ),
            (
                SourceKind::CursorGlobal,
                fx.home.join(".cursor/mcp.json"),
                format!(r#"{{"mcpServers": {}}}"#, entry("cursor-global")),
            ),
            (
                SourceKind::ClaudeDesktop,
                fx.home.join(".config/Claude/claude_desktop_config.json"),
                format!(r#"{{"mcpServers": {}}}"#, entry("desktop")),
            ),
        ];
        for (kind, path, text) in &layers {
            if *kind == SourceKind::ClaudeCodeUser {
                fx.claude_json(
                    &entry("claude-user"),
                    &format!(r#", "mcpServers": {}"#, entry("claude-local")),
                );
            } else {
                fx.write(path, text);
            }
        }
        let mut inputs = fx.inputs();
        inputs.explicit = Some(explicit);

        let expected = [
            "explicit",
            "dotmcp",
            "cursor-project",
            "vscode",
            "claude-local",
            "claude-user",
            "cursor-global",
            "desktop",
        ];
        for (i, winner) in expected.iter().enumerate() {
            let d = discover(&inputs).unwrap();
            assert_eq!(
                server(&d, "shared").transport,
                stdio(winner, &[]),
                "step {i}"
            );
            // Every source still contributes its unique entry.
            assert_eq!(
                d.servers.len(),
                expected.len() - i + 1,
                "step {i}: {:?}",
                names(&d)
            );
            let losers: Vec<_> = d
                .overridden
                .iter()
                .filter(|o| o.name == "shared")
                .map(|o| o.source.kind)
                .collect();
            let mut sorted = losers.clone();
            sorted.sort();
            assert_eq!(losers, sorted, "lowest precedence first");
            assert_eq!(losers.len(), expected.len() - i - 1);
            assert!(
                d.overridden
                    .iter()
                    .all(|o| o.by == server(&d, "shared").source)
            );

            // Remove the winner for the next step.
            match *winner {
                "explicit" => inputs.explicit = None,
                "claude-local" => {
                    fx.claude_json(&entry("claude-user"), "");
                }
                "claude-user" => {
                    fs::remove_file(fx.home.join(".claude.json")).unwrap();
                }
                _ => {
                    let (_, path, _) = layers
                        .iter()
                        .find(|(k, ..)| server(&d, "shared").source.kind == *k)
                        .unwrap();
                    fs::remove_file(path).unwrap();
                }
            }
        }
        assert!(fx.discover().servers.is_empty());
    }

    #[test]
    fn disabled_flags() {
        let fx = Fixture::new();
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {
  "off": { "command": "a", "disabled": true },
  "not-enabled": { "command": "b", "enabled": false },
  "on": { "command": "c", "disabled": false, "enabled": true },
  "stringly": { "command": "d", "disabled": "true" },
  "off-and-broken": { "command": "${NOPE}", "disabled": true }
}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["on", "stringly"]);
        assert_eq!(disabled(&d, "off").reason, "\"disabled\": true");
        assert_eq!(disabled(&d, "not-enabled").reason, "\"enabled\": false");
        assert_eq!(disabled(&d, "off-and-broken").reason, "\"disabled\": true");
        assert!(d.invalid.is_empty());
        let order: Vec<_> = d.disabled.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(order, ["not-enabled", "off", "off-and-broken"]);
    }

    #[test]
    fn project_definition_can_disable_a_global_one() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"github": {"command": "gh-mcp"}}}"#,
        );
        fx.project_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"github": {"command": "gh-mcp", "disabled": true}}}"#,
        );
        let d = fx.discover();
        assert!(d.servers.is_empty());
        assert_eq!(
            disabled(&d, "github").source.kind,
            SourceKind::CursorProject
        );
        assert_eq!(d.overridden.len(), 1);
    }

    #[test]
    fn disabled_mcp_servers_lists() {
        let fx = Fixture::new();
        let path = fx.home_file(
            ".claude.json",
            &format!(
                r#"{{
  "numStartups": 3,
  "disabledMcpServers": ["from-desktop"],
  "mcpServers": {{ "user-one": {{ "command": "u" }}, "kept": {{ "command": "k" }} }},
  "projects": {{
    {}: {{
      "allowedTools": [],
      "disabledMcpServers": ["user-one", "from-vscode", "not-defined-anywhere"]
    }}
  }}
}}"#,
                serde_json::to_string(&fx.project_str()).unwrap()
            ),
        );
        fx.home_file(
            ".config/Claude/claude_desktop_config.json",
            r#"{"mcpServers": {"from-desktop": {"command": "d"}}}"#,
        );
        fx.project_file(
            ".vscode/mcp.json",
            r#"{"servers": {"from-vscode": {"type": "stdio", "command": "v"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["kept"]);
        let reasons: Vec<_> = d
            .disabled
            .iter()
            .map(|e| (e.name.as_str(), e.source.kind))
            .collect();
        assert_eq!(
            reasons,
            [
                ("from-desktop", SourceKind::ClaudeDesktop),
                ("from-vscode", SourceKind::VsCode),
                ("user-one", SourceKind::ClaudeCodeUser),
            ]
        );
        let reason = &disabled(&d, "user-one").reason;
        assert!(
            reason.contains("disabledMcpServers") && reason.contains(&*path.to_string_lossy()),
            "{reason}"
        );
    }

    #[test]
    fn disabled_list_also_silences_an_invalid_entry() {
        let fx = Fixture::new();
        fx.home_file(".claude.json", r#"{"disabledMcpServers": ["broken"]}"#);
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"broken": {"command": "${UNSET}"}}}"#,
        );
        let d = fx.discover();
        assert!(d.invalid.is_empty());
        assert_eq!(
            disabled(&d, "broken").source.kind,
            SourceKind::ClaudeCodeProject
        );
    }

    #[test]
    fn disabled_mcpjson_servers_applies_to_dot_mcp_json_only() {
        let fx = Fixture::new();
        fx.claude_json("{}", r#", "disabledMcpjsonServers": ["rejected"]"#);
        fx.project_file(
            ".claude/settings.local.json",
            r#"{
  "permissions": { "allow": ["Bash(cargo test:*)"], "deny": [] },
  "enableAllProjectMcpServers": false,
  "enabledMcpjsonServers": ["approved"],
  "disabledMcpjsonServers": ["also-rejected", "cursor-one"]
}"#,
        );
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {
  "rejected": {"command": "r"},
  "also-rejected": {"command": "a"},
  "approved": {"command": "ok"},
  "unreviewed": {"command": "u"}
}}"#,
        );
        fx.project_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"cursor-one": {"command": "c"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["approved", "cursor-one", "unreviewed"]);
        assert!(
            disabled(&d, "rejected")
                .reason
                .contains("disabledMcpjsonServers")
        );
        assert!(
            disabled(&d, "also-rejected")
                .reason
                .contains("settings.local.json")
        );
        assert!(
            d.sources_read
                .iter()
                .any(|p| p.ends_with(".claude/settings.local.json"))
        );
    }

    #[test]
    fn skips_entries_that_launch_this_server() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {
  "by-path": { "command": "/home/ana/.cargo/bin/code-executor", "args": ["--stdio"] },
  "by-name": { "command": "code-executor" },
  "windows": { "command": "C:\\Tools\\Code-Executor.EXE" },
  "via-npx": { "command": "npx", "args": ["-y", "code-executor@latest"] },
  "via-npx-scoped": { "command": "npx", "args": ["--yes", "@acme/code-executor@1.2.0", "serve"] },
  "via-npx-package": { "command": "npx", "args": ["--package=code-executor", "ce"] },
  "via-uvx": { "command": "uvx", "args": ["--python", "3.12", "code-executor==0.3"] },
  "via-uvx-from": { "command": "uvx", "args": ["--from", "code-executor", "ce-serve"] },
  "self-but-invalid": { "command": "code-executor", "env": { "X": "${UNSET}" } },
  "not-self-later-arg": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/code-executor"] },
  "not-self-script": { "command": "node", "args": ["code-executor"] },
  "not-self-prefix": { "command": "code-executor-helper" }
}}"#,
        );
        let d = fx.discover();
        assert_eq!(
            names(&d),
            ["not-self-later-arg", "not-self-prefix", "not-self-script"]
        );
        assert!(d.invalid.is_empty(), "{:?}", d.invalid);
        assert_eq!(d.warnings.len(), 9, "{:#?}", d.warnings);
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains("\"via-uvx\"") && w.contains("launches this server itself")),
            "{:#?}",
            d.warnings
        );
    }

    #[test]
    fn skips_self_after_expansion() {
        let fx = Fixture::new();
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"me": {"command": "${CE_BIN}"}, "other": {"command": "${CE_BIN:-x}-helper"}}}"#,
        );
        let mut inputs = fx.inputs();
        inputs
            .env
            .insert("CE_BIN".into(), "/opt/ce/bin/code-executor".into());
        let d = discover(&inputs).unwrap();
        assert_eq!(names(&d), ["other"]);
        assert_eq!(d.warnings.len(), 1);
    }

    #[test]
    fn expansion_everywhere_and_relative_cwd() {
        let fx = Fixture::new();
        let cursor_dir = fx.project.join(".cursor");
        fx.project_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {
  "local": {
    "command": "${HOME}/bin/${TOOL:-server}",
    "args": ["--token=${GITHUB_TOKEN}", "$HOME", "${workspaceFolder}", "${userHome}", 8080, true],
    "env": { "TOKEN": "${env:GITHUB_TOKEN}", "PORT": 3000, "DROPPED": null, "LITERAL": "$PATH" },
    "cwd": "${TOOL_DIR:-tools}/run"
  },
  "absolute-cwd": { "command": "x", "cwd": "${workspaceFolder}/sub" },
  "remote": {
    "type": "http",
    "url": "https://${HOST:-api.example.com}/mcp?v=${VERSION:-1}",
    "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}", "X-Count": 2 }
  }
}}"#,
        );
        let d = fx.discover();
        let home = fx.home.to_string_lossy().into_owned();
        let root = fx.project_str();
        assert_eq!(
            server(&d, "local").transport,
            Transport::Stdio {
                command: format!("{home}/bin/server"),
                args: vec![
                    "--token=ghp_test123".into(),
                    "$HOME".into(),
                    root.clone(),
                    home.clone(),
                    "8080".into(),
                    "true".into(),
                ],
                env: map(&[
                    ("TOKEN", "ghp_test123"),
                    ("PORT", "3000"),
                    ("LITERAL", "$PATH")
                ]),
                cwd: Some(cursor_dir.join("tools/run")),
            }
        );
        let Transport::Stdio { cwd, .. } = &server(&d, "absolute-cwd").transport else {
            panic!()
        };
        assert_eq!(cwd, &Some(fx.project.join("sub")));
        assert_eq!(
            server(&d, "remote").transport,
            Transport::Http {
                url: "https://api.example.com/mcp?v=1".into(),
                headers: map(&[("Authorization", "Bearer ghp_test123"), ("X-Count", "2")]),
            }
        );
    }

    #[test]
    fn relative_cwd_in_claude_json_is_relative_to_home() {
        let fx = Fixture::new();
        fx.home_file(
            ".claude.json",
            r#"{"mcpServers": {"s": {"command": "x", "cwd": "servers/s"}}}"#,
        );
        let d = fx.discover();
        let Transport::Stdio { cwd, .. } = &server(&d, "s").transport else {
            panic!()
        };
        assert_eq!(cwd, &Some(fx.home.join("servers/s")));
    }

    #[test]
    fn invalid_entries_do_not_affect_others() {
        let fx = Fixture::new();
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {
  "good": { "command": "good" },
  "unset": { "command": "npx", "args": ["--key", "${API_KEY}"], "env": { "A": "${API_KEY}", "B": "${OTHER_KEY}" } },
  "no-command": { "type": "stdio", "args": ["x"] },
  "no-url": { "type": "http", "headers": {} },
  "nothing": { "env": {} },
  "sse": { "type": "sse", "url": "https://example.com/sse" },
  "weird-type": { "type": "websocket", "url": "wss://example.com" },
  "type-not-string": { "type": 1, "command": "x" },
  "not-object": "npx server",
  "args-not-array": { "command": "x", "args": "--flag" },
  "arg-object": { "command": "x", "args": ["ok", {"k": 1}] },
  "env-array": { "command": "x", "env": ["A=1"] },
  "bad-scheme": { "url": "ftp://example.com/mcp" },
  "empty-command": { "command": "  " },
  "unterminated": { "command": "x", "cwd": "${HOME" },
  "": { "command": "x" }
}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["good"]);
        assert_eq!(d.invalid.len(), 15, "{:#?}", d.invalid);
        let expect = [
            (
                "unset",
                "args[1]: environment variable `API_KEY` is not set; env.A: environment variable `API_KEY` is not set; env.B: environment variable `OTHER_KEY` is not set",
            ),
            ("no-command", "a stdio server needs a \"command\""),
            ("no-url", "an HTTP server needs a \"url\""),
            (
                "nothing",
                "needs a \"command\" (stdio server) or a \"url\" (HTTP server)",
            ),
            (
                "weird-type",
                "unknown \"type\" \"websocket\"; expected \"stdio\", \"http\" or \"streamable-http\"",
            ),
            (
                "type-not-string",
                "\"type\" must be a string, found a number",
            ),
            (
                "not-object",
                "a server definition must be an object, found a string",
            ),
            (
                "args-not-array",
                "args: must be an array of strings, found a string",
            ),
            ("arg-object", "args[1]: must be a string, found an object"),
            ("env-array", "env: must be an object, found an array"),
            ("bad-scheme", "url: must start with http:// or https://"),
            ("empty-command", "command: is empty"),
            ("unterminated", "cwd: unterminated \"${\" at character 1"),
            ("", "the server name is empty"),
        ];
        for (name, error) in expect {
            assert_eq!(invalid(&d, name).error, error, "{name}");
        }
        assert!(
            invalid(&d, "sse")
                .error
                .starts_with("SSE transport is not supported")
        );
        assert!(
            d.invalid
                .iter()
                .all(|e| e.source.kind == SourceKind::ClaudeCodeProject)
        );
    }

    #[test]
    fn invalid_project_definition_shadows_valid_global_one() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"db": {"command": "db-mcp"}}}"#,
        );
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"db": {"command": "db-mcp", "env": {"URL": "${DATABASE_URL}"}}}}"#,
        );
        let d = fx.discover();
        assert!(d.servers.is_empty());
        assert_eq!(
            invalid(&d, "db").error,
            "env.URL: environment variable `DATABASE_URL` is not set"
        );
        assert_eq!(d.overridden[0].source.kind, SourceKind::CursorGlobal);
    }

    #[test]
    fn command_and_url_without_type_prefers_command() {
        let fx = Fixture::new();
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"both": {"command": "x", "url": "http://localhost:1/mcp"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(server(&d, "both").transport, stdio("x", &[]));
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0].contains("both \"command\" and \"url\""));
    }

    #[test]
    fn broken_file_becomes_a_warning_naming_file_and_line() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
        );
        let broken = fx.project_file(
            ".mcp.json",
            "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" }\n    \"b\": { \"command\": \"y\" }\n  }\n}\n",
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["fine"]);
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
        let w = &d.warnings[0];
        assert!(w.contains(&*broken.to_string_lossy()), "{w}");
        assert!(w.contains("line 3, column 28: Expected comma"), "{w}");
        assert!(!d.sources_read.contains(&broken));
    }

    #[test]
    fn broken_explicit_file_is_an_error() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
        );
        let path = fx.home_file(
            "explicit.json",
            "{\n  \"mcpServers\": {\n    \"a\": ,\n  }\n}",
        );
        let mut inputs = fx.inputs();
        inputs.explicit = Some(path.clone());
        let err = discover(&inputs).unwrap_err();
        let DiscoveryError::Parse { line, column, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!((*line, *column), (3, 10));
        assert_eq!(err.path(), path);
        let msg = err.to_string();
        assert!(
            msg.contains(&*path.to_string_lossy()) && msg.contains("line 3, column 10"),
            "{msg}"
        );
    }

    #[test]
    fn missing_explicit_file_is_an_error() {
        let fx = Fixture::new();
        let mut inputs = fx.inputs();
        inputs.explicit = Some(fx.home.join("nope.json"));
        let err = discover(&inputs).unwrap_err();
        assert!(matches!(err, DiscoveryError::NotFound { .. }));
        assert!(err.to_string().contains("nope.json"));
    }

    #[test]
    fn wrongly_shaped_files() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": ["not", "an", "object"]}"#,
        );
        fx.project_file(".cursor/mcp.json", r#"[{"command": "x"}]"#);
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
        );
        fx.home_file(
            ".claude.json",
            r#"{"projects": [], "disabledMcpServers": "fine"}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["fine"]);
        assert_eq!(d.warnings.len(), 4, "{:#?}", d.warnings);
        assert!(d.warnings[0].contains("\"mcpServers\" must be an object, found an array"));
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains("expected an object at the top level"))
        );

        let mut inputs = fx.inputs();
        inputs.explicit = Some(fx.home.join(".cursor/mcp.json"));
        let err = discover(&inputs).unwrap_err();
        assert!(matches!(err, DiscoveryError::Shape { .. }), "{err:?}");
    }

    #[test]
    fn unreadable_files_become_warnings() {
        let fx = Fixture::new();
        fs::create_dir_all(fx.project.join(".mcp.json")).unwrap();
        fx.write(&fx.home.join(".cursor/mcp.json"), "");
        fs::write(
            fx.home.join(".cursor/mcp.json"),
            b"{\"mcpServers\": {\"\xff\": {}}}",
        )
        .unwrap();
        fx.project_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["fine"]);
        assert_eq!(d.warnings.len(), 2, "{:#?}", d.warnings);
        assert!(d.warnings.iter().any(|w| w.contains("not valid UTF-8")));
        assert!(
            d.warnings
                .iter()
                .all(|w| w.starts_with("cannot read MCP config file"))
        );
    }

    #[test]
    fn empty_file_and_byte_order_mark() {
        let fx = Fixture::new();
        let empty = fx.project_file(".mcp.json", "  \n");
        let bom = fx.project_file(
            ".vscode/mcp.json",
            "\u{feff}{ \"servers\": { \"x\": { \"type\": \"stdio\", \"command\": \"x\" } } }",
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["x"]);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        assert_eq!(d.sources_read, [bom, empty]);
    }

    #[test]
    fn servers_are_sorted_by_name() {
        let fx = Fixture::new();
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"zeta": {"command": "z"}, "Alpha": {"command": "a"}, "beta": {"command": "b"}}}"#,
        );
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"gamma": {"command": "g"}}}"#,
        );
        assert_eq!(names(&fx.discover()), ["Alpha", "beta", "gamma", "zeta"]);
    }

    #[test]
    fn debug_output_hides_secrets() {
        let t = Transport::Http {
            url: "https://x/mcp".into(),
            headers: map(&[("Authorization", "Bearer hunter2")]),
        };
        let s = Transport::Stdio {
            command: "x".into(),
            args: vec![],
            env: map(&[("API_KEY", "hunter2")]),
            cwd: None,
        };
        for dbg in [format!("{t:?}"), format!("{s:?}")] {
            assert!(!dbg.contains("hunter2"), "{dbg}");
            assert!(dbg.contains("<redacted>"), "{dbg}");
        }
    }

    #[test]
    fn self_detection_helpers() {
        assert_eq!(
            file_stem_of_command("/usr/bin/code-executor"),
            "code-executor"
        );
        assert_eq!(
            file_stem_of_command(r"C:\bin\code-executor.exe"),
            "code-executor"
        );
        assert_eq!(file_stem_of_command("code-executor.cmd"), "code-executor");
        assert_eq!(file_stem_of_command(".exe"), ".exe");
        assert_eq!(file_stem_of_command("npx"), "npx");
        assert_eq!(package_name("@acme/code-executor@1.2.0"), "code-executor");
        assert_eq!(package_name("code-executor@latest"), "code-executor");
        assert_eq!(package_name("code-executor==0.3"), "code-executor");
        assert_eq!(package_name("code-executor[http]>=1"), "code-executor");
        assert_eq!(package_name("@acme/cli"), "cli");
        assert_eq!(
            package_name("git+https://example.com/code-executor"),
            "code-executor"
        );
        let me = ["code-executor".to_owned()];
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(launches_self("npx", &args(&["-y", "code-executor"]), &me).is_some());
        assert!(launches_self("npx", &args(&["-p", "code-executor", "ce"]), &me).is_some());
        assert!(launches_self("npx", &args(&["-y", "other", "code-executor"]), &me).is_none());
        assert!(launches_self("npx", &args(&["-c", "code-executor"]), &me).is_none());
        assert!(launches_self("bunx", &args(&["code-executor"]), &me).is_some());
        assert!(launches_self("uvx", &args(&[]), &me).is_none());
        assert!(launches_self("code-executor", &[], &[]).is_none());
    }

    #[test]
    fn labels_of_every_source() {
        let labels: Vec<_> = [
            SourceKind::ClaudeDesktop,
            SourceKind::CursorGlobal,
            SourceKind::CodexUser,
            SourceKind::GeminiUser,
            SourceKind::VsCodeUser,
            SourceKind::ClaudeCodeUser,
            SourceKind::ClaudeCodeLocal,
            SourceKind::VsCode,
            SourceKind::CursorProject,
            SourceKind::CodexProject,
            SourceKind::GeminiProject,
            SourceKind::ClaudeCodeProject,
            SourceKind::Explicit,
        ]
        .iter()
        .map(|k| k.label())
        .collect();
        assert_eq!(
            labels,
            [
                "Claude Desktop",
                "Cursor (global)",
                "Codex (user)",
                "Gemini CLI (user)",
                "VS Code (user)",
                "Claude Code (user scope)",
                "Claude Code (local scope)",
                "VS Code (workspace)",
                "Cursor (project)",
                "Codex (project)",
                "Gemini CLI (project)",
                "Claude Code (project scope)",
                "MCP_CONFIG_PATH",
            ]
        );
        let source = ConfigSource {
            kind: SourceKind::CursorGlobal,
            path: PathBuf::from("/h/.cursor/mcp.json"),
        };
        assert_eq!(
            source.to_string(),
            "Cursor (global) config /h/.cursor/mcp.json"
        );
    }

    #[test]
    fn claude_desktop_reads_both_files_macos_last() {
        let fx = Fixture::new();
        let linux = fx.home_file(
            ".config/Claude/claude_desktop_config.json",
            r#"{"mcpServers": {"a": {"command": "linux"}, "l": {"command": "l"}}}"#,
        );
        let mac = fx.home_file(
            "Library/Application Support/Claude/claude_desktop_config.json",
            r#"{"mcpServers": {"a": {"command": "mac"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["a", "l"]);
        assert_eq!(server(&d, "a").transport, stdio("mac", &[]));
        assert_eq!(d.sources_read, [linux, mac]);
    }

    #[test]
    fn vscode_user_config() {
        let fx = Fixture::new();
        let linux = fx.home_file(
            ".config/Code/User/mcp.json",
            r#"{"servers": {"u": {"command": "u"}, "both": {"command": "linux"}, "mine": {"command": "vscode"}}}"#,
        );
        let mac = fx.home_file(
            "Library/Application Support/Code/User/mcp.json",
            r#"{"servers": {"m": {"command": "m"}, "both": {"command": "mac"}}}"#,
        );
        fx.home_file(
            ".gemini/settings.json",
            r#"{"mcpServers": {"mine": {"command": "gemini"}}}"#,
        );
        fx.home_file(
            ".claude.json",
            r#"{"mcpServers": {"u": {"command": "claude"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["both", "m", "mine", "u"]);
        assert_eq!(server(&d, "both").transport, stdio("mac", &[]));
        assert_eq!(server(&d, "both").source.kind, SourceKind::VsCodeUser);
        // Above Gemini CLI's user settings, below Claude Code's user scope.
        assert_eq!(server(&d, "mine").transport, stdio("vscode", &[]));
        assert_eq!(server(&d, "u").transport, stdio("claude", &[]));
        assert!(
            d.sources_read
                .ends_with(&[linux, mac, fx.home.join(".claude.json")])
        );
    }

    #[test]
    fn an_entry_named_like_this_server_is_skipped() {
        let fx = Fixture::new();
        fx.home_file(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"code-executor": {"command": "/opt/ce-wrapper", "args": ["serve"]}}}"#,
        );
        let d = fx.discover();
        assert!(d.servers.is_empty());
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
        assert!(
            d.warnings[0].contains("launches this server itself (name \"code-executor\")"),
            "{:?}",
            d.warnings
        );
    }

    #[test]
    fn gemini_lists_apply_to_both_settings_files() {
        let fx = Fixture::new();
        fx.home_file(
            ".gemini/settings.json",
            r#"{"mcp": {"excluded": ["p"]}, "excludeMCPServers": ["u2"],
                "mcpServers": {"u": {"command": "u"}, "u2": {"command": "u2"}}}"#,
        );
        fx.project_file(
            ".gemini/settings.json",
            r#"{"excludeMCPServers": ["u"], "allowMCPServers": ["p", "q"],
                "mcpServers": {"p": {"command": "p"}, "q": {"command": "q"}, "r": {"command": "r"}}}"#,
        );
        let d = fx.discover();
        // Each file's lists reach both files' servers, as Gemini CLI merges them; both
        // spellings of a list are read.
        assert_eq!(names(&d), ["q"]);
        assert_eq!(
            disabled(&d, "u").reason,
            format!(
                "listed in \"mcp.excluded\" in {}",
                fx.project.join(".gemini/settings.json").display()
            )
        );
        assert!(
            disabled(&d, "p")
                .reason
                .contains(&*fx.home.to_string_lossy())
        );
        assert_eq!(
            disabled(&d, "r").reason,
            format!(
                "not in \"mcp.allowed\" in {}",
                fx.project.join(".gemini/settings.json").display()
            )
        );
    }

    #[test]
    fn claude_settings_files_reject_dot_mcp_json_servers() {
        let fx = Fixture::new();
        fx.home_file(
            ".claude/settings.json",
            r#"{"disabledMcpjsonServers": ["home-off"]}"#,
        );
        fx.project_file(
            ".claude/settings.json",
            r#"{"disabledMcpjsonServers": ["project-off"], "disabledMcpServers": ["not-read"]}"#,
        );
        fx.project_file(
            ".mcp.json",
            r#"{"mcpServers": {"home-off": {"command": "a"}, "project-off": {"command": "b"}, "not-read": {"command": "c"}}}"#,
        );
        let d = fx.discover();
        assert_eq!(names(&d), ["not-read"]);
        assert!(
            disabled(&d, "home-off")
                .reason
                .contains(".claude/settings.json")
        );
        assert_eq!(d.sources_read.len(), 3);
    }

    #[test]
    fn explicit_file_is_json_whatever_its_name() {
        let fx = Fixture::new();
        let path = fx.home_file("mcp.toml", "[mcpServers.t]\ncommand = \"t\"\n");
        let mut inputs = fx.inputs();
        inputs.explicit = Some(path);
        let err = discover(&inputs).unwrap_err();
        assert!(matches!(err, DiscoveryError::Parse { .. }), "{err:?}");
    }
}
