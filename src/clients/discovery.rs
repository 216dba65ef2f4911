//! Discovery of the downstream MCP servers a user has already configured.
//!
//! This module owns merging the MCP client config files that exist on the
//! machine (Claude Desktop, Claude Code, Cursor, VS Code, Codex, Gemini CLI,
//! plus an explicit `MCP_CONFIG_PATH`) into one [`Discovery`]: every entry
//! becomes a launchable [`ServerSpec`] or a reason why it is disabled or
//! invalid. Where the files are and what they hold is the table's
//! (`super::table`); reading them and their raw entries is
//! `super::read`'s; an entry's fields are `super::entry`'s. It does not
//! launch anything and writes nothing.
//!
//! Everything it looks at comes from `DiscoveryInputs`: it never reads the
//! process environment or the real home directory by itself.
//!
//! # Sources, lowest precedence first (the rows of `super::table::ROWS`)
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
//! (`super::dialects`, the dialect being the table's): Codex's `url` is streamable HTTP and its headers come
//! from `http_headers`, `env_http_headers` and `bearer_token_env_var`; Gemini
//! CLI's `httpUrl` is streamable HTTP, its `url` is the legacy HTTP+SSE
//! transport (`"type": "sse"`), and its `$VAR` is `${VAR}`. Codex has no SSE
//! form (its `url` is streamable HTTP; the upstream pool's probe still finds
//! an SSE server behind it).
//!
//! A definition replaces every earlier definition **of the same name**,
//! whatever state either is in: a project entry that is disabled or invalid
//! hides a working global one of the same name (the replaced ones are listed
//! in [`Discovery::overridden`]). Files are parsed as JSON with comments and
//! trailing commas (what VS Code writes); a UTF-8 byte-order mark is skipped.
//!
//! # Disabling
//!
//! The lists are the table's (`super::table::LISTS`); self-references, flags
//! and lists are checked in that order, and the first list that matches gives
//! the reason. An entry is disabled by `"disabled": true` or `"enabled": false` on it; by
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
//!
//! # What the project brings
//!
//! An enabled, valid winner from a file inside the project (rows 8 to 12: a
//! cloned repository brings them) is not a usable server yet: it goes to
//! [`Discovery::pending`] with the fingerprint of its definition, and only
//! `super::approval::gate` moves it to [`Discovery::servers`] once an approval
//! covers it (the rules are `super::approval`'s). Whatever forgets the gate
//! starts none of them.
//!
//! # Errors and warnings
//!
//! - An explicit `MCP_CONFIG_PATH` that is missing, unreadable, unparsable or
//!   of the wrong shape makes `discover` fail with a [`DiscoveryError`]. That
//!   file, like this server's own servers file, holds `{"mcpServers": {...}}`
//!   (or `"servers"`), or the bare map of servers by name
//!   (`{"time": {"command": ...}}`); any other shape is refused naming the
//!   file (see [`strict_row`]).
//! - Any other file that exists but cannot be read or parsed, or has the wrong
//!   shape, is skipped with a warning naming the file (and line and column for
//!   a syntax error); the other files keep working. A missing file is normal
//!   and silent. An empty file counts as an empty config.
//! - A single entry that cannot be used (unset variable, missing `command`,
//!   unknown `type`, `${input:...}`, wrong field type, ...) is listed in
//!   [`Discovery::invalid`] with its reason; its siblings are unaffected.
//!
//! # Entries
//!
//! Stdio: `{"type"?: "stdio", "command", "args"?, "env"?, "cwd"?}`. HTTP:
//! `{"type": "http" | "streamable-http" | "streamableHttp", "url",
//! "headers"?}`, or `{"url", "headers"?}` without a type. Without a type,
//! `command` wins over `url` (with a warning). Legacy HTTP+SSE (protocol
//! 2024-11-05): `{"type": "sse", "url", "headers"?}`, `url` being the event
//! stream.
//! Unknown fields are ignored, except `envFile`, which earns a warning
//! because the server will run without those variables. Strings, numbers
//! and booleans are accepted in `args`, `env` and `headers` (numbers and
//! booleans are written out as JSON writes them); a `null` env or header
//! value is dropped. `command`, `args`, `env` values, `cwd`, `url` and
//! header values go through `super::expand::expand` with `${workspaceFolder}`
//! = the project directory and `${userHome}` = the home directory. A relative
//! `cwd` (after expansion) is relative to the directory of the file that
//! defines it; no `cwd` leaves the choice to the launcher. `env` holds only
//! the variables the entry sets, not the inherited environment. A relative
//! `command` is left as written.
//!
//! # Skipping ourselves
//!
//! An entry whose `command` has a file name (ignoring `.exe`, `.cmd`, `.bat`)
//! in `DiscoveryInputs::self_names`, or that runs `npx`/`bunx`/`pnpx`/`uvx`
//! with a package (`-p`/`--package`/`--from` value or first positional
//! argument, version and scope stripped) in `self_names`, is dropped,
//! checked both before and after expansion; so is an entry named like this
//! server (`setup` registers it under that name, whatever the command).
//! `setup` uses the same rules. Dropping it is what the user expects (it is
//! the entry `setup` wrote), so it is no warning: it is listed in
//! [`Discovery::skipped_self`] and logged at `debug` only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::Value;

