//! The gate every tool call from sandboxed code passes, and the one owner of its order:
//!
//! 0. **spend** one host call from the execution's budget (refused calls count too; look-ups
//!    spend from the same budget, see `executor`),
//! 1. **resolve** the name against the configured servers,
//! 2. **admit** it (clean name, server-wide policy and the execution's `allowedTools` on the
//!    resolved (server, tool) pair, the argument size) and check the arguments are an object,
//! 3. **look up** the tool in the server's live list (a tool the server does not list is never
//!    called),
//! 4. **validate** the arguments against its live input schema,
//! 5. **rate**-limit it (tool, server, client session),
//! 6. **approve** it, when it needs the user's approval (`approval`): asked through the
//!    client's elicitation, unless the session already allowed the tool,
//! 7. **send** it downstream (the questions the server asks meanwhile are relayed to the
//!    execution's client, `ask::relay`),
//! 8. **check** the result's size, **shape** it for code,
//! 9. **record** it: the execution's report, the audit trail and the metrics, whatever happened.
//!
//! The decisions are the `Broker`'s; this module only sequences them and records the outcome.
//! A refused call never reaches the downstream server. Every refusal is a `Refusal` with its
//! code; every failure after admission is a `Failure` with its category. What a call leaves in
//! the execution's report is bounded: names are clipped (`audit::clip_name`), at most
//! `MAX_SUMMARY_TOOLS` tools are listed one by one and `MAX_CALLS_LISTED` calls in order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod content;

use super::approval::Approvals;
use super::limits::Spent;
use super::{Allowlist, Broker, HostCallBudget, Policy, Reach, Refusal};
use crate::ask::approval::{self as asking_approval, Decision};
use crate::ask::{Asking, SamplingSpent};
use crate::catalog;
use crate::catalog::directory::{self, Viewer};
use crate::ops::audit::{self, AuditLog, ToolCallRecord, clip_name};
use crate::ops::metrics::Metrics;
use crate::pii::{Recipient, Vault};
use crate::sandbox::proto::ToolTarget;
use crate::upstream::{UpstreamError, UpstreamPool};

/// Most tools an execution's report lists one by one (`toolCallSummary`); calls to any other
/// tool are summed in `toolCallSummaryRest`.
pub(crate) const MAX_SUMMARY_TOOLS: usize = 100;
/// Most calls an execution's report lists in order (`toolCallsMade`); `toolCallsNotListed`
/// counts the others.
pub(crate) const MAX_CALLS_LISTED: usize = 1000;

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

/// Calls of the tools beyond the first `MAX_SUMMARY_TOOLS`, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OtherToolCalls {
    pub calls: u32,
    pub errors: u32,
    pub refused: u32,
    pub total_ms: u64,
}

/// What one execution's calls come to, for its report and its audit record.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallReport {
    /// The calls sent, in order (refused calls left out), at most `MAX_CALLS_LISTED`.
    pub made: Vec<String>,
    /// Calls sent beyond those listed in `made`.
    pub not_listed: u32,
    /// Per tool, at most `MAX_SUMMARY_TOOLS` tools.
    pub summary: Vec<ToolCallStat>,
    /// The calls of every other tool.
    pub rest: Option<OtherToolCalls>,
    pub counts: CallCounts,
}

/// How many calls an execution made, for its audit record.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallCounts {
    /// Tool calls sent.
    pub calls: u32,
    /// Tool calls refused.
    pub refused: u32,
    /// Every host call answered: tool calls (refused ones too) and look-ups.
    pub host_calls: u32,
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
    approvals: Arc<Approvals>,
    upstream: Arc<UpstreamPool>,
    audit: Arc<AuditLog>,
    metrics: Arc<Metrics>,
}

/// One execution's side of the gate: who is calling, what it may call, how many host calls it
/// has left, and what it called so far (for its report).
pub(crate) struct ExecutionCalls {
    session: String,
    execution_id: String,
    allowlist: Allowlist,
    budget: HostCallBudget,
    /// The execution's questions to its client (approvals, sampling, relayed questions).
    asking: Arc<Asking>,
    /// Cancelled when the execution must stop (its budget is long spent): kills its worker.
    stop: CancellationToken,
    stopped: AtomicBool,
    record: Mutex<CallRecord>,
    /// The session's token vault when personal data is tokenised: its tokens in arguments are
    /// put back before a call leaves.
    pii: Option<Arc<Vault>>,
}

