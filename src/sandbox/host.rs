//! Worker processes: spawning a jailed Deno worker (the command comes from `launch`), driving
//! one execution over its private pipes, enforcing the wall-clock deadline and the output cap,
//! and killing it afterwards.
//!
//! A worker is used for exactly one execution. It is treated as hostile: every line it sends is
//! parsed strictly, its output is capped here (not only inside the worker), and its stderr is
//! read only for diagnostics. Host calls (tool calls and catalogue look-ups) are answered by a
//! `HostCalls` implementation supplied by the executor; this module knows nothing of MCP.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

use super::jail;
use super::launch::{Purpose, WorkerConfig};
use super::outcome::{
    EndKind, Ending, OutputBuffer, RunOutcome, describe_user_error, diagnose_exit,
    disk_limit_error, truncate,
};
use super::pause::Starting;
use super::proto::{self, HostRequest, Language, WorkerMessage};
use super::{seed, stage};

/// How many answered host calls may wait for the worker to read them (in the writer's queue,
/// and as many again in the reader's) before the host stops collecting more answers; it keeps
/// reading the worker's lines meanwhile.
const REPLY_QUEUE: usize = 64;

/// How much of a worker's stderr is kept for diagnostics.
const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// Answers the requests sandboxed code makes. Implemented by the executor.
pub(crate) trait HostCalls: Send + Sync + 'static {
    fn handle(
        self: Arc<Self>,
        request: HostRequest,
    ) -> futures::future::BoxFuture<'static, Result<Value, String>>;
}

/// How long a worker may take to announce `ready` (a Python worker without a snapshot loads
/// and compiles the whole standard library first).
fn ready_timeout(language: Language) -> Duration {
    match language {
        Language::Typescript => Duration::from_secs(30),
        Language::Python => Duration::from_secs(120),
    }
}

/// Why a worker could not be started.
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

