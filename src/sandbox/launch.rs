//! How a Deno process of the sandbox is started: [`WorkerConfig`] (the runtimes, the limits,
//! what workers start from) and `WorkerConfig::deno_command`, the one place a Deno command
//! line is written, for a worker and for the trusted run that makes the Pyodide snapshot alike:
//! the jail and the filesystem it may reach (`fs_rules`), the environment (`DENO_DIR` only), the
//! working directory, the flags, the permissions, the runner and its arguments. Spawning and
//! driving the process is `host`'s.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use base64::Engine as _;

use super::fs_rules::{self, FsGrants};
use super::jail::{self, JailPolicy};
use super::proto::Language;
use super::runner;
use super::seed::{self, PreparedSlot};

/// The largest file the trusted snapshot run may write (the Pyodide memory snapshot is about
/// 30 MiB); workers get [`JailPolicy::max_file_bytes`].
const SNAPSHOT_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// Flags of every Deno process the sandbox starts: no prompt, no configuration file, lock file,
/// remote module or npm package is ever consulted, and Deno's own messages stay quiet.
const BASE_FLAGS: [&str; 7] = [
    "run",
    "--no-prompt",
    "--no-config",
    "--no-lock",
    "--no-remote",
    "--no-npm",
    "--quiet",
];

/// How to start workers.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub deno: PathBuf,
    pub pyodide_dir: PathBuf,
    /// What the trusted preparation run made, verified: the Pyodide memory snapshot Python
    /// workers start from and the seed of every worker's Deno cache. Workers use it while it is
    /// set (it may be made in the background after the server has started, and is dropped if a
    /// worker finds the snapshot unusable).
    pub prepared: PreparedSlot,
    pub heap_limit_mb: u32,
    pub jail: JailPolicy,
    /// Typed wrapper modules sandboxed code may import (see [`super::stage`]).
    pub wrappers_dir: Option<PathBuf>,
    /// Refuse to start any Deno process when the kernel has no Landlock (fail closed) instead
    /// of running with the other layers only (warned about at start-up).
    pub require_landlock: bool,
}

/// What a Deno process is started for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Purpose<'a> {
    /// A worker that will run one execution of `language`.
    Worker {
        language: Language,
        /// Pay the runtime's first-use costs before announcing `ready` (a pooled worker);
        /// without it, a worker started for an execution already waiting skips them.
        warm_up: bool,
        /// The verified Pyodide memory snapshot a Python worker starts from.
        snapshot: Option<&'a Path>,
        /// The worker's private copy of the wrapper modules, readable by it.
        wrappers: Option<&'a Path>,
    },
    /// The trusted run that writes the Pyodide memory snapshot to `out` (no user code).
    Snapshot { out: &'a Path },
}

impl WorkerConfig {
    /// The jailed Deno command for `purpose`, with `deno_dir` as its private cache and `cwd` as
    /// its working directory. Its standard streams are left for the caller to set. Fails when
    /// the filesystem rules cannot be built, or Landlock is required and missing.
    pub(crate) fn deno_command(
        &self,
        purpose: Purpose<'_>,
        deno_dir: &Path,
        cwd: &Path,
    ) -> std::io::Result<tokio::process::Command> {
        if self.require_landlock && !fs_rules::support().available() {
            return Err(std::io::Error::other(
                "Landlock is required (require_landlock) but this kernel has none",
            ));
        }
        let mut policy = self.jail;
        if let Purpose::Snapshot { .. } = purpose {
            policy.max_file_bytes = policy.max_file_bytes.max(SNAPSHOT_FILE_BYTES);
        }
        let mut cmd = tokio::process::Command::new(&self.deno);
        jail::confine(&mut cmd, policy, &self.grants(purpose, deno_dir, cwd))?;
        // The only variable a Deno process sees; user code cannot read it (no --allow-env).
        cmd.env("DENO_DIR", deno_dir).current_dir(cwd);
        cmd.args(BASE_FLAGS);
        match purpose {
            Purpose::Worker {
                language,
                warm_up,
                snapshot,
                wrappers,
            } => {
                cmd.args(self.worker_flags(language, snapshot, wrappers));
                cmd.arg(runner_url());
                // Script arguments (`Deno.args`): the language, and for Python where Pyodide
                // (and its snapshot) live, so the runner can load it before announcing `ready`.
                cmd.arg(language.as_str());
                if language == Language::Python {
                    cmd.arg(&self.pyodide_dir);
                    if let Some(snapshot) = snapshot {
                        cmd.arg(snapshot);
                    }
                }
                if !warm_up {
                    cmd.arg("--no-warm-up");
                }
            }
            Purpose::Snapshot { out } => {
                cmd.arg(format!("--allow-read={}", self.pyodide_dir.display()))
                    .arg(format!("--allow-write={}", out.display()))
                    .arg(runner_url())
                    .arg("snapshot")
                    .arg(&self.pyodide_dir)
                    .arg(out);
            }
        }
        Ok(cmd)
    }

