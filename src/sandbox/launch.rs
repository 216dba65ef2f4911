//! How a Deno process of the sandbox is started: [`WorkerConfig`] (the runtimes, the limits,
//! what workers start from) and `WorkerConfig::deno_command`, the one place a Deno command
//! line is written, for a worker process and for the trusted run that makes the Pyodide
//! snapshot alike: the jail and the filesystem it may reach (`fs_rules`), the environment, the
//! working directory, the flags, the permissions, the supervisor and its arguments. Spawning
//! and driving the process is `host`'s.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use base64::Engine as _;

use super::fs_rules::{self, FsGrants};
use super::jail::{self, JailPolicy};
use super::prepared::PreparedSlot;
use super::proto::Language;
use super::runner;
use super::runtimes::Readiness;

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
    /// isolates start from. Processes use it while it is set (it may be made in the background
    /// after the server has started, and is dropped if a process finds it unusable).
    pub prepared: PreparedSlot,
    pub heap_limit_mb: u32,
    pub jail: JailPolicy,
    /// Typed wrapper modules sandboxed code may import (see [`super::stage`]).
    pub wrappers_dir: Option<PathBuf>,
    /// Refuse to start any Deno process when the kernel has no Landlock (fail closed) instead
    /// of running with the other layers only (warned about at start-up).
    pub require_landlock: bool,
    /// Whether `deno` and `pyodide_dir` are installed yet (a serving process may be installing
    /// them in the background): nothing starts a process before.
    pub runtimes: Readiness,
}

/// What a Deno process is started for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Purpose<'a> {
    /// A worker process running executions of `language`, each in an isolate of its own.
    Process {
        language: Language,
        /// The host's socket, the process's one connection to the host.
        socket: &'a Path,
        /// Lanes it keeps ready, and the most it holds.
        lanes: Lanes,
        /// The verified Pyodide memory snapshot Python isolates start from.
        snapshot: Option<&'a Path>,
        /// The process's private copy of the wrapper modules, readable by it.
        wrappers: Option<&'a Path>,
    },
    /// The trusted run that writes the Pyodide memory snapshot to `out` (no user code).
    Snapshot { out: &'a Path },
}

/// The lanes of a worker process: isolates that each serve its executions one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lanes {
    /// Lanes kept ready for the next executions (0: none is started before one is asked for).
    pub ready: usize,
    /// The most lanes the process holds at once (ready, running or resetting); executions
    /// beyond them wait for one.
    pub most: usize,
    /// Started for an execution that waits for it (not ahead of need, as a spare): a Python
    /// process's first lane then serves it without taking a baseline first, and ends after it.
    pub awaited: bool,
}

/// The environment of every Deno process of the sandbox, besides `DENO_DIR` (none of it is
/// readable by user code: no `--allow-env`). Deno writes no transpiled module to its cache
/// (each process's `DENO_DIR` is read-only to it: with no cache on disk, nothing one execution
/// loads is there for another), and the C allocator keeps two arenas rather than one per
/// isolate thread (freed isolates' memory goes back instead of lingering in idle arenas: a
/// Python process held 554 MiB after 100 executions with one per thread, 224 MiB with two).
/// Allocations over 128 KiB are always mapped on their own and unmapped when freed: with glibc's
/// sliding threshold, the 30 MB snapshot each Python lane reads came from the heap afterwards
/// and stayed there once freed (a Python process with one lane: 237 MiB resident, 161 MiB so).
/// (glibc's own names for these two tunables: its `GLIBC_TUNABLES` holding both is rewritten
/// in place into what reads as two variables in `/proc/<pid>/environ`.)
const ENVIRONMENT: [(&str, &str); 3] = [
    ("DENO_EMIT_CACHE_MODE", "disable"),
    ("MALLOC_ARENA_MAX", "2"),
    ("MALLOC_MMAP_THRESHOLD_", "131072"),
];

