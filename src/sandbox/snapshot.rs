//! The Pyodide memory snapshot: made once per (Pyodide, Deno, runner) version by a trusted,
//! jailed run of the supervisor in `snapshot` mode (no user code, write access to the one
//! output file only), stored in the cache directory with its SHA-256 beside it, and verified
//! before any worker process is told to load it. A Python isolate then starts from the
//! snapshot in a fraction of the time a full Pyodide start takes.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::launch::{Purpose, WorkerConfig, supervisor_url};
use super::prepared::{FileIdentity, Prepared};
use super::runner;
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
    let mut digest = Sha256::new();
    digest.update(supervisor_url().as_bytes());
    digest.update(runner::ISOLATE_SOURCE.as_bytes());
    let runner = hex::encode(digest.finalize());
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

/// The SHA-256 of the file at `path`, and the identity of the very file it was read from.
fn sha256_of(path: &Path) -> Option<(String, FileIdentity)> {
    let mut file = std::fs::File::open(path).ok()?;
    let before = FileIdentity::of(&file.metadata().ok()?);
    let mut digest = Sha256::new();
    std::io::copy(&mut file, &mut digest).ok()?;
    // Written to while it was read: the digest may describe neither version.
    (FileIdentity::of(&file.metadata().ok()?) == before)
        .then(|| (hex::encode(digest.finalize()), before))
}

/// The snapshot, if it exists and matches its recorded SHA-256.
pub(crate) fn verified(cache_dir: &Path) -> Option<Prepared> {
    let snapshot = path(cache_dir);
    let recorded = std::fs::read_to_string(digest_path(&snapshot)).ok()?;
    let (digest, identity) = sha256_of(&snapshot)?;
    (digest == recorded.trim()).then_some(Prepared { snapshot, identity })
}

/// Returns the verified snapshot, making it first if it is missing (or fails verification).
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
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    tracing::info!("making the Pyodide memory snapshot (once per runtime version)");
    let mut child = cmd
        .spawn()
        .map_err(|e| SnapshotError::Make(format!("cannot start deno: {e}")))?;
    // The isolate runner, then end of input (see the supervisor's opening comment).
    let mut stdin = child.stdin.take().expect("stdin is piped");
    tokio::spawn(async move {
        let _ = stdin.write_all(runner::ISOLATE_SOURCE.as_bytes()).await;
    });
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
    let (digest, _) =
        sha256_of(&out).ok_or_else(|| SnapshotError::Make("no snapshot written".into()))?;
    // The snapshot first, its digest last: `verified` wants both.
    std::fs::rename(&out, &target).map_err(io(&target))?;
    std::fs::write(digest_path(&target), &digest).map_err(io(&target))?;
    // The identity is taken after the rename, which changes the file's ctime (the staging
    // directory is private: nothing wrote to the file in between).
    let identity = std::fs::metadata(&target)
        .map(|m| FileIdentity::of(&m))
        .map_err(io(&target))?;
    tracing::info!(path = %target.display(), "Pyodide snapshot ready");
    Ok(Prepared {
        snapshot: target,
        identity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tampered_or_unrecorded_snapshot_is_not_used() {
        let cache = tempfile::tempdir().unwrap();
        let snapshot = path(cache.path());
        std::fs::write(&snapshot, b"pyodide heap").unwrap();
        assert_eq!(verified(cache.path()), None, "no recorded digest");
        let digest = hex::encode(Sha256::digest(b"pyodide heap"));
        std::fs::write(digest_path(&snapshot), &digest).unwrap();
        let prepared = verified(cache.path()).expect("the recorded digest matches");
        assert_eq!(prepared.snapshot, snapshot);
        std::fs::write(&snapshot, b"pyodide heap, altered").unwrap();
        assert_eq!(verified(cache.path()), None, "content no longer matches");
    }

    #[test]
    fn a_snapshot_written_after_its_verification_is_dropped_at_the_next_start() {
        let cache = tempfile::tempdir().unwrap();
        let snapshot = path(cache.path());
        std::fs::write(&snapshot, b"pyodide heap").unwrap();
        let digest = hex::encode(Sha256::digest(b"pyodide heap"));
        std::fs::write(digest_path(&snapshot), &digest).unwrap();
        let slot = super::super::prepared::PreparedSlot::default();
        slot.set(verified(cache.path()).unwrap());
        assert!(slot.get().is_some(), "unchanged: used");
        // The same length, written in place: only the change times tell (a tick later: file
        // times are taken from the kernel's coarse clock).
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::write(&snapshot, b"pyodide HEAP").unwrap();
        assert!(slot.get().is_none(), "written since it was hashed: dropped");
        assert!(slot.get().is_none(), "and stays dropped");
    }
}
