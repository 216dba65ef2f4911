//! The interactive login to one OAuth-protected server: Protected Resource Metadata (RFC 9728,
//! from the server's 401 challenge or its well-known URL) → authorization-server metadata
//! (RFC 8414 / OpenID discovery) → a client (the one already registered for this server URL,
//! else one given with `--client-id`, else Dynamic Client Registration; Client ID Metadata
//! Documents need a client-hosted HTTPS URL, which code-executor does not have) → the
//! authorization code with PKCE S256 and the `resource` indicator (RFC 8707) → tokens.
//!
//! The redirect comes back to a loopback listener (`http://127.0.0.1:<port>/callback`), or is
//! pasted (`--no-browser`, for SSH sessions and containers: lines the command reads from stdin).
//! The browser's request is answered only once the login has ended, with a plain-text page
//! that says how: stored, or refused and why. A redirect to another
//! address, a `state` that is not ours, an authorization-server `issuer` that is not the one
//! discovered, a PRM naming another resource, and a token endpoint answering an error or
//! garbage each end the login with a clear error, and nothing is written: the store is written
//! once, at the end, with the client and its tokens together.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadataSource, AuthorizationRequest, AuthorizationSession,
    CredentialStore, InMemoryCredentialStore,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::connect;
use super::store::{ClientSource, OAuthStore, RegisteredClient, ServerRecord, StoreError};

/// How long a login waits for the redirect.
const CALLBACK_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest request head the loopback listener reads.
const MAX_CALLBACK_HEAD: usize = 16 * 1024;
/// The path of the redirect URI.
pub const CALLBACK_PATH: &str = "/callback";
/// The client name sent with Dynamic Client Registration.
const CLIENT_NAME: &str = "code-executor";

/// What the user asked for. `Debug` redacts the client secret.
#[derive(Clone, Default)]
pub struct LoginOptions {
    /// Scopes to request, besides those already granted.
    pub scopes: Vec<String>,
    /// Print the URL and read the pasted redirect instead of opening a browser.
    pub no_browser: bool,
    /// A client registered with the authorization server out of band.
    pub client_id: Option<String>,
    /// Its secret (a confidential client).
    pub client_secret: Option<String>,
    /// The program that opens the URL (`$CODE_EXECUTOR_BROWSER`, `$BROWSER`), else the
    /// platform's opener.
    pub browser: Option<String>,
    /// The server speaks the legacy HTTP+SSE transport: its URL is the event stream, probed
    /// with a GET rather than an `initialize` POST.
    pub event_stream: bool,
}

impl std::fmt::Debug for LoginOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginOptions")
            .field("scopes", &self.scopes)
            .field("no_browser", &self.no_browser)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("browser", &self.browser)
            .finish()
    }
}

/// What a login achieved (no token in it).
#[derive(Debug, Clone)]
pub struct LoginOutcome {
    pub client_id: String,
    pub client_source: ClientSource,
    pub scopes: Vec<String>,
    pub expires_in: Option<Duration>,
}