/// The names of the only variables a worker process is given (the appliance's posture checks
/// that its workers hold no others).
pub(crate) fn environment_names() -> impl Iterator<Item = &'static str> {
    std::iter::once("DENO_DIR").chain(ENVIRONMENT.iter().map(|(name, _)| *name))
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
        cmd.env("DENO_DIR", deno_dir)
            .envs(ENVIRONMENT)
            .current_dir(cwd);
        cmd.args(BASE_FLAGS);
        match purpose {
            Purpose::Process {
                language,
                socket,
                lanes,
                snapshot,
                wrappers,
            } => {
                cmd.args(self.process_flags(language, socket, snapshot, wrappers));
                cmd.arg(supervisor_url());
                // Script arguments (`Deno.args`), see the supervisor's opening comment.
                cmd.arg(language.as_str())
                    .arg(socket)
                    .arg(lanes.ready.to_string())
                    .arg(self.jail.max_isolates.to_string())
                    .arg(lanes.most.to_string())
                    .arg(if lanes.awaited { "awaited" } else { "ahead" });
                if language == Language::Python {
                    cmd.arg(&self.pyodide_dir);
                    if let Some(snapshot) = snapshot {
                        cmd.arg(snapshot);
                    }
                }
            }
            Purpose::Snapshot { out } => {
                cmd.arg(format!("--v8-flags={}", self.v8_flags(Language::Python)))
                    .arg(format!("--allow-read={}", self.pyodide_dir.display()))
                    .arg(format!("--allow-write={}", out.display()))
                    .arg(supervisor_url())
                    .arg("snapshot")
                    .arg(&self.pyodide_dir)
                    .arg(out);
            }
        }
        Ok(cmd)
    }

    /// What the kernel lets the process for `purpose` reach: a worker process reads its own
    /// directories (and for Python, Pyodide and the snapshot) and writes nothing; the trusted
    /// snapshot run may write the directory of its output.
    pub(crate) fn grants(&self, purpose: Purpose<'_>, deno_dir: &Path, cwd: &Path) -> FsGrants {
        let mut grants = FsGrants {
            executables: vec![self.deno.clone()],
            reads: vec![cwd.to_path_buf(), deno_dir.to_path_buf()],
            ..FsGrants::default()
        };
        match purpose {
            Purpose::Process {
                language, snapshot, ..
            } => {
                if language == Language::Python {
                    grants.reads.push(self.pyodide_dir.clone());
                    grants.reads.extend(snapshot.map(Path::to_path_buf));
                }
            }
            Purpose::Snapshot { out } => {
                grants.reads.push(self.pyodide_dir.clone());
                grants
                    .writable_trees
                    .extend(out.parent().map(Path::to_path_buf));
            }
        }
        grants
    }

    /// The V8 settings of every isolate of a process for `language` (V8's flags are the
    /// process's: each isolate gets these limits).
    fn v8_flags(&self, language: Language) -> String {
        // A prepared isolate may wait for minutes before its one execution. V8 would meanwhile
        // flush the bytecode of the runner functions it compiled, and the execution would pay
        // to compile them again.
        let mut v8_flags = format!(
            "--max-old-space-size={},--no-flush-bytecode",
            self.heap_limit_mb
        );
        if language == Language::Python {
            // Python's own recursion limit must trip before V8's stack runs out (isolate threads
            // have 8 MiB stacks; these stay well inside them).
            v8_flags.push_str(",--stack-size=4000,--wasm-stack-switching-stack-size=4000");
            // Optimise only really hot WebAssembly (the interpreter loop of a long
            // computation), 100x V8's default threshold. With the default, loading Pyodide and
            // its first runs send hundreds of lukewarm functions to the optimising compiler,
            // stealing the core a running execution needs, and long computations still finished
            // no sooner. (The process's compiled module is shared by its isolates: what one
            // optimises, the next ones use.)
            v8_flags.push_str(",--wasm-tiering-budget=1300000000");
        }
        v8_flags
    }

    /// A worker process's flags after the common ones: its V8 settings and its only
    /// permissions. The socket's (net, read and write of that one path) are the supervisor's,
    /// given up once it is connected, before any isolate starts (see the supervisor).
    fn process_flags(
        &self,
        language: Language,
        socket: &Path,
        snapshot: Option<&Path>,
        wrappers: Option<&Path>,
    ) -> Vec<String> {
        let socket = socket.display().to_string();
        // The only read permissions any isolate keeps: its copy of the wrapper modules, and for
        // Python the Pyodide distribution (and its verified snapshot).
        let mut readable: Vec<String> = vec![socket.clone()];
        readable.extend(wrappers.map(|p| p.display().to_string()));
        if language == Language::Python {
            readable.push(self.pyodide_dir.display().to_string());
            readable.extend(snapshot.map(|p| p.display().to_string()));
        }
        vec![
            // V8's code cache lives in the process's `DENO_DIR`, which it may not write.
            "--no-code-cache".to_string(),
            format!("--v8-flags={}", self.v8_flags(language)),
            format!("--allow-net=unix:{socket}"),
            format!("--allow-read={}", readable.join(",")),
            format!("--allow-write={socket}"),
        ]
    }
}

