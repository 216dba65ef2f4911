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
//! Only the path `/mcp` is the endpoint; any other gets 404. Every answer the endpoint refuses
//! at the HTTP level (401, 403, 404, 405, 406, 413, 415, 503) carries a JSON-RPC error body
//! (`application/json`, id `null`, code `-32000`, the reason as message; `-32001` for an
//! unknown session), so that JSON-RPC clients show the reason, not only the status. A request
//! body is checked by [`malformed`] before rmcp reads it: not JSON is `-32700` with HTTP 400,
//! not a JSON-RPC message `-32600` with 400, a known method's parameters that do not fit
//! `-32602` with 200, an unknown method `-32601` (404 to a 2026-07-28 request, 200 before, as
//! rmcp answers it); each is warned about, limited per principal ([`super::complaints`]).
//! rmcp's own `-32601` answers are reworded the one way ([`super::session::reword_not_found`]).
//!
//! The endpoint is stateless: it issues no MCP session. A 2026-07-28 request's `Mcp-Session-Id`
//! is ignored (that revision has no sessions); an earlier client's is one this server never
//! issued and gets 404. The client session of rate limits and audit records is the request's
//! [`guard::Principal`] (the token's fingerprint, or the peer's address without a token), never
//! anything the client chose.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, JsonRpcMessage, ProtocolVersion};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Front;
use super::complaints::{Complaints, client_fault};
use super::guard::{self, Guard, Limits, Principal};
use super::malformed::{self, Answer, Verdict};
use super::session::reword_not_found;
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
    let checks = Checks {
        complaints: front.complaints.clone(),
        max_body_bytes: access.max_body_bytes,
    };
    let service = StreamableHttpService::new(
        move || Ok(front.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new()
        .route_service(ENDPOINT, service)
        .fallback(unknown_path)
        .layer(middleware::from_fn_with_state(checks, check_messages))
        .layer(middleware::from_fn(refuse_unissued_sessions))
        .layer(middleware::from_fn(json_rpc_refusals));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    bound(listener.local_addr()?);
    let guard = Guard::new(access.token.as_ref(), &[], Limits::MCP)
        .with_refusal_body(json_rpc_refusal_body);
    guard::serve(listener, router, guard, shutdown).await
}

/// The endpoint's path.
const ENDPOINT: &str = "/mcp";
/// The JSON-RPC code of a refusal at the HTTP level (the implementation-defined server error
/// range, as the reference SDKs answer these).
const HTTP_REFUSAL: ErrorCode = ErrorCode(-32000);
/// The JSON-RPC code of an unknown session.
const UNKNOWN_SESSION: ErrorCode = ErrorCode(-32001);
/// The largest text body of an HTTP-level refusal turned into a JSON-RPC error.
const MAX_REFUSAL_TEXT: usize = 64 * 1024;
/// The largest JSON answer read to reword a `-32601` in it and warn about an error (error
/// answers are small).
const MAX_REWORDED_ANSWER: u64 = 64 * 1024;

/// A JSON-RPC error object with id `null`, as a body.
fn json_rpc_error(code: ErrorCode, message: &str) -> Vec<u8> {
    let answer = Answer {
        id: None,
        error: rmcp::ErrorData::new(code, message.to_string(), None),
    };
    answer.to_json().to_string().into_bytes()
}

/// The guard's refusals (401, 503) as JSON-RPC errors.
fn json_rpc_refusal_body(_: StatusCode, reason: &str) -> (HeaderValue, Body) {
    (
        HeaderValue::from_static("application/json"),
        Body::from(json_rpc_error(HTTP_REFUSAL, reason)),
    )
}

/// An answer of `status` carrying `body` as JSON.
fn json_answer(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Any path but the endpoint's.
async fn unknown_path(request: Request) -> Response {
    let message = format!(
        "not found: {} is not an MCP endpoint; the endpoint is {ENDPOINT}",
        request.uri().path()
    );
    json_answer(
        StatusCode::NOT_FOUND,
        json_rpc_error(HTTP_REFUSAL, &message),
    )
}

/// Turns an HTTP-level refusal with a text body (rmcp's 403, 405, 406, 413, 415; the unknown
/// session's 404) into the same refusal with a JSON-RPC error body carrying the text.
async fn json_rpc_refusals(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_REFUSAL_TEXT)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_string()
    } else {
        text
    };
    let code = if status == StatusCode::NOT_FOUND && message.starts_with(UNKNOWN_SESSION_TEXT) {
        UNKNOWN_SESSION
    } else {
        HTTP_REFUSAL
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(json_rpc_error(code, &message)))
}

/// What [`check_messages`] needs.
#[derive(Clone)]
struct Checks {
    complaints: std::sync::Arc<Complaints>,
    max_body_bytes: usize,
}

