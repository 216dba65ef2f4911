//! The audit trail: the schema of audit records and their only writer.
//!
//! One JSON line per execution and one per tool call (decided, sent or refused), appended through
//! `tracing-appender`'s non-blocking writer to a file per day, `audit.YYYY-MM-DD.jsonl`, in the
//! configured directory. The writer never drops records (it blocks instead when its queue is
//! full). Records never hold code, argument values, results or secrets: code is recorded as its
//! SHA-256 and length, arguments and results as sizes, errors as a category. A tool name is
//! recorded clipped to `MAX_RECORDED_NAME_BYTES` (`clip_name`, also used by the execution's
//! report), so a call with a huge made-up name costs a record of bounded size, and with
//! personal data redacted (`Name`), since a name that resolved to nothing is text code chose. Every string is
//! written by `serde_json`, which escapes newlines, quotes and control characters (an ANSI escape
//! becomes `\u001b`), so nothing inside a record can forge another record or a terminal sequence.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Serialize;
use sha2::{Digest, Sha256};
use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_appender::rolling::{RollingFileAppender, Rotation};

/// Prefix and suffix of the daily files.
pub(crate) const FILE_PREFIX: &str = "audit";
pub(crate) const FILE_SUFFIX: &str = "jsonl";

/// Longest tool name recorded (bytes): a longer one keeps its start and says how much was cut.
pub(crate) const MAX_RECORDED_NAME_BYTES: usize = 256;

/// A tool name as records and reports hold it: at most `MAX_RECORDED_NAME_BYTES` of it, cut
/// at a character boundary and marked `…(+N bytes)`.
pub(crate) fn clip_name(name: &str) -> Cow<'_, str> {
    if name.len() <= MAX_RECORDED_NAME_BYTES {
        return Cow::Borrowed(name);
    }
    let kept = crate::text::prefix(name, MAX_RECORDED_NAME_BYTES);
    Cow::Owned(format!("{kept}…(+{} bytes)", name.len() - kept.len()))
}

/// A name in a record (a tool, a glob of `allowedTools`, who asked): the only way one enters
/// the trail. A name may be any text code or the client chose (one that resolved to nothing,
/// `mcp__srv__` followed by an email), so it is written with personal data redacted by kind
/// (`[EMAIL]`, whatever the `pii` setting: the trail holds no values) and clipped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Name<'a>(pub &'a str);

impl Serialize for Name<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Part by part, so that `mcp__<server>__<made-up>` keeps its server in sight (an email's
        // local part may hold `__`: the whole name would be one address).
        let redacted: Vec<_> = self.0.split("__").map(crate::pii::redact).collect();
        serializer.serialize_str(&clip_name(&redacted.join("__")))
    }
}

/// Names in a record, each a [`Name`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Names<'a>(pub &'a [String]);

impl Serialize for Names<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|name| Name(name)))
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot open the audit log in {dir}: {reason}")]
pub struct AuditError {
    dir: String,
    reason: String,
}

/// One execution, recorded when it ends.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutionRecord<'a> {
    pub execution_id: &'a str,
    pub session: &'a str,
    pub language: &'a str,
    pub code_sha256: String,
    pub code_bytes: usize,
    pub allowed_tools: Names<'a>,
    pub duration_ms: u64,
    /// `ok`, `code_error`, `timeout`, `cancelled`, `out_of_memory`, `worker_failed`, `refused`,
    /// `host_call_limit` (stopped for making host calls long after its budget).
    pub outcome: &'a str,
    pub tool_calls: u32,
    pub tool_calls_refused: u32,
    /// Every host call the code asked for: tool calls (refused ones too) and look-ups.
    pub host_calls: u32,
    /// Peak resident memory of the worker process when the execution ended, in bytes (shared
    /// with the session's other executions in that process).
    pub peak_memory_bytes: Option<u64>,
    /// The worker process it ran in (one per client session and language).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_pid: Option<u32>,
}

/// One tool call from sandboxed code, recorded when decided and, if sent, answered.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallRecord<'a> {
    pub execution_id: &'a str,
    pub session: &'a str,
    /// The canonical `mcp__<server>__<tool>`, or the name as asked when it did not resolve.
    pub tool: Name<'a>,
    /// `allowed` (sent downstream) or `refused` (never left the host).
    pub decision: &'a str,
    /// Why: the refusal's code (`not_allowed`, `policy`, `schema`, `rate_limit`, ...), or
    /// `allowed`.
    pub reason: &'a str,
    pub duration_ms: u64,
    pub argument_bytes: usize,
    pub result_bytes: Option<usize>,
    /// For a call that was sent and failed: `tool_error`, `timeout`, `server_error`,
    /// `result_size`.
    pub error: Option<&'a str>,
}

/// One question put to the client (sampling, elicitation, approval): who asked, what came of
/// it, and sizes and a digest, never the text of the request or the answer.
#[derive(Debug, Serialize)]
pub(crate) struct AskRecord<'a> {
    pub execution_id: &'a str,
    pub session: &'a str,
    /// `sampling`, `elicitation` (relayed) or `approval`.
    pub kind: &'a str,
    /// `code`, or `server:<name>` for a relayed question.
    pub source: Name<'a>,
    /// For an approval: the tool it was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<Name<'a>>,
    /// `answered`, `accept`, `decline`, `cancel`, `allow_once`, `allow_session`, `deny`, or why
    /// it was not answered (`not_offered`, `cap`, `timeout`, ...).
    pub outcome: &'a str,
    pub request_sha256: String,
    pub request_bytes: usize,
    pub answer_bytes: usize,
    pub duration_ms: u64,
}

