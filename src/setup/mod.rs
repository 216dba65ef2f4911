//! `code-executor setup`: finds the MCP clients configured on this machine, registers this
//! server with the chosen ones, and optionally switches their other servers off in the client
//! while this server keeps reaching them.
//!
//! This module owns planning and applying those edits: every change is computed in memory first
//! (a `Plan` of whole-file before/after texts, edited surgically by [`edit`] so the user's other
//! entries, comments and formatting stay byte for byte), shown as a unified diff, and only then
//! written: each touched file is backed up into this server's state directory
//! (`~/.local/state/code-executor/backups/<timestamp>/`, see [`backup`]; never beside the file)
//! and replaced atomically; `setup --restore` puts a run's files back byte for byte.
//! Running it twice changes nothing the second time. Which files each client has, how they are
//! read and which switch a client uses are [`crate::clients`]' (its table); this module must
//! not know a client's paths or keys itself.
//!
//! # Switching the others off without losing them
//!
//! Discovery honours the clients' own switches (`"disabled": true`, Claude Code's
//! `disabledMcpServers`, ...), so a server switched off in the client would be skipped by this
//! server too. `setup --disable-others` therefore leaves alone what the client already switches
//! off (read as discovery reads it), and copies each server it switches off into this
//! server's own servers file ([`crate::config::settings::Settings::servers_file`], by default
//! `~/.config/code-executor/servers.json`), which discovery reads with the highest precedence
//! (see `crate::clients::servers_file`). Per client, the switch used is the client's own
//! (the table's `crate::clients::table::SwitchOff` and written lists):
//!
//! | client | switch written |
//! | --- | --- |
//! | Claude Code | this project's `disabledMcpServers` (user and local scope) and `disabledMcpjsonServers` (`.mcp.json`) in `~/.claude.json` |
//! | VS Code, Cursor, Claude Desktop | none of their own in their files (`"disabled": true` is not theirs: they keep loading the server), so the entry is moved out of the client's file into the servers file |
//! | Codex | `enabled = false` in `[mcp_servers.<name>]` |
//! | Gemini CLI | the name in `mcp.excluded` of the settings file registered in |
//!
//! A server the client keeps for one project (Claude Code's local scope, and every project
//! file: `.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, `.codex/config.toml`,
//! `.gemini/settings.json`) is copied under `projects.<project>.mcpServers` of that file, which
//! only that project reads: it never becomes every project's server. A server of the project's
//! own files that the user has not approved (see [`crate::clients::approval`]) is left as it is,
//! neither switched off nor copied: copying it would approve it behind the user's back.
//!
//! Files are written by [`write`]: through symbolic links, atomically. After registering,
//! `setup` installs the sandbox runtimes with their progress on stderr ([`runtimes`]), so the
//! client's first start of the server has nothing to download.

pub mod auth;
pub mod backup;
pub mod cli;
pub mod clients;
pub mod edit;
pub mod runtimes;
pub mod trust;
pub(crate) mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use clients::{Client, Entry, Layout, Lists, Places, ReadError, Scope, ServerFile};
use edit::{EditError, JsonDoc, TomlDoc};

use crate::clients::approval::Approvals;
use crate::clients::parse;
use crate::clients::table::{Format, LISTS, ListSwitch, Meaning, Reach, Seg, SwitchOff};

/// The name this server is registered under.
pub(crate) const SERVER_NAME: &str = crate::clients::SELF_NAMES[0];

/// What to do.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Clients to register with; empty = every detected client.
    pub clients: Vec<Client>,
    /// Register for the user or for this project; `None` = each client's default.
    pub scope: Option<Scope>,
    /// Switch the clients' other servers off (this server keeps reaching them).
    pub disable_others: bool,
    /// The command the clients run, and its arguments.
    pub command: String,
    pub args: Vec<String>,
    /// This server's own servers file.
    pub servers_file: PathBuf,
    pub places: Places,
    /// The approvals that apply to this project's own servers.
    pub approvals: Approvals,
}

/// Why setup stopped.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Parse(#[from] ReadError),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{client} has no {scope} config; choose another --scope")]
    NoTarget { client: &'static str, scope: String },
}

/// What one client looks like on this machine.
#[derive(Debug)]
pub(crate) struct Survey {
    pub client: Client,
    pub detected: bool,
    /// Its files that exist, with their servers or why they cannot be read.
    pub files: Vec<(ServerFile, Result<Vec<Entry>, String>)>,
    /// The lists that switch the client's servers off.
    pub listed_off: Lists,
}

