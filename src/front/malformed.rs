//! What a client message that cannot be served gets back, decided before rmcp sees it, the same
//! way over stdio and HTTP (JSON-RPC 2.0 §5, the MCP specification's "Error Handling"):
//!
//! - Not JSON: `-32700` Parse error, id `null` (rmcp would stay silent over stdio, and answer
//!   415 text over HTTP).
//! - JSON but not a request, notification or response (an array, a missing `method`, an id
//!   that is neither a string nor an integer): `-32600` Invalid Request, with the request's id
//!   when it can be read and `null` otherwise (rmcp omits it).
//! - A method this server knows with parameters that do not fit it: `-32602` Invalid params
//!   naming what does not fit (rmcp takes it for an unknown method and answers `-32601`).
//! - A method nobody defines: `-32601`, worded [`method_not_found`], the one wording of every
//!   method-not-found answer.
//! - A notification that does not fit is dropped: JSON-RPC never answers a notification.
//!
//! Pure: bytes in, a [`Verdict`] out. The transports write the answer and report it
//! ([`super::complaints`]).

use std::borrow::Cow;

// Deprecated methods (logging, resource subscriptions) are still methods clients send.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CancelTaskParams, ClientJsonRpcMessage, ClientRequest,
    CompleteRequestParams, DiscoverRequestParams, ErrorCode, ErrorData, GetPromptRequestParams,
    GetSkillRequestParams, GetTaskParams, InitializeRequestParams, JsonRpcMessage,
    PaginatedRequestParams, ReadResourceDirectoryRequestParams, ReadResourceRequestParams,
    RequestId, SetLevelRequestParams, SubscribeRequestParams, SubscriptionsListenRequestParams,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// What to do with one incoming message.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// A message rmcp can serve.
    Serve(Box<ClientJsonRpcMessage>),
    /// Answered here, never served.
    Answer(Answer),
    /// A notification that does not fit: no answer (JSON-RPC answers no notification).
    Drop(String),
}

/// A JSON-RPC error answer to a message that cannot be served.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// The request's id; `None` when it cannot be read (written as `null`).
    pub id: Option<RequestId>,
    pub error: ErrorData,
}

impl Answer {
    fn new(id: Option<RequestId>, code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Answer {
            id,
            error: ErrorData::new(code, message, None),
        }
    }

    /// A parse error: the message is not JSON.
    pub(crate) fn parse_error(detail: &str) -> Self {
        Answer::new(
            None,
            ErrorCode::PARSE_ERROR,
            format!("Parse error: the message is not valid JSON ({detail})"),
        )
    }

    /// The answer as one JSON-RPC error object, `id` written as `null` when unknown (JSON-RPC
    /// 2.0 §5: "If there was an error in detecting the id ... it MUST be Null").
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": self.error,
        })
    }
}

/// The message of every `-32601` answer.
pub(crate) fn method_not_found(method: &str) -> String {
    format!("Method not found: {method}")
}

/// The answer to a request rmcp could not read as any method it knows (its `CustomRequest`):
/// `-32602` for a method the protocol defines whose `params` do not fit it, else `-32601`.
pub(crate) fn unserved(method: &str, params: Option<&Value>) -> ErrorData {
    match params_fault(method, params) {
        Some(fault) => {
            ErrorData::invalid_params(format!("Invalid params for {method}: {fault}"), None)
        }
        None => ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method_not_found(method), None),
    }
}

/// Decides what `message` (one JSON-RPC message, as received) gets.
pub(crate) fn check(message: &[u8]) -> Verdict {
    let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
    match serde_json::from_slice::<ClientJsonRpcMessage>(message) {
        Ok(JsonRpcMessage::Request(request)) => {
            if let ClientRequest::CustomRequest(custom) = &request.request {
                return Verdict::Answer(Answer {
                    id: Some(request.id.clone()),
                    error: unserved(&custom.method, custom.params.as_ref()),
                });
            }
            Verdict::Serve(Box::new(JsonRpcMessage::Request(request)))
        }
        Ok(other) => Verdict::Serve(Box::new(other)),
        Err(error) => unservable(message, &error),
    }
}

/// The verdict on a message rmcp cannot read.
fn unservable(message: &[u8], error: &serde_json::Error) -> Verdict {
    let value: Value = match serde_json::from_slice(message) {
        Ok(value) => value,
        Err(syntax) => return Verdict::Answer(Answer::parse_error(&syntax.to_string())),
    };
    let invalid = |id, why: &str| {
        Verdict::Answer(Answer::new(
            id,
            ErrorCode::INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ))
    };
    let Value::Object(object) = &value else {
        let why = match value {
            Value::Array(_) => "a batch (JSON array) is not accepted: send one message at a time",
            _ => "a JSON-RPC message is a JSON object",
        };
        return invalid(None, why);
    };
    let id = match object.get("id") {
        None => None,
        Some(id) => match readable_id(id) {
            Some(id) => Some(id),
            None => return invalid(None, "the id must be a string or an integer"),
        },
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "\"jsonrpc\" must be \"2.0\"");
    }
    match object.get("method") {
        Some(Value::String(method)) => match id {
            // A request of a method we know, its parameters not fitting.
            Some(id) => match params_fault(method, object.get("params")) {
                Some(fault) => Verdict::Answer(Answer::new(
                    Some(id),
                    ErrorCode::INVALID_PARAMS,
                    format!("Invalid params for {method}: {fault}"),
                )),
                None => invalid(Some(id), &error.to_string()),
            },
            None => Verdict::Drop(format!("notification {method}: {error}")),
        },
        Some(_) => invalid(id, "\"method\" must be a string"),
        None if object.contains_key("result") || object.contains_key("error") => {
            invalid(id, &format!("a response that does not fit: {error}"))
        }
        None => invalid(id, "a request needs a \"method\""),
    }
}

