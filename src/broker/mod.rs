//! Every decision on a host call from sandboxed code, before it leaves the host: the
//! execution's host-call budget must have room (tool calls, refused calls and look-ups alike),
//! the name must be clean, the server-wide policy must not deny it (deny wins over every allow),
//! the execution's `allowedTools` must allow it (both matched on the resolved (server, tool)
//! pair, [`allowlist`]), the arguments must fit the size cap and validate against the tool's live
//! input schema, the rate limits must have room, and the result must fit its cap on the way
//! back. [`reach`] says what a viewer may call, see and cause to start. `Broker` is pure logic
//! (no processes, no I/O): it answers. [`gate`] is the one place that asks, in a fixed order,
//! sends the call and records it; `Refusal` is every reason a call is not sent.

pub mod allowlist;
pub(crate) mod approval;
pub mod gate;
pub mod limits;
pub mod reach;
mod refusal;
pub mod schema;

use std::num::NonZeroU32;

use serde_json::{Map, Value};

pub(crate) use allowlist::{Allowlist, PatternError};
pub(crate) use limits::{HostCallBudget, RateLimits, RateQuotas};
pub(crate) use reach::{Policy, Reach};
pub(crate) use refusal::Refusal;
use schema::SchemaCache;

/// The broker's settings.
#[derive(Debug, Clone)]
pub(crate) struct BrokerConfig {
    pub policy: Policy,
    pub rates: RateQuotas,
    pub max_argument_bytes: usize,
    pub max_result_bytes: usize,
}

/// The decision maker, shared by all executions.
pub(crate) struct Broker {
    policy: Policy,
    limits: RateLimits,
    schemas: SchemaCache,
    max_argument_bytes: usize,
    max_result_bytes: usize,
}

impl Broker {
    pub(crate) fn new(config: BrokerConfig) -> Self {
        Broker {
            policy: config.policy,
            limits: RateLimits::new(config.rates),
            schemas: SchemaCache::default(),
            max_argument_bytes: config.max_argument_bytes,
            max_result_bytes: config.max_result_bytes,
        }
    }

    /// The server-wide policy (for the views of the LLM and of executions, [`Reach`]).
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Checks that need no knowledge of the tool: the name, the policy and the viewer's
    /// allowlist (through `reach`), and the argument size. `server` and `tool` are the
    /// resolved pair; `qualified` is its canonical `mcp__<server>__<tool>`.
    pub(crate) fn admit(
        &self,
        reach: &Reach<'_>,
        (server, tool): (&str, &str),
        qualified: &str,
        argument_bytes: usize,
    ) -> Result<(), Refusal> {
        if !allowlist::is_clean(qualified) {
            return Err(Refusal::MalformedName(qualified.escape_debug().to_string()));
        }
        reach.check(server, tool, qualified)?;
        if argument_bytes > self.max_argument_bytes {
            return Err(Refusal::ArgumentsTooLarge {
                tool: qualified.to_string(),
                bytes: argument_bytes,
                limit: self.max_argument_bytes,
            });
        }
        Ok(())
    }

    /// Validates the arguments against the tool's live input schema; `expected` renders the
    /// tool's signature for the error message.
    pub(crate) fn validate(
        &self,
        qualified: &str,
        input_schema: &Map<String, Value>,
        args: &Value,
        expected: impl FnOnce() -> String,
    ) -> Result<(), Refusal> {
        self.schemas
            .validate(qualified, input_schema, args, expected)
    }

    /// The last check before the call leaves: the rate limits (per session, server and tool).
    pub(crate) fn rate(&self, session: &str, server: &str, qualified: &str) -> Result<(), Refusal> {
        self.limits.check(session, server, qualified)
    }

    /// Checks a result's size on its way back to the sandbox.
    pub(crate) fn check_result(&self, qualified: &str, result_bytes: usize) -> Result<(), Refusal> {
        if result_bytes > self.max_result_bytes {
            return Err(Refusal::ResultTooLarge {
                tool: qualified.to_string(),
                bytes: result_bytes,
                limit: self.max_result_bytes,
            });
        }
        Ok(())
    }
}

impl RateQuotas {
    /// Quotas from per-minute numbers; zero is read as one.
    pub(crate) fn per_minute(session: u32, server: u32, tool: u32) -> Self {
        let nz = |n: u32| NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
        RateQuotas {
            per_session: nz(session),
            per_server: nz(server),
            per_tool: nz(tool),
        }
    }
}

#[cfg(test)]
mod tests;
