//! Configuration: the server's own settings (`settings`) and the downstream MCP servers found
//! in the config files users already have (`discovery`, with `${VAR}` expansion in `expand` and
//! the Codex and Gemini CLI spellings in `dialects`); `first_run` writes the settings file of a
//! fresh container from its `CODE_EXECUTOR_*` variables.

pub mod dialects;
pub mod discovery;
pub mod expand;
pub mod first_run;
pub mod settings;
