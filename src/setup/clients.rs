//! The MCP clients `setup` knows: where each keeps its MCP servers (the same files discovery
//! reads, plus Codex's and Gemini CLI's), how an entry is written there, and how the client
//! itself switches a server off. Reads files; never writes them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::edit::{self, EditError, TomlDoc};
use crate::clients::dialects::{self, Dialect};
use crate::clients::discovery;

/// A client `setup` can register this server with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Client {
    ClaudeCode,
    Cursor,
    Vscode,
    ClaudeDesktop,
    Codex,
    Gemini,
}

impl Client {
    pub const ALL: [Client; 6] = [
        Client::ClaudeCode,
        Client::Cursor,
        Client::Vscode,
        Client::ClaudeDesktop,
        Client::Codex,
        Client::Gemini,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
        }
    }

    /// The command-line name (`--client`).
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// Where the client registers servers by default.
    pub fn default_scope(self) -> Scope {
        match self {
            Client::Vscode => Scope::Project,
            _ => Scope::User,
        }
    }
}

/// Register for the user (every project) or for the current project only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    User,
    Project,
}

/// How a file stores its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// A JSON object at this key path.
    Json(Vec<String>),
    /// TOML tables under `[mcp_servers]`.
    Toml,
}

/// One file holding servers of a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFile {
    pub path: PathBuf,
    pub layout: Layout,
    /// A short description, e.g. "user scope".
    pub scope_label: String,
}

/// Where home and project are. Tests pass temporary directories.
#[derive(Debug, Clone)]
pub struct Places {
    pub home: PathBuf,
    pub project: PathBuf,
}

const CLAUDE_DESKTOP: [&str; 2] = [
    ".config/Claude/claude_desktop_config.json",
    "Library/Application Support/Claude/claude_desktop_config.json",
];
const VSCODE_USER: [&str; 2] = [
    ".config/Code/User/mcp.json",
    "Library/Application Support/Code/User/mcp.json",
];

impl Places {
    /// Where to register in a file that has a Linux and a macOS location: the macOS one when
    /// its directory exists, else the Linux one.
    fn linux_or_mac(&self, [linux, mac]: [&str; 2]) -> PathBuf {
        let mac = self.home.join(mac);
        if mac.parent().is_some_and(Path::exists) {
            mac
        } else {
            self.home.join(linux)
        }
    }

    /// The key of this project in `~/.claude.json`'s `projects`: an existing key for it, else
    /// the physical path (what Claude Code uses).
    pub fn claude_project_key(&self, claude_json: Option<&Value>) -> String {
        let mut candidates = vec![self.project.to_string_lossy().into_owned()];
        if let Ok(abs) = std::path::absolute(&self.project) {
            candidates.push(abs.to_string_lossy().into_owned());
        }
        let canonical = std::fs::canonicalize(&self.project)
            .unwrap_or_else(|_| self.project.clone())
            .to_string_lossy()
            .into_owned();
        candidates.push(canonical.clone());
        if let Some(projects) = claude_json
            .and_then(|v| v.get("projects"))
            .and_then(Value::as_object)
        {
            for c in &candidates {
                for key in [c.as_str(), c.trim_end_matches('/')] {
                    if projects.contains_key(key) {
                        return key.to_string();
                    }
                }
            }
        }
        canonical
    }

    /// The file where `client` registers servers in `scope`, and how.
    pub fn target(&self, client: Client, scope: Scope) -> Option<ServerFile> {
        let json = |path: PathBuf, key: &str, label: &str| ServerFile {
            path,
            layout: Layout::Json(vec![key.to_string()]),
            scope_label: label.to_string(),
        };
        let (h, p) = (&self.home, &self.project);
        Some(match (client, scope) {
            (Client::ClaudeCode, Scope::User) => {
                json(h.join(".claude.json"), "mcpServers", "user scope")
            }
            (Client::ClaudeCode, Scope::Project) => {
                json(p.join(".mcp.json"), "mcpServers", "project scope")
            }
            (Client::Cursor, Scope::User) => {
                json(h.join(".cursor/mcp.json"), "mcpServers", "global")
            }
            (Client::Cursor, Scope::Project) => {
                json(p.join(".cursor/mcp.json"), "mcpServers", "project")
            }
            (Client::Vscode, Scope::User) => {
                json(self.linux_or_mac(VSCODE_USER), "servers", "user")
            }
            (Client::Vscode, Scope::Project) => {
                json(p.join(".vscode/mcp.json"), "servers", "workspace")
            }
            (Client::ClaudeDesktop, Scope::User) => {
                json(self.linux_or_mac(CLAUDE_DESKTOP), "mcpServers", "user")
            }
            (Client::ClaudeDesktop, Scope::Project) => return None,
            (Client::Codex, Scope::User) => ServerFile {
                path: h.join(".codex/config.toml"),
                layout: Layout::Toml,
                scope_label: "user".into(),
            },
            (Client::Codex, Scope::Project) => ServerFile {
                path: p.join(".codex/config.toml"),
                layout: Layout::Toml,
                scope_label: "project".into(),
            },
            (Client::Gemini, Scope::User) => {
                json(h.join(".gemini/settings.json"), "mcpServers", "user")
            }
            (Client::Gemini, Scope::Project) => {
                json(p.join(".gemini/settings.json"), "mcpServers", "project")
            }
        })
    }

