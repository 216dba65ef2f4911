//! Fitting the workers' memory limit into the container's. At start, a serving process reads
//! the memory limit of its cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`; the lowest on
//! its path) and checks that `max_concurrent_executions` workers of `worker_memory_mb` each, the
//! warm pools, the server itself and a memory-backed `/tmp` fit under it. When they do not, the
//! per-worker limit (`RLIMIT_DATA`) shrinks to fit, never below the smallest `worker_memory_mb`
//! the settings accept; when even that does not fit, the server refuses to start and names the
//! settings to change. So a memory bomb meets the worker's own limit ("out of memory") before
//! the container's OOM killer ("killed by signal 9"), and the server is not the one killed.
//!
//! The accounting: the executions running in a worker process may touch all of its
//! `worker_memory_mb` together (the bomb does; the isolates' code reservations that
//! `RLIMIT_DATA` also counts are never touched), so each execution that may run counts at
//! `worker_memory_mb`; a prepared isolate waiting in a process counts at what it holds resident
//! with its share of its process (measured, see the constants); a tmpfs `/tmp` counts at its size
//! (its pages are charged to the same cgroup, and with no swap they cannot be reclaimed).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::settings::Settings;

const MIB: u64 = 1024 * 1024;
/// Resident memory of a prepared TypeScript isolate with its share of its worker process, in
/// MiB, with headroom: a process with two prepared isolates holds about 64 MiB.
pub const IDLE_TYPESCRIPT_WORKER_MB: u64 = 64;
/// Resident memory of a prepared Python isolate (Pyodide loaded from the memory snapshot) with
/// its share of its worker process, in MiB, with headroom: a process with one holds about 230
/// MiB, each further one about 100 MiB more.
pub const IDLE_PYTHON_WORKER_MB: u64 = 224;
/// The server process (HTTP front, downstream clients, buffers of results up to
/// `max_result_bytes`) and the page cache of the runtimes it starts, in MiB.
pub const SERVER_RESERVE_MB: u64 = 192;
/// A limit at or above this many bytes is "no limit" (cgroup v1 writes a page-rounded
/// `i64::MAX` for unlimited).
const UNLIMITED_FROM: u64 = 1 << 60;

/// What the settings ask of the container's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    pub concurrent: u64,
    pub worker_mb: u64,
    /// The smallest `worker_memory_mb` the settings accept (`heap_limit_mb` + the runtime's).
    pub min_worker_mb: u64,
    pub pool_typescript: u64,
    pub pool_python: u64,
    /// Size of a memory-backed `/tmp` (0 when it is on disk).
    pub tmp_mb: u64,
}

impl Demand {
    pub fn of(settings: &Settings, tmp_mb: u64) -> Demand {
        Demand {
            concurrent: settings.max_concurrent_executions as u64,
            worker_mb: settings.worker_memory_mb,
            min_worker_mb: settings.min_worker_memory_mb(),
            pool_typescript: settings.pool_size_typescript as u64,
            pool_python: settings.pool_size_python as u64,
            tmp_mb,
        }
    }

    /// Everything but the running workers, in MiB.
    fn reserved_mb(&self) -> u64 {
        self.pool_typescript * IDLE_TYPESCRIPT_WORKER_MB
            + self.pool_python * IDLE_PYTHON_WORKER_MB
            + SERVER_RESERVE_MB
            + self.tmp_mb
    }

    fn needed_mb(&self, worker_mb: u64) -> u64 {
        self.concurrent * worker_mb + self.reserved_mb()
    }
}

/// The outcome, reported by `health` (as `runtime.memory`) and logged at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryPlan {
    /// The cgroup's memory limit in MiB; none when the server runs without one.
    pub limit_mb: Option<u64>,
    /// The file the limit was read from.
    pub limit_source: Option<PathBuf>,
    /// `worker_memory_mb` as configured.
    pub configured_worker_mb: u64,
    /// The per-worker limit in force.
    pub worker_mb: u64,
    /// Pools, server and memory-backed `/tmp`, in MiB.
    pub reserved_mb: u64,
    /// `max_concurrent_executions` × `worker_mb` + `reserved_mb`.
    pub needed_mb: u64,
    /// Whether `worker_mb` was lowered to fit.
    pub shrunk: bool,
}

