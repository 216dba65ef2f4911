//! One execution from request to report: admission (concurrency limit and queue), a fresh
//! worker, the bridge that answers the worker's host calls through the broker and the upstream
//! pool, and the bookkeeping of tool calls. Talks to `sandbox` for processes, `broker` for
//! decisions, `upstream` and `directory` for downstream servers.

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

use crate::broker::{Allowlist, CallQuota};
use crate::config::settings::Settings;
use crate::directory;
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
    pub running: usize,
    pub queued: usize,
    pub completed: u64,
    pub failed: u64,
}

pub struct Executor {
    settings: Arc<Settings>,
    worker: WorkerConfig,
    typescript: Arc<WorkerPool>,
    python: Arc<WorkerPool>,
    upstream: Arc<UpstreamPool>,
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

    pub fn counters(&self) -> ExecutionCounters {
        ExecutionCounters {
            warm_typescript_workers: self.typescript.ready_count(),
            warm_python_workers: self.python.ready_count(),
            running: self.running.load(Ordering::Relaxed),
            queued: self.waiting.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    /// Runs one execution. Never panics on bad input: every failure becomes a report.
    pub async fn execute(&self, request: ExecutionRequest) -> ExecutionReport {
        let started = Instant::now();
        let report = self.execute_inner(request, started).await;
        let counter = if report.success {
            &self.completed
        } else {
            &self.failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
        report
    }

    async fn execute_inner(&self, request: ExecutionRequest, started: Instant) -> ExecutionReport {
        let fail = |error: String| ExecutionReport {
            success: false,
            output: String::new(),
            error: Some(error),
            result: None,
            execution_time_ms: started.elapsed().as_millis() as u64,
            tool_calls_made: vec![],
            tool_call_summary: vec![],
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
            Err(e) => return fail(e.to_string()),
        };
        let timeout = match request.timeout_ms {
            Some(0) => return fail("timeoutMs must be positive".into()),
            Some(ms) => Duration::from_millis(ms).min(self.settings.max_timeout),
            None => self.settings.default_timeout,
        };
        let _permit = match self.admit().await {
            Ok(permit) => permit,
            Err(e) => return fail(e),
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
            )
            .await;
        let (made, summary) = bridge.take_record();
        ExecutionReport {
            success: outcome.success,
            output: outcome.output,
            error: outcome.error,
            result: outcome.value,
            execution_time_ms: started.elapsed().as_millis() as u64,
            tool_calls_made: made,
            tool_call_summary: summary,
        }
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

/// Answers one execution's host calls.
struct Bridge {
    upstream: Arc<UpstreamPool>,
    allowlist: Allowlist,
    quota: CallQuota,
    record: Mutex<CallRecord>,
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

    async fn call_tool(&self, target: ToolTarget, args: Value, raw: bool) -> Result<Value, String> {
        let (server, tool) = match target {
            ToolTarget::Qualified(name) => {
                self.upstream.resolve(&name).map_err(|e| e.to_string())?
            }
            ToolTarget::Split { server, tool } => {
                self.upstream
                    .ensure_known(&server)
                    .map_err(|e| e.to_string())?;
                (server, tool)
            }
        };
        let name = crate::catalog::qualified_name(&server, &tool);
        if let Err(refusal) = self.allowlist.check(&name).and_then(|()| self.quota.take()) {
            self.note(&name, Outcome::Refused, Duration::ZERO);
            return Err(refusal.to_string());
        }
        let Value::Object(args) = args else {
            self.note(&name, Outcome::Refused, Duration::ZERO);
            return Err(format!("arguments for {name} must be an object"));
        };
        let started = Instant::now();
        let result = self.upstream.call(&server, &tool, args).await;
        let shaped = match result {
            Ok(result) => shape_result(&name, result, raw),
            Err(e) => Err(e.to_string()),
        };
        let outcome = if shaped.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        };
        self.note(&name, outcome, started.elapsed());
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
                } => {
                    let limit = limit.unwrap_or(10).clamp(1, 100);
                    directory::search(&this.upstream, &query, server.as_deref(), limit)
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
