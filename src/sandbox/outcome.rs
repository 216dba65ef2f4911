//! How one run ended, as the host reports it: the outcome (end, output, value, error, peak
//! memory), the output buffer with its cap and marker, and the words for a worker that failed
//! (the user's error with its stack once; a crash, a signal or an out-of-memory death), and the
//! deadline a run is held to (`within_deadline`: it does not count the time spent waiting for
//! answers). No processes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::proto::{self, Stream};
use super::tap::OutputTap;
use crate::text::{prefix, suffix};

/// The result of one run.
#[derive(Debug, Clone)]
pub(crate) struct RunOutcome {
    pub success: bool,
    pub end: EndKind,
    pub output: CapturedOutput,
    pub value: Option<Value>,
    pub error: Option<String>,
    /// Peak resident memory of the worker, when it could be read.
    pub peak_memory_bytes: Option<u64>,
}

/// How a run ended, for audit records and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EndKind {
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
    pub(crate) fn as_str(self) -> &'static str {
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

/// How the drive of a worker ended, before it is reported.
pub(crate) enum Ending {
    Done(Option<Value>),
    UserError(String),
    Failed(String),
    TimedOut(Duration),
    Cancelled,
    WorkerExited,
}

impl Ending {
    /// The run's end, returned value and error message; `diagnosis` explains a worker that
    /// exited on its own (see [`diagnose_exit`]).
    pub(crate) fn settle(
        self,
        diagnosis: Option<String>,
    ) -> (EndKind, Option<Value>, Option<String>) {
        match self {
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
                Some("execution cancelled by the client; its isolate was ended".into()),
            ),
            Ending::WorkerExited => {
                let diagnosis = diagnosis.unwrap_or_else(|| "the worker exited".into());
                let kind = if diagnosis.starts_with(OUT_OF_MEMORY) {
                    EndKind::OutOfMemory
                } else {
                    EndKind::WorkerFailed
                };
                (kind, None, Some(diagnosis))
            }
        }
    }
}

/// How a diagnosis of a worker killed for writing too much starts.
const DISK_LIMIT: &str = "disk limit";

const MIB: u64 = 1024 * 1024;

/// How an out-of-memory diagnosis starts.
const OUT_OF_MEMORY: &str = "out of memory";

/// The user's error as the reply states it once, after the output (the reply adds its own
/// `Error: ` before it): `Name: message` with the stack, the message line said once. A plain
/// `Error` is not named (`boom`, not `Error: boom`); other names say something (`TypeError`,
/// `NotCapable`, Python's `ToolCallError`) and stay.
pub(crate) fn describe_user_error(error: Option<proto::UserError>) -> String {
    let Some(error) = error else {
        return "the code failed without an error value".into();
    };
    let plain = error.name.is_empty() || error.name == PLAIN_ERROR;
    let message = if plain {
        strip_plain_prefix(&error.message)
    } else {
        error.message.as_str()
    };
    let head = match (plain, message.is_empty()) {
        (true, true) => "an Error without a message".to_string(),
        (true, false) => message.to_string(),
        (false, true) => error.name.clone(),
        (false, false) => format!("{}: {message}", error.name),
    };
    // An allocation the worker's memory limit refused (V8: "RangeError: Array buffer
    // allocation failed"; Python: MemoryError) is named as such, like a fatal out-of-memory.
    let out_of_memory = head.contains("allocation failed") || error.name == "MemoryError";
    let described = match error.stack.as_deref() {
        // V8 stacks start with "Name: message" and Python tracebacks hold it at their end (notes
        // may follow it): the message line is said once.
        Some(stack) if !stack.is_empty() => {
            let stack = if plain {
                strip_plain_prefix(stack)
            } else {
                stack
            };
            if holds_line(stack, &head) {
                stack.to_string()
            } else {
                format!("{head}\n{stack}")
            }
        }
        _ => head,
    };
    if out_of_memory {
        format!("{OUT_OF_MEMORY}: the execution reached the worker's memory limit\n{described}")
    } else {
        described
    }
}

/// The name of JavaScript's plain `Error`, which says nothing the reply's own `Error: ` does not.
const PLAIN_ERROR: &str = "Error";

/// `text` without the `Error: ` a plain error's message or stack starts with (once or repeated,
/// as in `new Error(String(e))`).
fn strip_plain_prefix(text: &str) -> &str {
    let mut text = text;
    while let Some(rest) = text.strip_prefix("Error: ") {
        text = rest;
    }
    // The stack of an error without a message starts with its bare name.
    match text.strip_prefix("Error\n") {
        Some(rest) if rest.trim_start().starts_with("at ") => rest,
        _ => text,
    }
}