/// The settings cannot fit the container's memory even with the smallest workers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the container's memory limit ({limit_mb} MiB, {source_file}) cannot hold \
     max_concurrent_executions ({concurrent}) x the smallest worker ({min_worker_mb} MiB: \
     heap_limit_mb + 768) + {reserved_mb} MiB for the warm pools (pool_size_typescript, \
     pool_size_python), the server and a memory-backed /tmp = {needed_mb} MiB; raise the \
     container's memory limit to at least {needed_mb} MiB or lower max_concurrent_executions, \
     the pool sizes or heap_limit_mb"
)]
pub struct FitError {
    pub limit_mb: u64,
    pub source_file: String,
    pub concurrent: u64,
    pub min_worker_mb: u64,
    pub reserved_mb: u64,
    pub needed_mb: u64,
}

/// The cgroup memory limit of this process and the file it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLimit {
    pub bytes: u64,
    pub file: PathBuf,
}

/// Fits `demand` under `limit_mb` (none: no limit, nothing to fit).
pub fn fit(limit: Option<&CgroupLimit>, demand: Demand) -> Result<MemoryPlan, FitError> {
    let reserved_mb = demand.reserved_mb();
    let limit_mb = limit.map(|l| l.bytes / MIB);
    let mut plan = MemoryPlan {
        limit_mb,
        limit_source: limit.map(|l| l.file.clone()),
        configured_worker_mb: demand.worker_mb,
        worker_mb: demand.worker_mb,
        reserved_mb,
        needed_mb: demand.needed_mb(demand.worker_mb),
        shrunk: false,
    };
    let Some(limit_mb) = limit_mb else {
        return Ok(plan);
    };
    if plan.needed_mb <= limit_mb {
        return Ok(plan);
    }
    let room = limit_mb.saturating_sub(reserved_mb) / demand.concurrent.max(1);
    if room < demand.min_worker_mb {
        return Err(FitError {
            limit_mb,
            source_file: limit.map_or_else(String::new, |l| l.file.display().to_string()),
            concurrent: demand.concurrent,
            min_worker_mb: demand.min_worker_mb,
            reserved_mb,
            needed_mb: demand.needed_mb(demand.min_worker_mb),
        });
    }
    plan.worker_mb = room;
    plan.needed_mb = demand.needed_mb(room);
    plan.shrunk = true;
    Ok(plan)
}

/// Reads the limit (`None`: unlimited) of one cgroup limit file's content.
pub fn parse_limit(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes < UNLIMITED_FROM).then_some(bytes)
}

/// The memory limit files that bound this process, from `/proc/self/cgroup` (`proc_cgroup`)
/// and the cgroup mount `root`: for cgroup v2 (`0::/path`) `memory.max` in the process's
/// cgroup and each ancestor, for v1 (`N:...memory...:/path`) `memory.limit_in_bytes` in the
/// memory hierarchy likewise; and the mount's own top files, which is where a container with
/// its own cgroup namespace (or Docker's v1 bind mount) sees its limit.
pub fn limit_files(root: &Path, proc_cgroup: &str) -> Vec<PathBuf> {
    let mut files = vec![
        root.join("memory.max"),
        root.join("memory").join("memory.limit_in_bytes"),
    ];
    for line in proc_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (base, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut dir = base.clone();
        for part in path.split('/').filter(|p| !p.is_empty() && *p != "..") {
            dir.push(part);
            files.push(dir.join(file));
        }
    }
    files.dedup();
    files
}

