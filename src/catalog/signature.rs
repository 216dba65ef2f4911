//! TypeScript signatures from JSON Schema, compact enough for an LLM to read at a glance:
//! `function get_current_time(args: { timezone: string }): Promise<{ datetime: string }>`.
//!
//! Covers what tool schemas use in practice: primitive types, enums and consts, arrays, tuples,
//! objects with required/optional properties and additionalProperties, unions (`anyOf`, `oneOf`,
//! type arrays), `allOf` as intersections, and local `$ref`s into `$defs`/`definitions`. The
//! Python types of the typed wrapper modules (`str`, `list[int]`, `Literal[...]`, unions) come
//! from here too, so both languages read a schema the same way.
//!
//! A schema comes from a downstream server and may be hostile, so every rendering is bounded:
//! a `$ref` met again while it is being expanded (a cycle) is `unknown` (`Any`), nesting deeper
//! than [`MAX_DEPTH`] is `unknown`, at most [`MAX_NODES`] schema nodes are visited and
//! [`MAX_FIELDS`] properties or variants read per node, and once about
//! [`MAX_SIGNATURE_BYTES`] are written the rest is `unknown` or `...`. The work and the answer
//! stay small whatever the schema (a few properties that each refer back to the root would
//! otherwise grow as a power of the depth).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Deepest nesting a type spells out; deeper parts are `unknown` (`Any` in Python).
pub(crate) const MAX_DEPTH: usize = 8;
/// About the longest signature or type rendered, in bytes: past it, the rest is `unknown`.
pub(crate) const MAX_SIGNATURE_BYTES: usize = 16 * 1024;
/// Most schema nodes one rendering visits.
pub(crate) const MAX_NODES: usize = 2_000;
/// Most properties, variants, enum values or tuple items read from one schema node.
pub(crate) const MAX_FIELDS: usize = 256;
/// Longest `const`/`enum` literal spelled out; a longer one is rendered as its type.
const MAX_LITERAL_BYTES: usize = 200;

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
    Renderer::new(schema, root).ts(schema, 0)
}

/// The Python type for `schema`, resolving `$ref`s against `root` (a readable approximation:
/// nested objects are `dict`), as typed wrapper modules declare it.
pub(crate) fn python_type_of(schema: &Value, root: &Value) -> String {
    Renderer::new(schema, root).py(schema, 0)
}

/// One rendering, with what it may still spend.
struct Renderer<'r> {
    root: &'r Value,
    nodes_left: usize,
    bytes_left: usize,
    /// The `$ref`s being expanded: meeting one of them again is a cycle.
    expanding: Vec<&'r str>,
}

/// What a `$ref` leads to.
enum Ref<'r> {
    Target(&'r Value),
    /// Unresolvable, or a cycle: rendered as the unknown type.
    Opaque,
}

impl<'r> Renderer<'r> {
    /// A rendering of `schema`; when it is the root itself, a `$ref` to `#` inside it is
    /// already a cycle.
    fn new(schema: &Value, root: &'r Value) -> Self {
        Renderer {
            root,
            nodes_left: MAX_NODES,
            bytes_left: MAX_SIGNATURE_BYTES,
            expanding: if std::ptr::eq(schema, root) {
                vec!["#"]
            } else {
                Vec::new()
            },
        }
    }

    fn exhausted(&self) -> bool {
        self.nodes_left == 0 || self.bytes_left == 0
    }

    /// Takes one node from the budget; false when there is none left (or too deep).
    fn enter(&mut self, depth: usize) -> bool {
        if self.exhausted() || depth > MAX_DEPTH {
            return false;
        }
        self.nodes_left -= 1;
        true
    }

    /// Spends output bytes, and hands the text back.
    fn emit(&mut self, text: impl Into<String>) -> String {
        let text = text.into();
        self.bytes_left = self.bytes_left.saturating_sub(text.len());
        text
    }

