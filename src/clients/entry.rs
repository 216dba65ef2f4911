//! One server definition, in the standard form and already known to be enabled, turned into
//! a [`Transport`]: the stdio or HTTP (streamable, or legacy SSE with `"type": "sse"`) fields read, type-checked and expanded (through
//! [`super::expand`], every problem of the entry collected into one error), a relative `cwd`
//! resolved against the file's directory. Knows nothing of files, precedence or switches.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::expand::{self, Vars};
use super::parse::{scalar_string, type_name};
use super::spec::{ConfigSource, Transport};

/// Builds the transport of an enabled entry, expanding variables.
pub(crate) fn transport(
    name: &str,
    obj: &Map<String, Value>,
    source: &ConfigSource,
    base_dir: &Path,
    vars: Vars<'_>,
    warnings: &mut Vec<String>,
) -> Result<Transport, String> {
    let present = |key: &str| obj.get(key).is_some_and(|v| !v.is_null());
    let (is_http, is_sse) = match obj.get("type") {
        None | Some(Value::Null) => {
            if present("command") {
                if present("url") {
                    warnings.push(format!(
                        "server \"{name}\" in {source} has both \"command\" and \"url\" and no \"type\"; using \"command\""
                    ));
                }
                (false, false)
            } else if present("url") {
                (true, false)
            } else {
                return Err(
                    "needs a \"command\" (stdio server) or a \"url\" (HTTP server)".to_owned(),
                );
            }
        }
        Some(Value::String(ty)) => match ty.to_ascii_lowercase().as_str() {
            "stdio" => (false, false),
            "http" | "streamable-http" | "streamablehttp" | "streamable_http" => (true, false),
            "sse" => (true, true),
            _ => {
                return Err(format!(
                    "unknown \"type\" {ty:?}; expected \"stdio\", \"http\", \"streamable-http\" or \"sse\""
                ));
            }
        },
        Some(other) => {
            return Err(format!(
                "\"type\" must be a string, found {}",
                type_name(other)
            ));
        }
    };

    let mut f = Fields {
        obj,
        vars,
        problems: Vec::new(),
    };
    if is_http {
        let url = f.required_string("url", "an HTTP server needs a \"url\"")?;
        let headers = f.string_map("headers");
        f.finish()?;
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err("url: must start with http:// or https://".to_owned());
        }
        return Ok(if is_sse {
            Transport::Sse { url, headers }
        } else {
            Transport::Http { url, headers }
        });
    }

    let command = f.required_string("command", "a stdio server needs a \"command\"")?;
    let args = f.args();
    let env = f.string_map("env");
    let cwd = f.optional_string("cwd").filter(|c| !c.is_empty()).map(|c| {
        let cwd = PathBuf::from(c);
        if cwd.is_relative() {
            base_dir.join(cwd)
        } else {
            cwd
        }
    });
    f.finish()?;
    if command.trim().is_empty() {
        return Err("command: is empty".to_owned());
    }
    if present("envFile") {
        warnings.push(format!(
            "server \"{name}\" in {source}: \"envFile\" is not supported; the variables in it are not passed to the server"
        ));
    }
    Ok(Transport::Stdio {
        command,
        args,
        env,
        cwd,
    })
}

/// Reads and expands the fields of one entry, collecting every problem.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    vars: Vars<'a>,
    problems: Vec<String>,
}

impl Fields<'_> {
    fn expand(&mut self, field: &str, raw: &str) -> String {
        expand::expand(raw, &self.vars).unwrap_or_else(|e| {
            self.problems.push(format!("{field}: {e}"));
            String::new()
        })
    }

    /// Fails at once when the field is missing: nothing else is worth
    /// reporting then.
    fn required_string(&mut self, key: &str, missing: &str) -> Result<String, String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Err(missing.to_owned()),
            Some(Value::String(raw)) => Ok(self.expand(key, raw)),
            Some(other) => Err(format!(
                "{key}: must be a string, found {}",
                type_name(other)
            )),
        }
    }

    fn optional_string(&mut self, key: &str) -> Option<String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(raw)) => Some(self.expand(key, raw)),
            Some(other) => {
                self.problems.push(format!(
                    "{key}: must be a string, found {}",
                    type_name(other)
                ));
                None
            }
        }
    }

    fn args(&mut self) -> Vec<String> {
        let items = match self.obj.get("args") {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.problems.push(format!(
                    "args: must be an array of strings, found {}",
                    type_name(other)
                ));
                return Vec::new();
            }
        };
        let mut args = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = format!("args[{i}]");
            match scalar_string(item) {
                Some(raw) => args.push(self.expand(&field, &raw)),
                None => self.problems.push(format!(
                    "{field}: must be a string, found {}",
                    type_name(item)
                )),
            }
        }
        args
    }

    fn string_map(&mut self, key: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let items = match self.obj.get(key) {
            None | Some(Value::Null) => return out,
            Some(Value::Object(items)) => items,
            Some(other) => {
                self.problems.push(format!(
                    "{key}: must be an object, found {}",
                    type_name(other)
                ));
                return out;
            }
        };
        for (name, item) in items {
            let field = format!("{key}.{name}");
            match item {
                Value::Null => {}
                _ => match scalar_string(item) {
                    Some(raw) => {
                        let value = self.expand(&field, &raw);
                        out.insert(name.clone(), value);
                    }
                    None => self.problems.push(format!(
                        "{field}: must be a string, found {}",
                        type_name(item)
                    )),
                },
            }
        }
        out
    }

    fn finish(&mut self) -> Result<(), String> {
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(self.problems.join("; "))
        }
    }
}
