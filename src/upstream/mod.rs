//! The pool of downstream MCP servers: one rmcp client per configured server, connected lazily
//! on first use, reconnected after a crash, with per-call timeouts and a tool-list cache that a
//! `notifications/tools/list_changed` clears.
//!
//! A server that fails to start is reported with its name and a fixed description of what went
//! wrong; its stderr goes to the operator's log and to the operator's own commands (`servers`,
//! `doctor`: [`UpstreamPool::stderr_tail`]) only (see `client`), never into an error the LLM
//! or sandboxed code can read. The other servers are unaffected. This module decides nothing
//! about policy: callers (the broker, the catalogue) have already checked that a call is allowed
//! and that the caller may cause the server to start.

mod client;
mod content;
mod lifecycle;
pub mod oauth;
mod rounds;
mod sse;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, Tool};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::ask::Asking;
use crate::ask::client::Offered;
use crate::ask::relay::InFlight;
use rounds::{Round, RoundsError};

use crate::clients::aliases::Aliases;
use crate::clients::discovery::{ServerSpec, Transport};
pub(crate) use client::StderrTail;

/// How long a failed start is remembered before the next use tries again.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Timeouts for downstream servers.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamTimeouts {
    pub connect: Duration,
    pub call: Duration,
}

/// Errors from a downstream server, always naming it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("no MCP server named `{server}` is configured (configured: {known})")]
    UnknownServer { server: String, known: String },
    #[error("MCP server `{server}` has no tool named `{tool}`")]
    UnknownTool { server: String, tool: String },
    #[error("MCP server `{server}` failed to start: {reason}")]
    Start { server: String, reason: String },
    #[error("MCP server `{server}` did not answer `{tool}` within {ms} ms")]
    Timeout {
        server: String,
        tool: String,
        ms: u128,
    },
    #[error("MCP server `{server}` failed during `{tool}`: {reason}")]
    Call {
        server: String,
        tool: String,
        reason: String,
    },
    #[error("MCP server `{server}` needs login: run `{command}`")]
    NeedsLogin { server: String, command: String },
    #[error(
        "MCP server `{server}` refused `{tool}`: it needs more OAuth scope ({scopes}); run `{command}` (the scopes granted so far are kept)"
    )]
    InsufficientScope {
        server: String,
        tool: String,
        scopes: String,
        command: String,
    },
}

/// The state of one downstream server, for `listServers` and `health`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    pub state: &'static str,
    pub tools: Option<usize>,
    /// The MCP protocol version negotiated, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The server's other names (the same server configured under several names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub error: Option<String>,
    /// In a caller's view: whether it may call any tool of this server (when not, look-ups
    /// neither start it nor count its tools). Absent in the operator's view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callable: Option<bool>,
}

/// All configured downstream servers.
pub struct UpstreamPool {
    servers: BTreeMap<String, Arc<Slot>>,
    /// Other names of the servers, accepted wherever a server name is.
    aliases: Aliases,
    timeouts: UpstreamTimeouts,
    /// Which lifecycle each stdio server spoke, so the next start skips the probe.
    lifecycles: lifecycle::LifecycleMemory,
    /// What the connected client offers, declared to servers connected from then on (set over
    /// stdio, where the process has one client; over HTTP nothing is offered).
    offered: std::sync::Mutex<Offered>,
    /// The roots offered to servers (`roots` setting), as `roots/list` lists them.
    roots: Arc<Vec<Value>>,
}

struct Slot {
    /// `None` for an entry whose configuration could not be read at all.
    spec: Option<ServerSpec>,
    conn: Mutex<Conn>,
    /// Tools last listed; cleared by `tools/list_changed` and on disconnect.
    tools: Arc<std::sync::Mutex<Option<Arc<Vec<Tool>>>>>,
    stderr: StderrTail,
    /// Our calls in flight on its connection, for relaying the questions it asks.
    inflight: Arc<InFlight>,
}

