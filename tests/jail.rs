//! The jail, tested in real child processes: each piece must be in force in the child, and the
//! syscalls it denies must actually be refused (not merely "a filter was installed").

use std::process::Stdio;

use code_executor::sandbox::fs_rules::{FsGrants, support};
use code_executor::sandbox::jail::{JailPolicy, confine};

/// Runs `program args` inside the jail, allowed to read the whole filesystem (these tests are
/// about the other layers), and returns (exit success, stdout).
async fn jailed(program: &str, args: &[&str]) -> (bool, String) {
    let reads_everything = FsGrants {
        executables: vec![program.into()],
        reads: vec!["/".into()],
        ..FsGrants::default()
    };
    jailed_with(program, args, &reads_everything).await
}

/// Runs `program args` inside the jail with `filesystem` as all it may reach.
async fn jailed_with(program: &str, args: &[&str], filesystem: &FsGrants) -> (bool, String) {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    confine(&mut cmd, JailPolicy::default(), filesystem).expect("the ruleset builds");
    let out = cmd.output().await.expect("the jailed child starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        eprintln!("stderr: {}", String::from_utf8_lossy(&out.stderr));
    }
    (out.status.success(), stdout)
}

fn status_field<'a>(status: &'a str, field: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(str::trim)
        .unwrap_or_else(|| panic!("{field} missing from /proc/self/status"))
}

#[tokio::test]
async fn no_new_privs_seccomp_and_no_capabilities() {
    let (ok, status) = jailed("/bin/cat", &["/proc/self/status"]).await;
    assert!(ok);
    assert_eq!(status_field(&status, "NoNewPrivs"), "1");
    assert_eq!(status_field(&status, "Seccomp"), "2");
    assert_eq!(status_field(&status, "Seccomp_filters"), "2");
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(status_field(&status, set), "0000000000000000", "{set}");
    }
    // Only a process holding CAP_SETPCAP can empty its bounding set; when the tests run with
    // it (as root, as in CI), the child's bounding set must be empty too.
    let ours = std::fs::read_to_string("/proc/self/status").unwrap();
    let our_eff = u64::from_str_radix(status_field(&ours, "CapEff"), 16).unwrap();
    if our_eff & (1 << 8) != 0 {
        assert_eq!(status_field(&status, "CapBnd"), "0000000000000000");
    }
}

#[tokio::test]
async fn resource_limits_apply() {
    let (ok, limits) = jailed("/bin/cat", &["/proc/self/limits"]).await;
    assert!(ok);
    let line = |name: &str| {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} missing"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        line("Max core file size").contains("0 0 bytes"),
        "{}",
        line("Max core file size")
    );
    assert!(
        line("Max open files").contains("256 256"),
        "{}",
        line("Max open files")
    );
    assert!(
        line("Max cpu time").contains("600 600"),
        "{}",
        line("Max cpu time")
    );
}

#[tokio::test]
async fn the_environment_is_empty() {
    // Something would leak if the jail did not clear it: the test process has variables.
    assert!(std::env::vars().count() > 0);
    let (ok, env) = jailed("/usr/bin/env", &[]).await;
    assert!(ok);
    assert_eq!(env, "", "the jailed child saw environment variables");
}

#[tokio::test]
async fn inherited_descriptors_are_closed() {
    // A descriptor without close-on-exec, as a careless library might leave behind.
    let file = std::fs::File::open("/etc/hostname").unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    nix::fcntl::fcntl(
        &file,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
    )
    .unwrap();
    let (ok, listing) = jailed("/bin/ls", &["/proc/self/fd"]).await;
    assert!(ok);
    let fds: Vec<i32> = listing
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    assert!(!fds.contains(&fd), "fd {fd} leaked into the jail: {fds:?}");
    // 0-2 are the stdio pipes; ls itself opens one more to read the directory.
    assert!(fds.iter().all(|&f| f <= 3), "{fds:?}");
}

