//! Questions for the connected client, asked while one of its calls runs: sampling from code
//! (`llm.ask` / `llm.think`, [`sampling`]), the user's approval before a tool call leaves
//! ([`approval`]), and the questions downstream servers ask during a call, relayed
//! ([`relay`]). [`client`] is the one line to the client; [`Asking`] is one execution's side
//! of it: its caps, its counts and its audit records. Nothing here decides which tool may be
//! called (that is `broker`'s) or talks to a downstream server (that is `upstream`'s).

pub(crate) mod approval;
pub(crate) mod client;
pub(crate) mod relay;
pub(crate) mod sampling;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::ops::audit::{self, AskRecord, AuditLog};
use crate::pii::{Recipient, Vault};
pub(crate) use client::{AskError, ClientLine};

/// How many questions one execution may put to the client, and how much sampling it may use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AskLimits {
    /// `sampling/createMessage` requests (from code and relayed).
    pub sampling_rounds: u32,
    /// The `maxTokens` those requests may add up to.
    pub sampling_tokens: u64,
    /// `elicitation/create` requests (approvals and relayed questions).
    pub elicitations: u32,
    /// The largest question a downstream server may have relayed, as JSON.
    pub relayed_bytes: usize,
}

/// One execution's questions to its client: the line, the caps, what was spent.
pub(crate) struct Asking {
    line: Arc<ClientLine>,
    limits: AskLimits,
    execution_id: String,
    session: String,
    audit: Arc<AuditLog>,
    rounds: AtomicU32,
    tokens: AtomicU64,
    elicitations: AtomicU32,
    waiting: Mutex<Waiting>,
    /// The session's token vault when personal data is tokenised: every question is tokenised
    /// before it leaves (what it shows reaches the client and its user), and the tokens in an
    /// answer that the asker may have are put back (`pii::Recipient`).
    pii: Option<Arc<Vault>>,
}

/// How long the execution has waited for its client's answers: questions may overlap, so the
/// time is the union of their waits.
#[derive(Default)]
struct Waiting {
    /// Questions waiting now.
    open: u32,
    /// Since when at least one has been waiting.
    since: Option<Instant>,
    /// The waits that ended.
    total: Duration,
}

/// Counts its wait in [`Asking::waited`] while it lives.
struct Wait<'a>(&'a Mutex<Waiting>);

impl<'a> Wait<'a> {
    fn start(waiting: &'a Mutex<Waiting>) -> Self {
        let mut w = waiting.lock().expect("waiting lock");
        w.open += 1;
        w.since.get_or_insert_with(Instant::now);
        Wait(waiting)
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        let mut w = self.0.lock().expect("waiting lock");
        w.open -= 1;
        if w.open == 0
            && let Some(since) = w.since.take()
        {
            w.total += since.elapsed();
        }
    }
}

/// What an execution's sampling came to, for its report.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SamplingSpent {
    pub rounds: u32,
    pub tokens: u64,
}

/// Who asked a question: the execution's code, or a downstream server during a call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Asker<'a> {
    Code,
    Server(&'a str),
}

impl Asking {
    pub(crate) fn new(
        line: Arc<ClientLine>,
        limits: AskLimits,
        execution_id: &str,
        session: &str,
        audit: Arc<AuditLog>,
    ) -> Self {
        Asking {
            line,
            limits,
            execution_id: execution_id.to_string(),
            session: session.to_string(),
            audit,
            rounds: AtomicU32::new(0),
            tokens: AtomicU64::new(0),
            elicitations: AtomicU32::new(0),
            waiting: Mutex::default(),
            pii: None,
        }
    }

    /// Tokenises the questions with the session's vault, if any.
    pub(crate) fn with_pii(mut self, pii: Option<Arc<Vault>>) -> Self {
        self.pii = pii;
        self
    }