enum Conn {
    Idle,
    /// The configuration entry itself is unusable (e.g. an unset variable); never retried.
    Invalid(String),
    Connected(client::Connection),
    Failed {
        reason: String,
        at: Instant,
    },
    /// The server asked for authorization and code-executor holds no usable token: the user
    /// must run `code-executor auth login NAME`. Tried again after [`RETRY_AFTER_FAILURE`], so
    /// a login made meanwhile is picked up.
    NeedsLogin {
        at: Instant,
    },
}

impl UpstreamPool {
    /// A pool over `specs`; `invalid` names configured entries that cannot be used, with why,
    /// so that they are listed and give a clear error instead of "unknown server".
    pub fn new(
        specs: Vec<ServerSpec>,
        invalid: BTreeMap<String, String>,
        timeouts: UpstreamTimeouts,
    ) -> Self {
        let mut servers = BTreeMap::new();
        for spec in specs {
            let conn = match invalid.get(&spec.name) {
                Some(reason) => Conn::Invalid(reason.clone()),
                None => Conn::Idle,
            };
            servers.insert(spec.name.clone(), Arc::new(Slot::new(Some(spec), conn)));
        }
        for (name, reason) in invalid {
            servers
                .entry(name)
                .or_insert_with(|| Arc::new(Slot::new(None, Conn::Invalid(reason))));
        }
        UpstreamPool {
            servers,
            aliases: Aliases::default(),
            timeouts,
            lifecycles: Default::default(),
            offered: Default::default(),
            roots: Default::default(),
        }
    }

    /// Offers `roots` (`file://` URIs) to the servers.
    pub fn with_roots(mut self, roots: &[String]) -> Self {
        let roots = roots
            .iter()
            .map(|uri| serde_json::json!({"uri": uri}))
            .collect();
        self.roots = Arc::new(roots);
        self
    }

    /// Records what the connected client offers, for servers connected from now on.
    pub(crate) fn set_offered(&self, offered: Offered) {
        *self.offered.lock().expect("offered lock") = offered;
    }

    /// Keeps the memory of which lifecycle each stdio server spoke in `cache_dir` too, so that
    /// later processes start a legacy server without probing it first.
    pub fn remembering_lifecycles_in(mut self, cache_dir: &std::path::Path) -> Self {
        self.lifecycles = lifecycle::LifecycleMemory::in_dir(cache_dir);
        self
    }

    /// Starts connecting `servers` (and listing their tools) in the background, concurrently,
    /// so that a first call finds them ready or on their way. Nothing waits for it; a server
    /// that fails is recorded as on any first use. The caller has checked that whoever asks
    /// may cause these servers to start; names that are not configured are skipped.
    pub(crate) fn warm(self: &Arc<Self>, servers: &[&str]) {
        for &server in servers {
            let server = self.aliases.canonical(server);
            let Some(slot) = self.servers.get(server) else {
                continue;
            };
            // Connected, connecting, or failed: nothing to do (a failure retries on next use).
            match slot.conn.try_lock() {
                Ok(conn) if matches!(*conn, Conn::Idle) => {}
                _ => continue,
            }
            let pool = self.clone();
            let server = server.to_string();
            tokio::spawn(async move {
                if let Err(e) = pool.tools(&server).await {
                    tracing::debug!(server, "pre-connect failed: {e}");
                }
            });
        }
    }

    /// The pool answering to the servers' other names too (discovery's aliases).
    pub fn with_aliases(mut self, aliases: Aliases) -> Self {
        self.aliases = aliases;
        self
    }

    /// The servers' other names.
    pub fn aliases(&self) -> &Aliases {
        &self.aliases
    }

    pub(crate) fn server_names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// The canonical name of `server` (a configured name or one of its aliases), or an error
    /// naming the configured servers when it is neither.
    pub(crate) fn ensure_known(&self, server: &str) -> Result<String, UpstreamError> {
        let canonical = self.aliases.canonical(server);
        self.slot(canonical).map(|_| canonical.to_string())
    }

    fn slot(&self, server: &str) -> Result<&Arc<Slot>, UpstreamError> {
        self.servers
            .get(server)
            .ok_or_else(|| UpstreamError::UnknownServer {
                server: server.to_string(),
                known: self.server_names().collect::<Vec<_>>().join(", "),
            })
    }

