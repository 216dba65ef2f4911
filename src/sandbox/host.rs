//! Worker processes: spawning a jailed Deno worker, driving one execution over its private
//! pipes, enforcing the wall-clock deadline and the output cap, and killing it afterwards.
//!
//! A worker is used for exactly one execution. It is treated as hostile: every line it sends is
//! parsed strictly, its output is capped here (not only inside the worker), and its stderr is
//! read only for diagnostics. Host calls (tool calls and catalogue look-ups) are answered by a
//! [`HostCalls`] implementation supplied by the executor; this module knows nothing of MCP.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

use super::jail::{self, JailPolicy};
use super::proto::{self, HostRequest, Language, Stream, WorkerMessage};
use super::snapshot::Prepared;

/// The worker bootstrap ([`super::runner`]), embedded in the binary and handed to Deno as a
/// `data:` URL, so no file on disk is needed and none can be swapped.
const RUNNER_JS: &str = super::runner::SOURCE;
/// How much of a worker's stderr is kept for diagnostics.
const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// Answers the requests sandboxed code makes. Implemented by the executor.
pub trait HostCalls: Send + Sync + 'static {
    fn handle(
        self: Arc<Self>,
        request: HostRequest,
    ) -> futures::future::BoxFuture<'static, Result<Value, String>>;
}

/// How to start workers.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub deno: PathBuf,
    pub pyodide_dir: PathBuf,
    /// What the trusted preparation run made, verified: the Pyodide memory snapshot Python
    /// workers start from and the seed of every worker's Deno cache. Workers use it while it is
    /// set (it may be made in the background after the server has started, and is dropped if a
    /// worker finds the snapshot unusable).
    pub prepared: PreparedSlot,
    pub heap_limit_mb: u32,
    pub jail: JailPolicy,
    /// Typed wrapper modules sandboxed code may import (see [`stage_wrappers`]).
    pub wrappers_dir: Option<PathBuf>,
}

/// What workers currently start from, shared by every clone of a config.
#[derive(Debug, Clone, Default)]
pub struct PreparedSlot(Arc<std::sync::RwLock<Option<Arc<Prepared>>>>);

impl PreparedSlot {
    pub fn get(&self) -> Option<Arc<Prepared>> {
        self.0.read().expect("prepared slot lock").clone()
    }

    pub fn set(&self, prepared: Prepared) {
        *self.0.write().expect("prepared slot lock") = Some(Arc::new(prepared));
    }

    /// Stops using the snapshot and its seed (Python then starts the slow way, but still
    /// starts).
    pub fn discard(&self) {
        *self.0.write().expect("prepared slot lock") = None;
    }
}

/// How long a worker may take to announce `ready` (a Python worker without a snapshot loads
/// and compiles the whole standard library first).
fn ready_timeout(language: Language) -> Duration {
    match language {
        Language::Typescript => Duration::from_secs(30),
        Language::Python => Duration::from_secs(120),
    }
}

