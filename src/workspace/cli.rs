//! `code-executor workspace path|ls|cat|rm`: the user's view of the project's workspace files,
//! through the same path rules and resolver as sandboxed code (`super::files`), so that the
//! command line cannot be led out of the workspace either. Needs only the settings.

use std::io::Write;

use super::Space;
use super::files::{self, Kind};
use crate::config::settings::Settings;

/// The command-line arguments of `workspace`.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkspaceArgs {
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
}

/// Runs one `workspace` command.
pub fn run(args: WorkspaceArgs, settings: &Settings) -> anyhow::Result<()> {
    let space = Space::open(settings)?
        .ok_or_else(|| anyhow::anyhow!("the workspace is off (setting workspace = false)"))?;
    let mut out = std::io::stdout().lock();
    match args.command {
        WorkspaceCommand::Path => {
            writeln!(out, "{}", space.root().join(super::FILES_DIR).display())?;
        }
        WorkspaceCommand::Ls { path, json } => {
            let listing = files::list(&space, &path)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
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
    }
    out.flush()?;
    Ok(())
}