/// A JSON-RPC id as MCP allows it: a string or an integer (never `null`).
fn readable_id(id: &Value) -> Option<RequestId> {
    match id {
        Value::String(_) => serde_json::from_value(id.clone()).ok(),
        Value::Number(n) if n.is_i64() || n.is_u64() => serde_json::from_value(id.clone()).ok(),
        _ => None,
    }
}

/// What is wrong with `params` of `method`, if `method` is one this server's protocol defines
/// and they do not fit it; `None` for a method nobody defines (or parameters that fit).
#[allow(deprecated)]
fn params_fault(method: &str, params: Option<&Value>) -> Option<String> {
    // Absent parameters are taken for `{}`, so that a missing field is named.
    let params = params.cloned().unwrap_or_else(|| json!({}));
    type Page = Option<PaginatedRequestParams>;
    let fault = match method {
        "initialize" => fits::<InitializeRequestParams>(params),
        "ping" => None,
        "server/discover" => fits::<DiscoverRequestParams>(params),
        "completion/complete" => fits::<CompleteRequestParams>(params),
        "logging/setLevel" => fits::<SetLevelRequestParams>(params),
        "prompts/get" => fits::<GetPromptRequestParams>(params),
        "prompts/list"
        | "resources/list"
        | "resources/templates/list"
        | "tools/list"
        | "skills/list" => fits::<Page>(params),
        "resources/read" => fits::<ReadResourceRequestParams>(params),
        "resources/subscribe" => fits::<SubscribeRequestParams>(params),
        "resources/unsubscribe" => fits::<UnsubscribeRequestParams>(params),
        "resources/directory/read" => fits::<ReadResourceDirectoryRequestParams>(params),
        "subscriptions/listen" => fits::<SubscriptionsListenRequestParams>(params),
        "tools/call" => fits::<CallToolRequestParams>(params),
        "tasks/get" => fits::<GetTaskParams>(params),
        "tasks/update" => fits::<UpdateTaskParams>(params),
        "tasks/cancel" => fits::<CancelTaskParams>(params),
        "skills/get" => fits::<GetSkillRequestParams>(params),
        _ => return None,
    };
    // A known method whose parameters fit on their own failed as a whole message.
    Some(fault.unwrap_or_else(|| "they do not fit the method".into()))
}

/// What keeps `params` from being a `T`, with the path to it (`name: invalid type ...`).
fn fits<T: DeserializeOwned>(params: Value) -> Option<String> {
    serde_path_to_error::deserialize::<_, T>(params)
        .err()
        .map(|e| match e.path().to_string().as_str() {
            "." | "" => e.inner().to_string(),
            path => format!("{path}: {}", e.inner()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(message: &str) -> Value {
        match check(message.as_bytes()) {
            Verdict::Answer(answer) => answer.to_json(),
            other => panic!("{message} was not answered: {other:?}"),
        }
    }

    fn code_and_id(message: &str) -> (i64, Value) {
        let answer = answer(message);
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        (
            answer["error"]["code"].as_i64().unwrap(),
            answer["id"].clone(),
        )
    }

    #[test]
    fn what_is_not_json_is_a_parse_error_with_a_null_id() {
        for text in [
            r#"{"x":Infinity}"#,
            "{",
            "not json",
            r#"{"id":1,"method":"ping""#,
        ] {
            assert_eq!(code_and_id(text), (-32700, Value::Null), "{text}");
        }
        let message = answer("{")["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.starts_with("Parse error"), "{message}");
    }

    #[test]
    fn an_invalid_request_carries_its_id_or_null() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":7}"#, json!(7)),
            (r#"{"jsonrpc":"2.0","id":"a","method":5}"#, json!("a")),
            (r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, json!(3)),
            (r#"{"id":4,"method":"ping"}"#, json!(4)),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                Value::Null,
            ),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, Value::Null),
            ("[]", Value::Null),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
            ("5", Value::Null),
            (r#""text""#, Value::Null),
        ];
        for (text, id) in cases {
            assert_eq!(code_and_id(text), (-32600, id), "{text}");
        }
    }

    #[test]
    fn parameters_that_do_not_fit_a_known_method_are_invalid_params() {
        for (text, names) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
                "name",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
                "protocolVersion",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"bogus"}}"#,
                "bogus",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#, "name"),
        ] {
            let answer = answer(text);
            assert_eq!(answer["error"]["code"], -32602, "{text}: {answer}");
            assert_eq!(answer["id"], 1);
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("Invalid params for "), "{message}");
            assert!(message.contains(names), "{text}: {message}");
        }
    }

    #[test]
    fn an_unknown_method_is_not_found_in_the_one_wording() {
        let answer = answer(r#"{"jsonrpc":"2.0","id":"q","method":"no/such","params":{}}"#);
        assert_eq!(answer["error"]["code"], -32601);
        assert_eq!(answer["id"], "q");
        assert_eq!(answer["error"]["message"], "Method not found: no/such");
    }

    #[test]
    fn well_formed_messages_are_served_and_bad_notifications_dropped() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"health","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        ] {
            assert!(
                matches!(check(text.as_bytes()), Verdict::Serve(_)),
                "{text}"
            );
        }
        // JSON-RPC answers no notification, whatever it carries.
        let odd =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}"#;
        assert!(
            !matches!(check(odd.as_bytes()), Verdict::Answer(_)),
            "{odd}"
        );
    }
}
