//! `executeTypescript` and `executePython`: their schemas, their arguments, and the reply an
//! execution becomes (`structuredContent` plus one readable text block; its call lists are
//! bounded, see `broker::gate`: `toolCallsNotListed` and `toolCallSummaryRest` appear only when
//! they are not empty). Running the code is the executor's.

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde::Deserialize;
use serde_json::{Value, json};

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::reply::object;
use crate::ask::ClientLine;
use crate::executor::{ExecutionReport, ExecutionRequest, Executor};
use crate::sandbox::proto::Language;

pub(super) const TYPESCRIPT: &str = "executeTypescript";
pub(super) const PYTHON: &str = "executePython";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ExecuteArgs {
    code: String,
    #[serde(default)]
    allowed_tools: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

fn input() -> Value {
    json!({"type": "object", "properties": {
        "code": {"type": "string"},
        "allowedTools": {"type": "array", "items": {"type": "string"}, "description": "Tools the code may call and look up (names or * globs); default none"},
        "timeoutMs": {"type": "integer"}
    }, "required": ["code"]})
}

fn output() -> Value {
    json!({"type": "object", "properties": {
        "success": {"type": "boolean"},
        "output": {"type": "string"},
        "error": {"type": ["string", "null"]},
        "result": {},
        "executionTimeMs": {"type": "number"},
        "toolCallsMade": {"type": "array"},
        "toolCallSummary": {"type": "array"}
    }, "required": ["success", "output"]})
}

/// Both tools run code that may call any downstream tool `allowedTools` lets it call (the
/// policy permitting), so nothing about their effects can be promised: not read-only,
/// destructive and not idempotent (a tool called may delete, or append anew each time), and
/// open-world (downstream servers reach files, networks and services of every kind).
pub(super) fn tools() -> [Tool; 2] {
    use rmcp::model::ToolAnnotations;

    let effects = ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(false)
        .open_world(true);
    let tool = |name, description| {
        Tool::new(name, description, object(input()))
            .with_raw_output_schema(object(output()))
            .annotate(effects.clone())
    };
    [
        tool(
            TYPESCRIPT,
            "Run TypeScript in a fresh sandbox (no files, network or env). Inside: await callMCPTool('mcp__server__tool', args), searchTools(q), getToolSchema(name). Returns console output and the returned or last value.",
        ),
        tool(
            PYTHON,
            "Same, in Python 3.14: await call_mcp_tool('mcp__server__tool', args), search_tools(q), get_tool_schema(name); print output and the last value return.",
        ),
    ]
}

/// Who an execution runs for: the client session, the request's cancellation and the line
/// back to the client.
pub(super) struct CallerContext {
    pub session: String,
    pub cancel: CancellationToken,
    pub client: Arc<ClientLine>,
}

/// Runs the code for the caller and turns the report into the reply.
pub(super) async fn run(
    executor: &Executor,
    language: Language,
    args: ExecuteArgs,
    caller: CallerContext,
) -> CallToolResult {
    let report = executor
        .execute(ExecutionRequest {
            language,
            code: args.code,
            allowed_tools: args.allowed_tools,
            timeout_ms: args.timeout_ms,
            session: caller.session,
            cancel: caller.cancel,
            client: caller.client,
        })
        .await;
    reply(report)
}

/// The readable text of an execution: output, then the result or the error.
fn text(report: &ExecutionReport) -> String {
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

fn reply(report: ExecutionReport) -> CallToolResult {
    let text = text(&report);
    let success = report.success;
    let value = serde_json::to_value(&report).unwrap_or(Value::Null);
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    result.is_error = Some(!success);
    result
}
