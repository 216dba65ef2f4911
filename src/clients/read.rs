//! The one reader of client config files, for discovery and `setup` alike: the key paths of
//! the table walked in a parsed file (parsing is `parse`'s); a file's servers turned into raw
//! entries ([`RawEntry`]: name, definition in the standard form, the switch on the entry,
//! whether it is this server's own entry, the file it came from); and the lists that switch
//! servers off ([`Lists`]).
//!
//! Raw entries are what each file says on its own. Merging them (precedence, expansion,
//! validity) is discovery's; editing files is `setup`'s. Nothing here writes.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::Value;

use super::dialects;
use super::launch;
use super::parse::{DiscoveryError, Parsed, read_config, type_name};
use super::places::{Layout, Places, ServerFile};
use super::table::{Client, Format, LISTS, ListSwitch, Meaning, Seg, SourceKind};

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
    pub(crate) fn new(
        name: &str,
        value: &Value,
        file: &ServerFile,
        self_names: &[String],
    ) -> RawEntry {
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
    pub(crate) fn collect(
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
    pub(crate) fn of_client(places: &Places, client: Client) -> Lists {
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
    pub(crate) fn off(&self, kind: SourceKind, name: &str) -> Option<String> {
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