#[derive(Serialize)]
struct Line<'a, R: Serialize> {
    ts: String,
    event: &'a str,
    #[serde(flatten)]
    record: &'a R,
}

/// The audit log; a disabled one records nothing.
pub struct AuditLog {
    writer: Option<Mutex<NonBlocking>>,
    guard: Mutex<Option<WorkerGuard>>,
}

impl AuditLog {
    /// A log that records nothing.
    pub(crate) fn disabled() -> Self {
        AuditLog {
            writer: None,
            guard: Mutex::new(None),
        }
    }

    /// Opens (creating it if needed) the daily log in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<Self, AuditError> {
        let error = |reason: String| AuditError {
            dir: dir.display().to_string(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| error(e.to_string()))?;
        let appender = RollingFileAppender::builder()
            .rotation(Rotation::DAILY)
            .filename_prefix(FILE_PREFIX)
            .filename_suffix(FILE_SUFFIX)
            .build(dir)
            .map_err(|e| error(e.to_string()))?;
        let (writer, guard) = NonBlockingBuilder::default()
            .lossy(false)
            .thread_name("audit-writer")
            .finish(appender);
        Ok(AuditLog {
            writer: Some(Mutex::new(writer)),
            guard: Mutex::new(Some(guard)),
        })
    }

    pub fn is_enabled(&self) -> bool {
        self.writer.is_some()
    }

    pub(crate) fn execution(&self, record: &ExecutionRecord<'_>) {
        self.write("execution", record);
    }

    pub(crate) fn tool_call(&self, record: &ToolCallRecord<'_>) {
        self.write("tool_call", record);
    }

    pub(crate) fn ask(&self, record: &AskRecord<'_>) {
        self.write("ask", record);
    }

    /// Flushes what is queued and stops the writer; later records are dropped.
    pub fn close(&self) {
        drop(self.guard.lock().expect("audit guard lock").take());
    }

    fn write<R: Serialize>(&self, event: &str, record: &R) {
        let Some(writer) = &self.writer else { return };
        let line = Line {
            ts: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            event,
            record,
        };
        let mut bytes = match serde_json::to_vec(&line) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::error!("audit record not serialisable: {e}");
                return;
            }
        };
        bytes.push(b'\n');
        // One `write_all` per record: the writer thread receives whole lines.
        if let Err(e) = writer.lock().expect("audit writer lock").write_all(&bytes) {
            tracing::error!("audit record not written: {e}");
        }
    }
}

/// The SHA-256 of code, as recorded instead of the code.
pub(crate) fn code_digest(code: &str) -> String {
    hex::encode(Sha256::digest(code.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_single_escaped_json_lines_without_values() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(dir.path()).unwrap();
        let forged = "mcp__a__b\n{\"event\":\"execution\",\"outcome\":\"ok\"}\u{1b}[2J";
        log.tool_call(&ToolCallRecord {
            execution_id: "e1",
            session: "stdio",
            tool: Name(forged),
            decision: "refused",
            reason: "malformed_name",
            duration_ms: 0,
            argument_bytes: 12,
            result_bytes: None,
            error: None,
        });
        log.execution(&ExecutionRecord {
            execution_id: "e1",
            session: "stdio",
            language: "typescript",
            code_sha256: code_digest("console.log('secret')"),
            code_bytes: 21,
            allowed_tools: Names(&[
                "mcp__a__*".to_string(),
                "mcp__crm__bob@example.com".to_string(),
            ]),
            duration_ms: 5,
            outcome: "ok",
            tool_calls: 0,
            tool_calls_refused: 1,
            host_calls: 1,
            peak_memory_bytes: Some(1),
            worker_pid: Some(2),
        });
        log.close();
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1);
        let path = files[0].as_ref().unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("audit.") && name.ends_with(".jsonl"),
            "{name}"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains("secret"),
            "{text}"
        );
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["event"], "tool_call");
        assert_eq!(lines[0]["tool"], forged);
        assert_eq!(lines[1]["event"], "execution");
        assert_eq!(
            lines[1]["allowedTools"],
            serde_json::json!(["mcp__a__*", "mcp__crm__[EMAIL]"])
        );
        assert_eq!(lines[1]["codeSha256"], code_digest("console.log('secret')"));
        assert!(lines[1]["ts"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn made_up_names_are_recorded_without_personal_data_and_clipped() {
        let made_up = format!(
            "mcp__h2__ada@example.com/+44 20 7946 0958/{}",
            "x".repeat(400)
        );
        let recorded = serde_json::to_value(Name(&made_up)).unwrap();
        let recorded = recorded.as_str().unwrap();
        assert!(
            recorded.starts_with("mcp__h2__[EMAIL]/[PHONE]/xxx"),
            "{recorded}"
        );
        assert!(
            !recorded.contains("ada@") && !recorded.contains("7946"),
            "{recorded}"
        );
        assert!(recorded.len() < MAX_RECORDED_NAME_BYTES + 32, "{recorded}");
    }

    #[test]
    fn long_names_are_clipped_at_a_character_boundary() {
        assert_eq!(clip_name("mcp__a__b"), "mcp__a__b");
        let long = format!(
            "{}é{}",
            "a".repeat(MAX_RECORDED_NAME_BYTES - 1),
            "b".repeat(16_000)
        );
        let clipped = clip_name(&long);
        assert!(clipped.len() < MAX_RECORDED_NAME_BYTES + 32, "{clipped}");
        assert!(clipped.ends_with("…(+16002 bytes)"), "{clipped}");
        assert!(clipped.starts_with(&"a".repeat(MAX_RECORDED_NAME_BYTES - 1)));
    }
}
