//! The server's own settings: `settings` loads them (a TOML file, then `CODE_EXECUTOR_*`
//! variables; raw, then validated) and `first_run` writes the settings file of a fresh container
//! from its `CODE_EXECUTOR_*` variables; `memory_fit` fits the workers' memory limit into the
//! container's at start. The MCP client configs the server reads are `clients`'s.

pub mod first_run;
pub mod memory_fit;
pub mod settings;
