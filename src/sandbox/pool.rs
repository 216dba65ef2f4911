//! Worker processes by client session: the process boundary follows the trust boundary. Each
//! client session (over stdio the one client; over HTTP each authenticated principal) gets a
//! worker process of its own per language, never shared with another session; its executions
//! run on that process's lanes (isolates serving one execution after another: TypeScript each in
//! a fresh context, Python behind a verified reset; see docs/worker-protocol.md). A process is
//! retired (no new executions; killed once its running ones end) after `max_executions`, after
//! `max_age`, after a timeout in it (`host`), when the wrapper modules change, when its session
//! has been idle for [`IDLE_AFTER`], when work keeps running in it while none of its
//! executions does (`stray`), or when it rests holding far more memory than a fresh one
//! (`held`); one that crashed is replaced at once. So that neither a new session nor the
//! successor of a retired process waits for a process to start, one spare process per language
//! is kept started and ready, bound to no session until it is taken: for TypeScript from the
//! start, for Python (a process with a prepared Pyodide holds about 150 MiB) once its first
//! execution has a process, until the language has gone unused for [`IDLE_AFTER`]. A server with
//! one client session ([`Sessions::One`], stdio) keeps a spare only while that session has no
//! process that will go on serving: before its first execution, and once its process nears its
//! retirement (90% of its executions or of its lifetime, or fewer executions left than it runs in
//! [`SUCCESSOR_LEAD`] at its pace), so that its successor is ready in time. A session that needs a
//! process while the spare is starting waits for that spare rather than starting another.
//! Nothing else could take one, and each holds 75 MiB (TypeScript) to 160 MiB (Python). (The
//! retirement itself stays exact: with `worker_process_executions` = 1, a process per execution.)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::held::HeldWatch;
use super::host::{SpawnError, WorkerProcess};
use super::launch::{Lanes, WorkerConfig};
use super::proto::Language;
use super::stage;
use super::stray::StrayWatch;

/// How long a session's process may sit unused before it is retired (a session that comes
/// back gets the spare).
pub(crate) const IDLE_AFTER: Duration = Duration::from_secs(300);

/// With one session, how long before its process's retirement its successor is started, at the
/// pace its executions come (see `successor_due`).
const SUCCESSOR_LEAD: Duration = Duration::from_millis(500);

/// How often retirements for age and idleness are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(5);
/// How often the processes running nothing are looked at for work left running (`stray`).
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// How many client sessions a serving process has: over stdio one (its client), over HTTP any
/// number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sessions {
    One,
    Many,
}

/// When worker processes are replaced, and what they keep ready.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcessPolicy {
    /// Isolates each process keeps prepared; 0 keeps none (and no spare process).
    pub stock: usize,
    /// The most lanes each process holds at once (see [`Lanes::most`]).
    pub max_lanes: usize,
    /// Executions a process runs before it is retired.
    pub max_executions: u64,
    /// How long a process serves before it is retired.
    pub max_age: Duration,
    /// Session processes that may live at once; past it, the one idle the longest is retired.
    pub max_sessions: usize,
    /// Keep a spare from the start, rather than from the language's first execution on.
    pub spare_from_start: bool,
    /// With one session, a spare only while it has no process that will go on serving.
    pub sessions: Sessions,
}

/// The worker processes of one language.
pub(crate) struct ProcessPool {
    config: WorkerConfig,
    language: Language,
    policy: ProcessPolicy,
    spare: Mutex<Option<Arc<WorkerProcess>>>,
    /// Whether a spare's start is under way: a session that needs a process then waits for it,
    /// rather than starting a second one beside it (both would take longer, and one be wasted).
    spare_starting: tokio::sync::watch::Sender<bool>,
    bound: Mutex<HashMap<String, Arc<WorkerProcess>>>,
    /// Held while a session's process is being found or started, so that two executions of
    /// one session arriving together end up in one process.
    binding: tokio::sync::Mutex<()>,
    wanted: Arc<Notify>,
    /// Whether a spare is kept now, and when a session last asked for a process.
    spare_wanted: AtomicBool,
    last_acquired: Mutex<std::time::Instant>,
    stray: StrayWatch,
    held: HeldWatch,
}

