//! The gate every tool call from sandboxed code passes, and the one owner of its order:
//!
//! 1. **resolve** the name against the configured servers,
//! 2. **admit** it (clean name, server-wide policy, the execution's `allowedTools`, its call
//!    quota, the argument size) and check the arguments are an object,
//! 3. **look up** the tool in the server's live list (a tool the server does not list is never
//!    called),
//! 4. **validate** the arguments against its live input schema,
//! 5. **rate**-limit it (tool, server, client session),
//! 6. **send** it downstream,
//! 7. **check** the result's size, **shape** it for code,
//! 8. **record** it: the execution's report, the audit trail and the metrics, whatever happened.
//!
//! The decisions are the `Broker`'s; this module only sequences them and records the outcome.
//! A refused call never reaches the downstream server. Every refusal is a `Refusal` with its
//! code; every failure after admission is a `Failure` with its category.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::Value;

use super::{Allowlist, Broker, CallQuota, CallScope, Refusal};
use crate::catalog;
use crate::ops::audit::{AuditLog, ToolCallRecord};
use crate::ops::metrics::Metrics;
use crate::sandbox::proto::ToolTarget;
use crate::upstream::{UpstreamError, UpstreamPool};

/// Calls of one tool within one execution, as the execution's report lists them.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallStat {
    pub tool: String,
    pub calls: u32,
    pub errors: u32,
    pub refused: u32,
    pub total_ms: u64,
}

/// How an admitted call failed, as a category for audit records and metrics (never a message:
/// downstream text may hold anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server could not be reached, or broke down during the call.
    ServerError,
    /// The server did not answer within `tool_call_timeout_ms`.
    Timeout,
    /// The tool answered with `isError`.
    ToolError,
    /// The result was over `max_result_bytes`.
    ResultSize,
}

impl Failure {
    pub(crate) fn code(self) -> &'static str {
        match self {
            Failure::ServerError => "server_error",
            Failure::Timeout => "timeout",
            Failure::ToolError => "tool_error",
            Failure::ResultSize => "result_size",
        }
    }

    fn of(error: &UpstreamError) -> Failure {
        match error {
            UpstreamError::Timeout { .. } => Failure::Timeout,
            _ => Failure::ServerError,
        }
    }
}

/// The gate, shared by every execution.
pub(crate) struct Gate {
    broker: Arc<Broker>,
    upstream: Arc<UpstreamPool>,
    audit: Arc<AuditLog>,
    metrics: Arc<Metrics>,
}

/// One execution's side of the gate: who is calling, what it may call, how many calls it has
/// left, and what it called so far (for its report).
pub(crate) struct ExecutionCalls {
    session: String,
    execution_id: String,
    allowlist: Allowlist,
    quota: CallQuota,
    record: Mutex<CallRecord>,
}

#[derive(Default)]
struct CallRecord {
    made: Vec<String>,
    stats: BTreeMap<String, ToolCallStat>,
}

impl ExecutionCalls {
    pub(crate) fn new(
        session: &str,
        execution_id: &str,
        allowlist: Allowlist,
        max_calls: u32,
    ) -> Self {
        ExecutionCalls {
            session: session.to_string(),
            execution_id: execution_id.to_string(),
            allowlist,
            quota: CallQuota::new(max_calls),
            record: Mutex::default(),
        }
    }

    /// The tools called (in order, refused calls left out) and the per-tool statistics.
    pub(crate) fn take_report(&self) -> (Vec<String>, Vec<ToolCallStat>) {
        let record = std::mem::take(&mut *self.record.lock().expect("call record lock"));
        (record.made, record.stats.into_values().collect())
    }

    fn note(&self, tool: &str, ending: &Ending, elapsed: Duration) {
        let mut record = self.record.lock().expect("call record lock");
        if !matches!(ending, Ending::Refused(_)) {
            record.made.push(tool.to_string());
        }
        let stat = record
            .stats
            .entry(tool.to_string())
            .or_insert_with(|| ToolCallStat {
                tool: tool.to_string(),
                ..Default::default()
            });
        match ending {
            Ending::Answered => stat.calls += 1,
            Ending::Failed(_) => {
                stat.calls += 1;
                stat.errors += 1;
            }
            Ending::Refused(_) => stat.refused += 1,
        }
        stat.total_ms += elapsed.as_millis() as u64;
    }
}

/// How one call ended, for its record.
enum Ending {
    Answered,
    Refused(&'static str),
    Failed(Failure),
}

/// What the record of one call holds.
struct CallFacts<'a> {
    /// The qualified name (or what the code asked for, if it did not resolve).
    tool: &'a str,
    /// The resolved server; empty when the name did not resolve.
    server: &'a str,
    ending: Ending,
    elapsed: Duration,
    argument_bytes: usize,
    result_bytes: Option<usize>,
}

