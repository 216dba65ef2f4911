//! One execution from request to report: admission (concurrency limit and queue), a fresh
//! worker, the bridge that answers the worker's host calls through the broker and the upstream
//! pool, cancellation, and the bookkeeping of tool calls (report, audit records, metrics).
//! Talks to `sandbox` for processes, `broker` for decisions, `upstream` and `directory` for
//! downstream servers, `audit` and `observe` for records.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::Semaphore;

use tokio_util::sync::CancellationToken;

use crate::broker::{Allowlist, Broker, CallQuota, CallScope, Refusal};
use crate::catalog::directory;
use crate::config::settings::Settings;
use crate::ops::audit::{self, AuditLog, ExecutionRecord, ToolCallRecord};
use crate::ops::metrics::{Metrics, Readiness};
use crate::sandbox::host::{HostCalls, WorkerConfig};
use crate::sandbox::pool::WorkerPool;
use crate::sandbox::proto::{HostRequest, Language, ToolTarget};
use crate::upstream::UpstreamPool;

/// What the client asked to run.
#[derive(Debug, Clone)]
pub struct ExecutionRequest {
    pub language: Language,
    pub code: String,
    pub allowed_tools: Vec<String>,
    pub timeout_ms: Option<u64>,
    /// The client session it runs for (rate limits, audit).
    pub session: String,
    /// Cancelled when the client cancels the request: the worker is killed.
    pub cancel: CancellationToken,
}

/// What the client gets back (the `structuredContent` of an execution).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionReport {
    pub success: bool,
    pub output: String,
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    pub execution_time_ms: u64,
    pub tool_calls_made: Vec<String>,
    pub tool_call_summary: Vec<ToolCallStat>,
}

/// Calls of one tool within one execution.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallStat {
    pub tool: String,
    pub calls: u32,
    pub errors: u32,
    pub refused: u32,
    pub total_ms: u64,
}

/// Counters for `health`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionCounters {
    pub warm_typescript_workers: usize,
    pub warm_python_workers: usize,
    pub pool_size_typescript: usize,
    pub pool_size_python: usize,
    pub running: usize,
    pub queued: usize,
    pub max_queued: usize,
    pub completed: u64,
    pub failed: u64,
}

/// The records an executor keeps besides its reports.
pub struct Recorders {
    pub audit: Arc<AuditLog>,
    pub metrics: Arc<Metrics>,
}

pub struct Executor {
    settings: Arc<Settings>,
    worker: WorkerConfig,
    typescript: Arc<WorkerPool>,
    python: Arc<WorkerPool>,
    upstream: Arc<UpstreamPool>,
    broker: Arc<Broker>,
    audit: Arc<AuditLog>,
    metrics: Arc<Metrics>,
    ids: AtomicU64,
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    running: AtomicUsize,
    completed: AtomicU64,
    failed: AtomicU64,
}

