//! One execution from request to report: admission (the slots and the queue, shared fairly
//! between principals: [`admission`]), the client session's workspace ([`workspaces`]), the
//! client session's worker process for the language (a lane in it), the host-call side (a short dispatch: every host call
//! first spends from the execution's host-call budget, then tool calls go through the broker's
//! `Gate` and catalogue look-ups to [`directory`], within what the execution may call), the end
//! of an execution that keeps calling long after its budget, cancellation, the servers its
//! `allowedTools` names connected ahead of its calls, sampling from code (through the
//! execution's `ask::Asking`), and the execution's own record (report, audit record, metrics). It holds no policy and no transport: processes
//! are `sandbox`'s, decisions `broker`'s, downstream servers `upstream`'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use prometheus_client::metrics::gauge::Gauge;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::ask::sampling::{self, SampleRequest};
use crate::ask::{AskLimits, Asking, ClientLine};
use crate::broker::gate::{
    CallCounts, CallReport, ExecutionCalls, Gate, OtherToolCalls, ToolCallStat,
};
use crate::broker::{Allowlist, Reach};
use crate::catalog::directory::{
    self, LookupError, SearchQuery, SearchResult, ServerList, SkillEntry, Viewer,
};
use crate::config::settings::{PrincipalShare, Settings};
use crate::ops::audit::{self, AuditLog, ExecutionRecord};
use crate::ops::metrics::{Metrics, Readiness};
use crate::pii::Vault;
use crate::sandbox::host::HostCalls;
use crate::sandbox::launch::WorkerConfig;
use crate::sandbox::outcome::{CapturedOutput, EndKind, OutputBuffer};
use crate::sandbox::pool::{ProcessPolicy, ProcessPool, Sessions};
use crate::sandbox::proto::{HostRequest, Language};
use crate::sandbox::runtimes::{self, InstallState};
use crate::sandbox::tap::OutputTap;
use crate::upstream::UpstreamPool;
use crate::workspace::{Space, files, skills};

mod admission;
mod session;
mod skill_calls;
mod workspaces;

use admission::Admission;
pub(crate) use session::STDIO_SESSION;
pub(crate) use workspaces::{Unavailable, Workspaces};

/// What the client asked to run.
#[derive(Debug, Clone)]
pub(crate) struct ExecutionRequest {
    pub language: Language,
    pub code: String,
    pub allowed_tools: Vec<String>,
    pub timeout_ms: Option<u64>,
    /// The client session it runs for (rate limits, audit, its share of the slots, its
    /// workspace).
    pub session: String,
    /// Cancelled when the client cancels the request: the worker is killed.
    pub cancel: CancellationToken,
    /// The client, for the questions the execution asks it (sampling, approvals, relayed
    /// questions of downstream servers).
    pub client: Arc<ClientLine>,
    /// Set when it runs as an MCP task (see `front::tasks`): a longer cap on its timeout, and
    /// a time by which it ends whatever held it up.
    pub task: Option<TaskTime>,
    /// Where what the code prints also goes while it runs (the front reports it live).
    pub live: Arc<OutputTap>,
    /// The client session's token vault when personal data is tokenised (`pii`): questions to
    /// the client are tokenised, tokens in the calls code makes are put back.
    pub pii: Option<Arc<Vault>>,
}

/// The time of an execution run as a task.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskTime {
    /// The longest `timeoutMs` it may ask for (`task_max_ms`, instead of `max_timeout_ms`).
    pub longest: Duration,
    /// When it is stopped, whatever held it up: the queue, or answers awaited from the client
    /// (which its timeout does not count).
    pub ends_by: Instant,
}

