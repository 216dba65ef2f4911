//! `executeTypescript` and `executePython`: their schemas, their arguments, and the reply an
//! execution becomes: one readable text block plus, on success, `structuredContent` (success,
//! output, result, time), within the reply budget (`budget`), then any media the code returned
//! (`media`). The rest of the report is in `_meta` ([`REPORT_META`]): a failure's whole report,
//! a success's call and sampling accounting. Its call lists are bounded, see `broker::gate`;
//! they, and `error`, `toolCallsNotListed` and `toolCallSummaryRest`, appear only when they are
//! not empty. Running the code is the executor's.

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::reply::object;
use super::{budget, media};
use crate::ask::ClientLine;
use crate::executor::{ExecutionReport, ExecutionRequest, Executor, ReplyLimits, TaskTime};
use crate::pii::{self, Vault};
use crate::sandbox::proto::Language;
use crate::sandbox::tap::OutputTap;

pub(super) const TYPESCRIPT: &str = "executeTypescript";
pub(super) const PYTHON: &str = "executePython";

/// The `_meta` key of an execution's report: a failure's whole report, a success's accounting
/// (its calls and sampling rounds, see [`ACCOUNTS`]; the rest is its structured content).
pub(super) const REPORT_META: &str = "code-executor/report";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ExecuteArgs {
    code: String,
    /// `null` is "not given" (strict-mode frameworks send it for every field they have no
    /// value for): no tools, as when absent. `[]` also means no tools.
    #[serde(default)]
    allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

fn input() -> Value {
    json!({"type": "object", "properties": {
        "code": {"type": "string"},
        "allowedTools": {"type": ["array", "null"], "items": {"type": "string"}, "description": "names or * globs"},
        "timeoutMs": {"type": ["integer", "null"], "minimum": 1}
    }, "required": ["code"], "additionalProperties": false})
}

fn output() -> Value {
    // `error`, `toolCallsMade` and `toolCallSummary` appear only when not empty, and a failure's
    // report is in `_meta` (see `reply`): the schema names what a success always has.
    json!({"type": "object", "properties": {
        "success": {"type": "boolean"},
        "output": {"type": "string"},
        "result": {},
        "executionTimeMs": {"type": "number"}
    }, "required": ["success", "output"]})
}

/// Both tools run code that may call any downstream tool `allowedTools` lets it call (the
/// policy permitting), so nothing about their effects can be promised: not read-only,
/// destructive and not idempotent (a tool called may delete, or append anew each time), and
/// open-world (downstream servers reach files, networks and services of every kind). Those are
/// the defaults of the four hints; the two a client may act on are stated.
pub(super) fn tools() -> [Tool; 2] {
    use rmcp::model::ToolAnnotations;

    let effects = ToolAnnotations::new().destructive(true).open_world(true);
    let tool = |name, description| {
        Tool::new(name, description, object(input()))
            .with_raw_output_schema(object(output()))
            .annotate(effects.clone())
    };
    [
        tool(
            TYPESCRIPT,
            "Run TypeScript in a fresh sandbox (no files, network, env). Find tools with searchTools first; list those the code calls in allowedTools. In code: await callMCPTool('mcp__server__tool', args), searchTools(q), getToolSchema(name). Returns console output and the last value: filter in code, print little.",
        ),
        tool(
            PYTHON,
            "Same in Python 3.14 (searchTools first, allowedTools): await call_mcp_tool('mcp__server__tool', args), search_tools(q), get_tool_schema(name); printed output and the last value return.",
        ),
    ]
}

/// Who an execution runs for: the client session, the request's cancellation, the line
/// back to the client and the tap its output is reported live from.
pub(super) struct CallerContext {
    pub session: String,
    pub cancel: CancellationToken,
    pub client: Arc<ClientLine>,
    /// Set when the call runs as a task.
    pub task: Option<TaskTime>,
    pub live: Arc<OutputTap>,
    /// The session's token vault, when personal data is tokenised.
    pub pii: Option<Arc<Vault>>,
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
            allowed_tools: args.allowed_tools.unwrap_or_default(),
            timeout_ms: args.timeout_ms,
            session: caller.session,
            cancel: caller.cancel,
            client: caller.client,
            task: caller.task,
            live: caller.live,
            pii: caller.pii.clone(),
        })
        .await;
    reply(report, executor.reply_limits(), caller.pii.as_deref())
}