    /// Every file whose servers `client` loads in this project, lowest precedence first.
    pub fn server_files(&self, client: Client) -> Vec<ServerFile> {
        let mut files: Vec<ServerFile> = [Scope::User, Scope::Project]
            .into_iter()
            .filter_map(|s| self.target(client, s))
            .collect();
        // Both locations of a user file that has a Linux and a macOS one.
        let both = match client {
            Client::ClaudeDesktop => Some(CLAUDE_DESKTOP),
            Client::Vscode => Some(VSCODE_USER),
            _ => None,
        };
        if let Some(both) = both {
            let user = files.remove(0);
            for rel in both.iter().rev() {
                files.insert(
                    0,
                    ServerFile {
                        path: self.home.join(rel),
                        ..user.clone()
                    },
                );
            }
        }
        if client == Client::ClaudeCode {
            // Local scope: this project's entry in ~/.claude.json.
            let claude = self.home.join(".claude.json");
            let root = read_text(&claude)
                .ok()
                .flatten()
                .and_then(|t| edit::parse_json(&t).ok());
            let key = self.claude_project_key(root.as_ref());
            files.insert(
                1,
                ServerFile {
                    path: claude,
                    layout: Layout::Json(vec!["projects".into(), key, "mcpServers".into()]),
                    scope_label: "local scope".into(),
                },
            );
        }
        files
    }

    /// Whether the client looks installed or configured here.
    pub fn detected(&self, client: Client) -> bool {
        let (h, p) = (&self.home, &self.project);
        let marks: Vec<PathBuf> = match client {
            Client::ClaudeCode => vec![
                h.join(".claude.json"),
                h.join(".claude"),
                p.join(".mcp.json"),
            ],
            Client::Cursor => vec![h.join(".cursor"), p.join(".cursor/mcp.json")],
            Client::Vscode => vec![
                p.join(".vscode"),
                h.join(VSCODE_USER[0]),
                h.join(VSCODE_USER[1]),
            ],
            Client::ClaudeDesktop => vec![h.join(CLAUDE_DESKTOP[0]), h.join(CLAUDE_DESKTOP[1])],
            Client::Codex => vec![h.join(".codex"), p.join(".codex/config.toml")],
            Client::Gemini => vec![h.join(".gemini"), p.join(".gemini/settings.json")],
        };
        marks.iter().any(|m| m.exists())
    }
}

/// One server entry as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub name: String,
    /// The definition in the standard form (TOML tables converted, see [`dialects`]).
    pub definition: Value,
    pub file: ServerFile,
    /// Switched off in the client itself.
    pub disabled: bool,
    /// It launches code-executor.
    pub is_self: bool,
}

/// A file that exists but cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot parse {}: {source}", .path.display())]
pub struct ReadError {
    pub path: PathBuf,
    #[source]
    pub source: EditError,
}

/// `Ok(None)` when the file does not exist.
pub fn read_text(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Ok(None),
        Err(e) => Err(e),
    }
}

