//! Tests of the path rules and the resolver: every way out of the workspace tried, and the
//! quotas.

use super::*;
use crate::config::settings::WorkspaceQuota;

struct Fixture {
    base: tempfile::TempDir,
    space: Space,
}

impl Fixture {
    fn new(quota: WorkspaceQuota) -> Fixture {
        let base = tempfile::tempdir().unwrap();
        let project = base.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let space = Space::open_at(&base.path().join("ws"), &project, quota).unwrap();
        Fixture { base, space }
    }

    /// The real directory of the files (for planting things as the user would).
    fn files(&self) -> std::path::PathBuf {
        self.space.root().join(super::super::FILES_DIR)
    }

    /// A file outside the workspace, with known content.
    fn outside(&self, name: &str) -> std::path::PathBuf {
        let path = self.base.path().join(name);
        std::fs::write(&path, b"secret").unwrap();
        path
    }
}

fn roomy() -> WorkspaceQuota {
    WorkspaceQuota {
        max_bytes: 1 << 20,
        max_files: 100,
        max_file_bytes: 1 << 16,
    }
}

fn message(e: FileError) -> String {
    e.to_string()
}

#[test]
fn path_rules_refuse_each_way_out_with_the_rule_named() {
    for (path, rule) in [
        ("/etc/passwd", "absolute paths are not allowed"),
        ("../x", "`..` components are not allowed"),
        ("a/../../x", "`..` components are not allowed"),
        ("./x", "`.` components are not allowed"),
        ("a//b", "empty components"),
        ("a/", "empty components"),
        ("", "it is empty"),
        ("a\0b", "NUL (U+0000) at byte 1"),
        ("a\nb", "a control character (U+000A)"),
        ("a\u{7f}", "U+007F"),
        ("a\u{85}", "U+0085"),
        (".code-executor-tmp-x", "reserved for the server"),
    ] {
        let e = message(parse_path(path, false).unwrap_err());
        assert!(e.contains(rule), "{path:?}: {e}");
        assert!(e.starts_with("workspace: path "), "{e}");
    }
    let long_name = "a".repeat(MAX_NAME_BYTES + 1);
    assert!(message(parse_path(&long_name, false).unwrap_err()).contains("over the limit of 255"));
    let long_path = vec!["a"; 600].join("/");
    assert!(message(parse_path(&long_path, false).unwrap_err()).contains("over the limit of 1024"));
    let deep = vec!["a"; MAX_DEPTH + 1].join("/");
    assert!(message(parse_path(&deep, false).unwrap_err()).contains("components"));
    // What is allowed.
    assert_eq!(parse_path("a/b.txt", false).unwrap(), ["a", "b.txt"]);
    assert_eq!(
        parse_path("..a/.b/c..", false).unwrap(),
        ["..a", ".b", "c.."]
    );
    assert_eq!(parse_path("é/名前 с пробелом", false).unwrap().len(), 2);
    assert!(parse_path(&"a".repeat(MAX_NAME_BYTES), false).is_ok());
    assert!(parse_path(&vec!["a"; MAX_DEPTH].join("/"), false).is_ok());
    // The root, and a trailing `/`, only where a directory is meant.
    assert!(parse_path("", true).unwrap().is_empty());
    assert_eq!(parse_path("a/", true).unwrap(), ["a"]);
}