impl ProcessPool {
    /// Creates the pool; with `warm`, it keeps a spare process started in the background.
    pub(crate) fn start(
        config: WorkerConfig,
        language: Language,
        policy: ProcessPolicy,
        warm: bool,
    ) -> Arc<Self> {
        let pool = Arc::new(ProcessPool {
            config,
            language,
            policy,
            spare: Mutex::new(None),
            spare_starting: tokio::sync::watch::Sender::new(false),
            bound: Mutex::new(HashMap::new()),
            binding: tokio::sync::Mutex::new(()),
            wanted: Arc::new(Notify::new()),
            spare_wanted: AtomicBool::new(policy.spare_from_start),
            last_acquired: Mutex::new(std::time::Instant::now()),
            stray: StrayWatch::default(),
            held: HeldWatch::default(),
        });
        if warm && policy.stock > 0 {
            tokio::spawn(keep_spare(Arc::downgrade(&pool)));
        }
        tokio::spawn(sweep(Arc::downgrade(&pool)));
        pool
    }

    /// The process that runs `session`'s next execution: its own if it still serves, else the
    /// spare (now bound to it), else one started now.
    pub(crate) async fn acquire(&self, session: &str) -> Result<Arc<WorkerProcess>, SpawnError> {
        *self.last_acquired.lock().expect("last acquired lock") = std::time::Instant::now();
        // A spare asked for by the language's first execution starts once that execution has its
        // process: two processes loading a runtime at once would each take twice as long.
        let first_use = !self.spare_wanted.swap(true, Ordering::Relaxed);
        if let Some(process) = self.serving(session) {
            if first_use || self.successor_due(&process) {
                self.wanted.notify_one();
            }
            return Ok(process);
        }
        let binding = self.binding.lock().await;
        if let Some(process) = self.serving(session) {
            if first_use || self.successor_due(&process) {
                self.wanted.notify_one();
            }
            return Ok(process);
        }
        let spare = self.spare_once_started().await;
        let wrappers = self.current_wrappers();
        let process = match spare.filter(|p| p.is_serving() && p.wrappers() == wrappers.as_deref())
        {
            Some(process) => Ok(process),
            None => self.start_one(true).await,
        };
        let process = match process {
            Ok(process) => process,
            Err(e) => {
                drop(binding);
                self.wanted.notify_one();
                return Err(e);
            }
        };
        let evicted = {
            let mut bound = self.bound.lock().expect("bound lock");
            bound.insert(session.to_string(), process.clone());
            self.over_capacity(&mut bound)
        };
        // Only now: with one session, a spare is wanted only while its session has no process,
        // and `keep_spare` (on another thread) must not look before this one is bound.
        drop(binding);
        self.wanted.notify_one();
        if let Some(evicted) = evicted {
            evicted.retire("too many client sessions: the one idle the longest made room");
        }
        tracing::debug!(
            process = process.id(),
            language = self.language.as_str(),
            session,
            "worker process bound to a client session"
        );
        Ok(process)
    }

    /// The spare, taken; if its start is under way, once it is ready (or failed).
    async fn spare_once_started(&self) -> Option<Arc<WorkerProcess>> {
        let mut starting = self.spare_starting.subscribe();
        // (Fails only when the sender is gone, with the pool.)
        let _ = starting.wait_for(|starting| !*starting).await;
        self.spare.lock().expect("spare lock").take()
    }

    /// `session`'s process, if it may take another execution; one that may not is let go.
    fn serving(&self, session: &str) -> Option<Arc<WorkerProcess>> {
        // Read from the disk before the lock is taken, not while other sessions wait for it.
        let wrappers = self.current_wrappers();
        let mut bound = self.bound.lock().expect("bound lock");
        let process = bound.get(session)?.clone();
        // (One that ran its share of executions retired itself: see `start_one`.)
        if !process.is_gone() && process.wrappers() != wrappers.as_deref() {
            process.retire("the wrapper modules changed");
        }
        if process.is_serving() {
            Some(process)
        } else {
            bound.remove(session);
            None
        }
    }

    /// With one session, whether `process` (its process) nears its retirement, so that a spare
    /// should be started to succeed it: with 10% of its executions or of its lifetime left, or
    /// with fewer executions left than it would run in [`SUCCESSOR_LEAD`] at its pace (a
    /// process takes 0.1 to 0.5 s to start under load: the session's executions would wait).
    fn successor_due(&self, process: &WorkerProcess) -> bool {
        if self.policy.sessions == Sessions::Many {
            return false;
        }
        let (served, _) = process.served_and_running();
        let left = self.policy.max_executions.saturating_sub(served);
        left.saturating_mul(10) <= self.policy.max_executions
            || (left as f64) <= process.pace() * SUCCESSOR_LEAD.as_secs_f64()
            || process.age() >= self.policy.max_age.mul_f32(0.9)
    }