pub use super::brought::{Pending, ProjectServer};
pub use super::parse::DiscoveryError;
pub use super::spec::{ConfigSource, ServerSpec, Transport};
pub use super::table::SourceKind;

use super::aliases::Aliases;
use super::brought;
use super::entry::transport;
use super::expand::Vars;
use super::launch::launches_self;
use super::parse::{self, Parsed};
use super::places::{Layout, Places, ServerFile};
use super::read::{self, Lists, RawEntry};
use super::table::{self, Format, LISTS, ROWS, Row};

/// Where to look. Passed in explicitly so that tests never touch the real
/// home directory or environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct DiscoveryInputs {
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

impl DiscoveryInputs {
    pub(crate) fn places(&self) -> Places {
        Places {
            home: self.home.clone(),
            project: self.project_dir.clone(),
        }
    }
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
    /// Enabled, valid servers, sorted by name: the only ones anything may start.
    pub servers: Vec<ServerSpec>,
    /// Enabled, valid servers from the project's own files, waiting for
    /// `super::approval::gate` (empty once it ran).
    pub pending: Vec<Pending>,
    /// Every server from the project's own files that the gate saw, approved or
    /// not, sorted by name; the approved ones are also in `servers`.
    pub project_servers: Vec<ProjectServer>,
    /// Disabled servers, sorted by name.
    pub disabled: Vec<DisabledEntry>,
    /// Unusable definitions, sorted by name; the others keep working.
    pub invalid: Vec<InvalidEntry>,
    /// Definitions hidden by a later one of the same name, sorted by name,
    /// then lowest precedence first.
    pub overridden: Vec<Overridden>,
    /// Other names of the servers in `servers` (the same server configured under several
    /// names; see `super::aliases`). Empty until `super::aliases::fold` ran.
    pub aliases: Aliases,
    /// Every config file read and parsed, in reading order, each once.
    pub sources_read: Vec<PathBuf>,
    /// Things the user may want to know: skipped files, ignored fields.
    pub warnings: Vec<String>,
    /// Entries that launch this server itself (the one `setup` writes, say): never started,
    /// and no warning.
    pub skipped_self: Vec<SelfEntry>,
}

/// A definition that launches this server itself, skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfEntry {
    pub name: String,
    pub source: ConfigSource,
    /// What gave it away, e.g. `name "code-executor"`.
    pub hit: String,
}

impl Discovery {
    /// The servers from the project's own files that need approval (never started).
    pub fn needs_approval(&self) -> impl Iterator<Item = &ProjectServer> {
        self.project_servers
            .iter()
            .filter(|p| p.approved_by.is_none())
    }
}

