//! The one reader of client config files, for discovery and `setup` alike: a file's text (a
//! byte-order mark skipped, an empty file an empty config), parsed as JSON with comments
//! ([`jsonc_options`]) or as TOML; the key paths of the table walked; a file's servers turned
//! into raw entries ([`RawEntry`]: name, definition in the standard form, the switch on the
//! entry, whether it is this server's own entry, the file it came from); and the lists that
//! switch servers off ([`Lists`]).
//!
//! Raw entries are what each file says on its own. Merging them (precedence, expansion,
//! validity) is discovery's; editing files is `setup`'s. Nothing here writes.

use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::{Map, Value};

use super::dialects;
use super::discovery::DiscoveryError;
use super::launch;
use super::places::{Layout, Places, ServerFile};
use super::table::{Client, Format, LISTS, ListSwitch, Meaning, Seg, SourceKind};

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
    toml: Option<toml_edit::DocumentMut>,
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

/// Where a key path stopped: step `step` holds `found` where an object was needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stuck {
    pub step: usize,
    pub found: &'static str,
}

/// The value at `keys` (`at` resolved, see [`Places::key_path`]); `None` when a step is
/// missing or `null`. Every step but the last must be an object, and this project's entry
/// must be one even when `null`.
pub(crate) fn walk<'v>(
    root: &'v Value,
    at: &[Seg],
    keys: &[String],
) -> Result<Option<&'v Value>, Stuck> {
    let mut here = root;
    for (step, key) in keys.iter().enumerate() {
        let next = match here.get(key) {
            None => return Ok(None),
            Some(next) => next,
        };
        let last = step + 1 == keys.len();
        if last {
            return Ok((!next.is_null()).then_some(next));
        }
        match next {
            Value::Object(_) => here = next,
            Value::Null if at.get(step) != Some(&Seg::ThisProject) => return Ok(None),
            other => {
                return Err(Stuck {
                    step,
                    found: type_name(other),
                });
            }
        }
    }
    Ok(Some(here))
}

/// The servers at `keys`, in the file's order; `None` when there is no such key.
pub(crate) fn servers_in<'p>(
    parsed: &'p Parsed,
    at: &[Seg],
    keys: &[String],
) -> Result<Option<Vec<(&'p String, &'p Value)>>, Stuck> {
    let Some(found) = walk(&parsed.root, at, keys)? else {
        return Ok(None);
    };
    let Value::Object(map) = found else {
        return Err(Stuck {
            step: keys.len() - 1,
            found: type_name(found),
        });
    };
    let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
    if let Some(order) = parsed.toml.as_ref().and_then(|doc| toml_order(doc, keys)) {
        let rank = |k: &str| order.iter().position(|o| o == k).unwrap_or(order.len());
        pairs.sort_by_key(|(k, _)| rank(k));
    }
    Ok(Some(pairs))
}

/// The order of the keys of the table at `keys` as the TOML file writes them.
fn toml_order(doc: &toml_edit::DocumentMut, keys: &[String]) -> Option<Vec<String>> {
    let mut table = doc.as_table() as &dyn toml_edit::TableLike;
    for key in keys {
        table = table.get(key)?.as_table_like()?;
    }
    Some(table.iter().map(|(k, _)| k.to_owned()).collect())
}

/// One server definition as its file has it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawEntry {
    pub name: String,
    /// The definition in the standard form (see [`dialects`]); anything but an object as
    /// written.
    pub definition: Value,
    /// The file, and its row, it came from.
    pub file: ServerFile,
    /// The switch on the entry that turns it off: `"disabled": true` or `"enabled": false`.
    pub flag_off: Option<&'static str>,
    /// What makes it this server's own entry (as written, see [`launch::self_entry`]).
    pub self_hit: Option<String>,
}

impl RawEntry {
    pub fn new(name: &str, value: &Value, file: &ServerFile, self_names: &[String]) -> RawEntry {
        let (definition, flag_off, self_hit) = match value {
            Value::Object(def) => {
                let def = dialects::standard_form(file.row().dialect, def);
                let flag_off = if def.get("disabled") == Some(&Value::Bool(true)) {
                    Some("\"disabled\": true")
                } else if def.get("enabled") == Some(&Value::Bool(false)) {
                    Some("\"enabled\": false")
                } else {
                    None
                };
                let self_hit = launch::self_entry(name, &def, self_names);
                (Value::Object(def), flag_off, self_hit)
            }
            other => (other.clone(), None, None),
        };
        RawEntry {
            name: name.to_owned(),
            definition,
            file: file.clone(),
            flag_off,
            self_hit,
        }
    }
}