    /// Whether a spare is of use now: from the language's first execution on (or from the
    /// start), and with one session, only while it has no process that will go on serving.
    fn spare_useful(&self) -> bool {
        if !self.spare_wanted.load(Ordering::Relaxed) {
            return false;
        }
        self.policy.sessions == Sessions::Many
            || !self
                .bound
                .lock()
                .expect("bound lock")
                .values()
                .any(|p| p.is_serving() && !self.successor_due(p))
    }

    /// Whether a spare should be started now: it is of use, and with one session, no process is
    /// being started for that session meanwhile (`binding` held: a spare would only race it).
    fn spare_wanted(&self) -> bool {
        self.spare_useful()
            && (self.policy.sessions == Sessions::Many || self.binding.try_lock().is_ok())
    }

    /// The wrapper modules as they are now (compared with what a process was given).
    fn current_wrappers(&self) -> Option<String> {
        stage::fingerprint(self.config.wrappers_dir.as_deref(), self.language)
    }

    /// With more session processes than allowed, the one idle the longest (running nothing).
    fn over_capacity(
        &self,
        bound: &mut HashMap<String, Arc<WorkerProcess>>,
    ) -> Option<Arc<WorkerProcess>> {
        if bound.len() <= self.policy.max_sessions {
            return None;
        }
        let oldest = bound
            .iter()
            .filter(|(_, p)| p.served_and_running().1 == 0)
            .max_by_key(|(_, p)| p.idle_for())
            .map(|(session, _)| session.clone())?;
        bound.remove(&oldest)
    }

    /// Starts a process, for an execution waiting for it (`awaited`) or as the spare, to retire
    /// itself after `max_executions`; a snapshot the runner refuses is dropped (logged loudly)
    /// and the start retried without it, so Python keeps working, only slower to start.
    async fn start_one(&self, awaited: bool) -> Result<Arc<WorkerProcess>, SpawnError> {
        let start = || {
            let lanes = Lanes {
                ready: self.policy.stock,
                most: self.policy.max_lanes,
                awaited,
            };
            WorkerProcess::start(&self.config, self.language, lanes)
        };
        let started = match start().await {
            Err(SpawnError::SnapshotUnusable(reason)) => {
                tracing::error!("discarding the Pyodide snapshot: {reason}");
                self.config.prepared.discard();
                start().await
            }
            other => other,
        }?;
        started.retire_after(self.policy.max_executions);
        Ok(started)
    }

    /// Isolates prepared and waiting, over every process of this language.
    pub(crate) fn ready_isolates(&self) -> usize {
        let spare = self.spare.lock().expect("spare lock");
        let bound = self.bound.lock().expect("bound lock");
        spare
            .iter()
            .chain(bound.values())
            .filter(|p| p.is_serving())
            .map(|p| p.ready_isolates())
            .sum()
    }

    /// Worker processes alive: bound to a session, and spare.
    pub(crate) fn process_counts(&self) -> (usize, usize) {
        let spare = self.spare.lock().expect("spare lock");
        let bound = self.bound.lock().expect("bound lock");
        let alive = |p: &&Arc<WorkerProcess>| !p.is_gone();
        (
            bound.values().filter(alive).count(),
            spare.iter().filter(alive).count(),
        )
    }

    /// Isolates each process keeps prepared.
    pub(crate) fn stock(&self) -> usize {
        self.policy.stock
    }

    /// Retires the session processes in which work kept running while none of their
    /// executions did (`stray`).
    fn retire_stray(&self) {
        let bound = self.serving_bound();
        for process in &bound {
            if let Some(why) = self.stray.look(process, self.policy.stock) {
                tracing::warn!(
                    process = process.id(),
                    language = self.language.as_str(),
                    "worker process retired: {why}"
                );
                process.retire(&why);
            }
        }
        self.stray
            .keep_only(|id| bound.iter().any(|p| p.id() == id && p.is_serving()));
    }

