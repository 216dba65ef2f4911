//! Asking the user to approve one tool call, through `elicitation/create`: the question (which
//! tool, a short rendering of its arguments, allow once / allow for this session / deny) and
//! the reading of its answer. Anything but an explicit allow (a denial, a decline, a cancel, no
//! answer in time, a malformed answer, a client without elicitation) is a refusal with its
//! reason. Whether a call needs approval, and what the session already allowed, is the
//! broker's (`broker::approval`).

use serde_json::{Value, json};

use super::client::clip;
use super::{AskError, Asker, Asking, answer_facts};

/// Longest rendering of a call's arguments in the question, in characters.
const MAX_ARGUMENTS_SHOWN: usize = 400;

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Once,
    Session,
    /// Refused, and why (for the code).
    Refused(String),
}

/// The three choices offered, as the elicitation's enum values and their titles.
const CHOICES: [(&str, &str); 3] = [
    ("allow_once", "Allow once"),
    ("allow_session", "Allow for this session"),
    ("deny", "Deny"),
];

/// The `elicitation/create` params asking to approve a call of `tool` with `args`.
pub(crate) fn question(tool: &str, args: &Value, why: &str) -> Value {
    let all = serde_json::to_string(args).unwrap_or_default();
    let mut shown = clip(&all, MAX_ARGUMENTS_SHOWN);
    if shown.len() < all.len() {
        shown.push_str(&format!(" ({} bytes in all)", all.len()));
    }
    json!({
        "mode": "form",
        "message": format!("Code running in code-executor wants to call {tool} ({why}).\nArguments: {shown}"),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "oneOf": CHOICES.iter().map(|(value, title)| json!({"const": value, "title": title})).collect::<Vec<_>>(),
                }
            },
            "required": ["decision"],
        }
    })
}

/// What an answer to [`question`] decides.
pub(crate) fn read_answer(tool: &str, answer: &Result<Value, AskError>) -> Decision {
    let refused = |why: String| {
        Decision::Refused(format!(
            "{tool} needs the user's approval: {why}; the call was not sent"
        ))
    };
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => return refused(e.to_string()),
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => match answer["content"]["decision"].as_str() {
            Some("allow_once") => Decision::Once,
            Some("allow_session") => Decision::Session,
            Some("deny") => refused("the user denied it".into()),
            _ => refused("the client's answer holds no decision".into()),
        },
        Some("decline") => refused("the user declined".into()),
        Some("cancel") => refused("the user dismissed the question".into()),
        _ => refused("the client's answer is malformed".into()),
    }
}

/// Asks the user whether code may call `tool` with `args`, and records the decision (not the
/// arguments) in the audit trail.
pub(crate) async fn ask(asking: &Asking, tool: &str, args: &Value, why: &str) -> Decision {
    let params = asking.outgoing(Asker::Code, question(tool, args, why));
    let started = std::time::Instant::now();
    let answer = asking.ask_user(&params).await;
    let decision = read_answer(tool, &answer);
    let outcome = match (&decision, &answer) {
        (Decision::Once, _) => "allow_once",
        (Decision::Session, _) => "allow_session",
        (Decision::Refused(_), answer) => match answer_facts(answer).0 {
            "accept" => "deny",
            other => other,
        },
    };
    let bytes = answer_facts(&answer).1;
    asking.record(
        "approval",
        Asker::Code,
        &params,
        outcome,
        bytes,
        started,
        Some(tool),
    );
    decision
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_is_an_elicitation_rmcp_accepts_and_shows_the_arguments_in_short() {
        let args = json!({"id": 7, "note": "x".repeat(5000)});
        let q = question("mcp__db__drop", &args, "it is marked destructive");
        let message = q["message"].as_str().unwrap();
        assert!(message.contains("mcp__db__drop") && message.contains("\"id\":7"));
        assert!(message.len() < 1000, "{}", message.len());
        let parsed: Result<rmcp::model::ElicitRequestParams, _> = serde_json::from_value(q);
        assert!(parsed.is_ok(), "{parsed:?}");
    }

    #[test]
    fn only_an_explicit_allow_allows() {
        let accept = |d: &str| Ok(json!({"action": "accept", "content": {"decision": d}}));
        assert_eq!(read_answer("t", &accept("allow_once")), Decision::Once);
        assert_eq!(
            read_answer("t", &accept("allow_session")),
            Decision::Session
        );
        for answer in [
            accept("deny"),
            accept("ALLOW_ONCE"),
            Ok(json!({"action": "accept"})),
            Ok(json!({"action": "decline"})),
            Ok(json!({"action": "cancel"})),
            Ok(json!({"what": 1})),
            Err(AskError::Timeout(5)),
            Err(AskError::NotOffered("elicitation")),
        ] {
            let Decision::Refused(why) = read_answer("t", &answer) else {
                panic!("{answer:?} allowed the call");
            };
            assert!(why.contains("not sent"), "{why}");
        }
    }
}
