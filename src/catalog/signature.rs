//! TypeScript signatures from JSON Schema, compact enough for an LLM to read at a glance:
//! `function get_current_time(args: { timezone: string }): Promise<{ datetime: string }>`.
//!
//! Covers what tool schemas use in practice: primitive types, enums and consts, arrays, tuples,
//! objects with required/optional properties and additionalProperties, unions (`anyOf`, `oneOf`,
//! type arrays), `allOf` as intersections, and local `$ref`s into `$defs`/`definitions`.
//! Depth is bounded so a recursive schema still gives a finite signature. The Python types of
//! the typed wrapper modules (`str`, `list[int]`, `Literal[...]`, unions) come from here too, so
//! both languages read a schema the same way.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

const MAX_DEPTH: usize = 6;

/// A TypeScript function signature for a tool.
pub(crate) fn signature(
    tool: &str,
    input: &Map<String, Value>,
    output: Option<&Map<String, Value>>,
) -> String {
    let root_in = Value::Object(input.clone());
    let args = type_of(&root_in, &root_in);
    let ret = match output {
        Some(schema) => {
            let root_out = Value::Object(schema.clone());
            type_of(&root_out, &root_out)
        }
        None => "unknown".to_string(),
    };
    let ident = if is_identifier(tool) {
        tool.to_string()
    } else {
        // Hyphens and dots are not valid in identifiers; the call still uses the real name.
        tool.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let optional = input
        .get("required")
        .and_then(Value::as_array)
        .is_none_or(|r| r.is_empty());
    let q = if optional { "?" } else { "" };
    format!("function {ident}(args{q}: {args}): Promise<{ret}>")
}

/// The TypeScript type for `schema`, resolving `$ref`s against `root`.
pub(crate) fn type_of(schema: &Value, root: &Value) -> String {
    render(schema, root, 0)
}

fn render(schema: &Value, root: &Value, depth: usize) -> String {
    let Some(obj) = schema.as_object() else {
        // `true` accepts anything, `false` nothing.
        return match schema {
            Value::Bool(false) => "never".into(),
            _ => "unknown".into(),
        };
    };
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        return match resolve_ref(reference, root) {
            Some(target) => render(target, root, depth + 1),
            None => "unknown".into(),
        };
    }
    if let Some(value) = obj.get("const") {
        return literal(value);
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(literal).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(variants) = obj.get(key).and_then(Value::as_array) {
            return union(
                variants
                    .iter()
                    .map(|v| render(v, root, depth + 1))
                    .collect(),
            );
        }
    }
    if let Some(parts) = obj.get("allOf").and_then(Value::as_array) {
        let parts: Vec<String> = parts.iter().map(|v| render(v, root, depth + 1)).collect();
        return match parts.len() {
            0 => "unknown".into(),
            1 => parts.into_iter().next().unwrap_or_default(),
            _ => parts.join(" & "),
        };
    }
    match obj.get("type") {
        Some(Value::String(t)) => render_type(t, obj, root, depth),
        Some(Value::Array(types)) => union(
            types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| render_type(t, obj, root, depth))
                .collect(),
        ),
        _ if obj.contains_key("properties") => render_type("object", obj, root, depth),
        _ if obj.contains_key("items") => render_type("array", obj, root, depth),
        _ => "unknown".into(),
    }
}

fn render_type(t: &str, obj: &Map<String, Value>, root: &Value, depth: usize) -> String {
    match t {
        "string" => "string".into(),
        "number" | "integer" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => match obj.get("items").or_else(|| obj.get("prefixItems")) {
            Some(Value::Array(tuple)) => format!(
                "[{}]",
                tuple
                    .iter()
                    .map(|v| render(v, root, depth + 1))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(items) => {
                let inner = render(items, root, depth + 1);
                if inner.contains(' ') {
                    format!("Array<{inner}>")
                } else {
                    format!("{inner}[]")
                }
            }
            None => "unknown[]".into(),
        },
        "object" => render_object(obj, root, depth),
        _ => "unknown".into(),
    }
}

fn render_object(obj: &Map<String, Value>, root: &Value, depth: usize) -> String {
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields: Vec<String> = Vec::new();
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let key = if is_identifier(name) {
                name.clone()
            } else {
                serde_json::to_string(name).unwrap_or_default()
            };
            let q = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            fields.push(format!("{key}{q}: {}", render(prop, root, depth + 1)));
        }
    }
    match obj.get("additionalProperties") {
        Some(Value::Bool(false)) | None => {}
        Some(Value::Bool(true)) => fields.push("[key: string]: unknown".into()),
        Some(extra) => fields.push(format!("[key: string]: {}", render(extra, root, depth + 1))),
    }
    if fields.is_empty() {
        return "{}".into();
    }
    format!("{{ {} }}", fields.join("; "))
}