/// A call stopped before it was sent: the reason to record and the message for the code.
struct Stop {
    ending: Ending,
    message: String,
}

impl From<Refusal> for Stop {
    fn from(refusal: Refusal) -> Self {
        Stop {
            ending: Ending::Refused(refusal.code()),
            message: refusal.to_string(),
        }
    }
}

impl Gate {
    pub(crate) fn new(
        broker: Arc<Broker>,
        upstream: Arc<UpstreamPool>,
        audit: Arc<AuditLog>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Gate {
            broker,
            upstream,
            audit,
            metrics,
        }
    }

    /// Takes one call from sandboxed code through every step, in order, and records it. The
    /// error is the message the code sees.
    pub(crate) async fn call(
        &self,
        calls: &ExecutionCalls,
        target: ToolTarget,
        args: Value,
        raw: bool,
    ) -> Result<Value, String> {
        let argument_bytes = serde_json::to_vec(&args).map_or(0, |v| v.len());
        let (server, tool) = match self.resolve(&target) {
            Ok(pair) => pair,
            Err(refusal) => {
                let asked = match &target {
                    ToolTarget::Qualified(name) => name.clone(),
                    ToolTarget::Split { server, tool } => format!("{server}/{tool}"),
                };
                return self.stopped(calls, &asked, "", argument_bytes, refusal.into());
            }
        };
        let name = catalog::qualified_name(&server, &tool);
        let args = match self
            .before_sending(calls, &server, &tool, &name, args, argument_bytes)
            .await
        {
            Ok(args) => args,
            Err(stop) => return self.stopped(calls, &name, &server, argument_bytes, stop),
        };
        let started = Instant::now();
        let sent = self.upstream.call(&server, &tool, args).await;
        let elapsed = started.elapsed();
        let (shaped, result_bytes, failure) = match sent {
            Ok(result) => self.after_answer(&name, result, raw),
            Err(e) => (Err(e.to_string()), None, Some(Failure::of(&e))),
        };
        self.record(
            calls,
            CallFacts {
                tool: &name,
                server: &server,
                ending: failure.map_or(Ending::Answered, Ending::Failed),
                elapsed,
                argument_bytes,
                result_bytes,
            },
        );
        shaped
    }

    /// Step 1: the server and tool the code means.
    fn resolve(&self, target: &ToolTarget) -> Result<(String, String), Refusal> {
        let resolved = match target {
            ToolTarget::Qualified(name) => self.upstream.resolve(name),
            ToolTarget::Split { server, tool } => self
                .upstream
                .ensure_known(server)
                .map(|()| (server.clone(), tool.clone())),
        };
        resolved.map_err(|e| Refusal::UnknownTool(e.to_string()))
    }

    /// Steps 2 to 5: everything that must hold before the call leaves. Returns the arguments
    /// as the object that is sent.
    async fn before_sending(
        &self,
        calls: &ExecutionCalls,
        server: &str,
        tool: &str,
        name: &str,
        args: Value,
        argument_bytes: usize,
    ) -> Result<serde_json::Map<String, Value>, Stop> {
        let scope = CallScope {
            allowlist: &calls.allowlist,
            quota: &calls.quota,
        };
        self.broker.admit(&scope, name, argument_bytes)?;
        let Value::Object(args) = args else {
            return Err(Refusal::ArgumentsNotObject(name.to_string()).into());
        };
        let listed = self.upstream.tools(server).await.map_err(|e| Stop {
            ending: Ending::Failed(Failure::ServerError),
            message: e.to_string(),
        })?;
        let Some(spec) = listed.iter().find(|t| t.name == tool) else {
            let unknown = UpstreamError::UnknownTool {
                server: server.to_string(),
                tool: tool.to_string(),
            };
            return Err(Refusal::UnknownTool(unknown.to_string()).into());
        };
        let expected =
            || catalog::signature(tool, &spec.input_schema, spec.output_schema.as_deref());
        let args = Value::Object(args);
        self.broker
            .validate(name, &spec.input_schema, &args, expected)?;
        self.broker.rate(&calls.session, server, name)?;
        let Value::Object(args) = args else {
            unreachable!("checked to be an object above")
        };
        Ok(args)
    }

    /// Step 7: the result's size, then its shape for code. Returns the shaped result, its size
    /// and the failure, if any.
    fn after_answer(
        &self,
        name: &str,
        result: CallToolResult,
        raw: bool,
    ) -> (Result<Value, String>, Option<usize>, Option<Failure>) {
        let bytes = serde_json::to_vec(&result).map_or(0, |v| v.len());
        if let Err(refusal) = self.broker.check_result(name, bytes) {
            return (
                Err(refusal.to_string()),
                Some(bytes),
                Some(Failure::ResultSize),
            );
        }
        let shaped = shape_result(name, result, raw);
        let failure = shaped.is_err().then_some(Failure::ToolError);
        (shaped, Some(bytes), failure)
    }

