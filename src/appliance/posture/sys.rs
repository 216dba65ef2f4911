//! The raw syscalls of the posture probes that no safe wrapper offers: `clone` and `clone3`
//! with namespace flags. Each must be refused inside the container; if one is not, the child it
//! created exits at once. This is the only `unsafe` outside `sandbox::jail`, fenced here on
//! purpose: it is diagnostic code that runs only in a `posture-probe` child process.

use std::io;

/// `clone(flags | SIGCHLD)` with no new stack (fork-like). Returns the errno when refused, or
/// `Ok(())` when a child was created (it has already exited and been waited for).
pub(crate) fn clone_with_flags(flags: libc::c_int) -> Result<(), io::Error> {
    let flags = (flags | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: clone(flags, stack = NULL, then three NULL/0 arguments) on x86-64 (parent_tid,
    // child_tid, tls) and arm64 (parent_tid, tls, child_tid) alike:
    // with a NULL stack the child runs on a copy of the caller's stack, like fork. No pointer
    // is passed, so no memory of ours is touched by the kernel.
    let rc = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    settle(rc)
}

/// `clone3` with `flags` in its argument structure (first version, 64 bytes).
pub(crate) fn clone3_with_flags(flags: u64) -> Result<(), io::Error> {
    // struct clone_args v0: flags, pidfd, child_tid, parent_tid, exit_signal, stack,
    // stack_size, tls; all but flags and exit_signal zero (fork-like, no pointers).
    let args: [u64; 8] = [flags, 0, 0, 0, libc::SIGCHLD as u64, 0, 0, 0];
    // SAFETY: `args` is a valid, initialised clone_args (version 0, 64 bytes) that outlives the
    // call; the kernel only reads it. No pointer inside it is set.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            args.as_ptr(),
            std::mem::size_of_val(&args) as libc::size_t,
        )
    };
    settle(rc)
}

/// Interprets the return value of a fork-like syscall, ending the child at once.
fn settle(rc: libc::c_long) -> Result<(), io::Error> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    if rc == 0 {
        // In the child: leave without running anything (no destructors, no atexit).
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(0) };
    }
    let pid = nix::unistd::Pid::from_raw(rc as libc::pid_t);
    let _ = nix::sys::wait::waitpid(pid, None);
    Ok(())
}

/// Forks a child that sleeps `seconds` and exits; returns its PID (the fork-bomb probe).
pub(crate) fn fork_sleeper(seconds: u32) -> Result<libc::pid_t, io::Error> {
    // SAFETY: called only from the `posture-probe` process, which is single-threaded (it runs
    // before any runtime thread is started), so the child may run code after fork; it only
    // calls the async-signal-safe sleep and _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: see above; _exit never returns.
        unsafe {
            libc::sleep(seconds);
            libc::_exit(0);
        }
    }
    Ok(pid)
}
