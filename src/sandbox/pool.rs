//! Warm workers: a small stock of started, ready, never-used workers per language, refilled in
//! the background, so an execution does not wait for a process to start. Each worker still runs
//! exactly one execution; the pool only moves the start-up cost off the request path.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::host::{SpawnError, Worker, WorkerConfig};
use super::proto::Language;

/// A stock of ready workers for one language.
pub struct WorkerPool {
    config: WorkerConfig,
    language: Language,
    size: usize,
    ready: Mutex<VecDeque<Worker>>,
    wanted: Arc<Notify>,
}

impl WorkerPool {
    /// Creates the pool and starts filling it in the background. `size` 0 disables pooling.
    pub fn start(config: WorkerConfig, language: Language, size: usize) -> Arc<Self> {
        let pool = Arc::new(WorkerPool {
            config,
            language,
            size,
            ready: Mutex::new(VecDeque::new()),
            wanted: Arc::new(Notify::new()),
        });
        if size > 0 {
            let weak = Arc::downgrade(&pool);
            tokio::spawn(async move { refill(weak).await });
        }
        pool
    }

    /// A ready worker: from the stock if one is alive, else started now.
    pub async fn take(&self) -> Result<Worker, SpawnError> {
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
        self.wanted.notify_one();
        match pooled {
            Some(worker) => Ok(worker),
            None => Worker::start(&self.config, self.language).await,
        }
    }

    /// Workers currently waiting in the stock.
    pub fn ready_count(&self) -> usize {
        self.ready.lock().expect("pool lock").len()
    }

    pub fn size(&self) -> usize {
        self.size
    }
}

/// Keeps the stock full until the pool is dropped. Start failures back off, so a broken
/// runtime does not spin.
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
        match Worker::start(&p.config, p.language).await {
            Ok(worker) => {
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