/// Why a login failed. Messages hold no token and no secret.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error(
        "{url} answered without asking for authorization: it is not protected, no login is needed"
    )]
    NotProtected { url: String },
    #[error("OAuth discovery for {url} failed: {reason}")]
    Discovery { url: String, reason: String },
    #[error(
        "{url} publishes no OAuth metadata (no protected resource metadata and no authorization server metadata)"
    )]
    NoMetadata { url: String },
    #[error(
        "the authorization server offers no dynamic client registration; register a client with it and run `code-executor auth login {server} --client-id ID` (the secret, if any, in $CODE_EXECUTOR_OAUTH_CLIENT_SECRET)"
    )]
    NoRegistration { server: String },
    #[error("client registration failed: {0}")]
    Registration(String),
    #[error("the authorization request could not be made: {0}")]
    Authorization(String),
    #[error("cannot listen for the redirect on 127.0.0.1: {0}")]
    Listen(String),
    #[error("no redirect arrived within {} s", CALLBACK_TIMEOUT.as_secs())]
    Timeout,
    #[error("no redirect URL was pasted (stdin ended) and no listener could be bound")]
    NothingPasted,
    #[error("the redirect `{got}` is not this login's redirect URI {expected}: refused")]
    ForeignRedirect { got: String, expected: String },
    #[error(
        "the redirect's `state` is not the one this login sent: refused (a forged or stale redirect)"
    )]
    StateMismatch,
    #[error("the authorization server refused: {0}")]
    Denied(String),
    #[error("the token request failed: {0}")]
    Token(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Something printed during the login (the URL to open, hints).
pub trait Prompt {
    fn say(&mut self, line: &str);
}

impl<W: std::io::Write> Prompt for W {
    fn say(&mut self, line: &str) {
        let _ = writeln!(self, "{line}");
        let _ = self.flush();
    }
}

/// Lines pasted by the user, one a message; the channel closes when the input ends.
pub type PastedLines = mpsc::Receiver<String>;

/// Logs in to the server `name` at `server_url` (sent `headers` as configured) and stores the
/// client and tokens. With `no_browser`, pasted redirects are taken from `pasted` when given.
pub async fn login(
    store: &OAuthStore,
    name: &str,
    server_url: &str,
    headers: &BTreeMap<String, String>,
    options: &LoginOptions,
    prompt: &mut dyn Prompt,
    pasted: Option<PastedLines>,
) -> Result<LoginOutcome, LoginError> {
    let previous = store.load(server_url)?;
    let challenge = probe(server_url, headers, options.event_stream).await?;

    let mut manager = connect::manager(server_url)
        .await
        .map_err(|e| discovery_error(server_url, e))?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| discovery_error(server_url, e))?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback {
        return Err(LoginError::NoMetadata {
            url: server_url.to_string(),
        });
    }
    let metadata = resolution.metadata;
    manager.set_metadata(metadata.clone());
    // Tokens go to memory first; the store is written only once everything succeeded.
    let tokens = InMemoryCredentialStore::new();
    manager.set_credential_store(tokens.clone());

    // Scopes: those granted before (a step-up keeps them) and those asked for now.
    let mut scopes: Vec<String> = previous
        .as_ref()
        .and_then(|r| r.credentials.as_ref())
        .map(|c| c.granted_scopes.clone())
        .unwrap_or_default();
    for scope in &options.scopes {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }

    // The client: one given now, else the one registered before for this URL (its redirect
    // URI's port is reused when free), else a new registration.
    let mut client = match &options.client_id {
        Some(id) => Some(RegisteredClient {
            client_id: id.clone(),
            client_secret: options.client_secret.clone(),
            redirect_uri: String::new(),
            source: ClientSource::Configured,
        }),
        None => previous.as_ref().and_then(|r| r.client.clone()),
    };
    // A registered client may be limited to the scopes it was registered with: asking for
    // new ones (a step-up) registers a new client with all of them.
    let granted: &[String] = previous
        .as_ref()
        .and_then(|r| r.credentials.as_ref())
        .map(|c| c.granted_scopes.as_slice())
        .unwrap_or_default();
    if client.as_ref().map(|c| c.source) == Some(ClientSource::Dynamic)
        && options.scopes.iter().any(|s| !granted.contains(s))
    {
        client = None;
    }
    let wanted_port = client.as_ref().and_then(|c| loopback_port(&c.redirect_uri));
    let listener = match wanted_port {
        Some(port) => match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => Some(l),
            Err(_) if options.no_browser => None,
            Err(_) if client.as_ref().map(|c| c.source) == Some(ClientSource::Dynamic) => {
                // Registered for a port now taken: register again on a free one.
                client = None;
                Some(bind_any().await?)
            }
            Err(e) => {
                return Err(LoginError::Listen(format!(
                    "port {port} of the configured client's redirect URI: {e}"
                )));
            }
        },
        None => Some(bind_any().await?),
    };
    let port = match (&listener, wanted_port) {
        (Some(l), _) => l
            .local_addr()
            .map_err(|e| LoginError::Listen(e.to_string()))?
            .port(),
        (None, Some(port)) => port,
        (None, None) => unreachable!("a listener is bound whenever no port is known"),
    };
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    let client = match client {
        Some(mut c) => {
            c.redirect_uri = redirect_uri.clone();
            c
        }
        None => {
            if metadata.registration_endpoint.is_none() {
                return Err(LoginError::NoRegistration {
                    server: name.to_string(),
                });
            }
            let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let config = manager
                .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
                .await
                .map_err(|e| LoginError::Registration(clean(&e.to_string())))?;
            RegisteredClient {
                client_id: config.client_id,
                client_secret: config.client_secret,
                redirect_uri: redirect_uri.clone(),
                source: ClientSource::Dynamic,
            }
        }
    };

    let mut request = AuthorizationRequest::new(&redirect_uri)
        .with_preregistered_client(&client.client_id)
        .with_scopes(scopes.clone());
    if scopes.is_empty() {
        request = request.with_initial_scope_selection();
    }
    if let Some(secret) = &client.client_secret {
        request = request.with_client_secret(secret);
    }
    if let Some(challenge) = &challenge {
        request = request.with_challenge(challenge);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| LoginError::Authorization(clean(&e.to_string())))?;
    let auth_url = session.get_authorization_url().to_string();
    let expected_state = query_param(&auth_url, "state").ok_or_else(|| {
        LoginError::Authorization("the authorization URL carries no state".into())
    })?;

    prompt.say(&format!(
        "To authorize code-executor for `{name}`, open this URL in a browser:\n\n{auth_url}\n"
    ));
    if options.no_browser {
        prompt.say(&format!(
            "Then paste here the address the browser was sent to (it starts with {redirect_uri}):"
        ));
    } else if let Err(why) = open_browser(options.browser.as_deref(), &auth_url) {
        prompt.say(&format!(
            "(Could not open a browser: {why}. Open the URL yourself.)"
        ));
    } else {
        prompt.say("Waiting for the browser to come back...");
    }

    let Redirect { url, browser } = tokio::time::timeout(
        CALLBACK_TIMEOUT,
        wait_for_redirect(listener, pasted, options.no_browser),
    )
    .await
    .map_err(|_| LoginError::Timeout)??;
    let ended: Result<LoginOutcome, LoginError> = async {
        check_redirect(&url, &redirect_uri, &expected_state)?;
        session
            .handle_callback_url(&url)
            .await
            .map_err(|e| LoginError::Token(clean(&token_error(e))))?;
        let credentials =
            tokens.load().await.ok().flatten().ok_or_else(|| {
                LoginError::Token("the token response held no usable token".into())
            })?;
        let expires_in = credentials.token_response.as_ref().and_then(|t| {
            serde_json::to_value(t)
                .ok()?
                .get("expires_in")?
                .as_u64()
                .map(Duration::from_secs)
        });
        let outcome = LoginOutcome {
            client_id: client.client_id.clone(),
            client_source: client.source,
            scopes: credentials.granted_scopes.clone(),
            expires_in,
        };
        let mut record = ServerRecord::new(server_url);
        record.client = Some(client);
        record.credentials = Some(credentials);
        store.save(&record)?;
        Ok(outcome)
    }
    .await;
    if let Some(browser) = browser {
        answer_browser(browser, name, &ended).await;
    }
    ended
}

