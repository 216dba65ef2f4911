//! `code-executor posture`: the hardening of the running container as seen from inside it, one
//! pass/fail check per claim (identity, capabilities, `no_new_privs`, seccomp, PID 1 and orphan
//! reaping, read-only root, `/tmp` options, setuid files, refused namespace/mount/ptrace
//! syscalls, socket families, outside network, cgroup limits, secrets in environments, the
//! server and its sandbox workers). The image has no shell, so this is how the security test
//! suite looks inside (`docker exec ... code-executor posture --json`).
//!
//! Probes that could change the probing process (unshare, mount, ptrace, clone) run in a child
//! (`code-executor posture-probe NAME`). A probe that cannot run counts as a failure, never as a
//! pass. This module reads `/proc` and makes syscalls; it changes nothing outside its children
//! and the files it creates and removes itself.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod check;
mod probes;
mod procfs;
#[allow(unsafe_code)]
mod sys;

pub(crate) use check::{Check, Report};
pub(crate) use probes::Probe;
pub use probes::probe_main;
pub(crate) use procfs::{
    Mount, ProcStatus, env_names, looks_secret, mount_at, parse_cgroup_limit, parse_mountinfo,
};

use check::check;
use probes::run_probe;
use procfs::{base_name, cmdline, pids};

/// What the report expects of the container.
#[derive(Debug, Clone)]
pub struct Expectations {
    pub uid: u32,
    pub gid: u32,
    /// Addresses that must not be reachable (TCP connect must fail within `connect_timeout`).
    pub outside: Vec<SocketAddr>,
    pub connect_timeout: Duration,
}

impl Default for Expectations {
    fn default() -> Self {
        Expectations {
            uid: 1001,
            gid: 1001,
            outside: vec![
                "169.254.169.254:80".parse().expect("address"),
                "1.1.1.1:443".parse().expect("address"),
            ],
            connect_timeout: Duration::from_secs(3),
        }
    }
}

/// Runs every check. `exe` is this binary (for the probe children).
pub fn report(exe: &Path, expect: &Expectations) -> Report {
    let me = ProcStatus::read(Path::new("/proc/self/status"));
    let mut checks = vec![
        identity(expect),
        caps_zero("capabilities (self)", &me),
        no_new_privs("no_new_privs (self)", &me),
        seccomp("seccomp (self)", &me),
        landlock(),
        pid1_is_tini(),
        reaping(exe),
        root_read_only(),
        tmp_noexec(),
        setuid_files(),
    ];
    for probe in Probe::ALL {
        checks.push(run_probe(exe, probe));
    }
    checks.push(outside_network(expect));
    checks.push(cgroup_limit(
        "memory limit",
        &[
            "/sys/fs/cgroup/memory.max",
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        ],
    ));
    checks.push(cgroup_limit(
        "pids limit",
        &["/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"],
    ));
    checks.push(env_without_secrets(
        "environment of PID 1",
        Path::new("/proc/1/environ"),
    ));
    checks.extend(server_checks());
    checks.extend(worker_checks());
    Report::new(checks)
}
// ---------------------------------------------------------------------------------------------
// Checks

fn identity(expect: &Expectations) -> Check {
    let uid = nix::unistd::getuid().as_raw();
    let euid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let egid = nix::unistd::getegid().as_raw();
    let groups = nix::unistd::getgroups()
        .map(|g| g.iter().map(|g| g.as_raw()).collect::<Vec<_>>())
        .unwrap_or_default();
    let extra_root = groups.contains(&0);
    check(
        "uid/gid",
        uid == expect.uid
            && euid == expect.uid
            && gid == expect.gid
            && egid == expect.gid
            && !extra_root,
        format!(
            "uid {uid} euid {euid} gid {gid} egid {egid} groups {groups:?} (expected {}:{}, no group 0)",
            expect.uid, expect.gid
        ),
    )
}

