//! Arguments against the downstream tool's live input schema: `jsonschema` validators compiled
//! once per tool and cached, recompiled when the tool's schema changes (a refreshed tool list),
//! never fetching a remote `$ref`. A schema larger than `MAX_SCHEMA_BYTES` or nested deeper
//! than `MAX_SCHEMA_DEPTH` is not compiled at all (the tool cannot be called, and the refusal
//! says why), so what a downstream server sends bounds the work. Pure logic, no I/O.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonschema::Validator;
use serde_json::{Map, Value};

use super::refusal::Refusal;

/// Largest input schema compiled into a validator, in bytes of JSON.
pub(crate) const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// Deepest JSON nesting (objects and arrays) of an input schema compiled into a validator.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

/// Most schema errors listed in one refusal.
const MAX_ERRORS: usize = 8;
/// Longest single error message kept.
const MAX_ERROR_CHARS: usize = 200;

/// Compiled validators by qualified tool name.
#[derive(Default)]
pub(crate) struct SchemaCache {
    compiled: Mutex<HashMap<String, Compiled>>,
}

struct Compiled {
    /// The schema the validator was built from; a different live schema means recompiling.
    schema: Value,
    validator: Arc<Result<Validator, String>>,
}

/// Refuses every external reference: a downstream schema may only refer to itself.
struct NoRemoteRefs;

impl jsonschema::Retrieve for NoRemoteRefs {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("remote $ref `{uri}` is not fetched").into())
    }
}

impl SchemaCache {
    /// Checks `args` against `schema` (the tool's `inputSchema`). `expected` renders what the
    /// tool takes, for the error message; it is only called on failure.
    pub(crate) fn validate(
        &self,
        tool: &str,
        schema: &Map<String, Value>,
        args: &Value,
        expected: impl FnOnce() -> String,
    ) -> Result<(), Refusal> {
        let validator = self.validator(tool, schema);
        let validator = match validator.as_ref() {
            Ok(v) => v,
            Err(reason) => {
                return Err(Refusal::UnusableSchema {
                    tool: tool.to_string(),
                    reason: reason.clone(),
                });
            }
        };
        let errors: Vec<String> = validator
            .iter_errors(args)
            .take(MAX_ERRORS)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                let message: String = e.to_string().chars().take(MAX_ERROR_CHARS).collect();
                format!("at {at}: {message}")
            })
            .collect();
        if errors.is_empty() {
            return Ok(());
        }
        Err(Refusal::InvalidArguments {
            tool: tool.to_string(),
            errors,
            expected: expected(),
            given: shape_of(args, 0),
        })
    }

    fn validator(&self, tool: &str, schema: &Map<String, Value>) -> Arc<Result<Validator, String>> {
        let mut compiled = self.compiled.lock().expect("schema cache lock");
        if let Some(entry) = compiled.get(tool)
            && entry.schema.as_object() == Some(schema)
        {
            return entry.validator.clone();
        }
        let schema = Value::Object(schema.clone());
        let validator = Arc::new(check_size(&schema).and_then(|()| {
            jsonschema::options()
                .with_retriever(NoRemoteRefs)
                .build(&schema)
                .map_err(|e| e.to_string())
        }));
        compiled.insert(
            tool.to_string(),
            Compiled {
                schema,
                validator: validator.clone(),
            },
        );
        validator
    }
}

/// Refuses a schema too large or too deep to compile.
fn check_size(schema: &Value) -> Result<(), String> {
    let bytes = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    if bytes > MAX_SCHEMA_BYTES {
        return Err(format!(
            "it is {bytes} bytes of JSON, over the limit of {MAX_SCHEMA_BYTES} bytes"
        ));
    }
    let mut stack = vec![(schema, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(format!(
                "it is nested deeper than {MAX_SCHEMA_DEPTH} levels"
            ));
        }
        match value {
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// The shape of a value, without its contents: `{ path: string, depth: number }`.
fn shape_of(value: &Value, depth: usize) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "boolean".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(items) => match items.first() {
            _ if depth >= 2 => "array".into(),
            Some(first) => format!("{}[]", shape_of(first, depth + 1)),
            None => "[]".into(),
        },
        Value::Object(map) if depth >= 2 => {
            if map.is_empty() {
                "{}".into()
            } else {
                "object".into()
            }
        }
        Value::Object(map) => {
            if map.is_empty() {
                return "{}".into();
            }
            let fields: Vec<String> = map
                .iter()
                .take(20)
                .map(|(k, v)| format!("{k}: {}", shape_of(v, depth + 1)))
                .collect();
            let more = if map.len() > 20 { ", ..." } else { "" };
            format!("{{ {}{more} }}", fields.join(", "))
        }
    }
}
