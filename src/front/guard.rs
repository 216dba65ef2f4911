//! Accepting HTTP connections so that clients without the token cannot starve those with it:
//! the accept loop of both HTTP listeners (the MCP endpoint and the operations endpoint), the
//! bearer-token check, and every connection limit. Nothing here knows MCP.
//!
//! A connection is *pending* until one of its requests carries the right token (with no token
//! configured: until its first complete request), then *established*.
//! - Every connection must send a complete request head within [`HEADER_READ_TIMEOUT`] (10 s),
//!   and again within it after each answer (hyper restarts the timer when a kept-alive
//!   connection goes idle, so it is also the idle timeout): an idle or slow socket is closed.
//! - At most [`MAX_PENDING_CONNECTIONS`] (64) pending connections: a new connection beyond that
//!   closes the oldest pending one. A flood of idle or slow sockets therefore holds a bounded
//!   number of descriptors and never the listener, and a token holder's connection, which sends
//!   its request at once, is established before the flood can push it out.
//! - At most [`MAX_CONNECTIONS`] (256) established connections: beyond that a request gets 503
//!   and its connection is closed.
//! - A request without the right token gets 401 and its connection is closed at once.
//! - When the process runs out of descriptors (`EMFILE`), the oldest pending connection is closed
//!   and accepting resumes after [`ACCEPT_RETRY`].
//! - A request head (request line and headers) still incomplete after [`MAX_HEAD_BYTES`]
//!   (64 KiB) gets 431 and its connection is closed (hyper checks between reads, so a head that
//!   arrives in one burst may reach about twice that).
//!
//! The operations endpoint has its own, smaller limits ([`Limits::OPS`]) and paths that need no
//! token (`/livez`, `/readyz`: probes). Each request's [`Principal`] (the token's fingerprint or,
//! without a token, the peer's address) is set here and nowhere else: a client cannot choose it.
//! The body of a refusal (401, 503) is plain text unless the listener's owner shapes it
//! ([`Guard::with_refusal_body`]: the MCP endpoint answers in JSON-RPC).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::settings::Secret;

/// Time a connection has to send a complete request head, from its start and again after each
/// answer (so also the keep-alive idle timeout).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections of the MCP endpoint that have not yet presented the token; a new one beyond this
/// closes the oldest.
pub const MAX_PENDING_CONNECTIONS: usize = 64;
/// Established (authenticated) connections of the MCP endpoint.
pub const MAX_CONNECTIONS: usize = 256;
/// Pending connections of the operations endpoint.
pub const OPS_MAX_PENDING_CONNECTIONS: usize = 16;
/// Established connections of the operations endpoint.
pub const OPS_MAX_CONNECTIONS: usize = 16;
/// Largest incomplete request head (request line and headers) buffered; hyper answers 431.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Pause before accepting again after an accept error (e.g. out of descriptors).
pub const ACCEPT_RETRY: Duration = Duration::from_millis(50);
/// Least time between two warnings that pending connections were closed to make room.
const EVICTION_WARNING_EVERY: Duration = Duration::from_secs(60);

/// The connection limits of one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_pending: usize,
    pub max_established: usize,
    pub header_read_timeout: Duration,
}

impl Limits {
    /// The MCP endpoint's limits.
    pub const MCP: Limits = Limits {
        max_pending: MAX_PENDING_CONNECTIONS,
        max_established: MAX_CONNECTIONS,
        header_read_timeout: HEADER_READ_TIMEOUT,
    };
    /// The operations endpoint's limits (a few probes and one scraper).
    pub const OPS: Limits = Limits {
        max_pending: OPS_MAX_PENDING_CONNECTIONS,
        max_established: OPS_MAX_CONNECTIONS,
        header_read_timeout: HEADER_READ_TIMEOUT,
    };
}

/// Whom a request was admitted as: `http-token:<first 12 hex digits of the token's SHA-256>`
/// when a token is required, else `http-peer:<peer IP>`. The MCP front uses it as the client
/// session of rate limits and audit records. Only this module makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(String);

impl Principal {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A principal named by the operator (`--principal` of `workspace` and `skills`), as this
    /// module names them: `http-token:` and the 12 hex digits of the token's fingerprint, or
    /// `http-peer:` and an IP address (written as the guard writes it, so `::ffff:127.0.0.2`
    /// is `127.0.0.2`).
    pub fn parse(name: &str) -> Result<Principal, String> {
        let refused = || {
            format!(
                "`{}` names no principal: write `http-token:<12 hex digits>` or `http-peer:<IP address>`, as the audit log and `code-executor workspace principals` show them",
                name.escape_debug()
            )
        };
        if let Some(fingerprint) = name.strip_prefix("http-token:") {
            let hex = fingerprint.len() == 12
                && fingerprint
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
            return hex.then(|| Principal(name.to_string())).ok_or_else(refused);
        }
        let ip: std::net::IpAddr = name
            .strip_prefix("http-peer:")
            .and_then(|ip| ip.parse().ok())
            .ok_or_else(refused)?;
        Ok(Principal(format!("http-peer:{}", ip.to_canonical())))
    }
}

