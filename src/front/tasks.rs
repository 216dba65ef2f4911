//! Long work as MCP tasks (the `io.modelcontextprotocol/tasks` extension): an
//! `executeTypescript`/`executePython` call from a client that declares the extension with its
//! request and is still running after [`INLINE_FOR`] (or asks its client something before then)
//! is answered with a task handle (`resultType: "task"`) instead of its result; the execution
//! goes on, its timeout capped by `task_max_ms` instead of `max_timeout_ms`, and the client
//! polls `tasks/get` for its status and, once `completed`, the very `CallToolResult` the call
//! would have returned (an `isError` one included). Questions the code asks meanwhile (`llm.ask`,
//! approvals, a downstream server's questions) make the task `input_required` with them in
//! `inputRequests`, keyed uniquely over the task's life, and `tasks/update` answers them.
//! `tasks/cancel` ends the execution (its isolate, or its process when that does not end) and the
//! task becomes `cancelled` once it has.
//!
//! Tasks live in memory (a restart forgets them), each bound to the client session that created
//! it (over HTTP the principal the connection guard admitted): for another session an id is
//! unknown, the same error as for an id never issued. A session holds at most
//! `max_tasks_per_session`; a finished task's result is kept `task_ttl_ms` after it ends.
//! Without the extension on the request, or with `max_tasks_per_session = 0`, calls run as
//! they always did.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult,
    DetailedTask, GetTaskResult, InputRequest, InputRequests, InputResponses, JsonObject,
    ServerCapabilities, TASKS_EXTENSION_ID, Task, TaskPayload, TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Caller, Front, execute};

use crate::ask::client::Question;
use crate::config::settings::Settings;
use crate::executor::TaskTime;
use crate::sandbox::tap::OutputTap;

/// How long a call that could become a task is waited for before it becomes one: a short
/// execution still answers in the request, without polling.
const INLINE_FOR: Duration = Duration::from_secs(1);

/// The polling interval suggested to clients.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The limits of tasks, from the settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct TaskLimits {
    /// The longest a task runs (`task_max_ms`).
    pub longest: Duration,
    /// How long a finished task is kept (`task_ttl_ms`).
    pub keep: Duration,
    /// Tasks one session may hold (`max_tasks_per_session`); 0: no tasks.
    pub per_session: usize,
}

impl TaskLimits {
    pub(super) fn of(settings: &Settings) -> Self {
        TaskLimits {
            longest: settings.task_max,
            keep: settings.task_ttl,
            per_session: settings.max_tasks_per_session,
        }
    }
}

/// One task.
struct Entry {
    session: String,
    /// Its id, timestamps, ttl and poll interval as the client sees them.
    task: Task,
    created: Instant,
    /// When it ended, and how (`completed` with the result, or `cancelled`).
    ended: Option<(Instant, TaskPayload)>,
    /// The questions waiting for the client's answers, by key.
    questions: BTreeMap<String, (InputRequest, oneshot::Sender<Value>)>,
    /// Keys issued so far (each key is used once over the task's life).
    asked: u32,
    /// Ends the execution.
    cancel: CancellationToken,
    cancel_requested: bool,
}

impl Entry {
    fn touch(&mut self) {
        self.task.last_updated_at = now_iso();
    }

    /// The task as `tasks/get` reports it now.
    fn detailed(&mut self) -> DetailedTask {
        // A question the execution stopped waiting for (timed out) is no longer asked.
        self.questions.retain(|_, (_, answer)| !answer.is_closed());
        let payload = match &self.ended {
            Some((_, payload)) => payload.clone(),
            None if !self.questions.is_empty() => TaskPayload::InputRequired {
                input_requests: self
                    .questions
                    .iter()
                    .map(|(key, (request, _))| (key.clone(), request.clone()))
                    .collect::<InputRequests>(),
            },
            None => TaskPayload::Working,
        };
        let mut task = self.task.clone();
        task.status_message = match &payload {
            TaskPayload::InputRequired { input_requests } => Some(format!(
                "the code waits for the client's answer to {} question(s)",
                input_requests.len()
            )),
            TaskPayload::Working if self.cancel_requested => {
                Some("cancelling: the execution is being stopped".into())
            }
            TaskPayload::Cancelled => {
                Some("cancelled by the client; the execution was stopped".into())
            }
            _ => None,
        };
        DetailedTask::new(task, payload)
    }
}

/// The tasks of every session. Shared by every request.
pub(super) struct Tasks {
    limits: TaskLimits,
    entries: Mutex<HashMap<String, Entry>>,
}