/// The servers of one file (none when it does not exist).
pub fn entries(file: &ServerFile, self_name: &str) -> Result<Vec<Entry>, ReadError> {
    let text = match read_text(&file.path) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => {
            return Err(ReadError {
                path: file.path.clone(),
                source: EditError::Shape(e.to_string()),
            });
        }
    };
    let err = |source| ReadError {
        path: file.path.clone(),
        source,
    };
    let map: Vec<(String, Value)> = match &file.layout {
        Layout::Json(path) => {
            let root = edit::parse_json(&text).map_err(err)?;
            let mut v = &root;
            for key in path {
                match v.get(key) {
                    Some(next) => v = next,
                    None => return Ok(Vec::new()),
                }
            }
            match v {
                Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                Value::Null => Vec::new(),
                _ => {
                    return Err(err(EditError::Shape(format!(
                        "\"{}\" must be an object",
                        path.join(".")
                    ))));
                }
            }
        }
        Layout::Toml => {
            let doc = TomlDoc::parse(&text).map_err(err)?;
            if !doc.is_table_or_missing("mcp_servers") {
                return Err(err(EditError::Shape(
                    "\"mcp_servers\" must be an object".into(),
                )));
            }
            doc.tables("mcp_servers")
        }
    };
    let dialect = Dialect::of_file(&file.path);
    let self_names = [self_name.to_owned()];
    Ok(map
        .into_iter()
        .map(|(name, definition)| {
            let definition = match definition {
                Value::Object(d) => Value::Object(dialects::standard_form(dialect, &d)),
                other => other,
            };
            let disabled = definition.get("disabled") == Some(&Value::Bool(true))
                || definition.get("enabled") == Some(&Value::Bool(false));
            let is_self = definition
                .as_object()
                .and_then(|d| discovery::self_entry(&name, d, &self_names))
                .is_some()
                || name == self_name;
            Entry {
                name,
                definition,
                file: file.clone(),
                disabled,
                is_self,
            }
        })
        .collect())
}

/// Servers a client switches off through lists rather than on the entry: Claude Code's
/// `disabledMcpServers` (every scope) and `disabledMcpjsonServers` (`.mcp.json` only, also from
/// `~/.claude/settings.json` and the project's `.claude/settings.json` and
/// `.claude/settings.local.json`), and Gemini CLI's `mcp.excluded` and `mcp.allowed` (either
/// settings file's lists apply to both files' servers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedOff {
    /// Off in every file of the client.
    pub everywhere: Vec<String>,
    /// Off in `.mcp.json` only.
    pub mcpjson: Vec<String>,
    /// Allow lists: a server missing from one is off.
    pub allowed: Vec<Vec<String>>,
    /// The project's `.mcp.json`.
    mcpjson_path: PathBuf,
}

impl ListedOff {
    /// Whether the client switches `entry` off through a list.
    pub fn off(&self, entry: &Entry) -> bool {
        self.everywhere.contains(&entry.name)
            || (entry.file.path == self.mcpjson_path && self.mcpjson.contains(&entry.name))
            || self.allowed.iter().any(|a| !a.contains(&entry.name))
    }
}

