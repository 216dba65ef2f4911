//! One rmcp client connection to a downstream server (stdio child, streamable HTTP, or legacy
//! HTTP+SSE through `super::sse`, also when a streamable-HTTP URL turns out to speak it), started
//! with the lifecycle [`lifecycle`](super::lifecycle) chooses (a stdio server is started once),
//! the client-side handler that reacts to `notifications/tools/list_changed`, and the reader of a
//! stdio server's stderr.
//!
//! A server's stderr is the operator's: it goes to the log (each line at `debug`, the last lines
//! with a failure at `warn`), never into a message the LLM or sandboxed code can see; a failure
//! they see is a fixed description of what went wrong ([`ConnectFailure::public`]). The reader
//! holds at most [`MAX_STDERR_LINE_BYTES`] of a line, whatever the server writes.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::ClientInitializeError;
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient, RunningService};
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

use super::lifecycle::{Known, LifecycleMemory, PROBE_BOUND, ProbeDeadline};
use super::oauth;
use super::oauth::problem::AuthProblem;
use super::sse;
use crate::ask::AskError;
use crate::ask::client::Offered;
use crate::ask::relay::{self, InFlight};
use crate::clients::discovery::{ServerSpec, Transport};

type ToolCache = Arc<Mutex<Option<Arc<Vec<Tool>>>>>;

/// How many stderr lines of a downstream server are kept for the log of a failure.
const STDERR_LINES: usize = 20;
/// Longest stderr line kept in that tail, in characters.
const STDERR_TAIL_CHARS: usize = 500;
/// Longest stderr line read, in bytes: the rest of a longer line is dropped (and counted).
pub(crate) const MAX_STDERR_LINE_BYTES: usize = 8 * 1024;
/// How long a failure waits for the server's last stderr lines before logging them.
const STDERR_SETTLE: Duration = Duration::from_secs(1);

/// The last lines a downstream server wrote to stderr, for the operator's log.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<TailState>);

#[derive(Default)]
struct TailState {
    lines: Mutex<VecDeque<String>>,
    /// Stderr readers still running, and a wake-up when one ends.
    readers: AtomicUsize,
    ended: Notify,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lines.lock().expect("stderr tail lock");
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The last lines, escaped (no control characters reach the log), for a log record.
    pub(crate) fn text(&self) -> String {
        let lines = self.0.lines.lock().expect("stderr tail lock");
        lines
            .iter()
            .map(|l| l.escape_debug().to_string())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// The last lines, each escaped, for the operator's own commands (`servers`, `doctor`).
    pub(crate) fn lines(&self) -> Vec<String> {
        let lines = self.0.lines.lock().expect("stderr tail lock");
        lines.iter().map(|l| l.escape_debug().to_string()).collect()
    }

    /// Waits (at most [`STDERR_SETTLE`]) until every stderr reader has seen the end of its
    /// stream, so that the lines a dying server wrote last are in the tail.
    pub(crate) async fn settle(&self) {
        let wait = async {
            loop {
                let ended = self.0.ended.notified();
                if self.0.readers.load(Ordering::SeqCst) == 0 {
                    return;
                }
                ended.await;
            }
        };
        let _ = tokio::time::timeout(STDERR_SETTLE, wait).await;
    }

    /// Reads a server's stderr to its end: each line to the log at `debug`, the last ones
    /// kept. Memory stays bounded however long a line is.
    fn read(&self, server: String, mut stderr: impl tokio::io::AsyncRead + Unpin + Send + 'static) {
        let tail = self.clone();
        tail.0.readers.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let mut emit = |line: &[u8], dropped: usize| {
                let text = String::from_utf8_lossy(line);
                let text = text.trim_end_matches('\r');
                let line = if dropped > 0 {
                    format!("{text} [{dropped} more bytes of this line dropped]")
                } else {
                    text.to_string()
                };
                tracing::debug!(server = %server, "stderr: {}", line.escape_debug());
                tail.push(line.chars().take(STDERR_TAIL_CHARS).collect());
            };
            let mut cap = LineCap::default();
            let mut chunk = vec![0u8; 8192];
            loop {
                match stderr.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => cap.feed(&chunk[..n], &mut emit),
                }
            }
            cap.finish(&mut emit);
            tail.0.readers.fetch_sub(1, Ordering::SeqCst);
            tail.0.ended.notify_waiters();
        });
    }
}

