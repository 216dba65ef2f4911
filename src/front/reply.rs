//! What the tool handlers share: the shape of a tool schema as rmcp holds it, the reply with
//! `structuredContent` plus one readable text block, and the arguments of a tool that takes
//! none.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde::Deserialize;
use serde_json::Value;

/// Arguments of a tool that takes none: anything given is ignored (the schema says so, and a
/// model that adds a field gets its answer rather than an error).
#[derive(Deserialize)]
pub(super) struct NoArgs {}

pub(super) fn structured<T: serde::Serialize>(
    value: &T,
    text: String,
) -> Result<CallToolResult, String> {
    let value = serde_json::to_value(value).map_err(|e| e.to_string())?;
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// A tool schema as rmcp holds it.
pub(super) fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are objects"),
    }
}
