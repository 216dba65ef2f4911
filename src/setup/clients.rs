//! `setup`'s view of a client's servers: the raw entries of its files as `setup` reports them
//! (`entries`) and an entry rewritten for this server's own servers file (`portable`).
//! Which files a client has, how they are read and what switches a server off are
//! [`crate::clients`]'; this module reads through it and writes nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::edit::EditError;
use crate::clients::discovery::DiscoveryError;
use crate::clients::read;

pub(crate) use crate::clients::places::{Layout, Places, ServerFile};
pub(crate) use crate::clients::read::{Lists, RawEntry as Entry};
pub use crate::clients::{Client, Scope};

/// A file that exists but cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot parse {}: {source}", .path.display())]
pub struct ReadError {
    pub path: PathBuf,
    #[source]
    pub source: EditError,
}

impl From<DiscoveryError> for ReadError {
    fn from(err: DiscoveryError) -> Self {
        let path = err.path().to_owned();
        let source = match err {
            DiscoveryError::Parse {
                line,
                column,
                message,
                ..
            } => EditError::Syntax {
                line,
                column,
                message,
            },
            DiscoveryError::Shape { message, .. } => EditError::Shape(message),
            DiscoveryError::Read { source, .. } => EditError::Shape(source.to_string()),
            DiscoveryError::NotFound { path } => {
                EditError::Shape(format!("{} does not exist", path.display()))
            }
        };
        ReadError { path, source }
    }
}

/// The servers of one file (none when it does not exist), in the file's order.
pub(crate) fn entries(file: &ServerFile) -> Result<Vec<Entry>, ReadError> {
    Ok(read::entries(file, &crate::clients::self_names())?)
}

/// A definition rewritten for the server's own servers file: already in the standard form (see
/// [`crate::clients::dialects`]: Codex's `http_headers`/`bearer_token_env_var`, Gemini's
/// `httpUrl`/`$VAR`), with the switch-off fields and Codex's timeouts and tool filters dropped,
/// and a relative `cwd` made absolute against the file it came from. An entry switched off by
/// a flag its client ignores keeps `"disabled": true`: this server leaves it off as discovery
/// did.
pub(crate) fn portable(entry: &Entry) -> Value {
    let mut def = entry.definition.as_object().cloned().unwrap_or_default();
    for key in [
        "disabled",
        "enabled",
        "startup_timeout_sec",
        "tool_timeout_sec",
        "enabled_tools",
        "disabled_tools",
    ] {
        def.remove(key);
    }
    if entry.flag_off.is_some() {
        def.insert("disabled".into(), Value::Bool(true));
    }
    if let Some(Value::String(cwd)) = def.get("cwd")
        && !cwd.is_empty()
        && !cwd.starts_with('$')
        && Path::new(cwd).is_relative()
        && let Some(dir) = entry.file.path.parent()
    {
        let abs = dir.join(cwd).to_string_lossy().into_owned();
        def.insert("cwd".into(), abs.into());
    }
    Value::Object(def)
}
