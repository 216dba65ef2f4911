//! Servers a project brings: pending until approved, never usable before; who may approve
//! them (Claude Code's lists and settings, Codex's and Gemini CLI's folder trust,
//! `code-executor trust`'s records by fingerprint), and this server's own servers file
//! keeping a project's servers to that project.

use super::*;
use crate::clients::approval::{ApprovalsFile, Record};
use crate::clients::brought;

impl Fixture {
    fn approvals_path(&self) -> PathBuf {
        self.home.join(".config/code-executor/approvals.json")
    }

    /// The merge and the gate with the approvals found under this fixture's home.
    fn gated(&self) -> Discovery {
        let inputs = self.inputs();
        let mut found = super::super::discovery::discover(&inputs).unwrap();
        let approvals = Approvals::load(&inputs.places(), &inputs.env, &self.approvals_path());
        approval::gate(&mut found, &approvals);
        found
    }
}

fn waiting(d: &Discovery) -> Vec<&str> {
    d.needs_approval().map(|p| p.name.as_str()).collect()
}

fn approver<'d>(d: &'d Discovery, name: &str) -> &'d str {
    d.project_servers
        .iter()
        .find(|p| p.name == name)
        .and_then(|p| p.approved_by.as_deref())
        .unwrap_or_else(|| panic!("{name} is not approved: {d:#?}"))
}

const TWO: &str = r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}"#;

#[test]
fn a_projects_own_servers_wait_for_the_gate_and_nothing_approves_them_by_default() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"mine": {"command": "mine"}}}"#,
    );
    for file in [
        ".mcp.json",
        ".cursor/mcp.json",
        ".codex/config.toml",
        ".gemini/settings.json",
    ] {
        let text = if file.ends_with(".toml") {
            "[mcp_servers.codex-one]\ncommand = \"x\"\n".to_owned()
        } else {
            let name = file.trim_start_matches('.').replace(['/', '.'], "-");
            format!(r#"{{"mcpServers": {{"{name}": {{"command": "x"}}}}}}"#)
        };
        fx.project_file(file, &text);
    }
    fx.project_file(
        ".vscode/mcp.json",
        r#"{"servers": {"vscode-one": {"command": "x"}}}"#,
    );
    // The merge alone makes none of them usable.
    let merged = super::super::discovery::discover(&fx.inputs()).unwrap();
    assert_eq!(names(&merged), ["mine"]);
    assert_eq!(merged.pending.len(), 5);
    // The gate with nothing approved keeps them out and says how to approve each.
    let d = fx.gated();
    assert_eq!(names(&d), ["mine"]);
    assert!(d.pending.is_empty());
    assert_eq!(
        waiting(&d),
        [
            "codex-one",
            "cursor-mcp-json",
            "gemini-settings-json",
            "mcp-json",
            "vscode-one"
        ]
    );
    let one = d.needs_approval().next().unwrap();
    let message = one.needs_approval();
    assert!(
        message.starts_with("needs approval: run `code-executor trust codex-one` in "),
        "{message}"
    );
    assert_eq!(one.project, fx.project.canonicalize().unwrap());
}

#[test]
fn claude_code_approvals_in_its_own_files_are_honoured_and_disabling_wins() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}}}"#,
    );
    fx.claude_json(
        "{}",
        r#", "enabledMcpjsonServers": ["a", "c"], "disabledMcpjsonServers": ["c"]"#,
    );
    let d = fx.gated();
    assert_eq!(names(&d), ["a"]);
    assert!(approver(&d, "a").contains("enabledMcpjsonServers"));
    assert_eq!(waiting(&d), ["b"]);
    assert!(disabled(&d, "c").reason.contains("disabledMcpjsonServers"));

    // enableAllProjectMcpServers in the user's settings approves every `.mcp.json` server...
    fx.home_file(
        ".claude/settings.json",
        r#"{"enableAllProjectMcpServers": true}"#,
    );
    let d = fx.gated();
    assert_eq!(names(&d), ["a", "b"]);
    assert!(approver(&d, "b").contains("enableAllProjectMcpServers"));
    // ...but not the servers of another client's project file.
    fx.project_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"cursor-one": {"command": "x"}}}"#,
    );
    assert_eq!(waiting(&fx.gated()), ["cursor-one"]);
}

