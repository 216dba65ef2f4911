//! `code-executor auth`: logging in to OAuth-protected streamable-HTTP servers (`login`),
//! showing where each HTTP server stands (`status`), and forgetting a server's tokens
//! (`logout`).
//!
//! This module owns the command only: finding the server by name among the configured ones,
//! the terminal I/O, and the report. The flow, the store and the token handling are
//! [`crate::upstream::oauth`]'s. Nothing here prints a token or a client secret.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::clients::discovery::{ServerSpec, Transport};
use crate::config::settings::Settings;
use crate::upstream::oauth::login::{self, LoginError, LoginOptions};
use crate::upstream::oauth::{OAuthStore, StoreError};

/// Environment variable holding the secret of a client given with `--client-id` (kept out of
/// the command line, where other users could read it in the process list).
pub const CLIENT_SECRET_ENV: &str = "CODE_EXECUTOR_OAUTH_CLIENT_SECRET";
/// Environment variables naming the program that opens the authorization URL, first wins.
const BROWSER_ENVS: &[&str] = &["CODE_EXECUTOR_BROWSER", "BROWSER"];

/// The command-line arguments of `auth`.
#[derive(Debug, Clone, clap::Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    pub command: AuthCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AuthCommand {
    /// Log in to an OAuth-protected HTTP server (as `servers` names it): opens the browser and
    /// waits for it on a loopback port; tokens are stored under `oauth_dir`.
    Login {
        /// The server's name.
        server: String,
        /// Print the URL and read the address the browser was sent to from stdin (for SSH
        /// sessions and containers).
        #[arg(long, visible_alias = "redirect-url-from-stdin")]
        no_browser: bool,
        /// A scope to request (repeatable), besides those already granted.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// A client registered with the authorization server beforehand (when it offers no
        /// dynamic registration); its secret, if any, in $CODE_EXECUTOR_OAUTH_CLIENT_SECRET.
        #[arg(long, value_name = "ID")]
        client_id: Option<String>,
    },
    /// Show each HTTP server: logged in (scopes, expiry), needs login, or not protected.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Forget the tokens (and the registered client) of a server.
    Logout {
        /// The server's name.
        server: String,
    },
}

/// Why `auth` failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthCommandError {
    #[error("cannot read the MCP configs: {0}")]
    Discovery(#[from] crate::clients::DiscoveryError),
    #[error("no MCP server named `{server}` is configured (HTTP servers: {known})")]
    Unknown { server: String, known: String },
    #[error("`{0}` is a stdio server: only HTTP servers use OAuth")]
    NotHttp(String),
    #[error("login to `{server}` failed: {reason}")]
    Login { server: String, reason: LoginError },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One line of `auth status`.
#[derive(Debug, Serialize)]
pub struct ServerAuth {
    pub name: String,
    pub url: String,
    /// `logged_in`, `expired` (a refresh will be tried), `needs_login`, `not_protected`,
    /// `unreachable`, or `error` (the stored file is unusable).
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Runs `auth`; whether it succeeded (the exit status).
pub async fn run(args: AuthArgs, settings: &Settings) -> Result<bool, AuthCommandError> {
    let store = OAuthStore::new(settings.oauth_dir.clone());
    let found = crate::clients::discover(&settings.project_dir, &settings.servers_file)?;
    match args.command {
        AuthCommand::Login {
            server,
            no_browser,
            scopes,
            client_id,
        } => {
            let spec = http_server(&found, &server)?;
            let (url, headers) = http_parts(spec);
            let options = LoginOptions {
                event_stream: matches!(spec.transport, Transport::Sse { .. }),
                scopes,
                no_browser,
                client_secret: client_id
                    .as_ref()
                    .and_then(|_| std::env::var(CLIENT_SECRET_ENV).ok())
                    .filter(|s| !s.is_empty()),
                client_id,
                browser: BROWSER_ENVS
                    .iter()
                    .find_map(|v| std::env::var(v).ok())
                    .filter(|b| !b.trim().is_empty()),
            };
            let pasted = no_browser.then(stdin_lines);
            let mut out = std::io::stdout();
            let outcome = login::login(&store, &server, url, headers, &options, &mut out, pasted)
                .await
                .map_err(|reason| AuthCommandError::Login {
                    server: server.clone(),
                    reason,
                })?;
            let scopes = if outcome.scopes.is_empty() {
                "no scope named".to_string()
            } else {
                format!("scopes: {}", outcome.scopes.join(" "))
            };
            let expiry = outcome
                .expires_in
                .map(|d| {
                    format!(
                        ", the access token expires in {}",
                        humantime::format_duration(d)
                    )
                })
                .unwrap_or_default();
            println!(
                "Logged in to `{server}` ({scopes}{expiry}). Tokens stored in {}.",
                store.path_for(url).display()
            );
            Ok(true)
        }
        AuthCommand::Status { json } => {
            let mut lines = Vec::new();
            for spec in &found.servers {
                if let Some((url, headers)) = remote_parts(spec) {
                    let event_stream = matches!(spec.transport, Transport::Sse { .. });
                    lines.push(status_of(&store, &spec.name, url, headers, event_stream).await);
                }
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&lines).expect("status serializes")
                );
            } else if lines.is_empty() {
                println!("No HTTP MCP servers configured.");
            } else {
                println!("{:<24} {:<14} {:<22} DETAIL", "NAME", "STATE", "EXPIRES");
                for l in &lines {
                    let mut detail = l.detail.clone().unwrap_or_default();
                    if !l.scopes.is_empty() {
                        detail = format!("scopes: {} {detail}", l.scopes.join(" "));
                    }
                    println!(
                        "{:<24} {:<14} {:<22} {}",
                        l.name,
                        l.state,
                        l.expires_at.as_deref().unwrap_or("-"),
                        detail.trim()
                    );
                }
            }
            Ok(true)
        }
        AuthCommand::Logout { server } => {
            let spec = http_server(&found, &server)?;
            let (url, _) = http_parts(spec);
            if store.remove(url)? {
                println!("Logged out of `{server}`: its tokens and client are deleted.");
            } else {
                println!("`{server}` had no stored tokens.");
            }
            Ok(true)
        }
    }
}