    /// Splits `mcp__<server>__<tool>` using the configured server names and their aliases
    /// (longest match wins, so names containing `__` still resolve); the server returned is
    /// the canonical name.
    pub(crate) fn resolve(&self, qualified: &str) -> Result<(String, String), UpstreamError> {
        let rest = qualified.strip_prefix("mcp__").unwrap_or(qualified);
        let aliases = self.aliases.iter().map(|(alias, _)| alias);
        self.servers
            .keys()
            .map(String::as_str)
            .chain(aliases)
            .filter_map(|server| {
                let tool = rest.strip_prefix(server)?.strip_prefix("__")?;
                (!tool.is_empty()).then_some((server, tool))
            })
            .max_by_key(|(server, _)| server.len())
            .map(|(server, tool)| {
                let canonical = self.aliases.canonical(server).to_string();
                (canonical, tool.to_string())
            })
            .ok_or_else(|| UpstreamError::UnknownServer {
                server: rest.split("__").next().unwrap_or(rest).to_string(),
                known: self.server_names().collect::<Vec<_>>().join(", "),
            })
    }

    /// The peer of a connected server, connecting (or reconnecting) if needed.
    async fn peer(&self, server: &str) -> Result<Peer<RoleClient>, UpstreamError> {
        let slot = self.slot(server)?;
        let mut conn = slot.conn.lock().await;
        if let Conn::Connected(c) = &*conn {
            if !c.is_closed() {
                return Ok(c.peer());
            }
            tracing::warn!(server, "downstream server exited; reconnecting");
            slot.clear_tools();
        }
        if let Conn::Invalid(reason) = &*conn {
            return Err(UpstreamError::Start {
                server: server.to_string(),
                reason: format!("its configuration is invalid: {reason}"),
            });
        }
        if let Conn::Failed { reason, at } = &*conn
            && at.elapsed() < RETRY_AFTER_FAILURE
        {
            return Err(UpstreamError::Start {
                server: server.to_string(),
                reason: reason.clone(),
            });
        }
        if let Conn::NeedsLogin { at } = &*conn
            && at.elapsed() < RETRY_AFTER_FAILURE
        {
            return Err(needs_login(server));
        }
        let Some(spec) = &slot.spec else {
            return Err(UpstreamError::Start {
                server: server.to_string(),
                reason: "its configuration is invalid".into(),
            });
        };
        let seed = client::HandlerSeed {
            tools: slot.tools.clone(),
            inflight: slot.inflight.clone(),
            offered: *self.offered.lock().expect("offered lock"),
            roots: self.roots.clone(),
        };
        let connected = client::connect(
            spec,
            seed,
            slot.stderr.clone(),
            self.timeouts.connect,
            &self.lifecycles,
        )
        .await;
        match connected {
            Ok(connection) => {
                tracing::info!(
                    server,
                    protocol = connection.protocol_version().unwrap_or_default(),
                    "connected to downstream server"
                );
                let peer = connection.peer();
                *conn = Conn::Connected(connection);
                Ok(peer)
            }
            Err(failure) => {
                slot.stderr.settle().await;
                tracing::warn!(
                    server,
                    reason = %failure.detail.escape_debug(),
                    stderr = %slot.stderr.text(),
                    "downstream server failed to start"
                );
                if failure.auth.is_some() {
                    *conn = Conn::NeedsLogin { at: Instant::now() };
                    return Err(needs_login(server));
                }
                *conn = Conn::Failed {
                    reason: failure.public.clone(),
                    at: Instant::now(),
                };
                Err(UpstreamError::Start {
                    server: server.to_string(),
                    reason: failure.public,
                })
            }
        }
    }