fn discovery_error(url: &str, e: AuthError) -> LoginError {
    LoginError::Discovery {
        url: url.to_string(),
        reason: clean(&e.to_string()),
    }
}

fn token_error(e: AuthError) -> String {
    match e {
        // oauth2's own message for an error status or a body that is not a token response.
        AuthError::TokenExchangeFailed(m) => {
            format!("the token endpoint's answer is not a token response ({m})")
        }
        other => other.to_string(),
    }
}

/// One line, no control characters, bounded: server-provided text shown to the user.
fn clean(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() > 400 {
        format!("{}…", one_line.chars().take(400).collect::<String>())
    } else {
        one_line
    }
}

async fn bind_any() -> Result<TcpListener, LoginError> {
    TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| LoginError::Listen(e.to_string()))
}

/// The port of a `http://127.0.0.1:<port>/callback` redirect URI.
fn loopback_port(uri: &str) -> Option<u16> {
    let url = reqwest::Url::parse(uri).ok()?;
    (url.scheme() == "http" && url.host_str() == Some("127.0.0.1") && url.path() == CALLBACK_PATH)
        .then(|| url.port())
        .flatten()
}

/// Sends an unauthenticated `initialize` (to a legacy SSE server: opens its event stream) to see
/// whether (and how) the server asks for authorization: the `WWW-Authenticate` of its 401, if any.
async fn probe(
    url: &str,
    headers: &BTreeMap<String, String>,
    event_stream: bool,
) -> Result<Option<String>, LoginError> {
    let unreachable = |reason: String| LoginError::Unreachable {
        url: url.to_string(),
        reason,
    };
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| unreachable(e.to_string()))?;
    let mut request = if event_stream {
        http.get(url).header("accept", "text/event-stream")
    } else {
        http.post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                serde_json::json!({
                    "jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
                    }
                })
                .to_string(),
            )
    };
    for (k, v) in headers {
        request = request.header(k, v);
    }
    let response = request
        .send()
        .await
        .map_err(|e| unreachable(clean(&e.without_url().to_string())))?;
    let status = response.status();
    if status.is_success() {
        return Err(LoginError::NotProtected {
            url: url.to_string(),
        });
    }
    Ok(response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(String::from))
}

