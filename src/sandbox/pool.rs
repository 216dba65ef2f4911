//! Warm workers: a small stock of started, ready, never-used workers per language, refilled in
//! the background, so an execution does not wait for a process to start. Each worker still runs
//! exactly one execution; the pool only moves the start-up cost off the request path.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::host::{SpawnError, Worker};
use super::launch::WorkerConfig;
use super::pause::Starting;
use super::proto::Language;

/// A stock of ready workers for one language.
pub(crate) struct WorkerPool {
    config: WorkerConfig,
    language: Language,
    size: usize,
    ready: Mutex<VecDeque<Worker>>,
    wanted: Arc<Notify>,
    starting: Starting,
}

impl WorkerPool {
    /// Creates the pool and starts filling it in the background. `size` 0 disables pooling.
    pub(crate) fn start(config: WorkerConfig, language: Language, size: usize) -> Arc<Self> {
        let pool = Arc::new(WorkerPool {
            config,
            language,
            size,
            ready: Mutex::new(VecDeque::new()),
            wanted: Arc::new(Notify::new()),
            starting: Starting::default(),
        });
        if size > 0 {
            let weak = Arc::downgrade(&pool);
            tokio::spawn(async move { refill(weak).await });
        }
        pool
    }

    /// A ready worker: from the stock if one is alive, else started now.
    ///
    /// Starting a Deno process (let alone Pyodide) takes far more CPU than a short execution,
    /// and on a small machine it would slow down the very execution it is meant to serve. So
    /// when the worker comes from the stock, its replacement is started once it has finished
    /// (killed and reaped), and a stock worker still starting is paused meanwhile; both wait
    /// at most [`REFILL_DELAY`]. When the stock is empty (more demand than stock), nothing is
    /// held back: the refill goes on, in parallel with the worker started here.
    pub(crate) async fn take(&self) -> Result<Worker, SpawnError> {
        let taken = std::time::Instant::now();
        let pooled = loop {
            let next = self.ready.lock().expect("pool lock").pop_front();
            match next {
                Some(mut worker) => {
                    if worker.is_alive() {
                        break Some(worker);
                    }
                    // Died while waiting (e.g. killed from outside): drop it, try the next.
                }
                None => break None,
            }
        };
        let from_stock = pooled.is_some();
        let mut worker = match pooled {
            Some(worker) => worker,
            None => {
                self.wanted.notify_one();
                self.start_one(false).await?
            }
        };
        tracing::debug!(
            language = self.language.as_str(),
            from_stock,
            us = taken.elapsed().as_micros() as u64,
            "pool: worker taken"
        );
        if from_stock && self.size > 0 {
            let paused = self.starting.pause();
            let retired = worker.retirement();
            let wanted = self.wanted.clone();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REFILL_DELAY, retired).await;
                drop(paused);
                wanted.notify_one();
            });
        }
        Ok(worker)
    }

    /// Starts a worker, warmed up for the stock (`pooled`) or for an execution waiting for it;
    /// a snapshot the runner refuses is dropped (logged loudly) and the start retried without
    /// it, so Python keeps working, only slower to start.
    async fn start_one(&self, pooled: bool) -> Result<Worker, SpawnError> {
        let start = || async {
            if pooled {
                Worker::start_pooled(&self.config, self.language, &self.starting).await
            } else {
                Worker::start_on_demand(&self.config, self.language).await
            }
        };
        match start().await {
            Err(SpawnError::SnapshotUnusable(reason)) => {
                tracing::error!("discarding the Pyodide snapshot: {reason}");
                self.config.prepared.discard();
                start().await
            }
            other => other,
        }
    }

    /// Workers currently waiting in the stock.
    pub(crate) fn ready_count(&self) -> usize {
        self.ready.lock().expect("pool lock").len()
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

/// How long a taken worker may run before its replacement is started anyway.
const REFILL_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

/// Memory the machine must still have available before another idle worker is started.
const MIN_AVAILABLE_BYTES: u64 = 512 * 1024 * 1024;

/// `MemAvailable` from /proc/meminfo, if readable.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Keeps the stock full until the pool is dropped, as long as the machine has memory to spare
/// (idle workers are a convenience, never worth memory pressure). Start failures back off, so
/// a broken runtime does not spin.
async fn refill(pool: std::sync::Weak<WorkerPool>) {
    let mut backoff = std::time::Duration::from_millis(100);
    loop {
        let Some(p) = pool.upgrade() else { return };
        if p.ready_count() >= p.size {
            // `notify_one` keeps a permit, so a take between here and the await is not lost.
            let wanted = p.wanted.clone();
            drop(p);
            wanted.notified().await;
            continue;
        }
        if available_memory().is_some_and(|bytes| bytes < MIN_AVAILABLE_BYTES) {
            drop(p);
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            continue;
        }
        let started = std::time::Instant::now();
        match p.start_one(true).await {
            Ok(worker) => {
                tracing::debug!(
                    language = p.language.as_str(),
                    us = started.elapsed().as_micros() as u64,
                    "pool: worker started and ready"
                );
                p.ready.lock().expect("pool lock").push_back(worker);
                backoff = std::time::Duration::from_millis(100);
            }
            Err(e) => {
                tracing::warn!(
                    language = p.language.as_str(),
                    "cannot pre-start a worker: {e}"
                );
                drop(p);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(std::time::Duration::from_secs(30));
            }
        }
    }
}
