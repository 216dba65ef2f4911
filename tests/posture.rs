//! The posture probes against a real seccomp filter: run inside the worker jail (which refuses
//! unshare, mount, ptrace and namespace clones, and answers clone3 with ENOSYS), each probe must
//! report a refusal, and a probe that cannot tell must not pass.

use std::process::Stdio;

use code_executor::sandbox::fs_rules::FsGrants;
use code_executor::sandbox::jail::{JailPolicy, confine};

const BIN: &str = env!("CARGO_BIN_EXE_code-executor");

async fn jailed_probe(name: &str) -> (Option<i32>, String) {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(["posture-probe", name])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let grants = FsGrants {
        executables: vec![BIN.into()],
        reads: vec!["/".into()],
        // The mount probe makes its mount point in the temporary directory.
        writable_trees: vec![std::env::temp_dir()],
        ..FsGrants::default()
    };
    confine(&mut cmd, JailPolicy::default(), &grants).expect("the ruleset builds");
    let out = cmd.output().await.expect("the jailed probe starts");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[tokio::test]
async fn probes_see_the_jail_refuse_namespaces_mount_and_ptrace() {
    for probe in ["unshare", "mount", "ptrace", "clone-namespace", "clone3"] {
        let (code, detail) = jailed_probe(probe).await;
        assert_eq!(code, Some(0), "{probe} was not refused: {detail}");
        assert!(
            !detail.contains("ALLOWED"),
            "{probe} reports an allowed call: {detail}"
        );
    }
    // The errno is the filter's, named in the detail.
    let (_, detail) = jailed_probe("clone3").await;
    assert!(detail.contains("not implemented"), "{detail}");
    let (_, detail) = jailed_probe("unshare").await;
    assert!(
        detail.contains("unshare(CLONE_NEWUSER): Operation not permitted"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_probe_that_cannot_tell_is_not_a_pass() {
    // The jail allows only AF_UNIX sockets, so the socket probe's own sanity check (AF_INET must
    // work) fails: the probe must say it cannot tell (exit 2), not pass.
    let (code, detail) = jailed_probe("socket-families").await;
    assert_eq!(code, Some(2), "{detail}");
    let (code, _) = jailed_probe("no-such-probe").await;
    assert_eq!(code, Some(2));
}
