//! Live output: while a call runs, the newest lines its code prints (read from the execution's
//! [`OutputTap`]) go to a client that asked for them, as `notifications/progress` (a request
//! with a `progressToken`) and as `notifications/message` log messages (a client that set a log
//! level: `logging/setLevel`, remembered per client session, or the request's own
//! `io.modelcontextprotocol/logLevel` in `_meta` on protocol 2026-07-28).
//!
//! Bounds, per request: at most one round of notifications every [`MIN_GAP`] (one progress
//! notification and at most [`MAX_LOG_MESSAGES`] log messages), each round carrying at most the
//! tap's [`HELD_BYTES`](crate::sandbox::tap::HELD_BYTES) (1 KiB) of the newest lines, with a mark counting the lines not shown. Without
//! new output a request with a `progressToken` gets the `running for N s` heartbeat every
//! [`HEARTBEAT`]. `progress` is the seconds since the request arrived, increasing with every
//! notification.
//!
//! Every text that leaves this way passes through [`outgoing`] first: the one place for a
//! filter of what the client sees live.
//!
//! The logging feature is deprecated as of protocol 2026-07-28 (SEP-2577) but still part of it,
//! so rmcp's logging types are used knowingly here.
#![allow(deprecated)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::Value;

use crate::pii::Vault;
use crate::sandbox::proto::Stream;
use crate::sandbox::tap::{Batch, CUT, OutputTap, TapLine};

/// The shortest time between two rounds of notifications of one request. A quarter of a second
/// still reads as live to a person watching, and caps a flood at four rounds a second of at most
/// a KiB each: a client (and an LLM host forwarding progress) is never flooded.
pub(super) const MIN_GAP: Duration = Duration::from_millis(250);

/// How often a request with a `progressToken` hears from a call that prints nothing.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(1);

/// Log messages in one round at most: one per run of lines of the same stream, the newest runs.
pub(super) const MAX_LOG_MESSAGES: usize = 4;

/// Client sessions whose log level is remembered at most (over HTTP a session is a token or a
/// peer address).
const MAX_SESSIONS: usize = 1024;

/// The one exit of live text: every progress message and log line passes through here just
/// before it is sent. A filter of what clients see (e.g. PII tokenisation) goes here.
pub(super) fn outgoing(text: String, pii: Option<&Vault>) -> String {
    match pii {
        Some(vault) => vault.tokenize(&cut_lines_trimmed(text)),
        None => text,
    }
}

/// Lines cut at the tap's line limit lose the run before their mark that may be the start of
/// a value (which a detector would not recognise cut).
fn cut_lines_trimmed(text: String) -> String {
    if !text.contains(CUT) {
        return text;
    }
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| match line.strip_suffix(CUT) {
            Some(body) => {
                let mut body = body.to_string();
                crate::pii::trim_cut_end(&mut body);
                body + CUT
            }
            None => line.to_string(),
        })
        .collect();
    lines.join("\n")
}

/// The log levels clients set with `logging/setLevel`, by client session.
#[derive(Debug, Default)]
pub(super) struct Levels {
    by_session: Mutex<HashMap<String, LoggingLevel>>,
}

impl Levels {
    pub(super) fn set(&self, session: &str, level: LoggingLevel) {
        let mut levels = self.by_session.lock().expect("levels lock");
        if levels.len() >= MAX_SESSIONS && !levels.contains_key(session) {
            // Rather forget another session's level than hold levels without bound.
            if let Some(other) = levels.keys().next().cloned() {
                levels.remove(&other);
            }
        }
        levels.insert(session.to_string(), level);
    }

    /// The level a request gets log messages at: none on protocol 2026-07-28, where logging is
    /// deprecated and not declared to those clients (`server/discover`; they get live output as
    /// progress); before that, the request's own `_meta` level, else the one its client session
    /// set.
    pub(super) fn for_request(
        &self,
        session: &str,
        context: &RequestContext<RoleServer>,
    ) -> Option<LoggingLevel> {
        if super::conform::handshake_free(context) {
            return None;
        }
        if let Some(level) = context.meta.log_level() {
            return Some(level);
        }
        self.by_session
            .lock()
            .expect("levels lock")
            .get(session)
            .copied()
    }
}

