//! The legacy HTTP+SSE client transport (MCP protocol 2024-11-05) and the backwards-compatibility
//! probe that finds it behind a URL configured as streamable HTTP.
//!
//! The transport opens one long-lived `GET` with `Accept: text/event-stream`; the first
//! `endpoint` event names the URI every outgoing message is `POST`ed to, and `message` events
//! carry the server's JSON-RPC messages. It owns:
//! - **Where messages go.** The endpoint is resolved against the SSE URL and must have the same
//!   origin (scheme, host and port): a hostile server cannot send our messages, with the headers
//!   configured for it, anywhere else. Later `endpoint` events are ignored, and no request
//!   follows a redirect.
//! - **Bounded memory.** One event may hold at most [`MAX_EVENT_BYTES`] (counted as the bytes
//!   arrive, before the parser keeps them); a larger one closes the connection.
//! - **Clear ends.** A stream that ends (cleanly or in the middle of an event), breaks, or
//!   carries a message that is not JSON-RPC closes the connection: the pool reconnects on next
//!   use. Why goes to the operator's log; callers see fixed descriptions ([`SseError`]), never
//!   the server's words.
//! - **Credentials.** The configured headers go on the `GET` and on every `POST`; with an OAuth
//!   client ([`SseConfig::auth`]) a bearer token too, and a 401 is its own error
//!   ([`SseError::Unauthorized`]).
//!
//! The probe ([`invites_probe`], [`Spoken`]): a URL configured as streamable HTTP whose
//! `initialize` POST is answered 400, 404 or 405 is tried as SSE, as the MCP specification's
//! backwards-compatibility section describes; never on 401/403 or a network failure. What a
//! server turned out to speak is remembered for the life of the process, per server name and
//! URL, so a reconnection goes straight to it.
//!
//! It decides no policy and times nothing out: the caller bounds the connection with its
//! connect timeout and each call with its call timeout.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex};
use std::task::{Context, Poll};

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{ClientInitializeError, RoleClient};
use rmcp::transport::Transport;
use rmcp::transport::auth::{AuthClient, AuthError};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use sse_stream::{Sse, SseStream};

/// Largest SSE event accepted, in bytes (its lines, as received); a larger one closes the
/// connection.
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// What to connect to.
pub(crate) struct SseConfig {
    /// The server's name, for the log.
    pub server: String,
    /// The SSE URL (`http://` or `https://`).
    pub url: String,
    /// Sent on the `GET` and on every `POST`.
    pub headers: BTreeMap<String, String>,
    /// When given, every request carries `Authorization: Bearer <its access token>`.
    pub auth: Option<AuthClient<reqwest::Client>>,
    /// Largest event accepted ([`MAX_EVENT_BYTES`] unless a test says otherwise).
    pub max_event_bytes: usize,
}

impl SseConfig {
    pub(crate) fn new(server: &str, url: &str, headers: &BTreeMap<String, String>) -> Self {
        SseConfig {
            server: server.to_owned(),
            url: url.to_owned(),
            headers: headers.clone(),
            auth: None,
            max_event_bytes: MAX_EVENT_BYTES,
        }
    }
}

