//! Sampling from code: `llm.ask(prompt)` and `llm.think({messages})` become one
//! `sampling/createMessage` to the client (through [`Asking::sample`], within the execution's
//! caps), and the client's answer becomes `{text, model, stopReason}`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{AskError, Asker, Asking};

/// `maxTokens` of a request that names none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 1024;
/// Most messages one request may carry.
const MAX_MESSAGES: usize = 100;

/// What code asked for (the `sample` host call's params).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SampleRequest {
    pub messages: Vec<Message>,
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// A model name, passed to the client as a hint (the client chooses).
    #[serde(default)]
    pub model: Option<String>,
}

/// One message of the conversation: its role and its text.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Message {
    pub role: Role,
    pub content: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    User,
    Assistant,
}

impl SampleRequest {
    /// The `sampling/createMessage` params, or why the request cannot be sent.
    pub(crate) fn params(&self) -> Result<Value, String> {
        if self.messages.is_empty() {
            return Err("messages must not be empty".into());
        }
        if self.messages.len() > MAX_MESSAGES {
            return Err(format!("at most {MAX_MESSAGES} messages"));
        }
        let max_tokens = self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        if max_tokens == 0 {
            return Err("maxTokens must be positive".into());
        }
        let messages: Vec<Value> = self
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                json!({"role": role, "content": {"type": "text", "text": m.content}})
            })
            .collect();
        let mut params = json!({"messages": messages, "maxTokens": max_tokens});
        if let Some(system) = &self.system {
            params["systemPrompt"] = json!(system);
        }
        if let Some(model) = &self.model {
            params["modelPreferences"] = json!({"hints": [{"name": model}]});
        }
        Ok(params)
    }
}

/// Runs the request for code: `{text, model, stopReason}`, or the message code sees.
pub(crate) async fn sample_for_code(
    asking: &Asking,
    request: SampleRequest,
) -> Result<Value, String> {
    let params = request.params().map_err(|e| format!("llm: {e}"))?;
    let answer = asking
        .sample(Asker::Code, params)
        .await
        .map_err(|e| format!("llm: {e}"))?;
    reading(&answer).map_err(|e| format!("llm: {e}"))
}

/// The client's `CreateMessageResult` as code receives it.
fn reading(answer: &Value) -> Result<Value, AskError> {
    let content = &answer["content"];
    // A single block, or (SEP-1577) an array of blocks: the text blocks, joined.
    let blocks: Vec<&Value> = match content {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    if texts.is_empty() {
        let kind = blocks
            .first()
            .and_then(|b| b["type"].as_str())
            .unwrap_or("nothing");
        return Err(AskError::Malformed(format!(
            "the client answered with {kind}, not text"
        )));
    }
    Ok(json!({
        "text": texts.join("\n"),
        "model": answer["model"].as_str().unwrap_or(""),
        "stopReason": answer.get("stopReason").cloned().unwrap_or(Value::Null),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(value: Value) -> SampleRequest {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_request_becomes_create_message_params_that_rmcp_accepts() {
        let params = request(json!({
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yes?"}],
            "system": "be brief", "maxTokens": 50, "model": "claude"
        }))
        .params()
        .unwrap();
        assert_eq!(params["maxTokens"], 50);
        assert_eq!(params["systemPrompt"], "be brief");
        assert_eq!(params["messages"][1]["content"]["text"], "yes?");
        #[allow(deprecated)]
        let parsed: Result<rmcp::model::CreateMessageRequestParams, _> =
            serde_json::from_value(params);
        assert!(parsed.is_ok(), "{parsed:?}");
    }

    #[test]
    fn bad_requests_are_refused_before_sending() {
        let empty = request(json!({"messages": []}));
        assert!(empty.params().unwrap_err().contains("empty"));
        let zero = request(json!({"messages": [{"role": "user", "content": "x"}], "maxTokens": 0}));
        assert!(zero.params().is_err());
        let role: Result<SampleRequest, _> =
            serde_json::from_value(json!({"messages": [{"role": "system", "content": "x"}]}));
        assert!(role.is_err());
        let default = request(json!({"messages": [{"role": "user", "content": "x"}]}));
        assert_eq!(default.params().unwrap()["maxTokens"], DEFAULT_MAX_TOKENS);
    }

    #[test]
    fn answers_are_read_as_text_or_refused() {
        let text = json!({"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m", "stopReason": "endTurn"});
        assert_eq!(
            reading(&text).unwrap(),
            json!({"text": "42", "model": "m", "stopReason": "endTurn"})
        );
        let image = json!({"role": "assistant", "content": {"type": "image", "data": "", "mimeType": "image/png"}, "model": "m"});
        assert!(reading(&image).unwrap_err().to_string().contains("image"));
    }
}
