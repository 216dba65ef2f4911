//! The line back to the connected client: a `sampling/createMessage` or `elicitation/create`
//! put to it while one of its calls runs, bounded by a timeout and by the size of the answer,
//! answered or refused with a clear reason. A client on a handshake-era protocol (2025-11-25
//! and earlier, over stdio) gets a request; a client on 2026-07-28, which carries no requests
//! from server to client, gets the question as a [`Question`] that the front returns in an
//! `input_required` result and answers from the client's retry. The only place that calls
//! rmcp's sampling API, which SEP-2577 deprecates (it still works with every client that offers
//! sampling).
//!
//! Requests and answers cross this module as JSON, so that the rest of the server names none
//! of the deprecated types.

use std::time::Duration;

#[allow(deprecated)] // SEP-2577: sampling is deprecated, not removed.
use rmcp::model::CreateMessageRequestParams;
use rmcp::model::ElicitRequestParams;
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Largest answer accepted from the client, in bytes of JSON.
pub(crate) const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Why a question was not answered.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum AskError {
    /// The client declared no such capability.
    #[error("the connected client does not offer {0} (it declared no `{0}` capability)")]
    NotOffered(&'static str),
    /// The client cannot be asked at all on this connection.
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    Cap(String),
    #[error("the request is invalid: {0}")]
    Invalid(String),
    #[error("the client gave no answer within {0} s")]
    Timeout(u64),
    #[error("the client answered with an error: {0}")]
    Refused(String),
    #[error("the client's answer is malformed: {0}")]
    Malformed(String),
    #[error("the client's answer is {0} bytes of JSON, over the limit of {MAX_ANSWER_BYTES}")]
    TooLarge(usize),
}

impl AskError {
    /// A short code for audit records.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            AskError::NotOffered(_) => "not_offered",
            AskError::Unreachable(_) => "unreachable",
            AskError::Cap(_) => "cap",
            AskError::Invalid(_) => "invalid",
            AskError::Timeout(_) => "timeout",
            AskError::Refused(_) => "client_error",
            AskError::Malformed(_) => "malformed",
            AskError::TooLarge(_) => "too_large",
        }
    }
}

/// A question for a client on protocol 2026-07-28: the request's method and params, and where
/// its answer goes (dropped: the client retried without answering it).
#[derive(Debug)]
pub(crate) struct Question {
    pub method: &'static str,
    pub params: Value,
    pub answer: oneshot::Sender<Value>,
}

/// How questions reach the client.
#[derive(Debug)]
enum Route {
    /// As requests on the connection (handshake-era protocols).
    Requests(Peer<RoleServer>),
    /// As `input_required` rounds of the call (2026-07-28).
    Rounds(mpsc::UnboundedSender<Question>),
    None,
}

/// The connected client as one call sees it: whether it can be asked, and what.
#[derive(Debug)]
pub(crate) struct ClientLine {
    route: Route,
    sampling: bool,
    elicitation: bool,
    /// Why the client cannot be asked at all, when it cannot.
    unreachable: Option<String>,
    timeout: Duration,
}

/// What the client offers, as declared when it connected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Offered {
    pub sampling: bool,
    pub elicitation: bool,
}

impl ClientLine {
    /// The line to a client on a handshake-era protocol connected over stdio (the one client
    /// of this process), through `peer`; `timeout` bounds each answer.
    pub(crate) fn requests(peer: Peer<RoleServer>, timeout: Duration) -> Self {
        let (offered, unreachable) = match peer.peer_info() {
            None => (
                Offered::default(),
                Some("the client has not completed the MCP handshake".to_string()),
            ),
            Some(info) if !info.protocol_version.has_initialize() => (
                Offered::default(),
                Some(format!(
                    "the client speaks protocol {}, which carries no requests from server to client; this server does not yet ask such clients through input_required rounds",
                    info.protocol_version
                )),
            ),
            Some(info) => (
                Offered {
                    sampling: info.capabilities.sampling.is_some(),
                    elicitation: info.capabilities.elicitation.is_some(),
                },
                None,
            ),
        };
        ClientLine {
            route: Route::Requests(peer),
            sampling: offered.sampling,
            elicitation: offered.elicitation,
            unreachable,
            timeout,
        }
    }

    /// The line to a client on protocol 2026-07-28 that declared `offered` with its request:
    /// its questions come out of the returned receiver, to be put in `input_required` results.
    pub(crate) fn rounds(
        offered: Offered,
        timeout: Duration,
    ) -> (Self, mpsc::UnboundedReceiver<Question>) {
        let (questions, receiver) = mpsc::unbounded_channel();
        let line = ClientLine {
            route: Route::Rounds(questions),
            sampling: offered.sampling,
            elicitation: offered.elicitation,
            unreachable: None,
            timeout,
        };
        (line, receiver)
    }

    /// A client that cannot be asked, and why.
    pub(crate) fn unreachable(why: impl Into<String>) -> Self {
        ClientLine {
            route: Route::None,
            sampling: false,
            elicitation: false,
            unreachable: Some(why.into()),
            timeout: Duration::ZERO,
        }
    }