/// No task of this session has that id.
fn unknown(id: &str, keep: Duration) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "unknown task `{id}`: no task of this client has that id (a finished task is kept {} s after it ends; tasks do not survive a restart of the server)",
            keep.as_secs()
        ),
        None,
    )
}

fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Tasks {
    pub(super) fn new(limits: TaskLimits) -> Self {
        Tasks {
            limits,
            entries: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().expect("tasks lock")
    }

    /// `capabilities` with the tasks extension declared, when tasks are on.
    pub(super) fn declare(&self, mut capabilities: ServerCapabilities) -> ServerCapabilities {
        if self.limits.per_session > 0 {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(TASKS_EXTENSION_ID.to_string(), JsonObject::new());
        }
        capabilities
    }

    /// Whether a call of `tool` may become a task: tasks are on, the tool runs code, and the
    /// client declared the extension (with the request; a handshake-era client also when it
    /// connected, as rmcp reads it).
    pub(super) fn may_take(&self, tool: &str, context: &RequestContext<RoleServer>) -> bool {
        self.limits.per_session > 0
            && (tool == execute::TYPESCRIPT || tool == execute::PYTHON)
            && context
                .client_capabilities()
                .is_some_and(|declared| declared.supports_tasks())
    }

    /// Drops the tasks whose results have been kept long enough.
    fn sweep(entries: &mut HashMap<String, Entry>, keep: Duration, now: Instant) {
        entries.retain(|_, entry| {
            entry
                .ended
                .as_ref()
                .is_none_or(|(at, _)| now.saturating_duration_since(*at) < keep)
        });
    }

    /// Opens a task for `session` whose execution `cancel` ends; the oldest finished task of
    /// the session makes room at the limit. Refused when all the session's tasks are running.
    fn open(
        &self,
        session: &str,
        cancel: CancellationToken,
        now: Instant,
    ) -> Result<String, String> {
        let mut entries = self.lock();
        Self::sweep(&mut entries, self.limits.keep, now);
        let held = entries.values().filter(|e| e.session == session).count();
        if held >= self.limits.per_session {
            let oldest_finished = entries
                .iter()
                .filter(|(_, e)| e.session == session)
                .filter_map(|(id, e)| e.ended.as_ref().map(|(at, _)| (*at, id.clone())))
                .min();
            match oldest_finished {
                Some((_, id)) => {
                    entries.remove(&id);
                }
                None => {
                    return Err(format!(
                        "this client already has {held} tasks running, the limit (max_tasks_per_session); wait for one to end (tasks/get) or cancel one (tasks/cancel), then call again"
                    ));
                }
            }
        }
        let id = uuid::Uuid::new_v4().to_string();
        let stamp = now_iso();
        let task = Task::new(id.clone(), TaskStatus::Working, stamp.clone(), stamp)
            .with_ttl_ms(millis(self.limits.longest + self.limits.keep))
            .with_poll_interval_ms(millis(POLL_INTERVAL));
        entries.insert(
            id.clone(),
            Entry {
                session: session.to_string(),
                task,
                created: now,
                ended: None,
                questions: BTreeMap::new(),
                asked: 0,
                cancel,
                cancel_requested: false,
            },
        );
        Ok(id)
    }

    /// The task as created, for the `CreateTaskResult`.
    fn seed(&self, id: &str) -> Option<Task> {
        self.lock().get(id).map(|entry| entry.task.clone())
    }

    /// The call ended within its request: it is no task.
    fn withdraw(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Puts a question of the execution to the client.
    fn ask(&self, id: &str, question: Question) {
        let request = json!({"method": question.method, "params": question.params});
        let request = match serde_json::from_value::<InputRequest>(request) {
            Ok(request) => request,
            // Dropping its answer fails the question in the execution.
            Err(e) => return tracing::warn!("a question could not be put to the client: {e}"),
        };
        if let Some(entry) = self.lock().get_mut(id) {
            entry.asked += 1;
            let key = format!("q{}", entry.asked);
            entry.questions.insert(key, (request, question.answer));
            entry.touch();
        }
    }

    /// The execution ended with `result`: the task is `completed`, or `cancelled` when the
    /// client asked for that.
    fn finish(&self, id: &str, result: CallToolResult, now: Instant) {
        let mut entries = self.lock();
        let Some(entry) = entries.get_mut(id) else {
            return;
        };
        let payload = if entry.cancel_requested {
            TaskPayload::Cancelled
        } else {
            let result = match serde_json::to_value(&result) {
                Ok(Value::Object(object)) => object,
                _ => JsonObject::new(),
            };
            TaskPayload::Completed { result }
        };
        entry.questions.clear();
        // Kept `keep` from now on.
        let lived = now.saturating_duration_since(entry.created);
        entry.task.ttl_ms = Some(millis(lived + self.limits.keep));
        entry.task.status = payload.status();
        entry.ended = Some((now, payload));
        entry.touch();
    }

    /// The entry `id` of `session`, or the error for an unknown task.
    fn with<T>(
        &self,
        id: &str,
        session: &str,
        now: Instant,
        f: impl FnOnce(&mut Entry) -> T,
    ) -> Result<T, ErrorData> {
        let mut entries = self.lock();
        Self::sweep(&mut entries, self.limits.keep, now);
        match entries.get_mut(id) {
            Some(entry) if entry.session == session => Ok(f(entry)),
            _ => Err(unknown(id, self.limits.keep)),
        }
    }

    /// `tasks/get`.
    pub(super) fn get(&self, id: &str, session: &str) -> Result<GetTaskResult, ErrorData> {
        self.get_at(id, session, Instant::now())
    }

    fn get_at(&self, id: &str, session: &str, now: Instant) -> Result<GetTaskResult, ErrorData> {
        self.with(id, session, now, |entry| {
            GetTaskResult::new(entry.detailed())
        })
    }

    /// `tasks/update`: answers the questions asked; answers to keys not asked now are ignored.
    pub(super) fn update(
        &self,
        id: &str,
        session: &str,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        self.with(id, session, Instant::now(), |entry| {
            for (key, value) in responses {
                if let Some((_, answer)) = entry.questions.remove(&key) {
                    let _ = answer.send(value);
                }
            }
            entry.touch();
        })
    }

    /// `tasks/cancel`: ends the execution; the task is `cancelled` once it has ended.
    pub(super) fn cancel(&self, id: &str, session: &str) -> Result<(), ErrorData> {
        self.with(id, session, Instant::now(), |entry| {
            if entry.ended.is_none() && !entry.cancel_requested {
                entry.cancel_requested = true;
                // Unanswered questions fail in the execution at once.
                entry.questions.clear();
                entry.cancel.cancel();
                entry.touch();
            }
        })
    }
}

/// A call's end as its result: a handler's refusal and a failed task are `isError` results.
fn settle(ended: Result<Result<CallToolResult, String>, tokio::task::JoinError>) -> CallToolResult {
    match ended {
        Ok(Ok(result)) => result,
        Ok(Err(message)) => CallToolResult::error(vec![ContentBlock::text(message)]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("internal error: {e}"))]),
    }
}

