//! The jail every worker process enters between fork and exec. This module holds every `unsafe`
//! block and raw syscall of the sandbox; the crate allows `unsafe` only here and in the posture
//! probes' `appliance::posture::sys` (`#![deny(unsafe_code)]` in lib.rs).
//!
//! Applied in the child, after the standard library has wired the protocol pipes to fds 0-2 and
//! changed into the worker's empty working directory, before `exec` of the runtime, in order:
//! parent-death signal, resource limits, every capability dropped, `no_new_privs`, the Landlock
//! ruleset (built by `fs_rules` in the parent), the seccomp filters, and closing every other
//! descriptor. The environment is cleared and the process group
//! is set on the `Command` (`env_clear`, `process_group(0)`). The seccomp programs are compiled
//! in the parent, before fork; the child only installs them.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, OnceLock};

use landlock::RulesetCreated;

use super::fs_rules::FsGrants;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use tokio::process::Command;

/// Resource limits for a worker (soft = hard).
#[derive(Debug, Clone, Copy)]
pub struct JailPolicy {
    /// RLIMIT_NOFILE: open descriptors (V8 and Deno need some dozens).
    pub max_open_files: u64,
    /// RLIMIT_CPU in seconds: a backstop behind the host's wall-clock deadline.
    pub max_cpu_seconds: u64,
    /// RLIMIT_DATA in bytes, beyond the isolates' reservations: caps the writable memory the
    /// executions of a process can map together (V8 heaps, ArrayBuffers, WebAssembly memory), so
    /// a memory bomb fails inside the process instead of on the host. Each isolate the process
    /// holds adds one [`ISOLATE_RESERVATION_BYTES`]: the host keeps the limit at this plus the
    /// reservations of the isolates that exist (`data_limit`, `set_data_limit`).
    pub max_data_bytes: u64,
    /// Isolates a process may hold at once, its main thread's included (the hard limit allows
    /// that many reservations; the supervisor never asks for more).
    pub max_isolates: u64,
    /// RLIMIT_FSIZE in bytes: the largest file the process may write. Worker processes may write
    /// no file at all (`launch`); this holds even if that failed. A write past it kills the
    /// process (SIGXFSZ). The trusted snapshot run gets more (`launch`).
    pub max_file_bytes: u64,
}

/// The address space V8 reserves for each isolate's code (its code range, mapped writable and
/// executable, so counted against RLIMIT_DATA, but never touched unless code is compiled into
/// it: no resident memory, nothing charged to the cgroup). Measured with Deno 2.9.6 on x86-64:
/// VmData grows by 520 MiB per isolate (`tests/e2e/test_isolates.py` checks it still does).
pub(crate) const ISOLATE_RESERVATION_BYTES: u64 = 520 * 1024 * 1024;

/// The RLIMIT_DATA of a process holding `isolates` isolates under `policy`.
pub(crate) fn data_limit(policy: &JailPolicy, isolates: u64) -> u64 {
    policy.max_data_bytes + isolates.min(policy.max_isolates) * ISOLATE_RESERVATION_BYTES
}

impl Default for JailPolicy {
    fn default() -> Self {
        JailPolicy {
            max_open_files: 256,
            max_cpu_seconds: 600,
            max_data_bytes: 1536 * 1024 * 1024,
            max_isolates: 16,
            max_file_bytes: 8 * 1024 * 1024,
        }
    }
}

/// Configures `cmd` so that the child enters the jail before `exec`, reaching only what
/// `filesystem` grants. Fails when the Landlock ruleset cannot be built.
pub fn confine(cmd: &mut Command, policy: JailPolicy, filesystem: &FsGrants) -> io::Result<()> {
    let filesystem = filesystem.ruleset()?;
    cmd.env_clear();
    cmd.process_group(0);
    cmd.kill_on_drop(true);
    // SAFETY: getpid is always safe; it is read here, in the parent, before fork.
    let parent = unsafe { libc::getpid() };
    let filters = filters();
    // SAFETY: `enter` runs between fork and exec. It makes plain syscalls (prctl, get/setrlimit,
    // getppid, capset, seccomp, close_range, _exit) on values prepared before the fork and moved
    // in. The one library call that may allocate, `caps::clear`, is safe here because the
    // child comes from glibc's fork(), which re-initialises malloc's locks in the child.
    unsafe {
        cmd.pre_exec(move || enter(parent, policy, &filesystem, &filters));
    }
    Ok(())
}