#[test]
fn a_projects_own_claude_settings_approve_only_once_claude_code_trusts_the_folder() {
    let fx = Fixture::new();
    fx.project_file(".mcp.json", TWO);
    fx.project_file(
        ".claude/settings.json",
        r#"{"enableAllProjectMcpServers": true}"#,
    );
    fx.project_file(
        ".claude/settings.local.json",
        r#"{"enabledMcpjsonServers": ["a"]}"#,
    );
    // No entry for the project in ~/.claude.json: the repository approves nothing itself.
    assert_eq!(waiting(&fx.gated()), ["a", "b"]);
    let key = serde_json::to_string(&fx.project_str()).unwrap();
    fx.home_file(
        ".claude.json",
        &format!(r#"{{"projects": {{{key}: {{"hasTrustDialogAccepted": false}}}}}}"#),
    );
    assert_eq!(waiting(&fx.gated()), ["a", "b"]);
    // Trust accepted for a parent folder is not trust for this one.
    let parent = serde_json::to_string(&fx.project.parent().unwrap().to_string_lossy()).unwrap();
    fx.home_file(
        ".claude.json",
        &format!(r#"{{"projects": {{{parent}: {{"hasTrustDialogAccepted": true}}}}}}"#),
    );
    assert_eq!(waiting(&fx.gated()), ["a", "b"]);
    fx.home_file(
        ".claude.json",
        &format!(r#"{{"projects": {{{key}: {{"hasTrustDialogAccepted": true}}}}}}"#),
    );
    let d = fx.gated();
    assert_eq!(names(&d), ["a", "b"]);
    assert!(approver(&d, "a").contains("settings.local.json"), "{d:#?}");
    assert!(
        approver(&d, "b").contains(".claude/settings.json"),
        "{d:#?}"
    );
}

#[test]
fn codex_and_gemini_folder_trust_approve_their_own_project_files() {
    let fx = Fixture::new();
    fx.project_file(
        ".codex/config.toml",
        "[mcp_servers.codex-one]\ncommand = \"x\"\n",
    );
    fx.project_file(
        ".gemini/settings.json",
        r#"{"mcpServers": {"gemini-one": {"command": "x"}}}"#,
    );
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"claude-one": {"command": "x"}}}"#,
    );
    let project = fx.project_str();
    fx.home_file(
        ".codex/config.toml",
        &format!("[projects.{project:?}]\ntrust_level = \"untrusted\"\n"),
    );
    assert_eq!(
        waiting(&fx.gated()),
        ["claude-one", "codex-one", "gemini-one"]
    );
    fx.home_file(
        ".codex/config.toml",
        &format!("[projects.{project:?}]\ntrust_level = \"trusted\"\n"),
    );
    let d = fx.gated();
    assert!(approver(&d, "codex-one").starts_with("Codex"));
    assert_eq!(waiting(&d), ["claude-one", "gemini-one"]);

    // Gemini CLI: the longest rule covering the folder decides; TRUST_PARENT names a folder
    // inside the one it trusts.
    let parent = fx.project.parent().unwrap().to_string_lossy().into_owned();
    let sibling = format!("{parent}/s");
    let rules = |pairs: &[(&str, &str)]| {
        let map: serde_json::Map<String, serde_json::Value> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).into()))
            .collect();
        serde_json::Value::Object(map).to_string()
    };
    fx.home_file(
        ".gemini/trustedFolders.json",
        &rules(&[(&sibling, "TRUST_PARENT")]),
    );
    assert!(approver(&fx.gated(), "gemini-one").starts_with("Gemini CLI"));
    fx.home_file(
        ".gemini/trustedFolders.json",
        &rules(&[(&sibling, "TRUST_PARENT"), (&project, "DO_NOT_TRUST")]),
    );
    assert_eq!(waiting(&fx.gated()), ["claude-one", "gemini-one"]);
    fx.home_file(
        ".gemini/trustedFolders.json",
        &rules(&[(&sibling, "TRUST_FOLDER")]),
    );
    assert_eq!(waiting(&fx.gated()), ["claude-one", "gemini-one"]);
    fx.home_file(
        ".gemini/trustedFolders.json",
        &rules(&[(&parent, "DO_NOT_TRUST"), (&project, "TRUST_FOLDER")]),
    );
    assert!(approver(&fx.gated(), "gemini-one").contains("TRUST_FOLDER"));
}

