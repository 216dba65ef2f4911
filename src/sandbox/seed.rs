//! What every new worker starts from: [`Prepared`], the verified output of the trusted
//! preparation run (see [`super::snapshot`]), held in a [`PreparedSlot`] while it is usable.
//! It is the Pyodide memory snapshot and the seed of every worker's Deno cache: the
//! module-analysis databases that run leaves in its `DENO_DIR`, saved beside the snapshot with
//! their SHA-256 sums, verified and held in memory by the server, and copied into each new
//! worker's private `DENO_DIR`. With them Deno does not parse the runner and Pyodide's 1.3 MB of
//! JavaScript again in every worker (about 90 ms of a cold Python start). Each worker gets its
//! own copy, written before it starts: nothing flows from one worker to another.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};

use super::sqlite_wal;

/// What the trusted preparation run made (see [`super::snapshot`]), verified.
#[derive(Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The Pyodide memory snapshot Python workers start from.
    pub snapshot: PathBuf,
    /// What every new worker's Deno cache starts with.
    pub seed: CacheSeed,
}

/// What workers currently start from, shared by every clone of a config.
#[derive(Debug, Clone, Default)]
pub struct PreparedSlot(Arc<RwLock<Option<Arc<Prepared>>>>);

impl PreparedSlot {
    pub(crate) fn get(&self) -> Option<Arc<Prepared>> {
        self.0.read().expect("prepared slot lock").clone()
    }

    pub(crate) fn set(&self, prepared: Prepared) {
        *self.0.write().expect("prepared slot lock") = Some(Arc::new(prepared));
    }

    /// Stops using the snapshot and its seed (Python then starts the slow way, but still
    /// starts).
    pub(crate) fn discard(&self) {
        *self.0.write().expect("prepared slot lock") = None;
    }
}

/// The files of a worker's `DENO_DIR` the worker may write (Deno's SQLite caches, their
/// write-ahead logs, shared-memory indexes and rollback journals). They exist before it starts
/// ([`create_writable_files`]); outside [`EMIT_DIR`] it can create no other file. Each file is
/// capped by the jail's file-size limit, and the host watches the total (`host`).
pub(crate) const WRITABLE_CACHE_FILES: [&str; 8] = [
    "dep_analysis_cache_v2",
    "dep_analysis_cache_v2-wal",
    "dep_analysis_cache_v2-shm",
    "dep_analysis_cache_v2-journal",
    "node_analysis_cache_v2",
    "node_analysis_cache_v2-wal",
    "node_analysis_cache_v2-shm",
    "node_analysis_cache_v2-journal",
];

/// Where Deno keeps the JavaScript it emits for the modules it loads: the one directory of a
/// worker's `DENO_DIR` it may create files in. Refusing that costs 150 ms per module (Deno
/// retries the write with pauses), so it is allowed and the host watches its size instead.
pub(crate) const EMIT_DIR: &str = "gen";

/// Creates, empty, each of [`WRITABLE_CACHE_FILES`] the seed did not provide, and [`EMIT_DIR`].
pub(crate) fn create_writable_files(deno_dir: &Path) -> io::Result<()> {
    for name in WRITABLE_CACHE_FILES {
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(deno_dir.join(name))?;
    }
    std::fs::create_dir(deno_dir.join(EMIT_DIR))
}

/// The list of files and their sums, inside a saved seed directory.
const SUMS: &str = "SHA256SUMS";

/// Deno's module-analysis caches (SQLite databases with their write-ahead logs). The shared
/// memory index (`-shm`) is rebuilt from the log by whoever opens a database next.
fn is_seed_file(name: &str) -> bool {
    (name.starts_with("dep_analysis_cache") || name.starts_with("node_analysis_cache"))
        && !name.ends_with("-shm")
}

/// Cache files to put into a new worker's `DENO_DIR`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CacheSeed {
    files: Vec<(String, Vec<u8>)>,
}