    /// The tools of one server (cached until the server says they changed).
    pub async fn tools(&self, server: &str) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        let slot = self.slot(server)?;
        if let Some(tools) = slot.cached_tools() {
            // Only trust the cache while the server is still up.
            if matches!(&*slot.conn.lock().await, Conn::Connected(c) if !c.is_closed()) {
                return Ok(tools);
            }
        }
        let peer = self.peer(server).await?;
        let listed = match tokio::time::timeout(self.timeouts.call, peer.list_all_tools()).await {
            Err(_) => {
                return Err(UpstreamError::Timeout {
                    server: server.to_string(),
                    tool: "tools/list".into(),
                    ms: self.timeouts.call.as_millis(),
                });
            }
            Ok(Err(e)) => {
                if let Some(problem) = oauth::problem::of_service(&e) {
                    return Err(slot.auth_failed(server, "tools/list", problem).await);
                }
                return Err(UpstreamError::Call {
                    server: server.to_string(),
                    tool: "tools/list".into(),
                    reason: e.to_string(),
                });
            }
            Ok(Ok(listed)) => listed,
        };
        let tools = Arc::new(listed);
        *slot.tools.lock().expect("tool cache lock") = Some(tools.clone());
        Ok(tools)
    }

    /// The tools of every server, connecting all of them concurrently.
    pub async fn all_tools(&self) -> Vec<(String, Result<Arc<Vec<Tool>>, UpstreamError>)> {
        let lookups = self.servers.keys().map(|name| async move {
            let result = self.tools(name).await;
            (name.clone(), result)
        });
        futures::future::join_all(lookups).await
    }

    /// Calls one tool. Transport failures mark the server for reconnection on next use.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, Value>,
    ) -> Result<CallToolResult, UpstreamError> {
        self.call_for(server, tool, args, None).await
    }

    /// [`Self::call`] for an execution: the questions the server asks meanwhile are relayed to
    /// the execution's client (`asking`).
    pub(crate) async fn call_for(
        &self,
        server: &str,
        tool: &str,
        args: serde_json::Map<String, Value>,
        asking: Option<&Arc<Asking>>,
    ) -> Result<CallToolResult, UpstreamError> {
        let peer = self.peer(server).await?;
        let _inflight = match asking {
            Some(asking) => Some(self.slot(server)?.inflight.enter(asking.clone())),
            None => None,
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        // A 2026-07-28 server is told, with each call, what the execution's client offers (its
        // questions are relayed there); the connection's own declaration covers other requests.
        let declared = asking
            .filter(|_| self.speaks_modern(&peer))
            .map(|asking| client::declared(asking.offered(), !self.roots.is_empty()));
        let rounds = rounds::rounds(server, asking, &self.roots, |responses, state| {
            let mut params = params.clone();
            params.input_responses = responses;
            params.request_state = state;
            let (peer, declared) = (peer.clone(), declared.clone());
            let bound = self.timeouts.call;
            async move {
                // Each round is bounded on its own: the time the client takes to answer the
                // questions between rounds is not the server's.
                let round = async {
                    match declared {
                        Some(declared) => {
                            client::call_tool_declaring(&peer, params, declared).await
                        }
                        None => peer.call_tool_once(params).await,
                    }
                };
                let Ok(response) = tokio::time::timeout(bound, round).await else {
                    return Ok(Round::TimedOut);
                };
                Ok(match response? {
                    CallToolResponse::Complete(result) => Round::Done(result),
                    CallToolResponse::InputRequired(input) => Round::Input(input),
                    _ => Round::Other("it answered with a task, which this server does not poll"),
                })
            }
        });
        match rounds.await {
            Err(RoundsError::Relay(reason)) => Err(UpstreamError::Call {
                server: server.to_string(),
                tool: tool.to_string(),
                reason,
            }),
            Ok(result) => Ok(result),
            Err(RoundsError::Service(e)) => {
                let slot = self.slot(server)?;
                if let Some(problem) = oauth::problem::of_service(&e) {
                    return Err(slot.auth_failed(server, tool, problem).await);
                }
                let reason = match e {
                    rmcp::ServiceError::TransportClosed => "its connection closed during the call (it reconnects on next use; see the server log)".to_owned(),
                    _ => e.to_string(),
                };
                if slot.is_down().await {
                    slot.stderr.settle().await;
                    tracing::warn!(
                        server,
                        tool,
                        reason = %e.to_string().escape_debug(),
                        stderr = %slot.stderr.text(),
                        "downstream server broke down during a call"
                    );
                }
                Err(UpstreamError::Call {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    reason,
                })
            }
            Err(RoundsError::TimedOut) => Err(UpstreamError::Timeout {
                server: server.to_string(),
                tool: tool.to_string(),
                ms: self.timeouts.call.as_millis(),
            }),
        }
    }

    /// Whether the connection behind `peer` negotiated protocol 2026-07-28 or later.
    fn speaks_modern(&self, peer: &Peer<RoleClient>) -> bool {
        peer.peer_info()
            .is_some_and(|info| !info.protocol_version.has_initialize())
    }

    /// The last lines `server` wrote to its stderr (at most 20, each escaped), once its readers
    /// have seen the end of a stream that ended: for the operator's own commands (`servers`,
    /// `doctor`), never for a message the LLM or sandboxed code can see.
    pub async fn stderr_tail(&self, server: &str) -> Vec<String> {
        let Ok(slot) = self.slot(server) else {
            return Vec::new();
        };
        slot.stderr.settle().await;
        slot.stderr.lines()
    }

    /// The state of every server, without connecting anything.
    pub async fn statuses(&self) -> Vec<ServerStatus> {
        let mut out = Vec::with_capacity(self.servers.len());
        for (name, slot) in &self.servers {
            let conn = slot.conn.lock().await;
            let protocol = match &*conn {
                Conn::Connected(c) => c.protocol_version(),
                _ => None,
            };
            let (state, error) = match &*conn {
                Conn::Idle => ("idle", None),
                Conn::Connected(c) if c.is_closed() => {
                    ("idle", Some("exited; reconnects on next use".to_string()))
                }
                Conn::Connected(_) => ("connected", None),
                Conn::Failed { reason, .. } => ("failed", Some(reason.clone())),
                Conn::NeedsLogin { .. } => (
                    NEEDS_LOGIN,
                    Some(format!(
                        "needs login: run `{}`",
                        oauth::login_command(name, &[])
                    )),
                ),
                Conn::Invalid(reason) => {
                    ("failed", Some(format!("invalid configuration: {reason}")))
                }
            };
            out.push(ServerStatus {
                name: name.clone(),
                transport: match slot.spec.as_ref().map(|s| (&s.name, &s.transport)) {
                    Some((_, Transport::Stdio { .. })) => "stdio",
                    // An HTTP URL the probe found to speak SSE says so.
                    Some((name, Transport::Http { url, .. }))
                        if sse::Spoken::recalled(name, url) == Some(sse::Spoken::Sse) =>
                    {
                        "sse"
                    }
                    Some((_, Transport::Http { .. })) => "http",
                    Some((_, Transport::Sse { .. })) => "sse",
                    None => "unknown",
                },
                state,
                tools: slot.cached_tools().map(|t| t.len()),
                protocol,
                aliases: self.aliases.names_of(name),
                error,
                callable: None,
            });
        }
        out
    }

    /// The tools last listed by `server`, if any (connects nothing).
    pub(crate) fn cached_tools(&self, server: &str) -> Option<Arc<Vec<Tool>>> {
        self.servers
            .get(server)
            .and_then(|slot| slot.cached_tools())
    }

    /// Closes every connection (downstream children are stopped).
    pub async fn shutdown(&self) {
        for slot in self.servers.values() {
            let mut conn = slot.conn.lock().await;
            if let Conn::Connected(c) = std::mem::replace(&mut *conn, Conn::Idle) {
                c.close().await;
            }
        }
    }
}