/// The lines typed or piped on stdin, read by a thread of its own that the command does not
/// wait for: a read blocked on a terminal or on a pipe left open must not keep the command
/// running once the login is stored (a read on tokio's stdin would: it runs on the runtime's
/// blocking pool, whose shutdown waits for it). The channel closes when stdin ends.
fn stdin_lines() -> login::PastedLines {
    let (lines, pasted) = tokio::sync::mpsc::channel(4);
    let reader = std::thread::Builder::new()
        .name("stdin-lines".into())
        .spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if lines.blocking_send(line).is_err() {
                    break;
                }
            }
        });
    if let Err(e) = reader {
        tracing::warn!("cannot read stdin: {e}");
    }
    pasted
}

/// The remote (streamable HTTP or legacy SSE) server called `name` or having it as an alias.
fn http_server<'a>(
    found: &'a crate::clients::discovery::Discovery,
    name: &str,
) -> Result<&'a ServerSpec, AuthCommandError> {
    let servers = &found.servers;
    let canonical = found.aliases.canonical(name);
    match servers.iter().find(|s| s.name == canonical) {
        Some(spec) if remote_parts(spec).is_some() => Ok(spec),
        Some(_) => Err(AuthCommandError::NotHttp(name.to_string())),
        None => Err(AuthCommandError::Unknown {
            server: name.to_string(),
            known: servers
                .iter()
                .filter(|s| remote_parts(s).is_some())
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn http_parts(spec: &ServerSpec) -> (&str, &BTreeMap<String, String>) {
    remote_parts(spec).expect("http_server returns remote servers only")
}

/// The URL and headers of a remote server; `None` for a stdio one.
fn remote_parts(spec: &ServerSpec) -> Option<(&str, &BTreeMap<String, String>)> {
    match &spec.transport {
        Transport::Http { url, headers } | Transport::Sse { url, headers } => Some((url, headers)),
        Transport::Stdio { .. } => None,
    }
}

async fn status_of(
    store: &OAuthStore,
    name: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    event_stream: bool,
) -> ServerAuth {
    let mut line = ServerAuth {
        name: name.to_string(),
        url: url.to_string(),
        state: "needs_login",
        expires_at: None,
        scopes: Vec::new(),
        detail: None,
    };
    let login = || format!("run `{}`", crate::upstream::oauth::login_command(name, &[]));
    match store.load(url) {
        Err(e) => {
            line.state = "error";
            line.detail = Some(e.to_string());
        }
        Ok(Some(record)) if record.has_token() => {
            let credentials = record.credentials.as_ref().expect("has_token");
            line.scopes = credentials.granted_scopes.clone();
            let expires_in = credentials
                .token_response
                .as_ref()
                .and_then(|t| serde_json::to_value(t).ok()?.get("expires_in")?.as_u64());
            match (credentials.token_received_at, expires_in) {
                (Some(at), Some(expires_in)) => {
                    let when = UNIX_EPOCH + Duration::from_secs(at + expires_in);
                    line.expires_at = Some(humantime::format_rfc3339_seconds(when).to_string());
                    line.state = if when > SystemTime::now() {
                        "logged_in"
                    } else {
                        line.detail = Some("access token expired; refreshed on next use".into());
                        "expired"
                    };
                }
                _ => line.state = "logged_in",
            }
        }
        Ok(_) => match login::probe_protected(url, headers, event_stream).await {
            Ok(true) => line.detail = Some(login()),
            Ok(false) => line.state = "not_protected",
            Err(e) => {
                line.state = "unreachable";
                line.detail = Some(e.to_string());
            }
        },
    }
    line
}