pub fn listed_off(places: &Places, client: Client) -> ListedOff {
    let read = |p: &Path| {
        read_text(p)
            .ok()
            .flatten()
            .and_then(|t| edit::parse_json(&t).ok())
    };
    let names = |v: Option<&Value>| -> Option<Vec<String>> {
        v.and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
    };
    let mut out = ListedOff {
        mcpjson_path: places.project.join(".mcp.json"),
        ..ListedOff::default()
    };
    match client {
        Client::ClaudeCode => {
            if let Some(root) = read(&places.home.join(".claude.json")) {
                out.everywhere
                    .extend(names(root.get("disabledMcpServers")).unwrap_or_default());
                let key = places.claude_project_key(Some(&root));
                if let Some(project) = root.get("projects").and_then(|p| p.get(&key)) {
                    out.everywhere
                        .extend(names(project.get("disabledMcpServers")).unwrap_or_default());
                    out.mcpjson
                        .extend(names(project.get("disabledMcpjsonServers")).unwrap_or_default());
                }
            }
            for p in [
                places.home.join(".claude/settings.json"),
                places.project.join(".claude/settings.json"),
                places.project.join(".claude/settings.local.json"),
            ] {
                if let Some(root) = read(&p) {
                    out.mcpjson
                        .extend(names(root.get("disabledMcpjsonServers")).unwrap_or_default());
                }
            }
        }
        Client::Gemini => {
            for p in [
                places.home.join(".gemini/settings.json"),
                places.project.join(".gemini/settings.json"),
            ] {
                if let Some(root) = read(&p) {
                    for at in ["/mcp/excluded", "/excludeMCPServers"] {
                        out.everywhere
                            .extend(names(root.pointer(at)).unwrap_or_default());
                    }
                    let allowed: Vec<Option<Vec<String>>> = ["/mcp/allowed", "/allowMCPServers"]
                        .iter()
                        .map(|at| names(root.pointer(at)))
                        .collect();
                    if allowed.iter().any(Option::is_some) {
                        out.allowed
                            .push(allowed.into_iter().flatten().flatten().collect());
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// A definition rewritten for the server's own servers file: already in the standard form (see
/// [`dialects`]: Codex's `http_headers`/`bearer_token_env_var`, Gemini's `httpUrl`/`$VAR`), with
/// the switch-off fields and Codex's timeouts and tool filters dropped, and a relative `cwd`
/// made absolute against the file it came from.
pub fn portable(entry: &Entry) -> Value {
    let definition = entry.definition.as_object().cloned().unwrap_or_default();
    let mut def = definition;
    for key in [
        "disabled",
        "enabled",
        "startup_timeout_sec",
        "tool_timeout_sec",
        "enabled_tools",
        "disabled_tools",
    ] {
        def.remove(key);
    }
    if let Some(Value::String(cwd)) = def.get("cwd")
        && !cwd.is_empty()
        && !cwd.starts_with('$')
        && Path::new(cwd).is_relative()
        && let Some(dir) = entry.file.path.parent()
    {
        let abs = dir.join(cwd).to_string_lossy().into_owned();
        def.insert("cwd".into(), abs.into());
    }
    Value::Object(def)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An entry as `entries` reads it: the definition in the file's dialect, made standard.
    fn entry(path: &str, layout: Layout, definition: Value) -> Entry {
        let dialect = Dialect::of_file(Path::new(path));
        Entry {
            name: "x".into(),
            definition: Value::Object(dialects::standard_form(
                dialect,
                definition.as_object().unwrap(),
            )),
            file: ServerFile {
                path: PathBuf::from(path),
                layout,
                scope_label: String::new(),
            },
            disabled: true,
            is_self: false,
        }
    }

    #[test]
    fn portable_definitions() {
        let gemini = entry(
            "/h/.gemini/settings.json",
            Layout::Json(vec!["mcpServers".into()]),
            json!({"httpUrl": "https://x.example/mcp", "headers": {"Authorization": "Bearer $TOKEN", "X": "${A} $ 5$"}, "trust": true}),
        );
        assert_eq!(
            portable(&gemini),
            json!({"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X": "${A} $ 5$"}, "trust": true})
        );
        let codex = entry(
            "/h/.codex/config.toml",
            Layout::Toml,
            json!({"url": "https://f.example/mcp", "bearer_token_env_var": "TOK", "enabled": false, "startup_timeout_sec": 20}),
        );
        assert_eq!(
            portable(&codex),
            json!({"type": "http", "url": "https://f.example/mcp", "headers": {"Authorization": "Bearer ${TOK}"}})
        );
        let cursor = entry(
            "/h/.cursor/mcp.json",
            Layout::Json(vec!["mcpServers".into()]),
            json!({"command": "node", "cwd": "srv", "disabled": true}),
        );
        assert_eq!(
            portable(&cursor),
            json!({"command": "node", "cwd": "/h/.cursor/srv"})
        );
    }
}

/// What `setup` sees today, pinned client by client: where each client keeps its servers,
/// which entries it reads, what it counts as switched off, and what it takes for itself.
#[cfg(test)]
mod pins {
    use super::*;
    use std::fs;

    struct World {
        _tmp: tempfile::TempDir,
        places: Places,
    }

    impl World {
        fn new() -> Self {
            let tmp = tempfile::tempdir().unwrap();
            let home = tmp.path().join("home");
            let project = tmp.path().join("project");
            fs::create_dir_all(&home).unwrap();
            fs::create_dir_all(&project).unwrap();
            World {
                _tmp: tmp,
                places: Places { home, project },
            }
        }

        fn home(&self, rel: &str, text: &str) -> PathBuf {
            write(&self.places.home.join(rel), text)
        }

        fn project(&self, rel: &str, text: &str) -> PathBuf {
            write(&self.places.project.join(rel), text)
        }

        fn dir(&self, path: PathBuf) {
            fs::create_dir_all(path).unwrap();
        }

        /// A path as `~/...` or `<p>/...`.
        fn show(&self, path: &Path) -> String {
            if let Ok(rest) = path.strip_prefix(&self.places.project) {
                format!("<p>/{}", rest.display())
            } else if let Ok(rest) = path.strip_prefix(&self.places.home) {
                format!("~/{}", rest.display())
            } else {
                path.display().to_string()
            }
        }

        /// A server file as `path | key.path | label` (`toml` for TOML tables).
        fn file(&self, f: &ServerFile) -> String {
            let at = match &f.layout {
                Layout::Json(keys) => keys
                    .iter()
                    .map(|k| {
                        if k.starts_with('/') {
                            "<key>".to_string()
                        } else {
                            k.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("."),
                Layout::Toml => "toml mcp_servers".into(),
            };
            format!("{} | {at} | {}", self.show(&f.path), f.scope_label)
        }

        fn target(&self, client: Client, scope: Scope) -> Option<String> {
            self.places.target(client, scope).map(|f| self.file(&f))
        }

        fn files(&self, client: Client) -> Vec<String> {
            self.places
                .server_files(client)
                .iter()
                .map(|f| self.file(f))
                .collect()
        }

        /// Every entry `client` has here: `name` with `(off)` and `(self)` marks.
        fn entries(&self, client: Client) -> Vec<String> {
            let off = listed_off(&self.places, client);
            let mut out = Vec::new();
            for file in self.places.server_files(client) {
                for e in entries(&file, "code-executor").unwrap() {
                    let mut s = e.name.clone();
                    if e.disabled {
                        s.push_str(" (flag)");
                    }
                    if off.off(&e) {
                        s.push_str(" (listed)");
                    }
                    if e.is_self {
                        s.push_str(" (self)");
                    }
                    out.push(s);
                }
            }
            out
        }

        /// The lists: `everywhere | .mcp.json only | allow lists`.
        fn listed(&self, client: Client) -> String {
            let mut l = listed_off(&self.places, client);
            l.everywhere.sort();
            l.mcpjson.sort();
            format!("{:?} | {:?} | {:?}", l.everywhere, l.mcpjson, l.allowed)
        }
    }

    fn write(path: &Path, text: &str) -> PathBuf {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        path.to_owned()
    }

    fn is_self(definition: Value) -> bool {
        let file = ServerFile {
            path: PathBuf::from("/nowhere/mcp.json"),
            layout: Layout::Json(vec!["mcpServers".into()]),
            scope_label: String::new(),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        fs::write(
            &path,
            serde_json::to_string(&serde_json::json!({"mcpServers": {"x": definition}})).unwrap(),
        )
        .unwrap();
        let file = ServerFile { path, ..file };
        entries(&file, "code-executor").unwrap()[0].is_self
    }

    #[test]
    fn targets_per_client_and_scope() {
        let w = World::new();
        let t = |c, s| w.target(c, s);
        assert_eq!(
            t(Client::ClaudeCode, Scope::User).unwrap(),
            "~/.claude.json | mcpServers | user scope"
        );
        assert_eq!(
            t(Client::ClaudeCode, Scope::Project).unwrap(),
            "<p>/.mcp.json | mcpServers | project scope"
        );
        assert_eq!(
            t(Client::Cursor, Scope::User).unwrap(),
            "~/.cursor/mcp.json | mcpServers | global"
        );
        assert_eq!(
            t(Client::Cursor, Scope::Project).unwrap(),
            "<p>/.cursor/mcp.json | mcpServers | project"
        );
        assert_eq!(
            t(Client::Vscode, Scope::User).unwrap(),
            "~/.config/Code/User/mcp.json | servers | user"
        );
        assert_eq!(
            t(Client::Vscode, Scope::Project).unwrap(),
            "<p>/.vscode/mcp.json | servers | workspace"
        );
        assert_eq!(
            t(Client::ClaudeDesktop, Scope::User).unwrap(),
            "~/.config/Claude/claude_desktop_config.json | mcpServers | user"
        );
        assert_eq!(t(Client::ClaudeDesktop, Scope::Project), None);
        assert_eq!(
            t(Client::Codex, Scope::User).unwrap(),
            "~/.codex/config.toml | toml mcp_servers | user"
        );
        assert_eq!(
            t(Client::Codex, Scope::Project).unwrap(),
            "<p>/.codex/config.toml | toml mcp_servers | project"
        );
        assert_eq!(
            t(Client::Gemini, Scope::User).unwrap(),
            "~/.gemini/settings.json | mcpServers | user"
        );
        assert_eq!(
            t(Client::Gemini, Scope::Project).unwrap(),
            "<p>/.gemini/settings.json | mcpServers | project"
        );
        let defaults: Vec<_> = Client::ALL.iter().map(|c| c.default_scope()).collect();
        assert_eq!(
            defaults,
            [
                Scope::User,
                Scope::User,
                Scope::Project,
                Scope::User,
                Scope::User,
                Scope::User
            ]
        );
    }

    #[test]
    fn macos_locations_are_chosen_when_present() {
        let w = World::new();
        w.dir(w.places.home.join("Library/Application Support/Code/User"));
        assert_eq!(
            w.target(Client::Vscode, Scope::User).unwrap(),
            "~/Library/Application Support/Code/User/mcp.json | servers | user"
        );
        // The macOS directory is enough, as for VS Code.
        w.dir(w.places.home.join("Library/Application Support/Claude"));
        assert_eq!(
            w.target(Client::ClaudeDesktop, Scope::User).unwrap(),
            "~/Library/Application Support/Claude/claude_desktop_config.json | mcpServers | user"
        );
    }

    #[test]
    fn ids_and_labels() {
        let ids: Vec<_> = Client::ALL.iter().map(|c| c.id()).collect();
        assert_eq!(
            ids,
            [
                "claude-code",
                "cursor",
                "vscode",
                "claude-desktop",
                "codex",
                "gemini"
            ]
        );
        for c in Client::ALL {
            use clap::ValueEnum;
            assert_eq!(c.to_possible_value().unwrap().get_name(), c.id());
        }
        let labels: Vec<_> = Client::ALL.iter().map(|c| c.label()).collect();
        assert_eq!(
            labels,
            [
                "Claude Code",
                "Cursor",
                "VS Code",
                "Claude Desktop",
                "Codex",
                "Gemini CLI"
            ]
        );
    }

    #[test]
    fn server_files_lowest_precedence_first() {
        let w = World::new();
        assert_eq!(
            w.files(Client::ClaudeCode),
            [
                "~/.claude.json | mcpServers | user scope",
                "~/.claude.json | projects.<key>.mcpServers | local scope",
                "<p>/.mcp.json | mcpServers | project scope",
            ]
        );
        assert_eq!(
            w.files(Client::Cursor),
            [
                "~/.cursor/mcp.json | mcpServers | global",
                "<p>/.cursor/mcp.json | mcpServers | project",
            ]
        );
        assert_eq!(
            w.files(Client::Vscode),
            [
                "~/.config/Code/User/mcp.json | servers | user",
                "~/Library/Application Support/Code/User/mcp.json | servers | user",
                "<p>/.vscode/mcp.json | servers | workspace",
            ]
        );
        assert_eq!(
            w.files(Client::Codex),
            [
                "~/.codex/config.toml | toml mcp_servers | user",
                "<p>/.codex/config.toml | toml mcp_servers | project",
            ]
        );
        assert_eq!(
            w.files(Client::Gemini),
            [
                "~/.gemini/settings.json | mcpServers | user",
                "<p>/.gemini/settings.json | mcpServers | project",
            ]
        );
        // Claude Desktop: both locations, as discovery reads them.
        assert_eq!(
            w.files(Client::ClaudeDesktop),
            [
                "~/.config/Claude/claude_desktop_config.json | mcpServers | user",
                "~/Library/Application Support/Claude/claude_desktop_config.json | mcpServers | user"
            ]
        );
    }

    #[test]
    fn detection_marks() {
        let detected = |w: &World| -> Vec<&str> {
            Client::ALL
                .iter()
                .filter(|&&c| w.places.detected(c))
                .map(|c| c.id())
                .collect()
        };
        let w = World::new();
        assert!(detected(&w).is_empty());
        let cases: &[(&str, bool, &str)] = &[
            (".claude.json", false, "claude-code"),
            (".claude/x", false, "claude-code"),
            (".mcp.json", true, "claude-code"),
            (".cursor/x", false, "cursor"),
            (".cursor/mcp.json", true, "cursor"),
            (".vscode/x", true, "vscode"),
            (".config/Code/User/mcp.json", false, "vscode"),
            (
                "Library/Application Support/Code/User/mcp.json",
                false,
                "vscode",
            ),
            (
                ".config/Claude/claude_desktop_config.json",
                false,
                "claude-desktop",
            ),
            (
                "Library/Application Support/Claude/claude_desktop_config.json",
                false,
                "claude-desktop",
            ),
            (".codex/x", false, "codex"),
            (".codex/config.toml", true, "codex"),
            (".gemini/x", false, "gemini"),
            (".gemini/settings.json", true, "gemini"),
        ];
        for (rel, in_project, id) in cases {
            let w = World::new();
            if *in_project {
                w.project(rel, "{}");
            } else {
                w.home(rel, "{}");
            }
            assert_eq!(detected(&w), [*id], "{rel}");
        }
        // Neither a project's .claude directory nor ~/.vscode counts.
        let w = World::new();
        w.project(".claude/settings.json", "{}");
        w.home(".vscode/x", "{}");
        w.home(".config/Claude/other.json", "{}");
        assert!(detected(&w).is_empty(), "{:?}", detected(&w));
    }

    #[test]
    fn claude_project_key() {
        let w = World::new();
        let project = w.places.project.to_string_lossy().into_owned();
        let canonical = fs::canonicalize(&w.places.project)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // No ~/.claude.json, or no entry: the physical path.
        assert_eq!(w.places.claude_project_key(None), canonical);
        let none = serde_json::json!({"projects": {"/elsewhere": {}}});
        assert_eq!(w.places.claude_project_key(Some(&none)), canonical);
        // An existing entry, also with a trailing slash or through a link.
        let root = serde_json::json!({"projects": {project.clone(): {}}});
        assert_eq!(w.places.claude_project_key(Some(&root)), project);
        let slashed = Places {
            home: w.places.home.clone(),
            project: PathBuf::from(format!("{project}/")),
        };
        assert_eq!(slashed.claude_project_key(Some(&root)), project);
        #[cfg(unix)]
        {
            let link = w.places.home.join("link");
            std::os::unix::fs::symlink(&w.places.project, &link).unwrap();
            let linked = Places {
                home: w.places.home.clone(),
                project: link.clone(),
            };
            let physical = serde_json::json!({"projects": {canonical.clone(): {}}});
            assert_eq!(linked.claude_project_key(Some(&physical)), canonical);
            assert_eq!(linked.claude_project_key(None), canonical);
        }
    }

    #[test]
    fn claude_code_entries_and_lists() {
        let w = World::new();
        let key = serde_json::to_string(&w.places.project.to_string_lossy()).unwrap();
        w.home(
            ".claude.json",
            &format!(
                r#"{{
  "disabledMcpServers": ["b"],
  "mcpServers": {{ "b": {{"command": "b"}}, "a": {{"command": "a", "disabled": true}},
                   "u": {{"command": "u"}}, "code-executor": {{"command": "/opt/wrapper"}} }},
  "projects": {{ {key}: {{
      "mcpServers": {{ "local": {{"command": "l"}} }},
      "disabledMcpServers": ["local"],
      "disabledMcpjsonServers": ["rejected", "u"]
  }}, "/other": {{ "disabledMcpServers": ["elsewhere"] }} }}
}}"#
            ),
        );
        w.project(
            ".mcp.json",
            r#"{"mcpServers": {"rejected": {"command": "r"}, "settings-off": {"command": "s"},
                              "me": {"command": "/usr/bin/code-executor"}}}"#,
        );
        w.home(
            ".claude/settings.json",
            r#"{"disabledMcpjsonServers": ["settings-off"]}"#,
        );
        w.project(
            ".claude/settings.local.json",
            r#"{"disabledMcpjsonServers": ["settings-off"]}"#,
        );
        assert_eq!(
            w.entries(Client::ClaudeCode),
            [
                "a (flag)",
                "b (listed)",
                "code-executor (self)",
                "u",
                "local (listed)",
                "me (self)",
                "rejected (listed)",
                "settings-off (listed)",
            ]
        );
        assert_eq!(
            w.listed(Client::ClaudeCode),
            r#"["b", "local"] | ["rejected", "settings-off", "settings-off", "u"] | []"#
        );
    }

    #[test]
    fn gemini_entries_and_lists() {
        let w = World::new();
        w.home(
            ".gemini/settings.json",
            r#"{"mcp": {"excluded": ["x"], "allowed": ["x", "y"]}, "excludeMCPServers": ["z"],
                "mcpServers": {"x": {"command": "x"}, "y": {"httpUrl": "https://y.example/mcp"}, "w": {"command": "w"}}}"#,
        );
        w.project(
            ".gemini/settings.json",
            r#"{"allowMCPServers": ["p"], "mcp": {"excluded": ["p2"]},
                "mcpServers": {"p": {"command": "p"}, "p2": {"command": "p2"}, "z": {"command": "z"}}}"#,
        );
        // Both files' lists apply to both files' servers; an allow list leaves out what it
        // does not name, so here nothing is left.
        assert_eq!(
            w.entries(Client::Gemini),
            [
                "w (listed)",
                "x (listed)",
                "y (listed)",
                "p (listed)",
                "p2 (listed)",
                "z (listed)"
            ]
        );
        assert_eq!(
            w.listed(Client::Gemini),
            r#"["p2", "x", "z"] | [] | [["x", "y"], ["p"]]"#
        );
        assert_eq!(w.listed(Client::Cursor), "[] | [] | []");
        w.home(
            ".gemini/settings.json",
            r#"{"mcp": {"excluded": ["x"]}, "mcpServers": {"x": {"command": "x"}, "y": {"command": "y"}, "w": {"command": "w"}}}"#,
        );
        w.project(
            ".gemini/settings.json",
            r#"{"mcp": {"allowed": ["p", "w", "x"]}, "mcpServers": {"p": {"command": "p"}}}"#,
        );
        assert_eq!(
            w.entries(Client::Gemini),
            ["w", "x (listed)", "y (listed)", "p"]
        );
    }

    #[test]
    fn codex_entries_keep_the_file_order_and_read_enabled() {
        let w = World::new();
        w.home(
            ".codex/config.toml",
            "model = \"m\"\n[mcp_servers.zeta]\ncommand = \"z\"\n[mcp_servers.alpha]\nurl = \"https://a.example/mcp\"\nenabled = false\n[mcp_servers.me]\ncommand = 'C:\\bin\\code-executor.exe'\n",
        );
        assert_eq!(
            w.entries(Client::Codex),
            ["zeta", "alpha (flag)", "me (self)"]
        );
        let file = w.places.target(Client::Codex, Scope::User).unwrap();
        let all = entries(&file, "code-executor").unwrap();
        // The definition in the standard form.
        assert_eq!(
            all[1].definition,
            serde_json::json!({"type": "http", "url": "https://a.example/mcp", "enabled": false})
        );
        // `mcp_servers` that is not a table is an error, as in a JSON file.
        w.home(".codex/config.toml", "mcp_servers = 5\n");
        let err = entries(&file, "code-executor").unwrap_err().to_string();
        assert!(err.contains("\"mcp_servers\" must be an object"), "{err}");
    }

    #[test]
    fn json_entries_are_sorted_by_name_and_shapes_are_checked() {
        let w = World::new();
        w.home(
            ".cursor/mcp.json",
            "\u{feff}// comment\n{\"mcpServers\": {\"b\": {\"command\": \"b\"}, \"a\": {\"command\": \"a\"},}}",
        );
        assert_eq!(w.entries(Client::Cursor), ["a", "b"]);
        // Missing file, empty file, missing key, null key: no entries.
        let empty = w.project(".cursor/mcp.json", "  ");
        assert_eq!(w.entries(Client::Cursor), ["a", "b"]);
        for text in ["{}", "{\"mcpServers\": null}", "{\"other\": 1}"] {
            fs::write(&empty, text).unwrap();
            assert_eq!(w.entries(Client::Cursor), ["a", "b"], "{text}");
        }
        // The wrong shape and a syntax error are errors naming the file.
        fs::write(&empty, "{\"mcpServers\": []}").unwrap();
        let file = w.places.target(Client::Cursor, Scope::Project).unwrap();
        let err = entries(&file, "code-executor").unwrap_err().to_string();
        assert!(
            err.contains(".cursor/mcp.json") && err.contains("\"mcpServers\" must be an object"),
            "{err}"
        );
        fs::write(
            &empty,
            "{\n  \"mcpServers\": {\n    \"a\": {} \"b\": {}\n  }\n}",
        )
        .unwrap();
        let err = entries(&file, "code-executor").unwrap_err().to_string();
        assert!(err.contains("line 3, column"), "{err}");
        fs::write(&empty, "[]").unwrap();
        let err = entries(&file, "code-executor").unwrap_err().to_string();
        assert!(err.contains("expected an object at the top level"), "{err}");
        // Claude Code's local scope: a project entry that is not an object reads as empty.
        w.home(
            ".claude.json",
            &format!(
                "{{\"projects\": {{{}: 5}}}}",
                serde_json::to_string(&w.places.project.to_string_lossy()).unwrap()
            ),
        );
        assert!(w.entries(Client::ClaudeCode).is_empty());
    }

    #[test]
    fn self_detection() {
        use serde_json::json;
        assert!(is_self(json!({"command": "/usr/local/bin/code-executor"})));
        assert!(is_self(
            json!({"command": "code-executor.exe", "args": ["serve"]})
        ));
        assert!(is_self(json!({"command": r"C:\tools\code-executor.exe"})));
        assert!(!is_self(json!({"command": "code-executor-helper"})));
        assert!(!is_self(
            json!({"command": "node", "args": ["code-executor"]})
        ));
        assert!(!is_self(json!({"url": "https://x.example/code-executor"})));
        // Discovery's rules: other extensions, any case, package runners.
        assert!(is_self(json!({"command": "code-executor.cmd"})));
        assert!(is_self(json!({"command": "Code-Executor"})));
        assert!(is_self(
            json!({"command": "npx", "args": ["-y", "code-executor@latest"]})
        ));
        assert!(is_self(
            json!({"command": "uvx", "args": ["--from", "code-executor", "ce"]})
        ));
        assert!(!is_self(
            json!({"command": "npx", "args": ["-y", "other", "code-executor"]})
        ));
    }

    #[test]
    fn the_registered_entry_counts_as_self_by_name() {
        let w = World::new();
        w.home(
            ".cursor/mcp.json",
            r#"{"mcpServers": {"code-executor": {"command": "/opt/ce-wrapper", "args": ["serve"]}}}"#,
        );
        assert_eq!(w.entries(Client::Cursor), ["code-executor (self)"]);
    }
}
