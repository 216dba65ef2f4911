//! Worker processes: spawning a jailed Deno worker process (the command comes from `launch`),
//! the private socket between the host and its supervisor, running executions in it (each on a
//! lane of its own, many at once), enforcing each execution's deadline and output cap,
//! and killing the process.
//!
//! A worker process serves one client session (the pool sees to that) and is treated as
//! hostile: every envelope and line it sends is parsed strictly, output is capped here (not
//! only inside the isolate), and its stderr is read only for diagnostics. An execution whose
//! isolate misbehaves ends alone; a process that breaks the protocol or dies takes the
//! executions running in it along (all of one session), each told why. Host calls (tool calls
//! and catalogue look-ups) are answered by a `HostCalls` implementation supplied by the
//! executor; this module knows nothing of MCP.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::OwnedReadHalf;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

use super::data_limits::{DataLimits, status_bytes};
use super::jail;
use super::launch::{Lanes, Purpose, WorkerConfig};
use super::outcome::{
    EndKind, Ending, OutputBuffer, RunOutcome, describe_user_error, diagnose_exit, within_deadline,
};
use super::proto::{self, EndReason, HostRequest, Language, ProcessMessage, WorkerMessage};
use super::{runner, stage, typescript};
use crate::text::prefix;

/// How many answered host calls of one execution may wait for the process to read them (in the
/// writer's queue, and as many again in the execution's) before the host stops collecting more
/// answers; it keeps reading the execution's lines meanwhile.
const REPLY_QUEUE: usize = 64;

/// How many lines of one execution may wait for it to take them before the process's reader
/// waits too (the execution takes them as fast as it can: output is appended, calls started).
const ROUTE_QUEUE: usize = 16;

/// How much of a worker process's stderr is kept for diagnostics.
const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// How long the supervisor may take to confirm it ended an isolate, after a deadline or a
/// cancellation, before the whole process is killed instead.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Answers the requests sandboxed code makes. Implemented by the executor.
pub(crate) trait HostCalls: Send + Sync + 'static {
    fn handle(
        self: Arc<Self>,
        request: HostRequest,
    ) -> futures::future::BoxFuture<'static, Result<Value, String>>;

    /// Time the execution has spent waiting for answers from outside (a user deciding, a
    /// client's LLM), which its deadline does not count.
    fn paused(&self) -> Duration {
        Duration::ZERO
    }
}

/// How long a worker process may take to connect and announce `ready` (a Python process
/// without a snapshot loads and compiles the whole standard library first).
fn ready_timeout(language: Language) -> Duration {
    match language {
        Language::Typescript => Duration::from_secs(30),
        Language::Python => Duration::from_secs(120),
    }
}

/// Why a worker process could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot create the worker's working directory: {0}")]
    WorkDir(std::io::Error),
    #[error("cannot start the Deno worker {path}: {source}")]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the worker did not become ready: {0}")]
    NotReady(String),
    #[error("the Pyodide snapshot cannot be loaded: {0}")]
    SnapshotUnusable(String),
}

/// What the process's reader hands one execution.
enum Routed {
    /// A line of the execution's isolate.
    Line(String),
    /// The supervisor ended the isolate before it reported `done`.
    Ended(EndReason, Option<String>),
    /// The process is gone (died, killed, or broke the protocol); why is in its `Life`.
    Gone,
}

/// Counters of a process's life, under one lock.
#[derive(Debug, Default)]
struct Life {
    /// Executions running now.
    running: usize,
    /// Executions started in it so far.
    served: u64,
    /// Why it takes no new execution (it is killed once the running ones end).
    retiring: Option<String>,
    /// Why it is gone, once it is.
    gone: Option<String>,
    /// How fast executions have been starting in it lately.
    pace: Pace,
    /// The executions it may run: it retires itself as the last of them starts.
    share: Option<u64>,
}

/// The pace at which executions start in a process: measured over windows of at least
/// [`Pace::WINDOW`], and taken as none once a window passed without any.
#[derive(Debug, Default)]
struct Pace {
    /// When the current window began, and the executions served by then.
    window: Option<(Instant, u64)>,
    per_second: f64,
}

impl Pace {
    const WINDOW: Duration = Duration::from_millis(250);