/// Reads every config file in `DiscoveryInputs` and merges the servers they
/// define (see the module docs for the rules).
///
/// Fails only on a problem with the explicit `MCP_CONFIG_PATH` file; problems
/// with any other file become [`Discovery::warnings`].
pub(crate) fn discover(inputs: &DiscoveryInputs) -> Result<Discovery, DiscoveryError> {
    let mut run = Run::new(inputs);
    for row in ROWS {
        for &loc in row.files {
            for path in run.places.files(loc) {
                run.row(row, &path, false)?;
            }
        }
    }
    let lists = run.lists();
    if let Some(explicit) = &inputs.explicit {
        let path = resolve_explicit(explicit, inputs);
        let row = run.strict_row(table::row(SourceKind::Explicit), &EXPLICIT_BARE, &path)?;
        run.row(row, &path, true)?;
    }
    Ok(run.finish(&lists))
}

/// Reads this server's own servers file on its own, with the same rules as the explicit file,
/// and its servers for this project (`table::OWN_FILE`).
pub(crate) fn discover_file(
    inputs: &DiscoveryInputs,
    path: &Path,
) -> Result<Discovery, DiscoveryError> {
    let mut run = Run::new(inputs);
    let row = run.strict_row(&table::OWN_FILE, &OWN_FILE_BARE, path)?;
    run.row(row, path, true)?;
    Ok(run.finish(&Lists::default()))
}

/// `MCP_CONFIG_PATH` holding the bare map of servers by name.
static EXPLICIT_BARE: Row = table::bare(SourceKind::Explicit);
/// This server's own servers file holding the bare map of servers by name.
static OWN_FILE_BARE: Row = table::bare(SourceKind::ServersFile);

/// Whether the object `root` is a bare map of servers by name: not empty, and every value an
/// object.
fn is_bare_map(root: &serde_json::Map<String, Value>) -> bool {
    !root.is_empty() && root.values().all(Value::is_object)
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
    /// It launches this server: what gave it away.
    SelfSkip(String),
}

struct Candidate {
    source: ConfigSource,
    state: State,
    /// For a definition from the project's own files: its fingerprint and what it
    /// launches.
    brought: Option<(String, Vec<String>)>,
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
    places: Places,
    /// Every file read so far (`None`: missing or unusable, already warned about).
    loaded: BTreeMap<PathBuf, Option<Rc<Parsed>>>,
    /// Definitions by name, lowest precedence first.
    candidates: BTreeMap<String, Vec<Candidate>>,
    sources_read: Vec<PathBuf>,
    warnings: Vec<String>,
    skipped_self: Vec<SelfEntry>,
}

impl<'a> Run<'a> {
    fn new(inputs: &'a DiscoveryInputs) -> Self {
        Run {
            ctx: Context {
                inputs,
                workspace: inputs.project_dir.to_string_lossy().into_owned(),
                home: inputs.home.to_string_lossy().into_owned(),
            },
            places: inputs.places(),
            loaded: BTreeMap::new(),
            candidates: BTreeMap::new(),
            sources_read: Vec::new(),
            warnings: Vec::new(),
            skipped_self: Vec::new(),
        }
    }

    /// Records a warning once.
    fn warn(&mut self, warning: String) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// Returns the error for the explicit file; records a warning otherwise.
    fn soft(&mut self, strict: bool, err: DiscoveryError) -> Result<(), DiscoveryError> {
        if strict {
            Err(err)
        } else {
            self.warn(format!("{err}; skipping it"));
            Ok(())
        }
    }

    /// Reads and parses `path` once (a `strict` reader reads again what could not be used,
    /// to fail on it). `None` when it is missing or (unless `strict`) unusable.
    fn load(
        &mut self,
        path: &Path,
        format: Format,
        strict: bool,
    ) -> Result<Option<Rc<Parsed>>, DiscoveryError> {
        match self.loaded.get(path) {
            Some(Some(parsed)) => return Ok(Some(parsed.clone())),
            Some(None) if !strict => return Ok(None),
            _ => {}
        }
        let loaded = match parse::read_config(path, format) {
            Ok(Some(parsed)) => {
                if !self.sources_read.iter().any(|p| p == path) {
                    self.sources_read.push(path.to_owned());
                }
                Some(Rc::new(parsed))
            }
            Ok(None) if strict => {
                return Err(DiscoveryError::NotFound {
                    path: path.to_owned(),
                });
            }
            Ok(None) => None,
            Err(err) => {
                self.soft(strict, err)?;
                None
            }
        };
        self.loaded.insert(path.to_owned(), loaded.clone());
        Ok(loaded)
    }

