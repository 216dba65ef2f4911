//! Tests of `setup`: planning and applying edits (`plan`), and the view of each client it
//! works from (`clients`: targets, files, detection, entries, lists, self detection), and
//! switching servers off by moving them out, with the backups (`switch_off`).

mod clients;
mod switch_off;

use std::path::{Path, PathBuf};

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
        approvals: Approvals::everything(),
    }
}

/// Cursor has no switch of its own in `mcp.json` (it ignores `"disabled": true`): the entry
/// moves out of Cursor's file into this server's servers file.
#[test]
fn cursor_plan_registers_moves_out_and_copies() {
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
    assert!(cursor["mcpServers"].get("time").is_none(), "{cursor}");
    assert!(!plan.changes[0].after.contains("disabled"));
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
        plan.changes[0].diff().contains("-    \"time\": {"),
        "{}",
        plan.changes[0].diff()
    );

    // Applied, then planned again: nothing left to do.
    let backups = tmp.path().join("state/backups");
    let (written, run) = apply(&plan, &backups, "test").unwrap();
    assert_eq!(written.len(), 2);
    assert_eq!(run, backups.join("test"));
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
    assert_eq!(copied, ["a", "u"]);
    // `.mcp.json`'s server is this project's only.
    let root = project
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let here: Vec<_> = ours["projects"][&root]["mcpServers"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(here, ["t"]);
}

#[test]
fn a_projects_servers_are_kept_for_that_project_and_unapproved_ones_are_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, project) = (tmp.path().join("home"), tmp.path().join("project"));
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let key = serde_json::to_string(&project.to_string_lossy()).unwrap();
    std::fs::write(
        home.join(".claude.json"),
        format!(
            r#"{{"mcpServers": {{"u": {{"command": "u"}}}},
                "projects": {{{key}: {{"mcpServers": {{"l": {{"command": "l"}}}},
                                      "enabledMcpjsonServers": ["m"]}}}}}}"#
        ),
    )
    .unwrap();
    std::fs::write(
        project.join(".mcp.json"),
        r#"{"mcpServers": {"m": {"command": "m"}, "x": {"command": "x"}}}"#,
    )
    .unwrap();
    let mut opts = options(&home, &project, true);
    let places = opts.places.clone();
    opts.approvals = Approvals::load(
        &places,
        &Default::default(),
        &home.join(".config/code-executor/approvals.json"),
    );
    let plan = plan(&opts, &[Client::ClaudeCode]).unwrap();
    assert_eq!(plan.outcomes[0].disabled, ["l", "m", "u"]);
    assert_eq!(plan.outcomes[0].needs_approval, ["x"]);
    let text = |path: &Path| {
        let change = plan.changes.iter().find(|c| c.path == path).unwrap();
        edit::parse_json(&change.after).unwrap()
    };
    let ours = text(&opts.servers_file);
    let global: Vec<_> = ours["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(global, ["u"], "{ours:#}");
    let root = project
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let here: Vec<_> = ours["projects"][&root]["mcpServers"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(here, ["l", "m"], "{ours:#}");
    let claude = text(&home.join(".claude.json"));
    let entry = &claude["projects"][project.to_string_lossy().as_ref()];
    assert_eq!(entry["disabledMcpjsonServers"], serde_json::json!(["m"]));
    assert_eq!(entry["disabledMcpServers"], serde_json::json!(["u", "l"]));
}

#[test]
fn apply_writes_through_a_symlinked_config_and_keeps_the_link() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, project) = (tmp.path().join("home"), tmp.path().join("project"));
    let dotfiles = tmp.path().join("dotfiles");
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let original = "{\"mcpServers\": {}}\n";
    std::fs::write(dotfiles.join("mcp.json"), original).unwrap();
    let link = home.join(".cursor/mcp.json");
    std::os::unix::fs::symlink(dotfiles.join("mcp.json"), &link).unwrap();
    let plan = plan(&options(&home, &project, false), &[Client::Cursor]).unwrap();
    let (written, _) = apply(&plan, &tmp.path().join("backups"), "test").unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let now = std::fs::read_to_string(dotfiles.join("mcp.json")).unwrap();
    assert!(now.contains("code-executor"), "{now}");
    let backup = written[0].backup.as_ref().unwrap();
    assert_eq!(
        backup.parent(),
        Some(tmp.path().join("backups/test").as_path())
    );
    assert_eq!(std::fs::read_to_string(backup).unwrap(), original);
}
