//! Configuration: the server's own settings (`settings`) and the downstream MCP servers found
//! in the config files users already have (`discovery`, with `${VAR}` expansion in `expand`).

pub mod discovery;
pub mod expand;
pub mod first_run;
pub mod settings;