    fn record(&mut self, served: u64, now: Instant) {
        match self.window {
            Some((began, then)) if now.duration_since(began) >= Self::WINDOW => {
                let elapsed = now.duration_since(began);
                self.per_second = if elapsed > Self::WINDOW * 4 {
                    0.0
                } else {
                    (served - then) as f64 / elapsed.as_secs_f64()
                };
                self.window = Some((now, served));
            }
            Some(_) => {}
            None => self.window = Some((now, served)),
        }
    }

    fn per_second(&self, now: Instant) -> f64 {
        match self.window {
            Some((began, _)) if now.duration_since(began) <= Self::WINDOW * 4 => self.per_second,
            _ => 0.0,
        }
    }
}

static NEXT_PROCESS: AtomicU64 = AtomicU64::new(1);

/// A started worker process that has announced `ready`: it runs executions until it is
/// retired or killed.
pub struct WorkerProcess {
    id: u64,
    language: Language,
    /// Its process id, which is also its process group's.
    pid: Option<u32>,
    outbox: mpsc::Sender<String>,
    routes: Mutex<HashMap<u64, mpsc::Sender<Routed>>>,
    life: Mutex<Life>,
    ready_isolates: AtomicUsize,
    started: Instant,
    last_used: Mutex<Instant>,
    /// Its resident memory when it said `ready` (see `held`).
    resident_at_ready: Option<u64>,
    /// The wrapper modules it was given (see [`stage::fingerprint`]).
    wrappers: Option<String>,
    // Removed (with anything in it) when the process is dropped.
    _workdir: tempfile::TempDir,
}