/// Splits a byte stream into lines, keeping at most [`MAX_STDERR_LINE_BYTES`] of each and
/// counting what it drops. Pure logic.
#[derive(Default)]
struct LineCap {
    line: Vec<u8>,
    dropped: usize,
}

impl LineCap {
    /// Takes the next bytes; `emit(line, dropped)` gets each complete line.
    fn feed(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(&[u8], usize)) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            self.keep(&bytes[..end]);
            emit(&self.line, self.dropped);
            self.line.clear();
            self.dropped = 0;
            bytes = &bytes[end + 1..];
        }
        self.keep(bytes);
    }

    /// The end of the stream: an unfinished line is emitted too.
    fn finish(&mut self, emit: &mut impl FnMut(&[u8], usize)) {
        if !self.line.is_empty() || self.dropped > 0 {
            emit(&self.line, self.dropped);
        }
        self.line.clear();
        self.dropped = 0;
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_STDERR_LINE_BYTES - self.line.len();
        let kept = bytes.len().min(room);
        self.line.extend_from_slice(&bytes[..kept]);
        self.dropped += bytes.len() - kept;
    }
}

/// Why a server could not be connected: what the LLM and code may see, and the whole story for
/// the log.
#[derive(Debug, Clone)]
pub(crate) struct ConnectFailure {
    /// A fixed description (or this server's own words about the command it could not run):
    /// never the server's output.
    pub public: String,
    /// Everything known, for the operator's log.
    pub detail: String,
    /// The server asked for authorization (a 401, or tokens that can no longer be used).
    pub auth: Option<AuthProblem>,
}

impl ConnectFailure {
    fn ours(reason: String) -> Self {
        ConnectFailure {
            public: reason.clone(),
            detail: reason,
            auth: None,
        }
    }

    fn auth(problem: AuthProblem) -> Self {
        ConnectFailure {
            public: "it asks for authorization".into(),
            detail: format!("authorization needed: {problem:?}"),
            auth: Some(problem),
        }
    }

    fn handshake(e: &ClientInitializeError) -> Self {
        let public = match e {
            ClientInitializeError::ConnectionClosed(_) => {
                "it exited or closed its connection during the MCP handshake"
            }
            ClientInitializeError::TransportError { error, .. } => {
                if let Some(status) = refused_with(error) {
                    return ConnectFailure {
                        public: format!(
                            "it answered the MCP handshake with {status}{}; see the server log",
                            proxy_hint()
                        ),
                        detail: e.to_string(),
                        auth: oauth::problem::of_handshake(e),
                    };
                }
                "the connection to it failed during the MCP handshake"
            }
            ClientInitializeError::NoCompatibleProtocolVersion { .. } => {
                "it speaks no MCP protocol version this server does"
            }
            _ => "its answer to the MCP handshake was not usable",
        };
        ConnectFailure {
            public: format!("{public}; see the server log"),
            detail: e.to_string(),
            auth: oauth::problem::of_handshake(e),
        }
    }
}

/// The HTTP status an HTTP server (or the forward proxy in front of it) refused a request with,
/// as its status line only (`HTTP 403 Forbidden`): never the body, which is the server's words.
fn refused_with(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current = Some(error);
    while let Some(e) = current {
        match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::HttpStatus(s)) => return Some(format!("HTTP {}", s.status)),
            Some(StreamableHttpError::UnexpectedServerResponse(text))
                if text.starts_with("HTTP ") =>
            {
                let line = text.split(':').next().unwrap_or_default();
                return Some(line.chars().take(48).collect());
            }
            _ => {}
        }
        current = e.source();
    }
    None
}

