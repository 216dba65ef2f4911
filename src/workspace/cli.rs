//! `code-executor workspace path|ls|cat|rm|principals`: the user's view of a workspace's files
//! (the project's, or with `--principal NAME` an HTTP principal's), through the same path rules
//! and resolver as sandboxed code (`super::files`), so that the command line cannot be led out
//! of the workspace either. Needs only the settings.

use std::io::Write;

use super::files::{self, Kind};
use super::{Owner, Space};
use crate::config::settings::{Settings, WorkspaceSharing};

/// The command-line arguments of `workspace`.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkspaceArgs {
    /// An HTTP principal's workspace instead of the project's: its name as the audit log and
    /// `workspace principals` show it, `http-token:<fingerprint>` or `http-peer:<address>`.
    #[arg(long, global = true, value_name = "NAME")]
    pub principal: Option<String>,
    #[command(subcommand)]
    pub command: WorkspaceCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum WorkspaceCommand {
    /// Print the directory of the project's workspace files.
    Path,
    /// List the files beneath PATH (default: the whole workspace), every level, with sizes.
    Ls {
        /// A directory (or file) relative to the workspace root.
        #[arg(default_value = "")]
        path: String,
        /// Print JSON (`{entries: [{path, kind, size}], truncated}`) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Print a file's bytes.
    Cat {
        /// A file, relative to the workspace root.
        path: String,
    },
    /// Remove a file, or a directory with all it holds.
    Rm {
        /// A file or directory, relative to the workspace root.
        path: String,
    },
    /// List the HTTP principals that have a workspace of their own in this project.
    Principals,
}

/// The workspace of `owner` (the `--principal` given, already checked, or the project):
/// the project's is created when missing, a principal's must exist.
pub fn open(settings: &Settings, owner: &Owner) -> anyhow::Result<Space> {
    let Some(dir) = &settings.workspace_dir else {
        anyhow::bail!("the workspace is off (setting workspace = false)");
    };
    let quota = settings.workspace_quota;
    match owner {
        Owner::Project => Ok(Space::open_at(dir, &settings.project_dir, quota)?),
        Owner::Principal(name) => Space::find(dir, &settings.project_dir, owner, quota)?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "principal {name} has no workspace in this project (one is made when its code first uses files or skills); `code-executor workspace principals` lists those there are"
                )
            }),
    }
}

/// Runs one `workspace` command on `owner`'s workspace.
pub fn run(args: WorkspaceArgs, settings: &Settings, owner: &Owner) -> anyhow::Result<()> {
    if let WorkspaceCommand::Principals = args.command {
        return principals(settings);
    }
    let space = open(settings, owner)?;
    let mut out = std::io::stdout().lock();
    match args.command {
        WorkspaceCommand::Path => {
            writeln!(out, "{}", space.root().join(super::FILES_DIR).display())?;
        }
        WorkspaceCommand::Ls { path, json } => {
            let listing = files::list(&space, &path)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
            } else if listing.entries.is_empty() {
                let root = space.root().join(super::FILES_DIR);
                match path.trim_matches('/') {
                    "" | "." => writeln!(out, "the workspace is empty ({})", root.display())?,
                    sub => writeln!(out, "{sub} is empty (in {})", root.display())?,
                }
            } else {
                for entry in &listing.entries {
                    let (size, suffix) = match entry.kind {
                        Kind::File => (entry.size.to_string(), ""),
                        Kind::Dir => ("-".into(), "/"),
                        Kind::Link => ("-".into(), " (symbolic link, not followed)"),
                        Kind::Other => ("-".into(), " (not a regular file)"),
                    };
                    writeln!(out, "{size:>10}  {}{suffix}", entry.path.escape_debug())?;
                }
                if listing.truncated {
                    writeln!(
                        out,
                        "(cut at {} entries: list a directory to see the rest)",
                        listing.entries.len()
                    )?;
                }
            }
        }
        WorkspaceCommand::Cat { path } => out.write_all(&files::read(&space, &path)?)?,
        WorkspaceCommand::Rm { path } => files::remove(&space, &path)?,
        WorkspaceCommand::Principals => {}
    }
    out.flush()?;
    Ok(())
}

/// `workspace principals`: each principal with a workspace here, and where its files are.
fn principals(settings: &Settings) -> anyhow::Result<()> {
    let Some(dir) = &settings.workspace_dir else {
        anyhow::bail!("the workspace is off (setting workspace = false)");
    };
    let mut out = std::io::stdout().lock();
    let found = super::principals(dir, &settings.project_dir);
    if found.is_empty() {
        writeln!(
            out,
            "No HTTP principal has a workspace of its own in this project."
        )?;
    }
    for (name, root) in &found {
        writeln!(
            out,
            "{}  {}",
            name.escape_debug(),
            root.join(super::FILES_DIR).display()
        )?;
    }
    if settings.workspace_sharing == WorkspaceSharing::Project {
        writeln!(
            out,
            "(workspace_sharing = \"project\": HTTP clients now use the project's workspace, not these)"
        )?;
    }
    out.flush()?;
    Ok(())
}
