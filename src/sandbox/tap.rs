//! The live tap on an execution's output: the newest complete lines of what the code prints
//! (stdout and stderr), for the front to send while the execution runs (see `front::live`).
//!
//! It holds at most [`HELD_BYTES`] of lines (the newest; older ones not yet taken are dropped
//! and counted) plus one unfinished line per stream of at most [`LINE_BYTES`]: however much a
//! worker prints, the tap's memory stays within a few KiB beside the output buffer's own cap.
//! A reader [`take`](OutputTap::take)s what is there (draining it) and waits on
//! [`fresh`](OutputTap::fresh) for more; a writer never waits.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;

use super::proto::Stream;
use crate::text::prefix;

/// Lines held for the reader, counted as their bytes plus one each (so that a flood of empty
/// lines is bounded too): the newest lines up to this size are what one take returns.
pub(crate) const HELD_BYTES: usize = 1024;

/// The longest line kept whole; a longer one is cut there and marked with [`CUT`].
pub(crate) const LINE_BYTES: usize = HELD_BYTES - 1 - CUT.len();

/// Ends a line that was cut at [`LINE_BYTES`].
pub(crate) const CUT: &str = "…";

/// One line of output, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TapLine {
    pub stream: Stream,
    pub text: String,
}

/// What one take found: the newest lines in the order printed, and how many lines before them
/// were dropped since the previous take (printed faster than they were taken).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Batch {
    pub lines: Vec<TapLine>,
    pub skipped: u64,
}

impl Batch {
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.skipped == 0
    }
}

/// The line a stream is in the middle of.
#[derive(Debug, Default)]
struct Partial {
    text: String,
    /// Already there at the previous take: taken as it is at the next one.
    stale: bool,
    /// The line was longer than [`LINE_BYTES`] and was taken cut: the rest of it, up to its
    /// newline, is dropped.
    discarding: bool,
}

#[derive(Debug, Default)]
struct State {
    lines: VecDeque<TapLine>,
    /// The size of `lines` as [`HELD_BYTES`] counts it.
    held: usize,
    skipped: u64,
    stdout: Partial,
    stderr: Partial,
}

impl State {
    fn partial(&mut self, stream: Stream) -> &mut Partial {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }

    /// Keeps a line (marked [`CUT`] when `cut`), dropping the oldest lines beyond
    /// [`HELD_BYTES`].
    fn keep(&mut self, stream: Stream, mut text: String, cut: bool) {
        if cut {
            text.push_str(CUT);
        }
        self.held += text.len() + 1;
        self.lines.push_back(TapLine { stream, text });
        while self.held > HELD_BYTES {
            let Some(old) = self.lines.pop_front() else {
                break;
            };
            self.held -= old.text.len() + 1;
            self.skipped += 1;
        }
    }

    /// Adds printed text; whether a line was completed.
    fn push(&mut self, stream: Stream, text: &str) -> bool {
        let mut completed = false;
        for piece in text.split_inclusive('\n') {
            let (body, ends) = match piece.strip_suffix('\n') {
                Some(body) => (body, true),
                None => (piece, false),
            };
            let partial = self.partial(stream);
            if partial.discarding {
                // The rest of a line taken cut: dropped up to its newline.
                partial.discarding = !ends;
                continue;
            }
            let room = LINE_BYTES - partial.text.len();
            let kept = prefix(body, room);
            partial.text.push_str(kept);
            let overflow = kept.len() < body.len();
            if !(ends || overflow) {
                continue;
            }
            let line = std::mem::take(&mut partial.text);
            partial.stale = false;
            partial.discarding = overflow && !ends;
            self.keep(stream, line, overflow);
            completed = true;
        }
        completed
    }

    /// Unfinished lines already there at the previous take are taken as they are.
    fn age_partials(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let partial = self.partial(stream);
            if partial.text.is_empty() {
                continue;
            }
            if partial.stale {
                let line = std::mem::take(&mut partial.text);
                partial.stale = false;
                self.keep(stream, line, false);
            } else {
                partial.stale = true;
            }
        }
    }
}

/// The tap of one execution (one `tools/call`), shared by the host that writes it and the front
/// that reads it.
#[derive(Debug, Default)]
pub(crate) struct OutputTap {
    state: Mutex<State>,
    fresh: Notify,
}

impl OutputTap {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds what the code printed on `stream`. Never waits.
    pub(crate) fn push(&self, stream: Stream, text: &str) {
        let completed = self.state.lock().expect("tap lock").push(stream, text);
        if completed {
            // At most one wake-up is stored, however many lines arrive before it is taken.
            self.fresh.notify_one();
        }
    }

    /// Takes the lines held (the newest ones, in order) and the count of those dropped before
    /// them. A line a stream has been in the middle of since the previous take comes along as
    /// it is.
    pub(crate) fn take(&self) -> Batch {
        let mut state = self.state.lock().expect("tap lock");
        state.age_partials();
        state.held = 0;
        Batch {
            lines: std::mem::take(&mut state.lines).into(),
            skipped: std::mem::take(&mut state.skipped),
        }
    }

