//! The sandbox: jailed Deno worker processes that run untrusted code, one process per client
//! session and language, executions on long-lived lanes (Deno Web Workers): a fresh V8 context
//! per TypeScript execution, a Pyodide interpreter behind a verified reset per Python one.
//!
//! - `proto`: the host↔process envelopes and the execution lines inside them (pure data).
//! - `launch`: how a Deno process is started ([`launch::WorkerConfig`], the one command builder).
//! - `host`: spawning a worker process, its private socket, driving executions in it, killing it;
//!   `data_limits`: its data limit, fitted to the isolates it holds.
//! - `outcome`: how a run ended, the output cap, the words for failures.
//! - `tap`: the newest lines of a running execution's output, bounded, for live reporting.
//! - `pool`: worker processes by client session, their retirement, the spare process.
//! - `stage`: the private copy of the wrapper modules a process may read.
//! - `stray`: the backstop for work an execution left running in its process; `held`: the
//!   memory a resting process kept after a burst of work.
//! - `snapshot`: the trusted run that makes the Pyodide memory snapshot; `prepared`: what every
//!   process starts from (the verified snapshot).
//! - `runtimes`: the pinned Deno and Pyodide tarballs, fetched and verified.
//! - `fs_rules`: the part of the filesystem a Deno process may reach, enforced by the kernel
//!   (Landlock).
//! - `jail`: the confinement applied between fork and exec, and every syscall the sandbox makes
//!   (the only home of `unsafe` besides the posture probes).
//! - `runner`: the JavaScript of a worker process: the supervisor (`supervisor/`) and the
//!   isolate runner (`runner/`), each numbered plain scripts joined in order into one source.

pub(crate) mod data_limits;
pub mod fs_rules;
pub(crate) mod held;
pub mod host;
#[allow(unsafe_code)]
pub mod jail;
pub mod launch;
pub mod outcome;
pub mod pool;
pub mod prepared;
pub mod proto;
pub mod runner;
pub mod runtimes;
pub mod snapshot;
pub mod stage;
pub(crate) mod stray;
pub mod tap;
pub(crate) mod typescript;