impl Survey {
    pub(crate) fn registered(&self) -> bool {
        self.files
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok())
            .flatten()
            .any(|e| e.self_hit.is_some() && !flagged_off(self.client, e))
    }
}

/// Looks at every known client.
pub(crate) fn survey(places: &Places) -> Vec<Survey> {
    Client::ALL
        .iter()
        .map(|&client| {
            let files = places
                .server_files(client)
                .into_iter()
                .filter(|f| f.path.exists())
                .map(|f| {
                    let entries = clients::entries(&f).map_err(|e| e.to_string());
                    (f, entries)
                })
                .collect();
            Survey {
                client,
                detected: places.detected(client),
                files,
                listed_off: Lists::of_client(places, client),
            }
        })
        .collect()
}

/// Whether the flag on `entry` switches it off as `client` reads it: only a client that honours
/// flags on entries does (Codex); VS Code, Cursor, Claude Desktop, Claude Code and Gemini CLI
/// load the server whatever `"disabled"` says.
pub(crate) fn flagged_off(client: Client, entry: &Entry) -> bool {
    entry.flag_off.is_some() && client.info().switch_off.honours_entry_flags()
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileChange {
    pub path: PathBuf,
    /// `None` when the file does not exist yet.
    pub before: Option<String>,
    pub after: String,
}

impl FileChange {
    pub(crate) fn changed(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }

    /// The unified diff, with the path in the headers.
    pub(crate) fn diff(&self) -> String {
        let before = self.before.as_deref().unwrap_or("");
        let path = self.path.display().to_string();
        let old = if self.before.is_some() {
            path.clone()
        } else {
            "/dev/null".to_string()
        };
        similar::TextDiff::from_lines(before, &self.after)
            .unified_diff()
            .context_radius(3)
            .header(&old, &path)
            .to_string()
    }
}

/// What setup did or would do for one client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientOutcome {
    pub client: Client,
    pub file: PathBuf,
    /// "added", "updated" or "already registered".
    pub registration: &'static str,
    /// Servers switched off in the client by this run.
    pub disabled: Vec<String>,
    /// Servers of the project's own files left alone because they need approval.
    pub needs_approval: Vec<String>,
}

/// Every change, computed before anything is written.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub changes: Vec<FileChange>,
    pub outcomes: Vec<ClientOutcome>,
}

impl Plan {
    pub(crate) fn is_empty(&self) -> bool {
        self.changes.iter().all(|c| !c.changed())
    }
}

/// Texts being edited, by file, so that several edits of one file add up.
#[derive(Default)]
struct Workspace {
    order: Vec<PathBuf>,
    files: BTreeMap<PathBuf, (Option<String>, String)>,
}

impl Workspace {
    fn current(&mut self, path: &Path) -> Result<String, SetupError> {
        if let Some((_, now)) = self.files.get(path) {
            return Ok(now.clone());
        }
        let before = parse::read_text(path).map_err(|source| SetupError::Io {
            path: path.to_owned(),
            source,
        })?;
        let now = before.clone().unwrap_or_default();
        self.order.push(path.to_owned());
        self.files.insert(path.to_owned(), (before, now.clone()));
        Ok(now)
    }

    fn json<T>(
        &mut self,
        path: &Path,
        initial: &str,
        f: impl FnOnce(&JsonDoc) -> Result<T, EditError>,
    ) -> Result<T, SetupError> {
        let mut text = self.current(path)?;
        if text.trim().is_empty() {
            text = initial.to_string();
        }
        let parse_err = |source| ReadError {
            path: path.to_owned(),
            source,
        };
        let doc = JsonDoc::parse(&text).map_err(parse_err)?;
        let out = f(&doc).map_err(parse_err)?;
        self.set(path, doc.finish());
        Ok(out)
    }

    fn toml<T>(
        &mut self,
        path: &Path,
        f: impl FnOnce(&mut TomlDoc) -> Result<T, EditError>,
    ) -> Result<T, SetupError> {
        let text = self.current(path)?;
        let parse_err = |source| ReadError {
            path: path.to_owned(),
            source,
        };
        let mut doc = TomlDoc::parse(&text).map_err(parse_err)?;
        let out = f(&mut doc).map_err(parse_err)?;
        self.set(path, doc.finish());
        Ok(out)
    }

    fn set(&mut self, path: &Path, text: String) {
        if let Some(entry) = self.files.get_mut(path) {
            entry.1 = text;
        }
    }