    /// A question as it may leave: tokenised when personal data is (a server that asks holds
    /// the values its question shows).
    fn outgoing(&self, asker: Asker<'_>, mut params: Value) -> Value {
        if let Some(vault) = &self.pii {
            let from = match asker {
                Asker::Code => None,
                Asker::Server(server) => Some(server),
            };
            vault.tokenize_value_from(from, &mut params);
        }
        params
    }

    /// An answer as code or the asking server receives it: the tokens in it that the asker
    /// may have put back, since what the client answers may quote the tokens it was shown.
    /// Code gets every token of its session; a server only the values it holds.
    fn incoming(
        &self,
        asker: Asker<'_>,
        answer: Result<Value, AskError>,
    ) -> Result<Value, AskError> {
        let to = match asker {
            Asker::Code => Recipient::Code,
            Asker::Server(server) => Recipient::AnswerTo(server),
        };
        match &self.pii {
            Some(vault) => answer.map(|mut value| {
                vault.put_back_value(&mut value, to);
                value
            }),
            None => answer,
        }
    }

    /// Refuses a relayed question larger than `relayed_question_max_bytes`, before anything
    /// of it is read further or reaches the client.
    fn admit_size(&self, asker: Asker<'_>, kind: &str, params: &Value) -> Result<(), AskError> {
        let Asker::Server(server) = asker else {
            return Ok(());
        };
        let bytes = serde_json::to_vec(params).map_or(usize::MAX, |v| v.len());
        if bytes <= self.limits.relayed_bytes {
            return Ok(());
        }
        Err(AskError::Cap(format!(
            "{server}'s {kind} request is {bytes} bytes, over the {} bytes a relayed question may carry (relayed_question_max_bytes); it was not put to the client",
            self.limits.relayed_bytes
        )))
    }

    /// How long the execution has waited for its client's answers so far (the ongoing wait
    /// included): time its deadline does not count.
    pub(crate) fn waited(&self) -> Duration {
        let w = self.waiting.lock().expect("waiting lock");
        w.total + w.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// An execution of `session` whose client cannot be asked, with no audit trail.
    #[cfg(test)]
    pub(crate) fn unreachable_for_tests(session: &str) -> Self {
        let limits = AskLimits {
            sampling_rounds: 1,
            sampling_tokens: 1,
            elicitations: 1,
            relayed_bytes: 65_536,
        };
        let line = Arc::new(ClientLine::unreachable("a test"));
        Asking::new(line, limits, "e", session, Arc::new(AuditLog::disabled()))
    }

    /// What the execution's client offers.
    pub(crate) fn offered(&self) -> client::Offered {
        self.line.offered()
    }

    /// The client session the execution runs for.
    pub(crate) fn session(&self) -> &str {
        &self.session
    }

    pub(crate) fn sampling_spent(&self) -> SamplingSpent {
        SamplingSpent {
            rounds: self.rounds.load(Ordering::SeqCst),
            tokens: self.tokens.load(Ordering::SeqCst),
        }
    }

    /// Sends one `sampling/createMessage` (its params as JSON, `maxTokens` set) within the
    /// execution's caps, and audits it by digest and size.
    pub(crate) async fn sample(&self, asker: Asker<'_>, params: Value) -> Result<Value, AskError> {
        let started = Instant::now();
        if let Err(refused) = self.admit_size(asker, "sampling", &params) {
            self.record("sampling", asker, &params, refused.code(), 0, started, None);
            return Err(refused);
        }
        let params = self.outgoing(asker, params);
        let max_tokens = params.get("maxTokens").and_then(Value::as_u64).unwrap_or(0);
        let round = self.rounds.fetch_add(1, Ordering::SeqCst) + 1;
        if round > self.limits.sampling_rounds {
            self.rounds.fetch_sub(1, Ordering::SeqCst);
            return Err(AskError::Cap(format!(
                "this execution reached its limit of {} sampling requests",
                self.limits.sampling_rounds
            )));
        }
        let granted = self
            .tokens
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |spent| {
                (spent + max_tokens <= self.limits.sampling_tokens).then_some(spent + max_tokens)
            });
        if let Err(spent) = granted {
            self.rounds.fetch_sub(1, Ordering::SeqCst);
            return Err(AskError::Cap(format!(
                "maxTokens {max_tokens} would take this execution's sampling past its limit of {} tokens ({spent} used)",
                self.limits.sampling_tokens
            )));
        }
        let answer = {
            let _wait = Wait::start(&self.waiting);
            self.line.sample(&params).await
        };
        let (outcome, bytes) = answer_facts(&answer);
        self.record("sampling", asker, &params, outcome, bytes, started, None);
        self.incoming(asker, answer)
    }