/// Said with a refused status when downstream HTTP goes through a forward proxy (the
/// appliance's `egress` service): the status may be the proxy's, not the server's.
fn proxy_hint() -> &'static str {
    let proxied = [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    if proxied {
        " (from the server or from the forward proxy in HTTP(S)_PROXY, which refuses a host not on its allow-list with 403)"
    } else {
        ""
    }
}

/// What the handler of a downstream connection is made from: the server's tool cache, its
/// calls in flight (whose client a question is relayed to), what the connected client offers
/// and the operator's roots.
#[derive(Clone)]
pub(crate) struct HandlerSeed {
    pub tools: ToolCache,
    pub inflight: Arc<InFlight>,
    pub offered: Offered,
    pub roots: Arc<Vec<Value>>,
}

/// Receives the notifications of one downstream server, and answers its questions.
struct UpstreamHandler {
    server: String,
    seed: HandlerSeed,
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        // Only what the connected client offers is declared, so a server never counts on an
        // answer nobody can give; roots only when the operator configured some.
        let capabilities = declared(self.seed.offered, !self.seed.roots.is_empty());
        // `initialize` offers the newest version that has it; 2026-07-28 is reached by
        // `server/discover`, which takes its versions from the lifecycle mode.
        ClientConfig::new(
            capabilities,
            Implementation::new("code-executor", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "tool list changed; refreshing on next use");
        *self.seed.tools.lock().expect("tool cache lock") = None;
    }