/// The state of a server that needs `code-executor auth login`.
pub const NEEDS_LOGIN: &str = "needs_login";

fn needs_login(server: &str) -> UpstreamError {
    UpstreamError::NeedsLogin {
        server: server.to_string(),
        command: oauth::login_command(server, &[]),
    }
}

impl Slot {
    /// A call was refused for authorization: without usable tokens the connection is closed
    /// and the server needs login; a 403 asking for scope leaves it up and names the scope.
    async fn auth_failed(
        &self,
        server: &str,
        tool: &str,
        problem: oauth::problem::AuthProblem,
    ) -> UpstreamError {
        match problem {
            oauth::problem::AuthProblem::NeedsLogin => {
                tracing::warn!(
                    server,
                    tool,
                    "downstream server refused our token; it needs login"
                );
                let mut conn = self.conn.lock().await;
                if let Conn::Connected(c) =
                    std::mem::replace(&mut *conn, Conn::NeedsLogin { at: Instant::now() })
                {
                    c.close().await;
                }
                self.clear_tools();
                needs_login(server)
            }
            oauth::problem::AuthProblem::InsufficientScope { required } => {
                tracing::warn!(server, tool, scopes = ?required, "downstream server asks for more OAuth scope");
                // Reconnect on next use, with the tokens of a new login if there is one.
                let mut conn = self.conn.lock().await;
                if let Conn::Connected(c) = std::mem::replace(&mut *conn, Conn::Idle) {
                    c.close().await;
                }
                UpstreamError::InsufficientScope {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    scopes: if required.is_empty() {
                        "the server did not say which".into()
                    } else {
                        required.join(" ")
                    },
                    command: oauth::login_command(server, &required),
                }
            }
        }
    }

