//! The sandbox: jailed Deno worker processes that run untrusted code, one execution each.
//!
//! - `proto`: the host↔worker messages (pure data, no I/O).
//! - `launch`: how a Deno process is started ([`launch::WorkerConfig`], the one command builder).
//! - `host`: spawning a worker, driving one execution over its pipes, killing it.
//! - `outcome`: how a run ended, the output cap, the words for failures.
//! - `pool`: warm workers per language; `pause`: holding back starting workers meanwhile.
//! - `stage`: the private copy of the wrapper modules a worker may read.
//! - `snapshot`: the trusted run that makes the Pyodide memory snapshot; `seed`: what every
//!   worker starts from (the verified snapshot and its Deno cache seed); `sqlite_wal`: the
//!   seed's SQLite logs made reproducible.
//! - `runtimes`: the pinned Deno and Pyodide tarballs, fetched and verified.
//! - `fs_rules`: the part of the filesystem a Deno process may reach, enforced by the kernel
//!   (Landlock).
//! - `jail`: the confinement applied between fork and exec, and every syscall the sandbox makes
//!   (the only home of `unsafe` besides the posture probes).
//! - `runner`: the JavaScript that runs inside the worker: the numbered plain scripts of
//!   `runner/`, joined in order into one source.

pub mod fs_rules;
pub mod host;
#[allow(unsafe_code)]
pub mod jail;
pub mod launch;
pub mod outcome;
pub mod pause;
pub mod pool;
pub mod proto;
pub mod runner;
pub mod runtimes;
pub mod seed;
pub mod snapshot;
mod sqlite_wal;
pub mod stage;