/// Runs `drive` to its end while reporting the call's output live to the request's client
/// (when it asked for progress or set a level any output passes).
pub(super) async fn report<T>(
    drive: impl Future<Output = T>,
    context: &RequestContext<RoleServer>,
    level: Option<LoggingLevel>,
    tap: Arc<OutputTap>,
    pii: Option<Arc<Vault>>,
) -> T {
    let progress = context.meta.get_progress_token();
    let level = level.filter(|&level| {
        [Stream::Stdout, Stream::Stderr]
            .into_iter()
            .any(|stream| passes(stream, level))
    });
    if progress.is_none() && level.is_none() {
        return drive.await;
    }
    let live = Live {
        peer: context.peer.clone(),
        progress,
        level,
        tap,
        started: Instant::now(),
        last_progress: 0.0,
        pii,
    };
    tokio::select! {
        out = drive => out,
        never = live.run() => match never {},
    }
}

/// The level a stream's lines are logged at, and its logger.
fn log_level_of(stream: Stream) -> (LoggingLevel, &'static str) {
    match stream {
        Stream::Stdout => (LoggingLevel::Info, "stdout"),
        Stream::Stderr => (LoggingLevel::Warning, "stderr"),
    }
}

/// Whether a stream's lines are logged to a client that set `level`.
fn passes(stream: Stream, level: LoggingLevel) -> bool {
    // Declared from the least to the most severe.
    log_level_of(stream).0 as u8 >= level as u8
}

/// The line that stands for `n` lines not shown.
fn skipped_mark(n: u64) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("[… {n} earlier line{s} not shown]")
}

/// The progress message of a batch: the mark, then its lines in order.
fn progress_text(batch: &Batch) -> String {
    let mut parts = Vec::with_capacity(batch.lines.len() + 1);
    let mark = (batch.skipped > 0).then(|| skipped_mark(batch.skipped));
    parts.extend(mark.as_deref());
    parts.extend(batch.lines.iter().map(|line| line.text.as_str()));
    parts.join("\n")
}

/// The log messages of a batch for a client at `level`: one per run of lines of the same
/// stream that passes it, the newest [`MAX_LOG_MESSAGES`] runs, the first of them led by the mark
/// of the lines not shown.
fn log_messages(batch: &Batch, level: LoggingLevel) -> Vec<(Stream, String)> {
    let mut runs: Vec<(Stream, Vec<&TapLine>)> = Vec::new();
    for line in batch.lines.iter().filter(|line| passes(line.stream, level)) {
        match runs.last_mut() {
            Some((stream, lines)) if *stream == line.stream => lines.push(line),
            _ => runs.push((line.stream, vec![line])),
        }
    }
    let dropped = runs.len().saturating_sub(MAX_LOG_MESSAGES);
    let not_shown = batch.skipped
        + runs[..dropped]
            .iter()
            .map(|(_, lines)| lines.len() as u64)
            .sum::<u64>();
    let mut messages: Vec<(Stream, String)> = runs
        .into_iter()
        .skip(dropped)
        .map(|(stream, lines)| {
            let texts: Vec<&str> = lines.iter().map(|line| line.text.as_str()).collect();
            (stream, texts.join("\n"))
        })
        .collect();
    if let Some((_, text)) = messages.first_mut()
        && not_shown > 0
    {
        *text = format!("{}\n{text}", skipped_mark(not_shown));
    }
    messages
}

/// The live reporting of one request.
struct Live {
    peer: Peer<RoleServer>,
    progress: Option<ProgressToken>,
    /// Set only when some output passes it.
    level: Option<LoggingLevel>,
    tap: Arc<OutputTap>,
    started: Instant,
    last_progress: f64,
    /// The session's token vault, when personal data is tokenised.
    pii: Option<Arc<Vault>>,
}

/// The client is gone (a send failed).
struct Gone;

impl Live {
    /// Reports until dropped (when the call ends); never returns.
    async fn run(mut self) -> Infallible {
        let mut last = self.started;
        loop {
            let beat = last + HEARTBEAT;
            if self.progress.is_some() {
                tokio::select! {
                    () = self.tap.fresh() => {}
                    () = tokio::time::sleep_until(beat.into()) => {}
                }
            } else {
                self.tap.fresh().await;
            }
            tokio::time::sleep_until((last + MIN_GAP).into()).await;
            let batch = self.tap.take();
            let sent = if !batch.is_empty() {
                self.lines(&batch).await
            } else if Instant::now() >= beat {
                self.heartbeat().await
            } else {
                continue;
            };
            if sent.is_err() {
                // The client is gone: nothing more to report; the call ends on its own.
                return std::future::pending().await;
            }
            last = Instant::now();
        }
    }