    /// Which row reads a file of its own (`MCP_CONFIG_PATH`, the servers file): `keyed` when
    /// the file holds one of its keys (or is empty), `bare` when it is the bare map of servers
    /// by name; any other shape is refused, naming the file and the two shapes it may have.
    fn strict_row(
        &mut self,
        keyed: &'static Row,
        bare: &'static Row,
        path: &Path,
    ) -> Result<&'static Row, DiscoveryError> {
        let Some(parsed) = self.load(path, keyed.format(), true)? else {
            return Ok(keyed);
        };
        let Some(root) = parsed.root.as_object() else {
            return Ok(keyed);
        };
        let keys_of_row = keyed.servers.iter().filter_map(|at| match at.first() {
            Some(table::Seg::Key(k)) => Some(*k),
            _ => None,
        });
        let row_keys: Vec<&str> = keys_of_row.collect();
        if root.is_empty() {
            return Ok(keyed);
        }
        if row_keys.iter().any(|k| root.contains_key(*k)) {
            // This server's own file holds nothing else: servers written beside its keys (the
            // bare map, then `mcpServers` added) would be ignored without a word.
            let beside: Vec<&str> = (root.iter())
                .filter(|(k, v)| !row_keys.contains(&k.as_str()) && v.is_object())
                .map(|(k, _)| k.as_str())
                .take(3)
                .collect();
            if keyed.kind == SourceKind::ServersFile && !beside.is_empty() {
                return Err(DiscoveryError::Shape {
                    path: path.to_owned(),
                    message: format!(
                        "\"{}\" stands beside \"mcpServers\" and would be ignored; move it \
                         into \"mcpServers\"",
                        beside.join("\", \"")
                    ),
                });
            }
            return Ok(keyed);
        }
        if is_bare_map(root) {
            return Ok(bare);
        }
        let odd: Vec<&str> = (root.iter())
            .filter(|(_, v)| !v.is_object())
            .map(|(k, _)| k.as_str())
            .take(3)
            .collect();
        Err(DiscoveryError::Shape {
            path: path.to_owned(),
            message: format!(
                "expected {{\"mcpServers\": {{\"<name>\": {{\"command\": ...}}}}}} or the bare \
                 map {{\"<name>\": {{\"command\": ...}}}}, but \"{}\" is not a server \
                 definition (an object)",
                odd.join("\", \"")
            ),
        })
    }

    /// The servers of one file of `row`.
    fn row(&mut self, row: &'static Row, path: &Path, strict: bool) -> Result<(), DiscoveryError> {
        let Some(parsed) = self.load(path, row.format(), strict)? else {
            return Ok(());
        };
        let mut found = false;
        for at in row.servers {
            let keys = self.places.key_path(at, Some(&parsed.root));
            let servers = match read::servers_in(&parsed, at, &keys) {
                Ok(servers) => servers,
                Err(stuck) if stuck.step + 1 < keys.len() => {
                    self.warn(read::stuck_message(at, &keys, stuck, path));
                    continue;
                }
                Err(stuck) => {
                    let err = DiscoveryError::Shape {
                        path: path.to_owned(),
                        message: format!(
                            "\"{}\" must be an object, found {}",
                            keys[stuck.step], stuck.found
                        ),
                    };
                    self.soft(strict, err)?;
                    continue;
                }
            };
            let Some(servers) = servers else {
                continue;
            };
            found = true;
            let file = ServerFile {
                kind: row.kind,
                path: path.to_owned(),
                layout: Layout::Json(keys.clone()),
            };
            for (name, value) in servers {
                let raw = RawEntry::new(name, value, &file, &self.ctx.inputs.self_names);
                self.add(raw);
            }
        }
        if !found
            && let Some(other) = row.other_key
            && parsed.root.get(other).is_some_and(Value::is_object)
        {
            let source = ConfigSource {
                kind: row.kind,
                path: path.to_owned(),
            };
            let read = row.servers[0].iter().map(|seg| match seg {
                table::Seg::Key(k) => *k,
                table::Seg::ThisProject => "<project>",
            });
            self.warn(format!(
                "{source} has \"{other}\" but {} reads \"{}\"; ignoring those servers",
                row.label,
                read.collect::<Vec<_>>().join("."),
            ));
        }
        Ok(())
    }

    fn add(&mut self, raw: RawEntry) {
        let source = ConfigSource {
            kind: raw.file.kind,
            path: raw.file.path.clone(),
        };
        let state = evaluate(&raw, &source, &self.ctx, &mut self.warnings);
        if let State::SelfSkip(hit) = &state {
            tracing::debug!(
                "skipping server \"{}\" from {source}: it launches this server itself ({hit})",
                raw.name
            );
            self.skipped_self.push(SelfEntry {
                name: raw.name.clone(),
                source: source.clone(),
                hit: hit.clone(),
            });
        }
        let brought = brought::in_project(source.kind).then(|| {
            (
                brought::fingerprint(&raw.definition),
                brought::describe(&raw.definition),
            )
        });
        self.candidates
            .entry(raw.name)
            .or_default()
            .push(Candidate {
                source,
                state,
                brought,
            });
    }

    /// Every list of the table, read from its file.
    fn lists(&mut self) -> Lists {
        let places = self.places.clone();
        let mut warnings = Vec::new();
        let lists = Lists::collect(
            &places,
            LISTS.iter(),
            |path| self.load(path, Format::Jsonc, false).ok().flatten(),
            |w| warnings.push(w),
        );
        for w in warnings {
            self.warn(w);
        }
        lists
    }

    fn finish(self, lists: &Lists) -> Discovery {
        let mut out = Discovery {
            sources_read: self.sources_read,
            warnings: self.warnings,
            skipped_self: self.skipped_self,
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
            let listed = lists.off(winner.source.kind, &name);
            let source = winner.source;
            let brought = winner.brought;
            match (winner.state, listed) {
                (State::SelfSkip(_), _) => {}
                (State::Disabled(reason), _) | (_, Some(reason)) => {
                    out.disabled.push(DisabledEntry {
                        name,
                        source,
                        reason,
                    })
                }
                (State::Invalid(error), None) => out.invalid.push(InvalidEntry {
                    name,
                    source,
                    error,
                }),
                (State::Enabled(transport), None) => {
                    let spec = ServerSpec {
                        name,
                        transport,
                        source,
                    };
                    match brought {
                        Some((fingerprint, launch)) => out.pending.push(Pending {
                            spec,
                            fingerprint,
                            launch,
                        }),
                        None => out.servers.push(spec),
                    }
                }
            }
        }
        out
    }
}

