//! `code-executor skills ls|show NAME|rm NAME`: the user's view of a workspace's saved skills
//! (the project's, or with `--principal NAME` an HTTP principal's; see [`super::skills`]), read
//! and removed with the same rules the sandbox's API follows.

use std::io::Write;

use super::Owner;
use super::skills::{self, SkillMeta};
use crate::config::settings::Settings;

/// The command-line arguments of `skills`.
#[derive(Debug, Clone, clap::Args)]
pub struct SkillsArgs {
    /// An HTTP principal's skills instead of the project's: its name as the audit log and
    /// `workspace principals` show it, `http-token:<fingerprint>` or `http-peer:<address>`.
    #[arg(long, global = true, value_name = "NAME")]
    pub principal: Option<String>,
    #[command(subcommand)]
    pub command: SkillsCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum SkillsCommand {
    /// List the saved skills: name, language, description, exports.
    Ls {
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Show one skill: its metadata and its code.
    Show {
        name: String,
        /// Print JSON (metadata and code) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a skill.
    Rm { name: String },
}

/// Runs `skills` on `owner`'s workspace; false when the skill asked for was not there.
pub fn run(args: SkillsArgs, settings: &Settings, owner: &Owner) -> anyhow::Result<bool> {
    if settings.workspace_dir.is_none() {
        anyhow::bail!(
            "skills need the workspace, which is off (setting workspace = false); turn it on to save and list skills"
        );
    }
    let space = super::cli::open(settings, owner)?;
    let mut out = std::io::stdout().lock();
    match args.command {
        SkillsCommand::Ls { json } => {
            let all = skills::list(&space);
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
            } else if all.is_empty() {
                writeln!(
                    out,
                    "No skills saved in {} (code saves them with saveSkill).",
                    space.root().display()
                )?;
            } else {
                for meta in &all {
                    write_summary(&mut out, meta)?;
                }
            }
            Ok(true)
        }
        SkillsCommand::Show { name, json } => {
            let (meta, code) = skills::show(&space, &name)?;
            if json {
                let mut value = serde_json::to_value(&meta)?;
                value["code"] = code.into();
                value["import"] = meta.import_line().into();
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
            } else {
                write_summary(&mut out, &meta)?;
                if !meta.saved_at.is_empty() {
                    writeln!(out, "  saved {}", meta.saved_at)?;
                }
                writeln!(out, "  {}", meta.import_line())?;
                writeln!(out, "---")?;
                write!(out, "{code}")?;
                if !code.ends_with('\n') {
                    writeln!(out)?;
                }
            }
            Ok(true)
        }
        SkillsCommand::Rm { name } => {
            if skills::remove(&space, &name)? {
                writeln!(out, "removed skill {name}")?;
                Ok(true)
            } else {
                eprintln!("no skill named {name}; list them with `code-executor skills ls`");
                Ok(false)
            }
        }
    }
}

/// The lines of one skill: `name (language) - description`, then its exports indented.
fn write_summary(out: &mut impl Write, meta: &SkillMeta) -> std::io::Result<()> {
    let description = meta.description.lines().next().unwrap_or("");
    if description.is_empty() {
        writeln!(out, "{} ({})", meta.name, meta.language.as_str())?;
    } else {
        writeln!(
            out,
            "{} ({}) - {description}",
            meta.name,
            meta.language.as_str()
        )?;
    }
    for export in &meta.exports {
        writeln!(out, "    {export}")?;
    }
    Ok(())
}