/// Why the SSE transport failed. Every message is ours (a status code at most): the server's
/// own words go to the log only.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    #[error("`{0}` is not a usable http:// or https:// URL")]
    Url(String),
    #[error("invalid header name `{0}`")]
    HeaderName(String),
    #[error("invalid value for header `{0}`")]
    HeaderValue(String),
    #[error("its SSE stream could not be opened ({0})")]
    Network(&'static str),
    #[error("it refused the credentials (HTTP 401 Unauthorized); log in again or fix its headers")]
    Unauthorized,
    #[error("no usable OAuth access token for it ({0})")]
    Token(&'static str),
    #[error("it answered the SSE request with HTTP {0}")]
    GetStatus(u16),
    #[error("its answer to the SSE request is not an event stream")]
    NotEventStream,
    #[error("its SSE stream ended before the `endpoint` event")]
    NoEndpoint,
    #[error("its `endpoint` event names no usable URI")]
    BadEndpoint,
    #[error(
        "its `endpoint` event names another origin than its SSE URL (refused: messages go only to the server configured)"
    )]
    ForeignEndpoint,
    #[error("its SSE stream broke before the `endpoint` event ({0})")]
    Stream(&'static str),
    #[error("it answered a message with HTTP {0}")]
    PostStatus(u16),
    #[error("a message could not be sent to it ({0})")]
    PostNetwork(&'static str),
    #[error("a message could not be encoded")]
    Encode,
    #[error("the SSE connection is closed")]
    Closed,
}

impl SseError {
    /// A fixed description of a request that got no answer (reqwest's own text names the URL).
    fn network(e: &reqwest::Error) -> &'static str {
        if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "connection failed"
        } else {
            "request failed"
        }
    }
}

/// A connected SSE transport: the open event stream and where messages go.
pub(crate) struct SseTransport {
    server: String,
    events: Option<BoxStream<'static, Result<Sse, sse_stream::Error>>>,
    poster: Arc<Poster>,
}

/// Sends outgoing messages to the endpoint.
struct Poster {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    auth: Option<AuthClient<reqwest::Client>>,
}

impl Poster {
    async fn bearer(&self) -> Result<Option<String>, SseError> {
        match &self.auth {
            None => Ok(None),
            Some(auth) => match auth.get_access_token().await {
                Ok(token) => Ok(Some(token)),
                Err(AuthError::AuthorizationRequired) => Err(SseError::Token("log in first")),
                Err(e) => {
                    tracing::debug!(error = %e, "no OAuth access token");
                    Err(SseError::Token("getting one failed; see the server log"))
                }
            },
        }
    }

