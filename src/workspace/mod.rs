//! The workspaces: what persists between executions, and only ever through the host.
//! Sandboxed code has no file-system permission on them; it asks the host over the worker pipe,
//! and the host resolves every path beneath a workspace's root with `cap-std` (on Linux
//! `openat2` with `RESOLVE_BENEATH`), so no `..`, absolute path or link leads out of it.
//!
//! One directory per project under `workspace_dir` (`<project name>-<hash of its path>`), mode
//! 0700. A workspace holds `files/` (what `workspace.readText(...)` and friends reach), `skills/`
//! (modules saved with `saveSkill`) and its `.lock`. The project's own is its directory itself
//! (the one client of a stdio process, and every principal with `workspace_sharing =
//! "project"`); each HTTP principal's is `principals/<principal name>-<hash of it>/` beneath it
//! ([`Owner`]), so no path one owner's code can name reaches another's. This module owns where a
//! workspace is, opening it as directory capabilities, the lock that serialises the writers of
//! one workspace across processes, and the atomic replacement of a file (readers see the old
//! bytes or the new ones, never part of either). Which owner a client session is, is the
//! executor's decision.

pub mod cli;
pub mod files;
pub mod skills;
pub mod skills_cli;

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};

use crate::config::settings::{Settings, WorkspaceQuota};

/// The directory of the files code reads and writes, inside a workspace.
pub const FILES_DIR: &str = "files";
/// The directory of the saved skills, inside a workspace.
pub const SKILLS_DIR: &str = "skills";
/// The lock file, inside a workspace (beside `files/` and `skills/`).
const LOCK_FILE: &str = ".lock";
/// The directory of the principals' workspaces, inside a project's.
pub const PRINCIPALS_DIR: &str = "principals";
/// The file naming a principal's workspace's owner, inside it (for `workspace principals`).
const PRINCIPAL_FILE: &str = "principal";
/// How temporary files of an atomic write begin; never a name code may use.
pub const TEMP_PREFIX: &str = ".code-executor-tmp-";

/// A workspace that cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    #[error("cannot create the workspace directory {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open the workspace directory {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Whose workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The project's own workspace.
    Project,
    /// One HTTP principal's (its name as the connection guard gives it, e.g.
    /// `http-peer:127.0.0.1`).
    Principal(String),
}

/// One workspace, opened.
#[derive(Debug)]
pub struct Space {
    root: PathBuf,
    root_dir: Dir,
    files: Dir,
    skills: Dir,
    quota: WorkspaceQuota,
}

/// Held while one writer changes a project's workspace; other writers (of this process or any
/// other serving the same project) wait.
pub struct SpaceLock {
    _lock: Flock<std::fs::File>,
}

impl Space {
    /// The project's workspace of the settings, when workspaces are on (`workspace`).
    pub fn open(settings: &Settings) -> Result<Option<Space>, SpaceError> {
        match &settings.workspace_dir {
            Some(dir) => {
                Space::open_at(dir, &settings.project_dir, settings.workspace_quota).map(Some)
            }
            None => Ok(None),
        }
    }

    /// The workspace of `project_dir` under `workspace_dir`, created (mode 0700) if missing.
    pub fn open_at(
        workspace_dir: &Path,
        project_dir: &Path,
        quota: WorkspaceQuota,
    ) -> Result<Space, SpaceError> {
        Space::open_owned(workspace_dir, project_dir, &Owner::Project, quota)
    }

    /// `owner`'s workspace of `project_dir` under `workspace_dir`, created (mode 0700, a
    /// principal's naming it in its `principal` file) if missing.
    pub fn open_owned(
        workspace_dir: &Path,
        project_dir: &Path,
        owner: &Owner,
        quota: WorkspaceQuota,
    ) -> Result<Space, SpaceError> {
        let root = root_of(workspace_dir, project_dir, owner);
        let create = |dir: &Path, mode: Option<u32>| {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            if let Some(mode) = mode {
                builder.mode(mode);
            }
            builder.create(dir).map_err(|source| SpaceError::Create {
                path: dir.to_path_buf(),
                source,
            })
        };
        // The parents (`~/.local/share/...`) get the usual mode; only the workspaces
        // directory, whose entries name the projects, and each project's own are private.
        if let Some(parent) = workspace_dir.parent() {
            create(parent, None)?;
        }
        for dir in [
            workspace_dir.to_path_buf(),
            root.join(FILES_DIR),
            root.join(SKILLS_DIR),
        ] {
            create(&dir, Some(0o700))?;
        }
        let space = Space::opened(root, quota)?;
        if let Owner::Principal(name) = owner {
            let named = space.root_dir.read_to_string(PRINCIPAL_FILE).ok();
            if named.as_deref() != Some(name.as_str()) {
                replace_file(&space.root_dir, Path::new(PRINCIPAL_FILE), name.as_bytes()).map_err(
                    |source| SpaceError::Create {
                        path: space.root.join(PRINCIPAL_FILE),
                        source,
                    },
                )?;
            }
        }
        Ok(space)
    }

