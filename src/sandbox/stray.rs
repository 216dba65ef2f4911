//! Work that outlives its execution: the backstop under the runner's rules. An execution's
//! isolate is terminated when it ends, but work it handed to the process's own threads before
//! that (WebCrypto's `deriveBits`, `node:crypto`'s `pbkdf2`, `scrypt`, key and prime generation
//! run on Deno's blocking threads) goes on. A session's worker process is quiet between its
//! executions: it runs none, and prepares no isolate once its stock is full. One whose CPU time
//! grows by more than [`STRAY_SHARE`] of the time it stayed quiet is retired, which kills it
//! (it runs nothing); the session's next execution gets a fresh process. This module only
//! watches and says why; the pool retires.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::host::WorkerProcess;

/// How long after an execution ends (or starts) a process is not looked at: what it does
/// then (collecting the isolate's garbage, a report in flight) is its own.
pub(crate) const SETTLE: Duration = Duration::from_secs(1);
/// The share of one core a quiet process may use on average between two looks. Idle, a worker
/// process uses next to none; a thread spinning for code that has ended uses all of one.
pub(crate) const STRAY_SHARE: f64 = 0.25;

/// The CPU time of each watched process when it was last seen quiet.
#[derive(Default)]
pub(crate) struct StrayWatch {
    seen: Mutex<HashMap<u64, Seen>>,
}

#[derive(Clone, Copy)]
struct Seen {
    at: Instant,
    cpu: Duration,
}

impl StrayWatch {
    /// Looks at `process`, which keeps `stock` isolates prepared: why to retire it, when it
    /// stayed quiet since the last look and its CPU time grew by more than its share.
    pub(crate) fn look(&self, process: &WorkerProcess, stock: usize) -> Option<String> {
        let mut seen = self.seen.lock().expect("stray lock");
        let quiet = process.served_and_running().1 == 0
            && process.ready_isolates() >= stock
            && process.idle_for() >= SETTLE;
        let now = process.pid().and_then(cpu_time).filter(|_| quiet);
        let Some(cpu) = now else {
            seen.remove(&process.id());
            return None;
        };
        let at = Instant::now();
        let before = seen.insert(process.id(), Seen { at, cpu });
        let before = before.filter(|b| at - b.at <= process.idle_for())?;
        verdict(cpu.saturating_sub(before.cpu), at - before.at)
    }

    /// Forgets the processes not in `alive` (by id).
    pub(crate) fn keep_only(&self, alive: impl Fn(u64) -> bool) {
        self.seen
            .lock()
            .expect("stray lock")
            .retain(|id, _| alive(*id));
    }
}

/// Why a process that used `cpu` while quiet for `quiet` must go, if it must.
fn verdict(cpu: Duration, quiet: Duration) -> Option<String> {
    (cpu.as_secs_f64() > quiet.as_secs_f64() * STRAY_SHARE).then(|| {
        format!(
            "work kept running after its executions ended ({} ms of CPU in {} ms with no execution running)",
            cpu.as_millis(),
            quiet.as_millis()
        )
    })
}

/// User and system CPU time of process `pid`, all its threads (`/proc/<pid>/stat`).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces: fields are counted after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|t| *t > 0)? as u64;
    Some(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_process_may_use_a_little_cpu_not_a_core() {
        let second = Duration::from_secs(1);
        assert_eq!(verdict(Duration::from_millis(20), second), None);
        assert_eq!(verdict(Duration::from_millis(250), second), None);
        let why = verdict(Duration::from_millis(990), second).unwrap();
        assert!(why.contains("990 ms of CPU in 1000 ms"), "{why}");
    }

    #[test]
    fn cpu_time_is_read_for_this_process() {
        let before = cpu_time(std::process::id()).unwrap();
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < Duration::from_millis(200) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let after = cpu_time(std::process::id()).unwrap();
        assert!(after > before, "{before:?} -> {after:?}");
        assert_eq!(cpu_time(u32::MAX), None);
    }
}