    /// Retires the session processes that rest holding far more memory than a fresh one
    /// (`held`). The spare is looked at too: it is what a fresh process holds.
    fn retire_held(&self) {
        let mut watched = self.serving_bound();
        let spare = self.spare.lock().expect("spare lock").clone();
        watched.extend(spare.iter().filter(|p| p.is_serving()).cloned());
        let mut retired = false;
        for process in &watched {
            let is_spare = spare.as_ref().is_some_and(|s| Arc::ptr_eq(s, process));
            let Some(why) = self.held.look(process, self.policy.stock) else {
                continue;
            };
            if !is_spare {
                tracing::debug!(
                    process = process.id(),
                    language = self.language.as_str(),
                    "worker process retired: {why}"
                );
                process.retire(&why);
                retired = true;
            }
        }
        self.held
            .keep_only(|id| watched.iter().any(|p| p.id() == id && p.is_serving()));
        if retired && self.spare_useful() {
            // With one session: its process was just retired, so its successor is wanted.
            self.wanted.notify_one();
        }
    }

    /// The session processes that still take executions.
    fn serving_bound(&self) -> Vec<Arc<WorkerProcess>> {
        let bound = self.bound.lock().expect("bound lock");
        bound.values().filter(|p| p.is_serving()).cloned().collect()
    }

    /// Retires the processes that served long enough or sat idle.
    fn sweep_once(&self) {
        let mut bound = self.bound.lock().expect("bound lock");
        bound.retain(|_, process| {
            let (_, running) = process.served_and_running();
            if process.age() > self.policy.max_age {
                process.retire("it served its time");
            } else if running == 0 && process.idle_for() > IDLE_AFTER {
                process.retire("its client session was idle");
            }
            process.is_serving()
        });
        drop(bound);
        let unused = self
            .last_acquired
            .lock()
            .expect("last acquired lock")
            .elapsed()
            > IDLE_AFTER;
        if !self.policy.spare_from_start && unused {
            self.spare_wanted.store(false, Ordering::Relaxed);
        }
        let keep = self.spare_useful();
        if keep {
            // (With one session: its process may have come near its retirement, or ended.)
            self.wanted.notify_one();
        }
        let wrappers = self.current_wrappers();
        let mut spare = self.spare.lock().expect("spare lock");
        if spare.as_ref().is_some_and(|p| {
            !keep
                || !p.is_serving()
                || p.age() > self.policy.max_age
                || p.wrappers() != wrappers.as_deref()
        }) {
            if let Some(p) = spare.take() {
                p.retire("the spare served its time, or its language went unused");
            }
            self.wanted.notify_one();
        }
    }
}

/// Keeps one spare process started until the pool is dropped. Start failures back off, so a
/// broken runtime does not spin.
async fn keep_spare(pool: std::sync::Weak<ProcessPool>) {
    // Not before the runtimes are installed (a serving process may be installing them).
    let Some(runtimes) = pool.upgrade().map(|p| p.config.runtimes.clone()) else {
        return;
    };
    if runtimes.wait().await.is_err() {
        return;
    }
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(p) = pool.upgrade() else { return };
        let has_spare = p
            .spare
            .lock()
            .expect("spare lock")
            .as_ref()
            .is_some_and(|s| s.is_serving());
        if has_spare || !p.spare_wanted() {
            // `notify_one` keeps a permit, so a take between here and the await is not lost.
            let wanted = p.wanted.clone();
            drop(p);
            wanted.notified().await;
            continue;
        }
        let started = std::time::Instant::now();
        p.spare_starting.send_replace(true);
        let outcome = p.start_one(false).await;
        if let Ok(process) = &outcome {
            *p.spare.lock().expect("spare lock") = Some(process.clone());
        }
        p.spare_starting.send_replace(false);
        match outcome {
            Ok(_) => {
                tracing::debug!(
                    language = p.language.as_str(),
                    us = started.elapsed().as_micros() as u64,
                    "spare worker process ready"
                );
                backoff = Duration::from_millis(100);
            }
            Err(e) => {
                tracing::warn!(
                    language = p.language.as_str(),
                    "cannot start a spare worker process: {e}"
                );
                drop(p);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// Looks for work left running every [`LOOK_EVERY`], and for the other retirements every
/// [`SWEEP_EVERY`], until the pool is dropped.
async fn sweep(pool: std::sync::Weak<ProcessPool>) {
    let every = (SWEEP_EVERY.as_millis() / LOOK_EVERY.as_millis()).max(1);
    let mut looks: u128 = 0;
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        let Some(p) = pool.upgrade() else { return };
        p.retire_stray();
        p.retire_held();
        looks += 1;
        if looks.is_multiple_of(every) {
            p.sweep_once();
        }
    }
}