#[derive(Default)]
struct CallRecord {
    made: Vec<String>,
    not_listed: u32,
    stats: BTreeMap<String, ToolCallStat>,
    rest: Option<OtherToolCalls>,
    calls: u32,
    refused: u32,
}

impl ExecutionCalls {
    /// `max_calls` is the host-call budget; `stop` is cancelled to end the execution; the
    /// session and execution are `asking`'s.
    pub(crate) fn new(
        asking: Arc<Asking>,
        execution_id: &str,
        allowlist: Allowlist,
        max_calls: u32,
        stop: CancellationToken,
    ) -> Self {
        ExecutionCalls {
            session: asking.session().to_string(),
            execution_id: execution_id.to_string(),
            allowlist,
            budget: HostCallBudget::new(max_calls),
            asking,
            stop,
            stopped: AtomicBool::new(false),
            record: Mutex::default(),
            pii: None,
        }
    }

    /// Puts back the values of this session's tokens in what the calls send.
    pub(crate) fn with_pii(mut self, pii: Option<Arc<Vault>>) -> Self {
        self.pii = pii;
        self
    }

    /// What a call to `server` sends, with the session's tokens in it replaced by their
    /// values (unknown tokens stay), when personal data is tokenised: the server then holds
    /// every value it is sent (`pii::Recipient::CallTo`).
    pub(crate) fn put_back_for(&self, server: &str, value: &mut Value) {
        if let Some(vault) = &self.pii {
            vault.put_back_value(value, Recipient::CallTo(server));
            vault.note_held(server, value);
        }
    }

    /// The same for a resource URI.
    pub(crate) fn put_back_text_for(&self, server: &str, text: &str) -> String {
        match &self.pii {
            Some(vault) => {
                let text = vault.put_back(text, Recipient::CallTo(server));
                vault.note_held(server, &Value::String(text.clone()));
                text
            }
            None => text.to_string(),
        }
    }

    /// Records the values `server` produced in an answer (its result, a resource, a prompt),
    /// when personal data is tokenised: a token for one of them may go back to it in the
    /// client's answer to a question it asks.
    pub(crate) fn note_produced(&self, server: &str, answer: &Value) {
        if let Some(vault) = &self.pii {
            vault.note_held(server, answer);
        }
    }

    fn note_produced_result(&self, server: &str, result: &CallToolResult) {
        if let Some(vault) = &self.pii {
            vault.note_held_result(server, result);
        }
    }

    /// Spends one host call from the budget. Over it, the refusal; long over it, the
    /// execution is also stopped.
    pub(crate) fn spend(&self) -> Result<(), Refusal> {
        match self.budget.spend() {
            Spent::Ok => Ok(()),
            Spent::Refused(refusal) => Err(refusal),
            Spent::Stop(refusal) => {
                self.stopped.store(true, Ordering::SeqCst);
                self.stop.cancel();
                Err(refusal)
            }
        }
    }

    /// The execution's questions to its client.
    pub(crate) fn asking(&self) -> &Arc<Asking> {
        &self.asking
    }

    /// What the execution's sampling came to.
    pub(crate) fn sampling_spent(&self) -> SamplingSpent {
        self.asking.sampling_spent()
    }

