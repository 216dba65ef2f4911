//! The one reader: raw entries as each file has them (standard form, switch, self verdict, file
//! order), key paths through Claude Code's project entry, and the lists with their reasons.

use super::*;
use crate::clients::parse;
use crate::clients::places::{Layout, Places, ServerFile};
use crate::clients::read::{self, Lists, RawEntry};
use crate::clients::table::{Client, Format};

fn places(fx: &Fixture) -> Places {
    Places {
        home: fx.home.clone(),
        project: fx.project.clone(),
    }
}

#[test]
fn raw_entries_in_the_standard_form_with_their_switch_and_self_verdict() {
    let fx = Fixture::new();
    let path = fx.home_file(
        ".codex/config.toml",
        "[mcp_servers.zeta]\nurl = \"https://z.example/mcp\"\nbearer_token_env_var = \"T\"\nenabled = false\n\n[mcp_servers.alpha]\ncommand = \"npx\"\nargs = [\"-y\", \"code-executor\"]\n\n[mcp_servers.code-executor]\ncommand = \"/opt/wrapper\"\n",
    );
    let file = places(&fx)
        .server_files(Client::Codex)
        .into_iter()
        .next()
        .unwrap();
    assert_eq!(file.path, path);
    assert_eq!(file.layout, Layout::Toml("mcp_servers".into()));
    let raw = read::entries(&file, &["code-executor".to_owned()]).unwrap();
    let names: Vec<_> = raw.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["zeta", "alpha", "code-executor"],
        "the file's order"
    );
    assert_eq!(
        raw[0].definition,
        serde_json::json!({"type": "http", "url": "https://z.example/mcp", "headers": {"Authorization": "Bearer ${T}"}, "enabled": false})
    );
    assert_eq!(raw[0].flag_off, Some("\"enabled\": false"));
    assert_eq!(raw[0].self_hit, None);
    assert_eq!(
        raw[1].self_hit.as_deref(),
        Some("npx package \"code-executor\"")
    );
    assert_eq!(raw[2].self_hit.as_deref(), Some("name \"code-executor\""));
    let not_object = RawEntry::new("s", &serde_json::json!("npx server"), &file, &[]);
    assert_eq!((not_object.flag_off, not_object.self_hit), (None, None));
}