/// The lowest memory limit among `limit_files` (unreadable files and "max" ignored).
pub fn memory_limit(root: &Path, proc_cgroup: &str) -> Option<CgroupLimit> {
    limit_files(root, proc_cgroup)
        .into_iter()
        .filter_map(|file| {
            let bytes = parse_limit(&std::fs::read_to_string(&file).ok()?)?;
            Some(CgroupLimit { bytes, file })
        })
        .min_by_key(|l| l.bytes)
}

/// Size in MiB of `dir`'s filesystem when it is a tmpfs (memory-backed), else 0.
fn tmpfs_mb(dir: &Path) -> u64 {
    use nix::sys::statfs::{TMPFS_MAGIC, statfs};
    match statfs(dir) {
        Ok(fs) if fs.filesystem_type() == TMPFS_MAGIC => {
            // The types of the block count and size differ between targets (u64 here).
            #[allow(clippy::unnecessary_cast)]
            let blocks = fs.blocks() as u64;
            blocks * fs.block_size() as u64 / MIB
        }
        _ => 0,
    }
}

/// Reads this process's cgroup limit and fits `settings.worker_memory_mb` under it (lowering
/// it when needed), logging what it found and did.
pub fn apply(settings: &mut Settings) -> Result<MemoryPlan, FitError> {
    let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let limit = memory_limit(Path::new("/sys/fs/cgroup"), &proc_cgroup);
    let demand = Demand::of(settings, tmpfs_mb(&std::env::temp_dir()));
    let plan = fit(limit.as_ref(), demand)?;
    settings.worker_memory_mb = plan.worker_mb;
    match (plan.limit_mb, plan.shrunk) {
        (None, _) => tracing::info!(
            "no cgroup memory limit found: workers keep worker_memory_mb = {} MiB",
            plan.worker_mb
        ),
        (Some(limit), false) => tracing::info!(
            "memory: limit {limit} MiB holds {} x {} MiB workers + {} MiB (pools, server, /tmp)",
            demand.concurrent,
            plan.worker_mb,
            plan.reserved_mb
        ),
        (Some(limit), true) => tracing::warn!(
            "!!! the container's memory limit ({limit} MiB) cannot hold max_concurrent_executions \
             ({}) x worker_memory_mb ({} MiB) + {} MiB (pools, server, /tmp): each worker is \
             limited to {} MiB instead, so that a memory bomb ends as \"out of memory\" in its \
             execution, not as an OOM kill; raise the limit to {} MiB or lower the settings to \
             silence this !!!",
            demand.concurrent,
            plan.configured_worker_mb,
            plan.reserved_mb,
            plan.worker_mb,
            demand.needed_mb(plan.configured_worker_mb)
        ),
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(concurrent: u64, worker_mb: u64) -> Demand {
        Demand {
            concurrent,
            worker_mb,
            min_worker_mb: 1024,
            pool_typescript: 2,
            pool_python: 1,
            tmp_mb: 256,
        }
    }

    fn limit(mb: u64) -> CgroupLimit {
        CgroupLimit {
            bytes: mb * MIB,
            file: PathBuf::from("/sys/fs/cgroup/memory.max"),
        }
    }

    const RESERVED: u64 =
        2 * IDLE_TYPESCRIPT_WORKER_MB + IDLE_PYTHON_WORKER_MB + SERVER_RESERVE_MB + 256;

    #[test]
    fn no_limit_keeps_the_setting() {
        let plan = fit(None, demand(2, 1536)).unwrap();
        assert_eq!(
            (plan.worker_mb, plan.shrunk, plan.limit_mb),
            (1536, false, None)
        );
    }

    #[test]
    fn a_limit_that_holds_everything_keeps_the_setting() {
        let needed = 2 * 1536 + RESERVED;
        let plan = fit(Some(&limit(needed)), demand(2, 1536)).unwrap();
        assert_eq!(
            (plan.worker_mb, plan.shrunk, plan.needed_mb),
            (1536, false, needed)
        );
    }

    #[test]
    fn a_smaller_limit_shrinks_the_workers_to_fit() {
        // One MiB short: the workers shrink, and what they need then fits.
        let needed = 2 * 1536 + RESERVED;
        let plan = fit(Some(&limit(needed - 1)), demand(2, 1536)).unwrap();
        assert!(plan.shrunk);
        assert_eq!(plan.worker_mb, (needed - 1 - RESERVED) / 2);
        assert!(plan.needed_mb < needed, "{plan:?}");
        assert_eq!(plan.configured_worker_mb, 1536);
        // The numbers: 1 GiB cannot hold even one smallest worker and the pools.
        let err = fit(Some(&limit(1024)), demand(2, 1536)).unwrap_err();
        assert_eq!(err.needed_mb, 2 * 1024 + RESERVED);
        let text = err.to_string();
        for name in [
            "max_concurrent_executions",
            "heap_limit_mb",
            "pool_size_typescript",
            "1024 MiB",
        ] {
            assert!(text.contains(name), "{text}");
        }
    }

    #[test]
    fn never_below_the_smallest_worker() {
        let exact = 2 * 1024 + RESERVED;
        let plan = fit(Some(&limit(exact)), demand(2, 1536)).unwrap();
        assert_eq!((plan.worker_mb, plan.shrunk), (1024, true));
        assert!(fit(Some(&limit(exact - 1)), demand(2, 1536)).is_err());
        // A limit below the reserve alone is refused, not wrapped around.
        assert!(fit(Some(&limit(64)), demand(1, 1536)).is_err());
    }

    #[test]
    fn limits_parse_with_unlimited_as_none() {
        assert_eq!(parse_limit("1073741824\n"), Some(1 << 30));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None, "v1 unlimited");
        assert_eq!(parse_limit(""), None);
    }

    #[test]
    fn limit_files_follow_proc_self_cgroup() {
        let root = Path::new("/cg");
        let v2 = limit_files(root, "0::/kubepods/pod1/ctr\n");
        for f in [
            "/cg/memory.max",
            "/cg/kubepods/memory.max",
            "/cg/kubepods/pod1/memory.max",
            "/cg/kubepods/pod1/ctr/memory.max",
        ] {
            assert!(v2.contains(&PathBuf::from(f)), "{f} in {v2:?}");
        }
        let v1 = limit_files(
            root,
            "12:pids:/docker/abc\n4:memory:/docker/abc\n0::/system.slice\n",
        );
        assert!(v1.contains(&PathBuf::from("/cg/memory/memory.limit_in_bytes")));
        assert!(v1.contains(&PathBuf::from(
            "/cg/memory/docker/abc/memory.limit_in_bytes"
        )));
        assert!(!v1.iter().any(|f| f.starts_with("/cg/pids")), "{v1:?}");
    }

    #[test]
    fn the_lowest_limit_on_the_path_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        // cgroup v2: the pod's limit is below the container's; the root says max.
        write("memory.max", "max\n");
        write("kubepods/pod1/memory.max", "2147483648\n");
        write("kubepods/pod1/ctr/memory.max", "4294967296\n");
        let found = memory_limit(root, "0::/kubepods/pod1/ctr\n").unwrap();
        assert_eq!(found.bytes, 2 << 30);
        assert!(found.file.ends_with("kubepods/pod1/memory.max"));
        // cgroup v1 as Docker shows it inside a container: the container's own limit at the
        // top of the memory hierarchy, its host path absent.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory")).unwrap();
        std::fs::write(root.join("memory/memory.limit_in_bytes"), "1073741824\n").unwrap();
        let found = memory_limit(root, "9:memory:/docker/0123abcd\n").unwrap();
        assert_eq!(found.bytes, 1 << 30);
        // Nothing readable: no limit.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(memory_limit(empty.path(), "0::/\n"), None);
    }
}