impl CacheSeed {
    /// The analysis caches a finished trusted run left in `deno_dir`.
    pub(crate) fn collect(deno_dir: &Path) -> io::Result<CacheSeed> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(deno_dir)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if is_seed_file(&name) && entry.file_type()?.is_file() {
                let mut bytes = std::fs::read(entry.path())?;
                // The logs' random salts would make every seed (and image) differ.
                if name.ends_with("-wal")
                    && let Some(normalized) = sqlite_wal::normalize(&bytes)
                {
                    bytes = normalized;
                }
                files.push((name, bytes));
            }
        }
        files.sort();
        Ok(CacheSeed { files })
    }

    /// Writes the files and their sums into `dir` (which must not exist yet).
    pub(crate) fn save(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir(dir)?;
        let mut sums = String::new();
        for (name, bytes) in &self.files {
            std::fs::write(dir.join(name), bytes)?;
            sums.push_str(&format!("{}  {name}\n", hex::encode(Sha256::digest(bytes))));
        }
        std::fs::write(dir.join(SUMS), sums)
    }

    /// The seed saved in `dir`, if every file its sums name is there, unaltered, and has a
    /// plausible name. Anything else in the directory is ignored.
    pub(crate) fn load_verified(dir: &Path) -> Option<CacheSeed> {
        let sums = std::fs::read_to_string(dir.join(SUMS)).ok()?;
        let mut files = Vec::new();
        for line in sums.lines() {
            let (digest, name) = line.split_once("  ")?;
            if !is_seed_file(name) || name.contains('/') {
                return None;
            }
            let bytes = std::fs::read(dir.join(name)).ok()?;
            if hex::encode(Sha256::digest(&bytes)) != digest {
                return None;
            }
            files.push((name.to_string(), bytes));
        }
        Some(CacheSeed { files })
    }

    /// Copies the files into a new worker's (still empty) `DENO_DIR`.
    pub(crate) fn install(&self, deno_dir: &Path) -> io::Result<()> {
        for (name, bytes) in &self.files {
            std::fs::write(deno_dir.join(name), bytes)?;
        }
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_round_trips_and_an_altered_one_is_refused() {
        let run = tempfile::tempdir().unwrap();
        std::fs::write(run.path().join("dep_analysis_cache_v2"), b"db").unwrap();
        std::fs::write(run.path().join("dep_analysis_cache_v2-wal"), b"log").unwrap();
        std::fs::write(run.path().join("dep_analysis_cache_v2-shm"), b"index").unwrap();
        std::fs::write(run.path().join("v8_code_cache_v2"), b"code").unwrap();
        std::fs::create_dir(run.path().join("gen")).unwrap();
        let seed = CacheSeed::collect(run.path()).unwrap();
        let names: Vec<&str> = seed.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["dep_analysis_cache_v2", "dep_analysis_cache_v2-wal"]
        );

        let cache = tempfile::tempdir().unwrap();
        let saved = cache.path().join("seed");
        seed.save(&saved).unwrap();
        assert_eq!(CacheSeed::load_verified(&saved), Some(seed));

        let worker = tempfile::tempdir().unwrap();
        CacheSeed::load_verified(&saved)
            .unwrap()
            .install(worker.path())
            .unwrap();
        assert_eq!(
            std::fs::read(worker.path().join("dep_analysis_cache_v2-wal")).unwrap(),
            b"log"
        );

        std::fs::write(saved.join("dep_analysis_cache_v2"), b"db, altered").unwrap();
        assert_eq!(CacheSeed::load_verified(&saved), None);
    }

    #[test]
    fn sums_naming_other_files_are_refused() {
        let cache = tempfile::tempdir().unwrap();
        std::fs::write(cache.path().join("v8_code_cache_v2"), b"code").unwrap();
        let digest = hex::encode(Sha256::digest(b"code"));
        std::fs::write(
            cache.path().join(SUMS),
            format!("{digest}  v8_code_cache_v2\n"),
        )
        .unwrap();
        assert_eq!(CacheSeed::load_verified(cache.path()), None);
    }
}
