//! Reading `/proc` for the posture report: the fields of a process's `status`, the mount
//! table, environment variable names (never values), cgroup limits, process lists. Pure parsing
//! where it can be, unit-tested; nothing here changes anything.

use std::path::Path;

/// The fields of `/proc/PID/status` the report looks at.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ProcStatus {
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
    pub(crate) fn read(path: &Path) -> Option<Self> {
        std::fs::read_to_string(path).ok().map(|s| Self::parse(&s))
    }

    pub(crate) fn parse(text: &str) -> Self {
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
pub(crate) struct Mount {
    pub point: String,
    pub options: Vec<String>,
    pub fstype: String,
}

/// Parses `/proc/self/mountinfo`.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
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
pub(crate) fn mount_at<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
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
pub(crate) fn env_names(environ: &[u8]) -> Vec<String> {
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
pub(crate) fn looks_secret(name: &str) -> bool {
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
pub(crate) fn parse_cgroup_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    let v: u64 = t.parse().ok()?;
    // cgroup v1 reports "no limit" as a huge page-aligned number.
    (v < (1u64 << 62)).then_some(v)
}

/// The argv of a process from `/proc/PID/cmdline`.
pub(super) fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn pids() -> Vec<u32> {
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

pub(super) fn base_name(arg0: &str) -> &str {
    arg0.rsplit('/').next().unwrap_or(arg0)
}
