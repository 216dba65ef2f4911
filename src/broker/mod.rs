//! Every decision on a tool call from sandboxed code, before it leaves the host: the name must
//! be clean, the server-wide policy must not deny it (deny wins over every allow), the
//! execution's `allowedTools` must allow it, the execution's quota and the rate limits must have
//! room, the arguments must fit the size cap and validate against the tool's live input schema,
//! and the result must fit its cap on the way back. `Broker` is pure logic (no processes, no
//! I/O): it answers. [`gate`] is the one place that asks, in a fixed order, sends the call and
//! records it; `Refusal` is every reason a call is not sent.

pub mod allowlist;
pub mod gate;
pub mod limits;
mod refusal;
pub mod schema;

use std::num::NonZeroU32;

use serde_json::{Map, Value};

pub(crate) use allowlist::{Allowlist, PatternError};
pub(crate) use limits::{CallQuota, RateLimits, RateQuotas};
pub(crate) use refusal::Refusal;
use schema::SchemaCache;

/// The server-wide policy from the settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    /// When set, nothing outside it may be called.
    pub allow: Option<Allowlist>,
    /// Never callable; wins over every allow.
    pub deny: Allowlist,
}

impl Policy {
    pub(crate) fn new(allow: Option<&[String]>, deny: &[String]) -> Result<Self, PatternError> {
        Ok(Policy {
            allow: allow.map(Allowlist::new).transpose()?,
            deny: Allowlist::new(deny)?,
        })
    }
}

/// The broker's settings.
#[derive(Debug, Clone)]
pub(crate) struct BrokerConfig {
    pub policy: Policy,
    pub rates: RateQuotas,
    pub max_argument_bytes: usize,
    pub max_result_bytes: usize,
}

/// What one execution brings to each decision.
pub(crate) struct CallScope<'a> {
    pub allowlist: &'a Allowlist,
    pub quota: &'a CallQuota,
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

    /// Checks that need no knowledge of the tool: the name, the policy, the allowlist, the
    /// execution's quota and the argument size. `qualified` is the canonical
    /// `mcp__<server>__<tool>` after resolution against the configured server names.
    pub(crate) fn admit(
        &self,
        scope: &CallScope<'_>,
        qualified: &str,
        argument_bytes: usize,
    ) -> Result<(), Refusal> {
        if !allowlist::is_clean(qualified) {
            return Err(Refusal::MalformedName(qualified.escape_debug().to_string()));
        }
        if self.policy.deny.matches(qualified) {
            return Err(Refusal::DeniedByPolicy(qualified.to_string()));
        }
        if let Some(allow) = &self.policy.allow
            && !allow.matches(qualified)
        {
            return Err(Refusal::OutsidePolicy(qualified.to_string()));
        }
        scope.allowlist.check(qualified)?;
        scope.quota.take()?;
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