    async fn post(&self, message: ClientJsonRpcMessage) -> Result<(), SseError> {
        let body = serde_json::to_vec(&message).map_err(|_| SseError::Encode)?;
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(token) = self.bearer().await? {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .map_err(|e| SseError::PostNetwork(SseError::network(&e)))?;
        match response.status() {
            s if s.is_success() => Ok(()),
            StatusCode::UNAUTHORIZED => Err(SseError::Unauthorized),
            s => Err(SseError::PostStatus(s.as_u16())),
        }
    }
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event (unbounded in time: the
    /// caller's connect timeout bounds it).
    pub(crate) async fn connect(config: SseConfig) -> Result<Self, SseError> {
        let url = Url::parse(&config.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| SseError::Url(config.url.clone()))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| SseError::HeaderName(name.clone()))?;
            let value = HeaderValue::try_from(value.as_str())
                .map_err(|_| SseError::HeaderValue(name.to_string()))?;
            headers.insert(name, value);
        }
        // No redirects: a 3xx is an error, so neither the stream nor a message goes elsewhere.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| SseError::Network("no HTTP client"))?;
        let mut poster = Poster {
            client,
            endpoint: url.clone(),
            headers,
            auth: config.auth,
        };
        let mut request = poster
            .client
            .get(url.clone())
            .headers(poster.headers.clone())
            .header(ACCEPT, "text/event-stream")
            .header(CACHE_CONTROL, "no-cache");
        if let Some(token) = poster.bearer().await? {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| {
            tracing::debug!(server = %config.server, error = %e, "SSE request failed");
            SseError::Network(SseError::network(&e))
        })?;
        match response.status() {
            s if s.is_success() => {}
            StatusCode::UNAUTHORIZED => return Err(SseError::Unauthorized),
            s => return Err(SseError::GetStatus(s.as_u16())),
        }
        let is_event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
            });
        if !is_event_stream {
            return Err(SseError::NotEventStream);
        }
        let bytes = Bounded::new(response.bytes_stream(), config.max_event_bytes);
        let mut events = SseStream::from_bytes_stream(bytes).boxed();
        loop {
            match events.next().await {
                None => return Err(SseError::NoEndpoint),
                Some(Err(e)) => {
                    tracing::warn!(server = %config.server, "SSE stream broke: {}", describe(&e));
                    return Err(SseError::Stream(fault(&e)));
                }
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    poster.endpoint = endpoint(&url, event.data.as_deref().unwrap_or(""))?;
                    tracing::debug!(server = %config.server, endpoint = %poster.endpoint, "SSE endpoint");
                    break;
                }
                // Nothing else is expected before the endpoint; comments and the like are skipped.
                Some(Ok(_)) => {}
            }
        }
        Ok(SseTransport {
            server: config.server,
            events: Some(events),
            poster: Arc::new(poster),
        })
    }

    /// Ends the event stream (the connection is closed from now on).
    fn end(&mut self, why: &str) -> Option<ServerJsonRpcMessage> {
        if self.events.take().is_some() {
            tracing::warn!(server = %self.server, "SSE connection closed: {why}; it reconnects on next use");
        }
        None
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        "SSE".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let poster = self.poster.clone();
        let open = self.events.is_some();
        async move {
            if !open {
                return Err(SseError::Closed);
            }
            poster.post(item).await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let next = self.events.as_mut()?.next().await;
            let event = match next {
                None => return self.end("the server ended its SSE stream"),
                Some(Err(e)) => return self.end(&describe(&e)),
                Some(Ok(event)) => event,
            };
            match event.event.as_deref() {
                None | Some("message") => {}
                Some("endpoint") => {
                    tracing::debug!(server = %self.server, "a later `endpoint` event ignored");
                    continue;
                }
                Some(_) => continue,
            }
            let Some(data) = event.data else { continue };
            match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                Ok(message) => return Some(message),
                Err(e) => {
                    return self.end(&format!("a `message` event is not JSON-RPC ({e})"));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.events = None;
        Ok(())
    }
}

/// The endpoint an `endpoint` event names, resolved against the SSE URL; another origin is
/// refused.
fn endpoint(sse_url: &Url, data: &str) -> Result<Url, SseError> {
    let data = data.trim();
    if data.is_empty() {
        return Err(SseError::BadEndpoint);
    }
    let resolved = sse_url.join(data).map_err(|_| SseError::BadEndpoint)?;
    if !matches!(resolved.scheme(), "http" | "https") {
        return Err(SseError::ForeignEndpoint);
    }
    if resolved.origin() != sse_url.origin() {
        return Err(SseError::ForeignEndpoint);
    }
    Ok(resolved)
}

/// What went wrong with the byte stream, as seen through the parser.
#[derive(Debug, thiserror::Error)]
enum Fault {
    #[error("an event exceeded {0} bytes")]
    TooLarge(usize),
    #[error("the stream ended in the middle of an event")]
    Truncated,
    #[error("reading the stream failed: {0}")]
    Body(reqwest::Error),
}

/// A fixed, short description of a parser error, for an error callers see.
fn fault(e: &sse_stream::Error) -> &'static str {
    match e {
        sse_stream::Error::Body(inner) => match inner.downcast_ref::<Fault>() {
            Some(Fault::TooLarge(_)) => "an event was too large",
            Some(Fault::Truncated) => "it ended in the middle of an event",
            _ => "reading it failed",
        },
        _ => "it is not a well-formed event stream",
    }
}

/// The whole description of a parser error, for the log.
fn describe(e: &sse_stream::Error) -> String {
    match e {
        sse_stream::Error::Body(inner) => inner.to_string(),
        other => format!("not a well-formed event stream ({other})"),
    }
}

/// The size of the event being received, counted on the raw bytes: the lines of the event so
/// far and the line being read. Comment lines are not kept by the parser and are not counted,
/// but a comment line still counts while it is being read. Pure logic.
#[derive(Debug)]
struct EventSize {
    max: usize,
    held: usize,
    line: usize,
    line_is_comment: bool,
    after_cr: bool,
}

