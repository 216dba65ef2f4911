//! Holding back workers that are still starting while executions run: a pool lists the process
//! group of each worker it is starting in `Starting`; `Starting::pause` stops them all
//! (SIGSTOP) until the last `Paused` guard is dropped (SIGCONT), so that a refill does not
//! take the CPU an execution needs. Signals are sent through `jail`, the home of every syscall.

use std::sync::Arc;

use super::jail;

/// The process groups of workers that are still starting, which their pool may pause (SIGSTOP)
/// while executions run and must then resume (SIGCONT). Pauses nest: the groups resume when the
/// last [`Paused`] is dropped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Starting(Arc<std::sync::Mutex<StartingState>>);

#[derive(Debug, Default)]
struct StartingState {
    groups: Vec<u32>,
    pauses: usize,
}

impl Starting {
    /// Stops every worker now starting until the returned guard (and any other) is dropped.
    pub(crate) fn pause(&self) -> Paused {
        let mut state = self.0.lock().expect("starting lock");
        state.pauses += 1;
        for &pgid in &state.groups {
            jail::pause_group(pgid, true);
        }
        Paused(self.clone())
    }

    /// Lists a group while its worker starts (until the returned guard is dropped). A group
    /// listed during a pause is not stopped: it is the refill the pause has already allowed.
    pub(crate) fn list(&self, pgid: u32) -> Listed {
        self.0.lock().expect("starting lock").groups.push(pgid);
        Listed(self.clone(), pgid)
    }
}

/// A pause of a pool's starting workers; dropping the last one resumes them.
#[derive(Debug)]
pub(crate) struct Paused(Starting);

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
pub(crate) struct Listed(Starting, u32);

impl Drop for Listed {
    fn drop(&mut self) {
        let mut state = self.0.0.lock().expect("starting lock");
        state.groups.retain(|&pgid| pgid != self.1);
        // A start that ends while paused (error, timeout) leaves no stopped process behind.
        jail::pause_group(self.1, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
}