    /// Records a call that was not sent and hands its message back to the code.
    fn stopped(
        &self,
        calls: &ExecutionCalls,
        tool: &str,
        server: &str,
        argument_bytes: usize,
        stop: Stop,
    ) -> Result<Value, String> {
        self.record(
            calls,
            CallFacts {
                tool,
                server,
                ending: stop.ending,
                elapsed: Duration::ZERO,
                argument_bytes,
                result_bytes: None,
            },
        );
        Err(stop.message)
    }

    /// Step 8: the execution's report, the metrics and the audit trail.
    fn record(&self, calls: &ExecutionCalls, facts: CallFacts<'_>) {
        calls.note(facts.tool, &facts.ending, facts.elapsed);
        let (decision, reason, error) = match facts.ending {
            Ending::Refused(code) => {
                self.metrics.denial(facts.server, code);
                ("refused", code, None)
            }
            Ending::Answered => {
                self.metrics.tool_call(facts.server, true, facts.elapsed);
                ("allowed", "allowed", None)
            }
            Ending::Failed(failure) => {
                self.metrics.tool_call(facts.server, false, facts.elapsed);
                ("allowed", "allowed", Some(failure.code()))
            }
        };
        self.audit.tool_call(&ToolCallRecord {
            execution_id: &calls.execution_id,
            session: &calls.session,
            tool: facts.tool,
            decision,
            reason,
            duration_ms: facts.elapsed.as_millis() as u64,
            argument_bytes: facts.argument_bytes,
            result_bytes: facts.result_bytes,
            error,
        });
    }
}

/// A downstream result in the most useful form for code: `structuredContent`; else one text
/// block's JSON (or the text); several text blocks as an array; any non-text block keeps the
/// whole `content` array. `raw` returns the result untouched. Tool errors become `Err`.
pub(crate) fn shape_result(name: &str, result: CallToolResult, raw: bool) -> Result<Value, String> {
    if raw {
        return serde_json::to_value(&result).map_err(|e| e.to_string());
    }
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    if result.is_error == Some(true) {
        let text = texts.join("\n");
        return Err(format!(
            "{name} returned an error: {}",
            if text.is_empty() {
                "(no message)"
            } else {
                text.as_str()
            }
        ));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    if texts.len() < result.content.len() {
        return serde_json::to_value(&result.content).map_err(|e| e.to_string());
    }
    let parse = |t: &str| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string()));
    Ok(match texts.as_slice() {
        [] => Value::Null,
        [one] => parse(one),
        many => Value::Array(many.iter().map(|t| parse(t)).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;
    use serde_json::json;

    #[test]
    fn results_take_their_most_useful_form() {
        let one = CallToolResult::success(vec![ContentBlock::text(r#"{"a":1}"#)]);
        assert_eq!(shape_result("t", one, false), Ok(json!({"a": 1})));
        let plain = CallToolResult::success(vec![ContentBlock::text("hello")]);
        assert_eq!(shape_result("t", plain, false), Ok(json!("hello")));
        let two = CallToolResult::success(vec![ContentBlock::text("1"), ContentBlock::text("x")]);
        assert_eq!(shape_result("t", two, false), Ok(json!([1, "x"])));
        let structured = CallToolResult::structured(json!({"s": true}));
        assert_eq!(shape_result("t", structured, false), Ok(json!({"s": true})));
        let image = CallToolResult::success(vec![
            ContentBlock::text("caption"),
            ContentBlock::image("aGk=", "image/png"),
        ]);
        let shaped = shape_result("t", image, false).unwrap();
        assert_eq!(shaped.as_array().map(Vec::len), Some(2));
        let error = CallToolResult::error(vec![ContentBlock::text("nope")]);
        assert_eq!(
            shape_result("mcp__s__t", error, false),
            Err("mcp__s__t returned an error: nope".into())
        );
    }

    #[test]
    fn calls_are_reported_per_tool_with_refusals_left_out_of_the_made_list() {
        let calls = ExecutionCalls::new("s", "e", Allowlist::default(), 10);
        calls.note("a", &Ending::Answered, Duration::from_millis(3));
        calls.note(
            "a",
            &Ending::Failed(Failure::ToolError),
            Duration::from_millis(2),
        );
        calls.note("b", &Ending::Refused("not_allowed"), Duration::ZERO);
        let (made, stats) = calls.take_report();
        assert_eq!(made, ["a", "a"]);
        let a = &stats[0];
        assert_eq!((a.calls, a.errors, a.refused, a.total_ms), (2, 1, 0, 5));
        assert_eq!((stats[1].tool.as_str(), stats[1].refused), ("b", 1));
    }
}
