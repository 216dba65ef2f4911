//! What a client session is to the executor: over stdio the process's one client
//! ([`STDIO_SESSION`]); over HTTP a principal (`front::guard::Principal`: a token's holders, or
//! one peer address), one among others that share the server's slots and, unless the operator
//! says otherwise, never its workspace.

/// The client session of a stdio process: its one client.
pub(crate) const STDIO_SESSION: &str = "stdio";
