use super::*;

const STATUS_JAILED: &str = "Name:\tdeno\nState:\tS (sleeping)\nPPid:\t7\nUid:\t1001\t1001\t1001\t1001\n\
Gid:\t1001\t1001\t1001\t1001\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n\
CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n\
NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n";

const STATUS_ROOT: &str = "Name:\tbash\nState:\tR (running)\nPPid:\t1\nUid:\t0\t0\t0\t0\n\
Gid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\n\
CapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n\
NoNewPrivs:\t0\nSeccomp:\t0\n";

#[test]
fn status_of_a_jailed_process_passes() {
    let s = Some(ProcStatus::parse(STATUS_JAILED));
    assert_eq!(s.as_ref().unwrap().uid, Some(1001));
    assert_eq!(s.as_ref().unwrap().ppid, Some(7));
    assert_eq!(s.as_ref().unwrap().state, Some('S'));
    assert!(caps_zero("caps", &s).pass);
    assert!(no_new_privs("nnp", &s).pass);
    assert!(seccomp("seccomp", &s).pass);
}

#[test]
fn status_of_root_fails_every_hardening_check() {
    let s = Some(ProcStatus::parse(STATUS_ROOT));
    let caps = caps_zero("caps", &s);
    assert!(!caps.pass);
    assert!(
        caps.detail.contains("CapEff=000001ffffffffff"),
        "{}",
        caps.detail
    );
    assert!(!no_new_privs("nnp", &s).pass);
    assert!(!seccomp("seccomp", &s).pass);
}

#[test]
fn an_unreadable_status_is_a_failure_not_a_pass() {
    assert!(!caps_zero("caps", &None).pass);
    assert!(!no_new_privs("nnp", &None).pass);
    assert!(!seccomp("seccomp", &None).pass);
    // A status without the fields (an old kernel) is no proof either.
    let empty = Some(ProcStatus::parse("Name:\tx\n"));
    assert!(!caps_zero("caps", &empty).pass);
    assert!(!seccomp("seccomp", &empty).pass);
}

#[test]
fn mountinfo_gives_the_last_mount_at_a_point() {
    let text = "\
22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/a\n\
23 22 0:22 / / ro,relatime - overlay overlay rw,lowerdir=/b\n\
30 23 0:25 / /tmp rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,size=65536k\n\
31 23 0:26 / /with\\040space rw - tmpfs tmpfs rw\n";
    let mounts = parse_mountinfo(text);
    assert_eq!(mounts.len(), 4);
    let root = mount_at(&mounts, "/").unwrap();
    assert!(root.options.contains(&"ro".to_string()));
    let tmp = mount_at(&mounts, "/tmp").unwrap();
    assert_eq!(tmp.fstype, "tmpfs");
    assert!(tmp.options.contains(&"noexec".to_string()));
    assert!(mount_at(&mounts, "/with space").is_some());
    assert!(mount_at(&mounts, "/nowhere").is_none());
}

#[test]
fn env_names_never_keep_values() {
    let names = env_names(b"PATH=/usr/bin\0CODE_EXECUTOR_HTTP_TOKEN=s3cr3t\0EMPTY=\0\0");
    assert_eq!(names, ["PATH", "CODE_EXECUTOR_HTTP_TOKEN", "EMPTY"]);
}

#[test]
fn secret_looking_names_are_flagged_but_file_pointers_are_not() {
    for name in [
        "CODE_EXECUTOR_HTTP_TOKEN",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "OPENAI_API_KEY",
        "DB_PASSWORD",
        "Authorization",
    ] {
        assert!(looks_secret(name), "{name}");
    }
    for name in [
        "PATH",
        "HOME",
        "DENO_DIR",
        "CODE_EXECUTOR_HTTP_TOKEN_FILE",
        "CODE_EXECUTOR_CONFIG",
        "HOSTNAME",
    ] {
        assert!(!looks_secret(name), "{name}");
    }
}

#[test]
fn cgroup_limits_distinguish_set_from_unlimited() {
    assert_eq!(parse_cgroup_limit("2147483648\n"), Some(2147483648));
    assert_eq!(parse_cgroup_limit("256\n"), Some(256));
    assert_eq!(parse_cgroup_limit("max\n"), None);
    assert_eq!(parse_cgroup_limit("9223372036854771712\n"), None);
    assert_eq!(parse_cgroup_limit("garbage"), None);
}

#[test]
fn report_counts_and_prints_each_check() {
    let report = Report::new(vec![
        check("one", true, "fine"),
        check("two", false, "broken"),
    ]);
    assert_eq!((report.passed, report.failed), (1, 1));
    let text = report.to_text();
    assert!(text.contains("PASS one: fine\n"), "{text}");
    assert!(text.contains("FAIL two: broken\n"), "{text}");
}

#[test]
fn probe_names_round_trip() {
    for p in Probe::ALL {
        assert_eq!(Probe::from_name(p.name()), Some(p));
    }
    assert_eq!(Probe::from_name("nope"), None);
}

#[test]
fn an_environment_file_that_cannot_be_read_fails() {
    let c = env_without_secrets("env", Path::new("/nonexistent/environ"));
    assert!(!c.pass, "{}", c.detail);
}

#[test]
fn secrets_in_an_environment_file_fail_and_show_no_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("environ");
    std::fs::write(&path, b"PATH=/bin\0GITHUB_TOKEN=ghp_abcdef\0").unwrap();
    let c = env_without_secrets("env", &path);
    assert!(!c.pass);
    assert!(c.detail.contains("GITHUB_TOKEN"), "{}", c.detail);
    assert!(!c.detail.contains("ghp_abcdef"), "{}", c.detail);
    std::fs::write(&path, b"PATH=/bin\0HOME=/home/x\0").unwrap();
    assert!(env_without_secrets("env", &path).pass);
}
