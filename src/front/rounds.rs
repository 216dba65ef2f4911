//! `input_required` rounds toward clients on protocol 2026-07-28, which carry no requests from
//! server to client: when a running execution asks its client something (`llm.ask`, an
//! approval, a downstream server's question), the `tools/call` is answered with an
//! `InputRequiredResult` holding the questions and an opaque `requestState`, and the execution
//! waits, parked under that handle. The client's retry of the call (the same tool, with
//! `inputResponses` and the `requestState` echoed) answers the questions and resumes waiting for
//! the execution's end or its next questions.
//!
//! A handle is random, used once (taken on the retry), bound to the client session that got it
//! and to the tool, and expires: a call nobody comes back for is cancelled after
//! [`PARKED_FOR`] beyond the time a question is waited for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::ask::client::Question;
use crate::sandbox::tap::OutputTap;

/// How long a parked call waits for the client's retry beyond the time a question is waited
/// for (after which its question has failed anyway).
const PARKED_FOR: Duration = Duration::from_secs(10);

/// One `tools/call` that runs across requests.
pub(super) struct Call {
    pub session: String,
    pub tool: String,
    pub task: JoinHandle<Result<CallToolResult, String>>,
    pub questions: mpsc::UnboundedReceiver<Question>,
    /// The answers still owed, by the key each question was given.
    pub owed: HashMap<String, oneshot::Sender<serde_json::Value>>,
    /// Ends the execution (a client that cancels, a call nobody comes back for).
    pub cancel: CancellationToken,
    /// What the call's code prints, read live by each request that waits for it.
    pub live: Arc<OutputTap>,
}

/// What a call came to for now.
pub(super) enum Next {
    Done(Result<CallToolResult, String>),
    /// It asks: the result to return (the call is parked under its `requestState`).
    Asks(InputRequiredResult),
}

/// The calls waiting for their client's retry, by handle. Shared by every request.
#[derive(Default)]
pub(super) struct Parked {
    calls: Mutex<HashMap<String, Call>>,
}

impl Parked {
    /// Takes the call parked under `state` for `session` and `tool`, answering its questions
    /// with `responses` (a question left unanswered fails in the execution).
    pub(super) fn resume(
        &self,
        state: &str,
        session: &str,
        tool: &str,
        responses: Option<InputResponses>,
    ) -> Result<Call, String> {
        let mut calls = self.calls.lock().expect("parked calls lock");
        let fits = calls
            .get(state)
            .is_some_and(|call| call.session == session && call.tool == tool);
        let unknown = || {
            "requestState is unknown, expired, already used or not this call's; call the tool again without it"
                .to_string()
        };
        if !fits {
            return Err(unknown());
        }
        let mut call = calls.remove(state).ok_or_else(unknown)?;
        for (key, value) in responses.unwrap_or_default() {
            if let Some(owed) = call.owed.remove(&key) {
                let _ = owed.send(value);
            }
        }
        call.owed.clear();
        Ok(call)
    }

    /// Waits until `call` ends or asks; a call that asks is parked (and given up after
    /// `question_timeout` plus [`PARKED_FOR`] if nobody comes back for it).
    pub(super) async fn drive(
        self: &Arc<Self>,
        mut call: Call,
        request_cancelled: CancellationToken,
        question_timeout: Duration,
    ) -> Next {
        // A request dropped mid-way (an HTTP client gone) ends the execution, unless it parked.
        let mut cancel_on_drop = Some(call.cancel.clone().drop_guard());
        let mut asking = true;
        let first = loop {
            tokio::select! {
                result = &mut call.task => {
                    return Next::Done(result.unwrap_or_else(|e| Err(format!("internal error: {e}"))));
                }
                question = call.questions.recv(), if asking => match question {
                    Some(question) => break question,
                    None => asking = false,
                },
                () = request_cancelled.cancelled() => {
                    call.cancel.cancel();
                    let result = (&mut call.task).await;
                    return Next::Done(result.unwrap_or_else(|e| Err(format!("internal error: {e}"))));
                }
            }
        };
        // The questions asked together (at once, or before the call is parked) go in one round.
        let mut questions = vec![first];
        while let Ok(more) = call.questions.try_recv() {
            questions.push(more);
        }
        let mut requests = InputRequests::new();
        for (n, question) in questions.into_iter().enumerate() {
            let key = format!("q{}", n + 1);
            let request = json!({"method": question.method, "params": question.params});
            match serde_json::from_value::<InputRequest>(request) {
                Ok(request) => {
                    requests.insert(key.clone(), request);
                    call.owed.insert(key, question.answer);
                }
                // Dropping its answer fails the question in the execution.
                Err(e) => tracing::warn!("a question could not be put to the client: {e}"),
            }
        }
        let handle = uuid::Uuid::new_v4().simple().to_string();
        if let Some(guard) = cancel_on_drop.take() {
            guard.disarm();
        }
        self.calls
            .lock()
            .expect("parked calls lock")
            .insert(handle.clone(), call);
        let parked = self.clone();
        let expired = handle.clone();
        tokio::spawn(async move {
            tokio::time::sleep(question_timeout + PARKED_FOR).await;
            let call = parked
                .calls
                .lock()
                .expect("parked calls lock")
                .remove(&expired);
            if let Some(call) = call {
                call.cancel.cancel();
            }
        });
        Next::Asks(InputRequiredResult::new(Some(requests), Some(handle)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked_call(session: &str, tool: &str) -> (Call, mpsc::UnboundedSender<Question>) {
        let (questions, receiver) = mpsc::unbounded_channel();
        let call = Call {
            session: session.into(),
            tool: tool.into(),
            task: tokio::spawn(std::future::pending()),
            questions: receiver,
            owed: HashMap::new(),
            cancel: CancellationToken::new(),
            live: Arc::default(),
        };
        (call, questions)
    }

    #[tokio::test]
    async fn a_handle_resumes_only_its_session_and_tool_and_only_once() {
        let parked = Arc::new(Parked::default());
        let (call, questions) = parked_call("stdio", "executeTypescript");
        let (answer, answered) = oneshot::channel();
        let question = Question {
            method: "elicitation/create",
            params: json!({"mode": "form", "message": "ok?", "requestedSchema": {"type": "object", "properties": {}}}),
            answer,
        };
        questions.send(question).unwrap();
        let Next::Asks(input) = parked
            .drive(call, CancellationToken::new(), Duration::from_secs(60))
            .await
        else {
            panic!("the call did not ask");
        };
        let state = input.request_state.clone().unwrap();
        assert_eq!(state.len(), 32);
        assert!(
            parked
                .resume(&state, "http-peer:1.2.3.4", "executeTypescript", None)
                .is_err()
        );
        assert!(
            parked
                .resume(&state, "stdio", "executePython", None)
                .is_err()
        );
        let responses = InputResponses::from([("q1".to_string(), json!({"action": "cancel"}))]);
        let resumed = parked.resume(&state, "stdio", "executeTypescript", Some(responses));
        assert!(resumed.is_ok());
        assert_eq!(answered.await.unwrap(), json!({"action": "cancel"}));
        assert!(
            parked
                .resume(&state, "stdio", "executeTypescript", None)
                .is_err(),
            "used twice"
        );
        resumed.unwrap().task.abort();
    }
}