/// A started worker that has announced `ready` and has not run anything yet.
pub struct Worker {
    child: Child,
    pgid: Option<u32>,
    stdin: ChildStdin,
    lines: FramedRead<ChildStdout, LinesCodec>,
    stderr: tokio::task::JoinHandle<String>,
    language: Language,
    heap_limit_mb: u32,
    jail: jail::JailPolicy,
    // Removed (with anything in it) when the worker is dropped.
    _workdir: tempfile::TempDir,
    // Dropped with the worker, once its process is gone: tells the pool it may start another.
    _retired: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Worker {
    /// Starts a jailed worker for `language` and waits until it is ready. The worker pays its
    /// runtime's first-use costs before announcing `ready`, as suits a worker that will wait
    /// in a pool.
    pub async fn start(config: &WorkerConfig, language: Language) -> Result<Worker, SpawnError> {
        Worker::spawn(config, language, true, None).await
    }

    /// Like [`Worker::start`], for a pool's stock: while it starts, the worker is listed in
    /// `starting`, so that the pool can hold it back while executions run.
    pub(crate) async fn start_pooled(
        config: &WorkerConfig,
        language: Language,
        starting: &Starting,
    ) -> Result<Worker, SpawnError> {
        Worker::spawn(config, language, true, Some(starting)).await
    }

    /// Like [`Worker::start`], for an execution that is waiting: the worker skips its warm-up
    /// runs (the execution pays only the first-use costs its own code incurs).
    pub(crate) async fn start_on_demand(
        config: &WorkerConfig,
        language: Language,
    ) -> Result<Worker, SpawnError> {
        Worker::spawn(config, language, false, None).await
    }

    async fn spawn(
        config: &WorkerConfig,
        language: Language,
        warm_up: bool,
        starting: Option<&Starting>,
    ) -> Result<Worker, SpawnError> {
        let workdir = tempfile::Builder::new()
            .prefix("code-executor-worker-")
            .tempdir()
            .map_err(SpawnError::WorkDir)?;
        // `cwd` is empty; `cache` is Deno's private cache for this one worker (transpiled user
        // code lands there), so nothing of one execution outlives it or reaches the next.
        let cwd = workdir.path().join("cwd");
        let cache = workdir.path().join("cache");
        for dir in [&cwd, &cache] {
            std::fs::create_dir(dir).map_err(SpawnError::WorkDir)?;
        }
        // Read once, so the seed, the permission and the argument all come from one snapshot.
        let prepared = config.prepared.get();
        if let Some(prepared) = &prepared {
            prepared.seed.install(&cache).map_err(SpawnError::WorkDir)?;
        }
        seed::create_writable_files(&cache).map_err(SpawnError::WorkDir)?;
        let wrappers = stage::wrappers(config.wrappers_dir.as_deref(), language, &cwd);
        let purpose = Purpose::Worker {
            language,
            warm_up,
            snapshot: prepared.as_ref().map(|p| p.snapshot.as_path()),
            wrappers: wrappers.as_deref(),
        };
        let mut cmd = config
            .deno_command(purpose, &cache, &cwd)
            .map_err(|source| SpawnError::Spawn {
                path: config.deno.clone(),
                source,
            })?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| SpawnError::Spawn {
            path: config.deno.clone(),
            source,
        })?;
        let pgid = child.id();
        let _listed = starting
            .zip(pgid)
            .map(|(starting, pgid)| starting.list(pgid));
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let stderr = tokio::spawn(async move {
            let mut tail = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * STDERR_TAIL_BYTES {
                    tail.drain(..tail.len() - STDERR_TAIL_BYTES);
                }
            }
            String::from_utf8_lossy(&tail).into_owned()
        });
        let mut worker = Worker {
            child,
            pgid,
            stdin,
            lines: FramedRead::new(
                stdout,
                LinesCodec::new_with_max_length(proto::MAX_WORKER_LINE),
            ),
            stderr,
            language,
            heap_limit_mb: config.heap_limit_mb,
            jail: config.jail,
            _workdir: workdir,
            _retired: None,
        };
        let first = tokio::time::timeout(ready_timeout(language), worker.lines.next()).await;
        let Ok(first) = first else {
            return Err(SpawnError::NotReady(format!(
                "no `ready` within {} s",
                ready_timeout(language).as_secs()
            )));
        };
        match first {
            Some(Ok(line)) if proto::parse_worker_line(&line) == Ok(WorkerMessage::Ready) => {
                Ok(worker)
            }
            Some(Ok(line)) => Err(SpawnError::NotReady(format!(
                "unexpected first message: {}",
                truncate(&line, 200)
            ))),
            Some(Err(e)) => Err(SpawnError::NotReady(e.to_string())),
            None => {
                let diagnosis = worker.exit_diagnosis().await;
                if diagnosis.contains("runner: snapshot unusable") {
                    Err(SpawnError::SnapshotUnusable(diagnosis))
                } else {
                    Err(SpawnError::NotReady(diagnosis))
                }
            }
        }
    }

    /// Whether the process is still running (a pooled worker may have been killed meanwhile).
    pub(crate) fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// A receiver that completes once this worker has been killed and its process reaped (or
    /// the worker dropped), so the caller can start a replacement without competing with it.
    pub(crate) fn retirement(&mut self) -> tokio::sync::oneshot::Receiver<()> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        self._retired = Some(sender);
        receiver
    }

    /// Runs `code` to completion, the deadline, a failure or `cancel`, then kills the worker.
    pub(crate) async fn run(
        mut self,
        code: &str,
        deadline: Duration,
        output_limit: usize,
        calls: Arc<dyn HostCalls>,
        cancel: CancellationToken,
    ) -> RunOutcome {
        let started = Instant::now();
        let mut output = OutputBuffer::new(output_limit);
        let workdir = self._workdir.path().to_path_buf();
        let max_disk_bytes = self.jail.max_disk_bytes;
        let ending = tokio::select! {
            ending = tokio::time::timeout(deadline, self.drive(code, output_limit, &mut output, calls, started)) => {
                ending.unwrap_or(Ending::TimedOut(deadline))
            }
            () = cancel.cancelled() => Ending::Cancelled,
            used = disk_over(&workdir, max_disk_bytes) => Ending::Failed(disk_limit_error(used, max_disk_bytes)),
        };
        let peak_memory_bytes = self.peak_memory_bytes();
        self.kill_now();
        tracing::debug!(
            language = self.language.as_str(),
            us = started.elapsed().as_micros() as u64,
            "worker run: ended, worker killed"
        );
        let diagnosis = match ending {
            Ending::WorkerExited => Some(self.exit_diagnosis().await),
            _ => None,
        };
        let (end, value, error) = ending.settle(diagnosis);
        let outcome = RunOutcome {
            success: end == EndKind::Ok,
            end,
            output: output.finish(),
            value,
            error,
            peak_memory_bytes,
        };
        self.reap_in_background();
        outcome
    }

    /// The worker's peak resident memory so far (`VmHWM`), while it still runs.
    fn peak_memory_bytes(&self) -> Option<u64> {
        let pid = self.child.id()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Sends the program, then reads the worker's lines and answers its host calls until it
    /// reports `done`. Reading and writing are independent: replies go out through
    /// [`REPLY_QUEUE`]-bounded writes of their own, so a worker blocked writing its stdout (a
    /// burst of large calls) never waits on a host blocked writing its stdin.
    async fn drive(
        &mut self,
        code: &str,
        output_limit: usize,
        output: &mut OutputBuffer,
        calls: Arc<dyn HostCalls>,
        started: Instant,
    ) -> Ending {
        let execute = proto::execute_line(self.language, code, output_limit);
        let (replies, mut queued) = tokio::sync::mpsc::channel::<String>(REPLY_QUEUE);
        let stdin = &mut self.stdin;
        let writer = async move {
            if stdin.write_all(execute.as_bytes()).await.is_err() {
                return Ending::WorkerExited;
            }
            tracing::debug!(
                us = started.elapsed().as_micros() as u64,
                "worker run: execute sent"
            );
            while let Some(reply) = queued.recv().await {
                if stdin.write_all(reply.as_bytes()).await.is_err() {
                    return Ending::WorkerExited;
                }
            }
            std::future::pending().await
        };
        let reader = read_lines(&mut self.lines, output, calls, replies, started);
        tokio::select! {
            ending = writer => ending,
            ending = reader => ending,
        }
    }

    /// Sends SIGKILL to the worker's whole process group. Nothing of it runs after this returns
    /// (SIGKILL cannot be caught); the kernel may still be freeing its memory.
    fn kill_now(&mut self) {
        if let Some(pgid) = self.pgid {
            jail::kill_group(pgid);
        }
        let _ = self.child.start_kill();
    }

    /// Waits for the killed worker's exit off the request path (tearing down a Python worker's
    /// address space takes tens of milliseconds), then drops it: its working directory is
    /// removed and its pool is told it may start a replacement.
    fn reap_in_background(mut self) {
        let killed = Instant::now();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
            tracing::debug!(
                us = killed.elapsed().as_micros() as u64,
                "worker run: worker reaped"
            );
            drop(self);
        });
    }

    /// Explains why a worker stopped without finishing, from its exit status and stderr.
    async fn exit_diagnosis(&mut self) -> String {
        let status = match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        };
        let stderr = match tokio::time::timeout(Duration::from_secs(2), &mut self.stderr).await {
            Ok(Ok(text)) => text,
            _ => String::new(),
        };
        diagnose_exit(
            status,
            &stderr,
            self.heap_limit_mb,
            self.jail.max_file_bytes,
        )
    }
}