#[test]
fn a_file_written_is_read_back_and_listed() {
    let f = Fixture::new(roomy());
    write(&f.space, "notes/today.txt", b"hello").unwrap();
    write(&f.space, "top.bin", &[0, 159, 255]).unwrap();
    assert_eq!(read(&f.space, "notes/today.txt").unwrap(), b"hello");
    assert_eq!(read(&f.space, "top.bin").unwrap(), [0, 159, 255]);
    let all = list(&f.space, "").unwrap();
    let shown: Vec<(&str, Kind, u64)> = all
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.kind, e.size))
        .collect();
    assert_eq!(
        shown,
        [
            ("notes", Kind::Dir, 0),
            ("notes/today.txt", Kind::File, 5),
            ("top.bin", Kind::File, 3)
        ]
    );
    assert!(!all.truncated);
    assert_eq!(list(&f.space, "notes/").unwrap().entries.len(), 1);
    assert_eq!(
        list(&f.space, "top.bin").unwrap().entries[0].path,
        "top.bin"
    );
    assert!(matches!(
        list(&f.space, "nope"),
        Err(FileError::NotFound(_))
    ));
    // Replaced whole.
    write(&f.space, "notes/today.txt", b"bye").unwrap();
    assert_eq!(read(&f.space, "notes/today.txt").unwrap(), b"bye");
    assert!(matches!(read(&f.space, "notes"), Err(FileError::IsDir(_))));
    assert!(matches!(
        write(&f.space, "notes", b"x"),
        Err(FileError::IsDir(_))
    ));
    assert!(matches!(
        write(&f.space, "top.bin/x", b"x"),
        Err(FileError::NotDir { .. })
    ));
    assert!(matches!(
        read(&f.space, "missing/x"),
        Err(FileError::NotFound(_))
    ));
    // Removal: a file, then a directory with what it holds; the root never.
    write(&f.space, "notes/deep/er.txt", b"x").unwrap();
    remove(&f.space, "top.bin").unwrap();
    remove(&f.space, "notes").unwrap();
    assert!(list(&f.space, "").unwrap().entries.is_empty());
    assert!(matches!(
        remove(&f.space, "notes"),
        Err(FileError::NotFound(_))
    ));
    assert!(matches!(remove(&f.space, ""), Err(FileError::Path { .. })));
}

#[test]
fn planted_links_lead_nowhere() {
    let f = Fixture::new(roomy());
    let secret = f.outside("secret.txt");
    let outside_dir = f.base.path().join("outside-dir");
    std::fs::create_dir(&outside_dir).unwrap();
    std::fs::write(outside_dir.join("inner.txt"), b"secret").unwrap();
    let files = f.files();
    std::os::unix::fs::symlink(&secret, files.join("to-file")).unwrap();
    std::os::unix::fs::symlink(&outside_dir, files.join("to-dir")).unwrap();
    std::os::unix::fs::symlink("../..", files.join("up")).unwrap();
    write(&f.space, "inside.txt", b"mine").unwrap();
    std::os::unix::fs::symlink("inside.txt", files.join("to-inside")).unwrap();
    // A link as the last component, or on the way, is refused; one to a file inside too.
    for path in ["to-file", "to-dir/inner.txt", "up/secret.txt", "to-inside"] {
        let e = read(&f.space, path).unwrap_err();
        assert!(matches!(e, FileError::Link(_)), "{path}: {e}");
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }
    for path in [
        "to-file",
        "to-dir/inner.txt",
        "to-dir/new.txt",
        "up/new.txt",
    ] {
        let e = write(&f.space, path, b"overwritten").unwrap_err();
        assert!(matches!(e, FileError::Link(_)), "{path}: {e}");
    }
    assert!(matches!(list(&f.space, "to-dir"), Err(FileError::Link(_))));
    assert_eq!(std::fs::read(&secret).unwrap(), b"secret");
    assert_eq!(
        std::fs::read(outside_dir.join("inner.txt")).unwrap(),
        b"secret"
    );
    assert!(!outside_dir.join("new.txt").exists());
    // Listed as links (never followed); removing one removes the link only.
    let listing = list(&f.space, "").unwrap();
    assert!(
        listing
            .entries
            .iter()
            .any(|e| e.path == "to-dir" && e.kind == Kind::Link)
    );
    assert!(!listing.entries.iter().any(|e| e.path.contains("inner")));
    remove(&f.space, "to-dir").unwrap();
    remove(&f.space, "to-file").unwrap();
    assert!(outside_dir.join("inner.txt").exists() && secret.exists());
    // A directory removed with a link inside it: the link goes, not what it points to.
    std::fs::create_dir(files.join("d")).unwrap();
    std::os::unix::fs::symlink(&outside_dir, files.join("d/link")).unwrap();
    remove(&f.space, "d").unwrap();
    assert!(outside_dir.join("inner.txt").exists());
}

