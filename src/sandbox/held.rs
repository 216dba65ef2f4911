//! Memory a resting process keeps after a burst of work. A worker process that ran many
//! executions at once (sixteen TypeScript lanes, four Python interpreters) gives back little of
//! what they used once they are idle: V8 keeps the pages of the heaps it freed, and the C
//! allocator its arenas. Measured with Deno 2.9.6: a TypeScript process holds about 70 MiB at
//! rest when fresh and 140 MiB at rest after 16 executions in flight. A process that rests for
//! [`REST`] holding more than [`HELD_OVER`] beyond what a fresh one holds is retired
//! (it runs nothing, so it goes at once), and its session gets a fresh one, which holds only
//! what it needs. It costs one process start, and only after a burst. This module only watches
//! and says why; the pool retires.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::data_limits::status_bytes;
use super::host::WorkerProcess;

/// How long a process must have run nothing before what it holds is weighed: a session in the
/// middle of its work keeps its process as it is.
pub(crate) const REST: Duration = Duration::from_secs(1);
/// How much more than a fresh process a resting one may hold.
pub(crate) const HELD_OVER: u64 = 48 * 1024 * 1024;

/// What each watched process held when it was first weighed (by process id), and the least any
/// process of the pool held then: what a fresh process holds.
#[derive(Default)]
pub(crate) struct HeldWatch {
    first: Mutex<HashMap<u64, u64>>,
    fresh: Mutex<Option<u64>>,
}

impl HeldWatch {
    /// Looks at `process`, which keeps `stock` isolates prepared: why to retire it, when it
    /// rests holding more than [`HELD_OVER`] beyond what a fresh process holds (the least any
    /// process of the pool held when it said `ready`, or at its first rest).
    pub(crate) fn look(&self, process: &WorkerProcess, stock: usize) -> Option<String> {
        let resting = process.served_and_running().1 == 0
            && process.ready_isolates() >= stock
            && process.idle_for() >= REST;
        if !resting {
            return None;
        }
        let held = status_bytes(process.pid()?, "VmRSS")?;
        let first = *self
            .first
            .lock()
            .expect("held lock")
            .entry(process.id())
            .or_insert_with(|| process.resident_at_ready().map_or(held, |r| r.min(held)));
        let fresh = {
            let mut fresh = self.fresh.lock().expect("fresh lock");
            let least = fresh.map_or(first, |f| f.min(first));
            *fresh = Some(least);
            least
        };
        verdict(held, fresh)
    }

    /// Forgets the processes not in `alive` (by id).
    pub(crate) fn keep_only(&self, alive: impl Fn(u64) -> bool) {
        self.first
            .lock()
            .expect("held lock")
            .retain(|id, _| alive(*id));
    }
}

/// Why a process holding `held` bytes at rest, against `fresh` for a fresh one, must go.
fn verdict(held: u64, fresh: u64) -> Option<String> {
    const MIB: u64 = 1024 * 1024;
    (held > fresh + HELD_OVER).then(|| {
        format!(
            "it rested holding {} MiB, {} MiB more than a fresh process",
            held / MIB,
            (held - fresh) / MIB
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn a_process_holding_little_more_than_a_fresh_one_stays() {
        assert_eq!(verdict(70 * MIB, 70 * MIB), None);
        assert_eq!(verdict(70 * MIB + HELD_OVER, 70 * MIB), None);
        assert_eq!(verdict(60 * MIB, 70 * MIB), None);
    }

    #[test]
    fn a_process_holding_far_more_than_a_fresh_one_goes_and_says_how_much() {
        let why = verdict(140 * MIB, 70 * MIB).expect("retired");
        assert_eq!(
            why,
            "it rested holding 140 MiB, 70 MiB more than a fresh process"
        );
    }
}
