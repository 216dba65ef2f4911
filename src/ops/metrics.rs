//! What operators can see while the server runs: Prometheus metrics (executions, tool calls,
//! denials, latencies), the recent error counts `health` reports, and the operations endpoint
//! (`/livez`, `/readyz`, `/metrics`) served on its own address (`/metrics` needs the HTTP token
//! when one is configured). Records nothing about content.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::config::settings::Secret;
use crate::front::guard::{self, Guard, Limits};

/// How far back `health` counts errors.
pub(crate) const RECENT_WINDOW: Duration = Duration::from_secs(300);
/// Most error events remembered for the window.
const RECENT_CAP: usize = 4096;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutionLabels {
    language: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LanguageLabels {
    language: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolCallLabels {
    server: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DenialLabels {
    reason: &'static str,
}

fn latency_histogram() -> Histogram {
    // 1 ms .. ~65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The server's metrics and recent errors. Shared by the executor (which records) and the
/// operations endpoint and `health` (which read).
pub struct Metrics {
    registry: Registry,
    executions: Family<ExecutionLabels, Counter>,
    execution_seconds: Family<LanguageLabels, Histogram, fn() -> Histogram>,
    tool_calls: Family<ToolCallLabels, Counter>,
    tool_call_seconds: Family<ServerLabels, Histogram, fn() -> Histogram>,
    denials: Family<DenialLabels, Counter>,
    /// Executions running now, and waiting for a slot now: what an autoscaler follows
    /// (deploy/components/queued-executions).
    running: Gauge,
    queued: Gauge,
    recent_errors: Mutex<VecDeque<(Instant, &'static str)>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("code_executor");
        let executions = Family::<ExecutionLabels, Counter>::default();
        let execution_seconds =
            Family::<LanguageLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        let tool_calls = Family::<ToolCallLabels, Counter>::default();
        let tool_call_seconds =
            Family::<ServerLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        let denials = Family::<DenialLabels, Counter>::default();
        registry.register(
            "executions",
            "Executions by language and outcome",
            executions.clone(),
        );
        registry.register(
            "execution_duration_seconds",
            "Wall time of executions, queueing included",
            execution_seconds.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool calls from sandboxed code by server and outcome (ok, error, refused)",
            tool_calls.clone(),
        );
        registry.register(
            "tool_call_duration_seconds",
            "Latency of tool calls sent downstream",
            tool_call_seconds.clone(),
        );
        registry.register(
            "tool_call_denials",
            "Tool calls refused by the broker, by reason",
            denials.clone(),
        );
        let (running, queued) = (Gauge::default(), Gauge::default());
        registry.register(
            "executions_running",
            "Executions running now",
            running.clone(),
        );
        registry.register(
            "executions_queued",
            "Executions waiting for a slot now (max_concurrent_executions are running)",
            queued.clone(),
        );
        Metrics {
            registry,
            running,
            queued,
            executions,
            execution_seconds,
            tool_calls,
            tool_call_seconds,
            denials,
            recent_errors: Mutex::new(VecDeque::new()),
        }
    }

    /// The gauges of the executions running now and waiting for a slot now: the executor
    /// counts with them directly (one count, read by `health` and by `/metrics`).
    pub(crate) fn execution_gauges(&self) -> (Gauge, Gauge) {
        (self.running.clone(), self.queued.clone())
    }

    /// Records an ended execution; `outcome` is an `EndKind` name or `refused`.
    pub(crate) fn execution(
        &self,
        language: &'static str,
        outcome: &'static str,
        elapsed: Duration,
    ) {
        self.executions
            .get_or_create(&ExecutionLabels { language, outcome })
            .inc();
        self.execution_seconds
            .get_or_create(&LanguageLabels { language })
            .observe(elapsed.as_secs_f64());
        if outcome != "ok" {
            self.recent_error(outcome);
        }
    }

    /// Records a tool call that was sent downstream.
    pub(crate) fn tool_call(&self, server: &str, ok: bool, elapsed: Duration) {
        let outcome = if ok { "ok" } else { "error" };
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                server: server.to_string(),
                outcome,
            })
            .inc();
        self.tool_call_seconds
            .get_or_create(&ServerLabels {
                server: server.to_string(),
            })
            .observe(elapsed.as_secs_f64());
        if !ok {
            self.recent_error("tool_error");
        }
    }

    /// Records a call the broker refused; `server` is empty when the name did not resolve.
    pub(crate) fn denial(&self, server: &str, reason: &'static str) {
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                server: server.to_string(),
                outcome: "refused",
            })
            .inc();
        self.denials.get_or_create(&DenialLabels { reason }).inc();
        self.recent_error("tool_call_refused");
    }

    fn recent_error(&self, kind: &'static str) {
        let mut recent = self.recent_errors.lock().expect("recent errors lock");
        if recent.len() == RECENT_CAP {
            recent.pop_front();
        }
        recent.push_back((Instant::now(), kind));
    }

    /// Errors of the last [`RECENT_WINDOW`], counted by kind.
    pub(crate) fn recent_errors(&self) -> BTreeMap<&'static str, u64> {
        let mut recent = self.recent_errors.lock().expect("recent errors lock");
        while recent
            .front()
            .is_some_and(|(at, _)| at.elapsed() > RECENT_WINDOW)
        {
            recent.pop_front();
        }
        let mut counts = BTreeMap::new();
        for (_, kind) in recent.iter() {
            *counts.entry(*kind).or_default() += 1;
        }
        counts
    }

    /// The Prometheus text exposition.
    pub(crate) fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// What the operations endpoint asks of the server.