/// The servers of one file, for `setup` (none when it does not exist). A step of the key path
/// that is not an object means no servers; servers that are not an object are an error.
pub(crate) fn entries(
    file: &ServerFile,
    self_names: &[String],
) -> Result<Vec<RawEntry>, DiscoveryError> {
    let row = file.row();
    let Some(parsed) = read_config(&file.path, row.format())? else {
        return Ok(Vec::new());
    };
    let keys = match &file.layout {
        Layout::Json(keys) => keys.clone(),
        Layout::Toml(key) => vec![key.clone()],
    };
    match servers_in(&parsed, row.servers[0], &keys) {
        Ok(found) => Ok(found
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| RawEntry::new(name, value, file, self_names))
            .collect()),
        Err(stuck) if stuck.step + 1 < keys.len() => Ok(Vec::new()),
        Err(_) => Err(DiscoveryError::Shape {
            path: file.path.clone(),
            message: format!("\"{}\" must be an object", keys.join(".")),
        }),
    }
}

/// A list of [`LISTS`] present in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Active {
    switch: &'static ListSwitch,
    path: PathBuf,
    names: Vec<String>,
}

/// The lists that switch servers off, as found on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lists(Vec<Active>);

impl Lists {
    /// Reads `switches` from their files: `load` gives a file's contents, `warn` hears about
    /// a list (or a step to it) of the wrong type.
    pub fn collect(
        places: &Places,
        switches: impl Iterator<Item = &'static ListSwitch>,
        mut load: impl FnMut(&Path) -> Option<Rc<Parsed>>,
        mut warn: impl FnMut(String),
    ) -> Lists {
        let mut out = Vec::new();
        for switch in switches {
            let path = places.resolve(switch.file);
            let Some(parsed) = load(&path) else {
                continue;
            };
            let mut names: Option<Vec<String>> = None;
            for at in switch.at {
                let keys = places.key_path(at, Some(&parsed.root));
                let found = match walk(&parsed.root, at, &keys) {
                    Ok(found) => found,
                    Err(stuck) => {
                        warn(stuck_message(at, &keys, stuck, &path));
                        continue;
                    }
                };
                match found {
                    None => {}
                    Some(Value::Array(items)) => names
                        .get_or_insert_with(Vec::new)
                        .extend(items.iter().filter_map(|n| n.as_str().map(str::to_owned))),
                    Some(other) => warn(format!(
                        "ignoring \"{}\" in {}: expected an array of names, found {}",
                        spelling(at, &keys),
                        path.display(),
                        type_name(other)
                    )),
                }
            }
            if let Some(names) = names {
                out.push(Active {
                    switch,
                    path,
                    names,
                });
            }
        }
        Lists(out)
    }

    /// The lists of one client, for `setup` (files that cannot be read are skipped).
    pub fn of_client(places: &Places, client: Client) -> Lists {
        Lists::collect(
            places,
            LISTS.iter().filter(|l| l.client == client),
            |path| read_config(path, Format::Jsonc).ok().flatten().map(Rc::new),
            |_| {},
        )
    }

    /// The names of the lists present: `every file | .mcp.json only | allow lists`.
    #[cfg(test)]
    pub fn summary(&self) -> String {
        use super::table::Reach;
        let mut every = Vec::new();
        let mut rows = Vec::new();
        let mut allowed = Vec::new();
        for list in &self.0 {
            match (list.switch.meaning, list.switch.reach) {
                (Meaning::Allows, _) => allowed.push(list.names.clone()),
                (Meaning::Excludes, Reach::Rows(_)) => rows.extend(list.names.clone()),
                (Meaning::Excludes, _) => every.extend(list.names.clone()),
            }
        }
        every.sort();
        rows.sort();
        format!("{every:?} | {rows:?} | {allowed:?}")
    }

    /// Why a definition of `name` from `kind` is off through a list, if it is.
    pub fn off(&self, kind: SourceKind, name: &str) -> Option<String> {
        self.0.iter().find_map(|list| {
            if !list.switch.reaches(kind) {
                return None;
            }
            let named = list.names.iter().any(|n| n == name);
            match list.switch.meaning {
                Meaning::Excludes if named => Some(format!(
                    "listed in \"{}\" in {}",
                    list.switch.name,
                    list.path.display()
                )),
                Meaning::Allows if !named => Some(format!(
                    "not in \"{}\" in {}",
                    list.switch.name,
                    list.path.display()
                )),
                _ => None,
            }
        })
    }
}

/// How messages name the list at `keys`: its keys after this project's entry, dotted.
fn spelling(at: &[Seg], keys: &[String]) -> String {
    let after = at
        .iter()
        .rposition(|s| *s == Seg::ThisProject)
        .map_or(0, |i| i + 1);
    keys[after..].join(".")
}

/// The warning for a key path that stopped at something that is not an object.
pub(crate) fn stuck_message(at: &[Seg], keys: &[String], stuck: Stuck, path: &Path) -> String {
    match at.get(stuck.step) {
        Some(Seg::ThisProject) => format!(
            "ignoring this project's entry in {}: expected an object, found {}",
            path.display(),
            stuck.found
        ),
        _ => format!(
            "ignoring \"{}\" in {}: expected an object, found {}",
            keys[stuck.step],
            path.display(),
            stuck.found
        ),
    }
}
