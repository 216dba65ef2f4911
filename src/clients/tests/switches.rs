//! What switches a server off: flags on the entry, the clients' lists, and this server's own
//! entries.

use super::*;

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
    // Claude Code ignores these flags and loads the server: it stays off here, and says so.
    let ignored = |flag: &str| {
        format!(
            "{flag} (Claude Code ignores it and still loads the server; `code-executor setup --disable-others` switches it off there)"
        )
    };
    assert_eq!(disabled(&d, "off").reason, ignored("\"disabled\": true"));
    assert_eq!(
        disabled(&d, "not-enabled").reason,
        ignored("\"enabled\": false")
    );
    assert_eq!(
        disabled(&d, "off-and-broken").reason,
        ignored("\"disabled\": true")
    );
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
    // Skipped without a word: the entry is the one `setup` writes.
    assert!(d.warnings.is_empty(), "{:#?}", d.warnings);
    assert_eq!(d.skipped_self.len(), 9, "{:#?}", d.skipped_self);
    assert!(
        d.skipped_self
            .iter()
            .any(|s| s.name == "via-uvx" && s.hit.contains("code-executor")),
        "{:#?}",
        d.skipped_self
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
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.skipped_self.len(), 1);
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
fn an_entry_named_like_this_server_is_skipped() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"code-executor": {"command": "/opt/ce-wrapper", "args": ["serve"]}}}"#,
    );
    let d = fx.discover();
    assert!(d.servers.is_empty());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.skipped_self.len(), 1, "{:?}", d.skipped_self);
    assert_eq!(d.skipped_self[0].hit, "name \"code-executor\"");
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
