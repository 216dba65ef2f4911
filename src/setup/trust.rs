//! `code-executor trust`: the user's approval of servers the current project's own files define
//! (`.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json`, `.codex/config.toml`,
//! `.gemini/settings.json`), which no subcommand and no execution starts before.
//!
//! This module owns the command: it shows what each server runs, records an approval per
//! (project, name, fingerprint) in the approvals file
//! (`crate::clients::approval::approvals_file`), lists and withdraws them. Which approvals
//! count and how a definition is fingerprinted are [`crate::clients::approval`]'s and
//! [`crate::clients::brought`]'s; the file is written through `super::write`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::clients::approval::{self, ApprovalsFile, Record};
use crate::clients::brought::{ProjectServer, shell_word};
use crate::clients::discovery::Discovery;
use crate::config::settings::Settings;

/// The command-line arguments of `trust`.
#[derive(Debug, Clone, clap::Args)]
pub struct TrustArgs {
    /// Approve these servers of this project's own files (as `servers` names them).
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Approve every server of this project that needs approval.
    #[arg(long, conflicts_with = "names")]
    pub all: bool,
    /// Show this project's servers, what each runs and who approved it (the default when
    /// nothing else is asked).
    #[arg(long, conflicts_with_all = ["names", "all", "revoke"])]
    pub list: bool,
    /// Withdraw code-executor's approval of NAME in this project (repeatable).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["names", "all"])]
    pub revoke: Vec<String>,
}

/// Why `trust` did nothing.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read the MCP configs: {0}")]
    Discovery(#[from] crate::clients::DiscoveryError),
    #[error("{0}")]
    Approvals(String),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Unknown(String),
}

/// Runs `trust`.
pub fn run(args: TrustArgs, settings: &Settings) -> Result<(), TrustError> {
    let found = crate::clients::discover(&settings.project_dir, &settings.servers_file)?;
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let file = approval::approvals_file(&env);
    let project = approval::project_root(&settings.project_dir);
    if !args.revoke.is_empty() {
        return revoke(&args.revoke, &found, &file, &project);
    }
    let chosen: Vec<&ProjectServer> = if args.all {
        let all: Vec<_> = found.needs_approval().collect();
        if all.is_empty() {
            println!("Nothing needs approval in {}.", project.display());
            return Ok(());
        }
        all
    } else if !args.names.is_empty() {
        args.names
            .iter()
            .map(|name| find(&found, name, &project))
            .collect::<Result<_, _>>()?
    } else {
        list(&found, &file, &project)?;
        return Ok(());
    };
    let mut approvals = ApprovalsFile::read(&file).map_err(refuse_to_write)?;
    let key = project.to_string_lossy().into_owned();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for server in &chosen {
        approvals
            .approvals
            .retain(|r| !(r.project == key && r.name == server.name));
        approvals.approvals.push(Record {
            project: key.clone(),
            name: server.name.clone(),
            fingerprint: server.fingerprint.clone(),
            source: server.source.path.to_string_lossy().into_owned(),
            approved_at: now.clone(),
        });
    }
    save(&file, &approvals)?;
    for server in chosen {
        println!(
            "Approved {} (from {}) in {}:",
            shell_word(&server.name),
            server.source.path.display(),
            project.display()
        );
        for line in &server.launch {
            println!("    {line}");
        }
    }
    println!(
        "Recorded in {}. A changed definition needs approval again.",
        file.display()
    );
    Ok(())
}

/// The server `name` of the project's own files.
fn find<'d>(
    found: &'d Discovery,
    name: &str,
    project: &Path,
) -> Result<&'d ProjectServer, TrustError> {
    if let Some(server) = found.project_servers.iter().find(|p| p.name == name) {
        return Ok(server);
    }
    let why = if found.servers.iter().any(|s| s.name == name) {
        "it comes from your own configuration, which needs no approval".to_owned()
    } else if let Some(off) = found.disabled.iter().find(|d| d.name == name) {
        format!("it is switched off ({})", off.reason)
    } else if let Some(bad) = found.invalid.iter().find(|i| i.name == name) {
        format!("it cannot be used: {}", bad.error)
    } else {
        let names: Vec<String> = found
            .project_servers
            .iter()
            .map(|p| shell_word(&p.name))
            .collect();
        if names.is_empty() {
            "this project's own files define no server".to_owned()
        } else {
            format!("this project's own files define: {}", names.join(", "))
        }
    };
    Err(TrustError::Unknown(format!(
        "no server {} to approve in {}: {why}",
        shell_word(name),
        project.display()
    )))
}

fn revoke(
    names: &[String],
    found: &Discovery,
    file: &Path,
    project: &Path,
) -> Result<(), TrustError> {
    let mut approvals = ApprovalsFile::read(file).map_err(refuse_to_write)?;
    let key = project.to_string_lossy();
    for name in names {
        let mine = |r: &Record| r.project == key && &r.name == name;
        if !approvals.approvals.iter().any(mine) {
            return Err(TrustError::Unknown(format!(
                "no `code-executor trust` approval of {} in {} (in {})",
                shell_word(name),
                project.display(),
                file.display()
            )));
        }
        approvals.approvals.retain(|r| !mine(r));
    }
    save(file, &approvals)?;
    for name in names {
        println!(
            "Withdrew the approval of {} in {}.",
            shell_word(name),
            project.display()
        );
        // What the clients approved stays approved; say so.
        if let Some(by) = found
            .project_servers
            .iter()
            .find(|p| &p.name == name)
            .and_then(|p| p.approved_by.as_deref())
            .filter(|by| !by.starts_with("`code-executor trust`"))
        {
            println!("    it stays approved by {by}");
        }
    }
    Ok(())
}

fn list(found: &Discovery, file: &Path, project: &Path) -> Result<(), TrustError> {
    println!(
        "Servers this project's own files define ({}):",
        project.display()
    );
    if found.project_servers.is_empty() {
        println!("  none");
    }
    for server in &found.project_servers {
        let state = match &server.approved_by {
            Some(by) => format!("approved by {by}"),
            None => format!("needs approval: run `{}`", server.trust_command()),
        };
        println!("  {}: {state}", shell_word(&server.name));
        println!("      from {}", server.source.path.display());
        for line in &server.launch {
            println!("      {line}");
        }
    }
    let recorded = ApprovalsFile::read(file).map_err(TrustError::Approvals)?;
    let key = project.to_string_lossy();
    let stale: Vec<String> = recorded
        .approvals
        .iter()
        .filter(|r| r.project == key)
        .filter(|r| {
            !found
                .project_servers
                .iter()
                .any(|p| p.name == r.name && p.fingerprint == r.fingerprint)
        })
        .map(|r| shell_word(&r.name))
        .collect();
    if !stale.is_empty() {
        println!(
            "Approvals in {} that match no current definition (changed or gone): {}",
            file.display(),
            stale.join(", ")
        );
    }
    Ok(())
}

fn refuse_to_write(problem: String) -> TrustError {
    TrustError::Approvals(format!("{problem}; fix or remove it first"))
}

fn save(file: &Path, approvals: &ApprovalsFile) -> Result<(), TrustError> {
    super::write::replace(file, approvals.to_text())
        .map(|_| ())
        .map_err(|source| TrustError::Write {
            path: file.to_owned(),
            source,
        })
}