/// Classifies one definition.
fn evaluate(
    raw: &RawEntry,
    source: &ConfigSource,
    ctx: &Context<'_>,
    warnings: &mut Vec<String>,
) -> State {
    let name = raw.name.as_str();
    let Some(obj) = raw.definition.as_object() else {
        return State::Invalid(format!(
            "a server definition must be an object, found {}",
            parse::type_name(&raw.definition)
        ));
    };
    if name.trim().is_empty() {
        return State::Invalid("the server name is empty".to_owned());
    }
    if let Some(hit) = &raw.self_hit {
        return State::SelfSkip(hit.clone());
    }
    if let Some(flag) = raw.flag_off {
        // Left off even where the client ignores the flag and loads the server: the user wrote
        // it to switch the server off, and starting fewer servers is the safe side.
        let client = raw.file.row().client;
        return State::Disabled(match client {
            Some(c) if !c.info().switch_off.honours_entry_flags() => format!(
                "{flag} ({} ignores it and still loads the server; `code-executor setup --disable-others` switches it off there)",
                c.label()
            ),
            _ => flag.to_owned(),
        });
    }
    let self_names = &ctx.inputs.self_names;
    let base_dir = source.path.parent().unwrap_or(Path::new(""));
    match transport(name, obj, source, base_dir, ctx.vars(), warnings) {
        Err(error) => State::Invalid(error),
        Ok(Transport::Stdio { command, args, .. })
            if launches_self(&command, &args, self_names).is_some() =>
        {
            State::SelfSkip(launches_self(&command, &args, self_names).unwrap_or_default())
        }
        Ok(transport) => State::Enabled(transport),
    }
}
