//! The MCP clients `setup` knows: where each keeps its MCP servers (the same files discovery
//! reads, plus Codex's and Gemini CLI's), how an entry is written there, and how the client
//! itself switches a server off. Reads files; never writes them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::edit::{self, EditError, TomlDoc};
use crate::clients::dialects::{self, Dialect};

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

impl Places {
    /// Claude Desktop's config: the macOS location if it exists, else the Linux one.
    fn claude_desktop(&self) -> PathBuf {
        let mac = self
            .home
            .join("Library/Application Support/Claude/claude_desktop_config.json");
        if mac.exists() {
            mac
        } else {
            self.home.join(".config/Claude/claude_desktop_config.json")
        }
    }

    fn vscode_user(&self) -> PathBuf {
        let mac = self.home.join("Library/Application Support/Code/User");
        if mac.exists() {
            mac.join("mcp.json")
        } else {
            self.home.join(".config/Code/User/mcp.json")
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
            (Client::Vscode, Scope::User) => json(self.vscode_user(), "servers", "user"),
            (Client::Vscode, Scope::Project) => {
                json(p.join(".vscode/mcp.json"), "servers", "workspace")
            }
            (Client::ClaudeDesktop, Scope::User) => {
                json(self.claude_desktop(), "mcpServers", "user")
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
            Client::Vscode => vec![p.join(".vscode"), self.vscode_user()],
            Client::ClaudeDesktop => vec![self.claude_desktop()],
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
    /// The definition, as JSON (TOML tables converted).
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
        Layout::Toml => TomlDoc::parse(&text).map_err(err)?.tables("mcp_servers"),
    };
    Ok(map
        .into_iter()
        .map(|(name, definition)| {
            let disabled = definition.get("disabled") == Some(&Value::Bool(true))
                || definition.get("enabled") == Some(&Value::Bool(false));
            let is_self = name == self_name || launches(&definition, self_name);
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

/// Whether a definition's command is this program.
fn launches(definition: &Value, self_name: &str) -> bool {
    let Some(command) = definition.get("command").and_then(Value::as_str) else {
        return false;
    };
    let base = command.rsplit(['/', '\\']).next().unwrap_or(command);
    base.trim_end_matches(".exe") == self_name
}

/// Names switched off through lists rather than on the entry: Claude Code's
/// `disabledMcpServers` / `disabledMcpjsonServers` and Gemini CLI's `mcp.excluded`.
pub fn listed_off(places: &Places, client: Client) -> Vec<String> {
    let read = |p: &Path| {
        read_text(p)
            .ok()
            .flatten()
            .and_then(|t| edit::parse_json(&t).ok())
    };
    let names = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    match client {
        Client::ClaudeCode => {
            if let Some(root) = read(&places.home.join(".claude.json")) {
                out.extend(names(root.get("disabledMcpServers")));
                let key = places.claude_project_key(Some(&root));
                if let Some(project) = root.get("projects").and_then(|p| p.get(&key)) {
                    out.extend(names(project.get("disabledMcpServers")));
                    out.extend(names(project.get("disabledMcpjsonServers")));
                }
            }
        }
        Client::Gemini => {
            for p in [
                places.home.join(".gemini/settings.json"),
                places.project.join(".gemini/settings.json"),
            ] {
                if let Some(root) = read(&p) {
                    out.extend(names(root.get("mcp").and_then(|m| m.get("excluded"))));
                    out.extend(names(root.get("excludeMCPServers")));
                }
            }
        }
        _ => {}
    }
    out
}

/// A definition rewritten for the server's own servers file: in the standard form (see
/// [`dialects`]: Codex's `http_headers`/`bearer_token_env_var`, Gemini's `httpUrl`/`$VAR`), the
/// switch-off fields and Codex's timeouts and tool filters dropped, and a relative `cwd` made
/// absolute against the file it came from.
pub fn portable(entry: &Entry) -> Value {
    let definition = entry.definition.as_object().cloned().unwrap_or_default();
    let mut def = dialects::standard_form(Dialect::of_file(&entry.file.path), &definition);
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

    fn entry(path: &str, layout: Layout, definition: Value) -> Entry {
        Entry {
            name: "x".into(),
            definition,
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
