//! Build script: puts the git commit the binary is built from into `--version`
//! (`BUILD_COMMIT` at compile time), so that a bug report names the exact source.
//!
//! The string depends on the commit only (no time, no host, no dirty flag), so that the same
//! commit always builds the same bytes (the container image's reproducibility check,
//! `SOURCE_DATE_EPOCH`). Outside a git checkout (a source tarball) it is
//! `$SOURCE_COMMIT` if the builder sets it, else `unknown commit`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=SOURCE_COMMIT");
    // Built again when HEAD moves: the files git keeps it in (a worktree's own HEAD included;
    // only files that exist, or cargo would run this script on every build).
    let head_ref = git(&["symbolic-ref", "-q", "HEAD"]);
    let watched = ["HEAD", "packed-refs"]
        .into_iter()
        .map(str::to_owned)
        .chain(head_ref);
    for path in watched {
        if let Some(file) = git(&["rev-parse", "--git-path", &path])
            && std::path::Path::new(&file).exists()
        {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    let commit = std::env::var("SOURCE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .map(|c| format!("commit {c}"))
        .unwrap_or_else(|| "unknown commit".to_owned());
    println!("cargo:rustc-env=BUILD_COMMIT={commit}");
}
