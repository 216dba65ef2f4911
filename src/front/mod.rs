//! The MCP server the client talks to: the rmcp `ServerHandler` exposing the tools in
//! [`tools`], over stdio or streamable HTTP ([`http`]). It validates arguments, delegates to the
//! executor and the directory, and turns every outcome into `structuredContent` plus one
//! readable text block. It holds no policy of its own.

pub mod http;
pub mod tools;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::catalog::directory;
use crate::executor::{ExecutionReport, ExecutionRequest, Executor};
use crate::sandbox::proto::Language;

/// How often a long execution reports progress, when the client asked for it.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

const INSTRUCTIONS: &str = "Reach the tools of every configured MCP server through code: searchTools to find a tool, getToolSchema for its signature, then executeTypescript or executePython with allowedTools listing what the code may call. Only what the code prints or returns comes back.";

/// Versions of the sandbox runtimes, for `health`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RuntimeInfo {
    pub deno: Option<String>,
    pub pyodide: Option<String>,
}

/// The MCP server handler. Cheap to clone (one per HTTP session).
#[derive(Clone)]
pub struct Front {
    executor: Arc<Executor>,
    runtime: Arc<RuntimeInfo>,
    tools: Arc<Vec<Tool>>,
    started: Instant,
}

/// Who is calling: the client session (for rate limits and audit) and the request's
/// cancellation (a `notifications/cancelled` from the client).
#[derive(Debug, Clone)]
struct Caller {
    session: String,
    cancel: CancellationToken,
}

impl Default for Caller {
    fn default() -> Self {
        Caller {
            session: "local".into(),
            cancel: CancellationToken::new(),
        }
    }
}

/// The session a request belongs to: over HTTP the `Mcp-Session-Id` when the client has one,
/// else a fingerprint of its bearer token (never the token), else `http`; over stdio the one
/// client of the process, `stdio`.
fn session_of(context: &RequestContext<RoleServer>) -> String {
    let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
        return "stdio".into();
    };
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(id) = header("mcp-session-id").filter(|id| is_printable(id)) {
        return format!("http:{}", id.chars().take(64).collect::<String>());
    }
    if let Some(auth) = header("authorization") {
        let digest = Sha256::digest(auth.as_bytes());
        return format!("http-token:{}", hex::encode(&digest[..6]));
    }
    "http".into()
}

