//! code-executor: one MCP server in front of all of a user's MCP servers. The LLM writes
//! TypeScript that runs in a fresh, jailed Deno worker and calls the other servers' tools through
//! `callMCPTool(...)`; tool definitions and intermediate data never enter the LLM's context.
//!
//! Data path: `front` (rmcp server) → `executor` (admission, one fresh worker per execution) →
//! `sandbox` (jailed worker process, private pipe protocol) → host calls → `broker` (policy,
//! allowlist, quota, schema validation, rate limits, sizes) → `upstream` (rmcp clients) →
//! downstream server, and back the same way. `audit` writes the trail of executions and calls;
//! `observe` holds metrics and the operations endpoint.

pub mod app;
pub mod appliance;
pub mod broker;
pub mod catalog;
pub mod clients;
pub mod config;
pub mod executor;
pub mod front;
pub mod ops;
pub mod sandbox;
pub mod setup;
pub mod upstream;
pub mod wrappers;