    #[allow(deprecated)] // SEP-2577: sampling is deprecated, not removed.
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let asking = self.seed.inflight.route().map_err(refused)?;
        let params = serde_json::to_value(params)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let answer = relay::sample(&asking, &self.server, params)
            .await
            .map_err(refused)?;
        serde_json::from_value(answer).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn create_elicitation(
        &self,
        params: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        let params = serde_json::to_value(params)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let answer = match self.seed.inflight.route() {
            Ok(asking) => relay::elicit(&asking, &self.server, params).await,
            Err(e) => {
                tracing::debug!(server = %self.server, "elicitation not relayed: {e}");
                serde_json::json!({"action": "cancel"})
            }
        };
        serde_json::from_value(answer).map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    #[allow(deprecated)] // SEP-2577: roots are deprecated, not removed.
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        serde_json::from_value(serde_json::json!({"roots": *self.seed.roots}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

/// The client capabilities declared to a server: what the connected client `offered` (that we
/// relay), and roots when the operator configured some.
pub(crate) fn declared(offered: Offered, roots: bool) -> ClientCapabilities {
    let declared = serde_json::json!({
        "sampling": offered.sampling.then(|| serde_json::json!({})),
        "elicitation": offered.elicitation.then(|| serde_json::json!({"form": {}})),
        "roots": roots.then(|| serde_json::json!({"listChanged": false})),
    });
    serde_json::from_value(declared).unwrap_or_default()
}

/// `tools/call` (one round) telling the server, in the request's `_meta`, the client
/// capabilities `declared` for this call (protocol 2026-07-28 reads them per request). A call
/// abandoned mid-way (a timeout, a cancelled execution) is cancelled at the server too.
pub(crate) async fn call_tool_declaring(
    peer: &Peer<RoleClient>,
    params: rmcp::model::CallToolRequestParams,
    declared: ClientCapabilities,
) -> Result<rmcp::model::CallToolResponse, rmcp::ServiceError> {
    use rmcp::model::{
        CallToolRequest, CallToolResponse, CancelledNotificationParam, ClientRequest,
        RequestMetaObject, ServerResult,
    };
    let mut meta = RequestMetaObject::default();
    meta.set_client_capabilities(declared);
    let mut options = rmcp::service::PeerRequestOptions::no_options();
    options.meta = Some(meta);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer.send_request_with_option(request, options).await?;
    /// Tells the server a request was abandoned, unless disarmed.
    struct CancelOnDrop(Option<(Peer<RoleClient>, rmcp::model::RequestId)>);
    impl Drop for CancelOnDrop {
        fn drop(&mut self) {
            if let Some((peer, id)) = self.0.take() {
                tokio::spawn(async move {
                    let reason = Some("abandoned by the caller".to_string());
                    let param = CancelledNotificationParam::new(Some(id), reason);
                    let _ = peer.notify_cancelled(param).await;
                });
            }
        }
    }
    let mut guard = CancelOnDrop(Some((peer.clone(), handle.id.clone())));
    let answer = handle.await_response().await;
    guard.0 = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(CallToolResponse::InputRequired(result)),
        _ => Err(rmcp::ServiceError::UnexpectedResponse),
    }
}

/// A question that cannot be relayed, as the JSON-RPC error the server receives.
fn refused(e: AskError) -> ErrorData {
    match e {
        AskError::NotOffered(_) | AskError::Unreachable(_) => ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            e.to_string(),
            None,
        ),
        AskError::Invalid(_) => ErrorData::invalid_params(e.to_string(), None),
        _ => ErrorData::internal_error(e.to_string(), None),
    }
}

/// A live client connection.
pub(crate) struct Connection {
    service: RunningService<RoleClient, UpstreamHandler>,
}

impl Connection {
    pub(crate) fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// The protocol version negotiated with the server.
    fn negotiated(&self) -> Option<ProtocolVersion> {
        self.service
            .peer_info()
            .map(|info| info.protocol_version.clone())
    }

    /// The protocol version negotiated with the server.
    pub(crate) fn protocol_version(&self) -> Option<String> {
        self.service
            .peer_info()
            .map(|info| info.protocol_version.to_string())
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_transport_closed()
    }

    pub(crate) async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// Starts (stdio) or opens (HTTP) the server and runs the MCP lifecycle, each attempt bounded
/// by `timeout`.
///
/// A stdio server is started once (see [`lifecycle`](super::lifecycle)): the lifecycle it spoke
/// before, or the `server/discover` probe with the legacy `initialize` following on the same
/// connection. It is started a second time only when what was remembered is refused by the
/// server (it changed), or when a server that did not answer the probe within its bound turns
/// out to speak 2026-07-28 after all (it refuses the `initialize` that followed).
///
/// Over HTTP, two clean attempts: protocol 2026-07-28 first (`server/discover`); when the
/// server does not speak it (an error, or no answer), a fresh connection with the `initialize`
/// handshake (2025-11-25 and earlier). A legacy HTTP server refuses the probe at the HTTP level,
/// which is no JSON-RPC answer to fall back on, and a second request costs no start.
pub(crate) async fn connect(
    spec: &ServerSpec,
    seed: HandlerSeed,
    stderr_tail: StderrTail,
    timeout: Duration,
    memory: &LifecycleMemory,
) -> Result<Connection, ConnectFailure> {
    if !matches!(spec.transport, Transport::Stdio { .. }) {
        return connect_twice(spec, seed, stderr_tail, timeout).await;
    }
    let attempt = |plan: Plan| {
        let (seed, stderr_tail) = (seed.clone(), stderr_tail.clone());
        async move {
            let gave_up = Arc::new(AtomicBool::new(false));
            let (lifecycle, bound) = plan.lifecycle();
            let probe = Some((bound, gave_up.clone()));
            let result = tokio::time::timeout(
                timeout,
                connect_with(spec, seed, stderr_tail, lifecycle, probe),
            )
            .await;
            (result, gave_up.load(Ordering::SeqCst))
        }
    };
    let first = match memory.get(spec) {
        Some(Known::Legacy) => Plan::Initialize,
        Some(Known::Modern) => Plan::Discover,
        None => Plan::Probe,
    };
    let (result, gave_up) = attempt(first).await;
    let refused = |result: &Result<_, _>| {
        matches!(result, Ok(Err(ConnectError::Handshake(e)))
            if matches!(**e, ClientInitializeError::JsonRpcError(_)))
    };
    let slow_modern = |result: &Result<_, _>| {
        matches!(result, Ok(Err(ConnectError::Handshake(e)))
            if matches!(&**e, ClientInitializeError::LegacyFallbackFailed { fallback, .. }
                if matches!(**fallback, ClientInitializeError::JsonRpcError(_))))
    };
    let again = match first {
        Plan::Probe if gave_up && slow_modern(&result) => Some(Plan::Discover),
        Plan::Initialize | Plan::Discover if refused(&result) => {
            memory.set(spec, None);
            Some(Plan::Probe)
        }
        _ => None,
    };
    let result = match again {
        Some(plan) => {
            if let Ok(Err(e)) = &result {
                tracing::debug!(server = %spec.name, "starting it again ({plan:?}) after: {e}");
            }
            attempt(plan).await.0
        }
        None => result,
    };
    match result {
        Ok(Ok(connection)) => {
            if let Some(protocol) = connection.negotiated() {
                memory.set(spec, Some(Known::of(&protocol)));
            }
            Ok(connection)
        }
        Ok(Err(ConnectError::Setup(reason))) => Err(ConnectFailure::ours(reason)),
        Ok(Err(ConnectError::Auth(problem))) => Err(ConnectFailure::auth(problem)),
        Ok(Err(ConnectError::Handshake(e))) => Err(ConnectFailure::handshake(&e)),
        Err(_) => Err(ConnectFailure::ours(format!(
            "no answer to the MCP handshake within {} ms",
            timeout.as_millis()
        ))),
    }
}

/// How one attempt at a stdio server runs its lifecycle.
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// `server/discover`, then `initialize` on the same connection when the server is legacy
    /// (or silent for [`PROBE_BOUND`]).
    Probe,
    /// `server/discover` only, waited for as long as the attempt lasts.
    Discover,
    /// `initialize` only.
    Initialize,
}

impl Plan {
    fn lifecycle(self) -> (ClientLifecycleMode, Option<Duration>) {
        let modern = vec![ProtocolVersion::V_2026_07_28];
        match self {
            Plan::Probe => (
                ClientLifecycleMode::Auto {
                    preferred_versions: modern,
                    legacy_version: None,
                },
                Some(PROBE_BOUND),
            ),
            Plan::Discover => (
                ClientLifecycleMode::Discover {
                    preferred_versions: modern,
                },
                None,
            ),
            Plan::Initialize => (ClientLifecycleMode::Initialize, None),
        }
    }
}

/// Two clean attempts, each on a fresh connection: `server/discover`, then `initialize`.
async fn connect_twice(
    spec: &ServerSpec,
    seed: HandlerSeed,
    stderr_tail: StderrTail,
    timeout: Duration,
) -> Result<Connection, ConnectFailure> {
    let discover = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let first = tokio::time::timeout(
        timeout,
        connect_with(spec, seed.clone(), stderr_tail.clone(), discover, None),
    )
    .await;
    match first {
        Ok(Ok(connection)) => return Ok(connection),
        Ok(Err(ConnectError::Setup(reason))) => return Err(ConnectFailure::ours(reason)),
        Ok(Err(ConnectError::Auth(problem))) => return Err(ConnectFailure::auth(problem)),
        Ok(Err(ConnectError::Handshake(e))) => {
            tracing::debug!(server = %spec.name, "no protocol 2026-07-28 ({e}); retrying with initialize");
        }
        Err(_) => {
            tracing::debug!(server = %spec.name, "no answer to server/discover; retrying with initialize");
        }
    }
    let second = tokio::time::timeout(
        timeout,
        connect_with(
            spec,
            seed,
            stderr_tail,
            ClientLifecycleMode::Initialize,
            None,
        ),
    )
    .await;
    match second {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(ConnectError::Setup(reason))) => Err(ConnectFailure::ours(reason)),
        Ok(Err(ConnectError::Auth(problem))) => Err(ConnectFailure::auth(problem)),
        Ok(Err(ConnectError::Handshake(e))) => Err(ConnectFailure::handshake(&e)),
        Err(_) => Err(ConnectFailure::ours(format!(
            "no answer to `initialize` within {} ms",
            timeout.as_millis()
        ))),
    }
}

#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("{0}")]
    Setup(String),
    #[error("{0}")]
    Handshake(Box<ClientInitializeError>),
    /// The server asked for authorization before any handshake (a legacy SSE stream's 401).
    #[error("it asks for authorization")]
    Auth(AuthProblem),
}

