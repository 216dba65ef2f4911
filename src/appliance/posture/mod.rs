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

mod sys;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

/// One check of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub pass: bool,
    pub detail: String,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    pub passed: usize,
    pub failed: usize,
}

impl Report {
    fn new(checks: Vec<Check>) -> Self {
        let passed = checks.iter().filter(|c| c.pass).count();
        let failed = checks.len() - passed;
        Report {
            checks,
            passed,
            failed,
        }
    }

    /// One `PASS name: detail` / `FAIL name: detail` line per check.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let mark = if c.pass { "PASS" } else { "FAIL" };
            out.push_str(&format!("{mark} {}: {}\n", c.name, c.detail));
        }
        out.push_str(&format!("{} passed, {} failed\n", self.passed, self.failed));
        out
    }
}

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
// /proc parsing (pure functions, unit-tested)

/// The fields of `/proc/PID/status` the report looks at.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcStatus {
    pub cap_eff: Option<u64>,
    pub cap_prm: Option<u64>,
    pub cap_bnd: Option<u64>,
    pub cap_amb: Option<u64>,
    pub cap_inh: Option<u64>,
    pub no_new_privs: Option<u32>,
    pub seccomp: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub state: Option<char>,
    pub ppid: Option<u32>,
}

impl ProcStatus {
    pub fn read(path: &Path) -> Option<Self> {
        std::fs::read_to_string(path).ok().map(|s| Self::parse(&s))
    }

    pub fn parse(text: &str) -> Self {
        let mut s = ProcStatus::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            let hex = || u64::from_str_radix(value, 16).ok();
            let first = || value.split_whitespace().next().and_then(|v| v.parse().ok());
            match key {
                "CapEff" => s.cap_eff = hex(),
                "CapPrm" => s.cap_prm = hex(),
                "CapBnd" => s.cap_bnd = hex(),
                "CapAmb" => s.cap_amb = hex(),
                "CapInh" => s.cap_inh = hex(),
                "NoNewPrivs" => s.no_new_privs = first(),
                "Seccomp" => s.seccomp = first(),
                "Uid" => s.uid = first(),
                "Gid" => s.gid = first(),
                "State" => s.state = value.chars().next(),
                "PPid" => s.ppid = first(),
                _ => {}
            }
        }
        s
    }
}

/// One line of `/proc/self/mountinfo`: the mount point and its per-mount options.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    pub point: String,
    pub options: Vec<String>,
    pub fstype: String,
}

/// Parses `/proc/self/mountinfo`.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fields: Vec<&str> = left.split(' ').collect();
            let point = unescape_octal(fields.get(4)?);
            let options = fields.get(5)?.split(',').map(str::to_string).collect();
            let fstype = right.split(' ').next()?.to_string();
            Some(Mount {
                point,
                options,
                fstype,
            })
        })
        .collect()
}

/// The mount that `path` (an exact mount point) resolves to: the last one mounted there.
pub fn mount_at<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    mounts.iter().rev().find(|m| m.point == path)
}

fn unescape_octal(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo.
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(oct) = s.get(i + 1..i + 4)
            && let Ok(v) = u8::from_str_radix(oct, 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Variable names from a `/proc/PID/environ` buffer (values are never kept).
pub fn env_names(environ: &[u8]) -> Vec<String> {
    environ
        .split(|b| *b == 0)
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let name = kv.split(|b| *b == b'=').next().unwrap_or_default();
            String::from_utf8_lossy(name).into_owned()
        })
        .collect()
}

/// Whether a variable name looks like it holds a secret. Names ending in `_FILE` point to a
/// file (the way secrets should be passed) and are not secrets themselves.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper.ends_with("_FILE") || upper.ends_with("_PATH") || upper.ends_with("_DIR") {
        return false;
    }
    const MARKERS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ];
    MARKERS.iter().any(|m| upper.contains(m))
}

/// A cgroup limit value: `Some(limit)` when one is set, `None` when unlimited.
pub fn parse_cgroup_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    let v: u64 = t.parse().ok()?;
    // cgroup v1 reports "no limit" as a huge page-aligned number.
    (v < (1u64 << 62)).then_some(v)
}

/// The argv of a process from `/proc/PID/cmdline`.
fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids
}

fn base_name(arg0: &str) -> &str {
    arg0.rsplit('/').next().unwrap_or(arg0)
}

// ---------------------------------------------------------------------------------------------
// Checks

fn check(name: &'static str, pass: bool, detail: impl Into<String>) -> Check {
    Check {
        name,
        pass,
        detail: detail.into(),
    }
}

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
                let extra: Vec<&String> = names.iter().filter(|n| *n != "DENO_DIR").collect();
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
    checks.push(fold("environment of workers (DENO_DIR only)", env));
    checks
}

// ---------------------------------------------------------------------------------------------
// Probes run in a child process

/// A syscall probe that must be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Unshare,
    Mount,
    Ptrace,
    CloneNamespace,
    Clone3,
    Sockets,
}

impl Probe {
    pub const ALL: [Probe; 6] = [
        Probe::Unshare,
        Probe::Mount,
        Probe::Ptrace,
        Probe::CloneNamespace,
        Probe::Clone3,
        Probe::Sockets,
    ];

    pub fn name(self) -> &'static str {
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

    pub fn from_name(name: &str) -> Option<Probe> {
        Probe::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Exit codes of `posture-probe`: 0 all refused as required, 1 something was allowed, 2 the
/// probe could not run.
pub const PROBE_REFUSED: i32 = 0;
pub const PROBE_ALLOWED: i32 = 1;

fn run_probe(exe: &Path, probe: Probe) -> Check {
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

#[cfg(test)]
mod tests;