    /// What the kernel lets the process for `purpose` reach: a worker reads its own
    /// directories (and for Python, Pyodide and the snapshot), may rewrite the cache files
    /// `seed` put there and create files only in the emit directory; the trusted snapshot run
    /// may write its cache and the directory of its output.
    pub(crate) fn grants(&self, purpose: Purpose<'_>, deno_dir: &Path, cwd: &Path) -> FsGrants {
        let mut grants = FsGrants {
            executables: vec![self.deno.clone()],
            reads: vec![cwd.to_path_buf(), deno_dir.to_path_buf()],
            ..FsGrants::default()
        };
        match purpose {
            Purpose::Worker {
                language, snapshot, ..
            } => {
                if language == Language::Python {
                    grants.reads.push(self.pyodide_dir.clone());
                    grants.reads.extend(snapshot.map(Path::to_path_buf));
                }
                grants.writable_files = seed::WRITABLE_CACHE_FILES
                    .iter()
                    .map(|name| deno_dir.join(name))
                    .collect();
                grants.writable_trees.push(deno_dir.join(seed::EMIT_DIR));
            }
            Purpose::Snapshot { out } => {
                grants.reads.push(self.pyodide_dir.clone());
                grants.writable_trees.push(deno_dir.to_path_buf());
                grants
                    .writable_trees
                    .extend(out.parent().map(Path::to_path_buf));
            }
        }
        grants
    }

    /// A worker's flags after the common ones: its V8 settings and its only permissions.
    fn worker_flags(
        &self,
        language: Language,
        snapshot: Option<&Path>,
        wrappers: Option<&Path>,
    ) -> Vec<String> {
        // A pooled worker may idle for minutes before its one execution. V8 would meanwhile
        // flush the bytecode of the runner functions the warm-up compiled (and the TypeScript
        // loader's), and the execution would pay to compile them again: 2-4 ms of a 2 ms run.
        let mut v8_flags = format!(
            "--max-old-space-size={},--no-flush-bytecode",
            self.heap_limit_mb
        );
        if language == Language::Python {
            // Python's own recursion limit must trip before V8's stack runs out (the main
            // thread stack is 8 MiB; these stay well inside it).
            v8_flags.push_str(",--stack-size=4000,--wasm-stack-switching-stack-size=4000");
            // Optimise only really hot WebAssembly (the interpreter loop of a long
            // computation), 100x V8's default threshold. With the default, loading Pyodide and
            // its first runs send hundreds of lukewarm functions to the optimising compiler:
            // ~400 ms of background CPU per worker, stealing the core a running execution needs
            // (print(1) took ~40 ms instead of ~7), and long computations still finished no
            // sooner.
            v8_flags.push_str(",--wasm-tiering-budget=1300000000");
        }
        let mut flags = vec![
            // V8's code cache lives in the worker's private DENO_DIR, which dies with the
            // worker: writing it only costs time (~20 ms of CPU per start, and SQLite writes
            // during the execution).
            "--no-code-cache".to_string(),
            format!("--v8-flags={v8_flags}"),
        ];
        // The only permissions any worker ever gets: reading its own copy of the wrapper
        // modules, and for Python the Pyodide distribution (and its verified snapshot).
        let mut readable: Vec<&Path> = wrappers.into_iter().collect();
        if language == Language::Python {
            readable.push(&self.pyodide_dir);
            readable.extend(snapshot);
        }
        if !readable.is_empty() {
            let list: Vec<String> = readable.iter().map(|p| p.display().to_string()).collect();
            flags.push(format!("--allow-read={}", list.join(",")));
        }
        flags
    }
}

