//! The jail every worker process enters between fork and exec. This module holds every `unsafe`
//! block and raw syscall of the project.
//!
//! Applied in the child, after the standard library has wired the protocol pipes to fds 0-2 and
//! changed into the worker's empty working directory, before `exec` of the runtime:
//! parent-death signal, `no_new_privs`, resource limits, and closing every other descriptor.
//! The environment is cleared and the process group is set by the caller on the `Command`
//! (`env_clear`, `process_group(0)`). Code here runs in a forked child of a multi-threaded
//! process, so it must not allocate or take locks: only async-signal-safe libc calls.

use std::io;

use tokio::process::Command;

/// Resource limits for a worker (soft = hard).
#[derive(Debug, Clone, Copy)]
pub struct JailPolicy {
    /// RLIMIT_NOFILE: open descriptors (V8 and Deno need some dozens).
    pub max_open_files: u64,
    /// RLIMIT_CPU in seconds: a backstop behind the host's wall-clock deadline.
    pub max_cpu_seconds: u64,
}

impl Default for JailPolicy {
    fn default() -> Self {
        JailPolicy {
            max_open_files: 256,
            max_cpu_seconds: 600,
        }
    }
}

/// Configures `cmd` so that the child enters the jail before `exec`.
pub fn confine(cmd: &mut Command, policy: JailPolicy) {
    cmd.env_clear();
    cmd.process_group(0);
    cmd.kill_on_drop(true);
    // SAFETY: getpid is always safe; it is read here, in the parent, before fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: `enter` only makes async-signal-safe syscalls (prctl, setrlimit, getppid,
    // close_range, _exit) on values captured by copy; it neither allocates nor locks, which is
    // what `pre_exec` requires of code running between fork and exec.
    unsafe {
        cmd.pre_exec(move || enter(parent, policy));
    }
}

/// Runs in the forked child. Must stay async-signal-safe.
fn enter(parent: libc::pid_t, policy: JailPolicy) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) })?;
    // The parent may have died between fork and prctl; then nobody would ever kill us.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: _exit ends the child immediately without running any destructor.
        unsafe { libc::_exit(1) };
    }
    // Once set, no exec can gain privileges (setuid bits, file capabilities); required before
    // an unprivileged process may install a seccomp filter.
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) touches no memory.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    set_limit(libc::RLIMIT_CORE, 0)?;
    set_limit(libc::RLIMIT_NOFILE, policy.max_open_files)?;
    set_limit(libc::RLIMIT_CPU, policy.max_cpu_seconds)?;
    close_inherited_fds()
}

fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `limit` is a valid, initialised rlimit that outlives the call.
    check(unsafe { libc::setrlimit(resource, &limit) })
}

/// Closes every descriptor above stderr, so nothing the server holds (client sockets,
/// downstream pipes, log files) leaks into the worker.
fn close_inherited_fds() -> io::Result<()> {
    // SAFETY: close_range(3, MAX, 0) only closes descriptors of this (child) process; fds 0-2
    // are the protocol pipes and stay open.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    check(rc as libc::c_int)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Sends SIGKILL to a whole process group (the worker and anything it started).
pub fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill with a negative pid signals the process group `pgid`; no memory is involved.
    // An ESRCH result (group already gone) is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
