//! Tests of discovery and the client table, by topic: `aliases` (one entry per server),
//! `sources` (which files, which dialect,
//! which definition wins), `consent` (servers a project brings: pending until approved, by
//! whom), `switches` (flags, lists, this server's own entries), `entries`
//! (an entry's fields, broken and oddly shaped files), `expand` (`${...}`), `read` (raw entries, key paths, lists,
//! and setup reading what discovery reads), `table` (the table is consistent with itself and
//! with `--client`).

mod aliases;
mod consent;
mod entries;
mod expand;
mod read;
mod sources;
mod switches;
mod table;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::approval::{self, Approvals};
use super::discovery::{
    ConfigSource, DisabledEntry, Discovery, DiscoveryError, DiscoveryInputs, InvalidEntry,
    Overridden, ServerSpec, SourceKind, Transport,
};
use super::launch::{file_stem_of_command, launches_self, package_name};

/// The merge, with every server the project brings approved: what these tests look at is
/// which definition wins (`consent` tests the approvals themselves).
fn discover(inputs: &DiscoveryInputs) -> Result<Discovery, DiscoveryError> {
    let mut found = super::discovery::discover(inputs)?;
    approval::gate(&mut found, &Approvals::everything());
    Ok(found)
}

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home/ana");
        let project = tmp.path().join("work/my-app");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&project).unwrap();
        Fixture {
            _tmp: tmp,
            home,
            project,
        }
    }

    fn write(&self, path: &Path, text: &str) -> PathBuf {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        path.to_owned()
    }

    fn home_file(&self, rel: &str, text: &str) -> PathBuf {
        self.write(&self.home.join(rel), text)
    }

    fn project_file(&self, rel: &str, text: &str) -> PathBuf {
        self.write(&self.project.join(rel), text)
    }

    fn project_str(&self) -> String {
        self.project.to_string_lossy().into_owned()
    }

    fn inputs(&self) -> DiscoveryInputs {
        DiscoveryInputs {
            home: self.home.clone(),
            project_dir: self.project.clone(),
            explicit: None,
            env: [
                ("HOME", self.home.to_string_lossy().as_ref()),
                ("GITHUB_TOKEN", "ghp_test123"),
                ("PATH", "/usr/bin:/bin"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            self_names: vec!["code-executor".to_owned()],
        }
    }

    fn discover(&self) -> Discovery {
        discover(&self.inputs()).unwrap()
    }

    /// `~/.claude.json` the way Claude Code writes it, with `mcpServers`
    /// at the top level and in this project's entry.
    fn claude_json(&self, user_servers: &str, project_extra: &str) -> PathBuf {
        let key = serde_json::to_string(&self.project_str()).unwrap();
        self.home_file(
            ".claude.json",
            &format!(
                r##"{{
  "numStartups": 187,
  "installMethod": "native",
  "autoUpdates": false,
  "theme": "dark",
  "verbose": false,
  "tipsHistory": {{ "new-user-warmup": 7, "memory-command": 58, "theme-command": 12 }},
  "userID": "0f3c9b1e5d2a4c8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6",
  "firstStartTime": "2025-03-02T09:14:22.531Z",
  "hasCompletedOnboarding": true,
  "lastOnboardingVersion": "1.0.51",
  "subscriptionNoticeCount": 0,
  "hasAvailableSubscription": false,
  "cachedChangelog": "# Changelog\n\n## 1.0.51\n\n- Added support for native Windows",
  "oauthAccount": {{
"accountUuid": "8a1d0f2e-1111-2222-3333-444455556666",
"emailAddress": "ana@example.com",
"organizationRole": "admin"
  }},
  "mcpServers": {user_servers},
  "projects": {{
"/home/ana/old-project": {{
  "allowedTools": [],
  "history": [{{ "display": "fix the tests", "pastedContents": {{}} }}],
  "mcpContextUris": [],
  "mcpServers": {{ "old-only": {{ "command": "old-server" }} }},
  "enabledMcpjsonServers": [],
  "disabledMcpjsonServers": [],
  "hasTrustDialogAccepted": true,
  "projectOnboardingSeenCount": 4,
  "lastCost": 0.4211,
  "lastDuration": 812345
}},
{key}: {{
  "allowedTools": ["Bash(npm test:*)"],
  "history": [
    {{ "display": "add a login page", "pastedContents": {{}} }},
    {{ "display": "/mcp", "pastedContents": {{}} }}
  ],
  "mcpContextUris": [],
  "enabledMcpjsonServers": [],
  "hasTrustDialogAccepted": true,
  "hasClaudeMdExternalIncludesApproved": false,
  "hasClaudeMdExternalIncludesWarningShown": false,
  "projectOnboardingSeenCount": 1,
  "exampleFiles": ["src/App.tsx", "src/main.tsx"],
  "lastAPIDuration": 35012,
  "lastLinesAdded": 120,
  "lastLinesRemoved": 7,
  "lastSessionId": "4c2b9a2e-aaaa-bbbb-cccc-ddddeeeeffff"{project_extra}
}}
  }},
  "shiftEnterKeyBindingInstalled": true,
  "fallbackAvailableWarningThreshold": 0.5
}}"##
            ),
        )
    }
}

fn server<'d>(d: &'d Discovery, name: &str) -> &'d ServerSpec {
    d.servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name:?} in {d:#?}"))
}

fn names(d: &Discovery) -> Vec<&str> {
    d.servers.iter().map(|s| s.name.as_str()).collect()
}

fn invalid<'d>(d: &'d Discovery, name: &str) -> &'d InvalidEntry {
    d.invalid
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no invalid entry {name:?} in {d:#?}"))
}

fn disabled<'d>(d: &'d Discovery, name: &str) -> &'d DisabledEntry {
    d.disabled
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no disabled entry {name:?} in {d:#?}"))
}

fn stdio(command: &str, args: &[&str]) -> Transport {
    Transport::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
        cwd: None,
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