impl Front {
    /// Runs a call that may become a task ([`Tasks::may_take`]): its result when it ends within
    /// [`INLINE_FOR`] (or its request is cancelled first), else a task handle.
    pub(super) async fn call_as_task(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        session: String,
    ) -> CallToolResponse {
        let started = Instant::now();
        let cancel = CancellationToken::new();
        let id = match self.tasks.open(&session, cancel.clone(), started) {
            Ok(id) => id,
            Err(refusal) => return CallToolResult::error(vec![ContentBlock::text(refusal)]).into(),
        };
        // Questions go into the task's `inputRequests`, whatever the client's protocol.
        let declared = context.client_capabilities().unwrap_or_default();
        let (line, mut questions) = self.rounds_line(&session, &declared);
        let limits = self.tasks.limits;
        let caller = Caller {
            session,
            cancel: cancel.clone(),
            client: Arc::new(line),
            task: Some(TaskTime {
                longest: limits.longest,
                ends_by: started + limits.longest,
            }),
            // A task reports no live output (clients poll `tasks/get`); the tap stays bounded.
            live: Arc::new(OutputTap::new()),
        };
        let front = self.clone();
        let name = request.name.to_string();
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let mut call: JoinHandle<Result<CallToolResult, String>> =
            tokio::spawn(async move { front.dispatch_for(&name, args, &caller).await });
        // A request dropped before the call became a task (an HTTP client gone) ends it.
        let dropped = cancel.clone().drop_guard();
        let first = tokio::select! {
            ended = &mut call => {
                self.tasks.withdraw(&id);
                dropped.disarm();
                return settle(ended).into();
            }
            () = context.ct.cancelled() => {
                cancel.cancel();
                let ended = (&mut call).await;
                self.tasks.withdraw(&id);
                return settle(ended).into();
            }
            Some(question) = questions.recv() => Some(question),
            () = tokio::time::sleep(INLINE_FOR) => None,
        };
        dropped.disarm();
        if let Some(question) = first {
            self.tasks.ask(&id, question);
        }
        let Some(seed) = self.tasks.seed(&id) else {
            unreachable!("a task is only removed once it has ended");
        };
        tokio::spawn(follow(self.tasks.clone(), id, call, questions));
        CallToolResponse::Task(CreateTaskResult::new(seed))
    }
}