    /// `owner`'s workspace of `project_dir` under `workspace_dir` if it exists; nothing is
    /// created (for look-ups and the command line).
    pub fn find(
        workspace_dir: &Path,
        project_dir: &Path,
        owner: &Owner,
        quota: WorkspaceQuota,
    ) -> Result<Option<Space>, SpaceError> {
        let root = root_of(workspace_dir, project_dir, owner);
        if !root.join(FILES_DIR).is_dir() || !root.join(SKILLS_DIR).is_dir() {
            return Ok(None);
        }
        Space::opened(root, quota).map(Some)
    }

    /// The workspace at `root`, whose directories exist.
    fn opened(root: PathBuf, quota: WorkspaceQuota) -> Result<Space, SpaceError> {
        let open = |path: PathBuf| {
            Dir::open_ambient_dir(&path, ambient_authority())
                .map_err(|source| SpaceError::Open { path, source })
        };
        Ok(Space {
            root_dir: open(root.clone())?,
            files: open(root.join(FILES_DIR))?,
            skills: open(root.join(SKILLS_DIR))?,
            root,
            quota,
        })
    }

    /// The workspace's directory (for the user: `code-executor workspace path`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The files code reads and writes: every path is resolved beneath it.
    pub fn files(&self) -> &Dir {
        &self.files
    }

    /// The saved skills.
    pub fn skills(&self) -> &Dir {
        &self.skills
    }

    pub fn quota(&self) -> WorkspaceQuota {
        self.quota
    }

    /// Waits for, then holds, the workspace's write lock (blocking: call it off the runtime's
    /// threads, as every file operation here).
    pub fn exclusive(&self) -> std::io::Result<SpaceLock> {
        let file = self
            .root_dir
            .open_with(
                LOCK_FILE,
                OpenOptions::new().read(true).write(true).create(true),
            )?
            .into_std();
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| std::io::Error::from(errno))?;
        Ok(SpaceLock { _lock: lock })
    }
}

/// The directory of `owner`'s workspace of `project_dir` under `workspace_dir`.
pub fn root_of(workspace_dir: &Path, project_dir: &Path, owner: &Owner) -> PathBuf {
    let project = workspace_dir.join(project_key(project_dir));
    match owner {
        Owner::Project => project,
        Owner::Principal(name) => project.join(PRINCIPALS_DIR).join(principal_key(name)),
    }
}

/// The name of a principal's workspace directory: the principal's name with `:` written `-`
/// (letters, digits, `.`, `_` and `-`, at most 64) and 16 hex digits of the SHA-256 of the
/// whole name, so two principals never share one whatever their names hold.
pub fn principal_key(name: &str) -> String {
    let readable: String = name
        .chars()
        .map(|c| if c == ':' { '-' } else { c })
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(64)
        .collect();
    let readable = readable.trim_start_matches('.');
    let hash = hex::encode(&Sha256::digest(name.as_bytes())[..8]);
    if readable.is_empty() {
        hash
    } else {
        format!("{readable}-{hash}")
    }
}

/// The principals that have a workspace of `project_dir` under `workspace_dir`, by name, with
/// their workspace's directory (sorted by name). A directory there without a readable name is
/// listed by its directory name.
pub fn principals(workspace_dir: &Path, project_dir: &Path) -> Vec<(String, PathBuf)> {
    let dir = workspace_dir
        .join(project_key(project_dir))
        .join(PRINCIPALS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let path = e.path();
            let name = std::fs::read_to_string(path.join(PRINCIPAL_FILE))
                .ok()
                .filter(|n| n.len() <= 256 && !n.chars().any(char::is_control))
                .unwrap_or_else(|| e.file_name().to_string_lossy().into_owned());
            (name, path)
        })
        .collect();
    found.sort();
    found
}

/// The name of a project's workspace directory: the project directory's own name (letters,
/// digits, `.`, `_` and `-`, at most 40) and 16 hex digits of the SHA-256 of its canonical
/// path, so two projects of the same name never share one.
pub fn project_key(project_dir: &Path) -> String {
    let path = std::fs::canonicalize(project_dir).unwrap_or_else(|_| project_dir.to_path_buf());
    let name: String = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(40)
        .collect();
    let name = name.trim_start_matches('.');
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    let hash = hex::encode(&digest[..8]);
    if name.is_empty() {
        hash
    } else {
        format!("{name}-{hash}")
    }
}

