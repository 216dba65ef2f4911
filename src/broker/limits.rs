//! How many calls may go out: rate limits per client session, per downstream server and per
//! tool (`governor`, keyed token buckets refilled per minute), and the per-execution host-call
//! budget. Pure logic: time comes from the clock the limiter is built with.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use super::refusal::{Refusal, Scope};

/// Tool calls per minute allowed in each scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RateQuotas {
    pub per_session: NonZeroU32,
    pub per_server: NonZeroU32,
    pub per_tool: NonZeroU32,
}

type Keyed<C> =
    RateLimiter<String, DefaultKeyedStateStore<String>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// The three keyed limiters. A call must pass all three; a refused call consumes nothing.
pub(crate) struct RateLimits<C: Clock = DefaultClock> {
    quotas: RateQuotas,
    session: Keyed<C>,
    server: Keyed<C>,
    tool: Keyed<C>,
    clock: C,
    checks: AtomicU64,
}

/// How often idle keys are forgotten (every this many checks).
const PRUNE_EVERY: u64 = 1024;

impl RateLimits<DefaultClock> {
    pub(crate) fn new(quotas: RateQuotas) -> Self {
        Self::with_clock(quotas, DefaultClock::default())
    }
}

impl<C: Clock + Clone> RateLimits<C> {
    /// Limits driven by `clock` (a fake clock in tests).
    pub(crate) fn with_clock(quotas: RateQuotas, clock: C) -> Self {
        let limiter =
            |n: NonZeroU32| RateLimiter::dashmap_with_clock(Quota::per_minute(n), clock.clone());
        RateLimits {
            session: limiter(quotas.per_session),
            server: limiter(quotas.per_server),
            tool: limiter(quotas.per_tool),
            quotas,
            clock,
            checks: AtomicU64::new(0),
        }
    }

    /// Takes one call for `session` to `tool` of `server`, or says which limit refused it and
    /// when to retry. Scopes are checked narrowest first (tool, server, session); a call refused
    /// by a wider scope has already used a token of the narrower ones (governor has no dry run),
    /// which errs on the side of fewer calls.
    pub(crate) fn check(&self, session: &str, server: &str, tool: &str) -> Result<(), Refusal> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            for limiter in [&self.session, &self.server, &self.tool] {
                limiter.retain_recent();
            }
        }
        let scopes = [
            (Scope::Tool, &self.tool, tool, self.quotas.per_tool),
            (Scope::Server, &self.server, server, self.quotas.per_server),
            (
                Scope::Session,
                &self.session,
                session,
                self.quotas.per_session,
            ),
        ];
        for (scope, limiter, key, per_minute) in scopes {
            if let Err(not_until) = limiter.check_key(&key.to_string()) {
                let retry_after = not_until.wait_time_from(self.clock.now());
                return Err(Refusal::RateLimited {
                    scope,
                    key: key.to_string(),
                    per_minute: per_minute.get(),
                    retry_after,
                });
            }
        }
        Ok(())
    }
}

/// Host calls an execution may still make once its budget is spent: each is refused, and the
/// next one stops the execution (its worker is killed). Room for code to see the refusal and
/// wrap up, none for a loop that spins on refusals.
pub(crate) const CALLS_AFTER_BUDGET: u32 = 100;

/// What spending one host call from a budget gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Spent {
    /// Within the budget.
    Ok,
    /// Over the budget: refused.
    Refused(Refusal),
    /// Over the budget by more than [`CALLS_AFTER_BUDGET`]: refused, and the execution ends.
    Stop(Refusal),
}

/// Counts every host call of one execution (tool calls, refused calls and look-ups) against
/// its budget (`max_tool_calls_per_execution`).
#[derive(Debug)]
pub(crate) struct HostCallBudget {
    limit: u32,
    used: AtomicU32,
}

impl HostCallBudget {
    pub(crate) fn new(limit: u32) -> Self {
        HostCallBudget {
            limit,
            used: AtomicU32::new(0),
        }
    }

    /// Spends one host call.
    pub(crate) fn spend(&self) -> Spent {
        let used = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_add(1))
            })
            .unwrap_or_else(|n| n);
        if used < self.limit {
            Spent::Ok
        } else if used - self.limit < CALLS_AFTER_BUDGET {
            Spent::Refused(Refusal::QuotaExceeded(self.limit))
        } else {
            Spent::Stop(Refusal::QuotaExceeded(self.limit))
        }
    }

    /// The host calls answered so far, refused ones included (calls that arrive after the
    /// stop, while the worker is being killed, are not counted).
    pub(crate) fn used(&self) -> u32 {
        self.used
            .load(Ordering::SeqCst)
            .min(self.limit.saturating_add(CALLS_AFTER_BUDGET + 1))
    }
}
