//! The jail, tested in real child processes: each piece must be in force in the child, and the
//! syscalls it denies must actually be refused (not merely "a filter was installed").

use std::process::Stdio;

use code_executor::sandbox::jail::{JailPolicy, confine};

/// Runs `program args` inside the jail and returns (exit success, stdout).
async fn jailed(program: &str, args: &[&str]) -> (bool, String) {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    confine(&mut cmd, JailPolicy::default());
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
    assert_eq!(results.len(), 24, "every probe reported: {out}");
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

fn which_python() -> String {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("python3"))
                .find(|p| p.is_file())
        })
        .map(|p| p.display().to_string())
        .expect("python3 on PATH")
}