fn caps_zero(name: &'static str, status: &Option<ProcStatus>) -> Check {
    let Some(s) = status else {
        return check(name, false, "cannot read the process status");
    };
    let sets = [
        ("CapEff", s.cap_eff),
        ("CapPrm", s.cap_prm),
        ("CapBnd", s.cap_bnd),
        ("CapAmb", s.cap_amb),
        ("CapInh", s.cap_inh),
    ];
    let pass = sets.iter().all(|(_, v)| *v == Some(0));
    let detail = sets
        .iter()
        .map(|(k, v)| match v {
            Some(v) => format!("{k}={v:016x}"),
            None => format!("{k}=?"),
        })
        .collect::<Vec<_>>()
        .join(" ");
    check(name, pass, detail)
}

fn no_new_privs(name: &'static str, status: &Option<ProcStatus>) -> Check {
    let v = status.as_ref().and_then(|s| s.no_new_privs);
    check(name, v == Some(1), format!("NoNewPrivs: {}", opt(v)))
}

fn seccomp(name: &'static str, status: &Option<ProcStatus>) -> Check {
    let v = status.as_ref().and_then(|s| s.seccomp);
    check(
        name,
        v == Some(2),
        format!("Seccomp: {} (2 = filter mode)", opt(v)),
    )
}

/// Workers can be given their kernel-enforced filesystem view: the kernel has Landlock and the
/// container's seccomp profile lets the server use it.
fn landlock() -> Check {
    let support = crate::sandbox::fs_rules::support();
    check(
        "landlock for workers",
        support.available(),
        support.describe(),
    )
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string())
        .unwrap_or_else(|| "unreadable".into())
}

fn pid1_is_tini() -> Check {
    let argv = cmdline(1);
    let pass = argv
        .first()
        .is_some_and(|a| base_name(a).starts_with("tini"));
    check(
        "PID 1 is tini",
        pass,
        if argv.is_empty() {
            "cannot read /proc/1/cmdline".to_string()
        } else {
            format!("PID 1: {}", argv.join(" "))
        },
    )
}