pub trait Readiness: Send + Sync + 'static {
    /// `Ok` with a JSON summary when the server can take executions, `Err` with the reason.
    fn readiness(&self) -> Result<serde_json::Value, String>;
}

struct OpsState {
    metrics: Arc<Metrics>,
    ready: Arc<dyn Readiness>,
}

/// Paths of the operations endpoint that need no token: the probes.
const OPEN_PATHS: &[&str] = &["/livez", "/readyz"];

/// Serves `/livez`, `/readyz` and `/metrics` at `addr` until `shutdown`, behind the same
/// connection guard as the MCP endpoint (its own limits). With a `token`, `/metrics` requires it
/// (`Authorization: Bearer`, as Prometheus sends it); the probes never do.
pub async fn serve_ops(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: Arc<dyn Readiness>,
    token: Option<Secret>,
    shutdown: CancellationToken,
    bound: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    let state = Arc::new(OpsState { metrics, ready });
    let router = axum::Router::new()
        .route("/livez", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    bound(listener.local_addr()?);
    let guard = Guard::new(token.as_ref(), OPEN_PATHS, Limits::OPS);
    guard::serve(listener, router, guard, shutdown).await
}

async fn readyz(State(state): State<Arc<OpsState>>) -> impl IntoResponse {
    match state.ready.readiness() {
        Ok(summary) => (StatusCode::OK, axum::Json(summary)),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({ "ready": false, "reason": reason })),
        ),
    }
}

async fn metrics_text(State(state): State<Arc<OpsState>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.encode(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_render_and_errors_are_counted() {
        let m = Metrics::new();
        m.execution("typescript", "ok", Duration::from_millis(3));
        m.execution("python", "timeout", Duration::from_secs(2));
        m.tool_call("git", true, Duration::from_millis(4));
        m.denial("git", "schema");
        let (running, queued) = m.execution_gauges();
        running.inc_by(2);
        queued.inc_by(3);
        queued.dec();
        let text = m.encode();
        for needle in [
            "code_executor_executions_running 2",
            "code_executor_executions_queued 2",
            r#"code_executor_executions_total{language="python",outcome="timeout"} 1"#,
            r#"code_executor_tool_calls_total{server="git",outcome="refused"} 1"#,
            r#"code_executor_tool_call_denials_total{reason="schema"} 1"#,
            "code_executor_execution_duration_seconds_bucket",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        let recent = m.recent_errors();
        assert_eq!(recent.get("timeout"), Some(&1));
        assert_eq!(recent.get("tool_call_refused"), Some(&1));
        assert_eq!(recent.get("ok"), None);
    }
}