/// Replaces `path` (relative to `dir`, its parent directory existing) with `bytes` atomically:
/// written to a temporary file beside it, flushed to disk, then renamed over it. A reader sees
/// the old file or the new one; a failed write leaves the old one and no temporary file.
/// A hard link at `path` is replaced, never written through.
pub fn replace_file(dir: &Dir, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new(""));
    let temp = parent.join(format!("{TEMP_PREFIX}{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = dir.open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        dir.rename(&temp, dir, path)
    })();
    if written.is_err() {
        let _ = dir.remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota() -> WorkspaceQuota {
        WorkspaceQuota {
            max_bytes: 1 << 20,
            max_files: 100,
            max_file_bytes: 1 << 16,
        }
    }

    #[test]
    fn projects_of_one_name_get_workspaces_of_their_own() {
        let base = tempfile::tempdir().unwrap();
        let (a, b) = (base.path().join("a/app"), base.path().join("b/app"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let (ka, kb) = (project_key(&a), project_key(&b));
        assert!(
            ka.starts_with("app-") && kb.starts_with("app-"),
            "{ka} {kb}"
        );
        assert_ne!(ka, kb);
        assert_eq!(project_key(&a.join("../app")), ka);
        assert!(!project_key(Path::new("/")).is_empty());
        assert!(!project_key(Path::new("/tmp/..hidden")).starts_with('.'));
    }

    #[test]
    fn a_workspace_is_private_and_a_replaced_file_is_whole() {
        let base = tempfile::tempdir().unwrap();
        let workspaces = base.path().join("share/code-executor/workspaces");
        let space = Space::open_at(&workspaces, base.path(), quota()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        for private in [space.root(), &workspaces, &space.root().join(FILES_DIR)] {
            assert_eq!(mode(private), 0o700, "{}", private.display());
        }
        // The parents it had to make get the usual mode, as `mkdir -p` would make them.
        let usual = base.path().join("usual");
        std::fs::create_dir(&usual).unwrap();
        assert_eq!(mode(&base.path().join("share")), mode(&usual));
        let _lock = space.exclusive().unwrap();
        replace_file(space.files(), Path::new("a.txt"), b"one").unwrap();
        replace_file(space.files(), Path::new("a.txt"), b"two").unwrap();
        assert_eq!(space.files().read("a.txt").unwrap(), b"two");
        let names: Vec<String> = space
            .files()
            .entries()
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.txt"]);
        // A hard link is replaced, not written through.
        let outside = base.path().join("outside.txt");
        std::fs::write(&outside, b"keep").unwrap();
        std::fs::hard_link(&outside, space.root().join(FILES_DIR).join("b.txt")).unwrap();
        replace_file(space.files(), Path::new("b.txt"), b"new").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    }

    #[test]
    fn each_principal_has_a_workspace_of_its_own() {
        let base = tempfile::tempdir().unwrap();
        let (workspaces, project) = (base.path().join("ws"), base.path().join("app"));
        std::fs::create_dir_all(&project).unwrap();
        let a = Owner::Principal("http-peer:127.0.0.1".into());
        let b = Owner::Principal("http-peer:127.0.0.2".into());
        // Nothing is made for a look-up.
        assert!(
            Space::find(&workspaces, &project, &a, quota())
                .unwrap()
                .is_none()
        );
        assert!(!workspaces.exists());
        let shared = Space::open_at(&workspaces, &project, quota()).unwrap();
        let space_a = Space::open_owned(&workspaces, &project, &a, quota()).unwrap();
        let space_b = Space::open_owned(&workspaces, &project, &b, quota()).unwrap();
        replace_file(space_a.files(), Path::new("notes.md"), b"of a").unwrap();
        replace_file(space_a.skills(), Path::new("greet.ts"), b"of a").unwrap();
        for other in [&shared, &space_b] {
            assert!(other.files().read("notes.md").is_err());
            assert!(other.skills().read("greet.ts").is_err());
        }
        // Beneath the project's, out of reach of the project's files, each private.
        assert!(
            space_a
                .root()
                .starts_with(shared.root().join(PRINCIPALS_DIR))
        );
        assert!(!space_a.root().starts_with(shared.root().join(FILES_DIR)));
        assert_ne!(space_a.root(), space_b.root());
        use std::os::unix::fs::PermissionsExt;
        for dir in [
            shared.root().join(PRINCIPALS_DIR),
            space_a.root().to_path_buf(),
            space_a.root().join(FILES_DIR),
        ] {
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", dir.display());
        }
        // Found again, and listed by name.
        let found = Space::find(&workspaces, &project, &a, quota())
            .unwrap()
            .unwrap();
        assert_eq!(found.files().read("notes.md").unwrap(), b"of a");
        let listed: Vec<String> = principals(&workspaces, &project)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(listed, ["http-peer:127.0.0.1", "http-peer:127.0.0.2"]);
    }

    #[test]
    fn principal_directories_are_readable_and_never_collide() {
        let key = principal_key("http-peer:127.0.0.1");
        assert!(key.starts_with("http-peer-127.0.0.1-"), "{key}");
        assert!(principal_key("http-peer:::1").starts_with("http-peer---1-"));
        // `:` and `-` read alike, the hash tells them apart.
        assert_ne!(principal_key("a:b"), principal_key("a-b"));
        for odd in ["../..", "/etc", "..", "", "a/b\u{0}c"] {
            let key = principal_key(odd);
            assert!(
                !key.contains('/') && !key.starts_with('.') && !key.is_empty(),
                "{key}"
            );
        }
    }
}
