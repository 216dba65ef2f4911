//! Everything about MCP client config files: where each client keeps its servers, how each
//! file is read in its client's dialect, `${VAR}` expansion, recognising entries that launch
//! this server, and merging every file into the downstream servers this server reaches
//! (`discovery`, with this server's own `servers_file` read last). Reads files; `setup` is the
//! only writer of client configs.

pub mod dialects;
pub mod discovery;
pub mod expand;
pub mod servers_file;