/// Answers a JSON request body that cannot be served (see [`malformed`]) before rmcp reads
/// it, and rewords rmcp's `-32601` answers.
async fn check_messages(State(checks): State<Checks>, request: Request, next: Next) -> Response {
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if request.method() != Method::POST || !is_json || request.uri().path() != ENDPOINT {
        return next.run(request).await;
    }
    let session = request
        .extensions()
        .get::<Principal>()
        .map_or_else(|| "http".to_string(), |p| p.as_str().to_string());
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, checks.max_body_bytes).await else {
        let message = format!(
            "Payload Too Large: request body exceeds {} bytes",
            checks.max_body_bytes
        );
        return json_answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            json_rpc_error(HTTP_REFUSAL, &message),
        );
    };
    let method = match malformed::check(&bytes) {
        Verdict::Serve(message) => match *message {
            ClientJsonRpcMessage::Request(request) => Some(request.request.method().to_string()),
            _ => None,
        },
        Verdict::Answer(answer) => {
            checks.complaints.complain(
                &session,
                &format!("{} {}", answer.error.code.0, answer.error.message),
            );
            let status = answer_status(&answer, &parts.headers);
            return json_answer(status, answer.to_json().to_string().into_bytes());
        }
        Verdict::Drop(why) => {
            checks.complaints.complain(&session, &why);
            return StatusCode::ACCEPTED.into_response();
        }
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    match method {
        Some(method) => reworded(response, &method, &checks.complaints, &session).await,
        None => response,
    }
}

/// The HTTP status of an answer made by [`malformed`]: a message that is not a JSON-RPC
/// request cannot be accepted (400); a request is answered, `-32601` with 404 on 2026-07-28.
fn answer_status(answer: &Answer, headers: &HeaderMap) -> StatusCode {
    match answer.error.code {
        ErrorCode::PARSE_ERROR | ErrorCode::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND if sessionless_era(headers) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// `response` to a request of `method` from `session`, its `-32601` error (if it is one) worded
/// the one way; an error answer is warned about (limited per session when the client caused it).
async fn reworded(
    response: Response,
    method: &str,
    complaints: &Complaints,
    session: &str,
) -> Response {
    use axum::body::HttpBody as _;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let small = response
        .body()
        .size_hint()
        .exact()
        .is_some_and(|size| size <= MAX_REWORDED_ANSWER);
    if !is_json || !small {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_REWORDED_ANSWER as usize).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let Ok(JsonRpcMessage::Error(mut error)) =
        serde_json::from_slice::<rmcp::model::ServerJsonRpcMessage>(&bytes)
    else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    reword_not_found(&mut error.error, method);
    let what = format!("{method}: {} {}", error.error.code.0, error.error.message);
    if client_fault(&error.error) {
        complaints.complain(session, &what);
    } else {
        tracing::warn!(session, "front: error answer: {what}");
    }
    if error.error.code != ErrorCode::METHOD_NOT_FOUND {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let body = serde_json::to_vec(&error).expect("a JSON-RPC error serializes");
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

/// How the answer to an unknown session begins.
const UNKNOWN_SESSION_TEXT: &str = "unknown MCP session";

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
        let message = format!(
            "{UNKNOWN_SESSION_TEXT}: this server is stateless and issues no Mcp-Session-Id; send \
             requests without one"
        );
        return json_answer(
            StatusCode::NOT_FOUND,
            json_rpc_error(UNKNOWN_SESSION, &message),
        );
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
    fn a_refusal_is_a_json_rpc_error_with_a_null_id() {
        let body: serde_json::Value =
            serde_json::from_slice(&json_rpc_error(HTTP_REFUSAL, "invalid bearer token")).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32000, "message": "invalid bearer token"}
            })
        );
        let (content_type, _) = json_rpc_refusal_body(StatusCode::UNAUTHORIZED, "x");
        assert_eq!(content_type, "application/json");
    }

    #[test]
    fn only_what_is_no_request_is_refused_with_400() {
        let answer = |code| Answer {
            id: None,
            error: rmcp::ErrorData::new(code, "m", None),
        };
        let legacy = HeaderMap::new();
        let mut modern = HeaderMap::new();
        modern.insert(PROTOCOL_VERSION_HEADER, "2026-07-28".parse().unwrap());
        for (code, before, on_2026) in [
            (ErrorCode::PARSE_ERROR, 400, 400),
            (ErrorCode::INVALID_REQUEST, 400, 400),
            (ErrorCode::INVALID_PARAMS, 200, 200),
            (ErrorCode::METHOD_NOT_FOUND, 200, 404),
        ] {
            assert_eq!(answer_status(&answer(code), &legacy).as_u16(), before);
            assert_eq!(answer_status(&answer(code), &modern).as_u16(), on_2026);
        }
    }

    #[test]
    fn the_body_limit_fits_the_largest_code() {
        assert_eq!(request_body_limit(1024 * 1024), 4 * 1024 * 1024 + 64 * 1024);
        assert_eq!(request_body_limit(usize::MAX), usize::MAX);
    }
}
