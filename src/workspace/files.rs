//! The project's files: what `workspace.readText(...)` and friends (and `code-executor
//! workspace`) do to `Space::files()`. Every path is checked against the rules of
//! [`parse_path`] (relative, no `.`/`..`/empty components, no control characters, bounded
//! lengths and depth, never a temporary file's name), then resolved one component at a time
//! with `cap-std` without following any link (`open_dir_nofollow`, `O_NOFOLLOW`): a symbolic
//! link planted in the workspace (by the user, outside the sandbox) is refused wherever it
//! stands, a file with more than one hard link is not read (it may be a link to a file
//! outside), and a write replaces the file atomically (`replace_file`, under
//! `Space::exclusive()`), so a hard link is replaced, never written through. Writes are
//! bounded by the project's quota (`workspace_max_bytes`, `workspace_max_files` counting files
//! and directories, `workspace_max_file_bytes`), checked under the lock.
//!
//! Blocking: the executor calls these in `tokio::task::spawn_blocking`.

use std::fmt;
use std::io::{ErrorKind, Read};
use std::path::Path;

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};
use serde::Serialize;

use super::{Space, TEMP_PREFIX, replace_file};
use crate::sandbox::proto::WorkspaceCall;

/// The longest workspace path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// The longest name of one component, in bytes (the usual file-system limit).
pub const MAX_NAME_BYTES: usize = 255;
/// The most components a path may have.
pub const MAX_DEPTH: usize = 32;
/// The most entries one `list` answers with.
pub const MAX_LIST_ENTRIES: usize = 10_000;
/// The most bytes of paths one `list` answers with (so that its reply, JSON-escaped, stays far
/// below the line limit the worker accepts).
pub const MAX_LIST_PATH_BYTES: usize = 2 * 1024 * 1024;

/// A workspace operation refused or failed. The messages say what, why, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("workspace: path {path} refused: {rule}")]
    Path { path: Shown, rule: String },
    #[error("workspace: nothing at {0} (see what the workspace holds with workspace.list())")]
    NotFound(Shown),
    #[error("workspace: {0} is a directory, not a file")]
    IsDir(Shown),
    #[error("workspace: {path} cannot be reached: {parent} is a file, not a directory")]
    NotDir { path: Shown, parent: Shown },
    #[error(
        "workspace: {0} is a symbolic link (made outside the sandbox); the workspace never follows links: remove it with workspace.remove, or replace it on the host"
    )]
    Link(Shown),
    #[error(
        "workspace: {path} has {links} hard links (one made outside the sandbox may be a file outside the workspace), so it is not read; write it anew or remove it"
    )]
    HardLink { path: Shown, links: u64 },
    #[error(
        "workspace: {0} is not a regular file (a device, socket or pipe made outside the sandbox)"
    )]
    Special(Shown),
    #[error(
        "workspace: {path} is {size}, over the largest file of {max} (workspace_max_file_bytes)"
    )]
    TooLarge {
        path: Shown,
        size: Bytes,
        max: Bytes,
    },
    #[error("workspace quota: {0}; remove files first (workspace.remove)")]
    Quota(String),
    #[error(
        "the disk holding the workspace is full: writing {path} failed ({source}); the old content, if any, is intact"
    )]
    DiskFull { path: Shown, source: std::io::Error },
    #[error("workspace: {what} {path} failed: {source}")]
    Io {
        what: &'static str,
        path: Shown,
        source: std::io::Error,
    },
}

/// A path as error messages show it: quoted, control characters escaped.
#[derive(Debug, Clone)]
pub struct Shown(String);

impl Shown {
    fn of(path: &str) -> Shown {
        Shown(if path.is_empty() {
            "the workspace root".into()
        } else {
            format!("{path:?}")
        })
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A size as messages show it (`512 bytes`, `3.0 MiB`).
#[derive(Debug, Clone, Copy)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0 as f64;
        match self.0 {
            0..1024 => write!(f, "{} bytes", self.0),
            1024..1_048_576 => write!(f, "{:.1} KiB", n / 1024.0),
            _ => write!(f, "{:.1} MiB", n / 1_048_576.0),
        }
    }
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    File,
    Dir,
    /// A symbolic link (made outside the sandbox): listed, never followed.
    Link,
    /// A device, socket or pipe (made outside the sandbox).
    Other,
}