    fn into_changes(self) -> Vec<FileChange> {
        let mut files = self.files;
        self.order
            .into_iter()
            .filter_map(|path| {
                let (before, after) = files.remove(&path)?;
                // A file that did not exist and got nothing stays absent.
                if before.is_none() && after.trim().is_empty() {
                    return None;
                }
                Some(FileChange {
                    path,
                    before,
                    after,
                })
            })
            .filter(FileChange::changed)
            .collect()
    }
}

/// The first text of a JSON file setup creates.
const NEW_JSON: &str = "{}\n";

/// The first text of this server's own servers file.
pub(crate) const NEW_SERVERS_FILE: &str = "// MCP servers code-executor reaches although their MCP client has them switched off.\n// Written by `code-executor setup --disable-others` (the clients' switches stay as they are);\n// edit freely, this file has the highest precedence. Servers under \"projects\" are used in\n// that project only.\n{\n  \"mcpServers\": {}\n}\n";

/// The entry that launches this server, as `client` writes entries.
pub(crate) fn registration_entry(client: Client, command: &str, args: &[String]) -> Value {
    if client.info().typed_entries {
        json!({"type": "stdio", "command": command, "args": args})
    } else {
        json!({"command": command, "args": args})
    }
}

/// Computes every edit for `clients` without writing anything.
pub(crate) fn plan(options: &Options, clients: &[Client]) -> Result<Plan, SetupError> {
    let mut ws = Workspace::default();
    let mut outcomes = Vec::new();
    let places = &options.places;
    for &client in clients {
        let scope = options.scope.unwrap_or(client.default_scope());
        let target = places
            .target(client, scope)
            .ok_or_else(|| SetupError::NoTarget {
                client: client.label(),
                scope: format!("{scope:?}").to_lowercase(),
            })?;
        let entry = registration_entry(client, &options.command, &options.args);
        let existed = clients::entries(&target)?
            .iter()
            .any(|e| e.name == SERVER_NAME);
        let changed = match &target.layout {
            Layout::Json(path) => {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                ws.json(&target.path, NEW_JSON, |doc| {
                    doc.set_entry(&path, SERVER_NAME, &entry)
                })?
            }
            Layout::Toml(table) => ws.toml(&target.path, |doc| {
                doc.set_entry(table, SERVER_NAME, &entry)
            })?,
        };
        let registration = match (changed, existed) {
            (false, _) => "already registered",
            (true, true) => "updated",
            (true, false) => "added",
        };
        let (disabled, needs_approval) = if options.disable_others {
            disable_others(&mut ws, options, client, &target)?
        } else {
            Default::default()
        };
        outcomes.push(ClientOutcome {
            client,
            file: target.path.clone(),
            registration,
            disabled,
            needs_approval,
        });
    }
    Ok(Plan {
        changes: ws.into_changes(),
        outcomes,
    })
}

