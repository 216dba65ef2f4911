//! `code-executor setup`: finds the MCP clients configured on this machine, registers this
//! server with the chosen ones, and optionally switches their other servers off in the client
//! while this server keeps reaching them.
//!
//! This module owns planning and applying those edits: every change is computed in memory first
//! (a [`Plan`] of whole-file before/after texts, edited surgically by [`edit`] so the user's other
//! entries, comments and formatting stay byte for byte), shown as a unified diff, and only then
//! written: each touched file is backed up as `<file>.bak-<timestamp>` and replaced atomically.
//! Running it twice changes nothing the second time.
//!
//! # Switching the others off without losing them
//!
//! Discovery honours the clients' own switches (`"disabled": true`, Claude Code's
//! `disabledMcpServers`, ...), so a server switched off in the client would be skipped by this
//! server too. `setup --disable-others` therefore copies each server it switches off into this
//! server's own servers file ([`crate::config::settings::Settings::servers_file`], by default
//! `~/.config/code-executor/servers.json`), which discovery reads with the highest precedence
//! (see [`servers_file`]). That file is also how Codex's and Gemini CLI's servers reach this
//! server. Per client, the switch used is the client's own:
//!
//! | client | switch written |
//! | --- | --- |
//! | Claude Code | this project's `disabledMcpServers` (user and local scope) and `disabledMcpjsonServers` (`.mcp.json`) in `~/.claude.json` |
//! | Cursor, VS Code, Claude Desktop | `"disabled": true` on the entry |
//! | Codex | `enabled = false` in `[mcp_servers.<name>]` |
//! | Gemini CLI | the name in `mcp.excluded` of the settings file registered in |

pub mod cli;
pub mod clients;
pub mod edit;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use clients::{Client, Entry, Layout, Places, ReadError, Scope, ServerFile};
use edit::{EditError, JsonDoc, TomlDoc};

/// The name this server is registered under.
pub const SERVER_NAME: &str = "code-executor";

/// What to do.
#[derive(Debug, Clone)]
pub struct Options {
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
pub struct Survey {
    pub client: Client,
    pub detected: bool,
    /// Its files that exist, with their servers or why they cannot be read.
    pub files: Vec<(ServerFile, Result<Vec<Entry>, String>)>,
    /// What the client switches off through lists.
    pub listed_off: clients::ListedOff,
}

impl Survey {
    pub fn registered(&self) -> bool {
        self.files
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok())
            .flatten()
            .any(|e| e.is_self && !e.disabled)
    }
}

/// Looks at every known client.
pub fn survey(places: &Places) -> Vec<Survey> {
    Client::ALL
        .iter()
        .map(|&client| {
            let files = places
                .server_files(client)
                .into_iter()
                .filter(|f| f.path.exists())
                .map(|f| {
                    let entries = clients::entries(&f, SERVER_NAME).map_err(|e| e.to_string());
                    (f, entries)
                })
                .collect();
            Survey {
                client,
                detected: places.detected(client),
                files,
                listed_off: clients::listed_off(places, client),
            }
        })
        .collect()
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    /// `None` when the file does not exist yet.
    pub before: Option<String>,
    pub after: String,
}

impl FileChange {
    pub fn changed(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }

    /// The unified diff, with the path in the headers.
    pub fn diff(&self) -> String {
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
pub struct ClientOutcome {
    pub client: Client,
    pub file: PathBuf,
    /// "added", "updated" or "already registered".
    pub registration: &'static str,
    /// Servers switched off in the client by this run.
    pub disabled: Vec<String>,
}

/// Every change, computed before anything is written.
#[derive(Debug, Default)]
pub struct Plan {
    pub changes: Vec<FileChange>,
    pub outcomes: Vec<ClientOutcome>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
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
        let before = clients::read_text(path).map_err(|source| SetupError::Io {
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
pub const NEW_SERVERS_FILE: &str = "// MCP servers code-executor reaches although their MCP client has them switched off.\n// Written by `code-executor setup --disable-others` (the clients' switches stay as they are);\n// edit freely, this file has the highest precedence.\n{\n  \"mcpServers\": {}\n}\n";

/// The entry that launches this server, as `client` writes entries.
pub fn registration_entry(client: Client, command: &str, args: &[String]) -> Value {
    match client {
        Client::ClaudeCode | Client::Vscode => {
            json!({"type": "stdio", "command": command, "args": args})
        }
        _ => json!({"command": command, "args": args}),
    }
}

/// Computes every edit for `clients` without writing anything.
pub fn plan(options: &Options, clients: &[Client]) -> Result<Plan, SetupError> {
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
        let existed = clients::entries(&target, SERVER_NAME)?
            .iter()
            .any(|e| e.name == SERVER_NAME);
        let changed = match &target.layout {
            Layout::Json(path) => {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                ws.json(&target.path, NEW_JSON, |doc| {
                    doc.set_entry(&path, SERVER_NAME, &entry)
                })?
            }
            Layout::Toml => ws.toml(&target.path, |doc| {
                doc.set_entry("mcp_servers", SERVER_NAME, &entry)
            })?,
        };
        let registration = match (changed, existed) {
            (false, _) => "already registered",
            (true, true) => "updated",
            (true, false) => "added",
        };
        let disabled = if options.disable_others {
            disable_others(&mut ws, options, client, &target)?
        } else {
            Vec::new()
        };
        outcomes.push(ClientOutcome {
            client,
            file: target.path.clone(),
            registration,
            disabled,
        });
    }
    Ok(Plan {
        changes: ws.into_changes(),
        outcomes,
    })
}

/// Switches off every other enabled server `client` loads here, copying each into this
/// server's own servers file first. Returns their names.
fn disable_others(
    ws: &mut Workspace,
    options: &Options,
    client: Client,
    target: &ServerFile,
) -> Result<Vec<String>, SetupError> {
    let places = &options.places;
    let listed_off = clients::listed_off(places, client);
    let mut others: Vec<Entry> = Vec::new();
    for file in places.server_files(client) {
        for entry in clients::entries(&file, SERVER_NAME)? {
            if !entry.is_self && !entry.disabled && !listed_off.off(&entry) {
                others.push(entry);
            }
        }
    }
    if others.is_empty() {
        return Ok(Vec::new());
    }
    // Keep them reachable first.
    for entry in &others {
        let def = clients::portable(entry);
        ws.json(&options.servers_file, NEW_SERVERS_FILE, |doc| {
            doc.set_entry(&["mcpServers"], &entry.name, &def)
        })?;
    }
    let mut names: Vec<String> = Vec::new();
    match client {
        Client::ClaudeCode => {
            let claude = places.home.join(".claude.json");
            let root = clients::read_text(&claude)
                .ok()
                .flatten()
                .and_then(|t| edit::parse_json(&t).ok());
            let key = places.claude_project_key(root.as_ref());
            let (mcpjson, other): (Vec<&Entry>, Vec<&Entry>) = others
                .iter()
                .partition(|e| e.file.path == places.project.join(".mcp.json"));
            for (list, entries) in [
                ("disabledMcpServers", other),
                ("disabledMcpjsonServers", mcpjson),
            ] {
                let wanted: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
                if wanted.is_empty() {
                    continue;
                }
                let added = ws.json(&claude, NEW_JSON, |doc| {
                    doc.add_names(&["projects", &key], list, &wanted)
                })?;
                names.extend(added);
            }
        }
        Client::Gemini => {
            let wanted: Vec<String> = others.iter().map(|e| e.name.clone()).collect();
            let added = ws.json(&target.path, NEW_JSON, |doc| {
                doc.add_names(&["mcp"], "excluded", &wanted)
            })?;
            names.extend(added);
        }
        _ => {
            for entry in &others {
                let changed = match &entry.file.layout {
                    Layout::Json(path) => {
                        let path: Vec<&str> = path.iter().map(String::as_str).collect();
                        ws.json(&entry.file.path, NEW_JSON, |doc| {
                            doc.disable_entry(&path, &entry.name)
                        })?
                    }
                    Layout::Toml => ws.toml(&entry.file.path, |doc| {
                        doc.disable_entry("mcp_servers", &entry.name)
                    })?,
                };
                if changed {
                    names.push(entry.name.clone());
                }
            }
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// A file written by [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: PathBuf,
    /// The copy of the old file, when there was one.
    pub backup: Option<PathBuf>,
}

/// Writes the plan: each changed file is backed up (`<file>.bak-<stamp>`) and replaced
/// atomically, keeping its permissions.
pub fn apply(plan: &Plan, stamp: &str) -> Result<Vec<Written>, SetupError> {
    let mut written = Vec::new();
    for change in plan.changes.iter().filter(|c| c.changed()) {
        let io = |source| SetupError::Io {
            path: change.path.clone(),
            source,
        };
        let dir = change
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut backup = None;
        let mut permissions = None;
        if change.before.is_some() {
            let name = change
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut path = dir.join(format!("{name}.bak-{stamp}"));
            let mut n = 1;
            while path.exists() {
                path = dir.join(format!("{name}.bak-{stamp}-{n}"));
                n += 1;
            }
            std::fs::copy(&change.path, &path).map_err(io)?;
            permissions = std::fs::metadata(&change.path)
                .ok()
                .map(|m| m.permissions());
            backup = Some(path);
        }
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        tmp.write_all(change.after.as_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        if let Some(p) = permissions {
            std::fs::set_permissions(tmp.path(), p).map_err(io)?;
        }
        tmp.persist(&change.path).map_err(|e| io(e.error))?;
        written.push(Written {
            path: change.path.clone(),
            backup,
        });
    }
    Ok(written)
}

/// A timestamp for backup names, e.g. `20260314T093000`.
pub fn stamp() -> String {
    chrono::Local::now().format("%Y%m%dT%H%M%S").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(home: &Path, project: &Path, disable: bool) -> Options {
        Options {
            clients: vec![],
            scope: None,
            disable_others: disable,
            command: "/opt/bin/code-executor".into(),
            args: vec!["serve".into()],
            servers_file: home.join(".config/code-executor/servers.json"),
            places: Places {
                home: home.to_owned(),
                project: project.to_owned(),
            },
        }
    }

    #[test]
    fn cursor_plan_registers_disables_and_copies() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, project) = (tmp.path().join("home"), tmp.path().join("project"));
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let original = "{\n  \"mcpServers\": {\n    \"time\": {\n      \"command\": \"uvx\",\n      \"args\": [\"mcp-server-time\"],\n      \"cwd\": \"sub\"\n    }\n  }\n}\n";
        std::fs::write(home.join(".cursor/mcp.json"), original).unwrap();
        let opts = options(&home, &project, true);
        let plan = plan(&opts, &[Client::Cursor]).unwrap();
        assert_eq!(plan.outcomes[0].registration, "added");
        assert_eq!(plan.outcomes[0].disabled, ["time"]);
        assert_eq!(plan.changes.len(), 2, "{plan:?}");
        let cursor = edit::parse_json(&plan.changes[0].after).unwrap();
        assert_eq!(cursor["mcpServers"]["time"]["disabled"], true);
        assert_eq!(
            cursor["mcpServers"]["code-executor"]["command"],
            "/opt/bin/code-executor"
        );
        let ours = edit::parse_json(&plan.changes[1].after).unwrap();
        assert_eq!(ours["mcpServers"]["time"]["command"], "uvx");
        assert!(ours["mcpServers"]["time"].get("disabled").is_none());
        assert_eq!(
            ours["mcpServers"]["time"]["cwd"],
            home.join(".cursor/sub").to_string_lossy().as_ref()
        );
        assert!(
            plan.changes[0].diff().contains("+      \"disabled\": true"),
            "{}",
            plan.changes[0].diff()
        );

        // Applied, then planned again: nothing left to do.
        let written = apply(&plan, "test").unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(
            std::fs::read_to_string(written[0].backup.as_ref().unwrap()).unwrap(),
            original
        );
        assert!(written[1].backup.is_none());
        let again = super::plan(&opts, &[Client::Cursor]).unwrap();
        assert!(again.is_empty(), "{again:?}");
        assert_eq!(again.outcomes[0].registration, "already registered");
    }

    #[test]
    fn claude_desktop_has_no_project_scope() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = options(tmp.path(), tmp.path(), false);
        opts.scope = Some(Scope::Project);
        let err = plan(&opts, &[Client::ClaudeDesktop]).unwrap_err();
        assert!(err.to_string().contains("Claude Desktop"), "{err}");
    }

    #[test]
    fn disable_others_skips_what_the_client_already_lists_off() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, project) = (tmp.path().join("home"), tmp.path().join("project"));
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let key = serde_json::to_string(&project.to_string_lossy()).unwrap();
        std::fs::write(
            home.join(".claude.json"),
            format!(
                r#"{{"mcpServers": {{"u": {{"command": "u"}}, "v": {{"command": "v"}}}},
                    "projects": {{{key}: {{"disabledMcpServers": ["v"], "disabledMcpjsonServers": ["u"]}}}}}}"#
            ),
        )
        .unwrap();
        std::fs::write(
            home.join(".claude/settings.json"),
            r#"{"disabledMcpjsonServers": ["s"]}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".mcp.json"),
            r#"{"mcpServers": {"s": {"command": "s"}, "t": {"command": "t"}}}"#,
        )
        .unwrap();
        std::fs::write(
            home.join(".gemini/settings.json"),
            r#"{"mcp": {"allowed": ["a"]}, "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}"#,
        )
        .unwrap();
        let opts = options(&home, &project, true);
        let plan = plan(&opts, &[Client::ClaudeCode, Client::Gemini]).unwrap();
        let disabled: Vec<_> = plan.outcomes.iter().map(|o| o.disabled.clone()).collect();
        // Claude Code's `disabledMcpjsonServers` (also from its settings files) counts for
        // `.mcp.json` only; Gemini CLI's `mcp.allowed` already leaves `b` out.
        assert_eq!(disabled, [vec!["t", "u"], vec!["a"]]);
        let ours = plan
            .changes
            .iter()
            .find(|c| c.path == opts.servers_file)
            .unwrap();
        let ours = edit::parse_json(&ours.after).unwrap();
        let copied: Vec<_> = ours["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(copied, ["a", "t", "u"]);
    }
}
