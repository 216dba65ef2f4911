//! Every reason a tool call from sandboxed code is not sent, with the message the code sees
//! (what to change, or when to retry) and the stable code audit records and metrics use. One
//! enum for the whole broker: nothing else classifies refusals.

use std::fmt;
use std::time::Duration;

/// Why a call is refused. The message tells the code what to change or when to retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// The name does not resolve to a configured server, or the server does not list the tool.
    #[error("{0}")]
    UnknownTool(String),
    #[error("arguments for {0} must be an object")]
    ArgumentsNotObject(String),
    #[error(
        "tool `{0}` is not in allowedTools for this execution: add \"{0}\" to allowedTools to call it"
    )]
    NotAllowed(String),
    #[error("tool `{0}` is denied by the server's policy")]
    DeniedByPolicy(String),
    #[error("tool `{0}` is outside the tools the server's policy allows")]
    OutsidePolicy(String),
    #[error("tool name `{0}` contains whitespace or control characters")]
    MalformedName(String),
    #[error(
        "this execution reached its limit of {0} host calls (tool calls, refused calls and look-ups); the call was not sent"
    )]
    QuotaExceeded(u32),
    #[error(
        "rate limit of {per_minute} calls per minute for {scope} `{key}` reached; retry in {} ms",
        retry_after.as_millis().max(1)
    )]
    RateLimited {
        scope: Scope,
        key: String,
        per_minute: u32,
        retry_after: Duration,
    },
    #[error("arguments for {tool} are {bytes} bytes of JSON, over the limit of {limit} bytes")]
    ArgumentsTooLarge {
        tool: String,
        bytes: usize,
        limit: usize,
    },
    #[error("result of {tool} is {bytes} bytes of JSON, over the limit of {limit} bytes")]
    ResultTooLarge {
        tool: String,
        bytes: usize,
        limit: usize,
    },
    #[error(
        "arguments for {tool} do not match its input schema (the call was not sent):\n- {}\nexpected: {expected}\ngiven: {given}",
        errors.join("\n- ")
    )]
    InvalidArguments {
        tool: String,
        errors: Vec<String>,
        expected: String,
        given: String,
    },
    /// The call needs the user's approval and did not get it (the message says why).
    #[error("{0}")]
    NotApproved(String),
    #[error(
        "the input schema of {tool} cannot be used to check arguments, so the call was not sent: {reason}"
    )]
    UnusableSchema { tool: String, reason: String },
}

impl Refusal {
    /// A stable, short code for audit records and metrics labels.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Refusal::UnknownTool(_) => "unknown_tool",
            Refusal::ArgumentsNotObject(_) => "arguments_not_object",
            Refusal::NotAllowed(_) => "not_allowed",
            Refusal::DeniedByPolicy(_) | Refusal::OutsidePolicy(_) => "policy",
            Refusal::MalformedName(_) => "malformed_name",
            Refusal::QuotaExceeded(_) => "execution_quota",
            Refusal::RateLimited { .. } => "rate_limit",
            Refusal::ArgumentsTooLarge { .. } => "argument_size",
            Refusal::ResultTooLarge { .. } => "result_size",
            Refusal::InvalidArguments { .. } => "schema",
            Refusal::UnusableSchema { .. } => "unusable_schema",
            Refusal::NotApproved(_) => "not_approved",
        }
    }
}

/// The scope a rate limit applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Session,
    Server,
    Tool,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Session => "client session",
            Scope::Server => "server",
            Scope::Tool => "tool",
        })
    }
}