impl WorkerProcess {
    /// Starts a jailed worker process for `language` with `lanes`, and waits until it is ready
    /// to serve.
    pub async fn start(
        config: &WorkerConfig,
        language: Language,
        lanes: Lanes,
    ) -> Result<Arc<WorkerProcess>, SpawnError> {
        let workdir = tempfile::Builder::new()
            .prefix("code-executor-worker-")
            .tempdir()
            .map_err(SpawnError::WorkDir)?;
        // `cwd` holds only the wrapper modules; `deno` is the process's private `DENO_DIR`,
        // which it may only read (Deno writes no cache there: see `launch`).
        let cwd = workdir.path().join("cwd");
        let deno_dir = workdir.path().join("deno");
        for dir in [&cwd, &deno_dir] {
            std::fs::create_dir(dir).map_err(SpawnError::WorkDir)?;
        }
        let socket = workdir.path().join("host.sock");
        if !socket_path_fits(&socket) {
            return Err(SpawnError::WorkDir(std::io::Error::other(format!(
                "the socket path {} is too long (set TMPDIR to a shorter directory)",
                socket.display()
            ))));
        }
        let listener = tokio::net::UnixListener::bind(&socket).map_err(SpawnError::WorkDir)?;
        let prepared = config.prepared.get();
        let wrappers = stage::wrappers(config.wrappers_dir.as_deref(), language, &cwd);
        let purpose = Purpose::Process {
            language,
            socket: &socket,
            lanes,
            snapshot: prepared.as_ref().map(|p| p.snapshot.as_path()),
            wrappers: wrappers.as_deref(),
        };
        let spawn_error = |source| SpawnError::Spawn {
            path: config.deno.clone(),
            source,
        };
        let mut cmd = config
            .deno_command(purpose, &deno_dir, &cwd)
            .map_err(spawn_error)?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(spawn_error)?;
        let pid = child.id();
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let stderr = tokio::spawn(read_tail(child.stderr.take().expect("stderr is piped")));
        let source = tokio::spawn(async move {
            // The isolate runner, then end of input (see the supervisor's opening comment).
            let _ = stdin.write_all(runner::ISOLATE_SOURCE.as_bytes()).await;
        });
        let mut starting = Starting {
            child: Some(child),
            stderr: Some(stderr),
            heap_limit_mb: config.heap_limit_mb,
            max_file_bytes: config.jail.max_file_bytes,
        };
        let wait = ready_timeout(language);
        let exited = async {
            match starting.child.as_mut() {
                Some(child) => {
                    let _ = child.wait().await;
                }
                None => std::future::pending().await,
            }
        };
        let accepted = tokio::select! {
            accepted = tokio::time::timeout(wait, listener.accept()) => Some(accepted),
            // A process that gives up before it connects (an unusable snapshot) is not waited for.
            () = exited => None,
        };
        let stream = match accepted {
            Some(Ok(Ok((stream, _)))) => stream,
            Some(Ok(Err(e))) => return Err(SpawnError::NotReady(e.to_string())),
            Some(Err(_)) => {
                return Err(starting
                    .failed(&format!("no connection within {} s", wait.as_secs()))
                    .await);
            }
            None => return Err(starting.failed("").await),
        };
        drop(listener);
        let _ = std::fs::remove_file(&socket);
        source.abort();
        check_peer(&stream, pid)?;
        let (reader, mut writer) = stream.into_split();
        let (outbox, mut queued) = mpsc::channel::<String>(REPLY_QUEUE);
        tokio::spawn(async move {
            while let Some(line) = queued.recv().await {
                if writer.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let mut lines = FramedRead::new(
            reader,
            LinesCodec::new_with_max_length(proto::MAX_PROCESS_LINE),
        );
        let mut ready_isolates = 0;
        let limits = DataLimits::new(pid, config.jail);
        let first = tokio::time::timeout(wait, async {
            loop {
                match lines.next().await {
                    Some(Ok(line)) => match proto::parse_process_line(&line) {
                        Ok(ProcessMessage::Ready) => return Ok(()),
                        Ok(ProcessMessage::Stock { ready }) => ready_isolates = ready,
                        Ok(ProcessMessage::Isolates { count }) => {
                            if outbox.send(limits.fit(count)?).await.is_err() {
                                return Err(String::new());
                            }
                        }
                        Ok(other) => return Err(format!("unexpected first message: {other:?}")),
                        Err(e) => return Err(e.to_string()),
                    },
                    Some(Err(e)) => return Err(e.to_string()),
                    None => return Err(String::new()),
                }
            }
        })
        .await;
        match first {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Err(starting.failed(&why).await),
            Err(_) => {
                return Err(starting
                    .failed(&format!("no `ready` within {} s", wait.as_secs()))
                    .await);
            }
        }
        let process = Arc::new(WorkerProcess {
            id: NEXT_PROCESS.fetch_add(1, Ordering::Relaxed),
            language,
            pid,
            outbox,
            routes: Mutex::new(HashMap::new()),
            life: Mutex::new(Life::default()),
            ready_isolates: AtomicUsize::new(ready_isolates),
            started: Instant::now(),
            last_used: Mutex::new(Instant::now()),
            resident_at_ready: pid.and_then(|pid| status_bytes(pid, "VmRSS")),
            wrappers: stage::fingerprint(config.wrappers_dir.as_deref(), language),
            _workdir: workdir,
        });
        tokio::spawn(route(Arc::downgrade(&process), lines, starting, limits));
        tracing::debug!(
            process = process.id,
            pid,
            language = language.as_str(),
            "worker process ready"
        );
        Ok(process)
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Isolates prepared and waiting in it.
    pub(crate) fn ready_isolates(&self) -> usize {
        self.ready_isolates.load(Ordering::Relaxed)
    }

    /// Whether it may take another execution: alive and not retiring.
    pub(crate) fn is_serving(&self) -> bool {
        let life = self.life.lock().expect("life lock");
        life.gone.is_none() && life.retiring.is_none()
    }

    pub(crate) fn is_gone(&self) -> bool {
        self.life.lock().expect("life lock").gone.is_some()
    }

    /// Executions started in it so far, and running now.
    pub(crate) fn served_and_running(&self) -> (u64, usize) {
        let life = self.life.lock().expect("life lock");
        (life.served, life.running)
    }

    pub(crate) fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Makes it retire itself as its `executions`-th execution starts (killed once that one
    /// ends), so that it does not live on beside its successor until another execution comes.
    pub(crate) fn retire_after(&self, executions: u64) {
        self.life.lock().expect("life lock").share = Some(executions);
    }

    /// Executions per second started in it lately (none when a second passed without any).
    pub(crate) fn pace(&self) -> f64 {
        self.life
            .lock()
            .expect("life lock")
            .pace
            .per_second(Instant::now())
    }

    /// How long since an execution last started or ended in it.
    pub(crate) fn idle_for(&self) -> Duration {
        self.last_used.lock().expect("last used lock").elapsed()
    }

    /// Its resident memory when it said `ready`, in bytes.
    pub(crate) fn resident_at_ready(&self) -> Option<u64> {
        self.resident_at_ready
    }

    /// The wrapper modules it was given (compared with the current ones by the pool).
    pub(crate) fn wrappers(&self) -> Option<&str> {
        self.wrappers.as_deref()
    }

    /// Takes no new execution from now on; killed as soon as none runs (at once if none does).
    pub(crate) fn retire(&self, why: &str) {
        let kill_now = {
            let mut life = self.life.lock().expect("life lock");
            if life.retiring.is_none() {
                tracing::debug!(process = self.id, why, "worker process retired");
                life.retiring = Some(why.to_string());
            }
            life.running == 0
        };
        if kill_now {
            self.kill();
        }
    }

    /// Kills the whole process group (every isolate with it). Nothing of it runs after this
    /// returns (SIGKILL cannot be caught); the kernel may still be freeing its memory.
    pub(crate) fn kill(&self) {
        if let Some(pgid) = self.pid {
            jail::kill_group(pgid);
        }
    }

    /// The process's peak resident memory so far (`VmHWM`), while it runs: shared by every
    /// execution it has run.
    fn peak_memory_bytes(&self) -> Option<u64> {
        status_bytes(self.pid?, "VmHWM")
    }

    /// Runs `code` as execution `exec` on a lane of this process, to completion, the
    /// deadline, a failure or `cancel`, collecting what it prints in `output` (whose limit the
    /// isolate is also told). A deadline retires the process (see `retire`).
    pub(crate) async fn run(
        self: &Arc<Self>,
        exec: u64,
        code: &str,
        deadline: Duration,
        mut output: OutputBuffer,
        calls: Arc<dyn HostCalls>,
        cancel: CancellationToken,
    ) -> RunOutcome {
        let started = Instant::now();
        let (route, mut routed) = mpsc::channel(ROUTE_QUEUE);
        {
            let mut life = self.life.lock().expect("life lock");
            life.running += 1;
            life.served += 1;
            let served = life.served;
            life.pace.record(served, started);
            if life.share.is_some_and(|share| served >= share) && life.retiring.is_none() {
                tracing::debug!(
                    process = self.id,
                    "worker process retired: it ran its share"
                );
                life.retiring = Some("it ran its share of executions".to_string());
            }
        }
        self.routes.lock().expect("routes lock").insert(exec, route);
        *self.last_used.lock().expect("last used lock") = Instant::now();
        let ending = if let Some(why) = self.gone_reason() {
            Ending::Failed(why)
        } else {
            let for_context = match self.language {
                Language::Typescript => typescript::for_context(code),
                Language::Python => None,
            };
            let execute = proto::execute_envelope(
                exec,
                self.language,
                code,
                for_context.as_deref(),
                output.limit(),
            );
            let clock = calls.clone();
            let drive = self.drive(exec, execute, &mut routed, &mut output, calls, started);
            tokio::select! {
                ending = within_deadline(drive, started, deadline, move || clock.paused()) => ending,
                () = cancel.cancelled() => Ending::Cancelled,
            }
        };
        if matches!(ending, Ending::TimedOut(_) | Ending::Cancelled) {
            self.end_isolate(exec, &mut routed).await;
        }
        if let Ending::TimedOut(_) = ending {
            // The isolate was stopped; its process is not trusted with more work.
            self.retire("an execution in it timed out");
        }
        let peak_memory_bytes = self.peak_memory_bytes();
        self.routes.lock().expect("routes lock").remove(&exec);
        let kill = {
            let mut life = self.life.lock().expect("life lock");
            life.running -= 1;
            life.retiring.is_some() && life.running == 0
        };
        *self.last_used.lock().expect("last used lock") = Instant::now();
        if kill {
            self.kill();
        }
        tracing::debug!(
            process = self.id,
            exec,
            us = started.elapsed().as_micros() as u64,
            "execution ended"
        );
        let (end, value, error) = match ending {
            Ending::WorkerExited => {
                let why = self
                    .gone_reason()
                    .unwrap_or_else(|| "the worker exited".into());
                Ending::WorkerExited.settle(Some(why))
            }
            other => other.settle(None),
        };
        RunOutcome {
            success: end == EndKind::Ok,
            end,
            output: output.finish(),
            value,
            error,
            peak_memory_bytes,
        }
    }

    /// Asks the supervisor to end execution `exec`'s isolate and waits for it to confirm; kills
    /// the process when it does not within [`CANCEL_GRACE`].
    async fn end_isolate(&self, exec: u64, routed: &mut mpsc::Receiver<Routed>) {
        if self.is_gone()
            || self
                .outbox
                .send(proto::cancel_envelope(exec))
                .await
                .is_err()
        {
            return;
        }
        let confirmed = tokio::time::timeout(CANCEL_GRACE, async {
            while let Some(message) = routed.recv().await {
                if matches!(message, Routed::Ended(..) | Routed::Gone) {
                    return;
                }
            }
        })
        .await;
        if confirmed.is_err() {
            tracing::warn!(
                process = self.id,
                exec,
                "an isolate did not end: killing its process"
            );
            self.retire("an isolate did not end when told");
            self.kill();
        }
    }

    fn gone_reason(&self) -> Option<String> {
        self.life.lock().expect("life lock").gone.clone()
    }

    /// Sends the execution, then takes its lines and answers its host calls until it reports
    /// `done` (or ends otherwise). Replies go out through the process's writer as its queue has
    /// room; at most [`REPLY_QUEUE`] more wait here, and while they do no further answer is
    /// collected. Lines keep being taken throughout, so the process's reader never waits long.
    async fn drive(
        &self,
        exec: u64,
        execute: String,
        routed: &mut mpsc::Receiver<Routed>,
        output: &mut OutputBuffer,
        calls: Arc<dyn HostCalls>,
        started: Instant,
    ) -> Ending {
        if self.outbox.send(execute).await.is_err() {
            return Ending::WorkerExited;
        }
        let us = || started.elapsed().as_micros() as u64;
        tracing::debug!(us = us(), "execution sent");
        let mut pending = FuturesUnordered::new();
        // Answers waiting for room in the writer's queue.
        let mut ready = std::collections::VecDeque::new();
        loop {
            tokio::select! {
                message = routed.recv() => {
                    let line = match message {
                        None => return Ending::WorkerExited,
                        Some(Routed::Gone) => return Ending::WorkerExited,
                        Some(Routed::Ended(reason, message)) => return ended_early(reason, message),
                        Some(Routed::Line(line)) => line,
                    };
                    if line.len() > proto::MAX_WORKER_LINE {
                        return Ending::Failed(format!(
                            "protocol violation: the execution sent a message over {} bytes",
                            proto::MAX_WORKER_LINE
                        ));
                    }
                    match proto::parse_worker_line(&line) {
                        Ok(WorkerMessage::Output { stream, text }) => output.push(stream, &text),
                        Ok(WorkerMessage::OutputTail { text, skipped }) => {
                            output.end_with(skipped, text)
                        }
                        Ok(WorkerMessage::Call { id, request }) => {
                            let fut = calls.clone().handle(request);
                            pending.push(async move { (id, fut.await) });
                        }
                        Ok(WorkerMessage::Done { ok: true, value, .. }) => {
                            tracing::debug!(us = us(), "execution done");
                            return Ending::Done(value);
                        }
                        Ok(WorkerMessage::Done { ok: false, error, .. }) => {
                            return Ending::UserError(describe_user_error(error));
                        }
                        Ok(WorkerMessage::Ready) => {
                            return Ending::Failed("protocol violation: `ready` during an execution".into());
                        }
                        Err(e) => return Ending::Failed(format!("protocol violation: {e}")),
                    }
                }
                Some((id, result)) = pending.next(), if !pending.is_empty() && ready.len() < REPLY_QUEUE => {
                    ready.push_back(proto::reply_envelope(exec, id, &result));
                }
                // Woken as soon as the writer has room again, whatever else is happening.
                room = self.outbox.reserve(), if !ready.is_empty() => {
                    let (Ok(room), Some(reply)) = (room, ready.pop_front()) else {
                        return Ending::WorkerExited;
                    };
                    room.send(reply);
                }
            }
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // A dropped process (retired, server shutdown) takes its whole group with it.
        self.kill();
    }
}

/// The words for an isolate the supervisor ended before it reported `done`.
fn ended_early(reason: EndReason, message: Option<String>) -> Ending {
    let detail = message
        .map(|m| format!(": {}", prefix(&m, 2000)))
        .unwrap_or_default();
    match reason {
        EndReason::Cancelled => Ending::Cancelled,
        EndReason::Crashed => Ending::Failed(format!("the execution's isolate crashed{detail}")),
        EndReason::Flood => Ending::Failed(format!(
            "the execution sent output faster than it can be read and was stopped{detail}"
        )),
        EndReason::Protocol => Ending::Failed(format!("protocol violation{detail}")),
    }
}

/// A process between its spawn and its `ready`: what explains its failure.
struct Starting {
    child: Option<Child>,
    stderr: Option<tokio::task::JoinHandle<String>>,
    heap_limit_mb: u32,
    max_file_bytes: u64,
}

impl Starting {
    /// Kills the process and explains why it did not start (`why`, or its exit).
    async fn failed(&mut self, why: &str) -> SpawnError {
        let diagnosis = self.diagnosis().await;
        if diagnosis.contains("snapshot unusable") {
            return SpawnError::SnapshotUnusable(diagnosis);
        }
        let why = if why.is_empty() {
            diagnosis
        } else {
            format!("{why} ({diagnosis})")
        };
        SpawnError::NotReady(why)
    }

    /// Explains why the process stopped, from its exit status and stderr (killing it first if
    /// it still runs).
    async fn diagnosis(&mut self) -> String {
        let mut status = None;
        if let Some(child) = self.child.as_mut() {
            if let Some(pgid) = child.id() {
                // A process that stopped answering is not waited for.
                if tokio::time::timeout(Duration::from_millis(500), child.wait())
                    .await
                    .is_err()
                {
                    jail::kill_group(pgid);
                }
            }
            status = tokio::time::timeout(Duration::from_secs(2), child.wait())
                .await
                .ok()
                .and_then(Result::ok);
        }
        let stderr = match self.stderr.take() {
            Some(tail) => tokio::time::timeout(Duration::from_secs(2), tail)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        };
        tracing::debug!(
            ?status,
            stderr = prefix(&stderr, 4000),
            "worker process stopped"
        );
        diagnose_exit(status, &stderr, self.heap_limit_mb, self.max_file_bytes)
    }
}

/// The process's reader: routes every envelope to its execution until the process is gone,
/// then tells every execution still running why.
async fn route(
    process: std::sync::Weak<WorkerProcess>,
    mut lines: FramedRead<OwnedReadHalf, LinesCodec>,
    mut starting: Starting,
    limits: DataLimits,
) {
    let violation = loop {
        let line = match lines.next().await {
            None | Some(Err(LinesCodecError::Io(_))) => break None,
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                break Some(format!("a message over {} bytes", proto::MAX_PROCESS_LINE));
            }
            Some(Ok(line)) => line,
        };
        let Some(p) = process.upgrade() else { return };
        let (exec, routed) = match proto::parse_process_line(&line) {
            Ok(ProcessMessage::Line { exec, line }) => (exec, Routed::Line(line)),
            Ok(ProcessMessage::Ended {
                exec,
                reason,
                message,
            }) => (exec, Routed::Ended(reason, message)),
            Ok(ProcessMessage::Stock { ready }) => {
                p.ready_isolates.store(ready, Ordering::Relaxed);
                continue;
            }
            Ok(ProcessMessage::Isolates { count }) => match limits.fit(count) {
                Ok(allowed) => {
                    let outbox = p.outbox.clone();
                    drop(p);
                    if outbox.send(allowed).await.is_err() {
                        break None;
                    }
                    continue;
                }
                Err(e) => break Some(e),
            },
            Ok(ProcessMessage::Ready) => break Some("a second `ready`".to_string()),
            Err(e) => break Some(e.to_string()),
        };
        let route = p.routes.lock().expect("routes lock").get(&exec).cloned();
        drop(p);
        // An execution that already ended (its late lines) has no route: they are dropped.
        if let Some(route) = route {
            let _ = route.send(routed).await;
        }
    };
    let Some(p) = process.upgrade() else { return };
    if let Some(violation) = &violation {
        tracing::warn!(
            process = p.id,
            "worker process broke the protocol: {violation}"
        );
    }
    p.kill();
    let mut why = match violation {
        Some(violation) => format!("protocol violation by the worker process: {violation}"),
        None => starting.diagnosis().await,
    };
    let running = p.life.lock().expect("life lock").running;
    if running > 1 {
        why.push_str(&format!(
            " (the worker process of this client session was running {running} executions, \
             this one among them: all of them ended)"
        ));
    }
    p.life.lock().expect("life lock").gone = Some(why.clone());
    let routes: Vec<_> = p
        .routes
        .lock()
        .expect("routes lock")
        .values()
        .cloned()
        .collect();
    for route in routes {
        let _ = route.send(Routed::Gone).await;
    }
    tracing::debug!(process = p.id, "worker process gone: {why}");
}

/// Only the process started here may be the socket's peer (`SO_PEERCRED`): a connection from
/// any other process, even one of the same user that reached the path first, is refused.
fn check_peer(stream: &tokio::net::UnixStream, worker: Option<u32>) -> Result<(), SpawnError> {
    let peer = stream.peer_cred().ok().and_then(|c| c.pid());
    match (peer, worker) {
        (Some(peer), Some(worker)) if u32::try_from(peer).ok() == Some(worker) => Ok(()),
        _ => Err(SpawnError::NotReady(format!(
            "the socket's peer is process {peer:?}, not the worker {worker:?}"
        ))),
    }
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of a stream until it ends.
async fn read_tail(mut stderr: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut tail = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tracing::debug!(stderr = %String::from_utf8_lossy(&buf[..n]).trim_end(), "worker process");
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * STDERR_TAIL_BYTES {
            tail.drain(..tail.len() - STDERR_TAIL_BYTES);
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// The path a worker process's socket is bound to must fit `sockaddr_un`.
fn socket_path_fits(path: &Path) -> bool {
    path.as_os_str().len() < 100
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_is_measured_over_whole_windows_and_forgotten_when_executions_stop() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut pace = Pace::default();
        // 100 executions in the first 250 ms: 400 per second, known once the window closes.
        for served in 1..=100 {
            pace.record(served, at(served * 250 / 100 - 2));
            assert_eq!(pace.per_second(at(served * 250 / 100 - 2)), 0.0, "{served}");
        }
        pace.record(101, at(250));
        let measured = pace.per_second(at(250));
        assert!((measured - 100.0 / 0.25).abs() < 1e-6, "{measured}");
        // Still that pace a little later, none once a whole second has passed without any.
        assert_eq!(pace.per_second(at(900)), measured);
        assert_eq!(pace.per_second(at(1300)), 0.0);
        // An execution after a long pause starts a new window, not a pace of one per pause.
        pace.record(102, at(5000));
        assert_eq!(pace.per_second(at(5000)), 0.0);
        pace.record(103, at(5300));
        assert!((pace.per_second(at(5300)) - 1.0 / 0.3).abs() < 1e-6);
    }

    #[tokio::test]
    async fn a_socket_peer_other_than_the_worker_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("host.sock");
        let listener = tokio::net::UnixListener::bind(&path).expect("bind");
        // Another process reaches the socket first.
        let connect = format!(
            "import socket, time; s = socket.socket(socket.AF_UNIX); s.connect({:?}); time.sleep(30)",
            path.to_str().expect("utf-8 path")
        );
        let mut intruder = std::process::Command::new("python3")
            .args(["-c", &connect])
            .spawn()
            .expect("python3");
        let accepted = tokio::time::timeout(Duration::from_secs(10), listener.accept()).await;
        let intruder_pid = intruder.id();
        let verdicts = accepted.ok().and_then(Result::ok).map(|(stream, _)| {
            (
                check_peer(&stream, Some(std::process::id())),
                check_peer(&stream, None),
                check_peer(&stream, Some(intruder_pid)),
            )
        });
        let _ = intruder.kill();
        let _ = intruder.wait();
        let (as_other_worker, without_worker, as_itself) = verdicts.expect("a connection");
        let refused = as_other_worker
            .expect_err("a peer that is not the worker")
            .to_string();
        assert!(
            refused.contains(&format!("peer is process Some({intruder_pid})")),
            "{refused}"
        );
        assert!(without_worker.is_err());
        // The check itself accepts the process it was started for.
        assert!(as_itself.is_ok());
    }
}