/// One entry of a listing: its path from the workspace root, its kind, its size in bytes
/// (files only; 0 otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
    pub size: u64,
}

/// What `list` answers: the entries beneath a directory, every level, sorted by path; at most
/// [`MAX_LIST_ENTRIES`] (then `truncated`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Listing {
    pub entries: Vec<Entry>,
    pub truncated: bool,
}

/// The components of a workspace path, checked: relative to the workspace root (no leading
/// `/`), components separated by `/`, none empty, `.` or `..`, none holding a control
/// character (C0, DEL, C1; NUL among them), none over [`MAX_NAME_BYTES`] or beginning with the
/// temporary files' prefix, at most [`MAX_DEPTH`] of them, [`MAX_PATH_BYTES`] in all. `""` is
/// the root (only where `root` allows it, with a trailing `/` also allowed).
pub fn parse_path(path: &str, root: bool) -> Result<Vec<&str>, FileError> {
    let refuse = |rule: String| FileError::Path {
        path: Shown::of(path),
        rule,
    };
    if path.len() > MAX_PATH_BYTES {
        return Err(refuse(format!(
            "it is {} bytes long, over the limit of {MAX_PATH_BYTES}",
            path.len()
        )));
    }
    if let Some((at, c)) = path.char_indices().find(|(_, c)| c.is_control()) {
        let what = if c == '\0' {
            "NUL"
        } else {
            "a control character"
        };
        return Err(refuse(format!(
            "it holds {what} (U+{:04X}) at byte {at}; names may not hold control characters",
            c as u32
        )));
    }
    if path.starts_with('/') {
        return Err(refuse(
            "absolute paths are not allowed; give a path relative to the workspace root, such as \"notes/today.txt\"".into(),
        ));
    }
    let trimmed = match path.strip_suffix('/') {
        Some(dir) if root => dir,
        _ => path,
    };
    if trimmed.is_empty() {
        return if root {
            Ok(vec![])
        } else {
            Err(refuse(
                "it is empty; give the path of a file, such as \"notes/today.txt\"".into(),
            ))
        };
    }
    let parts: Vec<&str> = trimmed.split('/').collect();
    if parts.len() > MAX_DEPTH {
        return Err(refuse(format!(
            "it has {} components, over the limit of {MAX_DEPTH}",
            parts.len()
        )));
    }
    for part in &parts {
        let rule = match *part {
            "" => "empty components (`//` or a trailing `/`) are not allowed".into(),
            "." | ".." => format!(
                "`{part}` components are not allowed; paths are relative to the workspace root and stay beneath it"
            ),
            _ if part.len() > MAX_NAME_BYTES => format!(
                "a name of {} bytes, over the limit of {MAX_NAME_BYTES} per name",
                part.len()
            ),
            _ if part.starts_with(TEMP_PREFIX) => {
                format!("names beginning with `{TEMP_PREFIX}` are reserved for the server")
            }
            _ => continue,
        };
        return Err(refuse(rule));
    }
    Ok(parts)
}

/// Where the walk down a path's directories stopped.
enum Walk {
    /// The directory holding the last component.
    Parent(Dir),
    /// Directory `parts[..missing_from + 1]` does not exist (only without `create`).
    Missing { missing_from: usize },
}

/// Opens the directories of `parts[..n]` one at a time beneath `files`, following no link;
/// with `create`, makes those that are missing.
fn walk(
    files: &Dir,
    path: &str,
    parts: &[&str],
    n: usize,
    create: bool,
) -> Result<Walk, FileError> {
    let io = |what, source| FileError::Io {
        what,
        path: Shown::of(path),
        source,
    };
    let mut dir = files.try_clone().map_err(|e| io("opening", e))?;
    for (i, part) in parts[..n].iter().enumerate() {
        let next = match dir.open_dir_nofollow(part) {
            Ok(next) => next,
            Err(e) if e.kind() == ErrorKind::NotFound && !create => {
                return Ok(Walk::Missing { missing_from: i });
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                match dir.create_dir(part) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(write_error(path, "creating a directory of", e)),
                }
                dir.open_dir_nofollow(part)
                    .map_err(|e| refused_dir(&dir, path, parts, i, e))?
            }
            Err(e) => return Err(refused_dir(&dir, path, parts, i, e)),
        };
        dir = next;
    }
    Ok(Walk::Parent(dir))
}