impl EventSize {
    fn new(max: usize) -> Self {
        EventSize {
            max,
            held: 0,
            line: 0,
            line_is_comment: false,
            after_cr: false,
        }
    }

    /// Takes the next bytes; `Err` once the event passes the limit.
    fn feed(&mut self, bytes: &[u8]) -> Result<(), ()> {
        for &b in bytes {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue; // the second half of a CRLF
            }
            match b {
                b'\r' | b'\n' => {
                    if self.line == 0 {
                        self.held = 0; // a blank line ends the event
                    } else if !self.line_is_comment {
                        self.held += self.line + 1;
                    }
                    self.line = 0;
                    self.line_is_comment = false;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    if self.line == 0 {
                        self.line_is_comment = b == b':';
                    }
                    self.line += 1;
                }
            }
            if self.held + self.line > self.max {
                return Err(());
            }
        }
        Ok(())
    }

    /// Whether an event (or a line) has begun and not ended.
    fn mid_event(&self) -> bool {
        self.held > 0 || (self.line > 0 && !self.line_is_comment)
    }
}

/// The response body with [`EventSize`] applied, and an end in the middle of an event made an
/// error.
struct Bounded<S> {
    inner: S,
    size: EventSize,
    done: bool,
}

impl<S> Bounded<S> {
    fn new(inner: S, max: usize) -> Self {
        Bounded {
            inner,
            size: EventSize::new(max),
            done: false,
        }
    }
}

impl<S, D> Stream for Bounded<S>
where
    S: Stream<Item = Result<D, reqwest::Error>> + Unpin,
    D: AsRef<[u8]>,
{
    type Item = Result<D, Fault>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let polled = self.inner.poll_next_unpin(cx);
        let this = &mut *self;
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(chunk))) => {
                if this.size.feed(chunk.as_ref()).is_err() {
                    this.done = true;
                    return Poll::Ready(Some(Err(Fault::TooLarge(this.size.max))));
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                Poll::Ready(Some(Err(Fault::Body(e))))
            }
            Poll::Ready(None) => {
                this.done = true;
                if this.size.mid_event() {
                    Poll::Ready(Some(Err(Fault::Truncated)))
                } else {
                    Poll::Ready(None)
                }
            }
        }
    }
}

/// What an HTTP entry turned out to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spoken {
    Streamable,
    Sse,
}

/// Per (server name, URL): what it spoke last time it connected.
static SPOKEN: LazyLock<Mutex<HashMap<(String, String), Spoken>>> = LazyLock::new(Default::default);

impl Spoken {
    /// What `server` at `url` spoke when it last connected, if it did.
    pub(crate) fn recalled(server: &str, url: &str) -> Option<Spoken> {
        let spoken = SPOKEN.lock().expect("spoken lock");
        spoken.get(&(server.to_owned(), url.to_owned())).copied()
    }

    /// Remembers what `server` at `url` spoke.
    pub(crate) fn remember(self, server: &str, url: &str) {
        let mut spoken = SPOKEN.lock().expect("spoken lock");
        spoken.insert((server.to_owned(), url.to_owned()), self);
    }
}

/// Whether a failed streamable-HTTP `initialize` invites trying the URL as SSE: the POST was
/// answered 400, 404 or 405 (never 401/403, another status, or a network failure).
pub(crate) fn invites_probe(e: &ClientInitializeError) -> bool {
    let error = match e {
        ClientInitializeError::TransportError { error, .. } => error,
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            return invites_probe(fallback);
        }
        _ => return false,
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
    while let Some(current) = source {
        if let Some(StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(text)) =
            current.downcast_ref()
        {
            return probe_status(text);
        }
        source = current.source();
    }
    false
}