/// The runner as the `data:` URL Deno runs as its main module.
pub fn runner_url() -> String {
    format!(
        "data:application/javascript;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(RUNNER_JS)
    )
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
    pub async fn start_pooled(
        config: &WorkerConfig,
        language: Language,
        starting: &Starting,
    ) -> Result<Worker, SpawnError> {
        Worker::spawn(config, language, true, Some(starting)).await
    }

    /// Like [`Worker::start`], for an execution that is waiting: the worker skips its warm-up
    /// runs (the execution pays only the first-use costs its own code incurs).
    pub async fn start_on_demand(
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
        let mut cmd = tokio::process::Command::new(&config.deno);
        jail::confine(&mut cmd, config.jail);
        // The only variable a worker sees; user code cannot read it (no --allow-env).
        cmd.env("DENO_DIR", &cache);
        let snapshot = prepared.as_ref().map(|p| p.snapshot.as_path());
        let mut args = deno_args(config, language, warm_up, snapshot);
        if let Some(allow) = stage_wrappers(config, language, &cwd) {
            args.insert(1, allow);
        }
        cmd.args(args)
            .current_dir(&cwd)
            .stdin(Stdio::piped())
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

    pub fn language(&self) -> Language {
        self.language
    }

    /// Whether the process is still running (a pooled worker may have been killed meanwhile).
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// A receiver that completes once this worker has been killed and its process reaped (or
    /// the worker dropped), so the caller can start a replacement without competing with it.
    pub fn retirement(&mut self) -> tokio::sync::oneshot::Receiver<()> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        self._retired = Some(sender);
        receiver
    }

    /// Runs `code` to completion, the deadline, a failure or `cancel`, then kills the worker.
    pub async fn run(
        mut self,
        code: &str,
        deadline: Duration,
        output_limit: usize,
        calls: Arc<dyn HostCalls>,
        cancel: CancellationToken,
    ) -> RunOutcome {
        let started = Instant::now();
        let mut output = OutputBuffer::new(output_limit);
        let ending = tokio::select! {
            ending = tokio::time::timeout(deadline, self.drive(code, output_limit, &mut output, calls, started)) => {
                ending.unwrap_or(Ending::TimedOut(deadline))
            }
            () = cancel.cancelled() => Ending::Cancelled,
        };
        let peak_memory_bytes = self.peak_memory_bytes();
        self.kill_now();
        tracing::debug!(
            language = self.language.as_str(),
            us = started.elapsed().as_micros() as u64,
            "worker run: ended, worker killed"
        );
        let (end, value, error) = match ending {
            Ending::Done(value) => (EndKind::Ok, value, None),
            Ending::UserError(e) => (EndKind::CodeError, None, Some(e)),
            Ending::Failed(e) => (EndKind::WorkerFailed, None, Some(e)),
            Ending::TimedOut(after) => (
                EndKind::Timeout,
                None,
                Some(format!(
                    "execution timed out after {} ms and was killed",
                    after.as_millis()
                )),
            ),
            Ending::Cancelled => (
                EndKind::Cancelled,
                None,
                Some("execution cancelled by the client; the worker was killed".into()),
            ),
            Ending::WorkerExited => {
                let diagnosis = self.exit_diagnosis().await;
                let kind = if diagnosis.starts_with(OUT_OF_MEMORY) {
                    EndKind::OutOfMemory
                } else {
                    EndKind::WorkerFailed
                };
                (kind, None, Some(diagnosis))
            }
        };
        let outcome = RunOutcome {
            success: end == EndKind::Ok,
            end,
            output: output.finish(),
            value,
            error,
            duration: started.elapsed(),
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

    async fn drive(
        &mut self,
        code: &str,
        output_limit: usize,
        output: &mut OutputBuffer,
        calls: Arc<dyn HostCalls>,
        started: Instant,
    ) -> Ending {
        let execute = proto::execute_line(self.language, code, output_limit);
        if self.stdin.write_all(execute.as_bytes()).await.is_err() {
            return Ending::WorkerExited;
        }
        let us = || started.elapsed().as_micros() as u64;
        tracing::debug!(us = us(), "worker run: execute sent");
        let mut pending = FuturesUnordered::new();
        let mut first = true;
        loop {
            tokio::select! {
                line = self.lines.next() => {
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
                        Ok(WorkerMessage::Done { ok: true, value, .. }) => {
                            return Ending::Done(value);
                        }
                        Ok(WorkerMessage::Done { ok: false, error, .. }) => {
                            return Ending::UserError(describe_user_error(error));
                        }
                        Ok(WorkerMessage::Ready) => {
                            return Ending::Failed("protocol violation: second `ready`".into());
                        }
                        Err(e) => return Ending::Failed(format!("protocol violation: {e}")),
                    }
                }
                Some((id, result)) = pending.next(), if !pending.is_empty() => {
                    let reply = proto::reply_line(id, &result);
                    if self.stdin.write_all(reply.as_bytes()).await.is_err() {
                        return Ending::WorkerExited;
                    }
                }
            }
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
        diagnose_exit(status, &stderr, self.heap_limit_mb)
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

/// Largest wrapper module copied into a worker.
const MAX_WRAPPER_BYTES: u64 = 4 * 1024 * 1024;

/// Typed wrapper modules (`code-executor wrappers`): copies the current `<name>.ts` (or `.py`)
/// files of the wrappers directory into `wrappers/` in the worker's private working directory
/// and returns the permission to read that directory (and nothing else). Only regular files
/// with identifier names are copied, opened without following links, so nothing but those
/// files' bytes reaches the sandbox. The runner links `import ... from "wrappers/<name>.ts"` to
/// them (TypeScript) or puts them on Python's path as the package `wrappers`.
fn stage_wrappers(config: &WorkerConfig, language: Language, cwd: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let source = config.wrappers_dir.as_deref()?;
    let ext = match language {
        Language::Typescript => ".ts",
        Language::Python => ".py",
    };
    let staged = cwd.join("wrappers");
    let mut any = false;
    for entry in std::fs::read_dir(source).ok()?.flatten() {
        let name = entry.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(ext)) else {
            continue;
        };
        let mut chars = stem.chars();
        if !(matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            continue;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(entry.path())
        else {
            continue;
        };
        if !file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() <= MAX_WRAPPER_BYTES)
        {
            continue;
        }
        let mut text = Vec::new();
        if file.take(MAX_WRAPPER_BYTES).read_to_end(&mut text).is_err()
            || (!any && std::fs::create_dir(&staged).is_err())
            || std::fs::write(staged.join(&name), text).is_err()
        {
            continue;
        }
        any = true;
    }
    any.then(|| format!("--allow-read={}", staged.display()))
}

fn deno_args(
    config: &WorkerConfig,
    language: Language,
    warm_up: bool,
    snapshot: Option<&Path>,
) -> Vec<String> {
    // A pooled worker may idle for minutes before its one execution. V8 would meanwhile flush
    // the bytecode of the runner functions the warm-up compiled (and the TypeScript loader's),
    // and the execution would pay to compile them again: 2-4 ms of a 2 ms run.
    let mut v8_flags = format!(
        "--max-old-space-size={},--no-flush-bytecode",
        config.heap_limit_mb
    );
    if language == Language::Python {
        // Python's own recursion limit must trip before V8's stack runs out (the main thread
        // stack is 8 MiB; these stay well inside it).
        v8_flags.push_str(",--stack-size=4000,--wasm-stack-switching-stack-size=4000");
        // Optimise only really hot WebAssembly (the interpreter loop of a long computation),
        // 100x V8's default threshold. With the default, loading Pyodide and its first runs
        // send hundreds of lukewarm functions to the optimising compiler: ~400 ms of background
        // CPU per worker, stealing the core a running execution needs (print(1) took ~40 ms
        // instead of ~7), and long computations still finished no sooner.
        v8_flags.push_str(",--wasm-tiering-budget=1300000000");
    }
    let mut args = vec![
        "run".to_string(),
        "--no-prompt".into(),
        "--no-config".into(),
        "--no-lock".into(),
        "--no-remote".into(),
        "--no-npm".into(),
        "--quiet".into(),
        // V8's code cache lives in the worker's private DENO_DIR, which dies with the worker:
        // writing it only costs time (~20 ms of CPU per start, and SQLite writes during the
        // execution).
        "--no-code-cache".into(),
        format!("--v8-flags={v8_flags}"),
    ];
    if language == Language::Python {
        // The only permission any worker ever gets: reading the Pyodide distribution (and its
        // verified snapshot).
        let mut readable = config.pyodide_dir.display().to_string();
        if let Some(snapshot) = &snapshot {
            readable.push(',');
            readable.push_str(&snapshot.display().to_string());
        }
        args.push(format!("--allow-read={readable}"));
    }
    args.push(runner_url());
    // Script arguments (`Deno.args`): the language, and for Python where Pyodide (and its
    // snapshot) live, so the runner can load it before announcing `ready`.
    args.push(language.as_str().to_string());
    if language == Language::Python {
        args.push(config.pyodide_dir.display().to_string());
        if let Some(snapshot) = &snapshot {
            args.push(snapshot.display().to_string());
        }
    }
    if !warm_up {
        args.push("--no-warm-up".into());
    }
    args
}

/// The process groups of workers that are still starting, which their pool may pause (SIGSTOP)
/// while executions run and must then resume (SIGCONT). Pauses nest: the groups resume when the
/// last [`Paused`] is dropped.
#[derive(Debug, Clone, Default)]
pub struct Starting(Arc<std::sync::Mutex<StartingState>>);

#[derive(Debug, Default)]
struct StartingState {
    groups: Vec<u32>,
    pauses: usize,
}

impl Starting {
    /// Stops every worker now starting until the returned guard (and any other) is dropped.
    pub fn pause(&self) -> Paused {
        let mut state = self.0.lock().expect("starting lock");
        state.pauses += 1;
        for &pgid in &state.groups {
            jail::pause_group(pgid, true);
        }
        Paused(self.clone())
    }

    /// Lists a group while its worker starts (until the returned guard is dropped). A group
    /// listed during a pause is not stopped: it is the refill the pause has already allowed.
    fn list(&self, pgid: u32) -> Listed {
        self.0.lock().expect("starting lock").groups.push(pgid);
        Listed(self.clone(), pgid)
    }
}

/// A pause of a pool's starting workers; dropping the last one resumes them.
#[derive(Debug)]
pub struct Paused(Starting);

impl Drop for Paused {
    fn drop(&mut self) {
        let mut state = self.0.0.lock().expect("starting lock");
        state.pauses -= 1;
        if state.pauses == 0 {
            for &pgid in &state.groups {
                jail::pause_group(pgid, false);
            }
        }
    }
}

/// A starting worker's entry in [`Starting`].
struct Listed(Starting, u32);

impl Drop for Listed {
    fn drop(&mut self) {
        let mut state = self.0.0.lock().expect("starting lock");
        state.groups.retain(|&pgid| pgid != self.1);
        // A start that ends while paused (error, timeout) leaves no stopped process behind.
        jail::pause_group(self.1, false);
    }
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub success: bool,
    pub end: EndKind,
    pub output: String,
    pub value: Option<Value>,
    pub error: Option<String>,
    pub duration: Duration,
    /// Peak resident memory of the worker, when it could be read.
    pub peak_memory_bytes: Option<u64>,
}

/// How a run ended, for audit records and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndKind {
    Ok,
    /// The code threw (or Python raised).
    CodeError,
    Timeout,
    Cancelled,
    OutOfMemory,
    /// The worker died or broke the protocol.
    WorkerFailed,
}

impl EndKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EndKind::Ok => "ok",
            EndKind::CodeError => "code_error",
            EndKind::Timeout => "timeout",
            EndKind::Cancelled => "cancelled",
            EndKind::OutOfMemory => "out_of_memory",
            EndKind::WorkerFailed => "worker_failed",
        }
    }
}

