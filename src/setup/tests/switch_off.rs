//! `--disable-others` with a client that has no switch of its own in its files (VS Code): the
//! entry moves out of the client's file, discovery then sees it only in this server's servers
//! file; and the backups: in the state directory, never beside the file, restored byte for
//! byte.

use super::*;
use crate::clients::discovery::DiscoveryInputs;

const VSCODE: &str = r#"{
  // the team's servers
  "servers": {
    "git": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-git"]
    },
    "legacy": { "type": "stdio", "command": "legacy-mcp", "disabled": true }
  },
  "inputs": []
}
"#;

fn world() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (home, project) = (tmp.path().join("home"), tmp.path().join("project"));
    std::fs::create_dir_all(project.join(".vscode")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(project.join(".vscode/mcp.json"), VSCODE).unwrap();
    (tmp, home, project)
}

fn inputs(home: &Path, project: &Path) -> DiscoveryInputs {
    DiscoveryInputs {
        home: home.to_owned(),
        project_dir: project.to_owned(),
        explicit: None,
        env: Default::default(),
        self_names: crate::clients::self_names(),
    }
}

#[test]
fn vscode_servers_move_out_of_mcp_json_and_stay_reachable() {
    let (tmp, home, project) = world();
    let opts = options(&home, &project, true);
    let plan = plan(&opts, &[Client::Vscode]).unwrap();
    // VS Code ignores "disabled": true, so `legacy` is loaded by VS Code: it moves out too.
    assert_eq!(plan.outcomes[0].disabled, ["git", "legacy"]);
    let backups = tmp.path().join("state/code-executor/backups");
    apply(&plan, &backups, "20260101T000000").unwrap();

    let text = std::fs::read_to_string(project.join(".vscode/mcp.json")).unwrap();
    assert!(!text.contains("disabled"), "{text}");
    assert!(text.contains("// the team's servers"), "{text}");
    let v = edit::parse_json(&text).unwrap();
    let names: Vec<&String> = v["servers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["code-executor"]);

    // Discovery: nothing of VS Code's but this server's own entry; both servers come from the
    // servers file, `legacy` still off as it was.
    let inputs = inputs(&home, &project);
    let mut found = crate::clients::discovery::discover(&inputs).unwrap();
    crate::clients::approval::gate(&mut found, &Approvals::everything());
    assert!(
        found.servers.is_empty() && found.disabled.is_empty(),
        "{found:#?}"
    );
    crate::clients::servers_file::merge_into(&mut found, &inputs, &opts.servers_file).unwrap();
    let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["git"]);
    assert_eq!(found.servers[0].source.path, opts.servers_file);
    assert_eq!(found.disabled[0].name, "legacy");

    // Again: nothing to do.
    assert!(plan_again(&opts).is_empty());
    // No backup beside the edited file, inside the project.
    let mut inside: Vec<String> = std::fs::read_dir(project.join(".vscode"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    inside.sort();
    assert_eq!(inside, ["mcp.json"]);
}

fn plan_again(opts: &Options) -> Plan {
    plan(opts, &[Client::Vscode]).unwrap()
}

#[test]
fn backups_are_in_the_state_directory_and_restore_byte_for_byte() {
    let (tmp, home, project) = world();
    let opts = options(&home, &project, true);
    let plan = plan(&opts, &[Client::Vscode]).unwrap();
    let backups = tmp.path().join("state/code-executor/backups");
    let (written, run) = apply(&plan, &backups, "20260101T000000").unwrap();
    assert_eq!(run, backups.join("20260101T000000"));
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&run), 0o700);
    let vscode = project.join(".vscode/mcp.json");
    let copy = written
        .iter()
        .find(|w| w.path == vscode)
        .and_then(|w| w.backup.clone())
        .unwrap();
    assert_eq!(copy.parent(), Some(run.as_path()));
    assert_eq!(
        copy.file_name().unwrap().to_string_lossy(),
        backup::escape(&vscode)
    );
    assert_eq!(std::fs::read(&copy).unwrap(), VSCODE.as_bytes());
    // The servers file did not exist: no copy, created.
    assert!(
        written
            .iter()
            .any(|w| w.path == opts.servers_file && w.backup.is_none())
    );

    let (stamp, done, undo) = backup::restore(&backups, None, "20260101T000100").unwrap();
    assert_eq!(stamp, "20260101T000000");
    assert_eq!(std::fs::read(&vscode).unwrap(), VSCODE.as_bytes());
    assert!(!opts.servers_file.exists(), "{done:?}");
    assert!(done.contains(&backup::RestoreStep::Restored(vscode.clone())));
    assert!(done.contains(&backup::RestoreStep::Removed(opts.servers_file.clone())));
    // The restore can be undone: the run before it is a run of its own.
    assert_eq!(
        backup::runs(&backups),
        ["20260101T000000", "20260101T000100"]
    );
    let (_, _, _) = backup::restore(&backups, Some("20260101T000100"), "20260101T000200").unwrap();
    assert!(
        !std::fs::read_to_string(&vscode)
            .unwrap()
            .contains("\"git\"")
    );
    assert!(opts.servers_file.exists());
    assert!(undo.ends_with("20260101T000100"));
    // Unknown runs are named.
    let err = backup::restore(&backups, Some("nope"), "x")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("nope") && err.contains("20260101T000000"),
        "{err}"
    );
}
