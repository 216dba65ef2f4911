//! Serving the MCP endpoint over streamable HTTP at `/mcp`.
//!
//! Binds 127.0.0.1 unless told otherwise; [`check_exposure`] refuses an address beyond loopback
//! without a token unless the operator passes the loudly named `--allow-unauthenticated-network`.
//! Connections are accepted by [`guard`]: header-read and idle timeouts, connection limits that
//! keep clients without the token from starving those with it, and, with a token configured,
//! `Authorization: Bearer <token>` on every request (compared in constant time) or 401. rmcp's
//! transport then checks the `Host` header against the allowed hosts (loopback names, plus
//! `http_allowed_hosts`; this blocks DNS rebinding), the `Origin` header of browser requests
//! against loopback origins plus `http_allowed_origins` (a foreign page gets 403), and the body
//! size ([`request_body_limit`]; 413 beyond it). The client's token stays here: nothing forwards
//! it to downstream servers.
//!
//! The endpoint is stateless: it issues no MCP session. A 2026-07-28 request's `Mcp-Session-Id`
//! is ignored (that revision has no sessions); an earlier client's is one this server never
//! issued and gets 404. The client session of rate limits and audit records is the request's
//! [`guard::Principal`] (the token's fingerprint, or the peer's address without a token), never
//! anything the client chose.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::model::ProtocolVersion;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Front;
use super::guard::{self, Guard, Limits};
use crate::config::settings::Secret;

/// The name of the flag that lets `serve --http` listen beyond loopback without a token.
pub const ALLOW_UNAUTHENTICATED_NETWORK: &str = "--allow-unauthenticated-network";

/// Headroom of a request body over the code it carries: JSON escaping (`\n`, `\"`, `\uXXXX`
/// for non-ASCII text) at most quadruples typical code, plus the JSON-RPC envelope.
const BODY_PER_CODE_BYTE: usize = 4;
const BODY_ENVELOPE_BYTES: usize = 64 * 1024;

/// Who may talk to the endpoint.
#[derive(Debug, Clone)]
pub struct HttpAccess {
    /// Required bearer token, if any.
    pub token: Option<Secret>,
    /// `Host` values accepted besides the loopback names.
    pub extra_hosts: Vec<String>,
    /// Browser origins accepted besides loopback pages.
    pub extra_origins: Vec<String>,
    /// Largest request body, in bytes ([`request_body_limit`]).
    pub max_body_bytes: usize,
}

/// The largest request body `/mcp` reads: `4 × max_code_bytes + 64 KiB` (4.06 MiB with the
/// default 1 MiB of code), enough for the largest code the executor accepts.
pub fn request_body_limit(max_code_bytes: usize) -> usize {
    max_code_bytes
        .saturating_mul(BODY_PER_CODE_BYTE)
        .saturating_add(BODY_ENVELOPE_BYTES)
}

/// How far an address lets the endpoint be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Loopback only: this machine's users.
    Loopback,
    /// Beyond loopback, with a token.
    Authenticated,
    /// Beyond loopback without a token, because the operator said so.
    UnauthenticatedNetwork,
}

/// Refuses to serve beyond loopback without a token, unless `allow_unauthenticated_network`.
pub fn check_exposure(
    addr: SocketAddr,
    has_token: bool,
    allow_unauthenticated_network: bool,
) -> Result<Exposure, String> {
    if addr.ip().to_canonical().is_loopback() {
        return Ok(Exposure::Loopback);
    }
    if has_token {
        return Ok(Exposure::Authenticated);
    }
    if allow_unauthenticated_network {
        return Ok(Exposure::UnauthenticatedNetwork);
    }
    Err(format!(
        "refusing to serve HTTP on {addr} without a token: every host that can reach it could run \
         code and call every configured tool. Put a random token in a file (`openssl rand -hex 32 \
         > token`) and set `http_token_file` (or CODE_EXECUTOR_HTTP_TOKEN); or listen on \
         127.0.0.1; or, only on a network you trust entirely, pass {ALLOW_UNAUTHENTICATED_NETWORK}"
    ))
}