    fn new(spec: Option<ServerSpec>, conn: Conn) -> Self {
        Slot {
            spec,
            conn: Mutex::new(conn),
            tools: Default::default(),
            stderr: StderrTail::default(),
            inflight: Default::default(),
        }
    }

    fn cached_tools(&self) -> Option<Arc<Vec<Tool>>> {
        self.tools.lock().expect("tool cache lock").clone()
    }

    fn clear_tools(&self) {
        *self.tools.lock().expect("tool cache lock") = None;
    }

    /// Whether the connection is gone (the server exited or closed its end).
    async fn is_down(&self) -> bool {
        matches!(&*self.conn.lock().await, Conn::Connected(c) if c.is_closed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::discovery::ConfigSource;

    fn pool(names: &[&str]) -> UpstreamPool {
        let specs = names
            .iter()
            .map(|n| ServerSpec {
                name: n.to_string(),
                transport: Transport::Stdio {
                    command: "true".into(),
                    args: vec![],
                    env: Default::default(),
                    cwd: None,
                },
                source: ConfigSource::test(),
            })
            .collect();
        UpstreamPool::new(
            specs,
            BTreeMap::new(),
            UpstreamTimeouts {
                connect: Duration::from_secs(1),
                call: Duration::from_secs(1),
            },
        )
    }

    #[test]
    fn qualified_names_resolve_by_longest_server() {
        let p = pool(&["git", "git__hub", "Test-Store"]);
        assert_eq!(
            p.resolve("mcp__git__hub__list").unwrap(),
            ("git__hub".to_string(), "list".to_string())
        );
        assert_eq!(
            p.resolve("mcp__git__git_log").unwrap(),
            ("git".to_string(), "git_log".to_string())
        );
        assert_eq!(
            p.resolve("mcp__Test-Store__get-Inventory").unwrap(),
            ("Test-Store".to_string(), "get-Inventory".to_string())
        );
    }

    #[test]
    fn unknown_servers_are_named() {
        let p = pool(&["git"]);
        let err = p
            .resolve("mcp__github__create_issue")
            .unwrap_err()
            .to_string();
        assert!(err.contains("github") && err.contains("git"), "{err}");
        // Case matters: server names are exact.
        assert!(p.resolve("mcp__GIT__git_log").is_err());
        assert!(p.resolve("mcp__git__").is_err());
    }

    #[test]
    fn aliases_resolve_to_the_canonical_server() {
        let aliases = Aliases::of_pairs(&[("git-server", "git"), ("mcp-git", "git")]);
        let p = pool(&["git", "git__hub"]).with_aliases(aliases);
        assert_eq!(
            p.resolve("mcp__mcp-git__git_log").unwrap(),
            ("git".to_string(), "git_log".to_string())
        );
        assert_eq!(
            p.resolve("mcp__git-server__git_status").unwrap(),
            ("git".to_string(), "git_status".to_string())
        );
        assert_eq!(p.ensure_known("git-server").unwrap(), "git");
        assert_eq!(p.ensure_known("git").unwrap(), "git");
        let err = p.ensure_known("git-serve").unwrap_err().to_string();
        assert!(err.contains("git-serve"), "{err}");
        // Listed once, with its aliases.
        let names: Vec<&str> = p.server_names().collect();
        assert_eq!(names, ["git", "git__hub"]);
    }
}
