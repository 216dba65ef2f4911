//! code-executor: one MCP server in front of all of a user's MCP servers. The LLM writes
//! TypeScript or Python that runs in a fresh, jailed Deno worker and calls the other servers'
//! tools through `callMCPTool(...)`; tool definitions and intermediate data never enter the
//! LLM's context.
//!
//! # The crate map
//!
//! The data path, one way and back:
//!
//! `front` (the rmcp server the client talks to) → `executor` (admission, fair between
//! principals; a fresh worker per execution) → `sandbox` (the jailed worker process and its
//! private pipe protocol) → host calls → `broker::gate` (resolve, admit, validate, rate-limit,
//! send, check, shape, record) → `upstream` (rmcp clients to the downstream servers) → the
//! downstream server.
//!
//! Beside it:
//! - `catalog`: what can be learnt about downstream tools (search, signatures, the live
//!   directory of servers and schemas).
//! - `clients`: the MCP client config files users already have (where they are, how each is
//!   read, discovery of the downstream servers); `setup` edits them, `wrappers` generates typed
//!   modules from the live schemas: the two commands beside `serve`.
//! - `ask`: the questions an execution puts to its client (sampling from code, approvals before
//!   a tool call leaves, the downstream servers' questions relayed).
//! - `config`: the server's own settings. `ops`: the audit trail and the metrics.
//! - `appliance`: the container's relay, healthcheck and posture report.
//! - `workspace`: what persists between executions, only through the host: files and saved
//!   skills, the project's and (over HTTP) each principal's.
//! - `content`: content blocks' media payloads, for the checkpoints every block passes.
//! - `pii`: personal data replaced by per-session tokens on its way to the client, and put
//!   back in the calls code makes (`pii = "tokenize"`).
//! - `app`: the assembly of all of it from the settings, shared by every subcommand (`main.rs`
//!   holds the command line, one function per subcommand).
//!
//! `unsafe` is denied everywhere but in `sandbox::jail` (the jail applied between fork and exec)
//! and `appliance::posture::sys` (the raw syscalls of the posture probes).

#![deny(unsafe_code)]

pub mod app;
pub mod appliance;
pub(crate) mod ask;
pub mod broker;
pub mod catalog;
pub mod clients;
pub mod config;
pub(crate) mod content;
pub mod executor;
pub mod front;
pub mod ops;
pub(crate) mod pii;
pub mod sandbox;
pub mod setup;
pub(crate) mod text;
pub mod upstream;
pub mod workspace;
pub mod wrappers;