#[test]
fn hard_links_are_not_read_and_are_replaced_not_written_through() {
    let f = Fixture::new(roomy());
    let secret = f.outside("hard.txt");
    std::fs::hard_link(&secret, f.files().join("linked")).unwrap();
    let e = read(&f.space, "linked").unwrap_err();
    assert!(matches!(e, FileError::HardLink { links: 2, .. }), "{e}");
    write(&f.space, "linked", b"new").unwrap();
    assert_eq!(std::fs::read(&secret).unwrap(), b"secret");
    assert_eq!(read(&f.space, "linked").unwrap(), b"new");
}

#[test]
fn special_files_are_not_opened() {
    let f = Fixture::new(roomy());
    nix::unistd::mkfifo(&f.files().join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert!(matches!(read(&f.space, "pipe"), Err(FileError::Special(_))));
    let listing = list(&f.space, "").unwrap();
    assert_eq!(listing.entries[0].kind, Kind::Other);
}

#[test]
fn quotas_refuse_with_the_numbers() {
    let f = Fixture::new(WorkspaceQuota {
        max_bytes: 100,
        max_files: 3,
        max_file_bytes: 60,
    });
    let e = message(write(&f.space, "big", &[0; 61]).unwrap_err());
    assert!(
        e.contains("61 bytes, over the largest file of 60 bytes (workspace_max_file_bytes)"),
        "{e}"
    );
    write(&f.space, "a", &[0; 60]).unwrap();
    let e = message(write(&f.space, "b", &[0; 50]).unwrap_err());
    assert!(e.starts_with("workspace quota: writing 50 bytes to \"b\" would bring the workspace to 110 bytes, over its 100 bytes (workspace_max_bytes)"), "{e}");
    // Replacing a file counts its new size, not both.
    write(&f.space, "a", &[0; 55]).unwrap();
    write(&f.space, "b", &[0; 45]).unwrap();
    // Directories count as entries: `d` and `d/c` would make 4.
    let e = message(write(&f.space, "d/c", b"").unwrap_err());
    assert!(e.contains("would make 4 files and directories, over the workspace's limit of 3 (workspace_max_files)"), "{e}");
    assert!(
        list(&f.space, "d").is_err(),
        "nothing made by a refused write"
    );
    // Stale temporary files of a dead write do not count, and are cleaned up.
    std::fs::write(f.files().join(format!("{TEMP_PREFIX}dead")), [0; 90]).unwrap();
    remove(&f.space, "b").unwrap();
    write(&f.space, "c", &[0; 45]).unwrap();
    assert_eq!(std::fs::read_dir(f.files()).unwrap().count(), 2);
}

#[test]
fn a_file_planted_over_the_size_limit_is_not_read() {
    let f = Fixture::new(WorkspaceQuota {
        max_bytes: 1000,
        max_files: 10,
        max_file_bytes: 10,
    });
    std::fs::write(f.files().join("large"), [1; 11]).unwrap();
    assert!(matches!(
        read(&f.space, "large"),
        Err(FileError::TooLarge { .. })
    ));
}

#[test]
fn listings_are_bounded() {
    let f = Fixture::new(roomy());
    let files = f.files();
    for i in 0..(MAX_LIST_ENTRIES + 5) {
        std::fs::write(files.join(format!("f{i:05}")), b"").unwrap();
    }
    let listing = list(&f.space, "").unwrap();
    assert!(listing.truncated);
    assert_eq!(listing.entries.len(), MAX_LIST_ENTRIES);
    assert_eq!(listing.entries[0].path, "f00000");
}

#[test]
fn sizes_are_shown_readably() {
    assert_eq!(Bytes(512).to_string(), "512 bytes");
    assert_eq!(Bytes(3 * 1024 * 1024).to_string(), "3.0 MiB");
    assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
}