#[test]
fn a_trust_record_approves_one_definition_and_a_changed_one_needs_approval_again() {
    let fx = Fixture::new();
    fx.project_file(
        ".vscode/mcp.json",
        r#"{"servers": {"tool": {"command": "python", "args": ["tool.py"]}}}"#,
    );
    let d = fx.gated();
    let fingerprint = d.project_servers[0].fingerprint.clone();
    let record = |name: &str, project: &str| Record {
        project: project.to_owned(),
        name: name.to_owned(),
        fingerprint: fingerprint.clone(),
        source: String::new(),
        approved_at: String::new(),
    };
    let root = fx
        .project
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let file = ApprovalsFile {
        approvals: vec![record("tool", "/elsewhere"), record("other-name", &root)],
        ..ApprovalsFile::default()
    };
    fx.write(&fx.approvals_path(), &file.to_text());
    assert_eq!(
        waiting(&fx.gated()),
        ["tool"],
        "another project or name approves nothing"
    );
    let mut file = file;
    file.approvals.push(record("tool", &root));
    fx.write(&fx.approvals_path(), &file.to_text());
    let d = fx.gated();
    assert_eq!(names(&d), ["tool"]);
    assert!(approver(&d, "tool").contains("code-executor trust"));

    // The same name launching something else is another definition.
    fx.project_file(
        ".vscode/mcp.json",
        r#"{"servers": {"tool": {"command": "python", "args": ["tool.py"], "env": {"LD_PRELOAD": "/tmp/x.so"}}}}"#,
    );
    assert_eq!(waiting(&fx.gated()), ["tool"]);
    // Fields that launch nothing do not matter.
    fx.project_file(
        ".vscode/mcp.json",
        r#"{"servers": {"tool": {"args": ["tool.py"], "command": "python", "description": "a tool"}}}"#,
    );
    assert!(waiting(&fx.gated()).is_empty());
}

#[test]
fn an_unusable_approvals_file_approves_nothing_and_says_so() {
    let fx = Fixture::new();
    fx.project_file(".mcp.json", TWO);
    fx.write(&fx.approvals_path(), "{\"version\": 1, \"approvals\": [");
    let d = fx.gated();
    assert_eq!(waiting(&d), ["a", "b"]);
    assert!(
        d.warnings.iter().any(|w| w.contains("approvals.json")),
        "{:?}",
        d.warnings
    );
    fx.write(&fx.approvals_path(), r#"{"version": 9, "approvals": []}"#);
    assert!(fx.gated().warnings.iter().any(|w| w.contains("version 9")));
}

#[test]
fn an_unapproved_project_server_hides_a_global_one_of_the_same_name() {
    // The name is the repository's now; what runs under it must be approved first.
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"git": {"command": "my-git-mcp"}}}"#,
    );
    fx.project_file(".mcp.json", r#"{"mcpServers": {"git": {"command": "sh"}}}"#);
    let d = fx.gated();
    assert!(d.servers.is_empty(), "{d:#?}");
    assert_eq!(waiting(&d), ["git"]);
    assert_eq!(d.overridden.len(), 1);
}

#[test]
fn the_own_servers_file_keeps_a_projects_servers_to_that_project() {
    let fx = Fixture::new();
    let own = fx.home.join(".config/code-executor/servers.json");
    let key = serde_json::to_string(&fx.project_str()).unwrap();
    fx.write(
        &own,
        &format!(
            r#"{{"mcpServers": {{"everywhere": {{"command": "e"}}}},
               "projects": {{{key}: {{"mcpServers": {{"here": {{"command": "h"}}}}}},
                            "/some/other/project": {{"mcpServers": {{"there": {{"command": "t"}}}}}}}}}}"#
        ),
    );
    // A pending server of the same name is replaced by the user's own copy.
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"here": {"command": "sh"}}}"#,
    );
    let inputs = fx.inputs();
    let mut d = fx.gated();
    crate::clients::servers_file::merge_into(&mut d, &inputs, &own).unwrap();
    assert_eq!(names(&d), ["everywhere", "here"]);
    assert_eq!(
        server(&d, "here").transport,
        stdio("h", &[]),
        "the copy in the servers file wins"
    );
    assert!(d.project_servers.is_empty(), "{d:#?}");
    assert_eq!(d.overridden.len(), 1);

    // In another project only the user's servers are there.
    let elsewhere = fx.project.parent().unwrap().join("other");
    fs::create_dir_all(&elsewhere).unwrap();
    let inputs = DiscoveryInputs {
        project_dir: elsewhere,
        ..fx.inputs()
    };
    let mut d = super::super::discovery::discover(&inputs).unwrap();
    crate::clients::servers_file::merge_into(&mut d, &inputs, &own).unwrap();
    assert_eq!(names(&d), ["everywhere"]);
}

#[test]
fn fingerprints_are_taken_from_the_definition_as_written() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"TOKEN": "${GITHUB_TOKEN}"}}}}"#,
    );
    let d = fx.gated();
    let expected = brought::fingerprint(
        &serde_json::json!({"command": "gh-mcp", "env": {"TOKEN": "${GITHUB_TOKEN}"}}),
    );
    assert_eq!(d.project_servers[0].fingerprint, expected);
    // What `trust` shows names the variable, not its value.
    assert_eq!(
        d.project_servers[0].launch,
        ["runs: gh-mcp", "env: 'TOKEN=${GITHUB_TOKEN}'"]
    );
}