/// Follows a task's execution to its end, putting its questions to the client; its result is
/// dropped `keep` after that.
async fn follow(
    tasks: Arc<Tasks>,
    id: String,
    mut call: JoinHandle<Result<CallToolResult, String>>,
    mut questions: mpsc::UnboundedReceiver<Question>,
) {
    let ended = loop {
        tokio::select! {
            ended = &mut call => break ended,
            Some(question) = questions.recv() => tasks.ask(&id, question),
        }
    };
    tasks.finish(&id, settle(ended), Instant::now());
    tokio::time::sleep(tasks.limits.keep).await;
    Tasks::sweep(&mut tasks.lock(), tasks.limits.keep, Instant::now());
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    fn tasks(per_session: usize) -> Tasks {
        Tasks::new(TaskLimits {
            longest: 60 * MINUTE,
            keep: 10 * MINUTE,
            per_session,
        })
    }

    fn status(tasks: &Tasks, id: &str, session: &str, now: Instant) -> Result<Value, ErrorData> {
        tasks
            .get_at(id, session, now)
            .map(|result| serde_json::to_value(result).unwrap())
    }

    #[test]
    fn a_task_is_seen_by_its_session_only() {
        let tasks = tasks(4);
        let t0 = Instant::now();
        let cancel = CancellationToken::new();
        let id = tasks.open("http-token:aaaa", cancel.clone(), t0).unwrap();
        assert_eq!(id.len(), 36, "a UUID: 122 random bits");
        let seen = status(&tasks, &id, "http-token:aaaa", t0).unwrap();
        assert_eq!(seen["status"], "working");
        assert_eq!(seen["resultType"], "complete");
        assert_eq!(seen["ttlMs"], 70 * 60 * 1000);
        assert_eq!(seen["pollIntervalMs"], 1000);
        // Another session: the same error as an id never issued, and nothing is cancelled.
        for session in ["http-token:bbbb", "http-peer:127.0.0.1", "stdio"] {
            let foreign = status(&tasks, &id, session, t0).unwrap_err();
            let never = status(&tasks, "no-such-task", session, t0).unwrap_err();
            assert_eq!(foreign.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert_eq!(
                foreign.message.replace(&id, "X"),
                never.message.replace("no-such-task", "X")
            );
            assert!(tasks.cancel(&id, session).is_err());
            assert!(tasks.update(&id, session, InputResponses::new()).is_err());
        }
        assert!(!cancel.is_cancelled());
        tasks.cancel(&id, "http-token:aaaa").unwrap();
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn a_finished_task_keeps_its_result_for_the_ttl_then_is_forgotten() {
        let tasks = tasks(4);
        let t0 = Instant::now();
        let id = tasks.open("stdio", CancellationToken::new(), t0).unwrap();
        let mut result = CallToolResult::error(vec![ContentBlock::text("the code threw")]);
        result.structured_content = Some(json!({"success": false}));
        let ended = t0 + 5 * MINUTE;
        tasks.finish(&id, result, ended);
        // An isError result is a completed task, its result the call's.
        let seen = status(&tasks, &id, "stdio", ended).unwrap();
        assert_eq!(seen["status"], "completed");
        assert_eq!(seen["result"]["isError"], true);
        assert_eq!(
            seen["result"]["structuredContent"],
            json!({"success": false})
        );
        assert_eq!(
            seen["ttlMs"],
            15 * 60 * 1000,
            "kept 10 minutes from its end"
        );
        assert!(
            status(
                &tasks,
                &id,
                "stdio",
                ended + 10 * MINUTE - Duration::from_millis(1)
            )
            .is_ok()
        );
        let gone = status(&tasks, &id, "stdio", ended + 10 * MINUTE).unwrap_err();
        assert!(gone.message.contains("kept 600 s"), "{}", gone.message);
    }

    #[test]
    fn a_session_holds_at_most_its_cap_and_finished_tasks_make_room() {
        let tasks = tasks(2);
        let t0 = Instant::now();
        let a = tasks.open("s1", CancellationToken::new(), t0).unwrap();
        let b = tasks.open("s1", CancellationToken::new(), t0).unwrap();
        // Another session has its own count.
        let other = tasks.open("s2", CancellationToken::new(), t0).unwrap();
        let refused = tasks.open("s1", CancellationToken::new(), t0).unwrap_err();
        assert!(
            refused.contains("2 tasks running") && refused.contains("max_tasks_per_session"),
            "{refused}"
        );
        // The oldest finished task gives way; running ones never do.
        tasks.finish(&b, CallToolResult::success(vec![]), t0 + MINUTE);
        tasks.finish(&other, CallToolResult::success(vec![]), t0);
        let c = tasks
            .open("s1", CancellationToken::new(), t0 + 2 * MINUTE)
            .unwrap();
        assert!(status(&tasks, &b, "s1", t0 + 2 * MINUTE).is_err());
        assert!(status(&tasks, &a, "s1", t0 + 2 * MINUTE).is_ok());
        assert!(status(&tasks, &c, "s1", t0 + 2 * MINUTE).is_ok());
        assert!(status(&tasks, &other, "s2", t0 + 2 * MINUTE).is_ok());
        assert!(tasks.open("s1", CancellationToken::new(), t0).is_err());
        // A call that ended within its request frees its place.
        tasks.withdraw(&c);
        assert!(tasks.open("s1", CancellationToken::new(), t0).is_ok());
    }

    #[test]
    fn questions_are_asked_under_keys_never_reused_and_answered_by_update() {
        let tasks = tasks(4);
        let t0 = Instant::now();
        let id = tasks.open("stdio", CancellationToken::new(), t0).unwrap();
        let question = |message: &str| {
            let (answer, answered) = oneshot::channel();
            let params = json!({"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {}}});
            (
                Question {
                    method: "elicitation/create",
                    params,
                    answer,
                },
                answered,
            )
        };
        let (first, mut first_answered) = question("one?");
        tasks.ask(&id, first);
        let seen = status(&tasks, &id, "stdio", t0).unwrap();
        assert_eq!(seen["status"], "input_required");
        assert_eq!(seen["inputRequests"]["q1"]["params"]["message"], "one?");
        // Answers to keys not asked are ignored; the asked one is delivered once.
        let answers = InputResponses::from([
            ("q9".to_string(), json!({"action": "decline"})),
            ("q1".to_string(), json!({"action": "accept", "content": {}})),
        ]);
        tasks.update(&id, "stdio", answers).unwrap();
        assert_eq!(
            first_answered.try_recv().unwrap(),
            json!({"action": "accept", "content": {}})
        );
        assert_eq!(
            status(&tasks, &id, "stdio", t0).unwrap()["status"],
            "working"
        );
        let (second, second_answered) = question("two?");
        tasks.ask(&id, second);
        let seen = status(&tasks, &id, "stdio", t0).unwrap();
        assert_eq!(
            seen["inputRequests"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["q2"]
        );
        // A question the execution stopped waiting for is no longer asked.
        drop(second_answered);
        assert_eq!(
            status(&tasks, &id, "stdio", t0).unwrap()["status"],
            "working"
        );
    }

    #[test]
    fn a_cancelled_task_is_cancelled_once_its_execution_ended() {
        let tasks = tasks(4);
        let t0 = Instant::now();
        let cancel = CancellationToken::new();
        let id = tasks.open("stdio", cancel.clone(), t0).unwrap();
        tasks.cancel(&id, "stdio").unwrap();
        assert!(cancel.is_cancelled());
        let seen = status(&tasks, &id, "stdio", t0).unwrap();
        assert_eq!(seen["status"], "working");
        assert!(
            seen["statusMessage"]
                .as_str()
                .unwrap()
                .contains("cancelling")
        );
        tasks.finish(&id, CallToolResult::error(vec![]), t0);
        let seen = status(&tasks, &id, "stdio", t0).unwrap();
        assert_eq!(seen["status"], "cancelled");
        assert!(seen.get("result").is_none());
        // Cancelling a finished task changes nothing.
        tasks.cancel(&id, "stdio").unwrap();
        assert_eq!(
            status(&tasks, &id, "stdio", t0).unwrap()["status"],
            "cancelled"
        );
    }

    #[test]
    fn the_extension_is_declared_only_when_tasks_are_on() {
        let plain = || ServerCapabilities::builder().enable_tools().build();
        assert!(tasks(16).declare(plain()).supports_tasks());
        assert!(!tasks(0).declare(plain()).supports_tasks());
    }
}