/// The runner as the `data:` URL Deno runs as its main module: embedded in the binary, so no
/// file on disk is needed and none can be swapped.
pub(crate) fn runner_url() -> String {
    format!(
        "data:application/javascript;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(runner::SOURCE)
    )
}

/// Checks that the Deno binary at `deno` runs and reports its version.
pub(crate) async fn deno_version(deno: &Path) -> Result<String, std::io::Error> {
    let out = tokio::process::Command::new(deno)
        .arg("--version")
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .await?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> WorkerConfig {
        WorkerConfig {
            deno: "/rt/deno".into(),
            pyodide_dir: "/rt/pyodide".into(),
            prepared: PreparedSlot::default(),
            heap_limit_mb: 64,
            jail: JailPolicy::default(),
            wrappers_dir: None,
            require_landlock: false,
        }
    }

    fn args(cmd: &tokio::process::Command) -> Vec<String> {
        cmd.as_std()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_typescript_worker_gets_no_permission_at_all() {
        let worker = Purpose::Worker {
            language: Language::Typescript,
            warm_up: true,
            snapshot: None,
            wrappers: None,
        };
        let cmd = config()
            .deno_command(worker, Path::new("/w/cache"), Path::new("/w/cwd"))
            .unwrap();
        let args = args(&cmd);
        assert_eq!(&args[..7], BASE_FLAGS);
        assert!(args.iter().all(|a| !a.starts_with("--allow")), "{args:?}");
        assert_eq!(args[args.len() - 1], "typescript");
        let envs: Vec<_> = cmd.as_std().get_envs().collect();
        assert_eq!(envs.len(), 1, "{envs:?}");
        assert_eq!(cmd.as_std().get_current_dir(), Some(Path::new("/w/cwd")));
    }

    #[test]
    fn a_python_worker_reads_pyodide_its_snapshot_and_its_wrappers_only() {
        let worker = Purpose::Worker {
            language: Language::Python,
            warm_up: false,
            snapshot: Some(Path::new("/c/py.snapshot")),
            wrappers: Some(Path::new("/w/cwd/wrappers")),
        };
        let args = args(
            &config()
                .deno_command(worker, Path::new("/w/c"), Path::new("/w/cwd"))
                .unwrap(),
        );
        let allow: Vec<&String> = args.iter().filter(|a| a.starts_with("--allow")).collect();
        assert_eq!(
            allow,
            ["--allow-read=/w/cwd/wrappers,/rt/pyodide,/c/py.snapshot"]
        );
        let tail = &args[args.len() - 4..];
        assert_eq!(
            tail,
            ["python", "/rt/pyodide", "/c/py.snapshot", "--no-warm-up"]
        );
    }

    #[test]
    fn the_snapshot_run_may_write_its_one_output_file() {
        let snapshot = Purpose::Snapshot {
            out: Path::new("/c/.s/snapshot"),
        };
        let args = args(
            &config()
                .deno_command(snapshot, Path::new("/c/d"), Path::new("/c/w"))
                .unwrap(),
        );
        let allow: Vec<&String> = args.iter().filter(|a| a.starts_with("--allow")).collect();
        assert_eq!(
            allow,
            ["--allow-read=/rt/pyodide", "--allow-write=/c/.s/snapshot"]
        );
        assert_eq!(
            args[args.len() - 3..],
            ["snapshot", "/rt/pyodide", "/c/.s/snapshot"]
        );
    }
}
