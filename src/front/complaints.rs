//! Warnings about messages a client sent that could not be served (see [`super::malformed`]),
//! limited per client session so that a client cannot choose the volume of the log: at most
//! [`COMPLAINTS_PER_MINUTE`] warnings a minute for one session (`governor`, a keyed token
//! bucket), the rest counted and told in one line, "N more ... suppressed", with the session's
//! next warning. The session is the one of rate limits and audit records: `stdio`, or the HTTP
//! request's [`super::guard::Principal`].

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

/// Warnings a minute about one session's unservable messages.
pub(crate) const COMPLAINTS_PER_MINUTE: u32 = 5;

/// How often sessions that went quiet are forgotten (every this many complaints).
const PRUNE_EVERY: u64 = 1024;

type Keyed<C> =
    RateLimiter<String, DefaultKeyedStateStore<String>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// Whether `event` is rmcp's warning of one error answer ("response error"), which it writes for
/// every error answer whatever its cause, so as often as a client likes. The front warns about
/// the error answers a client caused, limited per session ([`Complaints`]), and about the others
/// each time; the binary's log leaves rmcp's out.
pub fn is_rmcp_error_answer_warning(event: &tracing::Metadata<'_>) -> bool {
    event.is_event()
        && event.target() == "rmcp::service"
        && *event.level() == tracing::Level::WARN
        && event.fields().field("id").is_some()
        && event.fields().field("error").is_some()
}

/// Whether a complaint is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard {
    /// Written, after saying how many of the session's complaints were left out before it.
    Written { suppressed_before: u64 },
    /// Left out (counted, told with the session's next written one).
    Suppressed,
}

/// The complaints of every client session of one server.
pub(crate) struct Complaints<C: Clock = DefaultClock> {
    limiter: Keyed<C>,
    suppressed: Mutex<HashMap<String, u64>>,
    heard: AtomicU64,
}

impl Default for Complaints<DefaultClock> {
    fn default() -> Self {
        Complaints::with_clock(DefaultClock::default())
    }
}

impl<C: Clock> Complaints<C> {
    /// Complaints timed by `clock` (a fake clock in tests).
    pub(crate) fn with_clock(clock: C) -> Self {
        let per_minute = NonZeroU32::new(COMPLAINTS_PER_MINUTE).expect("not zero");
        Complaints {
            limiter: RateLimiter::dashmap_with_clock(Quota::per_minute(per_minute), clock),
            suppressed: Mutex::default(),
            heard: AtomicU64::new(0),
        }
    }

    /// Takes one complaint about `session`: whether it is written.
    pub(crate) fn hear(&self, session: &str) -> Heard {
        if self.heard.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.limiter.retain_recent();
        }
        let mut suppressed = self
            .suppressed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.limiter.check_key(&session.to_string()).is_ok() {
            let suppressed_before = suppressed.remove(session).unwrap_or(0);
            Heard::Written { suppressed_before }
        } else {
            *suppressed.entry(session.to_string()).or_default() += 1;
            Heard::Suppressed
        }
    }

    /// Warns that `session` sent a message that could not be served (`what`: what it got back),
    /// unless the session's warnings of this minute are spent.
    pub(crate) fn complain(&self, session: &str, what: &str) {
        match self.hear(session) {
            Heard::Written { suppressed_before } => {
                if suppressed_before > 0 {
                    tracing::warn!(
                        session,
                        suppressed = suppressed_before,
                        "front: {suppressed_before} more unservable messages from this session suppressed (at most {COMPLAINTS_PER_MINUTE} warnings a minute)"
                    );
                }
                tracing::warn!(session, "front: unservable message: {what}");
            }
            Heard::Suppressed => tracing::debug!(session, "front: unservable message: {what}"),
        }
    }
}

/// Whether `error` answers what its client asked (an invalid, unknown or unsupported request),
/// rather than a failure of ours (`-32603` Internal error).
pub(crate) fn client_fault(error: &rmcp::ErrorData) -> bool {
    error.code != rmcp::model::ErrorCode::INTERNAL_ERROR
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use governor::clock::FakeRelativeClock;

    use super::*;

    #[test]
    fn a_session_gets_a_few_warnings_a_minute_then_one_count_of_the_rest() {
        let clock = FakeRelativeClock::default();
        let complaints = Complaints::with_clock(clock.clone());
        for _ in 0..COMPLAINTS_PER_MINUTE {
            assert_eq!(
                complaints.hear("stdio"),
                Heard::Written {
                    suppressed_before: 0
                }
            );
        }
        for _ in 0..40 {
            assert_eq!(complaints.hear("stdio"), Heard::Suppressed);
        }
        // Another session has its own warnings.
        assert_eq!(
            complaints.hear("http-peer:127.0.0.1"),
            Heard::Written {
                suppressed_before: 0
            }
        );
        clock.advance(Duration::from_secs(60));
        assert_eq!(
            complaints.hear("stdio"),
            Heard::Written {
                suppressed_before: 40
            }
        );
        assert_eq!(
            complaints.hear("stdio"),
            Heard::Written {
                suppressed_before: 0
            }
        );
    }
}
