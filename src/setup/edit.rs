//! Surgical edits of client config files: JSON with comments (through `jsonc-parser`'s concrete
//! syntax tree, so comments, key order, indentation and every other entry stay byte for byte) and
//! TOML (through `toml_edit`, which keeps formatting the same way). Pure text in, text out: no
//! file access here.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use crate::clients::parse::toml_item_to_json;

/// A config file that cannot be parsed or has an unexpected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// A syntax error, 1-based line and column.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// Valid syntax, but something that must be an object (or array) is not.
    #[error("{0}")]
    Shape(String),
}

/// What `jsonc-parser` accepts: JSON with comments and trailing commas (what VS Code writes),
/// exactly as discovery reads these files.
fn parse_options() -> ParseOptions {
    crate::clients::parse::jsonc_options()
}

const BOM: char = '\u{feff}';

/// Reads JSON text as a value (an empty file is an empty object).
pub(crate) fn parse_json(text: &str) -> Result<Value, EditError> {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    let value = jsonc_parser::parse_to_serde_value(text, &parse_options()).map_err(|e| {
        EditError::Syntax {
            line: e.line_display(),
            column: e.column_display(),
            message: e.kind().to_string(),
        }
    })?;
    match value {
        Value::Null => Ok(Value::Object(Default::default())),
        Value::Object(_) => Ok(value),
        _ => Err(EditError::Shape(
            "expected an object at the top level".into(),
        )),
    }
}

/// A parsed JSON file being edited. `finish` gives the new text.
pub(crate) struct JsonDoc {
    root: CstRootNode,
    bom: bool,
    /// End the text with a newline (a new file, or the old text had one).
    newline: bool,
}

impl JsonDoc {
    pub(crate) fn parse(text: &str) -> Result<Self, EditError> {
        // Validate (and get a good error) with the value parser first.
        parse_json(text)?;
        let bom = text.starts_with(BOM);
        let body = text.strip_prefix(BOM).unwrap_or(text);
        let root = CstRootNode::parse(body, &parse_options()).map_err(|e| EditError::Syntax {
            line: e.line_display(),
            column: e.column_display(),
            message: e.kind().to_string(),
        })?;
        let newline = body.trim().is_empty() || body.ends_with('\n');
        Ok(JsonDoc { root, bom, newline })
    }

    pub(crate) fn finish(self) -> String {
        let mut text = self.root.to_string();
        if self.newline && self.root.value().is_some() && !text.ends_with('\n') {
            text.push('\n');
        }
        if self.bom {
            text.insert(0, BOM);
        }
        text
    }

    /// The object at `path` (keys from the root), created (empty) where missing.
    fn object_at(&self, path: &[&str]) -> Result<CstObject, EditError> {
        let mut obj = self.root.object_value_or_set();
        let mut walked = String::new();
        for key in path {
            walked.push_str(&format!("[{key:?}]"));
            obj = obj
                .object_value_or_create(key)
                .ok_or_else(|| EditError::Shape(format!("{walked} must be an object")))?;
        }
        Ok(obj)
    }

    /// Sets `path[..] / name` to `value`. Returns whether anything changed.
    pub(crate) fn set_entry(
        &self,
        path: &[&str],
        name: &str,
        value: &Value,
    ) -> Result<bool, EditError> {
        let obj = self.object_at(path)?;
        match obj.get(name) {
            Some(prop) => {
                if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(value) {
                    return Ok(false);
                }
                prop.set_value(to_input(value));
            }
            None => {
                obj.append(name, to_input(value));
            }
        }
        Ok(true)
    }

    /// Adds the missing `names` to the array `path[..] / key` (created if missing). Returns the
    /// names added.
    pub(crate) fn add_names(
        &self,
        path: &[&str],
        key: &str,
        names: &[String],
    ) -> Result<Vec<String>, EditError> {
        let obj = self.object_at(path)?;
        let existed = obj.get(key).is_some();
        let array = obj
            .array_value_or_create(key)
            .ok_or_else(|| EditError::Shape(format!("\"{key}\" must be an array")))?;
        let present: Vec<String> = array
            .elements()
            .iter()
            .filter_map(|e| e.to_serde_value())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        let mut added = Vec::new();
        for name in names {
            if !present.contains(name) && !added.contains(name) {
                array.append(CstInputValue::String(name.clone()));
                added.push(name.clone());
            }
        }
        if added.is_empty() && !existed {
            // Created just now and nothing to add: leave no empty array behind.
            if let Some(prop) = obj.get(key) {
                prop.remove();
            }
        }
        Ok(added)
    }

