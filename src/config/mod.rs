//! The server's own settings: `settings` loads them (a TOML file, then `CODE_EXECUTOR_*`
//! variables; raw, then validated) and `first_run` writes the settings file of a fresh container
//! from its `CODE_EXECUTOR_*` variables; `keys` names the settings as a user writes them (unknown
//! keys with the closest real one, load errors naming the key); `memory_fit` fits the workers' memory limit into the
//! container's at start. The MCP client configs the server reads are `clients`'s.

pub mod first_run;
pub(crate) mod keys;
pub mod memory_fit;
pub mod settings;
