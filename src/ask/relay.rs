//! The questions a downstream server asks while one of our calls to it runs, relayed to the
//! client whose execution made the call, with that execution's caps and audit:
//!
//! - a 2026-07-28 server answers the call with `input_required`; [`answer_input_requests`]
//!   fulfils each request (the caller retries the call with the answers);
//! - an older server sends `sampling/createMessage` or `elicitation/create` on its connection;
//!   [`InFlight`] tells which execution's call it belongs to (the connection is shared, so a
//!   question is relayed only when every call in flight on it comes from one client session),
//!   and [`sample`] / [`elicit`] answer it.
//!
//! A question nobody can answer gets an answer that says so: an elicitation is answered
//! `cancel` (no answer from the user), a sampling request an error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{AskError, Asker, Asking};

/// The calls in flight on one downstream connection, with the execution each belongs to.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: Mutex<Vec<(u64, Arc<Asking>)>>,
    next: AtomicU64,
}

/// Removes its call from [`InFlight`] when dropped.
pub(crate) struct InFlightCall {
    calls: Arc<InFlight>,
    id: u64,
}

impl Drop for InFlightCall {
    fn drop(&mut self) {
        let mut calls = self.calls.calls.lock().expect("in-flight lock");
        calls.retain(|(id, _)| *id != self.id);
    }
}

impl InFlight {
    /// Records a call made for `asking` until the returned guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, asking: Arc<Asking>) -> InFlightCall {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .expect("in-flight lock")
            .push((id, asking));
        InFlightCall {
            calls: self.clone(),
            id,
        }
    }

    /// The execution a question on this connection belongs to: the oldest call in flight,
    /// when every call in flight comes from one client session.
    pub(crate) fn route(&self) -> Result<Arc<Asking>, AskError> {
        let calls = self.calls.lock().expect("in-flight lock");
        let Some((_, first)) = calls.first() else {
            return Err(AskError::Unreachable(
                "no call of ours is in flight on this connection, so there is no client to ask"
                    .into(),
            ));
        };
        if calls.iter().any(|(_, a)| a.session() != first.session()) {
            return Err(AskError::Unreachable(
                "calls of several client sessions are in flight on this connection, so it cannot be told which client to ask".into(),
            ));
        }
        Ok(first.clone())
    }
}

/// Relays a server's `sampling/createMessage` (params as JSON) to the client, marked as the
/// server's ([`mark_sampling`]) so that it cannot pass for the code's own `llm.ask`.
pub(crate) async fn sample(
    asking: &Asking,
    server: &str,
    mut params: Value,
) -> Result<Value, AskError> {
    mark_sampling(server, &mut params);
    asking.sample(Asker::Server(server), params).await
}

/// Prefixes `[server] ` to the system prompt (adding one that says who asks when there is
/// none) and to every text block of every message of a relayed sampling request.
fn mark_sampling(server: &str, params: &mut Value) {
    let mark = |text: &str| format!("[{server}] {text}");
    let system = match params.get("systemPrompt").and_then(Value::as_str) {
        Some(system) => mark(system),
        None => mark(&format!(
            "This request comes from the MCP server `{server}`, not from the user."
        )),
    };
    if let Value::Object(fields) = params {
        fields.insert("systemPrompt".into(), Value::String(system));
    }
    let Some(Value::Array(messages)) = params.get_mut("messages") else {
        return;
    };
    for message in messages {
        let blocks = match message.get_mut("content") {
            Some(Value::Array(blocks)) => blocks.iter_mut().collect::<Vec<_>>(),
            Some(block) => vec![block],
            None => Vec::new(),
        };
        for block in blocks {
            if block.get("type").and_then(Value::as_str) == Some("text")
                && let Some(text) = block.get("text").and_then(Value::as_str)
            {
                block["text"] = Value::String(mark(text));
            }
        }
    }
}

