//! The data limit (RLIMIT_DATA) of a worker process, fitted to the isolates it holds as its
//! supervisor reports them, and the memory figures read from `/proc/<pid>/status`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::jail;
use super::proto;

/// Fits a process's data limit to the isolates it holds (see `jail::ISOLATE_RESERVATION_BYTES`):
/// `worker_memory_mb` plus one reservation per isolate. An ended isolate's reservation is freed
/// a little after the supervisor reports it (its thread tears it down), and a limit below what
/// the process maps already would make V8 fail fatally in another isolate's next allocation. So
/// a limit going down stays at what is mapped plus [`LIMIT_SLACK`] while that is more, and is
/// fitted again [`REFIT_AFTER`] later; it never rises above the previous limit plus the new
/// isolates' reservations, so what the executions may map never grows by it. Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct DataLimits {
    pid: Option<u32>,
    policy: jail::JailPolicy,
    /// The count last reported, the limit set for it, and how many fits there have been (a
    /// later refit applies only to the last).
    last: Arc<Mutex<LastFit>>,
}

#[derive(Debug, Clone, Copy)]
struct LastFit {
    count: u64,
    limit: u64,
    fits: u64,
}

impl LastFit {
    /// The limit for `count` isolates after this fit: their `target`, unless the process maps
    /// more (`mapped`, plus the reservations of the isolates about to start) than that leaves
    /// room for, and then never more than this fit's limit plus those reservations.
    fn next_limit(&self, count: u64, target: u64, mapped: u64) -> u64 {
        let added = count.saturating_sub(self.count) * jail::ISOLATE_RESERVATION_BYTES;
        let ceiling = self.limit + added;
        target.max(ceiling.min(mapped + added + LIMIT_SLACK))
    }
}

/// Room above what a process maps while its limit goes down.
const LIMIT_SLACK: u64 = 64 * 1024 * 1024;

/// When a limit that could not yet go down to its count is fitted again.
const REFIT_AFTER: Duration = Duration::from_millis(250);

impl DataLimits {
    pub(super) fn new(pid: Option<u32>, policy: jail::JailPolicy) -> Self {
        // What the jail set before exec: room for the main thread's isolate and the router's.
        let last = LastFit {
            count: 2,
            limit: jail::data_limit(&policy, 2),
            fits: 0,
        };
        DataLimits {
            pid,
            policy,
            last: Arc::new(Mutex::new(last)),
        }
    }

    /// Sets the limit for `count` isolates; the answer to send, or why the process must go (it
    /// asked for more isolates than it may hold, or the limit cannot be set).
    pub(super) fn fit(&self, count: u64) -> Result<String, String> {
        if count > self.policy.max_isolates {
            return Err(format!(
                "it asked for {count} isolates, over its {}",
                self.policy.max_isolates
            ));
        }
        let pid = self.pid.ok_or("it has no process id")?;
        let target = jail::data_limit(&self.policy, count);
        let mapped = status_bytes(pid, "VmData").unwrap_or(0);
        let (limit, fits) = {
            let mut last = self.last.lock().expect("limits lock");
            let limit = last.next_limit(count, target, mapped);
            *last = LastFit {
                count,
                limit,
                fits: last.fits + 1,
            };
            (limit, last.fits)
        };
        jail::set_data_limit(pid, limit).map_err(|e| format!("cannot set its data limit: {e}"))?;
        if limit > target {
            let limits = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(REFIT_AFTER).await;
                if limits.last.lock().expect("limits lock").fits == fits {
                    let _ = limits.fit(count);
                }
            });
        }
        Ok(proto::allowed_envelope(count))
    }
}

/// A memory figure of process `pid` from `/proc/<pid>/status` (`field`: `VmData`, the memory
/// RLIMIT_DATA counts; `VmHWM`, the peak resident memory), in bytes.
pub(super) fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let value = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    let kib: u64 = value.split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;
    const RES: u64 = jail::ISOLATE_RESERVATION_BYTES;

    fn at(count: u64, limit: u64) -> LastFit {
        LastFit {
            count,
            limit,
            fits: 0,
        }
    }

    #[test]
    fn memory_figures_are_read_from_proc_status_in_bytes() {
        let me = std::process::id();
        let data = status_bytes(me, "VmData").expect("VmData of this process");
        assert!(data > MIB && data.is_multiple_of(1024), "{data}");
        assert!(status_bytes(me, "VmHWM").is_some_and(|b| b > 0));
        // A field that is only a prefix of another, or absent, is not read.
        assert_eq!(status_bytes(me, "Vm"), None);
        assert_eq!(status_bytes(me, "VmNoSuchField"), None);
    }

    #[tokio::test]
    async fn a_process_gets_the_data_limit_of_its_isolates_and_never_more_isolates() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let policy = jail::JailPolicy {
            max_data_bytes: 100 * MIB,
            max_isolates: 5,
            ..jail::JailPolicy::default()
        };
        let limits = DataLimits::new(Some(child.id()), policy);
        let refused = limits.fit(6);
        let allowed = limits.fit(3);
        let soft = std::fs::read_to_string(format!("/proc/{}/limits", child.id()))
            .expect("limits")
            .lines()
            .find(|l| l.starts_with("Max data size"))
            .and_then(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok());
        let _ = child.kill();
        let _ = child.wait();
        let refused = refused.expect_err("six isolates are over the five allowed");
        assert!(refused.contains("over its 5"), "{refused}");
        assert_eq!(allowed, Ok(proto::allowed_envelope(3)));
        assert_eq!(soft, Some(100 * MIB + 3 * RES));
    }

    #[test]
    fn the_limit_follows_the_isolates_when_nothing_else_is_mapped() {
        let base = 1536 * MIB;
        // Growing: room for the new reservation; going down: back to the target.
        assert_eq!(
            at(4, base + 4 * RES).next_limit(5, base + 5 * RES, 4 * RES + 80 * MIB),
            base + 5 * RES
        );
        assert_eq!(
            at(5, base + 5 * RES).next_limit(4, base + 4 * RES, 4 * RES + 80 * MIB),
            base + 4 * RES
        );
    }

    #[test]
    fn an_ended_isolate_still_mapped_keeps_its_room_for_a_while() {
        let base = 1536 * MIB;
        // Five reservations still mapped (and executions using most of their memory) while the
        // count says four: not below what is mapped.
        let mapped = 5 * RES + base - 20 * MIB;
        let limit = at(5, base + 5 * RES).next_limit(4, base + 4 * RES, mapped);
        assert_eq!(limit, base + 5 * RES);
        assert!(limit >= mapped + 16 * MIB);
        // And a new isolate then still finds room beside the one not yet gone.
        let next = at(4, limit).next_limit(5, base + 5 * RES, mapped);
        assert!(next >= mapped + RES, "{next} < {}", mapped + RES);
    }

    #[test]
    fn memory_mapped_up_to_the_limit_gains_nothing_from_a_refit() {
        let base = 1536 * MIB;
        let limit = base + 4 * RES;
        // A bomb holds the process at its limit: refits and counts going down never raise it.
        assert_eq!(at(4, limit).next_limit(4, limit, limit), limit);
        assert_eq!(at(4, limit).next_limit(3, base + 3 * RES, limit), limit);
        // A new isolate gets its reservation's worth, no more.
        assert_eq!(
            at(4, limit).next_limit(5, base + 5 * RES, limit),
            limit + RES
        );
    }
}
