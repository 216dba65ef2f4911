//! Everything about MCP client config files, for discovery and for `setup`: one table of the
//! clients and their files (`table`), resolved against a home and a project (`places`), one
//! parser of a config file (`parse`), one reader turning a parsed file into raw entries and
//! lists (`read`), one rule for recognising this
//! server's own entry (`launch`), the clients' dialects (`dialects`), `${VAR}` expansion
//! (`expand`), an entry's transport (`entry`) and what a usable server is (`spec`), and the
//! merge of every file into the
//! downstream servers this server reaches ([`discovery`], with this server's own
//! `servers_file` read last), and consent for what a project brings (`brought`: which
//! definitions come with the project and their fingerprints; `approval`: the approvals the user
//! gave and the gate that keeps every other one from starting). Reads files; `setup` is the
//! only writer of client configs and of the approvals file.
//!
//! | module | owns | must not |
//! | --- | --- | --- |
//! | `table` | which clients, files, keys, dialects, lists, labels, ids | touch files |
//! | `places` | paths for one home and project, `setup`'s target, detection | parse configs (but `~/.claude.json` for the project key) |
//! | `parse` | a file's text parsed (JSONC, TOML), the error naming the file | know keys or clients |
//! | `read` | key paths, raw entries, lists | merge, expand, write |
//! | `launch` | what counts as this server's own entry | read files |
//! | `entry` | an entry's transport, expansion of its fields | know files or switches |
//! | `spec` | a usable server: name, transport, source | hold any logic |
//! | `discovery` | the merge: precedence, switches, validity | write, launch |
//! | `servers_file` | this server's own servers file winning by name | read client configs |
//! | `brought` | what comes with the project: fingerprint, description, pending servers | read files, decide |
//! | `approval` | the user's approvals (clients' and `code-executor trust`'s), the gate | write, launch |
//! | `aliases` | which usable servers are the same, their canonical name, the alias table | read files |

pub mod aliases;
pub mod approval;
pub mod brought;
pub(crate) mod dialects;
pub mod discovery;
pub(crate) mod entry;
pub(crate) mod expand;
pub(crate) mod launch;
pub(crate) mod parse;
pub(crate) mod places;
pub(crate) mod read;
pub(crate) mod servers_file;
pub(crate) mod spec;
pub(crate) mod table;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use discovery::{Discovery, DiscoveryError};
pub use table::{Client, Scope, SourceKind};

use discovery::DiscoveryInputs;

/// Environment variable naming an extra MCP config file (highest precedence).
pub(crate) const MCP_CONFIG_PATH_ENV: &str = "MCP_CONFIG_PATH";
/// Names that are this server: a command with this file name or package, or an entry with this
/// name, is this server's own entry and is never launched.
pub(crate) const SELF_NAMES: &[&str] = &["code-executor"];

/// [`SELF_NAMES`] as owned strings.
pub(crate) fn self_names() -> Vec<String> {
    SELF_NAMES.iter().map(|s| s.to_string()).collect()
}

impl DiscoveryInputs {
    /// This process's view: the real home directory, `$MCP_CONFIG_PATH`, the whole environment
    /// for expansion, and [`SELF_NAMES`].
    pub(crate) fn from_process(project_dir: &Path) -> DiscoveryInputs {
        DiscoveryInputs {
            home: dirs::home_dir().unwrap_or_else(|| PathBuf::from("/")),
            project_dir: project_dir.to_owned(),
            explicit: std::env::var_os(MCP_CONFIG_PATH_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            env: std::env::vars().collect(),
            self_names: self_names(),
        }
    }
}

/// Reads the client configs for this user and the project in `project_dir`, keeps out every
/// server of the project's own files that the user has not approved (see [`approval`]), then
/// reads this server's own servers file, whose entries win by name (see `servers_file`), and
/// last folds the servers configured under several names into one each (see [`aliases`]).
pub(crate) fn discover(
    project_dir: &Path,
    servers_file: &Path,
) -> Result<Discovery, DiscoveryError> {
    let inputs = DiscoveryInputs::from_process(project_dir);
    let mut found = discovery::discover(&inputs)?;
    approval::gate(&mut found, &approvals(&inputs));
    servers_file::merge_into(&mut found, &inputs, servers_file)?;
    found.aliases = aliases::fold(&mut found.servers);
    Ok(found)
}

/// The approvals that apply to the project of `inputs`, from this process's files.
pub(crate) fn approvals(inputs: &DiscoveryInputs) -> approval::Approvals {
    let file = approval::approvals_file(&inputs.env);
    approval::Approvals::load(&inputs.places(), &inputs.env, &file)
}