/// What the client gets back (the `structuredContent` of an execution).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutionReport {
    pub success: bool,
    pub output: CapturedOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    pub execution_time_ms: u64,
    /// The calls sent, in order; at most `gate::MAX_CALLS_LISTED`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls_made: Vec<String>,
    /// Calls sent beyond those `tool_calls_made` lists.
    #[serde(skip_serializing_if = "is_zero")]
    pub tool_calls_not_listed: u32,
    /// Per tool; at most `gate::MAX_SUMMARY_TOOLS` tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_call_summary: Vec<ToolCallStat>,
    /// The calls of every tool beyond those `tool_call_summary` lists, summed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_summary_rest: Option<OtherToolCalls>,
    /// Sampling requests sent to the client (`llm.ask`/`llm.think` and relayed ones).
    #[serde(skip_serializing_if = "is_zero")]
    pub sampling_rounds: u32,
    /// The `maxTokens` those requests asked for, summed (MCP sampling reports no usage).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub sampling_tokens: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// What an execution's reply may show (`reply_budget_bytes`, `media_limit_bytes`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyLimits {
    pub budget_bytes: usize,
    pub media_bytes: usize,
}

/// Worker processes alive, by language.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkerProcessCounts {
    pub typescript_sessions: usize,
    pub typescript_spare: usize,
    pub python_sessions: usize,
    pub python_spare: usize,
}

/// Counters for `health`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutionCounters {
    /// Isolates prepared and waiting, over every TypeScript worker process.
    pub warm_typescript_workers: usize,
    /// The same for Python.
    pub warm_python_workers: usize,
    /// Isolates each worker process keeps prepared.
    pub pool_size_typescript: usize,
    pub pool_size_python: usize,
    /// Worker processes alive, by language: bound to a client session, and spare.
    pub worker_processes: WorkerProcessCounts,
    pub running: usize,
    pub queued: usize,
    pub max_queued: usize,
    pub completed: u64,
    pub failed: u64,
}

/// What the app hands an executor: where tool calls go, where catalogue look-ups go, and where
/// the execution records go.
pub(crate) struct Wiring {
    pub gate: Arc<Gate>,
    pub upstream: Arc<UpstreamPool>,
    pub audit: Arc<AuditLog>,
    pub metrics: Arc<Metrics>,
    /// The project's workspace, when workspaces are on and it could be opened.
    pub space: Option<Arc<Space>>,
}

/// An execution as it ended: the client's report and what the audit and metrics record of it.
struct Finished {
    report: ExecutionReport,
    /// How it ended, as metrics and the audit name it (`ok`, `refused`, `timeout`, ...).
    outcome: &'static str,
    /// The worker process's peak resident memory, when it ran in one.
    peak_memory_bytes: Option<u64>,
    counts: CallCounts,
    /// The worker process it ran in.
    worker_pid: Option<u32>,
}

pub struct Executor {
    settings: Arc<Settings>,
    typescript: Arc<ProcessPool>,
    python: Arc<ProcessPool>,
    gate: Arc<Gate>,
    upstream: Arc<UpstreamPool>,
    audit: Arc<AuditLog>,
    metrics: Arc<Metrics>,
    workspaces: Arc<Workspaces>,
    ids: AtomicU64,
    admission: Arc<Admission>,
    /// Whether the sandbox runtimes are installed yet (`serve` may be installing them).
    runtimes: runtimes::Readiness,
    /// What an HTTP principal may hold of the slots and the queue (the stdio client: all).
    principal_share: PrincipalShare,
    /// Executions running: the gauge `/metrics` serves (beside the queue's, [`Admission`]'s).
    running: Gauge,
    completed: AtomicU64,
    failed: AtomicU64,
}

