//! One entry per server: the same server configured under several names (in several clients)
//! folds into one, under the shortest name, the others its aliases; anything that launches
//! differently stays separate, and a project's unapproved servers are never folded.

use super::*;
use crate::clients::aliases::{self, Aliases};

impl Fixture {
    /// Discovery as `serve` sees it: the merge, the gate (approving nothing the user has not),
    /// then the fold.
    fn folded(&self) -> Discovery {
        let inputs = self.inputs();
        let mut found = super::super::discovery::discover(&inputs).unwrap();
        let none = self.home.join("no-approvals.json");
        approval::gate(
            &mut found,
            &Approvals::load(&inputs.places(), &inputs.env, &none),
        );
        found.aliases = aliases::fold(&mut found.servers);
        found
    }
}

const GIT: &str =
    r#"{"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_TOKEN": "${GITHUB_TOKEN}"}}"#;

fn alias_names(a: &Aliases, canonical: &str) -> Vec<String> {
    a.names_of(canonical)
}

/// The newcomer's git server: Claude Code calls it `git-server`, Cursor `git`, VS Code
/// `mcp-git`; the token written literally in one file and as `${GITHUB_TOKEN}` in the others.
#[test]
fn one_server_in_three_clients_is_one_entry_with_two_aliases() {
    let fx = Fixture::new();
    fx.home_file(
        ".claude.json",
        &format!(r#"{{"mcpServers": {{"git-server": {GIT}}}}}"#),
    );
    fx.home_file(
        ".cursor/mcp.json",
        &format!(r#"{{"mcpServers": {{"git": {GIT}}}}}"#),
    );
    let literal = GIT.replace("${GITHUB_TOKEN}", "ghp_test123");
    fx.home_file(
        ".config/Code/User/mcp.json",
        &format!(r#"{{"servers": {{"mcp-git": {literal}, "time": {{"command": "uvx", "args": ["mcp-server-time"]}}}}}}"#),
    );
    let d = fx.folded();
    assert_eq!(names(&d), ["git", "time"]);
    assert_eq!(server(&d, "git").source.kind, SourceKind::CursorGlobal);
    assert_eq!(alias_names(&d.aliases, "git"), ["git-server", "mcp-git"]);
    let kinds: Vec<SourceKind> = d.aliases.of("git").iter().map(|a| a.source.kind).collect();
    assert_eq!(kinds, [SourceKind::ClaudeCodeUser, SourceKind::VsCodeUser]);
    assert_eq!(d.aliases.canonical("mcp-git"), "git");
    assert_eq!(d.aliases.canonical("git"), "git");
    assert_eq!(d.aliases.canonical("time"), "time");
    assert!(d.aliases.of("time").is_empty());
    // What reports print of aliases never holds the launch details (the token).
    assert!(!format!("{:?}", d.aliases).contains("ghp_test123"));
}

#[test]
fn the_canonical_name_does_not_depend_on_which_file_is_read_first() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        &format!(r#"{{"mcpServers": {{"zz": {GIT}, "bb": {GIT}}}}}"#),
    );
    fx.home_file(
        ".claude.json",
        &format!(r#"{{"mcpServers": {{"aa-longer": {GIT}}}}}"#),
    );
    let d = fx.folded();
    // Shortest first, then byte order.
    assert_eq!(names(&d), ["bb"]);
    assert_eq!(alias_names(&d.aliases, "bb"), ["aa-longer", "zz"]);
}

#[test]
fn servers_that_launch_differently_stay_separate() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {
  "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}},
  "git-other-env": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "2"}},
  "git-more-args": {"command": "uvx", "args": ["mcp-server-git", "--repository", "/r"], "env": {"A": "1"}},
  "git-no-env": {"command": "uvx", "args": ["mcp-server-git"]},
  "git-cwd": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "cwd": "/srv"},
  "web": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer 1"}},
  "web-other-token": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer 2"}},
  "web-same": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer 1"}}
}}"#,
    );
    let d = fx.folded();
    assert_eq!(
        names(&d),
        [
            "git",
            "git-cwd",
            "git-more-args",
            "git-no-env",
            "git-other-env",
            "web",
            "web-other-token"
        ]
    );
    assert_eq!(d.aliases.iter().collect::<Vec<_>>(), [("web-same", "web")]);
}

#[test]
fn a_projects_unapproved_copy_is_not_folded_into_the_users_server() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        &format!(r#"{{"mcpServers": {{"git-server": {GIT}}}}}"#),
    );
    fx.project_file(
        ".mcp.json",
        &format!(r#"{{"mcpServers": {{"git": {GIT}}}}}"#),
    );
    let d = fx.folded();
    assert_eq!(names(&d), ["git-server"]);
    assert!(d.aliases.is_empty(), "{:?}", d.aliases);
    assert_eq!(
        d.needs_approval()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["git"]
    );
}
