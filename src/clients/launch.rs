//! Recognising this server's own entry in a client config, so that it never launches itself:
//! by the command's file name (ignoring `.exe`, `.cmd`, `.bat`, in any case), by a package run
//! through `npx`/`bunx`/`pnpx`/`uvx`, or by the entry's name. One rule for discovery and
//! `setup`; it reads no file.

use serde_json::{Map, Value};

use super::parse::scalar_string;

/// The last component of a `/`- or `\`-separated path, without a Windows
/// executable extension.
pub(crate) fn file_stem_of_command(command: &str) -> &str {
    let base = command
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(command);
    for ext in [".exe", ".cmd", ".bat"] {
        if base.len() > ext.len()
            && let Some((stem, tail)) = base.split_at_checked(base.len() - ext.len())
            && tail.eq_ignore_ascii_case(ext)
        {
            return stem;
        }
    }
    base
}

/// The bare package name in an npm or PyPI spec: `@scope/name@1.2` → `name`,
/// `name==1.0` → `name`, `name[extra]>=2` → `name`.
pub(crate) fn package_name(spec: &str) -> &str {
    let spec = spec.rsplit('/').next().unwrap_or(spec);
    let end = spec
        .char_indices()
        .find(|&(i, c)| matches!(c, '=' | '<' | '>' | '~' | '!' | '[' | ' ') || (c == '@' && i > 0))
        .map_or(spec.len(), |(i, _)| i);
    &spec[..end]
}

/// Flags of npx/uvx that take the next argument as their value.
const VALUE_FLAGS: &[&str] = &[
    "-p",
    "--package",
    "--from",
    "-c",
    "--call",
    "--with",
    "--with-editable",
    "--with-requirements",
    "--python",
    "--index",
    "--index-url",
    "--extra-index-url",
];

/// Flags whose value names the package that gets run.
const PACKAGE_FLAGS: &[&str] = &["-p", "--package", "--from"];

/// What makes a definition (as written, before expansion) this server's own entry: its
/// `command` launches this server ([`launches_self`]), or it bears this server's name.
pub(crate) fn self_entry(
    name: &str,
    definition: &Map<String, Value>,
    self_names: &[String],
) -> Option<String> {
    let raw_args: Vec<String> = match definition.get("args") {
        Some(Value::Array(args)) => args.iter().filter_map(scalar_string).collect(),
        _ => Vec::new(),
    };
    if let Some(Value::String(command)) = definition.get("command")
        && let Some(hit) = launches_self(command, &raw_args, self_names)
    {
        return Some(hit);
    }
    self_names
        .iter()
        .any(|s| s == name)
        .then(|| format!("name {name:?}"))
}

/// Returns what matched when `command args...` launches this server.
pub(crate) fn launches_self(
    command: &str,
    args: &[String],
    self_names: &[String],
) -> Option<String> {
    let is_self = |candidate: &str| {
        self_names
            .iter()
            .any(|s| file_stem_of_command(s).eq_ignore_ascii_case(candidate))
    };
    let stem = file_stem_of_command(command);
    if is_self(stem) {
        return Some(format!("command {stem:?}"));
    }
    if !matches!(stem, "npx" | "bunx" | "pnpx" | "uvx") {
        return None;
    }
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if let Some(flag) = arg.strip_prefix('-') {
            let (flag, inline) = match flag.split_once('=') {
                Some((f, v)) => (format!("-{f}"), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            let value = match inline {
                Some(v) => Some(v),
                None if VALUE_FLAGS.contains(&flag.as_str()) => iter.next().cloned(),
                None => None,
            };
            if PACKAGE_FLAGS.contains(&flag.as_str())
                && let Some(value) = value
                && is_self(package_name(&value))
            {
                return Some(format!("{stem} package {value:?}"));
            }
            continue;
        }
        let package = package_name(arg);
        return is_self(package).then(|| format!("{stem} package {arg:?}"));
    }
    None
}