impl Executor {
    /// An executor; for `serve` (`serving`: how many client sessions it has), spare worker
    /// processes are kept started (see [`crate::sandbox::pool`]).
    pub(crate) fn new(
        settings: Arc<Settings>,
        worker: WorkerConfig,
        wiring: Wiring,
        serving: Option<Sessions>,
    ) -> Self {
        let warm = serving.is_some();
        let policy = |stock, max_lanes, spare_from_start| ProcessPolicy {
            stock,
            max_lanes,
            max_executions: settings.worker_process_executions,
            max_age: settings.worker_process_lifetime,
            max_sessions: settings.max_concurrent_executions + 4,
            spare_from_start,
            sessions: serving.unwrap_or(Sessions::Many),
        };
        let ts_lanes = settings.max_lanes_typescript();
        let ts_policy = policy(settings.pool_size_typescript, ts_lanes, true);
        let py_policy = policy(settings.pool_size_python, settings.max_lanes_python, false);
        let (running, waiting) = wiring.metrics.execution_gauges();
        Executor {
            runtimes: worker.runtimes.clone(),
            typescript: ProcessPool::start(worker.clone(), Language::Typescript, ts_policy, warm),
            python: ProcessPool::start(worker, Language::Python, py_policy, warm),
            admission: Admission::new(
                settings.max_concurrent_executions,
                settings.max_queued_executions,
                waiting,
            ),
            principal_share: settings.principal_share(),
            workspaces: Arc::new(Workspaces::new(&settings, wiring.space)),
            settings,
            gate: wiring.gate,
            upstream: wiring.upstream,
            audit: wiring.audit,
            metrics: wiring.metrics,
            ids: AtomicU64::new(0),
            running,
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    pub(crate) fn counters(&self) -> ExecutionCounters {
        let (typescript_sessions, typescript_spare) = self.typescript.process_counts();
        let (python_sessions, python_spare) = self.python.process_counts();
        ExecutionCounters {
            warm_typescript_workers: self.typescript.ready_isolates(),
            warm_python_workers: self.python.ready_isolates(),
            pool_size_typescript: self.typescript.stock(),
            pool_size_python: self.python.stock(),
            worker_processes: WorkerProcessCounts {
                typescript_sessions,
                typescript_spare,
                python_sessions,
                python_spare,
            },
            running: usize::try_from(self.running.get()).unwrap_or(0),
            queued: self.admission.counts().1,
            max_queued: self.settings.max_queued_executions,
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    /// Runs one execution. Never panics on bad input: every failure becomes a report. Each
    /// execution is audited and counted, whatever its end.
    pub(crate) async fn execute(&self, request: ExecutionRequest) -> ExecutionReport {
        let started = Instant::now();
        let number = self.ids.fetch_add(1, Ordering::Relaxed) + 1;
        let execution_id = format!("{}-{number}", std::process::id());
        let Finished {
            report,
            outcome,
            peak_memory_bytes,
            counts,
            worker_pid,
        } = self
            .execute_inner(&request, &execution_id, number, started)
            .await;
        let counter = if report.success {
            &self.completed
        } else {
            &self.failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let language = request.language.as_str();
        self.metrics.execution(language, outcome, started.elapsed());
        self.audit.execution(&ExecutionRecord {
            execution_id: &execution_id,
            session: &request.session,
            language,
            code_sha256: audit::code_digest(&request.code),
            code_bytes: request.code.len(),
            allowed_tools: audit::Names(&request.allowed_tools),
            duration_ms: report.execution_time_ms,
            outcome,
            tool_calls: counts.calls,
            tool_calls_refused: counts.refused,
            host_calls: counts.host_calls,
            peak_memory_bytes,
            worker_pid,
        });
        report
    }

    /// The settings executions run with.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The project's workspace, when there is one (the command line's `search`).
    pub fn space(&self) -> Option<&Arc<Space>> {
        self.workspaces.project()
    }

    /// The workspaces, and whose each client session uses.
    pub(crate) fn workspaces(&self) -> &Workspaces {
        &self.workspaces
    }

    /// How long the client's answer to a question is waited for.
    pub(crate) fn ask_timeout(&self) -> Duration {
        self.settings.ask_timeout
    }

    /// What a reply may show: the reply budget and the media cap, in bytes.
    pub(crate) fn reply_limits(&self) -> ReplyLimits {
        ReplyLimits {
            budget_bytes: self.settings.reply_budget_bytes,
            media_bytes: self.settings.media_limit_bytes,
        }
    }

    /// The upstream pool and the server-wide policy: what the LLM's own look-ups
    /// (`searchTools`, `getToolSchema`, `listServers`) answer from, and within.
    pub(crate) fn directory(&self) -> (&UpstreamPool, Reach<'_>) {
        (&self.upstream, Reach::policy(self.gate.policy()))
    }

    /// Waits (at most `within`) for the runtimes a serving process is installing: why not,
    /// when they failed or are still on their way.
    async fn runtimes_installed(&self, within: Duration) -> Result<(), String> {
        match tokio::time::timeout(within, self.runtimes.wait()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(match self.runtimes.now() {
                InstallState::Installing(step) => format!(
                    "the sandbox runtimes are still being installed ({step}); run the code again \
                     in a moment"
                ),
                InstallState::Failed(why) => why,
                InstallState::Ready => "the sandbox runtimes were not ready in time".to_owned(),
            }),
        }
    }

    async fn execute_inner(
        &self,
        request: &ExecutionRequest,
        execution_id: &str,
        number: u64,
        started: Instant,
    ) -> Finished {
        let fail = |error: String| {
            let report = ExecutionReport {
                success: false,
                output: CapturedOutput::default(),
                error: Some(error),
                result: None,
                execution_time_ms: started.elapsed().as_millis() as u64,
                tool_calls_made: vec![],
                tool_calls_not_listed: 0,
                tool_call_summary: vec![],
                tool_call_summary_rest: None,
                sampling_rounds: 0,
                sampling_tokens: 0,
            };
            Finished {
                report,
                outcome: "refused",
                peak_memory_bytes: None,
                counts: CallCounts::default(),
                worker_pid: None,
            }
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
            Err(e) => return fail(format!("allowedTools: {e}")),
        };
        let longest = request
            .task
            .map_or(self.settings.max_timeout, |task| task.longest);
        let timeout = match request.timeout_ms {
            Some(0) => return fail("timeoutMs must be positive".into()),
            Some(ms) => Duration::from_millis(ms).min(longest),
            None => self.settings.default_timeout,
        };
        let ends_by = request.task.map(|task| task.ends_by);
        let share = if request.session == STDIO_SESSION {
            PrincipalShare {
                running: self.settings.max_concurrent_executions,
                queued: self.settings.max_queued_executions,
            }
        } else {
            self.principal_share
        };
        let _permit = tokio::select! {
            permit = self.admission.admit(&request.session, share) => match permit {
                Ok(permit) => permit,
                Err(e) => return fail(e),
            },
            () = request.cancel.cancelled() => {
                return fail("execution cancelled by the client before it started".into());
            }
            () = until(ends_by) => {
                return fail(task_time_out(longest, "while it waited for an execution slot"));
            }
        };
        self.running.inc();
        let _running = scopeguard(|| {
            self.running.dec();
        });
        // The servers `allowedTools` names start connecting while the worker starts; the code
        // waits only for those it calls.
        let reach = Reach::execution(self.gate.policy(), &allowlist);
        let named = servers_named(&request.allowed_tools, self.upstream.server_names(), &reach);
        self.upstream.warm(&named);
        let pool = match request.language {
            Language::Typescript => &self.typescript,
            Language::Python => &self.python,
        };
        if let Err(why) = self.runtimes_installed(timeout).await {
            return fail(why);
        }
        let process = match pool.acquire(&request.session).await {
            Ok(process) => process,
            Err(e) => return fail(format!("could not start a sandbox worker: {e}")),
        };
        // Cancelled by the client, or by the host-call budget (see `ExecutionCalls::spend`).
        let stop = request.cancel.child_token();
        let asking = Arc::new(
            Asking::new(
                request.client.clone(),
                AskLimits {
                    sampling_rounds: self.settings.sampling_rounds_per_execution,
                    sampling_tokens: self.settings.sampling_tokens_per_execution,
                    elicitations: self.settings.elicitations_per_execution,
                    relayed_bytes: self.settings.relayed_question_max_bytes,
                },
                execution_id,
                &request.session,
                self.audit.clone(),
            )
            .with_pii(request.pii.clone()),
        );
        let host = Arc::new(HostSide {
            gate: self.gate.clone(),
            upstream: self.upstream.clone(),
            workspaces: self.workspaces.clone(),
            session: request.session.clone(),
            space: OnceCell::new(),
            calls: ExecutionCalls::new(
                asking,
                execution_id,
                allowlist,
                self.settings.max_tool_calls_per_execution,
                stop.clone(),
            )
            .with_pii(request.pii.clone()),
        });
        let run = process.run(
            number,
            &request.code,
            timeout,
            OutputBuffer::new(self.settings.output_limit_bytes).tapped(request.live.clone()),
            host.clone(),
            stop.clone(),
        );
        tokio::pin!(run);
        let (mut outcome, out_of_time) = tokio::select! {
            outcome = &mut run => (outcome, false),
            () = until(ends_by) => {
                stop.cancel();
                (run.await, true)
            }
        };
        let mut end = outcome.end.as_str();
        // Stopped for its time (not ended just then on its own, nor cancelled by the client).
        if out_of_time && outcome.end == EndKind::Cancelled && !request.cancel.is_cancelled() {
            end = "timeout";
            outcome.success = false;
            outcome.error = Some(task_time_out(longest, "and was stopped"));
        } else if host.calls.stopped_by_budget() && !request.cancel.is_cancelled() {
            end = "host_call_limit";
            outcome.success = false;
            outcome.error = Some(format!(
                "execution stopped: it kept making host calls after reaching its limit of {} (tool calls, refused calls and look-ups)",
                self.settings.max_tool_calls_per_execution
            ));
        }
        let CallReport {
            made,
            not_listed,
            summary,
            rest,
            counts,
        } = host.calls.take_report();
        let sampling = host.calls.sampling_spent();
        let report = ExecutionReport {
            success: outcome.success,
            output: outcome.output,
            error: outcome.error,
            result: outcome.value,
            execution_time_ms: started.elapsed().as_millis() as u64,
            tool_calls_made: made,
            tool_calls_not_listed: not_listed,
            tool_call_summary: summary,
            tool_call_summary_rest: rest,
            sampling_rounds: sampling.rounds,
            sampling_tokens: sampling.tokens,
        };
        Finished {
            report,
            outcome: end,
            peak_memory_bytes: outcome.peak_memory_bytes,
            counts,
            worker_pid: process.pid(),
        }
    }
}

/// The configured servers an execution's `allowedTools` names by their exact name, with
/// `mcp__<server>__<tool>` or `mcp__<server>__*` (and that it may start, by `reach`): those it
/// is about to call. A pattern whose server part is a glob (`*`, `mcp__*__read_*`) names none:
/// connecting every server it could reach would start servers the code likely never calls.
fn servers_named<'a>(
    allowed_tools: &[String],
    servers: impl Iterator<Item = &'a str>,
    reach: &Reach<'_>,
) -> Vec<&'a str> {
    servers
        .filter(|server| {
            !server.contains('*')
                && allowed_tools.iter().any(|pattern| {
                    pattern
                        .strip_prefix("mcp__")
                        .and_then(|rest| rest.strip_prefix(*server))
                        .and_then(|rest| rest.strip_prefix("__"))
                        .is_some_and(|tool| !tool.is_empty())
                })
                && reach.may_start(server)
        })
        .collect()
}

/// Waits until `at`, or forever without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The error of a task that reached its time.
fn task_time_out(longest: Duration, what: &str) -> String {
    format!(
        "the task reached its limit of {} ms (task_max_ms, counted from its start, time in the queue and waiting for answers included) {what}",
        longest.as_millis()
    )
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

impl Readiness for Executor {
    fn readiness(&self) -> Result<Value, String> {
        let counters = self.counters();
        if counters.queued >= counters.max_queued {
            return Err(format!(
                "busy: {} executions queued (the limit)",
                counters.queued
            ));
        }
        serde_json::to_value(&counters)
            .map(|c| serde_json::json!({ "ready": true, "executions": c }))
            .map_err(|e| e.to_string())
    }
}

/// Answers one execution's host calls.
struct HostSide {
    gate: Arc<Gate>,
    upstream: Arc<UpstreamPool>,
    /// The workspaces, and the client session whose this execution uses (files and skills).
    workspaces: Arc<Workspaces>,
    session: String,
    /// That workspace, once a call needed it (created then when missing).
    space: OnceCell<Result<Arc<Space>, Unavailable>>,
    calls: ExecutionCalls,
}

impl HostSide {
    /// The session's workspace (created when missing), opened once per execution.
    async fn space(&self) -> Result<Arc<Space>, Unavailable> {
        self.space
            .get_or_init(|| async {
                match self.workspaces.of(&self.session, true).await {
                    Ok(Some(space)) => Ok(space),
                    Ok(None) => Err(Unavailable::Failed),
                    Err(unavailable) => Err(unavailable),
                }
            })
            .await
            .clone()
    }

    /// The session's workspace if it has one, for look-ups (which never create one).
    async fn existing_space(&self) -> Option<Arc<Space>> {
        match self.space.get() {
            Some(opened) => opened.clone().ok(),
            None => self.workspaces.existing(&self.session).await,
        }
    }

    /// What this execution may call, see and cause to start.
    fn reach(&self) -> Reach<'_> {
        self.calls.reach(self.gate.policy())
    }

    /// A catalogue look-up: it spends one host call, then answers within the execution's
    /// reach (it never starts a server the execution may not call).
    async fn look_up(&self, request: HostRequest) -> Result<Value, String> {
        self.calls.spend().map_err(|refusal| refusal.to_string())?;
        let reach = self.reach();
        match request {
            HostRequest::SearchTools(query) => {
                let space = self.existing_space().await;
                as_value(search_catalog(&self.upstream, &reach, space.as_ref(), &query).await)
            }
            HostRequest::GetToolSchema { name } if skill_module(&name).is_some() => {
                let space = self.space().await.map_err(|u| u.for_skills());
                skill_schema(space, name).await
            }
            HostRequest::GetToolSchema { name } => {
                let viewer = Viewer {
                    reach,
                    shown: Reach::policy(self.gate.policy()),
                };
                as_value(directory::schema_for(&self.upstream, &viewer, &name).await)
            }
            HostRequest::ListServers => as_value(Ok::<_, String>(ServerList {
                servers: directory::servers_within(&self.upstream, &reach).await,
            })),
            _ => Err("not a look-up".into()),
        }
    }
}

impl HostCalls for HostSide {
    fn handle(self: Arc<Self>, request: HostRequest) -> BoxFuture<'static, Result<Value, String>> {
        async move {
            match request {
                HostRequest::CallTool { target, args, raw } => {
                    self.gate.call(&self.calls, target, args, raw).await
                }
                HostRequest::Sample(params) => {
                    self.calls.spend().map_err(|refusal| refusal.to_string())?;
                    let request: SampleRequest = serde_json::from_value(params)
                        .map_err(|e| format!("llm: invalid request: {e}"))?;
                    sampling::sample_for_code(self.calls.asking(), request).await
                }
                content @ (HostRequest::ListResources { .. }
                | HostRequest::ReadResource { .. }
                | HostRequest::ListPrompts { .. }
                | HostRequest::GetPrompt { .. }) => self.gate.content(&self.calls, content).await,
                skill @ (HostRequest::SaveSkill { .. } | HostRequest::LoadSkills { .. }) => {
                    self.calls.spend().map_err(|refusal| refusal.to_string())?;
                    let space = self.space().await.map_err(|u| u.for_skills());
                    skill_calls::skill_call(space, skill).await
                }
                HostRequest::Workspace(call) => {
                    self.calls.spend().map_err(|refusal| refusal.to_string())?;
                    let space = self.space().await.map_err(|u| u.for_files())?;
                    tokio::task::spawn_blocking(move || files::answer(&space, call))
                        .await
                        .map_err(|e| format!("workspace: the operation failed: {e}"))?
                }
                lookup => self.look_up(lookup).await,
            }
        }
        .boxed()
    }

    fn paused(&self) -> Duration {
        self.calls.asking().waited()
    }
}

/// The skill a `getToolSchema` name names (`skills/<name>.ts`, `skills/<name>.py`, `skills/<name>`).
pub(crate) fn skill_module(asked: &str) -> Option<&str> {
    let rest = asked.strip_prefix("skills/")?;
    Some(
        rest.strip_suffix(".ts")
            .or_else(|| rest.strip_suffix(".py"))
            .unwrap_or(rest),
    )
}

/// `getToolSchema("skills/<name>.ts")`: the skill's description, exports and import line, as
/// `directory::skill_schema` shows them.
pub(crate) async fn skill_schema(
    space: Result<Arc<Space>, String>,
    asked: String,
) -> Result<Value, String> {
    let space = space?;
    let name = skill_module(&asked).unwrap_or_default().to_string();
    let shown = tokio::task::spawn_blocking(move || skills::show(&space, &name))
        .await
        .map_err(|e| format!("skills: {e}"))?
        .map_err(|e| e.to_string())?;
    Ok(directory::skill_schema(&skill_entry(shown.0)))
}

/// A saved skill as the catalogue sees it.
fn skill_entry(meta: skills::SkillMeta) -> SkillEntry {
    SkillEntry {
        module: meta.module(),
        import: meta.import_line(),
        language: meta.language.as_str(),
        name: meta.name,
        description: meta.description,
        exports: meta.exports,
        saved_at: meta.saved_at,
    }
}

/// The project's saved skills as searches see them (none without a workspace).
async fn skill_entries(space: Option<&Arc<Space>>) -> Vec<SkillEntry> {
    let Some(space) = space.cloned() else {
        return Vec::new();
    };
    let listed = tokio::task::spawn_blocking(move || skills::list(&space)).await;
    listed
        .unwrap_or_default()
        .into_iter()
        .map(skill_entry)
        .collect()
}

/// A search of the downstream tools `reach` may call and of the project's skills in `space`:
/// how the LLM's (`searchTools`), code's (`searchTools`, `search_tools`) and the operator's
/// (`code-executor search`) searches are all answered.
pub(crate) async fn search_catalog(
    upstream: &UpstreamPool,
    reach: &Reach<'_>,
    space: Option<&Arc<Space>>,
    query: &SearchQuery,
) -> Result<SearchResult, LookupError> {
    let skills = skill_entries(space).await;
    directory::search_within(upstream, reach, query, &skills).await
}

/// The operator's search (`code-executor search`): every tool, every server connected as
/// needed, and the project's skills.
pub async fn search_everything(
    upstream: &UpstreamPool,
    space: Option<&Arc<Space>>,
    query: &SearchQuery,
) -> Result<SearchResult, LookupError> {
    search_catalog(upstream, &Reach::everything(), space, query).await
}

/// A look-up's answer as the JSON the code receives, or its error's message.
fn as_value<T: Serialize, E: std::fmt::Display>(answer: Result<T, E>) -> Result<Value, String> {
    answer
        .map_err(|e| e.to_string())
        .and_then(|found| serde_json::to_value(found).map_err(|e| e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::Policy;

    fn named(allowed: &[&str], deny: &[&str]) -> Vec<String> {
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        let deny: Vec<String> = deny.iter().map(|s| s.to_string()).collect();
        let policy = Policy::new(None, &deny).unwrap();
        let list = Allowlist::new(&allowed).unwrap();
        let reach = Reach::execution(&policy, &list);
        let servers = ["git", "fx", "fx__admin", "time"];
        servers_named(&allowed, servers.into_iter(), &reach)
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn only_servers_named_exactly_are_connected_ahead() {
        assert_eq!(
            named(&["mcp__git__git_log", "mcp__time__*"], &[]),
            ["git", "time"]
        );
        // Globs over server names name no server; nor do names that match nothing.
        for allowed in [
            &["*"][..],
            &["mcp__*__read"],
            &["mcp__g*__git_log"],
            &["git"],
        ] {
            assert!(named(allowed, &[]).is_empty(), "{allowed:?}");
        }
        assert!(named(&["mcp__git__"], &[]).is_empty());
        // `fx__admin`'s tools are `mcp__fx__admin__*`, which also names a tool of `fx`.
        assert_eq!(named(&["mcp__fx__admin__*"], &[]), ["fx", "fx__admin"]);
        assert_eq!(named(&["mcp__fx__*"], &[]), ["fx"]);
    }

    #[test]
    fn a_server_the_execution_may_not_start_is_not_connected_ahead() {
        assert_eq!(
            named(&["mcp__git__git_log", "mcp__time__now"], &["mcp__git__*"]),
            ["time"]
        );
    }
}