/// A child starts a grandchild that outlives it (an orphan); the orphan must be adopted by
/// PID 1 and, once it exits, reaped (no zombie left behind).
fn reaping(exe: &Path) -> Check {
    const NAME: &str = "orphans reaped by PID 1";
    let out = Command::new(exe)
        .args(["posture-probe", "orphan"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let orphan: Option<u32> = out
        .as_ref()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok());
    let Some(orphan) = orphan else {
        return check(
            NAME,
            false,
            format!("the orphan probe did not run: {out:?}"),
        );
    };
    let status_path = PathBuf::from(format!("/proc/{orphan}/status"));
    let mut adopted_by = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match ProcStatus::read(&status_path) {
            None => {
                let detail = match adopted_by {
                    Some(p) => format!("orphan {orphan} adopted by PID {p}, exited and reaped"),
                    None => format!("orphan {orphan} exited and was reaped"),
                };
                return check(NAME, adopted_by.is_none_or(|p| p == 1), detail);
            }
            Some(s) => {
                if s.state != Some('Z') {
                    adopted_by = s.ppid.or(adopted_by);
                }
                if Instant::now() > deadline {
                    return check(
                        NAME,
                        false,
                        format!(
                            "orphan {orphan} still present after 10 s (state {:?}, parent {:?})",
                            s.state, s.ppid
                        ),
                    );
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn mounts() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

fn root_read_only() -> Check {
    const NAME: &str = "root filesystem read-only";
    let mounts = mounts();
    let Some(root) = mount_at(&mounts, "/") else {
        return check(NAME, false, "cannot find / in /proc/self/mountinfo");
    };
    let ro = root.options.iter().any(|o| o == "ro");
    let probe = PathBuf::from(format!("/.posture-write-{}", std::process::id()));
    let write = std::fs::File::create(&probe);
    let written = write.is_ok();
    if written {
        let _ = std::fs::remove_file(&probe);
    }
    let errno = write.err().map(|e| e.to_string()).unwrap_or_default();
    check(
        NAME,
        ro && !written,
        format!(
            "/ mounted {} ({}); creating a file in /: {}",
            if ro { "ro" } else { "rw" },
            root.fstype,
            if written { "SUCCEEDED".into() } else { errno }
        ),
    )
}

fn tmp_noexec() -> Check {
    const NAME: &str = "/tmp noexec,nosuid";
    let mounts = mounts();
    let Some(tmp) = mount_at(&mounts, "/tmp") else {
        return check(NAME, false, "/tmp is not a separate mount");
    };
    let has = |o: &str| tmp.options.iter().any(|x| x == o);
    // Proof by trying: an "ELF" file that would fail with ENOEXEC if exec were allowed fails
    // with EACCES on a noexec mount before its content is looked at.
    let path = PathBuf::from(format!("/tmp/.posture-exec-{}", std::process::id()));
    let attempt = (|| -> std::io::Result<std::io::Error> {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0")?;
        drop(f);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(match Command::new(&path).stdin(Stdio::null()).spawn() {
            Ok(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
                std::io::Error::other("exec SUCCEEDED")
            }
            Err(e) => e,
        })
    })();
    let _ = std::fs::remove_file(&path);
    let (exec_refused, exec_detail) = match attempt {
        Ok(e) => (
            e.raw_os_error() == Some(libc::EACCES),
            format!("exec of a file in /tmp: {e}"),
        ),
        Err(e) => (false, format!("cannot write a probe file in /tmp: {e}")),
    };
    check(
        NAME,
        has("noexec") && has("nosuid") && exec_refused,
        format!(
            "/tmp {} mounted {}; {exec_detail}",
            tmp.fstype,
            tmp.options.join(",")
        ),
    )
}

fn setuid_files() -> Check {
    const NAME: &str = "no setuid/setgid files";
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    let mut scanned = 0usize;
    let mut stack = vec![PathBuf::from("/")];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                unreadable.push(format!("{} ({e})", dir.display()));
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if dir == Path::new("/")
                && ["proc", "sys", "dev"]
                    .iter()
                    .any(|p| entry.file_name() == *p)
            {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            scanned += 1;
            if meta.is_dir() {
                stack.push(path.clone());
            }
            if meta.is_file() && meta.mode() & 0o6000 != 0 {
                found.push(format!("{} ({:o})", path.display(), meta.mode() & 0o7777));
            }
        }
    }
    let pass = found.is_empty() && unreadable.is_empty();
    let mut detail = format!("{scanned} entries scanned (outside /proc, /sys, /dev)");
    if !found.is_empty() {
        detail.push_str(&format!("; setuid/setgid: {}", found.join(", ")));
    }
    if !unreadable.is_empty() {
        detail.push_str(&format!(
            "; not scanned (unreadable): {}",
            unreadable.join(", ")
        ));
    }
    check(NAME, pass, detail)
}

fn outside_network(expect: &Expectations) -> Check {
    const NAME: &str = "no route outside";
    let mut pass = true;
    let mut details = Vec::new();
    for addr in &expect.outside {
        let started = Instant::now();
        match TcpStream::connect_timeout(addr, expect.connect_timeout) {
            Ok(_) => {
                pass = false;
                details.push(format!("{addr}: CONNECTED"));
            }
            Err(e) => details.push(format!(
                "{addr}: refused after {} ms ({e})",
                started.elapsed().as_millis()
            )),
        }
    }
    check(NAME, pass, details.join("; "))
}

fn cgroup_limit(name: &'static str, files: &[&str]) -> Check {
    for file in files {
        if let Ok(text) = std::fs::read_to_string(file) {
            return match parse_cgroup_limit(&text) {
                Some(v) => check(name, true, format!("{file}: {v}")),
                None => check(name, false, format!("{file}: unlimited ({})", text.trim())),
            };
        }
    }
    check(name, false, format!("none of {files:?} is readable"))
}

fn env_without_secrets(name: &'static str, environ: &Path) -> Check {
    match std::fs::read(environ) {
        Ok(bytes) => {
            let names = env_names(&bytes);
            let secret: Vec<&String> = names.iter().filter(|n| looks_secret(n)).collect();
            check(
                name,
                secret.is_empty(),
                if secret.is_empty() {
                    format!("names: {}", names.join(" "))
                } else {
                    format!("secret-looking: {secret:?}; names: {}", names.join(" "))
                },
            )
        }
        Err(e) => check(
            name,
            false,
            format!("cannot read {}: {e}", environ.display()),
        ),
    }
}

/// The server process (`code-executor serve`), other than this one.
fn server_checks() -> Vec<Check> {
    let me = std::process::id();
    let server = pids().into_iter().find(|&pid| {
        let argv = cmdline(pid);
        pid != me
            && argv
                .first()
                .is_some_and(|a| base_name(a) == "code-executor")
            && argv.iter().any(|a| a == "serve")
    });
    let Some(pid) = server else {
        return vec![check(
            "server process",
            false,
            "no `code-executor serve` process found",
        )];
    };
    let status = ProcStatus::read(Path::new(&format!("/proc/{pid}/status")));
    let mut ident = check(
        "server process",
        status
            .as_ref()
            .is_some_and(|s| s.uid.is_some_and(|u| u != 0)),
        format!(
            "PID {pid} uid {}: {}",
            opt(status.as_ref().and_then(|s| s.uid)),
            cmdline(pid).join(" ")
        ),
    );
    if ident.pass {
        ident.detail.push_str(" (not root)");
    }
    vec![
        ident,
        caps_zero("capabilities (server)", &status),
        no_new_privs("no_new_privs (server)", &status),
        seccomp("seccomp (server)", &status),
        env_without_secrets(
            "environment of the server",
            Path::new(&format!("/proc/{pid}/environ")),
        ),
    ]
}

/// Sandbox workers (`deno run ...` started by the server): jailed, and seeing nothing of the
/// server's environment.
fn worker_checks() -> Vec<Check> {
    let workers: Vec<u32> = pids()
        .into_iter()
        .filter(|&pid| {
            let argv = cmdline(pid);
            argv.first().is_some_and(|a| base_name(a) == "deno")
                && argv.get(1).is_some_and(|a| a == "run")
        })
        .collect();
    if workers.is_empty() {
        return vec![check(
            "sandbox workers",
            false,
            "no Deno worker process found (is the server running with a worker pool?)",
        )];
    }
    let mut checks = vec![check(
        "sandbox workers",
        true,
        format!("{} worker(s): PIDs {workers:?}", workers.len()),
    )];
    let mut caps = Vec::new();
    let mut nnp = Vec::new();
    let mut filt = Vec::new();
    let mut env = Vec::new();
    for &pid in &workers {
        let status = ProcStatus::read(Path::new(&format!("/proc/{pid}/status")));
        let c = caps_zero("", &status);
        caps.push((c.pass, format!("{pid}: {}", c.detail)));
        let n = no_new_privs("", &status);
        nnp.push((n.pass, format!("{pid}: {}", n.detail)));
        let s = seccomp("", &status);
        filt.push((s.pass, format!("{pid}: {}", s.detail)));
        let e = match std::fs::read(format!("/proc/{pid}/environ")) {
            Ok(bytes) => {
                let names = env_names(&bytes);
                let extra: Vec<&String> = names
                    .iter()
                    .filter(|n| {
                        !crate::sandbox::launch::environment_names().any(|a| a == n.as_str())
                    })
                    .collect();
                (
                    extra.is_empty(),
                    format!("{pid}: names {}", names.join(" ")),
                )
            }
            Err(e) => (false, format!("{pid}: cannot read environ: {e}")),
        };
        env.push(e);
    }
    let fold = |name: &'static str, items: Vec<(bool, String)>| {
        check(
            name,
            items.iter().all(|(p, _)| *p),
            items
                .into_iter()
                .map(|(_, d)| d)
                .collect::<Vec<_>>()
                .join("; "),
        )
    };
    checks.push(fold("capabilities (workers)", caps));
    checks.push(fold("no_new_privs (workers)", nnp));
    checks.push(fold("seccomp (workers)", filt));
    checks.push(fold(
        "environment of workers (DENO_DIR and its settings only)",
        env,
    ));
    checks
}

#[cfg(test)]
mod tests;