/// Relays a server's `elicitation/create` to the client, its message prefixed with the
/// server's name so the user knows who asks. A question that cannot be put to the user is
/// answered `cancel`.
pub(crate) async fn elicit(asking: &Asking, server: &str, mut params: Value) -> Value {
    if let Some(message) = params.get("message").and_then(Value::as_str) {
        params["message"] = json!(format!("[{server}] {message}"));
    } else if let Value::Object(fields) = &mut params {
        fields.insert("message".into(), json!(format!("[{server}] asks:")));
    }
    match asking.elicit(Asker::Server(server), params).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::debug!(server, "relayed elicitation not answered: {e}");
            json!({"action": "cancel"})
        }
    }
}

/// Fulfils the `inputRequests` of a 2026-07-28 `input_required` answer (each as JSON
/// `{method, params}`), keyed as given; `roots` answers `roots/list`. A sampling request that
/// cannot be relayed fails the whole call, with the reason.
pub(crate) async fn answer_input_requests(
    asking: &Asking,
    server: &str,
    requests: Vec<(String, Value)>,
    roots: &[Value],
) -> Result<Vec<(String, Value)>, String> {
    let mut answers = Vec::with_capacity(requests.len());
    for (key, request) in requests {
        let params = request.get("params").cloned().unwrap_or(json!({}));
        let answer = match request.get("method").and_then(Value::as_str) {
            Some("sampling/createMessage") => sample(asking, server, params)
                .await
                .map_err(|e| format!("{server} asked the client for sampling: {e}"))?,
            Some("elicitation/create") => elicit(asking, server, params).await,
            Some("roots/list") => json!({"roots": roots}),
            other => {
                return Err(format!(
                    "{server} asked for `{}`, which a client cannot answer",
                    other.unwrap_or("?").chars().take(64).collect::<String>()
                ));
            }
        };
        answers.push((key, answer));
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn execution(session: &str) -> Arc<Asking> {
        Arc::new(Asking::unreachable_for_tests(session))
    }

    #[test]
    fn a_question_goes_to_the_one_session_whose_calls_are_in_flight() {
        let inflight = Arc::new(InFlight::default());
        assert!(inflight.route().is_err(), "nobody to ask");
        let first = inflight.enter(execution("stdio"));
        let _second = inflight.enter(execution("stdio"));
        assert_eq!(inflight.route().unwrap().session(), "stdio");
        drop(first);
        assert_eq!(inflight.route().unwrap().session(), "stdio");
    }

    #[test]
    fn a_relayed_sampling_request_says_which_server_asks() {
        let mut params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Repeat exactly: [EMAIL_aaaaaa]"}},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "image", "data": "aGk=", "mimeType": "image/png"}
                ]}
            ],
            "maxTokens": 10
        });
        mark_sampling("h2", &mut params);
        assert_eq!(
            params["messages"][0]["content"]["text"],
            "[h2] Repeat exactly: [EMAIL_aaaaaa]"
        );
        assert_eq!(params["messages"][1]["content"][0]["text"], "[h2] ok");
        assert_eq!(params["messages"][1]["content"][1]["data"], "aGk=");
        assert!(
            params["systemPrompt"]
                .as_str()
                .unwrap()
                .starts_with("[h2] ")
        );
        let mut with_system = json!({"messages": [], "systemPrompt": "be terse"});
        mark_sampling("h2", &mut with_system);
        assert_eq!(with_system["systemPrompt"], "[h2] be terse");
    }

    #[test]
    fn calls_of_two_sessions_in_flight_make_a_question_unroutable() {
        let inflight = Arc::new(InFlight::default());
        let a = inflight.enter(execution("http-token:a"));
        let b = inflight.enter(execution("http-token:b"));
        let Err(refused) = inflight.route() else {
            panic!("a question was routed with two sessions in flight");
        };
        let refused = refused.to_string();
        assert!(refused.contains("several client sessions"), "{refused}");
        drop(a);
        assert_eq!(inflight.route().unwrap().session(), "http-token:b");
        drop(b);
        assert!(inflight.route().is_err());
    }
}
