//! Backups of the files `setup` edits, kept in this server's own state directory and never
//! beside the edited file (a `.bak` file inside a project shows up in its version control):
//! `<state dir>/code-executor/backups/<timestamp>/<escaped original path>`, where the state
//! directory is `$XDG_STATE_HOME` or `~/.local/state` (the data directory where a system has no
//! state directory, as macOS), the escaped path is the absolute path with `%` written `%25` and
//! `/` written `%2F`, and `manifest.json` beside the copies lists every file of the run: its
//! path, its copy (none for a file the run created) and the SHA-256 of what the run wrote.
//! The directory is private to the user (0700): configs hold tokens.
//!
//! `setup --restore [TIMESTAMP]` puts one run's files back byte for byte (the newest run
//! without a timestamp): each copied file gets its old bytes again, a file the run created is
//! removed unless it changed since. The files as they are before the restore are backed up
//! first, as a run of their own, so a restore can be undone the same way. This module owns
//! that directory and the manifest; it edits no config itself (the bytes go through
//! [`super::write`]).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::write;

/// The manifest's file name in a run's directory.
pub(crate) const MANIFEST: &str = "manifest.json";

/// Where runs are kept: `<state dir>/code-executor/backups`.
pub(crate) fn default_dir() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("code-executor")
        .join("backups")
}

/// `path` as one file name: `%` → `%25`, `/` → `%2F`.
pub(crate) fn escape(path: &Path) -> String {
    path.to_string_lossy()
        .replace('%', "%25")
        .replace('/', "%2F")
}

/// One file of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Saved {
    /// The file as `setup` named it (a link stays a link; its target was written).
    pub path: PathBuf,
    /// The copy's file name in the run's directory; `None` when the run created the file.
    pub copy: Option<String>,
    /// `sha256:<hex>` of the bytes the run wrote.
    pub written: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    files: Vec<Saved>,
}

/// One run's backups being written.
#[derive(Debug)]
pub(crate) struct Run {
    pub dir: PathBuf,
    manifest: Manifest,
}

pub(crate) fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

impl Run {
    /// A new run's directory under `root` (`<stamp>`, or `<stamp>-N` when taken).
    pub(crate) fn start(root: &Path, stamp: &str) -> io::Result<Run> {
        private_dir(root)?;
        let mut dir = root.join(stamp);
        let mut n = 1;
        while dir.exists() {
            dir = root.join(format!("{stamp}-{n}"));
            n += 1;
        }
        private_dir(&dir)?;
        Ok(Run {
            dir,
            manifest: Manifest::default(),
        })
    }

    /// Copies `path` (if it exists) before it is replaced by `after`; returns the copy.
    pub(crate) fn save(&mut self, path: &Path, after: &[u8]) -> io::Result<Option<PathBuf>> {
        let copy = match std::fs::read(path) {
            Ok(bytes) => {
                let name = escape(&std::path::absolute(path)?);
                let dest = self.dir.join(&name);
                std::fs::write(&dest, bytes)?;
                std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o600))?;
                Some(name)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let saved = copy.as_ref().map(|name| self.dir.join(name));
        self.manifest.files.push(Saved {
            path: path.to_owned(),
            copy,
            written: digest(after),
        });
        self.finish()?;
        Ok(saved)
    }

    /// Writes the manifest (after every file, so an interrupted run can still be restored).
    fn finish(&self) -> io::Result<()> {
        let text = serde_json::to_string_pretty(&self.manifest).map_err(io::Error::other)?;
        std::fs::write(self.dir.join(MANIFEST), text + "\n")
    }
}

/// Why a restore stopped.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("no setup backups in {0}")]
    NoBackups(PathBuf),
    #[error("no setup backup `{stamp}` in {dir} (there are: {known})")]
    Unknown {
        stamp: String,
        dir: PathBuf,
        known: String,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: not a setup backup manifest: {source}", .path.display())]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// What a restore did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RestoreStep {
    /// The old bytes are back.
    Restored(PathBuf),
    /// Created by the run and unchanged since: removed.
    Removed(PathBuf),
    /// Created by the run but changed since: left as it is.
    KeptChanged(PathBuf),
}

/// The runs in `root`, oldest first.
pub(crate) fn runs(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join(MANIFEST).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    // Stamps sort by time in byte order, a `-N` suffix after its stamp.
    names.sort();
    names
}

/// Puts the files of the run `stamp` (the newest when `None`) back, after backing up their
/// current state as the run `now`. Returns what happened to each file and the new run's
/// directory.
pub(crate) fn restore(
    root: &Path,
    stamp: Option<&str>,
    now: &str,
) -> Result<(String, Vec<RestoreStep>, PathBuf), RestoreError> {
    let known = runs(root);
    let stamp = match stamp {
        Some(s) if known.iter().any(|k| k == s) => s.to_owned(),
        Some(s) => {
            return Err(RestoreError::Unknown {
                stamp: s.to_owned(),
                dir: root.to_owned(),
                known: known.join(", "),
            });
        }
        None => known
            .last()
            .cloned()
            .ok_or_else(|| RestoreError::NoBackups(root.to_owned()))?,
    };
    let dir = root.join(&stamp);
    let manifest_path = dir.join(MANIFEST);
    let io_err = |path: &Path| {
        let path = path.to_owned();
        move |source| RestoreError::Io { path, source }
    };
    let text = std::fs::read_to_string(&manifest_path).map_err(io_err(&manifest_path))?;
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|source| RestoreError::Manifest {
            path: manifest_path.clone(),
            source,
        })?;
    // What each file becomes: its old bytes, or removal.
    let mut plan: Vec<(&Saved, Option<Vec<u8>>)> = Vec::new();
    for saved in &manifest.files {
        let old = match &saved.copy {
            Some(copy) => {
                let path = dir.join(copy);
                Some(std::fs::read(&path).map_err(io_err(&path))?)
            }
            None => None,
        };
        plan.push((saved, old));
    }
    // Undo first: the files as they are now, as a run of their own.
    let mut undo = Run::start(root, now).map_err(io_err(root))?;
    let mut done = Vec::new();
    // A file edited twice in the run (never, today) is restored to its first copy.
    plan.reverse();
    for (saved, old) in plan {
        let path = &saved.path;
        let current = std::fs::read(path).ok();
        match old {
            Some(bytes) => {
                undo.save(path, &bytes).map_err(io_err(path))?;
                write::replace(path, &bytes).map_err(io_err(path))?;
                done.push(RestoreStep::Restored(path.clone()));
            }
            None => match current {
                Some(now) if digest(&now) == saved.written => {
                    undo.save(path, b"").map_err(io_err(path))?;
                    let target = write::resolve_links(path).map_err(io_err(path))?;
                    std::fs::remove_file(&target).map_err(io_err(path))?;
                    done.push(RestoreStep::Removed(path.clone()));
                }
                Some(_) => done.push(RestoreStep::KeptChanged(path.clone())),
                None => {}
            },
        }
    }
    done.reverse();
    Ok((stamp, done, undo.dir))
}