    /// Removes the entry `path[..] / name` (with the comments on its lines). Returns whether it
    /// was there.
    pub(crate) fn remove_entry(&self, path: &[&str], name: &str) -> Result<bool, EditError> {
        let obj = self.object_at(path)?;
        match obj.get(name) {
            Some(prop) => {
                prop.remove();
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Sets `"disabled": true` on the entry `path[..] / name`. Returns whether it changed.
    pub(crate) fn disable_entry(&self, path: &[&str], name: &str) -> Result<bool, EditError> {
        let obj = self.object_at(path)?;
        let Some(entry) = obj.object_value(name) else {
            return Err(EditError::Shape(format!(
                "server \"{name}\" is not an object"
            )));
        };
        match entry.get("disabled") {
            Some(prop)
                if prop.value().and_then(|v| v.to_serde_value()) == Some(Value::Bool(true)) =>
            {
                Ok(false)
            }
            Some(prop) => {
                prop.set_value(CstInputValue::Bool(true));
                Ok(true)
            }
            None => {
                entry.append("disabled", CstInputValue::Bool(true));
                Ok(true)
            }
        }
    }
}

/// A serde value as input for the syntax tree.
fn to_input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_input).collect()),
        Value::Object(map) => CstInputValue::Object(
            ordered(map)
                .into_iter()
                .map(|(k, v)| (k.clone(), to_input(v)))
                .collect(),
        ),
    }
}

/// Keys in the order people write server entries (`type`, `command`, `args`, `env`, ...), then
/// the rest alphabetically.
fn ordered(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    const FIRST: &[&str] = &["type", "command", "args", "env", "cwd", "url", "headers"];
    let rank = |k: &str| FIRST.iter().position(|f| *f == k).unwrap_or(FIRST.len());
    let mut items: Vec<(&String, &Value)> = map.iter().collect();
    items.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then_with(|| a.0.cmp(b.0)));
    items
}

/// A parsed TOML file being edited (Codex's `config.toml`).
pub(crate) struct TomlDoc {
    doc: toml_edit::DocumentMut,
}

impl TomlDoc {
    pub(crate) fn parse(text: &str) -> Result<Self, EditError> {
        text.parse::<toml_edit::DocumentMut>()
            .map(|doc| TomlDoc { doc })
            .map_err(|e| toml_error(text, &e))
    }

    pub(crate) fn finish(self) -> String {
        self.doc.to_string()
    }

    /// The tables under `[table]` as JSON values, by name.
    pub(crate) fn tables(&self, table: &str) -> Vec<(String, Value)> {
        let Some(item) = self.doc.get(table).and_then(|t| t.as_table_like()) else {
            return Vec::new();
        };
        item.iter()
            .filter_map(|(name, item)| Some((name.to_string(), toml_item_to_json(item)?)))
            .collect()
    }

    /// Sets `[table.name]` to the string keys of `value` (an object of strings and arrays of
    /// strings). Returns whether anything changed.
    pub(crate) fn set_entry(
        &mut self,
        table: &str,
        name: &str,
        value: &Value,
    ) -> Result<bool, EditError> {
        let existing = self.tables(table).into_iter().find(|(n, _)| n == name);
        if existing.as_ref().map(|(_, v)| v) == Some(value) {
            return Ok(false);
        }
        let parent = self
            .doc
            .entry(table)
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_mut()
            .ok_or_else(|| EditError::Shape(format!("\"{table}\" must be a table")))?;
        let mut entry = toml_edit::Table::new();
        if let Value::Object(map) = value {
            for (k, v) in ordered(map) {
                if let Some(item) = json_to_toml(v) {
                    entry.insert(k, toml_edit::Item::Value(item));
                }
            }
        }
        parent.insert(name, toml_edit::Item::Table(entry));
        Ok(true)
    }

    /// Sets `enabled = false` in `[table.name]`. Returns whether it changed.
    pub(crate) fn disable_entry(&mut self, table: &str, name: &str) -> Result<bool, EditError> {
        let entry = self
            .doc
            .get_mut(table)
            .and_then(|t| t.get_mut(name))
            .and_then(|t| t.as_table_like_mut())
            .ok_or_else(|| EditError::Shape(format!("[{table}.{name}] must be a table")))?;
        if entry.get("enabled").and_then(|v| v.as_bool()) == Some(false) {
            return Ok(false);
        }
        entry.insert("enabled", toml_edit::value(false));
        Ok(true)
    }
}