enum Ending {
    Done(Option<Value>),
    UserError(String),
    Failed(String),
    TimedOut(Duration),
    Cancelled,
    WorkerExited,
}

/// How an out-of-memory diagnosis starts.
const OUT_OF_MEMORY: &str = "out of memory";

fn describe_user_error(error: Option<proto::UserError>) -> String {
    let Some(error) = error else {
        return "the code failed without an error value".into();
    };
    let head = match (error.name.is_empty(), error.message.is_empty()) {
        (true, _) => error.message.clone(),
        (false, true) => error.name.clone(),
        (false, false) => format!("{}: {}", error.name, error.message),
    };
    match error.stack {
        // V8 stacks start with "Name: message" and Python tracebacks end with it; don't say
        // it twice.
        Some(stack) if !stack.is_empty() => {
            if stack.starts_with(&head) || stack.trim_end().ends_with(&head) {
                stack
            } else {
                format!("{head}\n{stack}")
            }
        }
        _ => head,
    }
}

fn diagnose_exit(status: Option<std::process::ExitStatus>, stderr: &str, heap_mb: u32) -> String {
    use std::os::unix::process::ExitStatusExt;
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("out of memory") || lower.contains("allocation failed") {
        return format!(
            "{OUT_OF_MEMORY}: the execution exceeded the worker's memory limit (V8 heap {heap_mb} MiB) and was killed"
        );
    }
    let how = match status {
        Some(s) if s.signal().is_some() => format!("killed by signal {}", s.signal().unwrap_or(0)),
        Some(s) => format!("exited with code {}", s.code().unwrap_or(-1)),
        None => "stopped".to_string(),
    };
    let tail = stderr.trim();
    if tail.is_empty() {
        format!("the worker {how} before finishing")
    } else {
        format!(
            "the worker {how} before finishing: {}",
            truncate(tail, 2000)
        )
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Output of one execution, capped at a byte limit with a visible marker.
#[derive(Debug)]
pub struct OutputBuffer {
    text: String,
    limit: usize,
    dropped: usize,
}

impl OutputBuffer {
    pub fn new(limit: usize) -> Self {
        OutputBuffer {
            text: String::new(),
            limit,
            dropped: 0,
        }
    }

    pub fn push(&mut self, _stream: Stream, text: &str) {
        let room = self.limit.saturating_sub(self.text.len());
        if text.len() <= room && self.dropped == 0 {
            self.text.push_str(text);
            return;
        }
        let kept = truncate(text, room);
        self.text.push_str(kept);
        self.dropped += text.len() - kept.len();
    }

    pub fn finish(self) -> String {
        let mut text = self.text;
        if self.dropped > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            // The worker stops sending once over the limit, so only the limit is known here.
            text.push_str(&format!(
                "[output truncated: the output exceeded the {}-byte limit]",
                self.limit
            ));
        }
        text
    }
}

/// Checks that the Deno binary at `deno` runs and reports its version.
pub async fn deno_version(deno: &Path) -> Result<String, std::io::Error> {
    let out = tokio::process::Command::new(deno)
        .arg("--version")
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .await?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheduler state of a process (`T`: stopped), from /proc.
    fn proc_state(pid: u32) -> String {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        after
            .split_whitespace()
            .next()
            .unwrap_or("gone")
            .to_string()
    }

    async fn wait_for_state(pid: u32, stopped: bool) {
        for _ in 0..200 {
            if (proc_state(pid) == "T") == stopped {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "process {pid} did not become stopped={stopped}: {}",
            proc_state(pid)
        );
    }

    #[tokio::test]
    async fn pauses_stop_starting_groups_until_the_last_one_ends() {
        let spawn = || {
            tokio::process::Command::new("sleep")
                .arg("60")
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
                .expect("sleep runs")
        };
        let (listed_child, later_child) = (spawn(), spawn());
        let (listed, later) = (listed_child.id().unwrap(), later_child.id().unwrap());
        let starting = Starting::default();
        let entry = starting.list(listed);

        let first = starting.pause();
        wait_for_state(listed, true).await;
        // Listed during a pause: a refill the pause has already let through, not stopped.
        let later_entry = starting.list(later);
        let second = starting.pause();
        wait_for_state(later, true).await;
        drop(first);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            proc_state(listed),
            "T",
            "resumed while a pause is still held"
        );
        drop(second);
        wait_for_state(listed, false).await;
        wait_for_state(later, false).await;

        // A start that ends while paused leaves nothing stopped behind.
        let third = starting.pause();
        wait_for_state(listed, true).await;
        drop(entry);
        wait_for_state(listed, false).await;
        drop((third, later_entry, listed_child, later_child));
    }

    #[test]
    fn output_is_capped_with_a_marker() {
        let mut out = OutputBuffer::new(10);
        out.push(Stream::Stdout, "12345");
        out.push(Stream::Stdout, "678901234");
        out.push(Stream::Stderr, "zz");
        let text = out.finish();
        assert_eq!(
            text,
            "1234567890\n[output truncated: the output exceeded the 10-byte limit]"
        );
    }

    #[test]
    fn truncation_respects_utf8() {
        let mut out = OutputBuffer::new(4);
        out.push(Stream::Stdout, "aé€");
        let text = out.finish();
        assert!(text.starts_with("aé\n[output truncated"), "{text}");
    }

    #[test]
    fn oom_is_named() {
        let msg = diagnose_exit(
            None,
            "\n#\n# Fatal JavaScript out of memory: Reached heap limit\n",
            64,
        );
        assert!(msg.starts_with("out of memory"), "{msg}");
    }

    #[test]
    fn user_errors_keep_the_stack_once() {
        let e = proto::UserError {
            name: "Error".into(),
            message: "boom".into(),
            stack: Some("Error: boom\n    at <user code>:1:7".into()),
        };
        assert_eq!(
            describe_user_error(Some(e)),
            "Error: boom\n    at <user code>:1:7"
        );
    }
}