/// Why component `i` of a path could not be opened as a directory.
fn refused_dir(dir: &Dir, path: &str, parts: &[&str], i: usize, e: std::io::Error) -> FileError {
    let prefix = parts[..=i].join("/");
    match dir.symlink_metadata(parts[i]) {
        Ok(meta) if meta.file_type().is_symlink() => FileError::Link(Shown::of(&prefix)),
        Ok(meta) if !meta.is_dir() => FileError::NotDir {
            path: Shown::of(path),
            parent: Shown::of(&prefix),
        },
        _ => FileError::Io {
            what: "opening",
            path: Shown::of(path),
            source: e,
        },
    }
}

/// An error of a write: the disk's being full said as such.
fn write_error(path: &str, what: &'static str, e: std::io::Error) -> FileError {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => FileError::DiskFull {
            path: Shown::of(path),
            source: e,
        },
        _ => FileError::Io {
            what,
            path: Shown::of(path),
            source: e,
        },
    }
}

/// The directory holding an existing path's last component, and that component.
fn existing_parent<'a>(
    space: &Space,
    path: &str,
    parts: &[&'a str],
) -> Result<(Dir, &'a str), FileError> {
    let last = parts.len() - 1;
    match walk(space.files(), path, parts, last, false)? {
        Walk::Parent(dir) => Ok((dir, parts[last])),
        Walk::Missing { .. } => Err(FileError::NotFound(Shown::of(path))),
    }
}

/// The bytes of the file at `path`.
pub fn read(space: &Space, path: &str) -> Result<Vec<u8>, FileError> {
    let parts = parse_path(path, false)?;
    let (dir, name) = existing_parent(space, path, &parts)?;
    let io = |source| FileError::Io {
        what: "reading",
        path: Shown::of(path),
        source,
    };
    let meta = dir.symlink_metadata(name).map_err(|e| match e.kind() {
        ErrorKind::NotFound => FileError::NotFound(Shown::of(path)),
        _ => io(e),
    })?;
    check_kind(path, &meta)?;
    // Without following a link, and without waiting on a pipe swapped in meanwhile.
    let mut options = OpenOptions::new();
    options
        .read(true)
        .follow(FollowSymlinks::No)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = dir.open_with(name, &options).map_err(|e| match e.kind() {
        ErrorKind::NotFound => FileError::NotFound(Shown::of(path)),
        _ if e.raw_os_error() == Some(libc::ELOOP) => FileError::Link(Shown::of(path)),
        _ => io(e),
    })?;
    let meta = file.metadata().map_err(io)?;
    check_kind(path, &meta)?;
    if meta.nlink() > 1 {
        return Err(FileError::HardLink {
            path: Shown::of(path),
            links: meta.nlink(),
        });
    }
    let max = space.quota().max_file_bytes;
    let too_large = |size| FileError::TooLarge {
        path: Shown::of(path),
        size: Bytes(size),
        max: Bytes(max),
    };
    if meta.len() > max {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.into_std()
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Refuses what is not a regular file.
fn check_kind(path: &str, meta: &cap_std::fs::Metadata) -> Result<(), FileError> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        Err(FileError::Link(Shown::of(path)))
    } else if kind.is_dir() {
        Err(FileError::IsDir(Shown::of(path)))
    } else if !kind.is_file() {
        Err(FileError::Special(Shown::of(path)))
    } else {
        Ok(())
    }
}

