//! How `setup` and `trust` replace a file: through symbolic links (a symlinked
//! `~/.claude.json`, as dotfile managers make, stays a link and its target gets the new text),
//! atomically (a temporary file in the target's own directory, synced, then renamed over it),
//! keeping the old file's permissions. The only writer of files in `setup`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Symbolic links followed at most before giving up (Linux's own limit, as `ELOOP`).
pub(crate) const MAX_LINKS: usize = 40;

/// The file `path` finally names: each symbolic link in its last component replaced by its
/// target (a relative target is relative to the link's directory), whether or not that file
/// exists yet.
pub(crate) fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_owned();
    for _ in 0..=MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) => dir.join(target),
                    None => target,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other(format!(
        "{}: more than {MAX_LINKS} levels of symbolic links",
        path.display()
    )))
}

/// Replaces the file `path` names with `text`, atomically, through symbolic links. Returns the
/// file written (the link's target when `path` is a link).
pub(crate) fn replace(path: &Path, text: impl AsRef<[u8]>) -> io::Result<PathBuf> {
    let target = resolve_links(path)?;
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_ref())?;
    tmp.as_file().sync_all()?;
    if let Some(p) = permissions {
        std::fs::set_permissions(tmp.path(), p)?;
    }
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn writes_through_a_chain_of_links_and_keeps_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dotfiles = tmp.path().join("dotfiles");
        std::fs::create_dir_all(&dotfiles).unwrap();
        let real = dotfiles.join("claude.json");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let middle = tmp.path().join("middle.json");
        symlink("dotfiles/claude.json", &middle).unwrap();
        let link = tmp.path().join("home.json");
        symlink(&middle, &link).unwrap();

        let written = replace(&link, "new").unwrap();
        assert_eq!(written, tmp.path().join("dotfiles/claude.json"));
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            std::fs::symlink_metadata(&middle)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dotfiles).unwrap().count(), 1);
    }

    #[test]
    fn a_dangling_link_gets_its_target_created_and_a_loop_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("link.json");
        symlink("sub/new.json", &link).unwrap();
        replace(&link, "{}").unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("sub/new.json")).unwrap(),
            "{}"
        );
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        symlink(&b, &a).unwrap();
        symlink(&a, &b).unwrap();
        let err = replace(&a, "x").unwrap_err();
        assert!(err.to_string().contains("symbolic links"), "{err}");
    }
}