/// The supervisor as the `data:` URL Deno runs as its main module: embedded in the binary, so
/// no file on disk is needed and none can be swapped (the isolate runner reaches it on its
/// standard input, from the binary too).
pub(crate) fn supervisor_url() -> String {
    format!(
        "data:application/javascript;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(runner::SUPERVISOR_SOURCE)
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
            runtimes: Readiness::default(),
        }
    }

    fn args(cmd: &tokio::process::Command) -> Vec<String> {
        cmd.as_std()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn allowed(args: &[String]) -> Vec<&String> {
        args.iter().filter(|a| a.starts_with("--allow")).collect()
    }

    #[test]
    fn a_typescript_process_may_reach_its_socket_only() {
        let process = Purpose::Process {
            language: Language::Typescript,
            socket: Path::new("/w/host.sock"),
            lanes: Lanes {
                ready: 2,
                most: 4,
                awaited: false,
            },
            snapshot: None,
            wrappers: None,
        };
        let cmd = config()
            .deno_command(process, Path::new("/w/deno"), Path::new("/w/cwd"))
            .unwrap();
        let args = args(&cmd);
        assert_eq!(&args[..7], BASE_FLAGS);
        assert_eq!(
            allowed(&args),
            [
                "--allow-net=unix:/w/host.sock",
                "--allow-read=/w/host.sock",
                "--allow-write=/w/host.sock"
            ]
        );
        assert_eq!(
            args[args.len() - 6..],
            ["typescript", "/w/host.sock", "2", "16", "4", "ahead"]
        );
        let envs: Vec<_> = cmd.as_std().get_envs().map(|(k, _)| k.to_owned()).collect();
        assert_eq!(
            envs,
            [
                "DENO_DIR",
                "DENO_EMIT_CACHE_MODE",
                "MALLOC_ARENA_MAX",
                "MALLOC_MMAP_THRESHOLD_"
            ],
            "nothing of the server's environment"
        );
        assert_eq!(cmd.as_std().get_current_dir(), Some(Path::new("/w/cwd")));
        // The kernel lets it write nothing.
        let grants = config().grants(process, Path::new("/w/deno"), Path::new("/w/cwd"));
        assert!(grants.writable_trees.is_empty() && grants.writable_files.is_empty());
    }

    #[test]
    fn a_python_process_reads_pyodide_its_snapshot_and_its_wrappers_too() {
        let process = Purpose::Process {
            language: Language::Python,
            socket: Path::new("/w/s"),
            lanes: Lanes {
                ready: 1,
                most: 2,
                awaited: true,
            },
            snapshot: Some(Path::new("/c/py.snapshot")),
            wrappers: Some(Path::new("/w/cwd/wrappers")),
        };
        let args = args(
            &config()
                .deno_command(process, Path::new("/w/d"), Path::new("/w/cwd"))
                .unwrap(),
        );
        assert_eq!(
            allowed(&args)[1],
            "--allow-read=/w/s,/w/cwd/wrappers,/rt/pyodide,/c/py.snapshot"
        );
        let tail = &args[args.len() - 8..];
        assert_eq!(
            tail,
            [
                "python",
                "/w/s",
                "1",
                "16",
                "2",
                "awaited",
                "/rt/pyodide",
                "/c/py.snapshot"
            ]
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
        assert_eq!(
            allowed(&args),
            ["--allow-read=/rt/pyodide", "--allow-write=/c/.s/snapshot"]
        );
        assert_eq!(
            args[args.len() - 3..],
            ["snapshot", "/rt/pyodide", "/c/.s/snapshot"]
        );
    }
}
