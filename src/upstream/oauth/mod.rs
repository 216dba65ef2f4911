//! OAuth 2.1 for streamable-HTTP downstream servers (the MCP authorization spec), built on
//! rmcp's `auth` support: the file-backed store of clients and tokens (`store`), the
//! authorized HTTP client the pool connects with (`connect`), the classification of a
//! transport failure as "needs login" or "needs more scope" (`problem`), and the interactive
//! login (`login`: discovery, registration, authorization code with PKCE S256 and `resource`,
//! loopback or pasted redirect).
//!
//! Tokens and client secrets live only in the store's files: never in logs, audit records,
//! errors, `listServers`, or anything the sandbox reaches (the sandbox sees tool results only).
//! This module decides nothing about which tools may be called.

pub mod connect;
pub mod login;
pub mod problem;
pub mod store;

use std::path::PathBuf;
use std::sync::OnceLock;

pub use store::{OAuthStore, ServerRecord, StoreError};

/// The store the pool connects with, set once at start-up from the `oauth_dir` setting.
static STORE_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Sets the store directory the pool uses (the first call wins: one setting per process).
pub fn use_store_dir(dir: PathBuf) {
    let _ = STORE_DIR.set(dir);
}

/// The store the pool uses: the configured directory, else the default one.
pub(crate) fn pool_store() -> OAuthStore {
    OAuthStore::new(STORE_DIR.get().cloned().unwrap_or_else(|| {
        dirs::config_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("code-executor")
            .join("oauth")
    }))
}

/// The exact command that logs in to `server` (with `scopes` to request, for a step-up).
pub fn login_command(server: &str, scopes: &[String]) -> String {
    let mut command = format!("code-executor auth login {}", shell_word(server));
    for scope in scopes {
        command.push_str(" --scope ");
        command.push_str(&shell_word(scope));
    }
    command
}

/// `word`, quoted for a POSIX shell when it holds anything but safe characters.
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@+=".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_commands_are_exact_and_quoted() {
        assert_eq!(
            login_command("secure", &[]),
            "code-executor auth login secure"
        );
        assert_eq!(
            login_command("my server", &["read".into(), "write".into()]),
            "code-executor auth login 'my server' --scope read --scope write"
        );
        assert_eq!(
            login_command("it's", &[]),
            r"code-executor auth login 'it'\''s'"
        );
    }
}