    /// Resolves once a line has been completed since the previous call resolved (at once when
    /// one was completed before this call).
    pub(crate) async fn fresh(&self) {
        self.fresh.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(batch: &Batch) -> Vec<&str> {
        batch.lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn complete_lines_come_in_order_with_their_streams() {
        let tap = OutputTap::new();
        tap.push(Stream::Stdout, "one\ntw");
        tap.push(Stream::Stderr, "warn\n");
        tap.push(Stream::Stdout, "o\nthree\n");
        let batch = tap.take();
        assert_eq!(texts(&batch), ["one", "warn", "two", "three"]);
        assert_eq!(batch.lines[1].stream, Stream::Stderr);
        assert_eq!(batch.skipped, 0);
        assert!(tap.take().is_empty());
    }

    #[test]
    fn an_unfinished_line_waits_one_take_then_comes_as_it_is() {
        let tap = OutputTap::new();
        tap.push(Stream::Stdout, "loading");
        assert!(tap.take().is_empty());
        tap.push(Stream::Stdout, "...");
        assert_eq!(texts(&tap.take()), ["loading..."]);
        tap.push(Stream::Stdout, " done\n");
        assert_eq!(texts(&tap.take()), [" done"]);
    }

    #[test]
    fn only_the_newest_lines_are_held_and_the_rest_counted() {
        let tap = OutputTap::new();
        for n in 0..1000 {
            tap.push(Stream::Stdout, &format!("line {n:04}\n"));
        }
        let batch = tap.take();
        let held: usize = batch.lines.iter().map(|l| l.text.len() + 1).sum();
        assert!(held <= HELD_BYTES, "{held}");
        assert_eq!(batch.lines.last().unwrap().text, "line 0999");
        assert_eq!(batch.skipped as usize + batch.lines.len(), 1000);
        // Empty lines count too.
        tap.push(Stream::Stdout, &"\n".repeat(100_000));
        let batch = tap.take();
        assert_eq!(batch.lines.len(), HELD_BYTES);
        assert_eq!(batch.skipped as usize, 100_000 - HELD_BYTES);
    }

    #[test]
    fn a_long_line_is_cut_and_the_rest_of_it_dropped() {
        let tap = OutputTap::new();
        tap.push(Stream::Stderr, &"é".repeat(3000));
        tap.push(Stream::Stderr, &"x".repeat(3000));
        let batch = tap.take();
        assert_eq!(batch.lines.len(), 1, "{batch:?}");
        let cut = &batch.lines[0].text;
        assert!(
            cut.ends_with(CUT) && cut.len() <= LINE_BYTES + CUT.len(),
            "{}",
            cut.len()
        );
        assert!(cut.len() < HELD_BYTES);
        // The rest of the long line is dropped, up to its newline.
        tap.push(Stream::Stderr, "tail\nnext\n");
        assert_eq!(texts(&tap.take()), ["next"]);
        // A long line ending in the same write is cut alike.
        tap.push(Stream::Stdout, &format!("{}\nafter\n", "z".repeat(5000)));
        let batch = tap.take();
        assert_eq!(batch.lines.len() + batch.skipped as usize, 2);
        assert_eq!(batch.lines.last().unwrap().text, "after");
    }

    #[test]
    fn a_flood_holds_no_more_than_the_bound() {
        let tap = OutputTap::new();
        let chunk = format!("{}\n", "y".repeat(99)).repeat(5000);
        let mut taken = 0;
        for round in 0..100 {
            // 50 MB in all, taken now and then.
            tap.push(Stream::Stdout, &chunk);
            let state = tap.state.lock().unwrap();
            let held: usize = state.lines.iter().map(|l| l.text.len() + 1).sum();
            assert!(held <= HELD_BYTES);
            assert!(state.stdout.text.len() <= LINE_BYTES);
            drop(state);
            if round % 10 == 0 {
                taken += tap.take().lines.len();
            }
        }
        let last = tap.take();
        assert!(taken + last.lines.len() < 200, "{taken}");
    }

    #[tokio::test]
    async fn a_reader_is_woken_by_a_completed_line_only() {
        let tap = std::sync::Arc::new(OutputTap::new());
        tap.push(Stream::Stdout, "partial");
        let quiet = tokio::time::timeout(std::time::Duration::from_millis(50), tap.fresh()).await;
        assert!(quiet.is_err());
        tap.push(Stream::Stdout, " line\n");
        tap.push(Stream::Stdout, "another\n");
        tokio::time::timeout(std::time::Duration::from_secs(1), tap.fresh())
            .await
            .expect("woken");
        // One stored wake-up for many lines.
        let again = tokio::time::timeout(std::time::Duration::from_millis(50), tap.fresh()).await;
        assert!(again.is_err());
        assert_eq!(texts(&tap.take()), ["partial line", "another"]);
    }
}