/// Whether `text` holds `line` at the start of one of its lines, or after a module path there
/// (Python's traceback names `pyodide.ffi.JsException` where the error's name is `JsException`).
fn holds_line(text: &str, line: &str) -> bool {
    text.match_indices(line).any(|(at, _)| {
        let before = &text[..at];
        let start = before.rfind('\n').map_or(0, |nl| nl + 1);
        let prefix = &before[start..];
        prefix.is_empty()
            || (prefix.ends_with('.')
                && prefix
                    .chars()
                    .all(|c| c == '.' || c == '_' || c.is_alphanumeric()))
    })
}

pub(crate) fn diagnose_exit(
    status: Option<std::process::ExitStatus>,
    stderr: &str,
    heap_mb: u32,
    max_file_bytes: u64,
) -> String {
    use std::os::unix::process::ExitStatusExt;
    let lower = stderr.to_ascii_lowercase();
    // V8 says "out of memory" or "allocation failed"; Deno's own Rust code,
    // refused by RLIMIT_DATA, aborts with "memory allocation of N bytes failed".
    let refused_allocation = lower.contains("memory allocation of") && lower.contains("failed");
    if lower.contains("out of memory") || lower.contains("allocation failed") || refused_allocation
    {
        return format!(
            "{OUT_OF_MEMORY}: the execution exceeded the worker's memory limit (V8 heap {heap_mb} MiB) and was killed"
        );
    }
    if status.and_then(|s| s.signal()) == Some(libc::SIGXFSZ) {
        return format!(
            "{DISK_LIMIT}: the worker process wrote a file over its {} MiB limit and was killed",
            max_file_bytes / MIB
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
        format!("the worker {how} before finishing: {}", prefix(tail, 2000))
    }
}

/// The most of an output's end the host keeps once the output passed its limit (bytes).
const TAIL_LIMIT: usize = 64 * 1024;

/// Output of one execution as the host keeps it: its beginning (up to the output limit) and,
/// when it went past the limit, how many bytes were cut and its end. How much of it a reply
/// shows is the front's (`front::budget`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CapturedOutput {
    pub head: String,
    /// Bytes between `head` and `tail` the host did not keep; 0 when nothing was cut.
    pub cut: u64,
    pub tail: String,
}

impl CapturedOutput {
    /// Output that was kept whole.
    #[cfg(test)]
    pub(crate) fn whole(text: impl Into<String>) -> Self {
        CapturedOutput {
            head: text.into(),
            ..CapturedOutput::default()
        }
    }

    /// The bytes the output had: those kept and those cut.
    pub(crate) fn total_bytes(&self) -> usize {
        (self.head.len() + self.tail.len())
            .saturating_add(usize::try_from(self.cut).unwrap_or(usize::MAX))
    }

    /// The output as one text, with a marker where bytes were cut.
    pub(crate) fn rendered(&self) -> String {
        if self.cut == 0 {
            return format!("{}{}", self.head, self.tail);
        }
        let mut text = self.head.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[... {} bytes of output cut here ...]\n",
            self.cut
        ));
        text.push_str(&self.tail);
        text
    }
}

impl serde::Serialize for CapturedOutput {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.rendered())
    }
}

/// Output of one execution as it arrives: the first `limit` bytes, then (from the worker, once
/// the output is closed) its end and the bytes the worker never sent. What it keeps of the first
/// part also goes to the execution's live tap, when it has one.
#[derive(Debug)]
pub(crate) struct OutputBuffer {
    text: String,
    limit: usize,
    /// Bytes received past the limit and not kept.
    dropped: u64,
    /// The worker's `output_tail`: the bytes it did not send, and the newest output.
    end: Option<(u64, String)>,
    tap: Option<Arc<OutputTap>>,
}

impl OutputBuffer {
    pub(crate) fn new(limit: usize) -> Self {
        OutputBuffer {
            text: String::new(),
            limit,
            dropped: 0,
            end: None,
            tap: None,
        }
    }

    /// The same buffer, also writing what it keeps to `tap`.
    pub(crate) fn tapped(mut self, tap: Arc<OutputTap>) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Its byte limit.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn push(&mut self, stream: Stream, text: &str) {
        if self.end.is_some() {
            // Nothing follows the tail; a worker that sends more is only wasting its time.
            self.dropped += text.len() as u64;
            return;
        }
        let room = self.limit.saturating_sub(self.text.len());
        let kept = if text.len() <= room && self.dropped == 0 {
            text
        } else {
            let kept = prefix(text, room);
            self.dropped += (text.len() - kept.len()) as u64;
            kept
        };
        self.text.push_str(kept);
        if let Some(tap) = &self.tap {
            tap.push(stream, kept);
        }
    }