/// The reply: media blocks taken out of the returned value (`media`, each through the
/// personal-data checkpoint), then, with a vault, every text of the report tokenised (output,
/// error, result and the rest), then output, result and error fitted to what the reply budget
/// leaves once the media blocks' fields are counted (`budget`), the report's other fields as
/// they are.
fn reply(mut report: ExecutionReport, limits: ReplyLimits, pii: Option<&Vault>) -> CallToolResult {
    let success = report.success;
    let mut output = std::mem::take(&mut report.output);
    let mut error = report.error.take();
    let mut result = report.result.take();
    // After the text block. Before tokenising the value: media data is base64, not text.
    let media_limits = media::MediaLimits {
        payload_bytes: limits.media_bytes,
        fields_bytes: limits.budget_bytes / 4,
    };
    let checkpoint = |block: &mut ContentBlock| {
        if let Some(vault) = pii {
            vault.tokenize_block(block);
        }
    };
    let media = match result.as_mut() {
        Some(value) => media::take_blocks(value, media_limits, 1, &checkpoint),
        None => media::TakenBlocks {
            blocks: Vec::new(),
            fields_bytes: 0,
        },
    };
    let mut frame = match serde_json::to_value(&report) {
        Ok(Value::Object(mut map)) => {
            for shown in ["output", "error", "result"] {
                map.remove(shown);
            }
            map
        }
        _ => Default::default(),
    };
    if let Some(vault) = pii {
        if output.cut > 0 {
            // A value the cut split in two would not be recognised.
            pii::trim_cut_end(&mut output.head);
            pii::trim_cut_start(&mut output.tail);
        }
        output.head = vault.tokenize(&output.head);
        output.tail = vault.tokenize(&output.tail);
        error = error.map(|e| vault.tokenize(&e));
        if let Some(value) = result.as_mut() {
            vault.tokenize_value(value);
        }
        // The report's other fields: their names are the report's own, their values may be text.
        frame.values_mut().for_each(|v| vault.tokenize_value(v));
    }
    let parts = budget::Parts {
        output,
        result,
        error,
    };
    let text_budget = limits.budget_bytes - media.fields_bytes;
    let (text, structured) = budget::fit(parts, frame, text_budget);
    let mut reply = CallToolResult::structured(structured);
    reply.content = std::iter::once(ContentBlock::text(text))
        .chain(media.blocks)
        .collect();
    reply.is_error = Some(!success);
    let meta = &mut reply.meta.get_or_insert_default().0;
    if !success {
        // A failure's report is not structured content: clients validate that against the
        // output schema only on success, and some (pydantic-ai) put it before the model instead
        // of the text, as JSON inside a JSON string. Programs find it in `_meta`.
        if let Some(report) = reply.structured_content.take() {
            meta.insert(REPORT_META.into(), report);
        }
    } else if let Some(Value::Object(structured)) = reply.structured_content.as_mut() {
        // A success's accounting (calls, sampling) is for programs: clients that put structured
        // content before the model (pydantic-ai) would make it most of the reply.
        let accounts: Map<String, Value> = ACCOUNTS
            .iter()
            .filter_map(|key| Some(((*key).to_string(), structured.remove(*key)?)))
            .collect();
        if !accounts.is_empty() {
            meta.insert(REPORT_META.into(), Value::Object(accounts));
        }
    }
    if meta.is_empty() {
        reply.meta = None;
    }
    reply
}

/// The report's fields a success keeps in `_meta` rather than in its structured content.
const ACCOUNTS: [&str; 6] = [
    "toolCallsMade",
    "toolCallsNotListed",
    "toolCallSummary",
    "toolCallSummaryRest",
    "samplingRounds",
    "samplingTokens",
];
