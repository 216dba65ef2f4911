//! A usable downstream server, as discovery hands it to the upstream pool: its name, how to
//! reach it (stdio, streamable HTTP or legacy HTTP+SSE, every variable already expanded) and the file it came
//! from. Plain data; `Debug` never shows environment or header values.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::table::SourceKind;

/// The file (and the part of it) a definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfigSource {
    pub kind: SourceKind,
    pub path: PathBuf,
}

impl ConfigSource {
    /// A placeholder source for other modules' unit tests.
    #[cfg(test)]
    pub fn test() -> Self {
        ConfigSource {
            kind: SourceKind::Explicit,
            path: PathBuf::from("/test/mcp.json"),
        }
    }
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            SourceKind::ServersFile => write!(f, "servers file {}", self.path.display()),
            _ => write!(f, "{} config {}", self.kind.label(), self.path.display()),
        }
    }
}

/// How to reach a server, with every variable already expanded.
///
/// `Debug` hides env and header values, which often hold credentials.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// Only the variables the entry sets.
        env: BTreeMap<String, String>,
        /// Absolute unless the config file's own path was relative.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (protocol 2025-03-26 and later).
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport (protocol 2024-11-05): `url` is the event stream.
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Redacted<'a>(&'a BTreeMap<String, String>);
        impl fmt::Debug for Redacted<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map()
                    .entries(self.0.keys().map(|k| (k, "<redacted>")))
                    .finish()
            }
        }
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &Redacted(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &Redacted(headers))
                .finish(),
            Transport::Sse { url, headers } => f
                .debug_struct("Sse")
                .field("url", url)
                .field("headers", &Redacted(headers))
                .finish(),
        }
    }
}

/// A server that is enabled and valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    pub source: ConfigSource,
}
