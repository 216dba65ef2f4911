//! The probes `posture` runs in a child process (`code-executor posture-probe NAME`), because
//! they could change the process that runs them: unshare, mount, ptrace, namespace clones,
//! clone3, socket families, plus the orphan, linger and fork-bomb helpers the reaping and pid
//! limit checks use. A probe that cannot run counts as a failure, never as a pass.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::check::{Check, check};
use super::sys;

/// A syscall probe that must be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    Unshare,
    Mount,
    Ptrace,
    CloneNamespace,
    Clone3,
    Sockets,
}

impl Probe {
    pub(crate) const ALL: [Probe; 6] = [
        Probe::Unshare,
        Probe::Mount,
        Probe::Ptrace,
        Probe::CloneNamespace,
        Probe::Clone3,
        Probe::Sockets,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Probe::Unshare => "unshare",
            Probe::Mount => "mount",
            Probe::Ptrace => "ptrace",
            Probe::CloneNamespace => "clone-namespace",
            Probe::Clone3 => "clone3",
            Probe::Sockets => "socket-families",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Probe::Unshare => "unshare refused",
            Probe::Mount => "mount refused",
            Probe::Ptrace => "ptrace refused",
            Probe::CloneNamespace => "namespace clone refused",
            Probe::Clone3 => "clone3 answers ENOSYS",
            Probe::Sockets => "only unix/inet sockets",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Probe> {
        Probe::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Exit codes of `posture-probe`: 0 all refused as required, 1 something was allowed, 2 the
/// probe could not run.
pub(crate) const PROBE_REFUSED: i32 = 0;
pub(crate) const PROBE_ALLOWED: i32 = 1;

pub(super) fn run_probe(exe: &Path, probe: Probe) -> Check {
    let out = Command::new(exe)
        .args(["posture-probe", probe.name()])
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let pass = out.status.code() == Some(PROBE_REFUSED);
            let detail = match out.status.code() {
                Some(PROBE_REFUSED) | Some(PROBE_ALLOWED) => text,
                _ => format!(
                    "the probe could not run ({}): {text} {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            };
            check(probe.title(), pass, detail)
        }
        Err(e) => check(probe.title(), false, format!("cannot start the probe: {e}")),
    }
}

/// Runs one probe in this (child) process; returns its exit code and prints its detail.
pub fn probe_main(name: &str) -> i32 {
    use nix::sched::CloneFlags;
    let Some(probe) = Probe::from_name(name) else {
        if name == "orphan" {
            return orphan();
        }
        if name == "linger" {
            std::thread::sleep(Duration::from_millis(500));
            return 0;
        }
        if name == "fork-bomb" {
            return fork_bomb();
        }
        println!("unknown probe {name}");
        return 2;
    };
    let mut allowed = Vec::new();
    let mut details = Vec::new();
    let mut record = |what: &str, result: Result<(), String>| match result {
        Ok(()) => {
            allowed.push(what.to_string());
            details.push(format!("{what}: ALLOWED"));
        }
        Err(e) => details.push(format!("{what}: {e}")),
    };
    let errno = |e: nix::errno::Errno| e.desc().to_string();
    match probe {
        Probe::Unshare => {
            for (what, flag) in [
                ("CLONE_NEWUSER", CloneFlags::CLONE_NEWUSER),
                ("CLONE_NEWNS", CloneFlags::CLONE_NEWNS),
                ("CLONE_NEWNET", CloneFlags::CLONE_NEWNET),
                ("CLONE_NEWPID", CloneFlags::CLONE_NEWPID),
            ] {
                record(
                    &format!("unshare({what})"),
                    nix::sched::unshare(flag).map_err(errno),
                );
            }
        }
        Probe::Mount => {
            // Targets are a private, empty directory: should a mount be allowed (on a host
            // that is not hardened), it hides nothing and is undone at once.
            let target = std::env::temp_dir().join(format!(".posture-mnt-{}", std::process::id()));
            if let Err(e) = std::fs::create_dir_all(&target) {
                println!("cannot create {}: {e}", target.display());
                return 2;
            }
            let undo = |r: nix::Result<()>| {
                if r.is_ok() {
                    let _ = nix::mount::umount2(&target, nix::mount::MntFlags::MNT_DETACH);
                }
                r.map_err(errno)
            };
            record(
                "mount(tmpfs)",
                undo(nix::mount::mount(
                    Some("tmpfs"),
                    &target,
                    Some("tmpfs"),
                    nix::mount::MsFlags::empty(),
                    None::<&str>,
                )),
            );
            record(
                "mount(MS_BIND)",
                undo(nix::mount::mount(
                    Some(&target),
                    &target,
                    None::<&str>,
                    nix::mount::MsFlags::MS_BIND,
                    None::<&str>,
                )),
            );
            let _ = std::fs::remove_dir(&target);
        }
        Probe::Ptrace => {
            // Our own child: a descendant of the same user, which the kernel would otherwise
            // allow to be traced.
            match Command::new("/proc/self/exe")
                .args(["posture-probe", "linger"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
            {
                Ok(mut child) => {
                    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
                    let attached = nix::sys::ptrace::attach(pid).map_err(errno);
                    if attached.is_ok() {
                        let _ = nix::sys::ptrace::detach(pid, None);
                    }
                    record("ptrace(PTRACE_ATTACH, own child)", attached);
                    let _ = child.kill();
                    let _ = child.wait();
                }
                Err(e) => {
                    println!("cannot start a child to trace: {e}");
                    return 2;
                }
            }
        }
        Probe::CloneNamespace => {
            for (what, flag) in [
                ("CLONE_NEWUSER", libc::CLONE_NEWUSER),
                ("CLONE_NEWNS", libc::CLONE_NEWNS),
                ("CLONE_NEWNET", libc::CLONE_NEWNET),
                ("CLONE_NEWPID", libc::CLONE_NEWPID),
            ] {
                record(
                    &format!("clone({what})"),
                    sys::clone_with_flags(flag).map_err(|e| e.to_string()),
                );
            }
        }
        Probe::Clone3 => {
            let r = sys::clone3_with_flags(libc::CLONE_NEWUSER as u64);
            let ok = matches!(&r, Err(e) if e.raw_os_error() == Some(libc::ENOSYS));
            println!(
                "clone3(CLONE_NEWUSER): {}",
                match r {
                    Ok(()) => "ALLOWED".to_string(),
                    Err(e) => e.to_string(),
                }
            );
            return if ok { PROBE_REFUSED } else { PROBE_ALLOWED };
        }
        Probe::Sockets => {
            use nix::sys::socket::{AddressFamily, SockFlag, SockType, socket};
            for (what, family, ty) in [
                ("AF_NETLINK", AddressFamily::Netlink, SockType::Raw),
                ("AF_PACKET", AddressFamily::Packet, SockType::Raw),
                ("AF_VSOCK", AddressFamily::Vsock, SockType::Stream),
                ("AF_BLUETOOTH", AddressFamily::Bluetooth, SockType::Stream),
            ] {
                record(
                    &format!("socket({what})"),
                    socket(family, ty, SockFlag::empty(), None)
                        .map(drop)
                        .map_err(errno),
                );
            }
            // The families the server needs must still work, or the probe proves nothing.
            for (what, family) in [
                ("AF_INET", AddressFamily::Inet),
                ("AF_UNIX", AddressFamily::Unix),
            ] {
                if let Err(e) = socket(family, SockType::Stream, SockFlag::empty(), None) {
                    println!("socket({what}) fails too ({e}): the probe cannot tell");
                    return 2;
                }
            }
            details.push("AF_INET, AF_UNIX: allowed (needed)".into());
        }
    }
    println!("{}", details.join("; "));
    if allowed.is_empty() {
        PROBE_REFUSED
    } else {
        PROBE_ALLOWED
    }
}

/// Most processes the fork bomb starts before giving up (a container without a pids limit).
const FORK_BOMB_CAP: usize = 4096;

/// Forks sleeping children until fork fails, then kills them all. Exit 0 when fork failed
/// with EAGAIN (a pids limit) before `FORK_BOMB_CAP` processes, 1 otherwise.
fn fork_bomb() -> i32 {
    let mut children = Vec::new();
    let mut failure = None;
    while children.len() < FORK_BOMB_CAP {
        match sys::fork_sleeper(60) {
            Ok(pid) => children.push(nix::unistd::Pid::from_raw(pid)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    for pid in &children {
        let _ = nix::sys::signal::kill(*pid, nix::sys::signal::Signal::SIGKILL);
    }
    for pid in &children {
        let _ = nix::sys::wait::waitpid(*pid, None);
    }
    match failure {
        Some(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
            println!(
                "{} processes started, then fork failed: {e}",
                children.len()
            );
            PROBE_REFUSED
        }
        Some(e) => {
            println!(
                "{} processes started, then fork failed otherwise: {e}",
                children.len()
            );
            PROBE_ALLOWED
        }
        None => {
            println!("{FORK_BOMB_CAP} processes started and no limit was hit");
            PROBE_ALLOWED
        }
    }
}

/// Starts a grandchild that outlives this process, prints its PID and returns at once.
fn orphan() -> i32 {
    match Command::new("/proc/self/exe")
        .args(["posture-probe", "linger"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => {
            println!("{}", child.id());
            // Not waited for: when this process exits, the child is re-parented.
            std::mem::forget(child);
            0
        }
        Err(e) => {
            eprintln!("cannot start the orphan: {e}");
            2
        }
    }
}