fn resolve_ref<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    // Only local references: nothing is ever fetched.
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        _ => "unknown".into(),
    }
}

fn union(mut parts: Vec<String>) -> String {
    parts.dedup();
    match parts.len() {
        0 => "never".into(),
        1 => parts.remove(0),
        _ => parts.join(" | "),
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// The Python type for `schema`, resolving `$ref`s against `root` (a readable approximation:
/// nested objects are `dict`), as typed wrapper modules declare it.
pub(crate) fn python_type_of(schema: &Value, root: &Value) -> String {
    py_type(schema, root, 0)
}

fn py_type(schema: &Value, root: &Value, depth: usize) -> String {
    let Some(obj) = schema.as_object() else {
        return "Any".into();
    };
    if depth > 6 {
        return "Any".into();
    }
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        return match r.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(target) => py_type(target, root, depth + 1),
            None => "Any".into(),
        };
    }
    let literal = |v: &Value| -> Option<String> {
        match v {
            Value::String(_) => Some(v.to_string()),
            Value::Bool(true) => Some("True".into()),
            Value::Bool(false) => Some("False".into()),
            Value::Null => Some("None".into()),
            Value::Number(n) if n.is_i64() => Some(n.to_string()),
            _ => None,
        }
    };
    if let Some(v) = obj.get("const") {
        return literal(v).map_or("Any".into(), |l| format!("Literal[{l}]"));
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        let lits: Option<Vec<String>> = values.iter().map(literal).collect();
        return match lits {
            Some(l) if !l.is_empty() => format!("Literal[{}]", l.join(", ")),
            _ => "Any".into(),
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(variants) = obj.get(key).and_then(Value::as_array) {
            return py_union(
                variants
                    .iter()
                    .map(|v| py_type(v, root, depth + 1))
                    .collect(),
            );
        }
    }
    let single = |t: &str| -> String {
        match t {
            "string" => "str".into(),
            "integer" => "int".into(),
            "number" => "float".into(),
            "boolean" => "bool".into(),
            "null" => "None".into(),
            "array" => match obj.get("items") {
                Some(items @ Value::Object(_)) => {
                    format!("list[{}]", py_type(items, root, depth + 1))
                }
                _ => "list[Any]".into(),
            },
            "object" => "dict[str, Any]".into(),
            _ => "Any".into(),
        }
    };
    match obj.get("type") {
        Some(Value::String(t)) => single(t),
        Some(Value::Array(ts)) => {
            py_union(ts.iter().filter_map(Value::as_str).map(single).collect())
        }
        _ if obj.contains_key("properties") => "dict[str, Any]".into(),
        _ => "Any".into(),
    }
}

fn py_union(mut parts: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    parts.retain(|p| seen.insert(p.clone()));
    if parts.iter().any(|p| p == "Any") || parts.is_empty() {
        return "Any".into();
    }
    parts.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_simple_tool() {
        let input = obj(
            json!({"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}),
        );
        assert_eq!(
            signature("get_current_time", &input, None),
            "function get_current_time(args: { timezone: string }): Promise<unknown>"
        );
    }

    #[test]
    fn optional_nested_enum_refs_and_output() {
        let input = obj(json!({
            "type": "object",
            "properties": {
                "kind": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "item": {"$ref": "#/$defs/Item"},
                "weird-key": {"type": ["integer", "null"]}
            },
            "$defs": {"Item": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}
        }));
        let output =
            obj(json!({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}));
        assert_eq!(
            signature("get-Item", &input, Some(&output)),
            "function get_Item(args?: { item?: { id: number }; kind?: \"a\" | \"b\"; tags?: string[]; \"weird-key\"?: number | null }): Promise<{ ok: boolean }>"
        );
    }

    #[test]
    fn recursion_is_bounded() {
        let root = json!({"$ref": "#"});
        assert_eq!(type_of(&root, &root), "unknown");
    }
}
