//! Serving the MCP endpoint over streamable HTTP at `/mcp`.
//!
//! Binds 127.0.0.1 unless told otherwise. rmcp's transport checks the `Host` header against the
//! allowed hosts (loopback names, plus `http_allowed_hosts`; this blocks DNS rebinding) and the
//! `Origin` header of browser requests against loopback origins plus `http_allowed_origins` (a
//! foreign page gets 403). With a token configured, every request must carry
//! `Authorization: Bearer <token>` (compared in constant time) or gets 401. The client's token
//! stays here: nothing forwards it to downstream servers.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::Front;
use crate::config::settings::Secret;

/// Who may talk to the endpoint.
#[derive(Debug, Clone, Default)]
pub struct HttpAccess {
    /// Required bearer token, if any.
    pub token: Option<Secret>,
    /// `Host` values accepted besides the loopback names.
    pub extra_hosts: Vec<String>,
    /// Browser origins accepted besides loopback pages.
    pub extra_origins: Vec<String>,
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
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(front.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(token) = access.token {
        let expected = Arc::new(Sha256::digest(token.expose().as_bytes()).to_vec());
        router = router.layer(middleware::from_fn_with_state(expected, require_bearer));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    bound(listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
}

/// Lets a request through only with the right bearer token. Both sides are hashed first, so the
/// comparison takes the same time whatever the token's length or content.
async fn require_bearer(
    State(expected): State<Arc<Vec<u8>>>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let authorized = presented.is_some_and(|token| {
        let digest = Sha256::digest(token.trim().as_bytes());
        bool::from(digest.as_slice().ct_eq(expected.as_slice()))
    });
    if authorized {
        return next.run(request).await;
    }
    let reason = if presented.is_some() {
        "invalid bearer token"
    } else {
        "missing bearer token: send `Authorization: Bearer <token>`"
    };
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        reason,
    )
        .into_response()
}
