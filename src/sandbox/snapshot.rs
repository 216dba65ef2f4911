//! The Pyodide memory snapshot: made once per (Pyodide, Deno) version pair by a trusted,
//! jailed run of the worker runner in `snapshot` mode (no user code, write access to the one
//! output file only), stored in the cache directory with its SHA-256 beside it, and verified
//! before any worker is told to load it. A cold Python worker then starts from the snapshot in
//! a fraction of the time a full Pyodide start takes. The same run leaves the seed of every
//! worker's Deno cache ([`CacheSeed`]), saved and verified with it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::launch::{Purpose, WorkerConfig, runner_url};
use super::seed::{CacheSeed, Prepared};
use crate::sandbox::runtimes::{DENO, PYODIDE};

/// How long making a snapshot may take (a full Pyodide start plus stdlib imports).
const MAKE_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot prepare the snapshot directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("making the Pyodide snapshot failed: {0}")]
    Make(String),
}

/// Where the snapshot for the pinned runtime versions and this build's runner lives (the
/// runner refuses a snapshot made by another runner, so builds sharing a cache must not share
/// a file name).
pub(crate) fn path(cache_dir: &Path) -> PathBuf {
    let runner = hex::encode(Sha256::digest(runner_url().as_bytes()));
    cache_dir.join(format!(
        "pyodide-{}-deno-{}-runner-{}.snapshot",
        PYODIDE.version,
        DENO.version,
        &runner[..12]
    ))
}

fn digest_path(snapshot: &Path) -> PathBuf {
    snapshot.with_extension("snapshot.sha256")
}

fn seed_path(snapshot: &Path) -> PathBuf {
    snapshot.with_extension("deno-cache")
}

fn sha256_of(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(hex::encode(Sha256::digest(bytes)))
}

/// The snapshot and the cache seed, if both exist and match their recorded SHA-256 sums.
pub(crate) fn verified(cache_dir: &Path) -> Option<Prepared> {
    let snapshot = path(cache_dir);
    let recorded = std::fs::read_to_string(digest_path(&snapshot)).ok()?;
    if sha256_of(&snapshot)? != recorded.trim() {
        return None;
    }
    let seed = CacheSeed::load_verified(&seed_path(&snapshot))?;
    Some(Prepared { snapshot, seed })
}

/// Returns the verified snapshot and seed, making them first if they are missing (or fail
/// verification).
pub async fn ensure(config: &WorkerConfig, cache_dir: &Path) -> Result<Prepared, SnapshotError> {
    if let Some(prepared) = verified(cache_dir) {
        return Ok(prepared);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SnapshotError::Io { path, source }
    };
    std::fs::create_dir_all(cache_dir).map_err(io(cache_dir))?;
    let target = path(cache_dir);
    // Made under a temporary name, hashed, then moved into place: a crash never leaves a
    // half-written snapshot that looks valid.
    let staging = tempfile::Builder::new()
        .prefix(".snapshot-")
        .tempdir_in(cache_dir)
        .map_err(io(cache_dir))?;
    let out = staging.path().join("snapshot");
    let workdir = staging.path().join("cwd");
    let deno_dir = staging.path().join("deno");
    for dir in [&workdir, &deno_dir] {
        std::fs::create_dir(dir).map_err(io(dir))?;
    }
    let mut cmd = config
        .deno_command(Purpose::Snapshot { out: &out }, &deno_dir, &workdir)
        .map_err(|e| SnapshotError::Make(format!("cannot prepare deno: {e}")))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    tracing::info!("making the Pyodide memory snapshot (once per runtime version)");
    let child = cmd
        .spawn()
        .map_err(|e| SnapshotError::Make(format!("cannot start deno: {e}")))?;
    let output = tokio::time::timeout(MAKE_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| SnapshotError::Make("timed out".into()))?
        .map_err(|e| SnapshotError::Make(e.to_string()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(SnapshotError::Make(format!(
            "{}: {}",
            output.status,
            stderr.trim().chars().take(2000).collect::<String>()
        )));
    }
    let digest =
        sha256_of(&out).ok_or_else(|| SnapshotError::Make("no snapshot written".into()))?;
    let seed = CacheSeed::collect(&deno_dir).map_err(io(&deno_dir))?;
    if seed.is_empty() {
        tracing::warn!(
            "the snapshot run left no Deno analysis cache: workers start without a seed"
        );
    }
    // The seed first, then the snapshot, its digest last: `verified` wants all three.
    let seed_dir = seed_path(&target);
    let staged_seed = staging.path().join("seed");
    seed.save(&staged_seed).map_err(io(&staged_seed))?;
    if seed_dir.exists() {
        std::fs::remove_dir_all(&seed_dir).map_err(io(&seed_dir))?;
    }
    std::fs::rename(&staged_seed, &seed_dir).map_err(io(&seed_dir))?;
    std::fs::rename(&out, &target).map_err(io(&target))?;
    std::fs::write(digest_path(&target), &digest).map_err(io(&target))?;
    tracing::info!(path = %target.display(), "Pyodide snapshot ready");
    Ok(Prepared {
        snapshot: target,
        seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tampered_unrecorded_or_seedless_snapshot_is_not_used() {
        let cache = tempfile::tempdir().unwrap();
        let snapshot = path(cache.path());
        std::fs::write(&snapshot, b"pyodide heap").unwrap();
        assert_eq!(verified(cache.path()), None, "no recorded digest");
        let digest = hex::encode(Sha256::digest(b"pyodide heap"));
        std::fs::write(digest_path(&snapshot), &digest).unwrap();
        assert_eq!(verified(cache.path()), None, "no cache seed");
        CacheSeed::default().save(&seed_path(&snapshot)).unwrap();
        let prepared = Prepared {
            snapshot: snapshot.clone(),
            seed: CacheSeed::default(),
        };
        assert_eq!(verified(cache.path()), Some(prepared));
        std::fs::write(&snapshot, b"pyodide heap, altered").unwrap();
        assert_eq!(verified(cache.path()), None, "content no longer matches");
    }
}