fn is_printable(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExecuteArgs {
    code: String,
    #[serde(default)]
    allowed_tools: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    detail: directory::Detail,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaArgs {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

impl Front {
    pub fn new(executor: Arc<Executor>, runtime: RuntimeInfo) -> Self {
        Front {
            executor,
            runtime: Arc::new(runtime),
            tools: Arc::new(tools::all()),
            started: Instant::now(),
        }
    }

    /// Dispatches one tool call; the error string becomes an `isError` result.
    pub async fn dispatch(&self, name: &str, args: Value) -> Result<CallToolResult, String> {
        self.dispatch_for(name, args, &Caller::default()).await
    }

    /// Dispatches one tool call for `caller` (its session and cancellation).
    async fn dispatch_for(
        &self,
        name: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<CallToolResult, String> {
        match name {
            tools::EXECUTE_TYPESCRIPT | tools::EXECUTE_PYTHON => {
                let a: ExecuteArgs = parse(name, args)?;
                let language = if name == tools::EXECUTE_PYTHON {
                    Language::Python
                } else {
                    Language::Typescript
                };
                let report = self
                    .executor
                    .execute(ExecutionRequest {
                        language,
                        code: a.code,
                        allowed_tools: a.allowed_tools,
                        timeout_ms: a.timeout_ms,
                        session: caller.session.clone(),
                        cancel: caller.cancel.clone(),
                    })
                    .await;
                Ok(execution_result(report))
            }
            tools::SEARCH_TOOLS => {
                let a: SearchArgs = parse(name, args)?;
                let limit = a.limit.unwrap_or(10).clamp(1, 100);
                let found = directory::search(
                    self.executor.upstream(),
                    &a.query,
                    a.server.as_deref(),
                    limit,
                    a.detail,
                )
                .await
                .map_err(|e| e.to_string())?;
                let text = found.text(&a.query);
                structured(&found, text)
            }
            tools::GET_TOOL_SCHEMA => {
                let a: SchemaArgs = parse(name, args)?;
                let schema = directory::tool_schema(self.executor.upstream(), &a.name)
                    .await
                    .map_err(|e| e.to_string())?;
                let text = format!("{}\n{}", schema.signature, schema.description);
                structured(&schema, text)
            }
            tools::LIST_SERVERS => {
                let _: NoArgs = parse(name, args)?;
                let servers = directory::servers(self.executor.upstream()).await;
                let text = servers
                    .iter()
                    .map(|s| {
                        let mut line = format!("{} ({}): {}", s.name, s.transport, s.state);
                        if let Some(n) = s.tools {
                            line.push_str(&format!(", {n} tools"));
                        }
                        if let Some(e) = &s.error {
                            line.push_str(&format!(" - {e}"));
                        }
                        line
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                structured(&json!({ "servers": servers }), text)
            }
            tools::HEALTH => {
                let _: NoArgs = parse(name, args)?;
                let servers = directory::servers(self.executor.upstream()).await;
                let failed = servers.iter().filter(|s| s.state == "failed").count();
                let status = if self.runtime.deno.is_none() || failed > 0 {
                    "degraded"
                } else {
                    "ok"
                };
                let counters = self.executor.counters();
                let recent_errors = self.executor.metrics().recent_errors();
                let text = format!(
                    "{status}: {} servers ({failed} failed), deno {}, {} running, {} queued, warm workers ts {}/{} py {}/{}, {} errors in the last {} s",
                    servers.len(),
                    self.runtime.deno.as_deref().unwrap_or("missing"),
                    counters.running,
                    counters.queued,
                    counters.warm_typescript_workers,
                    counters.pool_size_typescript,
                    counters.warm_python_workers,
                    counters.pool_size_python,
                    recent_errors.values().sum::<u64>(),
                    crate::ops::metrics::RECENT_WINDOW.as_secs(),
                );
                let health = json!({
                    "status": status,
                    "version": env!("CARGO_PKG_VERSION"),
                    "uptimeMs": self.started.elapsed().as_millis() as u64,
                    "runtime": &*self.runtime,
                    "servers": {
                        "configured": servers.len(),
                        "connected": servers.iter().filter(|s| s.state == "connected").count(),
                        "failed": failed,
                        "states": servers.iter().map(|s| json!({
                            "name": s.name,
                            "state": s.state,
                            "error": s.error,
                        })).collect::<Vec<_>>(),
                    },
                    "executions": counters,
                    "recentErrors": {
                        "windowSeconds": crate::ops::metrics::RECENT_WINDOW.as_secs(),
                        "counts": recent_errors,
                    },
                    "audit": self.executor.audit().is_enabled(),
                });
                structured(&health, text)
            }
            other => Err(format!(
                "unknown tool `{other}`; available: executeTypescript, executePython, searchTools, getToolSchema, listServers, health"
            )),
        }
    }
}

fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    serde_json::from_value(args).map_err(|e| format!("invalid arguments for {tool}: {e}"))
}

fn structured<T: serde::Serialize>(value: &T, text: String) -> Result<CallToolResult, String> {
    let value = serde_json::to_value(value).map_err(|e| e.to_string())?;
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// The readable text of an execution: output, then the result or the error.
fn execution_text(report: &ExecutionReport) -> String {
    let mut text = report.output.clone();
    let mut add = |part: String| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&part);
    };
    if let Some(result) = &report.result {
        add(format!(
            "Result: {}",
            serde_json::to_string_pretty(result).unwrap_or_default()
        ));
    }
    if let Some(error) = &report.error {
        add(format!("Error: {error}"));
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    text
}

fn execution_result(report: ExecutionReport) -> CallToolResult {
    let text = execution_text(&report);
    let success = report.success;
    let value = serde_json::to_value(&report).unwrap_or(Value::Null);
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    result.is_error = Some(!success);
    result
}

impl ServerHandler for Front {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "code-executor",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let received = Instant::now();
        tracing::debug!(tool = %request.name, "front: call received");
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        // The call runs in its own task, so that when this future is dropped (an HTTP client
        // that disconnects) the execution still sees a cancellation, kills its worker and
        // leaves its audit record, instead of vanishing mid-way.
        let cancel = context.ct.child_token();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let caller = Caller {
            session: session_of(&context),
            cancel,
        };
        let front = self.clone();
        let name = request.name.clone();
        let dispatch = async move {
            tokio::spawn(async move { front.dispatch_for(&name, args, &caller).await })
                .await
                .unwrap_or_else(|e| Err(format!("internal error: {e}")))
        };
        let result = match context.meta.get_progress_token() {
            Some(token) => {
                // Report progress (seconds elapsed) until the call returns.
                let peer = context.peer.clone();
                let started = Instant::now();
                let ticker = async move {
                    let mut tick = tokio::time::interval(PROGRESS_EVERY);
                    tick.tick().await;
                    loop {
                        tick.tick().await;
                        let seconds = started.elapsed().as_secs();
                        let mut param =
                            ProgressNotificationParam::new(token.clone(), seconds as f64);
                        param.message = Some(format!("running for {seconds} s"));
                        if peer.notify_progress(param).await.is_err() {
                            return;
                        }
                    }
                };
                tokio::select! {
                    result = dispatch => result,
                    () = ticker => unreachable!("the ticker only stops when the client is gone"),
                }
            }
            None => dispatch.await,
        };
        let result = match result {
            Ok(result) => result,
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        tracing::debug!(
            us = received.elapsed().as_micros() as u64,
            "front: call answered"
        );
        Ok(result.into())
    }
}
