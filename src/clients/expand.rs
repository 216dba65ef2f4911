//! `${...}` variable expansion in downstream MCP server definitions.
//!
//! This module owns the substitution syntax that MCP clients accept in their
//! config files (Claude Code's `${VAR}` / `${VAR:-default}`, VS Code's and
//! Cursor's `${env:VAR}` and `${workspaceFolder}`). It is a pure function over
//! an explicit variable set: it never reads the process environment or the
//! file system.
//!
//! Rules:
//! - `${NAME}` is the value of `NAME`: first one of the built-in names below,
//!   then the environment map. An unset variable is an error naming it (all
//!   unset names of one string are reported together).
//! - `${NAME:-default}` uses `default` when `NAME` is unset **or empty**
//!   (POSIX `:-`). Everything after the first `:-` is the default, so it may
//!   itself contain `:-`. The default is expanded in turn (`${A:-${B}}`), but
//!   only when it is used, so an unset `B` is no error while `A` is set.
//! - `${env:NAME}` (and `${env:NAME:-default}`) reads only the environment map.
//! - Built-ins: `workspaceFolder` (the project directory),
//!   `workspaceFolderBasename`, `userHome`, `pathSeparator` and `/` (both
//!   `/`). They win over environment variables of the same name.
//! - `${input:ID}` is an error: VS Code asks the user for it, which a
//!   non-interactive server cannot do. Any other `${prefix:...}` form
//!   (`${config:...}`, `${command:...}`, `${workspaceFolder:name}`) is an
//!   error too.
//! - `$NAME` without braces, a lone `$` and lone braces are left alone; there
//!   is no `$$` escape. Expanded values are inserted verbatim (never expanded
//!   again).
//! - Braces nest: the expression ends at the `}` that balances its `${`
//!   (every `{` inside counts), so `${A:-{x}}` has the default `{x}`. A `${`
//!   that is never closed is an error rather than literal text, as is an
//!   empty or malformed name (one containing whitespace, `$`, `{` or `}`).

use std::collections::BTreeMap;

/// How deep `${A:-${B:-...}}` defaults may nest before expansion gives up.
pub(crate) const MAX_NESTING: usize = 16;

/// The variables an expansion can see.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vars<'a> {
    /// Environment variables, for `${NAME}` and `${env:NAME}`.
    pub env: &'a BTreeMap<String, String>,
    /// Value of `${workspaceFolder}`; when `None` the name is looked up in `env`.
    pub workspace_folder: Option<&'a str>,
    /// Value of `${userHome}`; when `None` the name is looked up in `env`.
    pub user_home: Option<&'a str>,
}

/// Why a string could not be expanded. Positions are 1-based character
/// columns in the string given to [`expand`]. Messages never echo the string
/// itself, which may hold a secret (a header value, say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandError {
    /// One or more variables without a default are not set.
    #[error("{}", unset_message(.names))]
    Unset {
        /// The unset names, in order of first appearance, without duplicates.
        names: Vec<String>,
    },
    /// A `${` without its closing `}`.
    #[error("unterminated \"${{\" at character {at}")]
    Unterminated { at: usize },
    /// `${}`, `${:-x}` or `${env:}`.
    #[error("empty variable name in \"${{...}}\" at character {at}")]
    EmptyName { at: usize },
    /// A name containing whitespace, `$`, `{` or `}`.
    #[error("invalid variable name {name:?} at character {at}")]
    InvalidName { name: String, at: usize },
    /// `${input:ID}`: VS Code prompts for these; we cannot.
    #[error(
        "\"${{input:{id}}}\" asks the user for a value inside VS Code and cannot be resolved here; \
         put the value in an environment variable and write \"${{env:NAME}}\" instead"
    )]
    Input { id: String },
    /// `${config:...}`, `${command:...}` and the like.
    #[error(
        "\"${{{expr}}}\" is not supported (supported: ${{VAR}}, ${{VAR:-default}}, ${{env:VAR}}, ${{workspaceFolder}}, ${{userHome}})"
    )]
    Unsupported { expr: String },
    /// Defaults nested deeper than [`MAX_NESTING`].
    #[error("variable defaults nested more than {MAX_NESTING} levels deep")]
    TooDeep,
}