/// Replaces (or creates) the file at `path` with `bytes`, atomically, making its directories.
pub fn write(space: &Space, path: &str, bytes: &[u8]) -> Result<(), FileError> {
    let parts = parse_path(path, false)?;
    let quota = space.quota();
    let size = bytes.len() as u64;
    if size > quota.max_file_bytes {
        return Err(FileError::TooLarge {
            path: Shown::of(path),
            size: Bytes(size),
            max: Bytes(quota.max_file_bytes),
        });
    }
    let _lock = space.exclusive().map_err(|e| FileError::Io {
        what: "locking the workspace to write",
        path: Shown::of(path),
        source: e,
    })?;
    let last = parts.len() - 1;
    // What the write adds: the directories it makes, the file unless it replaces one.
    let (new_dirs, replaced) = match walk(space.files(), path, &parts, last, false)? {
        Walk::Missing { missing_from } => (last - missing_from, None),
        Walk::Parent(dir) => match dir.symlink_metadata(parts[last]) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(FileError::Link(Shown::of(path)));
            }
            Ok(meta) if meta.is_dir() => return Err(FileError::IsDir(Shown::of(path))),
            Ok(meta) => (0, Some(if meta.is_file() { meta.len() } else { 0 })),
            Err(_) => (0, None),
        },
    };
    let usage = usage(space.files()).map_err(|e| FileError::Io {
        what: "measuring the workspace to write",
        path: Shown::of(path),
        source: e,
    })?;
    let entries = usage.entries + new_dirs as u64 + u64::from(replaced.is_none());
    if entries > quota.max_files {
        return Err(FileError::Quota(format!(
            "writing {} would make {entries} files and directories, over the workspace's limit of {} (workspace_max_files)",
            Shown::of(path),
            quota.max_files
        )));
    }
    let total = usage.bytes - replaced.unwrap_or(0).min(usage.bytes) + size;
    if total > quota.max_bytes {
        return Err(FileError::Quota(format!(
            "writing {} to {} would bring the workspace to {}, over its {} (workspace_max_bytes)",
            Bytes(size),
            Shown::of(path),
            Bytes(total),
            Bytes(quota.max_bytes)
        )));
    }
    let Walk::Parent(dir) = walk(space.files(), path, &parts, last, true)? else {
        unreachable!("a walk that creates finds every directory");
    };
    replace_file(&dir, Path::new(parts[last]), bytes).map_err(|e| match e.kind() {
        ErrorKind::IsADirectory => FileError::IsDir(Shown::of(path)),
        _ => write_error(path, "writing", e),
    })
}

/// Removes the file (or link) at `path`, or the directory at `path` with all it holds. The
/// root is never removed.
pub fn remove(space: &Space, path: &str) -> Result<(), FileError> {
    let parts = parse_path(path, false)?;
    let _lock = space.exclusive().map_err(|e| FileError::Io {
        what: "locking the workspace to remove",
        path: Shown::of(path),
        source: e,
    })?;
    let (dir, name) = existing_parent(space, path, &parts)?;
    let io = |source: std::io::Error| match source.kind() {
        ErrorKind::NotFound => FileError::NotFound(Shown::of(path)),
        _ => FileError::Io {
            what: "removing",
            path: Shown::of(path),
            source,
        },
    };
    let meta = dir.symlink_metadata(name).map_err(io)?;
    if meta.is_dir() {
        dir.remove_dir_all(name).map_err(io)
    } else {
        dir.remove_file_or_symlink(name).map_err(io)
    }
}

/// What the workspace's files take: bytes of regular files, and entries (files, directories,
/// links and the rest). Stale temporary files (of writes that died; a live write holds the lock
/// the caller holds) are removed on the way.
struct Usage {
    bytes: u64,
    entries: u64,
}

fn usage(files: &Dir) -> std::io::Result<Usage> {
    let mut usage = Usage {
        bytes: 0,
        entries: 0,
    };
    let mut stack = vec![files.try_clone()?];
    while let Some(dir) = stack.pop() {
        for entry in dir.entries()? {
            let entry = entry?;
            let name = entry.file_name();
            let kind = entry.file_type()?;
            if !kind.is_dir() && name.as_encoded_bytes().starts_with(TEMP_PREFIX.as_bytes()) {
                let _ = dir.remove_file_or_symlink(&name);
                continue;
            }
            usage.entries += 1;
            if kind.is_dir() {
                if let Ok(sub) = dir.open_dir_nofollow(&name) {
                    stack.push(sub);
                }
            } else if kind.is_file() {
                usage.bytes += entry.metadata()?.len();
            }
        }
    }
    Ok(usage)
}