    /// Seconds since the request arrived, above every value sent before.
    fn next_progress(&mut self) -> f64 {
        let elapsed = (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        self.last_progress = elapsed.max(self.last_progress + 0.001);
        self.last_progress
    }

    async fn heartbeat(&mut self) -> Result<(), Gone> {
        if self.progress.is_none() {
            return Ok(());
        }
        let seconds = self.started.elapsed().as_secs();
        self.send_progress(format!("running for {seconds} s")).await
    }

    async fn lines(&mut self, batch: &Batch) -> Result<(), Gone> {
        if self.progress.is_some() {
            self.send_progress(progress_text(batch)).await?;
        }
        if let Some(level) = self.level {
            for (stream, text) in log_messages(batch, level) {
                let (level, logger) = log_level_of(stream);
                let param = LoggingMessageNotificationParam::new(
                    level,
                    Value::String(outgoing(text, self.pii.as_deref())),
                )
                .with_logger(logger);
                self.peer
                    .notify_logging_message(param)
                    .await
                    .map_err(|_| Gone)?;
            }
        }
        Ok(())
    }

    async fn send_progress(&mut self, text: String) -> Result<(), Gone> {
        let Some(token) = self.progress.clone() else {
            return Ok(());
        };
        let mut param = ProgressNotificationParam::new(token, self.next_progress());
        param.message = Some(outgoing(text, self.pii.as_deref()));
        self.peer.notify_progress(param).await.map_err(|_| Gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stream: Stream, text: &str) -> TapLine {
        TapLine {
            stream,
            text: text.into(),
        }
    }

    #[test]
    fn progress_carries_the_mark_then_the_lines() {
        let batch = Batch {
            lines: vec![line(Stream::Stdout, "a"), line(Stream::Stderr, "b")],
            skipped: 3,
        };
        assert_eq!(progress_text(&batch), "[… 3 earlier lines not shown]\na\nb");
        let batch = Batch {
            lines: vec![line(Stream::Stdout, "only")],
            skipped: 0,
        };
        assert_eq!(progress_text(&batch), "only");
    }

    #[test]
    fn log_messages_follow_the_level_and_the_runs() {
        let batch = Batch {
            lines: vec![
                line(Stream::Stdout, "1"),
                line(Stream::Stdout, "2"),
                line(Stream::Stderr, "e"),
                line(Stream::Stdout, "3"),
            ],
            skipped: 0,
        };
        assert_eq!(
            log_messages(&batch, LoggingLevel::Debug),
            [
                (Stream::Stdout, "1\n2".to_string()),
                (Stream::Stderr, "e".to_string()),
                (Stream::Stdout, "3".to_string())
            ]
        );
        assert_eq!(
            log_messages(&batch, LoggingLevel::Warning),
            [(Stream::Stderr, "e".to_string())]
        );
        assert!(log_messages(&batch, LoggingLevel::Error).is_empty());
        assert!(passes(Stream::Stdout, LoggingLevel::Info));
        assert!(!passes(Stream::Stdout, LoggingLevel::Notice));
    }

    #[test]
    fn log_messages_are_bounded_per_round() {
        let lines = (0..10)
            .map(|n| {
                let stream = if n % 2 == 0 {
                    Stream::Stdout
                } else {
                    Stream::Stderr
                };
                line(stream, &n.to_string())
            })
            .collect();
        let messages = log_messages(&Batch { lines, skipped: 2 }, LoggingLevel::Info);
        assert_eq!(messages.len(), MAX_LOG_MESSAGES);
        assert_eq!(messages[0].1, "[… 8 earlier lines not shown]\n6");
        assert_eq!(messages[3].1, "9");
        // No line passing the level: no message, not even the mark.
        let batch = Batch {
            lines: vec![line(Stream::Stdout, "x")],
            skipped: 1,
        };
        assert!(log_messages(&batch, LoggingLevel::Warning).is_empty());
    }

    #[test]
    fn a_remembered_level_is_bounded_in_sessions() {
        let levels = Levels::default();
        for n in 0..(MAX_SESSIONS + 10) {
            levels.set(&format!("http-peer:{n}"), LoggingLevel::Info);
        }
        levels.set("stdio", LoggingLevel::Warning);
        let held = levels.by_session.lock().unwrap();
        assert_eq!(held.len(), MAX_SESSIONS);
        assert_eq!(held.get("stdio"), Some(&LoggingLevel::Warning));
    }
}