impl From<ClientInitializeError> for ConnectError {
    fn from(e: ClientInitializeError) -> Self {
        ConnectError::Handshake(Box::new(e))
    }
}

/// One connection. `probe`, for a stdio server: how long its `server/discover` is waited for
/// (see [`ProbeDeadline`]) and the flag set when that bound passes.
async fn connect_with(
    spec: &ServerSpec,
    seed: HandlerSeed,
    stderr_tail: StderrTail,
    lifecycle: ClientLifecycleMode,
    probe: Option<(Option<Duration>, Arc<AtomicBool>)>,
) -> Result<Connection, ConnectError> {
    let handler = UpstreamHandler {
        server: spec.name.clone(),
        seed: seed.clone(),
    };
    let service = match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            // The child inherits our environment (PATH, so `npx`/`uvx` are found), plus its own,
            // but never the token clients use to reach us.
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .env_remove(crate::config::settings::HTTP_TOKEN_ENV)
                .envs(env);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| ConnectError::Setup(format!("cannot run `{command}`: {e}")))?;
            if let Some(stderr) = stderr {
                stderr_tail.read(spec.name.clone(), stderr);
            }
            let (bound, gave_up) = probe.unwrap_or_default();
            let transport = ProbeDeadline::new(transport, bound, gave_up);
            handler.serve_with_lifecycle(transport, lifecycle).await?
        }
        Transport::Sse { url, headers } => {
            let authorized = authorized_client(spec, url).await?;
            connect_sse(spec, url, headers, handler, authorized).await?
        }
        Transport::Http { url, headers }
            if sse::Spoken::recalled(&spec.name, url) == Some(sse::Spoken::Sse) =>
        {
            let authorized = authorized_client(spec, url).await?;
            connect_sse(spec, url, headers, handler, authorized).await?
        }
        Transport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let name = name
                    .parse()
                    .map_err(|_| ConnectError::Setup(format!("invalid header name `{name}`")))?;
                let value = value.parse().map_err(|_| {
                    ConnectError::Setup(format!("invalid value for header `{name}`"))
                })?;
                custom.insert(name, value);
            }
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            // With tokens from `auth login`, rmcp's authorized client attaches them and
            // refreshes them; without, a 401 tells the pool the server needs login.
            let authorized = authorized_client(spec, url).await?;
            // The specification's backwards-compatibility probe: an `initialize` POST answered
            // 400, 404 or 405 may be a legacy HTTP+SSE server.
            let probing = matches!(lifecycle, ClientLifecycleMode::Initialize);
            let attempt = match authorized.clone() {
                Some(client) => {
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    handler.serve_with_lifecycle(transport, lifecycle).await
                }
                None => {
                    let transport = StreamableHttpClientTransport::from_config(config);
                    handler.serve_with_lifecycle(transport, lifecycle).await
                }
            };
            match attempt {
                Ok(service) => {
                    sse::Spoken::Streamable.remember(&spec.name, url);
                    service
                }
                Err(e) if probing && sse::invites_probe(&e) => {
                    let handler = UpstreamHandler {
                        server: spec.name.clone(),
                        seed,
                    };
                    match connect_sse(spec, url, headers, handler, authorized).await {
                        Ok(service) => {
                            sse::Spoken::Sse.remember(&spec.name, url);
                            service
                        }
                        Err(probe) => {
                            tracing::debug!(server = %spec.name, "not a legacy SSE server either: {probe}");
                            return Err(e.into());
                        }
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    Ok(Connection { service })
}

/// rmcp's authorized client for `url` when `auth login` stored tokens for it.
async fn authorized_client(
    spec: &ServerSpec,
    url: &str,
) -> Result<Option<AuthClient<reqwest::Client>>, ConnectError> {
    oauth::connect::authorized_client(&oauth::pool_store(), url)
        .await
        .map_err(|unavailable| {
            tracing::warn!(server = %spec.name, reason = %unavailable.detail.escape_debug(), "OAuth client unavailable");
            ConnectError::Setup(unavailable.public)
        })
}

/// Opens a legacy HTTP+SSE connection and runs `initialize` on it: a 2024-11-05 server knows
/// no `server/discover`, so that attempt is never made (it could only wait for its timeout).
async fn connect_sse(
    spec: &ServerSpec,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    handler: UpstreamHandler,
    auth: Option<AuthClient<reqwest::Client>>,
) -> Result<RunningService<RoleClient, UpstreamHandler>, ConnectError> {
    let mut config = sse::SseConfig::new(&spec.name, url, headers);
    config.auth = auth;
    let transport = sse::SseTransport::connect(config)
        .await
        .map_err(|e| match e {
            sse::SseError::Unauthorized => ConnectError::Auth(AuthProblem::NeedsLogin),
            e => ConnectError::Setup(e.to_string()),
        })?;
    Ok(handler
        .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]]) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut cap = LineCap::default();
        let mut emit =
            |line: &[u8], dropped: usize| out.push((String::from_utf8_lossy(line).into(), dropped));
        for chunk in chunks {
            cap.feed(chunk, &mut emit);
        }
        cap.finish(&mut emit);
        out
    }

    fn handshake_failure(response: &str) -> ConnectFailure {
        let error: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::UnexpectedServerResponse(response.to_owned().into());
        let error = rmcp::transport::DynamicTransportError::from_parts(
            "streamable-http",
            std::any::TypeId::of::<()>(),
            Box::new(error),
        );
        ConnectFailure::handshake(&ClientInitializeError::TransportError {
            error,
            context: "send initialize request".into(),
        })
    }

    #[test]
    fn a_refused_handshake_names_the_status_but_not_the_body() {
        let failure = handshake_failure("HTTP 403 Forbidden: <html>secret-page</html>");
        assert!(
            failure
                .public
                .starts_with("it answered the MCP handshake with HTTP 403 Forbidden"),
            "{}",
            failure.public
        );
        assert!(
            !failure.public.contains("secret-page"),
            "{}",
            failure.public
        );
        assert!(failure.detail.contains("secret-page"), "{}", failure.detail);
        let other = handshake_failure("expect initialized, accepted");
        assert_eq!(
            other.public,
            "the connection to it failed during the MCP handshake; see the server log"
        );
    }

    #[test]
    fn lines_are_split_across_chunks() {
        assert_eq!(
            lines(&[b"one\ntw", b"o\n", b"three"]),
            [("one".into(), 0), ("two".into(), 0), ("three".into(), 0)]
        );
        assert!(lines(&[]).is_empty());
    }

    #[test]
    fn a_line_without_end_keeps_a_bounded_start_and_counts_the_rest() {
        let mut cap = LineCap::default();
        let mut seen = Vec::new();
        let block = vec![b'x'; 1024 * 1024];
        for _ in 0..64 {
            cap.feed(&block, &mut |l: &[u8], d| seen.push((l.len(), d)));
            assert!(cap.line.len() <= MAX_STDERR_LINE_BYTES);
            assert!(cap.line.capacity() <= 2 * MAX_STDERR_LINE_BYTES);
        }
        cap.feed(b"\nnext\n", &mut |l: &[u8], d| seen.push((l.len(), d)));
        assert_eq!(
            seen,
            [
                (
                    MAX_STDERR_LINE_BYTES,
                    64 * 1024 * 1024 - MAX_STDERR_LINE_BYTES
                ),
                (4, 0)
            ]
        );
    }
}