/// The entries beneath the directory at `path` (`""`: the whole workspace), every level,
/// sorted by path. A file's path lists that file alone.
pub fn list(space: &Space, path: &str) -> Result<Listing, FileError> {
    let parts = parse_path(path, true)?;
    let io = |source| FileError::Io {
        what: "listing",
        path: Shown::of(path),
        source,
    };
    let dir = match walk(space.files(), path, &parts, parts.len(), false) {
        Ok(Walk::Parent(dir)) => dir,
        Ok(Walk::Missing { .. }) => return Err(FileError::NotFound(Shown::of(path))),
        Err(FileError::NotDir { parent, .. }) if parent.0 == Shown::of(path).0 => {
            // The path names a file: list it alone.
            let (dir, name) = existing_parent(space, path, &parts)?;
            let meta = dir.symlink_metadata(name).map_err(io)?;
            let entry = Entry {
                path: parts.join("/"),
                kind: kind_of(&meta.file_type()),
                size: if meta.is_file() { meta.len() } else { 0 },
            };
            return Ok(Listing {
                entries: vec![entry],
                truncated: false,
            });
        }
        Err(e) => return Err(e),
    };
    let mut listing = Listing::default();
    let mut path_bytes = 0;
    let base = parts.join("/");
    collect(&dir, &base, parts.len(), &mut listing, &mut path_bytes).map_err(io)?;
    listing.entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(listing)
}

fn kind_of(kind: &cap_std::fs::FileType) -> Kind {
    if kind.is_symlink() {
        Kind::Link
    } else if kind.is_dir() {
        Kind::Dir
    } else if kind.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

/// Adds the entries beneath `dir` (at `prefix`, `depth` components down) to `listing`, depth
/// first, until a bound is reached.
fn collect(
    dir: &Dir,
    prefix: &str,
    depth: usize,
    listing: &mut Listing,
    path_bytes: &mut usize,
) -> std::io::Result<()> {
    let mut names: Vec<_> = dir
        .entries()?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .filter(|name| !name.as_encoded_bytes().starts_with(TEMP_PREFIX.as_bytes()))
        .collect();
    names.sort();
    for name in names {
        let Ok(meta) = dir.symlink_metadata(&name) else {
            continue; // removed meanwhile
        };
        let shown = name.to_string_lossy();
        let path = if prefix.is_empty() {
            shown.into_owned()
        } else {
            format!("{prefix}/{shown}")
        };
        if listing.entries.len() >= MAX_LIST_ENTRIES
            || *path_bytes + path.len() > MAX_LIST_PATH_BYTES
        {
            listing.truncated = true;
            return Ok(());
        }
        *path_bytes += path.len();
        let kind = kind_of(&meta.file_type());
        listing.entries.push(Entry {
            path: path.clone(),
            kind,
            size: if kind == Kind::File { meta.len() } else { 0 },
        });
        if kind == Kind::Dir
            && depth < MAX_DEPTH
            && let Ok(sub) = dir.open_dir_nofollow(&name)
        {
            collect(&sub, &path, depth + 1, listing, path_bytes)?;
        }
        if listing.truncated {
            return Ok(());
        }
    }
    Ok(())
}

/// Answers one host call of sandboxed code: `read` → `{data: base64, size}`, `write` and
/// `remove` → `null`, `list` → a [`Listing`].
pub(crate) fn answer(space: &Space, call: WorkspaceCall) -> Result<serde_json::Value, String> {
    use base64::Engine;
    let done = |r: Result<(), FileError>| r.map(|()| serde_json::Value::Null);
    match call {
        WorkspaceCall::Read { path } => read(space, &path).map(|bytes| {
            serde_json::json!({
                "data": base64::engine::general_purpose::STANDARD.encode(&bytes),
                "size": bytes.len(),
            })
        }),
        WorkspaceCall::Write { path, data } => done(write(space, &path, &data)),
        WorkspaceCall::Remove { path } => done(remove(space, &path)),
        WorkspaceCall::List { path } => {
            list(space, &path).map(|listing| serde_json::to_value(listing).unwrap_or_default())
        }
    }
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