/// Runs in the forked child.
fn enter(
    parent: libc::pid_t,
    policy: JailPolicy,
    filesystem: &RulesetCreated,
    filters: &Filters,
) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory of ours.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) })?;
    // The parent may have died between fork and prctl; then nobody would ever kill us.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: _exit ends the child immediately without running any destructor.
        unsafe { libc::_exit(1) };
    }
    set_limit(libc::RLIMIT_CORE, 0)?;
    set_limit(libc::RLIMIT_NOFILE, policy.max_open_files)?;
    set_limit(libc::RLIMIT_CPU, policy.max_cpu_seconds)?;
    // Room for the main thread's isolate and one more (the supervisor's router, or the snapshot
    // run's one isolate); the host raises it for each isolate the supervisor starts.
    set_limits(
        libc::RLIMIT_DATA,
        data_limit(&policy, 2),
        data_limit(&policy, policy.max_isolates),
    )?;
    set_limit(libc::RLIMIT_FSIZE, policy.max_file_bytes)?;
    drop_capabilities()?;
    // Once set, no exec can gain privileges (setuid bits, file capabilities); required before
    // an unprivileged process may install a seccomp filter.
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) touches no memory.
    check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    // The ruleset is shared with the parent's copy of the closure: apply a duplicate of it.
    filesystem
        .try_clone()?
        .restrict_self()
        .map_err(io::Error::other)?;
    for program in filters.iter() {
        seccompiler::apply_filter(program).map_err(|e| io::Error::other(e.to_string()))?;
    }
    close_inherited_fds()
}

/// Empties every capability set: bounding (when we may), ambient, inheritable, permitted and
/// effective. A process without CAP_SETPCAP cannot shrink its bounding set, but it has no
/// permitted capabilities either, and `no_new_privs` stops exec from granting any.
fn drop_capabilities() -> io::Result<()> {
    use caps::{CapSet, Capability};
    let to_io = |e: caps::errors::CapsError| io::Error::other(e.to_string());
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false) {
        caps::clear(None, CapSet::Bounding).map_err(to_io)?;
    }
    caps::clear(None, CapSet::Ambient).map_err(to_io)?;
    caps::clear(None, CapSet::Inheritable).map_err(to_io)?;
    caps::clear(None, CapSet::Permitted).map_err(to_io)?;
    caps::clear(None, CapSet::Effective).map_err(to_io)
}

type Filters = Arc<Vec<BpfProgram>>;

/// The compiled seccomp programs (built once per process).
fn filters() -> Filters {
    static FILTERS: OnceLock<Filters> = OnceLock::new();
    FILTERS
        .get_or_init(|| Arc::new(compile_filters().expect("the seccomp policy compiles")))
        .clone()
}

/// Syscalls a worker never needs and that widen the kernel attack surface or reach outside the
/// process. Each is refused with EPERM; everything else is allowed (Deno's own permission
/// checks are the first line, this is the second).
const DENIED: &[(i64, &str)] = &[
    (libc::SYS_ptrace, "inspect or control other processes"),
    (libc::SYS_process_vm_readv, "read another process's memory"),
    (
        libc::SYS_process_vm_writev,
        "write another process's memory",
    ),
    (libc::SYS_mount, "change the filesystem view"),
    (libc::SYS_umount2, "change the filesystem view"),
    (libc::SYS_pivot_root, "change the root filesystem"),
    (libc::SYS_chroot, "change the root directory"),
    (
        libc::SYS_unshare,
        "create namespaces (a way around every other restriction)",
    ),
    (libc::SYS_setns, "enter other namespaces"),
    (libc::SYS_bpf, "load eBPF programs into the kernel"),
    (
        libc::SYS_keyctl,
        "kernel keyrings can hold other users' secrets",
    ),
    (libc::SYS_add_key, "kernel keyrings"),
    (libc::SYS_request_key, "kernel keyrings"),
    (
        libc::SYS_perf_event_open,
        "performance counters leak side channels and kernel data",
    ),
    (
        libc::SYS_userfaultfd,
        "a classic kernel exploitation primitive",
    ),
    (
        libc::SYS_io_uring_setup,
        "io_uring bypasses seccomp for the operations it submits",
    ),
    (libc::SYS_io_uring_enter, "io_uring"),
    (libc::SYS_io_uring_register, "io_uring"),
    (libc::SYS_init_module, "load kernel modules"),
    (libc::SYS_finit_module, "load kernel modules"),
    (libc::SYS_delete_module, "unload kernel modules"),
    (libc::SYS_reboot, "reboot the machine"),
    (libc::SYS_kexec_load, "replace the running kernel"),
    (libc::SYS_kexec_file_load, "replace the running kernel"),
    (libc::SYS_swapon, "change swap devices"),
    (libc::SYS_swapoff, "change swap devices"),
    (libc::SYS_acct, "process accounting writes host files"),
    (libc::SYS_quotactl, "filesystem quotas"),
    (
        libc::SYS_name_to_handle_at,
        "file handles bypass path-based checks",
    ),
    (
        libc::SYS_open_by_handle_at,
        "file handles bypass path-based checks (shocker)",
    ),
    // x86 only: arm64 has no I/O port syscalls at all.
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_iopl, "raw I/O port access"),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_ioperm, "raw I/O port access"),
    (libc::SYS_settimeofday, "change the system clock"),
    (libc::SYS_clock_settime, "change the system clock"),
    (libc::SYS_adjtimex, "change the system clock"),
    (libc::SYS_personality, "personality flags can weaken ASLR"),
    (
        libc::SYS_fanotify_init,
        "watch other processes' file activity",
    ),
    (libc::SYS_lookup_dcookie, "kernel debugging interface"),
    (libc::SYS_vhangup, "hang up terminals"),
    (
        libc::SYS_pidfd_getfd,
        "copy a descriptor out of another process",
    ),
    (libc::SYS_process_madvise, "act on another process's memory"),
    (
        libc::SYS_process_mrelease,
        "act on another process's memory",
    ),
    (
        libc::SYS_kcmp,
        "compare other processes' kernel objects (an address oracle)",
    ),
];