    /// Whether the execution was stopped for making host calls long after its budget.
    pub(crate) fn stopped_by_budget(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// What this execution may call, see and cause to start under `policy`.
    pub(crate) fn reach<'a>(&'a self, policy: &'a Policy) -> Reach<'a> {
        Reach::execution(policy, &self.allowlist)
    }

    /// What the calls came to (the record is emptied).
    pub(crate) fn take_report(&self) -> CallReport {
        let record = std::mem::take(&mut *self.record.lock().expect("call record lock"));
        CallReport {
            made: record.made,
            not_listed: record.not_listed,
            summary: record.stats.into_values().collect(),
            rest: record.rest,
            counts: CallCounts {
                calls: record.calls,
                refused: record.refused,
                host_calls: self.budget.used(),
            },
        }
    }

    fn note(&self, tool: &str, ending: &Ending, elapsed: Duration) {
        let tool = clip_name(tool);
        let mut record = self.record.lock().expect("call record lock");
        let record = &mut *record;
        let refused = matches!(ending, Ending::Refused(_));
        if refused {
            record.refused += 1;
        } else {
            record.calls += 1;
            if record.made.len() < MAX_CALLS_LISTED {
                record.made.push(tool.to_string());
            } else {
                record.not_listed += 1;
            }
        }
        let failed = matches!(ending, Ending::Failed(_));
        let elapsed_ms = elapsed.as_millis() as u64;
        if let Some(stat) = record.stats.get_mut(tool.as_ref()) {
            stat.calls += u32::from(!refused);
            stat.errors += u32::from(failed);
            stat.refused += u32::from(refused);
            stat.total_ms += elapsed_ms;
        } else if record.stats.len() < MAX_SUMMARY_TOOLS {
            record.stats.insert(
                tool.to_string(),
                ToolCallStat {
                    tool: tool.into_owned(),
                    calls: u32::from(!refused),
                    errors: u32::from(failed),
                    refused: u32::from(refused),
                    total_ms: elapsed_ms,
                },
            );
        } else {
            let rest = record.rest.get_or_insert_with(OtherToolCalls::default);
            rest.calls += u32::from(!refused);
            rest.errors += u32::from(failed);
            rest.refused += u32::from(refused);
            rest.total_ms += elapsed_ms;
        }
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
        approvals: Arc<Approvals>,
        upstream: Arc<UpstreamPool>,
        audit: Arc<AuditLog>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Gate {
            broker,
            approvals,
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
        let asked = || match &target {
            ToolTarget::Qualified(name) => name.clone(),
            ToolTarget::Split { server, tool } => format!("{server}/{tool}"),
        };
        if let Err(refusal) = calls.spend() {
            return self.stopped(calls, &asked(), "", argument_bytes, refusal.into());
        }
        let (server, tool) = match self.resolve(calls, &target).await {
            Ok(pair) => pair,
            Err(refusal) => {
                return self.stopped(calls, &asked(), "", argument_bytes, refusal.into());
            }
        };
        let name = catalog::qualified_name(&server, &tool);
        // The real values, before validation: the schema checks what is sent.
        let mut args = args;
        calls.put_back_for(&server, &mut args);
        let args = match self
            .before_sending(calls, &server, &tool, &name, args, argument_bytes)
            .await
        {
            Ok(args) => args,
            Err(stop) => return self.stopped(calls, &name, &server, argument_bytes, stop),
        };
        let started = Instant::now();
        let sent = self
            .upstream
            .call_for(&server, &tool, args, Some(&calls.asking))
            .await;
        let elapsed = started.elapsed();
        let (shaped, result_bytes, failure) = match sent {
            Ok(result) => {
                calls.note_produced_result(&server, &result);
                self.after_answer(&name, result, raw)
            }
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

    /// The server-wide policy, for the views look-ups answer within.
    pub(crate) fn policy(&self) -> &Policy {
        self.broker.policy()
    }

    /// Step 1: the server and tool the code means. A name that resolves to nothing suggests
    /// the tools likely meant.
    async fn resolve(
        &self,
        calls: &ExecutionCalls,
        target: &ToolTarget,
    ) -> Result<(String, String), Refusal> {
        let resolved = match target {
            ToolTarget::Qualified(name) => self.upstream.resolve(name),
            ToolTarget::Split { server, tool } => self
                .upstream
                .ensure_known(server)
                .map(|server| (server, tool.clone())),
        };
        let (server, tool) = match resolved {
            Ok(pair) => pair,
            Err(e) => {
                let asked = match target {
                    ToolTarget::Qualified(name) => name.clone(),
                    ToolTarget::Split { server, tool } => catalog::qualified_name(server, tool),
                };
                let hint = self.hint(calls, &asked).await;
                return Err(Refusal::UnknownTool(format!("{e}{hint}")));
            }
        };
        if tool.starts_with('@') {
            return Err(Refusal::UnknownTool(format!(
                "`{tool}` is not a tool: names beginning with `@` stand for a server's resources and prompts (readResource, getPrompt)"
            )));
        }
        Ok((server, tool))
    }

    /// Steps 2 to 6: everything that must hold before the call leaves. Returns the arguments
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
        let reach = calls.reach(self.broker.policy());
        self.broker
            .admit(&reach, (server, tool), name, argument_bytes)?;
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
            let hint = self.hint(calls, name).await;
            return Err(Refusal::UnknownTool(format!("{unknown}{hint}")).into());
        };
        let expected =
            || catalog::signature(tool, &spec.input_schema, spec.output_schema.as_deref());
        let args = Value::Object(args);
        self.broker
            .validate(name, &spec.input_schema, &args, expected)?;
        self.broker.rate(&calls.session, server, name)?;
        self.approve(calls, server, tool, name, spec.annotations.as_ref(), &args)
            .await?;
        let Value::Object(args) = args else {
            unreachable!("checked to be an object above")
        };
        Ok(args)
    }

    /// `; did you mean ...?` for a name that names no tool: the tools the policy shows that
    /// are alike, those the execution's `allowedTools` leaves out saying how to allow them.
    async fn hint(&self, calls: &ExecutionCalls, asked: &str) -> String {
        let viewer = Viewer {
            reach: calls.reach(self.broker.policy()),
            shown: Reach::policy(self.broker.policy()),
        };
        directory::tool_hint(&self.upstream, &viewer, asked).await
    }

    /// Step 6: the user's approval, when the call needs it and the session has not given it
    /// for the tool already.
    async fn approve(
        &self,
        calls: &ExecutionCalls,
        server: &str,
        tool: &str,
        name: &str,
        annotations: Option<&rmcp::model::ToolAnnotations>,
        args: &Value,
    ) -> Result<(), Refusal> {
        let Some(why) = self.approvals.needed(server, tool, annotations) else {
            return Ok(());
        };
        if self.approvals.allowed_for_session(&calls.session, name) {
            return Ok(());
        }
        match asking_approval::ask(&calls.asking, name, args, why).await {
            Decision::Once => Ok(()),
            Decision::Session => {
                self.approvals.allow_for_session(&calls.session, name);
                Ok(())
            }
            Decision::Refused(why) => Err(Refusal::NotApproved(why)),
        }
    }

    /// Step 8: the result's size, then its shape for code. Returns the shaped result, its size
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

    /// Step 9: the execution's report, the metrics and the audit trail.
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
            tool: audit::Name(facts.tool),
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

    fn calls() -> ExecutionCalls {
        let asking = Arc::new(Asking::unreachable_for_tests("s"));
        ExecutionCalls::new(
            asking,
            "e",
            Allowlist::default(),
            10,
            CancellationToken::new(),
        )
    }

    #[test]
    fn calls_are_reported_per_tool_with_refusals_left_out_of_the_made_list() {
        let calls = calls();
        calls.note("a", &Ending::Answered, Duration::from_millis(3));
        calls.note(
            "a",
            &Ending::Failed(Failure::ToolError),
            Duration::from_millis(2),
        );
        calls.note("b", &Ending::Refused("not_allowed"), Duration::ZERO);
        let report = calls.take_report();
        assert_eq!(report.made, ["a", "a"]);
        let a = &report.summary[0];
        assert_eq!((a.calls, a.errors, a.refused, a.total_ms), (2, 1, 0, 5));
        assert_eq!(
            (report.summary[1].tool.as_str(), report.summary[1].refused),
            ("b", 1)
        );
        assert_eq!(
            (report.counts.calls, report.counts.refused, report.rest),
            (2, 1, None)
        );
    }

    #[test]
    fn the_report_stays_small_whatever_the_names_and_counts() {
        let calls = calls();
        let long = "x".repeat(16 * 1024);
        for i in 0..(MAX_SUMMARY_TOOLS + 50) {
            let name = format!("{i:04}{long}");
            calls.note(&name, &Ending::Refused("not_allowed"), Duration::ZERO);
        }
        for _ in 0..(MAX_CALLS_LISTED + 5) {
            calls.note("mcp__a__b", &Ending::Answered, Duration::ZERO);
        }
        let report = calls.take_report();
        assert_eq!(report.summary.len(), MAX_SUMMARY_TOOLS);
        assert!(report.summary.iter().all(|s| s.tool.len() < 400));
        let rest = report.rest.expect("the other tools are summed");
        // `mcp__a__b` came after the summary was full: counted in the rest.
        assert_eq!(
            (rest.refused, rest.calls),
            (50, MAX_CALLS_LISTED as u32 + 5)
        );
        assert_eq!(
            (report.made.len(), report.not_listed),
            (MAX_CALLS_LISTED, 5)
        );
        assert_eq!(report.counts.refused, MAX_SUMMARY_TOOLS as u32 + 50);
    }

    #[test]
    fn the_budget_counts_every_host_call_and_stops_a_spinning_execution() {
        let calls = calls();
        for _ in 0..10 {
            assert_eq!(calls.spend(), Ok(()));
        }
        for _ in 0..super::super::limits::CALLS_AFTER_BUDGET {
            assert_eq!(calls.spend(), Err(Refusal::QuotaExceeded(10)));
            assert!(!calls.stopped_by_budget());
        }
        assert_eq!(calls.spend(), Err(Refusal::QuotaExceeded(10)));
        assert!(calls.stopped_by_budget() && calls.stop.is_cancelled());
    }
}
