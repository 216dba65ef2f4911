//! `health`: its schema and its reply (runtimes, downstream servers, execution counters, recent
//! errors, whether auditing is on).

use rmcp::model::{CallToolResult, Tool};
use serde_json::json;

use super::{Front, NoArgs, object, structured};
use crate::catalog::directory;
use crate::ops::metrics::RECENT_WINDOW;

pub(super) const HEALTH: &str = "health";

pub(super) fn tool() -> Tool {
    Tool::new(HEALTH, "Server health.", object(json!({"type": "object"})))
        .with_raw_output_schema(object(json!({"type": "object"})))
}

pub(super) async fn report(front: &Front, _: NoArgs) -> Result<CallToolResult, String> {
    let servers = directory::servers(&front.upstream).await;
    let failed = servers.iter().filter(|s| s.state == "failed").count();
    let status = if front.runtime.deno.is_none() || failed > 0 {
        "degraded"
    } else {
        "ok"
    };
    let counters = front.executor.counters();
    let recent_errors = front.metrics.recent_errors();
    let text = format!(
        "{status}: {} servers ({failed} failed), deno {}, {} running, {} queued, warm workers ts {}/{} py {}/{}, {} errors in the last {} s",
        servers.len(),
        front.runtime.deno.as_deref().unwrap_or("missing"),
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
        "version": env!("CARGO_PKG_VERSION"),
        "uptimeMs": front.started.elapsed().as_millis() as u64,
        "runtime": &*front.runtime,
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
        "audit": front.audit,
    });
    structured(&health, text)
}