    fn follow(&mut self, reference: &'r str) -> Ref<'r> {
        // Only local references: nothing is ever fetched.
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer));
        match target {
            Some(target) if !self.expanding.contains(&reference) => Ref::Target(target),
            _ => Ref::Opaque,
        }
    }

    /// Renders `items` with `each`, at most [`MAX_FIELDS`] of them, stopping (with `...`) when
    /// the budget runs out.
    fn each(
        &mut self,
        items: impl IntoIterator<Item = &'r Value>,
        mut each: impl FnMut(&mut Self, &'r Value) -> String,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            if i == MAX_FIELDS || self.exhausted() {
                out.push("...".to_string());
                break;
            }
            out.push(each(self, item));
        }
        out
    }

    fn ts(&mut self, schema: &'r Value, depth: usize) -> String {
        let Some(obj) = schema.as_object() else {
            // `true` accepts anything, `false` nothing.
            return match schema {
                Value::Bool(false) => "never".into(),
                _ => "unknown".into(),
            };
        };
        if !self.enter(depth) {
            return "unknown".into();
        }
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            return match self.follow(reference) {
                Ref::Target(target) => {
                    self.expanding.push(reference);
                    let rendered = self.ts(target, depth + 1);
                    self.expanding.pop();
                    rendered
                }
                Ref::Opaque => "unknown".into(),
            };
        }
        if let Some(value) = obj.get("const") {
            return self.ts_literal(value);
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            let parts = self.each(values, |r, v| r.ts_literal(v));
            return union(parts);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(variants) = obj.get(key).and_then(Value::as_array) {
                let parts = self.each(variants, |r, v| r.ts(v, depth + 1));
                return union(parts);
            }
        }
        if let Some(parts) = obj.get("allOf").and_then(Value::as_array) {
            let parts = self.each(parts, |r, v| r.ts(v, depth + 1));
            return match parts.len() {
                0 => "unknown".into(),
                1 => parts.into_iter().next().unwrap_or_default(),
                _ => parts.join(" & "),
            };
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.ts_type(t, obj, depth),
            Some(Value::Array(types)) => {
                let types: Vec<&'r str> = types
                    .iter()
                    .take(MAX_FIELDS)
                    .filter_map(Value::as_str)
                    .collect();
                let parts = types.iter().map(|t| self.ts_type(t, obj, depth)).collect();
                union(parts)
            }
            _ if obj.contains_key("properties") => self.ts_type("object", obj, depth),
            _ if obj.contains_key("items") => self.ts_type("array", obj, depth),
            _ => "unknown".into(),
        }
    }

    fn ts_type(&mut self, t: &str, obj: &'r Map<String, Value>, depth: usize) -> String {
        match t {
            "string" => self.emit("string"),
            "number" | "integer" => self.emit("number"),
            "boolean" => self.emit("boolean"),
            "null" => self.emit("null"),
            "array" => match obj.get("items").or_else(|| obj.get("prefixItems")) {
                Some(Value::Array(tuple)) => {
                    let parts = self.each(tuple, |r, v| r.ts(v, depth + 1));
                    format!("[{}]", parts.join(", "))
                }
                Some(items) => {
                    let inner = self.ts(items, depth + 1);
                    if inner.contains(' ') {
                        format!("Array<{inner}>")
                    } else {
                        format!("{inner}[]")
                    }
                }
                None => "unknown[]".into(),
            },
            "object" => self.ts_object(obj, depth),
            _ => "unknown".into(),
        }
    }

    fn ts_object(&mut self, obj: &'r Map<String, Value>, depth: usize) -> String {
        let required: BTreeSet<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .take(MAX_FIELDS)
                    .filter_map(Value::as_str)
                    .collect()
            })
            .unwrap_or_default();
        let mut fields: Vec<String> = Vec::new();
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (i, (name, prop)) in props.iter().enumerate() {
                if i == MAX_FIELDS || self.exhausted() {
                    fields.push("...".into());
                    break;
                }
                let key = if is_identifier(name) {
                    name.clone()
                } else {
                    serde_json::to_string(name).unwrap_or_default()
                };
                let q = if required.contains(name.as_str()) {
                    ""
                } else {
                    "?"
                };
                let key = self.emit(format!("{key}{q}: "));
                fields.push(format!("{key}{}", self.ts(prop, depth + 1)));
            }
        }
        match obj.get("additionalProperties") {
            Some(Value::Bool(false)) | None => {}
            Some(Value::Bool(true)) => fields.push("[key: string]: unknown".into()),
            Some(extra) => {
                let inner = self.ts(extra, depth + 1);
                fields.push(format!("[key: string]: {inner}"));
            }
        }
        if fields.is_empty() {
            return "{}".into();
        }
        format!("{{ {} }}", fields.join("; "))
    }

    fn ts_literal(&mut self, value: &Value) -> String {
        match value {
            Value::String(s) if s.len() > MAX_LITERAL_BYTES => self.emit("string"),
            Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => {
                self.emit(value.to_string())
            }
            _ => "unknown".into(),
        }
    }

    fn py(&mut self, schema: &'r Value, depth: usize) -> String {
        let Some(obj) = schema.as_object() else {
            return "Any".into();
        };
        if !self.enter(depth) {
            return "Any".into();
        }
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            return match self.follow(reference) {
                Ref::Target(target) => {
                    self.expanding.push(reference);
                    let rendered = self.py(target, depth + 1);
                    self.expanding.pop();
                    rendered
                }
                Ref::Opaque => "Any".into(),
            };
        }
        if let Some(v) = obj.get("const") {
            return py_literal(v).map_or("Any".into(), |l| self.emit(format!("Literal[{l}]")));
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            let lits: Option<Vec<String>> =
                values.iter().take(MAX_FIELDS + 1).map(py_literal).collect();
            return match lits {
                Some(l) if !l.is_empty() && l.len() <= MAX_FIELDS => {
                    self.emit(format!("Literal[{}]", l.join(", ")))
                }
                _ => "Any".into(),
            };
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(variants) = obj.get(key).and_then(Value::as_array) {
                let parts = self.each(variants, |r, v| r.py(v, depth + 1));
                return py_union(parts);
            }
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.py_single(t, obj, depth),
            Some(Value::Array(ts)) => {
                let types: Vec<&'r str> = ts
                    .iter()
                    .take(MAX_FIELDS)
                    .filter_map(Value::as_str)
                    .collect();
                let parts = types
                    .iter()
                    .map(|t| self.py_single(t, obj, depth))
                    .collect();
                py_union(parts)
            }
            _ if obj.contains_key("properties") => self.emit("dict[str, Any]"),
            _ => "Any".into(),
        }
    }

    fn py_single(&mut self, t: &str, obj: &'r Map<String, Value>, depth: usize) -> String {
        match t {
            "string" => self.emit("str"),
            "integer" => self.emit("int"),
            "number" => self.emit("float"),
            "boolean" => self.emit("bool"),
            "null" => self.emit("None"),
            "array" => match obj.get("items") {
                Some(items @ Value::Object(_)) => format!("list[{}]", self.py(items, depth + 1)),
                _ => self.emit("list[Any]"),
            },
            "object" => self.emit("dict[str, Any]"),
            _ => "Any".into(),
        }
    }
}

