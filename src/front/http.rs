//! Serving the MCP endpoint over streamable HTTP at `/mcp`.
//!
//! Binds 127.0.0.1 unless told otherwise. rmcp's transport checks the `Host` header against the
//! allowed hosts (loopback names by default, which blocks DNS rebinding) and the `Origin` header
//! of browser requests against loopback origins (a foreign page gets 403).

use std::net::SocketAddr;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Front;

/// Serves until `shutdown` is cancelled. Returns once the listener is closed.
pub async fn serve(
    front: Front,
    addr: SocketAddr,
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
    // Browsers send `Origin`; only pages served from this machine may talk to us (requests
    // without an `Origin`, i.e. non-browser clients, are unaffected).
    let allowed_origins = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_allowed_origins(allowed_origins)
        // Executions are stateless, so no MCP session is needed; plain JSON responses also
        // spare clients an SSE event size limit (a full 1 MiB output is carried twice: in
        // structuredContent and in the text block).
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(front.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    bound(listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
}