fn unset_message(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [one] => format!("environment variable {one} is not set"),
        many => format!("environment variables {} are not set", many.join(", ")),
    }
}

/// Expands every `${...}` expression in `input` (see the module docs).
pub(crate) fn expand(input: &str, vars: &Vars<'_>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let mut missing = Vec::new();
    expand_into(input, 0, vars, &mut out, &mut missing, 0)?;
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(ExpandError::Unset { names: missing })
    }
}

/// Expands `s`, whose first character is character number `base + 1` of the
/// top-level input, appending to `out`. Unset names are collected in
/// `missing` so that one error can list them all; other errors return early.
fn expand_into(
    s: &str,
    base: usize,
    vars: &Vars<'_>,
    out: &mut String,
    missing: &mut Vec<String>,
    depth: usize,
) -> Result<(), ExpandError> {
    if depth > MAX_NESTING {
        return Err(ExpandError::TooDeep);
    }
    let column = |byte: usize| base + s[..byte].chars().count() + 1;
    let mut pos = 0;
    while let Some(found) = s[pos..].find("${") {
        let dollar = pos + found;
        out.push_str(&s[pos..dollar]);
        let body_start = dollar + 2;
        let Some(body_len) = closing_brace(&s[body_start..]) else {
            return Err(ExpandError::Unterminated { at: column(dollar) });
        };
        let body = &s[body_start..body_start + body_len];
        let body_base = column(body_start) - 1;
        resolve(body, body_base, vars, out, missing, depth)?;
        pos = body_start + body_len + 1;
    }
    out.push_str(&s[pos..]);
    Ok(())
}

/// Byte length of the text before the `}` that closes an expression whose
/// body starts `text`, counting every `{` and `}` in between.
fn closing_brace(text: &str) -> Option<usize> {
    let mut open = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => open += 1,
            '}' => {
                open -= 1;
                if open == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Resolves one expression body (the text between `${` and its `}`).
fn resolve(
    body: &str,
    base: usize,
    vars: &Vars<'_>,
    out: &mut String,
    missing: &mut Vec<String>,
    depth: usize,
) -> Result<(), ExpandError> {
    // The expression's `$` is two characters before the body.
    let at = base - 1;
    let (head, default) = match body.find(":-") {
        Some(i) => {
            let default_base = base + body[..i + 2].chars().count();
            (&body[..i], Some((&body[i + 2..], default_base)))
        }
        None => (body, None),
    };
    check_name(head, at)?;

    let (name, value) = match head.split_once(':') {
        Some(("env", name)) => {
            check_name(name, at)?;
            (name, vars.env.get(name).cloned())
        }
        Some(("input", id)) => return Err(ExpandError::Input { id: id.to_owned() }),
        Some(_) => {
            return Err(ExpandError::Unsupported {
                expr: head.to_owned(),
            });
        }
        None => (
            head,
            builtin(head, vars).or_else(|| vars.env.get(head).cloned()),
        ),
    };

    match (value, default) {
        (Some(v), None) => out.push_str(&v),
        (Some(v), Some(_)) if !v.is_empty() => out.push_str(&v),
        (_, Some((text, default_base))) => {
            expand_into(text, default_base, vars, out, missing, depth + 1)?;
        }
        (None, None) => {
            if !missing.iter().any(|m| m == name) {
                missing.push(name.to_owned());
            }
        }
    }
    Ok(())
}

fn check_name(name: &str, at: usize) -> Result<(), ExpandError> {
    if name.is_empty() {
        return Err(ExpandError::EmptyName { at });
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || matches!(c, '$' | '{' | '}'))
    {
        return Err(ExpandError::InvalidName {
            name: name.to_owned(),
            at,
        });
    }
    Ok(())
}

fn builtin(name: &str, vars: &Vars<'_>) -> Option<String> {
    match name {
        "workspaceFolder" => vars.workspace_folder.map(str::to_owned),
        "workspaceFolderBasename" => vars.workspace_folder.map(|w| {
            let trimmed = w.trim_end_matches(['/', '\\']);
            trimmed
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(trimmed)
                .to_owned()
        }),
        "userHome" => vars.user_home.map(str::to_owned),
        "pathSeparator" | "/" => Some("/".to_owned()),
        _ => None,
    }
}