    /// The worker's report of how its output ended (the tail past the limit and the bytes it
    /// did not send before it). Only the first counts; at most [`TAIL_LIMIT`] bytes are kept.
    pub(crate) fn end_with(&mut self, skipped: u64, text: String) {
        if self.end.is_some() {
            return;
        }
        let tail = suffix(&text, TAIL_LIMIT);
        let dropped = (text.len() - tail.len()) as u64;
        // `skipped` is the worker's word: counted, never trusted not to overflow.
        self.end = Some((skipped.saturating_add(dropped), tail.to_string()));
    }

    pub(crate) fn finish(self) -> CapturedOutput {
        let (skipped, tail) = self.end.unwrap_or_default();
        CapturedOutput {
            head: self.text,
            cut: self.dropped.saturating_add(skipped),
            tail,
        }
    }
}

/// Runs `drive` until it ends or `deadline` has passed since `started`, not counting the time
/// `paused` reports (the deadline moves on while the execution waits for an answer).
pub(super) async fn within_deadline(
    drive: impl std::future::Future<Output = Ending>,
    started: Instant,
    deadline: Duration,
    paused: impl Fn() -> Duration,
) -> Ending {
    tokio::pin!(drive);
    loop {
        let until = started + deadline + paused();
        tokio::select! {
            ending = &mut drive => return ending,
            () = tokio::time::sleep_until(until.into()) => {
                if Instant::now() >= started + deadline + paused() {
                    return Ending::TimedOut(deadline);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_with_a_marker() {
        let mut out = OutputBuffer::new(10);
        out.push(Stream::Stdout, "12345");
        out.push(Stream::Stdout, "678901234");
        out.push(Stream::Stderr, "zz");
        let captured = out.finish();
        assert_eq!(captured.head, "1234567890");
        assert_eq!(captured.cut, 6);
        assert_eq!(
            captured.rendered(),
            "1234567890\n[... 6 bytes of output cut here ...]\n"
        );
    }

    #[test]
    fn the_end_of_closed_output_is_kept_with_what_was_skipped() {
        let mut out = OutputBuffer::new(4);
        out.push(Stream::Stdout, "abcdef");
        out.end_with(100, "the end\n".into());
        out.push(Stream::Stdout, "late");
        let captured = out.finish();
        assert_eq!(captured.head, "abcd");
        assert_eq!(captured.cut, 2 + 100 + 4);
        assert_eq!(captured.tail, "the end\n");
        let mut big = OutputBuffer::new(4);
        big.end_with(0, "é".repeat(TAIL_LIMIT));
        let captured = big.finish();
        assert!(captured.tail.len() <= TAIL_LIMIT);
        assert_eq!(captured.cut as usize + captured.tail.len(), 2 * TAIL_LIMIT);
    }

    #[test]
    fn truncation_respects_utf8() {
        let mut out = OutputBuffer::new(4);
        out.push(Stream::Stdout, "aé€");
        let captured = out.finish();
        assert_eq!(captured.head, "aé");
        assert_eq!(captured.cut, 3);
    }

    #[test]
    fn the_tap_gets_what_the_buffer_keeps() {
        let tap = Arc::new(OutputTap::new());
        let mut out = OutputBuffer::new(12).tapped(tap.clone());
        out.push(Stream::Stdout, "first\n");
        out.push(Stream::Stderr, "second\nthird\n");
        let first = tap.take();
        assert_eq!(first.lines.len(), 1);
        assert_eq!(
            (first.lines[0].stream, first.lines[0].text.as_str()),
            (Stream::Stdout, "first")
        );
        // What is cut never reaches the tap: "second" (its newline cut) is an unfinished line,
        // taken at the take after the one that saw it.
        let rest = tap.take();
        assert_eq!(rest.lines.len(), 1);
        assert_eq!(
            (rest.lines[0].stream, rest.lines[0].text.as_str()),
            (Stream::Stderr, "second")
        );
        let captured = out.finish();
        assert_eq!(captured.head, "first\nsecond");
        assert_eq!(captured.cut, "\nthird\n".len() as u64);
    }

    #[test]
    fn oom_is_named() {
        let msg = diagnose_exit(
            None,
            "\n#\n# Fatal JavaScript out of memory: Reached heap limit\n",
            64,
            8 * MIB,
        );
        assert!(msg.starts_with("out of memory"), "{msg}");
    }

    #[test]
    fn a_refused_rust_allocation_is_named_out_of_memory() {
        use std::os::unix::process::ExitStatusExt;
        let aborted = std::process::ExitStatus::from_raw(libc::SIGABRT);
        let msg = diagnose_exit(
            Some(aborted),
            "memory allocation of 268435456 bytes failed\n",
            64,
            8 * MIB,
        );
        assert!(msg.starts_with("out of memory"), "{msg}");
        let other = diagnose_exit(Some(aborted), "thread panicked\n", 64, 8 * MIB);
        assert!(!other.starts_with("out of memory"), "{other}");
    }

    #[test]
    fn a_worker_killed_for_a_file_too_large_is_at_the_disk_limit() {
        use std::os::unix::process::ExitStatusExt;
        let killed = std::process::ExitStatus::from_raw(libc::SIGXFSZ);
        let msg = diagnose_exit(Some(killed), "", 64, 4 * MIB);
        assert!(msg.starts_with("disk limit"), "{msg}");
        assert!(msg.contains("its 4 MiB limit"), "{msg}");
    }

    #[test]
    fn refused_allocations_are_named_out_of_memory() {
        let e = proto::UserError {
            name: "RangeError".into(),
            message: "Array buffer allocation failed".into(),
            stack: Some(
                "RangeError: Array buffer allocation failed\n    at new ArrayBuffer".into(),
            ),
        };
        let msg = describe_user_error(Some(e));
        assert!(msg.starts_with("out of memory: "), "{msg}");
        assert!(
            msg.contains("RangeError: Array buffer allocation failed"),
            "{msg}"
        );
        let e = proto::UserError {
            name: "MemoryError".into(),
            message: String::new(),
            stack: None,
        };
        assert!(describe_user_error(Some(e)).starts_with("out of memory: "));
        let e = proto::UserError {
            name: "RangeError".into(),
            message: "Invalid array length".into(),
            stack: None,
        };
        assert!(!describe_user_error(Some(e)).contains("out of memory"));
    }

    #[test]
    fn user_errors_keep_the_stack_once() {
        let e = proto::UserError {
            name: "Error".into(),
            message: "boom".into(),
            stack: Some("Error: boom\n    at <user code>:1:7".into()),
        };
        assert_eq!(describe_user_error(Some(e)), "boom\n    at <user code>:1:7");
    }

    fn user_error(name: &str, message: &str, stack: Option<&str>) -> String {
        describe_user_error(Some(proto::UserError {
            name: name.into(),
            message: message.into(),
            stack: stack.map(String::from),
        }))
    }

    #[test]
    fn a_plain_error_is_not_named_and_others_are() {
        // A refusal thrown into code: its message, then where, once.
        assert_eq!(
            user_error(
                "Error",
                "tool `mcp__a__b` is not in allowedTools",
                Some("Error: tool `mcp__a__b` is not in allowedTools\n    at user.ts:1:7")
            ),
            "tool `mcp__a__b` is not in allowedTools\n    at user.ts:1:7"
        );
        assert_eq!(user_error("Error", "Error: Error: x", None), "x");
        assert_eq!(
            user_error("Error", "", Some("Error\n    at user.ts:1:7")),
            "an Error without a message\n    at user.ts:1:7"
        );
        assert_eq!(
            user_error(
                "TypeError",
                "bad",
                Some("TypeError: bad\n    at user.ts:2:1")
            ),
            "TypeError: bad\n    at user.ts:2:1"
        );
        assert_eq!(user_error("NotCapable", "no", None), "NotCapable: no");
        // A stack that does not hold the message gets it first.
        assert_eq!(
            user_error("RangeError", "big", Some("    at user.ts:1:1")),
            "RangeError: big\n    at user.ts:1:1"
        );
        // ... and one that holds it only inside another line gets it too.
        assert_eq!(
            user_error("Error", "boom", Some("SomeError: boom")),
            "boom\nSomeError: boom"
        );
    }

    #[test]
    fn a_python_traceback_says_its_last_line_once_even_with_notes() {
        let tb = "Traceback (most recent call last):\n  File \"<user code>\", line 1, in <module>\nToolCallError: refused";
        assert_eq!(user_error("ToolCallError", "refused", Some(tb)), tb);
        let noted = "Traceback (most recent call last):\n  File \"<user code>\", line 1, in <module>\nOSError: [Errno 23] Host is unreachable\nnetwork access is not available";
        assert_eq!(
            user_error("OSError", "[Errno 23] Host is unreachable", Some(noted)),
            noted
        );
        // The traceback names the error with its module.
        let qualified = "Traceback (most recent call last):\n  File \"<user code>\", line 2, in <module>\npyodide.ffi.JsException: NotCapable: no\nnote";
        assert_eq!(
            user_error("JsException", "NotCapable: no", Some(qualified)),
            qualified
        );
    }
}