/// Whether the server at `url` asks for authorization (an unauthenticated `initialize` is
/// answered 401/403); `false` when it answers it.
pub async fn probe_protected(
    url: &str,
    headers: &BTreeMap<String, String>,
    event_stream: bool,
) -> Result<bool, LoginError> {
    match probe(url, headers, event_stream).await {
        Ok(_) => Ok(true),
        Err(LoginError::NotProtected { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

fn query_param(url: &str, key: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Refuses a redirect that is not to our redirect URI or carries another `state`; reports an
/// authorization error the server sent back.
pub(crate) fn check_redirect(
    got: &str,
    redirect_uri: &str,
    expected_state: &str,
) -> Result<(), LoginError> {
    let foreign = || LoginError::ForeignRedirect {
        got: clean(got.split('?').next().unwrap_or(got)),
        expected: redirect_uri.to_string(),
    };
    let url = reqwest::Url::parse(got).map_err(|_| foreign())?;
    let ours = reqwest::Url::parse(redirect_uri).map_err(|_| foreign())?;
    let same = url.scheme() == ours.scheme()
        && url.host_str() == ours.host_str()
        && url.port_or_known_default() == ours.port_or_known_default()
        && url.path() == ours.path()
        && url.username().is_empty()
        && url.password().is_none();
    if !same {
        return Err(foreign());
    }
    let param = |key: &str| {
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    if param("state").as_deref() != Some(expected_state) {
        return Err(LoginError::StateMismatch);
    }
    if let Some(error) = param("error") {
        let description = param("error_description").unwrap_or_default();
        return Err(LoginError::Denied(clean(
            format!("{error} {description}").trim(),
        )));
    }
    Ok(())
}

/// Opens `url` with `browser`, else the platform's opener; does not wait for it.
fn open_browser(browser: Option<&str>, url: &str) -> Result<(), String> {
    let program = match browser {
        Some(b) if !b.trim().is_empty() => b.to_string(),
        _ if cfg!(target_os = "macos") => "open".to_string(),
        _ => "xdg-open".to_string(),
    };
    let mut child = std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("`{program}`: {e}"))?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// A redirect that came back: its URL and, when the browser brought it to the listener, the
/// browser's connection, waiting for the page that says how the login ended.
struct Redirect {
    url: String,
    browser: Option<TcpStream>,
}

/// The first redirect: a request for the callback path on the listener, or (with
/// `no_browser`) a line pasted, whichever comes first. Input that ends (stdin closed) stops
/// the wait only when no listener is bound.
async fn wait_for_redirect(
    listener: Option<TcpListener>,
    pasted: Option<PastedLines>,
    no_browser: bool,
) -> Result<Redirect, LoginError> {
    let listening = listener.is_some();
    let from_listener = async {
        match listener {
            Some(l) => serve_callback(l).await,
            None => std::future::pending().await,
        }
    };
    let from_paste = async {
        match pasted {
            Some(mut lines) if no_browser => loop {
                match lines.recv().await {
                    // The input ended: the browser may still come back to the listener.
                    None if listening => std::future::pending::<()>().await,
                    None => return Err(LoginError::NothingPasted),
                    Some(line) if line.trim().is_empty() => continue,
                    Some(line) => {
                        return Ok(Redirect {
                            url: line.trim().to_string(),
                            browser: None,
                        });
                    }
                }
            },
            _ => std::future::pending().await,
        }
    };
    tokio::select! {
        r = from_listener => r,
        r = from_paste => r,
    }
}

/// Answers requests on the loopback listener until one asks for the callback path; returns
/// its URL and the connection, left unanswered.
async fn serve_callback(listener: TcpListener) -> Result<Redirect, LoginError> {
    let port = listener
        .local_addr()
        .map_err(|e| LoginError::Listen(e.to_string()))?
        .port();
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|e| LoginError::Listen(e.to_string()))?;
        let mut head = Vec::new();
        let mut chunk = [0u8; 2048];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_CALLBACK_HEAD {
                match socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await;
        if read.is_err() {
            continue;
        }
        let text = String::from_utf8_lossy(&head);
        let target = text
            .lines()
            .next()
            .and_then(|line| {
                let mut parts = line.split(' ');
                (parts.next() == Some("GET"))
                    .then(|| parts.next())
                    .flatten()
            })
            .unwrap_or("");
        if target.split('?').next() != Some(CALLBACK_PATH) {
            let _ = socket
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        return Ok(Redirect {
            url: format!("http://127.0.0.1:{port}{target}"),
            browser: Some(socket),
        });
    }
}

/// The page the browser is shown once the login has ended: that it is stored, or that it was
/// refused and why. Plain text, never sniffed as HTML, in words of our own: nothing a redirect
/// or a server wrote is echoed (the terminal has the details).
fn callback_page(name: &str, ended: &Result<LoginOutcome, LoginError>) -> (&'static str, String) {
    let name = clean(name);
    let Err(e) = ended else {
        return (
            "200 OK",
            format!(
                "code-executor: logged in to `{name}`; the tokens are stored. You may close this tab.\n"
            ),
        );
    };
    let (status, why) = match e {
        LoginError::StateMismatch => (
            "400 Bad Request",
            "refused: the redirect's `state` is not the one this login sent (a forged or stale redirect)",
        ),
        LoginError::ForeignRedirect { .. } => (
            "400 Bad Request",
            "refused: the redirect is not this login's redirect URI",
        ),
        LoginError::Denied(_) => (
            "400 Bad Request",
            "the authorization server refused the authorization",
        ),
        LoginError::Token(_) => (
            "502 Bad Gateway",
            "the token request to the authorization server failed",
        ),
        LoginError::Store(_) => (
            "500 Internal Server Error",
            "the tokens could not be stored",
        ),
        _ => ("500 Internal Server Error", "the login failed"),
    };
    let body = format!(
        "code-executor: the login to `{name}` failed and nothing was stored: {why}.\nSee the terminal for details. You may close this tab.\n"
    );
    (status, body)
}

async fn answer_browser(
    mut socket: TcpStream,
    name: &str,
    ended: &Result<LoginOutcome, LoginError>,
) {
    let (status, body) = callback_page(name, ended);
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\nx-content-type-options: nosniff\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        let _ = socket.write_all(answer.as_bytes()).await;
        let _ = socket.shutdown().await;
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "http://127.0.0.1:4567/callback";

    #[test]
    fn only_our_redirect_uri_with_our_state_is_accepted() {
        assert!(check_redirect(&format!("{OURS}?code=c&state=s1"), OURS, "s1").is_ok());
        for foreign in [
            "http://evil.example:4567/callback?code=c&state=s1",
            "https://127.0.0.1:4567/callback?code=c&state=s1",
            "http://127.0.0.1:4568/callback?code=c&state=s1",
            "http://127.0.0.1:4567/elsewhere?code=c&state=s1",
            "http://user@127.0.0.1:4567/callback?code=c&state=s1",
            "not a url",
        ] {
            assert!(
                matches!(
                    check_redirect(foreign, OURS, "s1"),
                    Err(LoginError::ForeignRedirect { .. })
                ),
                "{foreign}"
            );
        }
        assert!(matches!(
            check_redirect(&format!("{OURS}?code=c&state=other"), OURS, "s1"),
            Err(LoginError::StateMismatch)
        ));
        assert!(matches!(
            check_redirect(&format!("{OURS}?code=c"), OURS, "s1"),
            Err(LoginError::StateMismatch)
        ));
        assert!(matches!(
            check_redirect(&format!("{OURS}?error=access_denied&state=s1"), OURS, "s1"),
            Err(LoginError::Denied(_))
        ));
    }

    #[test]
    fn options_show_no_client_secret() {
        let options = LoginOptions {
            client_id: Some("id-1".into()),
            client_secret: Some("very-secret".into()),
            ..Default::default()
        };
        let shown = format!("{options:?}");
        assert!(
            shown.contains("id-1") && !shown.contains("very-secret"),
            "{shown}"
        );
    }

    #[test]
    fn loopback_ports_are_read_from_our_redirect_uris_only() {
        assert_eq!(loopback_port(OURS), Some(4567));
        assert_eq!(loopback_port("http://localhost:4567/callback"), None);
        assert_eq!(loopback_port("http://127.0.0.1:4567/other"), None);
    }

    #[tokio::test]
    async fn the_listener_ignores_other_paths_and_answers_the_callback_once_the_login_ended() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = tokio::spawn(serve_callback(listener));
        let get = |path: &'static str| async move {
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut answer = String::new();
            s.read_to_string(&mut answer).await.unwrap();
            answer
        };
        assert!(get("/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let browser = tokio::spawn(get("/callback?code=a&state=b"));
        let redirect = served.await.unwrap().unwrap();
        assert_eq!(
            redirect.url,
            format!("http://127.0.0.1:{port}/callback?code=a&state=b")
        );
        // The browser waits until the login has ended, and is told how.
        assert!(!browser.is_finished());
        let socket = redirect.browser.expect("the browser's connection");
        answer_browser(socket, "secure", &Err(LoginError::StateMismatch)).await;
        let page = browser.await.unwrap();
        assert!(page.starts_with("HTTP/1.1 400"), "{page}");
        assert!(page.contains("x-content-type-options: nosniff"), "{page}");
        assert!(
            page.contains("failed and nothing was stored") && page.contains("`state`"),
            "{page}"
        );
    }

    #[test]
    fn the_callback_page_tells_how_the_login_ended_and_echoes_no_markup_or_controls() {
        let stored = Ok(LoginOutcome {
            client_id: "c".into(),
            client_source: ClientSource::Dynamic,
            scopes: vec![],
            expires_in: None,
        });
        let (status, page) = callback_page("secure", &stored);
        assert_eq!(status, "200 OK");
        assert!(page.contains("logged in to `secure`; the tokens are stored"));
        let (status, page) = callback_page("secure", &Err(LoginError::StateMismatch));
        assert_eq!(status, "400 Bad Request");
        assert!(
            page.contains("refused") && !page.contains("logged in"),
            "{page}"
        );
        // Nothing the authorization server wrote is echoed.
        let denied = check_redirect(
            &format!("{OURS}?error=access_denied&error_description=%3Cb%3Ex%0D%0A&state=s1"),
            OURS,
            "s1",
        )
        .unwrap_err();
        let (status, page) = callback_page("secure", &Err(denied));
        assert_eq!(status, "400 Bad Request");
        assert!(page.contains("refused the authorization"), "{page}");
        assert!(
            !page.contains("access_denied") && !page.contains("<b>"),
            "{page}"
        );
        let (status, _) = callback_page("secure", &Err(LoginError::Token("500".into())));
        assert_eq!(status, "502 Bad Gateway");
    }
}