    /// What the client offers (nothing when it cannot be asked).
    pub(crate) fn offered(&self) -> Offered {
        Offered {
            sampling: self.sampling && self.unreachable.is_none(),
            elicitation: self.elicitation && self.unreachable.is_none(),
        }
    }

    fn reachable(&self, capability: &'static str, offered: bool) -> Result<&Route, AskError> {
        if let Some(why) = &self.unreachable {
            return Err(AskError::Unreachable(format!(
                "the client cannot be asked for {capability}: {why}"
            )));
        }
        match &self.route {
            Route::None => Err(AskError::Unreachable(format!(
                "the client cannot be asked for {capability}"
            ))),
            route if offered => Ok(route),
            _ => Err(AskError::NotOffered(capability)),
        }
    }

    /// Sends `sampling/createMessage` with `params` and returns the client's result.
    #[allow(deprecated)] // SEP-2577: sampling is deprecated, not removed.
    pub(crate) async fn sample(&self, params: &Value) -> Result<Value, AskError> {
        let route = self.reachable("sampling", self.sampling)?;
        let request: CreateMessageRequestParams =
            serde_json::from_value(params.clone()).map_err(|e| AskError::Invalid(e.to_string()))?;
        match route {
            Route::Requests(peer) => {
                let answer = tokio::time::timeout(self.timeout, peer.create_message(request)).await;
                self.settle(answer)
            }
            Route::Rounds(questions) => {
                self.round::<rmcp::model::CreateMessageResult>(
                    questions,
                    "sampling/createMessage",
                    params,
                )
                .await
            }
            Route::None => unreachable!("refused by `reachable`"),
        }
    }

    /// Sends `elicitation/create` with `params` and returns the client's result.
    pub(crate) async fn elicit(&self, params: &Value) -> Result<Value, AskError> {
        let route = self.reachable("elicitation", self.elicitation)?;
        let request: ElicitRequestParams =
            serde_json::from_value(params.clone()).map_err(|e| AskError::Invalid(e.to_string()))?;
        match route {
            Route::Requests(peer) => {
                let answer =
                    tokio::time::timeout(self.timeout, peer.create_elicitation(request)).await;
                self.settle(answer)
            }
            Route::Rounds(questions) => {
                self.round::<rmcp::model::ElicitResult>(questions, "elicitation/create", params)
                    .await
            }
            Route::None => unreachable!("refused by `reachable`"),
        }
    }

    /// Puts a question in the call's next `input_required` result and waits for its answer,
    /// which must read as a `T` (the request's result type).
    async fn round<T: serde::de::DeserializeOwned + serde::Serialize>(
        &self,
        questions: &mpsc::UnboundedSender<Question>,
        method: &'static str,
        params: &Value,
    ) -> Result<Value, AskError> {
        let (answer, answered) = oneshot::channel();
        let question = Question {
            method,
            params: params.clone(),
            answer,
        };
        if questions.send(question).is_err() {
            return Err(AskError::Unreachable("the client's call has ended".into()));
        }
        match tokio::time::timeout(self.timeout, answered).await {
            Err(_) => Err(AskError::Timeout(self.timeout.as_secs())),
            Ok(Err(_)) => Err(AskError::Malformed(
                "the client retried the call without answering the question".into(),
            )),
            Ok(Ok(answer)) => {
                let result: T = serde_json::from_value(answer)
                    .map_err(|e| AskError::Malformed(e.to_string()))?;
                self.settle(Ok(Ok(result)))
            }
        }
    }

    fn settle<T: serde::Serialize>(
        &self,
        answer: Result<Result<T, rmcp::ServiceError>, tokio::time::error::Elapsed>,
    ) -> Result<Value, AskError> {
        match answer {
            Err(_) => Err(AskError::Timeout(self.timeout.as_secs())),
            Ok(Err(rmcp::ServiceError::McpError(e))) => {
                Err(AskError::Refused(clip(&e.message, MAX_MESSAGE_CHARS)))
            }
            Ok(Err(rmcp::ServiceError::UnexpectedResponse)) => Err(AskError::Malformed(
                "it is not the result of the request".into(),
            )),
            Ok(Err(e)) => Err(AskError::Refused(clip(&e.to_string(), MAX_MESSAGE_CHARS))),
            Ok(Ok(result)) => {
                let value =
                    serde_json::to_value(result).map_err(|e| AskError::Malformed(e.to_string()))?;
                let bytes = serde_json::to_vec(&value).map_or(0, |v| v.len());
                if bytes > MAX_ANSWER_BYTES {
                    return Err(AskError::TooLarge(bytes));
                }
                Ok(value)
            }
        }
    }
}

/// Longest client error message passed on, in characters.
const MAX_MESSAGE_CHARS: usize = 500;

/// `text` cut to `max` characters, with `…` when cut (a client's message reaches code and logs;
/// an approval question shows arguments in short).
pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}