/// A tiny "malicious" program: tries each denied syscall and prints `name errno`.
const PROBE: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def attempt(name, nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    if r == 0 and name.startswith("clone"):
        os._exit(0)  # a clone that succeeded: the child must not run the rest
    print(name, 0 if r >= 0 else ctypes.get_errno(), flush=True)
CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = 0x10000000, 0x40000000, 17
attempt("socket_inet", 41, 2, 1, 0)
attempt("socket_inet6", 41, 10, 1, 0)
attempt("socket_netlink", 41, 16, 3, 0)
attempt("socket_packet", 41, 17, 3, 0)
attempt("ptrace", 101, 0, 0, 0, 0)
attempt("mount", 165, 0, 0, 0, 0, 0)
attempt("umount2", 166, 0, 0)
attempt("unshare", 272, CLONE_NEWUSER)
attempt("setns", 308, 0, 0)
attempt("clone_newuser", 56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
attempt("clone_newnet", 56, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)
attempt("clone3", 435, 0, 0)
attempt("bpf", 321, 0, 0, 0)
attempt("keyctl", 250, 0, 0)
attempt("perf_event_open", 298, 0, 0, 0, 0, 0)
attempt("userfaultfd", 323, 0)
attempt("io_uring_setup", 425, 1, 0)
attempt("init_module", 175, 0, 0, 0)
attempt("finit_module", 313, 0, 0, 0)
attempt("reboot", 169, 0, 0, 0, 0)
attempt("kexec_load", 246, 0, 0, 0, 0)
attempt("swapon", 167, 0, 0)
attempt("pivot_root", 155, 0, 0)
attempt("chroot", 161, 0)
attempt("kcmp", 312, 0, 0, 0, 0, 0)
attempt("pidfd_getfd", 438, 0, 0, 0)
attempt("process_madvise", 440, 0, 0, 0, 0, 0)
attempt("process_mrelease", 448, 0, 0)
"#;

#[tokio::test]
async fn denied_syscalls_are_refused() {
    let (ok, out) = jailed(&which_python(), &["-c", PROBE]).await;
    assert!(ok, "the probe ran");
    let results: Vec<(&str, i32)> = out
        .lines()
        .filter_map(|l| {
            let (name, errno) = l.split_once(' ')?;
            Some((name, errno.parse().ok()?))
        })
        .collect();
    assert_eq!(results.len(), 28, "every probe reported: {out}");
    for (name, errno) in results {
        let expected = if name == "clone3" {
            libc::ENOSYS
        } else {
            libc::EPERM
        };
        assert_eq!(errno, expected, "{name} must be refused by the filter");
    }
}

#[tokio::test]
async fn unix_sockets_and_plain_processes_still_work() {
    // The filter must not break what a runtime legitimately needs.
    let script = "import socket, os; socket.socketpair(); pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0); print('fine')";
    let (ok, out) = jailed(&which_python(), &["-c", script]).await;
    assert!(ok);
    assert_eq!(out.trim(), "fine");
}

/// The real Python interpreter (not a launcher script, which the jail would not let run).
fn which_python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 on PATH");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

// ---- Landlock: the filesystem view, signals and abstract sockets -------------------------------

fn landlock_here() -> bool {
    let here = support().available();
    if !here {
        eprintln!("SKIPPED: this kernel has no Landlock ({:?})", support());
    }
    here
}

#[tokio::test]
async fn only_granted_files_can_be_read() {
    if !landlock_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let granted = dir.path().join("granted.txt");
    std::fs::write(&granted, "visible").unwrap();
    let grants = FsGrants {
        executables: vec!["/bin/cat".into()],
        reads: vec![granted.clone()],
        ..FsGrants::default()
    };
    let (ok, out) = jailed_with("/bin/cat", &[granted.to_str().unwrap()], &grants).await;
    assert!(ok && out == "visible", "{out}");
    for other in ["/etc/passwd", "/etc/hostname", "/proc/1/status"] {
        let (ok, out) = jailed_with("/bin/cat", &[other], &grants).await;
        assert!(!ok && out.is_empty(), "{other} was readable: {out}");
    }
}

/// Inside the jail: rewrites the granted file, then tries to create, remove and run files,
/// printing what happened to each.
const WRITE_PROBE: &str = r#"
import os, sys
cache, new = sys.argv[1], sys.argv[2]
with open(cache, "w") as f:
    f.write("new")
def attempt(name, fn):
    try:
        fn(); print(name, "allowed")
    except PermissionError:
        print(name, "refused")
attempt("create", lambda: open(new, "w").close())
attempt("remove", lambda: os.remove(cache))
attempt("rename", lambda: os.rename(cache, new))
attempt("mkdir", lambda: os.mkdir(new + ".d"))
attempt("exec", lambda: os.execv("/bin/true", ["/bin/true"]))
"#;

#[tokio::test]
async fn granted_files_can_be_rewritten_but_nothing_created_removed_or_run() {
    if !landlock_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.db");
    let new = dir.path().join("new.txt");
    std::fs::write(&cache, "old").unwrap();
    let python = which_python();
    let grants = FsGrants {
        executables: vec![python.clone().into()],
        reads: vec!["/".into()],
        writable_files: vec![cache.clone()],
        ..FsGrants::default()
    };
    let args = [
        "-c",
        WRITE_PROBE,
        cache.to_str().unwrap(),
        new.to_str().unwrap(),
    ];
    let (ok, out) = jailed_with(&python, &args, &grants).await;
    assert!(ok, "{out}");
    assert_eq!(std::fs::read_to_string(&cache).unwrap(), "new");
    for operation in ["create", "remove", "rename", "mkdir", "exec"] {
        assert!(
            out.contains(&format!("{operation} refused")),
            "{operation} was not refused: {out}"
        );
    }
    assert!(!new.exists());
}

/// Tries, from inside the jail, to signal the test process and to reach an abstract unix
/// socket it listens on; prints what happened to each.
const SCOPE_PROBE: &str = r#"
import os, socket, sys
parent, name = int(sys.argv[1]), sys.argv[2]
try:
    os.kill(parent, 0); print("signal allowed")
except PermissionError:
    print("signal refused")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + name); print("abstract allowed")
except PermissionError:
    print("abstract refused")
"#;

#[tokio::test]
async fn signals_and_abstract_sockets_outside_the_jail_are_refused() {
    if !landlock_here() || support().abi < 6 {
        eprintln!("SKIPPED: Landlock scopes need ABI 6");
        return;
    }
    let name = format!("code-executor-jail-test-{}", std::process::id());
    let listener = std::os::unix::net::UnixListener::bind_addr(
        &<std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            name.as_bytes(),
        )
        .unwrap(),
    )
    .unwrap();
    let me = std::process::id().to_string();
    let (ok, out) = jailed(&which_python(), &["-c", SCOPE_PROBE, &me, &name]).await;
    drop(listener);
    assert!(ok, "{out}");
    assert!(out.contains("signal refused"), "{out}");
    assert!(out.contains("abstract refused"), "{out}");
}

#[tokio::test]
async fn a_lower_limit_of_the_server_is_kept_not_raised() {
    // A server started under a lower descriptor limit than the jail's must still start
    // workers: the jail lowers limits, it never fails trying to raise one.
    let python = which_python();
    let grants = FsGrants {
        executables: vec![python.clone().into()],
        reads: vec!["/".into()],
        ..FsGrants::default()
    };
    let code = "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))";
    let mut cmd = tokio::process::Command::new(&python);
    cmd.args(["-c", code])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit in the child, registered before the jail so that it runs first (as if
    // the server had been started under it); no memory of ours is involved.
    unsafe {
        cmd.pre_exec(|| {
            let low = libc::rlimit {
                rlim_cur: 100,
                rlim_max: 100,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &low) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    confine(&mut cmd, JailPolicy::default(), &grants).unwrap();
    let out = cmd.output().await.expect("the jailed child starts");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "(100, 100)");
}
