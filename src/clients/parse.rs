//! One client config file to a JSON value: its text (a missing file is no file; a byte-order
//! mark skipped, an empty file an empty config, UTF-8 required), parsed as JSON with comments
//! ([`jsonc_options`]) or as TOML (kept in the file's order), the top level an object; and the
//! error that names the file (and line and column) when it cannot be used. Reads only.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::table::Format;

/// A config file that exists but cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The explicit config file does not exist.
    #[error("MCP config file {} (MCP_CONFIG_PATH) does not exist", .path.display())]
    NotFound { path: PathBuf },
    /// The file exists but cannot be read (permissions, a directory, not UTF-8).
    #[error("cannot read MCP config file {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file is not valid JSON (comments and trailing commas allowed), or for Codex not
    /// valid TOML.
    #[error("cannot parse MCP config file {} at line {line}, column {column}: {message}", .path.display())]
    Parse {
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// 1-based, in characters.
        column: usize,
        message: String,
    },
    /// The file is JSON but not shaped like a config (e.g. `mcpServers` is an array).
    #[error("unexpected structure in MCP config file {}: {message}", .path.display())]
    Shape { path: PathBuf, message: String },
}

impl DiscoveryError {
    /// The file the error is about.
    pub(crate) fn path(&self) -> &Path {
        match self {
            DiscoveryError::NotFound { path }
            | DiscoveryError::Read { path, .. }
            | DiscoveryError::Parse { path, .. }
            | DiscoveryError::Shape { path, .. } => path,
        }
    }
}

/// What the clients' JSON files may hold: comments and trailing commas (VS Code writes them),
/// nothing looser. `setup` edits the same files with the same options.
pub(crate) fn jsonc_options() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// A file's text; `Ok(None)` when it does not exist.
pub(crate) fn read_text(path: &Path) -> io::Result<Option<String>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the file is not valid UTF-8"))
}

/// A parsed config file: its root object, and for TOML the order of its tables.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub root: Value,
    pub toml: Option<toml_edit::DocumentMut>,
}

/// Reads and parses a config file; `Ok(None)` when it does not exist.
pub(crate) fn read_config(path: &Path, format: Format) -> Result<Option<Parsed>, DiscoveryError> {
    let text = match read_text(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(source) => {
            return Err(DiscoveryError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let parse_error = |line, column, message| DiscoveryError::Parse {
        path: path.to_owned(),
        line,
        column,
        message,
    };
    let (root, toml) = match format {
        Format::Toml => {
            let doc = text.parse::<toml_edit::DocumentMut>().map_err(|e| {
                let at = e.span().map_or(0, |span| span.start);
                let before = &text[..at.min(text.len())];
                parse_error(
                    before.matches('\n').count() + 1,
                    before.rsplit('\n').next().unwrap_or("").chars().count() + 1,
                    e.message().trim().to_owned(),
                )
            })?;
            let root = toml_item_to_json(doc.as_item()).unwrap_or(Value::Null);
            (root, Some(doc))
        }
        Format::Jsonc => {
            let root = jsonc_parser::parse_to_serde_value(text, &jsonc_options()).map_err(|e| {
                parse_error(e.line_display(), e.column_display(), e.kind().to_string())
            })?;
            (root, None)
        }
    };
    match root {
        Value::Null => Ok(Some(Parsed {
            root: Value::Object(Map::new()),
            toml,
        })),
        Value::Object(_) => Ok(Some(Parsed { root, toml })),
        other => Err(DiscoveryError::Shape {
            path: path.to_owned(),
            message: format!(
                "expected an object at the top level, found {}",
                type_name(&other)
            ),
        }),
    }
}

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A TOML item as JSON (`None` for an empty item).
pub(crate) fn toml_item_to_json(item: &toml_edit::Item) -> Option<Value> {
    match item {
        toml_edit::Item::Value(v) => Some(toml_value_to_json(v)),
        toml_edit::Item::Table(t) => Some(Value::Object(
            t.iter()
                .filter_map(|(k, v)| Some((k.to_string(), toml_item_to_json(v)?)))
                .collect(),
        )),
        toml_edit::Item::ArrayOfTables(a) => Some(Value::Array(
            a.iter()
                .map(|t| toml_item_to_json(&toml_edit::Item::Table(t.clone())))
                .collect::<Option<Vec<_>>>()?,
        )),
        toml_edit::Item::None => None,
    }
}

fn toml_value_to_json(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match v {
        T::String(s) => Value::String(s.value().clone()),
        T::Integer(i) => Value::from(*i.value()),
        T::Float(f) => serde_json::Number::from_f64(*f.value())
            .map(Value::Number)
            .unwrap_or(Value::Null),
        T::Boolean(b) => Value::Bool(*b.value()),
        T::Datetime(d) => Value::String(d.value().to_string()),
        T::Array(a) => Value::Array(a.iter().map(toml_value_to_json).collect()),
        T::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_string(), toml_value_to_json(v)))
                .collect(),
        ),
    }
}

/// Strings as they are; numbers and booleans as JSON writes them.
pub(crate) fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}
