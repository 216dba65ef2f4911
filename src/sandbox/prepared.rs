//! What every new worker process starts from: [`Prepared`], the verified output of the trusted
//! preparation run (see [`super::snapshot`]: the Pyodide memory snapshot Python isolates start
//! from), held in a [`PreparedSlot`] while it is usable. A module of its own so that `launch`
//! (which reads the slot) and `snapshot` (which fills it, and launches its run) do not import
//! each other.
//!
//! The snapshot's SHA-256 is checked once, when it is adopted; each process start then only
//! checks that the file is still the one that was hashed ([`FileIdentity`]: a `stat`, not 30 MB
//! read). A file replaced or written since is not used.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// What the trusted preparation run made, verified.
#[derive(Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The Pyodide memory snapshot Python isolates start from.
    pub snapshot: PathBuf,
    /// The snapshot file as it was when its SHA-256 was checked.
    pub identity: FileIdentity,
}

/// Which file, and which version of it: device, inode, size and change times. A write or a
/// rename over the path changes at least one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileIdentity {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        FileIdentity {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    fn current(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|m| Self::of(&m))
    }
}

/// What worker processes currently start from, shared by every clone of a config.
#[derive(Debug, Clone, Default)]
pub struct PreparedSlot(Arc<RwLock<Option<Arc<Prepared>>>>);

impl PreparedSlot {
    /// What a process starting now may use: nothing once the snapshot file is no longer the one
    /// that was verified (it is then dropped, loudly; Python starts the slow way).
    pub(crate) fn get(&self) -> Option<Arc<Prepared>> {
        let prepared = self.0.read().expect("prepared slot lock").clone()?;
        if FileIdentity::current(&prepared.snapshot) == Some(prepared.identity) {
            return Some(prepared);
        }
        tracing::error!(
            path = %prepared.snapshot.display(),
            "the Pyodide snapshot changed on disk after it was verified: not used any more"
        );
        // Only the one found changed: a snapshot adopted meanwhile stays.
        let mut slot = self.0.write().expect("prepared slot lock");
        if slot.as_ref().is_some_and(|p| Arc::ptr_eq(p, &prepared)) {
            *slot = None;
        }
        None
    }

    pub(crate) fn set(&self, prepared: Prepared) {
        *self.0.write().expect("prepared slot lock") = Some(Arc::new(prepared));
    }

    /// Stops using the snapshot (Python then starts the slow way, but still starts).
    pub(crate) fn discard(&self) {
        *self.0.write().expect("prepared slot lock") = None;
    }
}