/// Switches off every other enabled server `client` loads here, copying each into this
/// server's own servers file first (a project's servers under that project). Returns their
/// names, and those of the project's own servers left alone because they need approval.
fn disable_others(
    ws: &mut Workspace,
    options: &Options,
    client: Client,
    target: &ServerFile,
) -> Result<(Vec<String>, Vec<String>), SetupError> {
    let places = &options.places;
    let lists = Lists::of_client(places, client);
    let switch = client.info().switch_off;
    let mut others: Vec<Entry> = Vec::new();
    let mut unapproved: Vec<String> = Vec::new();
    for file in places.server_files(client) {
        for entry in clients::entries(&file)? {
            let off =
                flagged_off(client, &entry) || lists.off(entry.file.kind, &entry.name).is_some();
            if entry.self_hit.is_some() || off {
                continue;
            }
            if options
                .approvals
                .withholds(entry.file.kind, &entry.name, &entry.definition)
            {
                unapproved.push(entry.name.clone());
            } else {
                others.push(entry);
            }
        }
    }
    unapproved.sort();
    unapproved.dedup();
    if others.is_empty() {
        return Ok((Vec::new(), unapproved));
    }
    // Keep them reachable first: a user's servers for every project, a project's for it only.
    for entry in &others {
        let def = clients::portable(entry);
        let at: Vec<String> = if entry.file.row().scope == Scope::Project {
            let text = ws.current(&options.servers_file)?;
            let root = edit::parse_json(&text).ok();
            let at = [
                Seg::Key("projects"),
                Seg::ThisProject,
                Seg::Key("mcpServers"),
            ];
            places.key_path(&at, root.as_ref())
        } else {
            vec!["mcpServers".to_owned()]
        };
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        ws.json(&options.servers_file, NEW_SERVERS_FILE, |doc| {
            doc.set_entry(&at, &entry.name, &def)
        })?;
    }
    let mut names: Vec<String> = Vec::new();
    match switch {
        SwitchOff::MoveOut | SwitchOff::EntryFlag => {
            // A JSON entry is removed or flagged; a TOML one (Codex) always gets its flag.
            let move_out = matches!(switch, SwitchOff::MoveOut);
            for entry in &others {
                let changed = match &entry.file.layout {
                    Layout::Json(path) => {
                        let path: Vec<&str> = path.iter().map(String::as_str).collect();
                        ws.json(&entry.file.path, NEW_JSON, |doc| {
                            if move_out {
                                doc.remove_entry(&path, &entry.name)
                            } else {
                                doc.disable_entry(&path, &entry.name)
                            }
                        })?
                    }
                    Layout::Toml(table) => ws.toml(&entry.file.path, |doc| {
                        doc.disable_entry(table, &entry.name)
                    })?,
                };
                if changed {
                    names.push(entry.name.clone());
                }
            }
        }
        SwitchOff::List => {
            // The names for each list, in the table's order.
            let mut wanted: BTreeMap<usize, Vec<String>> = BTreeMap::new();
            for entry in &others {
                let list = list_for(places, client, entry, target);
                wanted.entry(list).or_default().push(entry.name.clone());
            }
            for (list, wanted) in wanted {
                let list = &LISTS[list];
                let path = places.resolve(list.file);
                let root = parse::read_config(&path, Format::Jsonc)
                    .ok()
                    .flatten()
                    .map(|p| p.root);
                let keys = places.key_path(list.at[0], root.as_ref());
                let Some((key, parents)) = keys.split_last() else {
                    continue;
                };
                let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
                let added =
                    ws.json(&path, NEW_JSON, |doc| doc.add_names(&parents, key, &wanted))?;
                names.extend(added);
            }
        }
    }
    names.sort();
    names.dedup();
    Ok((names, unapproved))
}

/// The index in [`LISTS`] of the list `setup` adds `entry`'s name to: one of the client's own
/// written exclusion lists that reaches the entry's file, in the file registered in if one is
/// there, the most specific first.
fn list_for(places: &Places, client: Client, entry: &Entry, target: &ServerFile) -> usize {
    let specific = |l: &ListSwitch| match l.reach {
        Reach::Rows(_) => 0,
        Reach::Client => 1,
        Reach::Everywhere => 2,
    };
    LISTS
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.client == client
                && l.written
                && l.meaning == Meaning::Excludes
                && l.reaches(entry.file.kind)
        })
        .min_by_key(|(_, l)| (places.resolve(l.file) != target.path, specific(l)))
        .map(|(i, _)| i)
        .expect("the table gives a written list to every client switched off by list")
}

/// A file written by [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub path: PathBuf,
    /// The copy of the old file, when there was one.
    pub backup: Option<PathBuf>,
}

/// Writes the plan: each changed file is first copied into a new run of backups in `backups`
/// (this server's state directory, never beside the file: see [`backup`]), then replaced
/// atomically through symbolic links, keeping its permissions ([`write::replace`]). Returns
/// the files written and the run's directory.
pub(crate) fn apply(
    plan: &Plan,
    backups: &Path,
    stamp: &str,
) -> Result<(Vec<Written>, PathBuf), SetupError> {
    let mut written = Vec::new();
    let mut run = backup::Run::start(backups, stamp).map_err(|source| SetupError::Io {
        path: backups.to_owned(),
        source,
    })?;
    for change in plan.changes.iter().filter(|c| c.changed()) {
        let io = |source| SetupError::Io {
            path: change.path.clone(),
            source,
        };
        let backup = run
            .save(&change.path, change.after.as_bytes())
            .map_err(io)?;
        write::replace(&change.path, &change.after).map_err(io)?;
        written.push(Written {
            path: change.path.clone(),
            backup,
        });
    }
    Ok((written, run.dir))
}

/// A timestamp for backup names, e.g. `20260314T093000`.
pub(crate) fn stamp() -> String {
    chrono::Local::now().format("%Y%m%dT%H%M%S").to_string()
}

#[cfg(test)]
mod tests;