/// Whether rmcp's description of an unexpected answer (`HTTP <status>: <body>`) has a status
/// that invites the probe.
fn probe_status(text: &str) -> bool {
    let status = text
        .strip_prefix("HTTP ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse::<u16>().ok());
    matches!(status, Some(400 | 404 | 405))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn endpoints_resolve_against_the_sse_url() {
        let base = url("http://127.0.0.1:8000/sse");
        let ok = |data: &str| endpoint(&base, data).unwrap().to_string();
        assert_eq!(
            ok("/messages/?session_id=ab12"),
            "http://127.0.0.1:8000/messages/?session_id=ab12"
        );
        assert_eq!(ok("messages?x=1"), "http://127.0.0.1:8000/messages?x=1");
        assert_eq!(ok(" /m \n"), "http://127.0.0.1:8000/m");
        assert_eq!(
            ok("http://127.0.0.1:8000/other"),
            "http://127.0.0.1:8000/other"
        );
        let nested = url("https://x.example/api/mcp/sse");
        assert_eq!(
            endpoint(&nested, "messages").unwrap().as_str(),
            "https://x.example/api/mcp/messages"
        );
        // The default port written out is the same origin.
        assert_eq!(
            endpoint(&nested, "https://x.example:443/m")
                .unwrap()
                .as_str(),
            "https://x.example/m"
        );
    }

    #[test]
    fn endpoints_on_another_origin_are_refused() {
        let base = url("http://127.0.0.1:8000/sse");
        for foreign in [
            "http://127.0.0.1:8001/messages",
            "http://localhost:8000/messages",
            "https://127.0.0.1:8000/messages",
            "//evil.example/messages",
            "http://evil.example/messages",
            "http://127.0.0.1:8000@evil.example/m",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/plain,x",
        ] {
            assert!(
                matches!(endpoint(&base, foreign), Err(SseError::ForeignEndpoint)),
                "{foreign} was accepted"
            );
        }
        for bad in ["", "   ", "http://[::1"] {
            assert!(
                matches!(endpoint(&base, bad), Err(SseError::BadEndpoint)),
                "{bad:?}"
            );
        }
    }

    fn sizes(max: usize, chunks: &[&[u8]]) -> Result<EventSize, usize> {
        let mut size = EventSize::new(max);
        for (i, chunk) in chunks.iter().enumerate() {
            size.feed(chunk).map_err(|_| i)?;
        }
        Ok(size)
    }

    #[test]
    fn event_size_counts_one_event_and_resets_on_blank_lines() {
        // Many events of 9 bytes each, under a limit of 16: fine, in any line ending.
        let many = b"data: abc\n\n".repeat(1000);
        assert!(sizes(16, &[&many]).is_ok());
        let crlf = b"data: abc\r\n\r\n".repeat(1000);
        assert!(sizes(16, &[&crlf]).is_ok());
        let cr = b"data: abc\r\r".repeat(1000);
        assert!(sizes(16, &[&cr]).is_ok());
        // Two data lines of one event add up.
        assert_eq!(
            sizes(16, &[b"data: abc\n", b"data: abcdef\n"]).err(),
            Some(1)
        );
        // A line split across chunks still counts as one.
        assert_eq!(sizes(16, &[b"data: abc", b"defghijklmn"]).err(), Some(1));
        // A CRLF split across chunks is one line end, not a blank line.
        let s = sizes(100, &[b"data: abc\r", b"\ndata: d\r\n"]).unwrap();
        assert_eq!(s.held, 10 + 8);
        // Keep-alive comments are not held.
        let pings = b": ping\n".repeat(1000);
        assert!(sizes(16, &[&pings]).is_ok());
    }

    #[test]
    fn event_size_knows_an_unfinished_event() {
        assert!(!sizes(100, &[b"data: a\n\n"]).unwrap().mid_event());
        assert!(sizes(100, &[b"data: a\n"]).unwrap().mid_event());
        assert!(sizes(100, &[b"data: {\"jsonrpc\""]).unwrap().mid_event());
        assert!(
            !sizes(100, &[b": keep-alive\n\n", b": x"])
                .unwrap()
                .mid_event()
        );
    }

    async fn parse(chunks: Vec<&'static [u8]>, max: usize) -> Vec<Result<Sse, String>> {
        let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, reqwest::Error>));
        SseStream::from_bytes_stream(Bounded::new(body, max))
            .map(|r| r.map_err(|e| fault(&e).to_owned()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn events_are_parsed_and_a_cut_or_oversized_event_is_an_error() {
        let events = parse(
            vec![
                b"event: endpoint\r\ndata: /messages/?session_id=1\r\n\r\n",
                b": ping\r\n\r\nevent: message\r\ndata: {\"a\":",
                b"1}\r\n\r\ndata: {}\n\n",
            ],
            1024,
        )
        .await;
        let events: Vec<Sse> = events.into_iter().map(Result::unwrap).collect();
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].event.as_deref(), Some("endpoint"));
        assert_eq!(events[0].data.as_deref(), Some("/messages/?session_id=1"));
        assert_eq!(events[1].data.as_deref(), Some("{\"a\":1}"));
        assert_eq!(events[2].event, None);

        let cut = parse(vec![b"data: {}\n\n", b"event: message\ndata: {\"jso"], 1024).await;
        assert!(cut[0].is_ok());
        assert_eq!(
            cut[1].as_ref().unwrap_err(),
            "it ended in the middle of an event"
        );
        assert_eq!(cut.len(), 2);

        let big: &'static [u8] = Box::leak(vec![b'x'; 4096].into_boxed_slice());
        let huge = parse(vec![b"data: ", big, big, b"\n\n"], 5000).await;
        assert_eq!(huge.len(), 1, "nothing after the error");
        assert_eq!(huge[0].as_ref().unwrap_err(), "an event was too large");
    }

    #[test]
    fn only_400_404_and_405_invite_the_probe() {
        for yes in [
            "HTTP 405 Method Not Allowed: ",
            "HTTP 404 Not Found: <html>",
            "HTTP 400 Bad Request: x",
        ] {
            assert!(probe_status(yes), "{yes}");
        }
        for no in [
            "HTTP 401 Unauthorized: ",
            "HTTP 403 Forbidden: ",
            "HTTP 500 Internal Server Error: ",
            "HTTP 406 Not Acceptable",
            "HTTP 4",
            "unexpected content type",
            "",
        ] {
            assert!(!probe_status(no), "{no}");
        }
    }

    #[tokio::test]
    async fn a_token_less_config_sends_no_authorization_and_a_bad_url_is_refused() {
        let poster = Poster {
            client: reqwest::Client::new(),
            endpoint: url("http://127.0.0.1:9/m"),
            headers: HeaderMap::new(),
            auth: None,
        };
        assert_eq!(poster.bearer().await.unwrap(), None);
        for bad in ["ftp://x.example/sse", "not a url", "file:///sse"] {
            let config = SseConfig::new("s", bad, &BTreeMap::new());
            assert!(matches!(
                SseTransport::connect(config).await,
                Err(SseError::Url(_))
            ));
        }
        let mut headers = BTreeMap::new();
        headers.insert("bad name".to_owned(), "v".to_owned());
        let config = SseConfig::new("s", "http://127.0.0.1:9/sse", &headers);
        assert!(matches!(
            SseTransport::connect(config).await,
            Err(SseError::HeaderName(_))
        ));
    }

    #[test]
    fn what_a_server_spoke_is_remembered_per_name_and_url() {
        assert_eq!(Spoken::recalled("t-a", "http://h/sse"), None);
        Spoken::Sse.remember("t-a", "http://h/sse");
        Spoken::Streamable.remember("t-b", "http://h/sse");
        assert_eq!(Spoken::recalled("t-a", "http://h/sse"), Some(Spoken::Sse));
        assert_eq!(Spoken::recalled("t-a", "http://h/mcp"), None);
        assert_eq!(
            Spoken::recalled("t-b", "http://h/sse"),
            Some(Spoken::Streamable)
        );
    }
}
