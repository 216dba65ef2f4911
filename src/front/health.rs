//! `health`: its schema and its reply (which instance answers, runtimes, downstream servers,
//! execution counters, recent errors, whether auditing is on).

use rmcp::model::{CallToolResult, Tool};
use serde_json::json;

use std::time::Instant;

use super::reply::{object, structured};
use crate::catalog::directory;
use crate::executor::Executor;
use crate::ops::metrics::{Metrics, RECENT_WINDOW};
use crate::upstream::UpstreamPool;

pub(super) const HEALTH: &str = "health";

/// Versions of the sandbox runtimes, for `health`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RuntimeInfo {
    pub deno: Option<String>,
    pub pyodide: Option<String>,
    /// What the kernel's Landlock confines in workers (see `sandbox::fs_rules`).
    pub landlock: String,
    /// The container's memory limit and the per-worker limit fitted under it (serving only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::config::memory_fit::MemoryPlan>,
}

/// What the report is made of.
pub(super) struct Sources<'a> {
    pub executor: &'a Executor,
    pub upstream: &'a UpstreamPool,
    pub metrics: &'a Metrics,
    /// Whether executions and tool calls are audited.
    pub audit: bool,
    pub runtime: &'a RuntimeInfo,
    /// When the server started.
    pub started: Instant,
}

/// A report of this process's own state: read-only, idempotent, closed-world.
pub(super) fn tool() -> Tool {
    use rmcp::model::ToolAnnotations;

    Tool::new(HEALTH, "Server health.", object(json!({"type": "object"})))
        .with_raw_output_schema(object(json!({"type": "object"})))
        .annotate(
            ToolAnnotations::new()
                .read_only(true)
                .idempotent(true)
                .open_world(false),
        )
}

/// Which instance answers, when several replicas serve behind one address: the host name (a
/// container's or pod's name; nothing secret), or empty where the kernel does not tell it.
fn instance() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

pub(super) async fn report(sources: Sources<'_>) -> Result<CallToolResult, String> {
    let servers = directory::servers(sources.upstream).await;
    let failed = servers.iter().filter(|s| s.state == "failed").count();
    let status = if sources.runtime.deno.is_none() || failed > 0 {
        "degraded"
    } else {
        "ok"
    };
    let counters = sources.executor.counters();
    let recent_errors = sources.metrics.recent_errors();
    let text = format!(
        "{status}: {} servers ({failed} failed), deno {}, {} running, {} queued, warm workers ts {}/{} py {}/{}, {} errors in the last {} s",
        servers.len(),
        sources.runtime.deno.as_deref().unwrap_or("missing"),
        counters.running,
        counters.queued,
        counters.warm_typescript_workers,
        counters.pool_size_typescript,
        counters.warm_python_workers,
        counters.pool_size_python,
        recent_errors.values().sum::<u64>(),
        RECENT_WINDOW.as_secs(),
    );
    let health = json!({
        "status": status,
        "instance": instance(),
        "version": env!("CARGO_PKG_VERSION"),
        "uptimeMs": sources.started.elapsed().as_millis() as u64,
        "runtime": sources.runtime,
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
            "windowSeconds": RECENT_WINDOW.as_secs(),
            "counts": recent_errors,
        },
        "audit": sources.audit,
    });
    structured(&health, text)
}