/// The bearer token a listener requires, kept as its SHA-256 only.
#[derive(Clone)]
struct BearerToken {
    digest: [u8; 32],
    principal: Principal,
}

impl BearerToken {
    fn new(token: &Secret) -> Self {
        let digest: [u8; 32] = Sha256::digest(token.expose().as_bytes()).into();
        let principal = Principal(format!("http-token:{}", hex::encode(&digest[..6])));
        BearerToken { digest, principal }
    }

    /// Whether the request carries the token. Both sides are hashed first, so the comparison
    /// takes the same time whatever the presented token's length or content.
    fn admits(&self, headers: &HeaderMap) -> Result<&Principal, &'static str> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_credentials);
        let Some(presented) = presented else {
            return Err("missing bearer token: send `Authorization: Bearer <token>`");
        };
        let digest = Sha256::digest(presented.as_bytes());
        if bool::from(digest.as_slice().ct_eq(&self.digest)) {
            Ok(&self.principal)
        } else {
            Err("invalid bearer token")
        }
    }
}

/// The credentials of an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim())
}

/// The body of a refusal with its `Content-Type`, made from the refusal's reason.
pub type RefusalBody = fn(StatusCode, &str) -> (HeaderValue, Body);

/// Plain text: the reason as it is.
fn text_body(_: StatusCode, reason: &str) -> (HeaderValue, Body) {
    (
        HeaderValue::from_static("text/plain; charset=utf-8"),
        Body::from(reason.to_string()),
    )
}

/// Who may use a listener and how many connections it keeps.
#[derive(Clone)]
pub struct Guard {
    token: Option<BearerToken>,
    open_paths: &'static [&'static str],
    limits: Limits,
    refusal_body: RefusalBody,
}

impl Guard {
    /// `token`: required on every path but `open_paths` (none required when `None`).
    pub fn new(
        token: Option<&Secret>,
        open_paths: &'static [&'static str],
        limits: Limits,
    ) -> Self {
        Guard {
            token: token.map(BearerToken::new),
            open_paths,
            limits,
            refusal_body: text_body,
        }
    }

    /// Refusals with bodies made by `body` instead of plain text.
    pub fn with_refusal_body(mut self, body: RefusalBody) -> Self {
        self.refusal_body = body;
        self
    }

    fn principal(&self, headers: &HeaderMap, peer: SocketAddr) -> Result<Principal, &'static str> {
        match &self.token {
            Some(token) => token.admits(headers).cloned(),
            None => Ok(Principal(format!("http-peer:{}", peer.ip().to_canonical()))),
        }
    }
}

/// Serves `router` on `listener` behind `guard` until `shutdown`; then lets the requests in
/// flight finish and returns.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    guard: Guard,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let registry = Arc::new(Registry::new(guard.limits));
    let guard = Arc::new(guard);
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Most likely out of descriptors: free one, so that the next connection (perhaps
                // a token holder's) can be accepted.
                let freed = registry.evict_oldest();
                tracing::warn!(
                    closed_a_pending_connection = freed,
                    "http: accept failed: {e}"
                );
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            slot: registry.admit(),
            guard: guard.clone(),
            router: router.clone(),
            peer,
        };
        connections.spawn(connection.run(stream, shutdown.clone()));
    }
    while connections.join_next().await.is_some() {}
    Ok(())
}

fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// One accepted connection.
struct Connection {
    slot: Slot,
    guard: Arc<Guard>,
    router: axum::Router,
    peer: SocketAddr,
}

