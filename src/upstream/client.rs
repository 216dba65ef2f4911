//! One rmcp client connection to a downstream server (stdio child or streamable HTTP), and the
//! client-side handler that reacts to `notifications/tools/list_changed`.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::ClientInitializeError;
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use tokio::io::AsyncBufReadExt;

use crate::clients::discovery::{ServerSpec, Transport};

type ToolCache = Arc<Mutex<Option<Arc<Vec<Tool>>>>>;

/// How many stderr lines of a downstream server are kept for error messages.
const STDERR_LINES: usize = 20;

/// The last lines a downstream server wrote to stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().expect("stderr tail lock");
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Appends the last stderr lines to an error, where there are any.
    pub(crate) fn annotate(&self, reason: String) -> String {
        let lines = self.0.lock().expect("stderr tail lock");
        let tail: Vec<&str> = lines
            .iter()
            .rev()
            .take(3)
            .rev()
            .map(String::as_str)
            .collect();
        if tail.is_empty() {
            reason
        } else {
            format!("{reason} (stderr: {})", tail.join(" | "))
        }
    }
}

/// Receives notifications from one downstream server.
struct UpstreamHandler {
    server: String,
    tools: ToolCache,
}

impl ClientHandler for UpstreamHandler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("code-executor", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "tool list changed; refreshing on next use");
        *self.tools.lock().expect("tool cache lock") = None;
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

/// Starts (stdio) or opens (HTTP) the server and runs the MCP handshake, each attempt bounded
/// by `timeout`: protocol 2026-07-28 first (`server/discover`); when the server does not speak
/// it (an error, or no answer), a fresh connection with the `initialize` handshake (2025-11-25
/// and earlier). Two clean attempts, rather than a fallback on the same stream, so a late
/// answer to the first attempt can never be mistaken for the second's.
pub(crate) async fn connect(
    spec: &ServerSpec,
    tools: ToolCache,
    stderr_tail: StderrTail,
    timeout: Duration,
) -> Result<Connection, String> {
    let discover = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let first = tokio::time::timeout(
        timeout,
        connect_with(spec, tools.clone(), stderr_tail.clone(), discover),
    )
    .await;
    match first {
        Ok(Ok(connection)) => return Ok(connection),
        Ok(Err(ConnectError::Setup(reason))) => return Err(reason),
        Ok(Err(ConnectError::Handshake(e))) => {
            tracing::debug!(server = %spec.name, "no protocol 2026-07-28 ({e}); retrying with initialize");
        }
        Err(_) => {
            tracing::debug!(server = %spec.name, "no answer to server/discover; retrying with initialize");
        }
    }
    let second = tokio::time::timeout(
        timeout,
        connect_with(spec, tools, stderr_tail, ClientLifecycleMode::Initialize),
    )
    .await;
    match second {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "no answer to `initialize` within {} ms",
            timeout.as_millis()
        )),
    }
}

#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("{0}")]
    Setup(String),
    #[error("{0}")]
    Handshake(Box<ClientInitializeError>),
}

impl From<ClientInitializeError> for ConnectError {
    fn from(e: ClientInitializeError) -> Self {
        ConnectError::Handshake(Box::new(e))
    }
}

async fn connect_with(
    spec: &ServerSpec,
    tools: ToolCache,
    stderr_tail: StderrTail,
    lifecycle: ClientLifecycleMode,
) -> Result<Connection, ConnectError> {
    let handler = UpstreamHandler {
        server: spec.name.clone(),
        tools,
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
                let server = spec.name.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(server = %server, "stderr: {line}");
                        stderr_tail.push(line.chars().take(500).collect());
                    }
                });
            }
            handler.serve_with_lifecycle(transport, lifecycle).await?
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
            let transport = StreamableHttpClientTransport::from_config(config);
            handler.serve_with_lifecycle(transport, lifecycle).await?
        }
    };
    Ok(Connection { service })
}