/// How often the size of a running worker's private directory is checked.
const DISK_POLL: Duration = Duration::from_millis(50);

/// Completes, with the bytes found, once the files under `dir` hold more than `limit` bytes
/// (checked every [`DISK_POLL`]; Deno emits modules far slower than that lets it overshoot
/// by much).
async fn disk_over(dir: &std::path::Path, limit: u64) -> u64 {
    loop {
        tokio::time::sleep(DISK_POLL).await;
        let used = bytes_under(dir);
        if used > limit {
            return used;
        }
    }
}

/// The bytes of the regular files under `dir` (what cannot be read counts as nothing).
fn bytes_under(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => bytes_under(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// The reading half of [`Worker::drive`]: every line the worker sends, until it is done.
/// Finished host calls are handed to the writer as its queue has room; at most
/// [`REPLY_QUEUE`] more wait here, and while they do no further answer is collected. Reading
/// goes on throughout, so the worker's own writes always drain.
async fn read_lines(
    lines: &mut FramedRead<ChildStdout, LinesCodec>,
    output: &mut OutputBuffer,
    calls: Arc<dyn HostCalls>,
    replies: tokio::sync::mpsc::Sender<String>,
    started: Instant,
) -> Ending {
    let us = || started.elapsed().as_micros() as u64;
    let mut pending = FuturesUnordered::new();
    // Answers waiting for room in the writer's queue.
    let mut ready = std::collections::VecDeque::new();
    let mut first = true;
    loop {
        tokio::select! {
            line = lines.next() => {
                if std::mem::take(&mut first) {
                    tracing::debug!(us = us(), "worker run: first message");
                }
                let line = match line {
                    None => return Ending::WorkerExited,
                    Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                        return Ending::Failed(format!(
                            "protocol violation: worker sent a message over {} bytes",
                            proto::MAX_WORKER_LINE
                        ));
                    }
                    Some(Err(LinesCodecError::Io(_))) => return Ending::WorkerExited,
                    Some(Ok(line)) => line,
                };
                match proto::parse_worker_line(&line) {
                    Ok(WorkerMessage::Output { stream, text }) => output.push(stream, &text),
                    Ok(WorkerMessage::Call { id, request }) => {
                        let fut = calls.clone().handle(request);
                        pending.push(async move { (id, fut.await) });
                    }
                    Ok(WorkerMessage::Done { ok: true, value, .. }) => return Ending::Done(value),
                    Ok(WorkerMessage::Done { ok: false, error, .. }) => {
                        return Ending::UserError(describe_user_error(error));
                    }
                    Ok(WorkerMessage::Ready) => {
                        return Ending::Failed("protocol violation: second `ready`".into());
                    }
                    Err(e) => return Ending::Failed(format!("protocol violation: {e}")),
                }
            }
            Some((id, result)) = pending.next(), if !pending.is_empty() && ready.len() < REPLY_QUEUE => {
                ready.push_back(proto::reply_line(id, &result));
            }
            // Woken as soon as the writer has room again, whatever else is happening.
            room = replies.reserve(), if !ready.is_empty() => {
                let (Ok(room), Some(reply)) = (room, ready.pop_front()) else {
                    return Ending::WorkerExited;
                };
                room.send(reply);
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // A dropped worker (cancelled request, server shutdown) takes its whole group with it.
        if let Some(pgid) = self.pgid {
            jail::kill_group(pgid);
        }
    }
}