impl Executor {
    /// An executor; with `warm`, worker pools start filling at once (for `serve`).
    pub fn new(
        settings: Arc<Settings>,
        worker: WorkerConfig,
        upstream: Arc<UpstreamPool>,
        broker: Arc<Broker>,
        recorders: Recorders,
        warm: bool,
    ) -> Self {
        let (ts_size, py_size) = if warm {
            (settings.pool_size_typescript, settings.pool_size_python)
        } else {
            (0, 0)
        };
        Executor {
            typescript: WorkerPool::start(worker.clone(), Language::Typescript, ts_size),
            python: WorkerPool::start(worker.clone(), Language::Python, py_size),
            slots: Arc::new(Semaphore::new(settings.max_concurrent_executions)),
            settings,
            worker,
            upstream,
            broker,
            audit: recorders.audit,
            metrics: recorders.metrics,
            ids: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    pub fn worker_config(&self) -> &WorkerConfig {
        &self.worker
    }

    pub fn upstream(&self) -> &Arc<UpstreamPool> {
        &self.upstream
    }

    pub fn audit(&self) -> &Arc<AuditLog> {
        &self.audit
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn counters(&self) -> ExecutionCounters {
        ExecutionCounters {
            warm_typescript_workers: self.typescript.ready_count(),
            warm_python_workers: self.python.ready_count(),
            pool_size_typescript: self.typescript.size(),
            pool_size_python: self.python.size(),
            running: self.running.load(Ordering::Relaxed),
            queued: self.waiting.load(Ordering::Relaxed),
            max_queued: self.settings.max_queued_executions,
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    /// Runs one execution. Never panics on bad input: every failure becomes a report. Each
    /// execution is audited and counted, whatever its end.
    pub async fn execute(&self, request: ExecutionRequest) -> ExecutionReport {
        let started = Instant::now();
        let execution_id = format!(
            "{}-{}",
            std::process::id(),
            self.ids.fetch_add(1, Ordering::Relaxed) + 1
        );
        let (report, outcome, peak_memory_bytes) =
            self.execute_inner(&request, &execution_id, started).await;
        let counter = if report.success {
            &self.completed
        } else {
            &self.failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let language = request.language.as_str();
        self.metrics.execution(language, outcome, started.elapsed());
        let (calls, refused) = report
            .tool_call_summary
            .iter()
            .fold((0, 0), |(c, r), s| (c + s.calls, r + s.refused));
        self.audit.execution(&ExecutionRecord {
            execution_id: &execution_id,
            session: &request.session,
            language,
            code_sha256: audit::code_digest(&request.code),
            code_bytes: request.code.len(),
            allowed_tools: &request.allowed_tools,
            duration_ms: report.execution_time_ms,
            outcome,
            tool_calls: calls,
            tool_calls_refused: refused,
            peak_memory_bytes,
        });
        report
    }

    async fn execute_inner(
        &self,
        request: &ExecutionRequest,
        execution_id: &str,
        started: Instant,
    ) -> (ExecutionReport, &'static str, Option<u64>) {
        let fail = |error: String| {
            let report = ExecutionReport {
                success: false,
                output: String::new(),
                error: Some(error),
                result: None,
                execution_time_ms: started.elapsed().as_millis() as u64,
                tool_calls_made: vec![],
                tool_call_summary: vec![],
            };
            (report, "refused", None)
        };
        if request.code.len() > self.settings.max_code_bytes {
            return fail(format!(
                "code is {} bytes, over the limit of {} bytes",
                request.code.len(),
                self.settings.max_code_bytes
            ));
        }
        let allowlist = match Allowlist::new(&request.allowed_tools) {
            Ok(list) => list,
            Err(e) => return fail(format!("allowedTools: {e}")),
        };
        let timeout = match request.timeout_ms {
            Some(0) => return fail("timeoutMs must be positive".into()),
            Some(ms) => Duration::from_millis(ms).min(self.settings.max_timeout),
            None => self.settings.default_timeout,
        };
        let _permit = tokio::select! {
            permit = self.admit() => match permit {
                Ok(permit) => permit,
                Err(e) => return fail(e),
            },
            () = request.cancel.cancelled() => {
                return fail("execution cancelled by the client before it started".into());
            }
        };
        self.running.fetch_add(1, Ordering::Relaxed);
        let _running = scopeguard(|| {
            self.running.fetch_sub(1, Ordering::Relaxed);
        });
        let pool = match request.language {
            Language::Typescript => &self.typescript,
            Language::Python => &self.python,
        };
        let worker = match pool.take().await {
            Ok(worker) => worker,
            Err(e) => return fail(format!("could not start a sandbox worker: {e}")),
        };
        let bridge = Arc::new(Bridge {
            upstream: self.upstream.clone(),
            broker: self.broker.clone(),
            audit: self.audit.clone(),
            metrics: self.metrics.clone(),
            session: request.session.clone(),
            execution_id: execution_id.to_string(),
            allowlist,
            quota: CallQuota::new(self.settings.max_tool_calls_per_execution),
            record: Mutex::default(),
        });
        let outcome = worker
            .run(
                &request.code,
                timeout,
                self.settings.output_limit_bytes,
                bridge.clone(),
                request.cancel.clone(),
            )
            .await;
        let (made, summary) = bridge.take_record();
        let report = ExecutionReport {
            success: outcome.success,
            output: outcome.output,
            error: outcome.error,
            result: outcome.value,
            execution_time_ms: started.elapsed().as_millis() as u64,
            tool_calls_made: made,
            tool_call_summary: summary,
        };
        (report, outcome.end.as_str(), outcome.peak_memory_bytes)
    }

    /// Waits for an execution slot, or refuses at once when the queue is full.
    async fn admit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, String> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let queued = self.waiting.fetch_add(1, Ordering::SeqCst);
        let _queued = scopeguard(|| {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        });
        if queued >= self.settings.max_queued_executions {
            return Err(format!(
                "server busy: {} executions running and {} queued; retry shortly",
                self.settings.max_concurrent_executions, queued
            ));
        }
        self.slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| "server is shutting down".to_string())
    }
}

/// Runs a closure when dropped.
fn scopeguard<F: FnOnce()>(f: F) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

impl Readiness for Executor {
    fn readiness(&self) -> Result<Value, String> {
        let counters = self.counters();
        if self.slots.is_closed() {
            return Err("shutting down".into());
        }
        if counters.queued >= counters.max_queued {
            return Err(format!(
                "busy: {} executions queued (the limit)",
                counters.queued
            ));
        }
        serde_json::to_value(&counters)
            .map(|c| serde_json::json!({ "ready": true, "executions": c }))
            .map_err(|e| e.to_string())
    }
}

/// Answers one execution's host calls.
struct Bridge {
    upstream: Arc<UpstreamPool>,
    broker: Arc<Broker>,
    audit: Arc<AuditLog>,
    metrics: Arc<Metrics>,
    session: String,
    execution_id: String,
    allowlist: Allowlist,
    quota: CallQuota,
    record: Mutex<CallRecord>,
}

/// What happened to one tool call, for the audit record.
struct CallAudit<'a> {
    tool: &'a str,
    server: &'a str,
    refusal: Option<&'static str>,
    elapsed: Duration,
    argument_bytes: usize,
    result_bytes: Option<usize>,
    error: Option<&'static str>,
}

#[derive(Default)]
struct CallRecord {
    made: Vec<String>,
    stats: BTreeMap<String, ToolCallStat>,
}

impl Bridge {
    fn note(&self, tool: &str, outcome: Outcome, elapsed: Duration) {
        let mut record = self.record.lock().expect("call record lock");
        if !matches!(outcome, Outcome::Refused) {
            record.made.push(tool.to_string());
        }
        let stat = record
            .stats
            .entry(tool.to_string())
            .or_insert_with(|| ToolCallStat {
                tool: tool.to_string(),
                ..Default::default()
            });
        match outcome {
            Outcome::Ok => stat.calls += 1,
            Outcome::Error => {
                stat.calls += 1;
                stat.errors += 1;
            }
            Outcome::Refused => stat.refused += 1,
        }
        stat.total_ms += elapsed.as_millis() as u64;
    }

    fn take_record(&self) -> (Vec<String>, Vec<ToolCallStat>) {
        let record = std::mem::take(&mut *self.record.lock().expect("call record lock"));
        (record.made, record.stats.into_values().collect())
    }

    /// Records a call in the report, the audit log and the metrics.
    fn finish(&self, call: CallAudit<'_>) {
        let outcome = match (call.refusal, call.error) {
            (Some(_), _) => Outcome::Refused,
            (None, Some(_)) => Outcome::Error,
            (None, None) => Outcome::Ok,
        };
        self.note(call.tool, outcome, call.elapsed);
        match call.refusal {
            Some(reason) => self.metrics.denial(call.server, reason),
            None => self
                .metrics
                .tool_call(call.server, call.error.is_none(), call.elapsed),
        }
        self.audit.tool_call(&ToolCallRecord {
            execution_id: &self.execution_id,
            session: &self.session,
            tool: call.tool,
            decision: if call.refusal.is_some() {
                "refused"
            } else {
                "allowed"
            },
            reason: call.refusal.unwrap_or("allowed"),
            duration_ms: call.elapsed.as_millis() as u64,
            argument_bytes: call.argument_bytes,
            result_bytes: call.result_bytes,
            error: call.error,
        });
    }

    async fn call_tool(&self, target: ToolTarget, args: Value, raw: bool) -> Result<Value, String> {
        let argument_bytes = serde_json::to_vec(&args).map_or(0, |v| v.len());
        let refuse = |tool: &str, server: &str, code: &'static str, message: String| {
            self.finish(CallAudit {
                tool,
                server,
                refusal: Some(code),
                elapsed: Duration::ZERO,
                argument_bytes,
                result_bytes: None,
                error: None,
            });
            Err(message)
        };
        let resolved = match &target {
            ToolTarget::Qualified(name) => self.upstream.resolve(name),
            ToolTarget::Split { server, tool } => self
                .upstream
                .ensure_known(server)
                .map(|()| (server.clone(), tool.clone())),
        };
        let (server, tool) = match resolved {
            Ok(pair) => pair,
            Err(e) => {
                let asked = match &target {
                    ToolTarget::Qualified(name) => name.clone(),
                    ToolTarget::Split { server, tool } => format!("{server}/{tool}"),
                };
                return refuse(&asked, "", "unknown_tool", e.to_string());
            }
        };
        let name = crate::catalog::qualified_name(&server, &tool);
        let refused =
            |refusal: Refusal| refuse(&name, &server, refusal.code(), refusal.to_string());
        let scope = CallScope {
            session: &self.session,
            allowlist: &self.allowlist,
            quota: &self.quota,
        };
        if let Err(refusal) = self.broker.admit(&scope, &name, argument_bytes) {
            return refused(refusal);
        }
        if !args.is_object() {
            return refuse(
                &name,
                &server,
                "arguments_not_object",
                format!("arguments for {name} must be an object"),
            );
        }
        // The live schema: a tool the server does not list is never called.
        let listed = match self.upstream.tools(&server).await {
            Ok(tools) => tools,
            Err(e) => {
                let message = e.to_string();
                self.finish(CallAudit {
                    tool: &name,
                    server: &server,
                    refusal: None,
                    elapsed: Duration::ZERO,
                    argument_bytes,
                    result_bytes: None,
                    error: Some("server_error"),
                });
                return Err(message);
            }
        };
        let Some(spec) = listed.iter().find(|t| t.name == tool) else {
            let error = crate::upstream::UpstreamError::UnknownTool {
                server: server.clone(),
                tool: tool.clone(),
            };
            return refuse(&name, &server, "unknown_tool", error.to_string());
        };
        let expected =
            || crate::catalog::signature(&tool, &spec.input_schema, spec.output_schema.as_deref());
        if let Err(refusal) = self
            .broker
            .validate(&name, &spec.input_schema, &args, expected)
        {
            return refused(refusal);
        }
        if let Err(refusal) = self.broker.rate(&self.session, &server, &name) {
            return refused(refusal);
        }
        let Value::Object(args) = args else {
            unreachable!("checked to be an object above")
        };
        let started = Instant::now();
        let result = self.upstream.call(&server, &tool, args).await;
        let elapsed = started.elapsed();
        let (shaped, result_bytes, error) = match result {
            Ok(result) => {
                let bytes = serde_json::to_vec(&result).map_or(0, |v| v.len());
                match self.broker.check_result(&name, bytes) {
                    Err(refusal) => (Err(refusal.to_string()), Some(bytes), Some("result_size")),
                    Ok(()) => {
                        let shaped = shape_result(&name, result, raw);
                        let error = shaped.is_err().then_some("tool_error");
                        (shaped, Some(bytes), error)
                    }
                }
            }
            Err(e) => {
                let kind = match e {
                    crate::upstream::UpstreamError::Timeout { .. } => "timeout",
                    _ => "server_error",
                };
                (Err(e.to_string()), None, Some(kind))
            }
        };
        self.finish(CallAudit {
            tool: &name,
            server: &server,
            refusal: None,
            elapsed,
            argument_bytes,
            result_bytes,
            error,
        });
        shaped
    }
}

#[derive(Clone, Copy)]
enum Outcome {
    Ok,
    Error,
    Refused,
}

impl HostCalls for Bridge {
    fn handle(self: Arc<Self>, request: HostRequest) -> BoxFuture<'static, Result<Value, String>> {
        let this = self;
        async move {
            match request {
                HostRequest::CallTool { target, args, raw } => {
                    this.call_tool(target, args, raw).await
                }
                HostRequest::SearchTools {
                    query,
                    server,
                    limit,
                    detail,
                } => {
                    let limit = limit.unwrap_or(10).clamp(1, 100);
                    directory::search(&this.upstream, &query, server.as_deref(), limit, detail)
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| serde_json::to_value(r).map_err(|e| e.to_string()))
                }
                HostRequest::GetToolSchema { name } => {
                    directory::tool_schema(&this.upstream, &name)
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| serde_json::to_value(r).map_err(|e| e.to_string()))
                }
                HostRequest::ListServers => {
                    serde_json::to_value(directory::servers(&this.upstream).await)
                        .map_err(|e| e.to_string())
                }
            }
        }
        .boxed()
    }
}

/// A downstream result in the most useful form for code: `structuredContent`; else one text
/// block's JSON (or the text); several text blocks as an array; any non-text block keeps the
/// whole `content` array. `raw` returns the result untouched. Tool errors become `Err`.
pub fn shape_result(name: &str, result: CallToolResult, raw: bool) -> Result<Value, String> {
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
}
