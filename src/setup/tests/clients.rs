//! What `setup` sees of each client, pinned: where it registers, which files it reads, what
//! marks a client as used here, Claude Code's project key, the entries it reads (file order,
//! switches, this server's own entries), the lists it honours, and the copy for this server's
//! own servers file.

use serde_json::{Value, json};

use super::*;
use crate::clients::SourceKind;
use crate::clients::read::RawEntry;
use crate::setup::clients::{entries, portable};

/// An entry as `entries` reads it from `path` (a file of `kind`).
fn entry(kind: SourceKind, path: &str, layout: Layout, definition: Value) -> Entry {
    let file = ServerFile {
        kind,
        path: PathBuf::from(path),
        layout,
    };
    RawEntry::new("x", &definition, &file, &[])
}

#[test]
fn portable_definitions() {
    let gemini = entry(
        SourceKind::GeminiUser,
        "/h/.gemini/settings.json",
        Layout::Json(vec!["mcpServers".into()]),
        json!({"httpUrl": "https://x.example/mcp", "headers": {"Authorization": "Bearer $TOKEN", "X": "${A} $ 5$"}, "trust": true}),
    );
    assert_eq!(
        portable(&gemini),
        json!({"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X": "${A} $ 5$"}, "trust": true})
    );
    let codex = entry(
        SourceKind::CodexUser,
        "/h/.codex/config.toml",
        Layout::Toml("mcp_servers".into()),
        json!({"url": "https://f.example/mcp", "bearer_token_env_var": "TOK", "enabled": false, "startup_timeout_sec": 20}),
    );
    assert_eq!(
        portable(&codex),
        json!({"type": "http", "url": "https://f.example/mcp", "headers": {"Authorization": "Bearer ${TOK}"}, "disabled": true}),
        "an entry off in its file stays off in the copy"
    );
    let cursor = entry(
        SourceKind::CursorGlobal,
        "/h/.cursor/mcp.json",
        Layout::Json(vec!["mcpServers".into()]),
        json!({"command": "node", "cwd": "srv", "disabled": true}),
    );
    assert_eq!(
        portable(&cursor),
        json!({"command": "node", "cwd": "/h/.cursor/srv", "disabled": true}),
        "Cursor ignores the flag, this server keeps the server off as discovery did"
    );
}
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
            Layout::Toml(table) => format!("toml {table}"),
        };
        format!("{} | {at} | {}", self.show(&f.path), f.scope_label())
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
        let lists = Lists::of_client(&self.places, client);
        let mut out = Vec::new();
        for file in self.places.server_files(client) {
            for e in entries(&file).unwrap() {
                let mut s = e.name.clone();
                if e.flag_off.is_some() {
                    s.push_str(" (flag)");
                }
                if lists.off(e.file.kind, &e.name).is_some() {
                    s.push_str(" (listed)");
                }
                if e.self_hit.is_some() {
                    s.push_str(" (self)");
                }
                out.push(s);
            }
        }
        out
    }

    /// The lists: `every file | .mcp.json only | allow lists`.
    fn listed(&self, client: Client) -> String {
        Lists::of_client(&self.places, client).summary()
    }
}

/// Claude Code's key for the project, given `~/.claude.json`.
fn key(places: &Places, root: Option<&Value>) -> String {
    places.project_key(
        root.and_then(|r| r.get("projects"))
            .and_then(Value::as_object),
    )
}

fn write(path: &Path, text: &str) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    path.to_owned()
}

fn is_self(definition: Value) -> bool {
    let file = ServerFile {
        kind: SourceKind::CursorGlobal,
        path: PathBuf::from("/nowhere/mcp.json"),
        layout: Layout::Json(vec!["mcpServers".into()]),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    fs::write(
        &path,
        serde_json::to_string(&serde_json::json!({"mcpServers": {"x": definition}})).unwrap(),
    )
    .unwrap();
    let file = ServerFile { path, ..file };
    entries(&file).unwrap()[0].self_hit.is_some()
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
            "~/.config/Code - Insiders/User/mcp.json | servers | user",
            "~/Library/Application Support/Code - Insiders/User/mcp.json | servers | user",
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
    assert_eq!(key(&w.places, None), canonical);
    let none = serde_json::json!({"projects": {"/elsewhere": {}}});
    assert_eq!(key(&w.places, Some(&none)), canonical);
    // An existing entry, also with a trailing slash or through a link.
    let root = serde_json::json!({"projects": {project.clone(): {}}});
    assert_eq!(key(&w.places, Some(&root)), project);
    let slashed = Places {
        home: w.places.home.clone(),
        project: PathBuf::from(format!("{project}/")),
    };
    assert_eq!(key(&slashed, Some(&root)), project);
    #[cfg(unix)]
    {
        let link = w.places.home.join("link");
        std::os::unix::fs::symlink(&w.places.project, &link).unwrap();
        let linked = Places {
            home: w.places.home.clone(),
            project: link.clone(),
        };
        let physical = serde_json::json!({"projects": {canonical.clone(): {}}});
        assert_eq!(key(&linked, Some(&physical)), canonical);
        assert_eq!(key(&linked, None), canonical);
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
    let all = entries(&file).unwrap();
    // The definition in the standard form.
    assert_eq!(
        all[1].definition,
        serde_json::json!({"type": "http", "url": "https://a.example/mcp", "enabled": false})
    );
    // `mcp_servers` that is not a table is an error, as in a JSON file.
    w.home(".codex/config.toml", "mcp_servers = 5\n");
    let err = entries(&file).unwrap_err().to_string();
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
    let err = entries(&file).unwrap_err().to_string();
    assert!(
        err.contains(".cursor/mcp.json") && err.contains("\"mcpServers\" must be an object"),
        "{err}"
    );
    fs::write(
        &empty,
        "{\n  \"mcpServers\": {\n    \"a\": {} \"b\": {}\n  }\n}",
    )
    .unwrap();
    let err = entries(&file).unwrap_err().to_string();
    assert!(err.contains("line 3, column"), "{err}");
    fs::write(&empty, "[]").unwrap();
    let err = entries(&file).unwrap_err().to_string();
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