    /// Sends one relayed `elicitation/create` within the execution's cap, and audits it (the
    /// action and sizes, never the content).
    pub(crate) async fn elicit(&self, asker: Asker<'_>, params: Value) -> Result<Value, AskError> {
        let started = Instant::now();
        if let Err(refused) = self.admit_size(asker, "elicitation", &params) {
            self.record(
                "elicitation",
                asker,
                &params,
                refused.code(),
                0,
                started,
                None,
            );
            return Err(refused);
        }
        let params = self.outgoing(asker, params);
        let answer = self.ask_user(&params).await;
        let (outcome, bytes) = answer_facts(&answer);
        self.record("elicitation", asker, &params, outcome, bytes, started, None);
        self.incoming(asker, answer)
    }

    /// Sends one `elicitation/create` within the execution's cap, unrecorded (approvals record
    /// their decision themselves).
    async fn ask_user(&self, params: &Value) -> Result<Value, AskError> {
        let asked = self.elicitations.fetch_add(1, Ordering::SeqCst) + 1;
        if asked > self.limits.elicitations {
            return Err(AskError::Cap(format!(
                "this execution reached its limit of {} questions to the user",
                self.limits.elicitations
            )));
        }
        let _wait = Wait::start(&self.waiting);
        self.line.elicit(params).await
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        kind: &str,
        asker: Asker<'_>,
        params: &Value,
        outcome: &str,
        answer_bytes: usize,
        started: Instant,
        tool: Option<&str>,
    ) {
        let request = serde_json::to_string(params).unwrap_or_default();
        let source = match asker {
            Asker::Code => "code".to_string(),
            Asker::Server(server) => format!("server:{server}"),
        };
        self.audit.ask(&AskRecord {
            execution_id: &self.execution_id,
            session: &self.session,
            kind,
            source: audit::Name(&source),
            tool: tool.map(audit::Name),
            outcome,
            request_sha256: audit::code_digest(&request),
            request_bytes: request.len(),
            answer_bytes,
            duration_ms: started.elapsed().as_millis() as u64,
        });
    }
}

/// An answer's outcome code and size, for its audit record.
fn answer_facts(answer: &Result<Value, AskError>) -> (&'static str, usize) {
    match answer {
        Ok(value) => (
            value
                .get("action")
                .and_then(Value::as_str)
                .map_or("answered", action_code),
            serde_json::to_vec(value).map_or(0, |v| v.len()),
        ),
        Err(e) => (e.code(), 0),
    }
}

/// An elicitation answer's action as an audit code.
fn action_code(action: &str) -> &'static str {
    match action {
        "accept" => "accept",
        "decline" => "decline",
        "cancel" => "cancel",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_waits_count_once() {
        let waiting = Mutex::default();
        let first = Wait::start(&waiting);
        std::thread::sleep(Duration::from_millis(30));
        let second = Wait::start(&waiting);
        std::thread::sleep(Duration::from_millis(30));
        drop(first);
        std::thread::sleep(Duration::from_millis(30));
        drop(second);
        let total = waiting.lock().unwrap().total;
        assert!(total >= Duration::from_millis(90), "{total:?}");
        assert!(total < Duration::from_millis(180), "{total:?}");
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(
            waiting.lock().unwrap().total,
            total,
            "no wait open: no time counted"
        );
    }
}
