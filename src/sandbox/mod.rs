//! The sandbox: jailed Deno worker processes that run untrusted code, one execution each.
//! `proto` is the host↔worker message format, `host` spawns and drives workers, `pool` keeps
//! ready workers warm, `snapshot` makes and verifies the Pyodide memory snapshot and `seed` the
//! Deno cache every worker starts with, `jail` is the confinement applied between fork and exec
//! (and the only home of `unsafe`), and `runner` is the JavaScript that runs inside the worker
//! (the numbered scripts of `runner/`, joined into one source).

pub mod host;
pub mod jail;
pub mod pool;
pub mod proto;
pub mod runner;
pub mod seed;
pub mod snapshot;