#[test]
fn claude_project_entry_key_paths() {
    let fx = Fixture::new();
    fx.claude_json("{}", r#", "mcpServers": { "local": { "command": "x" } }"#);
    let p = places(&fx);
    let files = p.server_files(Client::ClaudeCode);
    assert_eq!(
        files[1].layout,
        Layout::Json(vec![
            "projects".into(),
            fx.project_str(),
            "mcpServers".into()
        ])
    );
    let raw = read::entries(&files[1], &[]).unwrap();
    assert_eq!(raw.len(), 1);
    assert_eq!(raw[0].file.kind, SourceKind::ClaudeCodeLocal);
    // Without an entry for the project, the physical path (what Claude Code writes).
    fs::remove_file(fx.home.join(".claude.json")).unwrap();
    let key = fs::canonicalize(&fx.project).unwrap();
    assert_eq!(
        p.server_files(Client::ClaudeCode)[1].layout,
        Layout::Json(vec![
            "projects".into(),
            key.to_string_lossy().into_owned(),
            "mcpServers".into()
        ])
    );
}

#[test]
fn walking_stops_at_what_is_not_an_object() {
    let fx = Fixture::new();
    let path = fx.home_file(
        ".claude.json",
        &format!(
            r#"{{"projects": {{ {}: null }}, "mcp": 3}}"#,
            serde_json::to_string(&fx.project_str()).unwrap()
        ),
    );
    let parsed = parse::read_config(&path, Format::Jsonc).unwrap().unwrap();
    let at = crate::clients::table::row(SourceKind::ClaudeCodeLocal).servers[0];
    let keys = places(&fx).key_path(at, Some(&parsed.root));
    let stuck = read::walk(&parsed.root, at, &keys).unwrap_err();
    assert_eq!(
        read::stuck_message(at, &keys, stuck, &path),
        format!(
            "ignoring this project's entry in {}: expected an object, found null",
            path.display()
        )
    );
}

#[test]
fn lists_with_their_reasons() {
    let fx = Fixture::new();
    let claude = fx.claude_json(
        "{}",
        r#", "disabledMcpServers": ["off-everywhere"], "disabledMcpjsonServers": ["rejected"]"#,
    );
    let gemini = fx.project_file(
        ".gemini/settings.json",
        r#"{"mcp": {"allowed": ["kept"]}, "excludeMCPServers": ["old-style"]}"#,
    );
    let p = places(&fx);
    let claude_lists = Lists::of_client(&p, Client::ClaudeCode);
    assert_eq!(
        claude_lists.off(SourceKind::CursorGlobal, "off-everywhere"),
        Some(format!(
            "listed in \"disabledMcpServers\" in {}",
            claude.display()
        ))
    );
    assert_eq!(
        claude_lists.off(SourceKind::ClaudeCodeUser, "rejected"),
        None
    );
    assert!(
        claude_lists
            .off(SourceKind::ClaudeCodeProject, "rejected")
            .is_some()
    );
    let gemini_lists = Lists::of_client(&p, Client::Gemini);
    assert_eq!(
        gemini_lists.off(SourceKind::GeminiUser, "old-style"),
        Some(format!(
            "listed in \"mcp.excluded\" in {}",
            gemini.display()
        ))
    );
    assert_eq!(
        gemini_lists.off(SourceKind::GeminiUser, "other"),
        Some(format!("not in \"mcp.allowed\" in {}", gemini.display()))
    );
    assert_eq!(gemini_lists.off(SourceKind::GeminiProject, "kept"), None);
    assert_eq!(gemini_lists.off(SourceKind::CursorProject, "other"), None);
}

#[test]
fn a_list_of_the_wrong_type_is_a_warning_naming_its_spelling() {
    let fx = Fixture::new();
    let path = fx.home_file(
        ".gemini/settings.json",
        r#"{"excludeMCPServers": "x", "mcp": {"allowed": 1}, "mcpServers": {"x": {"command": "x"}}}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["x"]);
    assert_eq!(
        d.warnings,
        [
            format!(
                "ignoring \"excludeMCPServers\" in {}: expected an array of names, found a string",
                path.display()
            ),
            format!(
                "ignoring \"mcp.allowed\" in {}: expected an array of names, found a number",
                path.display()
            ),
        ]
    );
}

#[test]
fn a_broken_file_named_by_mcp_config_path_is_an_error_though_read_before() {
    let fx = Fixture::new();
    let path = fx.home_file(".cursor/mcp.json", "{\n  \"mcpServers\": {,\n}");
    let mut inputs = fx.inputs();
    inputs.explicit = Some(path.clone());
    let err = discover(&inputs).unwrap_err();
    assert!(matches!(err, DiscoveryError::Parse { .. }), "{err:?}");
    inputs.explicit = Some(fx.home.join("missing.json"));
    assert!(matches!(
        discover(&inputs).unwrap_err(),
        DiscoveryError::NotFound { .. }
    ));
}

#[test]
fn setup_reads_what_discovery_reads() {
    // Every file discovery reads for a client is one of the client's server files in setup.
    let fx = Fixture::new();
    let p = places(&fx);
    let written: Vec<ServerFile> = Client::ALL
        .iter()
        .flat_map(|&c| p.server_files(c))
        .collect();
    for file in &written {
        let text = match file.layout {
            Layout::Toml(_) => "[mcp_servers.s]\ncommand = \"s\"\n".to_owned(),
            Layout::Json(ref keys) => {
                let mut v = serde_json::json!({"s": {"command": "s"}});
                for k in keys.iter().rev() {
                    v = serde_json::json!({ k.clone(): v });
                }
                v.to_string()
            }
        };
        fx.write(&file.path, &text);
        let d = fx.discover();
        assert_eq!(
            d.servers.iter().map(|s| &s.source.path).collect::<Vec<_>>(),
            [&file.path],
            "{file:?}"
        );
        assert_eq!(d.servers[0].source.kind, file.kind);
        fs::remove_file(&file.path).unwrap();
    }
    assert_eq!(written.len(), 16);
}