/// Serves until `shutdown` is cancelled. Returns once the listener is closed.
pub async fn serve(
    front: Front,
    addr: SocketAddr,
    access: HttpAccess,
    shutdown: CancellationToken,
    bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let mut allowed_hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        allowed_hosts.push(addr.ip().to_string());
    }
    allowed_hosts.extend(access.extra_hosts.iter().cloned());
    // Browsers send `Origin`; only pages served from this machine (or named by the operator)
    // may talk to us. Requests without an `Origin`, i.e. non-browser clients, are unaffected.
    let mut allowed_origins: Vec<String> =
        ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
            .map(String::from)
            .into();
    allowed_origins.extend(access.extra_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        // Executions are stateless, so no MCP session is needed; plain JSON responses also
        // spare clients an SSE event size limit (a full 1 MiB output is carried twice: in
        // structuredContent and in the text block). rmcp switches a response to SSE when the
        // handler sends notifications first (progress).
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(access.max_body_bytes)
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(front.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(refuse_unissued_sessions));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    bound(listener.local_addr()?);
    let guard = Guard::new(access.token.as_ref(), &[], Limits::MCP);
    guard::serve(listener, router, guard, shutdown).await
}

/// The header naming an MCP session.
const SESSION_HEADER: &str = "mcp-session-id";
/// The header naming the protocol version of a request.
const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// This server issues no session. A request of protocol 2026-07-28 or later knows no sessions:
/// its `Mcp-Session-Id` is ignored, as that revision asks (streamable HTTP, "Earlier Streamable
/// HTTP Revisions"). An earlier client's id is one this server never issued: 404, as those
/// revisions ask for an unknown session (the client then starts over without one). Either way
/// the header picks nothing: rmcp serves every request without a session.
async fn refuse_unissued_sessions(request: Request, next: Next) -> Response {
    if request.headers().contains_key(SESSION_HEADER) && !sessionless_era(request.headers()) {
        return (
            StatusCode::NOT_FOUND,
            "unknown MCP session: this server is stateless and issues no Mcp-Session-Id; send \
             requests without one",
        )
            .into_response();
    }
    next.run(request).await
}

/// Whether the request names (in `MCP-Protocol-Version`) a protocol without the `initialize`
/// handshake, and so without sessions: 2026-07-28 or later.
fn sessionless_era(headers: &HeaderMap) -> bool {
    headers
        .get(PROTOCOL_VERSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(|v| serde_json::from_value::<ProtocolVersion>(v.into()).ok())
        .is_some_and(|version| !version.has_initialize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_loopback_needs_a_token_or_the_loud_opt_out() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        for local in [
            "127.0.0.1:8765",
            "[::1]:8765",
            "[::ffff:127.0.0.1]:1",
            "127.9.9.9:1",
        ] {
            assert_eq!(
                check_exposure(at(local), false, false),
                Ok(Exposure::Loopback)
            );
        }
        for wide in [
            "0.0.0.0:8765",
            "[::]:8765",
            "192.0.2.1:8765",
            "[::ffff:10.0.0.1]:1",
        ] {
            let err = check_exposure(at(wide), false, false).unwrap_err();
            assert!(
                err.contains("without a token")
                    && err.contains("http_token_file")
                    && err.contains("openssl rand -hex 32")
                    && err.contains(ALLOW_UNAUTHENTICATED_NETWORK),
                "{err}"
            );
            assert_eq!(
                check_exposure(at(wide), true, false),
                Ok(Exposure::Authenticated)
            );
            assert_eq!(
                check_exposure(at(wide), false, true),
                Ok(Exposure::UnauthenticatedNetwork)
            );
        }
    }

    #[test]
    fn only_a_request_of_a_sessionless_protocol_may_carry_a_session_id() {
        let named = |version: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(PROTOCOL_VERSION_HEADER, version.parse().unwrap());
            sessionless_era(&headers)
        };
        assert!(named("2026-07-28"));
        assert!(!named("2025-11-25"));
        assert!(!named("2025-06-18"));
        assert!(!sessionless_era(&HeaderMap::new()));
    }

    #[test]
    fn the_body_limit_fits_the_largest_code() {
        assert_eq!(request_body_limit(1024 * 1024), 4 * 1024 * 1024 + 64 * 1024);
        assert_eq!(request_body_limit(usize::MAX), usize::MAX);
    }
}
