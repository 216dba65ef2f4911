//! The `input_required` rounds of a request to a 2026-07-28 server (`tools/call`,
//! `resources/read`, `prompts/get`): each round's questions are relayed to the client of the
//! execution that made the request (`ask::relay`), and the request is sent again with the
//! answers and the server's `requestState`, at most [`MAX_INPUT_ROUNDS`] times.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{InputRequiredResult, InputResponses};
use serde_json::Value;

use crate::ask::Asking;
use crate::ask::relay;

/// Most `input_required` rounds one request may take.
const MAX_INPUT_ROUNDS: usize = 10;

/// One answer of a server to a request.
pub(super) enum Round<T> {
    Done(T),
    Input(InputRequiredResult),
    /// An answer of another kind, and why it cannot be used.
    Other(&'static str),
    /// No answer within the round's bound.
    TimedOut,
}

/// Why a request with its rounds failed.
pub(super) enum RoundsError {
    Service(rmcp::ServiceError),
    /// A question could not be relayed, or the server kept asking (the message says why).
    Relay(String),
    /// A round got no answer within its bound.
    TimedOut,
}

/// Sends a request to `server` through `send` (given the answers and the `requestState` of the
/// previous round, none at first) until the server gives its result; `roots` answers
/// `roots/list`.
pub(super) async fn rounds<T, F, Fut>(
    server: &str,
    asking: Option<&Arc<Asking>>,
    roots: &[Value],
    mut send: F,
) -> Result<T, RoundsError>
where
    F: FnMut(Option<InputResponses>, Option<String>) -> Fut,
    Fut: Future<Output = Result<Round<T>, rmcp::ServiceError>>,
{
    let (mut responses, mut state) = (None, None);
    for _ in 0..MAX_INPUT_ROUNDS {
        let input = match send(responses.take(), state.take()).await {
            Ok(Round::Done(result)) => return Ok(result),
            Ok(Round::Input(input)) => input,
            Ok(Round::Other(why)) => return Err(RoundsError::Relay(why.into())),
            Ok(Round::TimedOut) => return Err(RoundsError::TimedOut),
            Err(e) => return Err(RoundsError::Service(e)),
        };
        let Some(asking) = asking else {
            return Err(RoundsError::Relay(
                "it asked for input, and there is no client to ask".into(),
            ));
        };
        let requests = input
            .input_requests
            .unwrap_or_default()
            .into_iter()
            .map(|(key, request)| (key, serde_json::to_value(request).unwrap_or(Value::Null)))
            .collect();
        let answers = relay::answer_input_requests(asking, server, requests, roots)
            .await
            .map_err(RoundsError::Relay)?;
        responses = (!answers.is_empty()).then(|| answers.into_iter().collect());
        state = input.request_state;
    }
    Err(RoundsError::Relay(format!(
        "it still asked for input after {MAX_INPUT_ROUNDS} rounds"
    )))
}
