//! The MCP server the client talks to: the rmcp `ServerHandler` exposing the tools in
//! [`tools`], over stdio or streamable HTTP ([`http`]). It validates arguments, delegates to the
//! executor and the directory, and turns every outcome into `structuredContent` plus one
//! readable text block. It holds no policy of its own.

pub mod http;
pub mod tools;

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::directory;
use crate::executor::{ExecutionReport, ExecutionRequest, Executor};
use crate::sandbox::proto::Language;

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
                    })
                    .await;
                Ok(execution_result(report))
            }
            tools::SEARCH_TOOLS => {
                let a: SearchArgs = parse(name, args)?;
                let limit = a.limit.unwrap_or(10).clamp(1, 100);
                let found = directory::search_detailed(
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
                let health = json!({
                    "status": status,
                    "version": env!("CARGO_PKG_VERSION"),
                    "uptimeMs": self.started.elapsed().as_millis() as u64,
                    "runtime": &*self.runtime,
                    "servers": {
                        "configured": servers.len(),
                        "connected": servers.iter().filter(|s| s.state == "connected").count(),
                        "failed": failed,
                    },
                    "executions": self.executor.counters(),
                });
                let text = format!(
                    "{status}: {} servers ({failed} failed), deno {}",
                    servers.len(),
                    self.runtime.deno.as_deref().unwrap_or("missing")
                );
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let result = match self.dispatch(&request.name, args).await {
            Ok(result) => result,
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        Ok(result.into())
    }
}