fn py_literal(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if s.len() <= MAX_LITERAL_BYTES => Some(v.to_string()),
        Value::Bool(true) => Some("True".into()),
        Value::Bool(false) => Some("False".into()),
        Value::Null => Some("None".into()),
        Value::Number(n) if n.is_i64() => Some(n.to_string()),
        _ => None,
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

fn py_union(mut parts: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    parts.retain(|p| seen.insert(p.clone()));
    if parts.iter().any(|p| p == "Any" || p == "...") || parts.is_empty() {
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
        assert_eq!(python_type_of(&root, &root), "Any");
    }

    /// An object whose `k` properties each refer back to the root: without a bound its type
    /// grows as `k` to the power of the depth.
    fn self_referring(k: usize) -> Map<String, Value> {
        let props: Map<String, Value> = (0..k)
            .map(|i| (format!("p{i:02}"), json!({"$ref": "#"})))
            .collect();
        obj(json!({"type": "object", "properties": props, "required": ["p00"]}))
    }

    #[test]
    fn a_self_referring_schema_renders_small_and_names_the_cycle() {
        let input = self_referring(40);
        let sig = signature("t", &input, Some(&input));
        assert!(sig.len() < 2 * MAX_SIGNATURE_BYTES, "{} bytes", sig.len());
        // The cycle is cut at once: each property is the unknown type.
        assert!(
            sig.starts_with("function t(args: { p00: unknown; p01?: unknown;"),
            "{sig}"
        );
        let root = Value::Object(input);
        assert_eq!(python_type_of(&root, &root), "dict[str, Any]");
    }

    #[test]
    fn a_wide_and_deep_schema_without_cycles_is_cut_by_the_budget() {
        // Ten levels of definitions, each with 30 properties referring to the next level: no
        // cycle, 30^10 paths.
        let mut defs = Map::new();
        for level in 0..10 {
            let next = if level == 9 {
                json!({"type": "string"})
            } else {
                json!({"$ref": format!("#/$defs/l{}", level + 1)})
            };
            let props: Map<String, Value> = (0..30)
                .map(|i| (format!("field_{i}"), next.clone()))
                .collect();
            defs.insert(
                format!("l{level}"),
                json!({"type": "object", "properties": props}),
            );
        }
        let input = obj(json!({"$defs": defs, "$ref": "#/$defs/l0"}));
        let sig = signature("wide", &input, None);
        assert!(sig.len() < 2 * MAX_SIGNATURE_BYTES, "{} bytes", sig.len());
        assert!(sig.contains("..."), "the cut is visible");
        let root = Value::Object(input.clone());
        let variants: Vec<Value> = (0..50).map(|_| json!({"$ref": "#/$defs/u"})).collect();
        let union_root = json!({"$defs": {"u": {"anyOf": variants}}, "$ref": "#/$defs/u"});
        assert_eq!(python_type_of(&union_root, &union_root), "Any");
        assert!(python_type_of(&root, &root).len() < 64);
    }

    #[test]
    fn huge_enums_and_literals_stay_bounded() {
        let values: Vec<Value> = (0..100_000).map(|i| json!(format!("v{i}"))).collect();
        let schema = json!({"enum": values});
        let ts = type_of(&schema, &schema);
        assert!(
            ts.len() < 2 * MAX_SIGNATURE_BYTES && ts.ends_with("| ..."),
            "{}",
            ts.len()
        );
        assert_eq!(python_type_of(&schema, &schema), "Any");
        let long = json!({"const": "x".repeat(10_000)});
        assert_eq!(type_of(&long, &long), "string");
    }
}