impl Connection {
    async fn run(self, stream: TcpStream, shutdown: CancellationToken) {
        let evicted = self.slot.evicted.clone();
        let timeout = self.guard.limits.header_read_timeout;
        let this = Arc::new(self);
        let state = this.clone();
        let service = hyper::service::service_fn(move |request| {
            let this = this.clone();
            async move { Ok::<_, Infallible>(this.handle(request).await) }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(timeout)
            .max_buf_size(MAX_HEAD_BYTES);
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("http: connection ended: {e}");
                }
            }
            () = evicted.cancelled() => {
                tracing::debug!("http: closed a pending connection to make room");
            }
            () = shutdown.cancelled() => {
                // A pending connection has nothing worth finishing; an established one finishes
                // the request in flight (the MCP service cancels executions on shutdown).
                if state.slot.is_established() {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        }
    }

    /// Admits one request: open paths as they are; others only with the token, which also
    /// establishes the connection and tags the request with its [`Principal`].
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        let mut request = request.map(Body::new);
        if !self.guard.open_paths.contains(&request.uri().path()) {
            let principal = match self.guard.principal(request.headers(), self.peer) {
                Ok(principal) => principal,
                Err(reason) => {
                    return refusal(StatusCode::UNAUTHORIZED, reason, self.guard.refusal_body);
                }
            };
            if !self.slot.establish() {
                return refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many connections: retry later",
                    self.guard.refusal_body,
                );
            }
            request.extensions_mut().insert(principal);
        }
        match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// An answer that also closes the connection.
fn refusal(status: StatusCode, reason: &'static str, shape: RefusalBody) -> Response<Body> {
    let (content_type, body) = shape(status, reason);
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    headers.insert(header::CONTENT_TYPE, content_type);
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// The connections of one listener: pending ones oldest first, and how many are established.
struct Registry {
    limits: Limits,
    state: Mutex<Places>,
}

#[derive(Default)]
struct Places {
    /// Pending connections, oldest first: (id, what closes it).
    pending: VecDeque<(u64, CancellationToken)>,
    established: usize,
    next_id: u64,
    /// Pending connections closed to make room since the last warning, and when that was.
    evicted_unreported: u64,
    last_warning: Option<Instant>,
}

/// One connection's place in its registry; given back when the connection ends.
struct Slot {
    id: u64,
    registry: Arc<Registry>,
    /// Cancelled when the connection is closed to make room (pending connections only).
    evicted: CancellationToken,
    established: AtomicBool,
}

impl Registry {
    fn new(limits: Limits) -> Self {
        Registry {
            limits,
            state: Mutex::new(Places::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Places> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a new connection, as pending; closes the oldest pending ones beyond the cap.
    fn admit(self: &Arc<Self>) -> Slot {
        let mut places = self.lock();
        while places.pending.len() >= self.limits.max_pending.max(1) {
            if let Some((_, evict)) = places.pending.pop_front() {
                evict.cancel();
                places.evicted_unreported += 1;
            }
        }
        places.report_evictions();
        let id = places.next_id;
        places.next_id += 1;
        let evicted = CancellationToken::new();
        places.pending.push_back((id, evicted.clone()));
        Slot {
            id,
            registry: self.clone(),
            evicted,
            established: AtomicBool::new(false),
        }
    }

    /// Closes the oldest pending connection; false if there is none.
    fn evict_oldest(&self) -> bool {
        let mut places = self.lock();
        match places.pending.pop_front() {
            Some((_, evict)) => {
                evict.cancel();
                places.evicted_unreported += 1;
                places.report_evictions();
                true
            }
            None => false,
        }
    }
}

impl Places {
    /// Tells the operator, at most once per [`EVICTION_WARNING_EVERY`], that clients hold
    /// connections without sending a request.
    fn report_evictions(&mut self) {
        if self.evicted_unreported == 0
            || self
                .last_warning
                .is_some_and(|at| at.elapsed() < EVICTION_WARNING_EVERY)
        {
            return;
        }
        tracing::warn!(
            closed = self.evicted_unreported,
            "http: closed pending connections to make room: clients are holding connections \
             without sending an authenticated request"
        );
        self.evicted_unreported = 0;
        self.last_warning = Some(Instant::now());
    }
}

impl Slot {
    fn is_established(&self) -> bool {
        self.established.load(Ordering::Acquire)
    }

    /// Makes the connection established (once); false if it was closed to make room or every
    /// established place is taken.
    fn establish(&self) -> bool {
        if self.is_established() {
            return true;
        }
        let mut places = self.registry.lock();
        if self.evicted.is_cancelled() || places.established >= self.registry.limits.max_established
        {
            return false;
        }
        places.pending.retain(|(id, _)| *id != self.id);
        places.established += 1;
        self.established.store(true, Ordering::Release);
        true
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut places = self.registry.lock();
        if self.established.load(Ordering::Acquire) {
            places.established -= 1;
        } else {
            places.pending.retain(|(id, _)| *id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(max_pending: usize, max_established: usize) -> Arc<Registry> {
        Arc::new(Registry::new(Limits {
            max_pending,
            max_established,
            header_read_timeout: HEADER_READ_TIMEOUT,
        }))
    }

    fn counts(registry: &Registry) -> (usize, usize) {
        let places = registry.lock();
        (places.pending.len(), places.established)
    }

    #[test]
    fn a_new_connection_beyond_the_cap_closes_the_oldest_pending_one() {
        let registry = registry(2, 8);
        let first = registry.admit();
        let second = registry.admit();
        assert!(!first.evicted.is_cancelled() && !second.evicted.is_cancelled());
        let third = registry.admit();
        assert!(first.evicted.is_cancelled(), "the oldest is closed");
        assert!(!second.evicted.is_cancelled() && !third.evicted.is_cancelled());
        assert_eq!(counts(&registry), (2, 0));
        // A closed connection cannot be established any more.
        assert!(!first.establish());
        drop(first);
        assert_eq!(counts(&registry), (2, 0));
    }

    #[test]
    fn an_established_connection_is_never_pushed_out() {
        let registry = registry(1, 8);
        let holder = registry.admit();
        assert!(holder.establish());
        assert!(holder.establish(), "establishing twice is harmless");
        assert_eq!(counts(&registry), (0, 1));
        let flood: Vec<Slot> = (0..10).map(|_| registry.admit()).collect();
        assert!(!holder.evicted.is_cancelled());
        assert_eq!(flood.iter().filter(|s| s.evicted.is_cancelled()).count(), 9);
        assert_eq!(counts(&registry), (1, 1));
        drop(holder);
        assert_eq!(counts(&registry), (1, 0));
    }

    #[test]
    fn established_connections_are_capped_and_places_come_back() {
        let registry = registry(8, 2);
        let (first, second, third) = (registry.admit(), registry.admit(), registry.admit());
        assert!(first.establish() && second.establish());
        assert!(!third.establish(), "the third is refused");
        assert_eq!(counts(&registry), (1, 2));
        drop(first);
        assert!(third.establish(), "a freed place is reused");
        assert_eq!(counts(&registry), (0, 2));
    }

    #[test]
    fn running_out_of_descriptors_closes_the_oldest_pending_connection() {
        let registry = registry(8, 8);
        assert!(!registry.evict_oldest(), "nothing to close");
        let established = registry.admit();
        assert!(established.establish());
        let pending = registry.admit();
        assert!(registry.evict_oldest());
        assert!(pending.evicted.is_cancelled() && !established.evicted.is_cancelled());
    }

    #[test]
    fn the_token_is_checked_and_the_principal_is_its_fingerprint() {
        let secret = Secret::new("0123456789abcdef0123456789abcdef-token".into());
        let guard = Guard::new(Some(&secret), &[], Limits::MCP);
        let peer: SocketAddr = "192.0.2.7:5555".parse().unwrap();
        let headers = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            h
        };
        let expected = format!(
            "http-token:{}",
            &hex::encode(Sha256::digest(secret.expose().as_bytes()))[..12]
        );
        for good in [
            "Bearer 0123456789abcdef0123456789abcdef-token",
            "bearer 0123456789abcdef0123456789abcdef-token ",
        ] {
            assert_eq!(
                guard.principal(&headers(good), peer).unwrap().as_str(),
                expected
            );
        }
        for (bad, why) in [
            ("Bearer 0123456789abcdef0123456789abcdef-tokeN", "invalid"),
            ("0123456789abcdef0123456789abcdef-token", "missing"),
            ("Basic 0123456789abcdef0123456789abcdef-token", "missing"),
        ] {
            let err = guard.principal(&headers(bad), peer).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert!(guard.principal(&HeaderMap::new(), peer).is_err());
        // Without a token the peer's address decides, whatever the client sends.
        let open = Guard::new(None, &[], Limits::MCP);
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:1".parse().unwrap();
        assert_eq!(
            open.principal(&headers("Bearer anything"), mapped)
                .unwrap()
                .as_str(),
            "http-peer:127.0.0.1"
        );
        // An operator names them as the guard does.
        let named = guard.principal(&headers(good_header()), peer).unwrap();
        assert_eq!(Principal::parse(named.as_str()), Ok(named));
        for (name, parsed) in [
            ("http-peer:127.0.0.2", "http-peer:127.0.0.2"),
            ("http-peer:::ffff:127.0.0.2", "http-peer:127.0.0.2"),
            ("http-peer:::1", "http-peer:::1"),
        ] {
            assert_eq!(Principal::parse(name).unwrap().as_str(), parsed);
        }
        for bad in [
            "127.0.0.1",
            "http-peer:localhost",
            "http-peer:",
            "http-token:ABCDEF012345",
            "http-token:0123",
            "stdio",
            "http-peer:127.0.0.1/../x",
        ] {
            let err = Principal::parse(bad).unwrap_err();
            assert!(err.contains("names no principal"), "{bad}: {err}");
        }
    }

    fn good_header() -> &'static str {
        "Bearer 0123456789abcdef0123456789abcdef-token"
    }
}