/// Namespace flags a `clone` must not carry (creating namespaces defeats the jail).
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWCGROUP,
];

/// The seccomp architecture of this build: the filters check the syscall ABI, so a syscall
/// made through another ABI (32-bit x86 on an x86-64 kernel) is refused outright.
#[cfg(target_arch = "x86_64")]
const fn seccomp_arch() -> TargetArch {
    TargetArch::x86_64
}

/// The seccomp architecture of this build (arm64; the syscall numbers come from `libc` for the
/// target, and the legacy ones such as `open` or `fork` do not exist there, so none is named).
#[cfg(target_arch = "aarch64")]
const fn seccomp_arch() -> TargetArch {
    TargetArch::aarch64
}

fn compile_filters() -> Result<Vec<BpfProgram>, seccompiler::BackendError> {
    let arch = seccomp_arch();
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|(nr, _why)| (*nr, Vec::new())).collect();
    // Sockets: only AF_UNIX may be created (the runtime uses socketpair-style plumbing);
    // internet, netlink, packet and every other family are refused. Deno's permissions already
    // refuse network access; this holds even if they were bypassed.
    rules.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?])?],
    );
    // clone with any namespace flag; plain thread and process clones stay allowed.
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(*flag as u64),
                *flag as u64,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    let deny = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    // clone3 passes its flags in memory, where seccomp cannot look: answer ENOSYS so that libc
    // falls back to clone, whose flags the filter above does check.
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    Ok(vec![deny.try_into()?, clone3.try_into()?])
}

/// The kernel's Landlock ABI version, or 0 when it has none (not built in, or disabled).
pub(crate) fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns the ABI version; it reads
    // no memory and creates no descriptor.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}

/// Sets soft and hard `resource` to `value`, or to the current hard limit when that is lower
/// (an unprivileged process can only lower it, and the server may itself run under a lower one).
fn set_limit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    set_limits(resource, value, value)
}

/// Sets a soft and a hard limit (never above the current hard one).
fn set_limits(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> io::Result<()> {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `current` is a valid rlimit the kernel fills in; it outlives the call.
    check(unsafe { libc::getrlimit(resource, &mut current) })?;
    let hard = hard.min(current.rlim_max);
    let limit = libc::rlimit {
        rlim_cur: soft.min(hard),
        rlim_max: hard,
    };
    // SAFETY: `limit` is a valid, initialised rlimit that outlives the call.
    check(unsafe { libc::setrlimit(resource, &limit) })
}

/// Sets the soft RLIMIT_DATA of process `pid` (a worker process of ours, same user) to `bytes`,
/// within its hard limit: raising the soft limit up to the hard one needs no privilege.
pub(crate) fn set_data_limit(pid: u32, bytes: u64) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit with a null new limit only reads `pid`'s limit into `current`, a valid
    // rlimit that outlives the call.
    check(unsafe { libc::prlimit(pid, libc::RLIMIT_DATA, std::ptr::null(), &mut current) })?;
    let limit = libc::rlimit {
        rlim_cur: bytes.min(current.rlim_max),
        rlim_max: current.rlim_max,
    };
    // SAFETY: `limit` is a valid, initialised rlimit that outlives the call; the old value is
    // not wanted (null).
    check(unsafe { libc::prlimit(pid, libc::RLIMIT_DATA, &limit, std::ptr::null_mut()) })
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
pub(crate) fn kill_group(pgid: u32) {
    signal_group(pgid, libc::SIGKILL);
}

fn signal_group(pgid: u32, signal: libc::c_int) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill with a negative pid signals the process group `pgid`; no memory is involved.
    // An ESRCH result (group already gone) is fine.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy is compiled at run time, for the architecture the binary was built for; this
    /// compiles it (run under qemu-user for arm64: see scripts/build-arm64).
    #[test]
    fn the_seccomp_policy_compiles_for_this_architecture() {
        let programs = compile_filters().expect("the seccomp policy compiles");
        assert_eq!(programs.len(), 2);
        // Each program first checks the architecture, then the syscalls: far more than a stub.
        assert!(programs[0].len() > DENIED.len(), "{}", programs[0].len());
        assert!(!programs[1].is_empty());
    }
}