fn toml_error(text: &str, e: &toml_edit::TomlError) -> EditError {
    let (line, column) = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            (line, column)
        }
        None => (1, 1),
    };
    EditError::Syntax {
        line,
        column,
        message: e.message().trim().to_string(),
    }
}

fn json_to_toml(v: &Value) -> Option<toml_edit::Value> {
    Some(match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::Array(items) => {
            let mut a = toml_edit::Array::new();
            for item in items {
                a.push(json_to_toml(item)?);
            }
            toml_edit::Value::Array(a)
        }
        Value::Object(map) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, v) in map {
                t.insert(k, json_to_toml(v)?);
            }
            toml_edit::Value::InlineTable(t)
        }
        Value::Null => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CLAUDE: &str = r#"{
  "numStartups": 12,
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"]
    }
  },
  "projects": {}
}
"#;

    #[test]
    fn appending_an_entry_keeps_everything_else() {
        let doc = JsonDoc::parse(CLAUDE).unwrap();
        let entry = json!({"command": "/opt/code-executor", "args": ["serve"]});
        assert!(
            doc.set_entry(&["mcpServers"], "code-executor", &entry)
                .unwrap()
        );
        let out = doc.finish();
        assert!(
            out.starts_with(&CLAUDE[..CLAUDE.find("    }\n  },").unwrap()]),
            "{out}"
        );
        let v = parse_json(&out).unwrap();
        assert_eq!(v["mcpServers"]["code-executor"], entry);
        assert_eq!(v["numStartups"], 12);
        // Idempotent.
        let doc = JsonDoc::parse(&out).unwrap();
        assert!(
            !doc.set_entry(&["mcpServers"], "code-executor", &entry)
                .unwrap()
        );
        assert_eq!(doc.finish(), out);
    }

    #[test]
    fn comments_survive_and_names_are_added_once() {
        let text = "// user settings\n{\n  // servers\n  \"servers\": {\n    \"a\": {\"command\": \"x\"}, // trailing\n  },\n}\n";
        let doc = JsonDoc::parse(text).unwrap();
        let added = doc
            .add_names(&["mcp"], "excluded", &["a".to_string(), "a".to_string()])
            .unwrap();
        assert_eq!(added, ["a"]);
        assert!(doc.disable_entry(&["servers"], "a").unwrap());
        let out = doc.finish();
        assert!(
            out.contains("// user settings") && out.contains("// trailing"),
            "{out}"
        );
        let v = parse_json(&out).unwrap();
        assert_eq!(v["mcp"]["excluded"], json!(["a"]));
        assert_eq!(v["servers"]["a"]["disabled"], true);
    }

    #[test]
    fn unchanged_text_stays_byte_for_byte() {
        let text = "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"disabled\": true}}, \"l\": []}";
        let doc = JsonDoc::parse(text).unwrap();
        assert!(!doc.disable_entry(&["mcpServers"], "a").unwrap());
        assert!(doc.add_names(&[], "l", &[]).unwrap().is_empty());
        assert_eq!(doc.finish(), text);
    }

    #[test]
    fn syntax_errors_have_a_line() {
        let err = JsonDoc::parse("{\n  \"a\": 1,\n  \"b\": ]\n}")
            .err()
            .unwrap();
        assert!(matches!(err, EditError::Syntax { line: 3, .. }), "{err:?}");
        let err = TomlDoc::parse("[mcp_servers.x]\ncommand = \"a\"\nargs = [\n")
            .err()
            .unwrap();
        assert!(matches!(err, EditError::Syntax { .. }), "{err:?}");
    }

    #[test]
    fn toml_entries_are_added_and_disabled() {
        let text = "model = \"o3\"\n\n# my servers\n[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\n";
        let mut doc = TomlDoc::parse(text).unwrap();
        let entry = json!({"command": "/opt/code-executor", "args": ["serve"]});
        assert!(
            doc.set_entry("mcp_servers", "code-executor", &entry)
                .unwrap()
        );
        assert!(doc.disable_entry("mcp_servers", "git").unwrap());
        let out = doc.finish();
        assert!(
            out.starts_with("model = \"o3\"\n\n# my servers\n[mcp_servers.git]\n"),
            "{out}"
        );
        assert!(out.contains("[mcp_servers.code-executor]\ncommand = \"/opt/code-executor\"\nargs = [\"serve\"]\n"), "{out}");
        let mut again = TomlDoc::parse(&out).unwrap();
        assert!(
            !again
                .set_entry("mcp_servers", "code-executor", &entry)
                .unwrap()
        );
        assert!(!again.disable_entry("mcp_servers", "git").unwrap());
        assert_eq!(again.finish(), out);
    }
}
