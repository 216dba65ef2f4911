//! One client session's token vault: which token stands for which value, in memory only. The
//! same value (by its normal form: see `detect::Found`) gets the same token for the life of the
//! vault; tokens are numbered per kind from 1. Past [`MAX_ENTRIES`] a new value is replaced by
//! its kind's bare redaction (`[EMAIL]`), never left in clear. Nothing here is serialised or
//! logged: its `Debug` shows counts, never a value.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

use super::detect::{self, TOKEN};
use crate::config::settings::PiiKind;

/// Values one vault holds at most.
pub(crate) const MAX_ENTRIES: usize = 10_000;

/// A client session's tokens and the values they stand for.
pub(crate) struct Vault {
    kinds: Vec<PiiKind>,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    /// The token of each value, by kind and normal form.
    tokens: HashMap<(PiiKind, String), String>,
    /// The value each token stands for, as it was first seen.
    values: HashMap<String, String>,
    /// Tokens given so far, by kind.
    numbers: HashMap<PiiKind, u32>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.entries.lock().map_or(0, |e| e.values.len());
        f.debug_struct("Vault")
            .field("kinds", &self.kinds)
            .field("entries", &held)
            .finish()
    }
}

impl Vault {
    pub(crate) fn new(kinds: Vec<PiiKind>) -> Self {
        Vault {
            kinds,
            entries: Mutex::default(),
        }
    }

    /// `text` with every value of the vault's kinds replaced by its token.
    pub(crate) fn tokenize(&self, text: &str) -> String {
        let found = detect::find(text, &self.kinds);
        if found.is_empty() {
            return text.to_string();
        }
        let mut entries = self.entries.lock().expect("vault lock");
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in found {
            out.push_str(&text[at..f.start]);
            out.push_str(&entries.token_for(f.kind, f.normal, &text[f.start..f.end]));
            at = f.end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Tokenises every string and object key in `value`.
    pub(crate) fn tokenize_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.tokenize(text),
            Value::Array(items) => items.iter_mut().for_each(|v| self.tokenize_value(v)),
            Value::Object(map) => {
                rewrite_map(map, |key| self.tokenize(key), |v| self.tokenize_value(v))
            }
            _ => {}
        }
    }

    /// Tokenises a whole tool result the client gets: its text blocks and `structuredContent`
    /// (search results and schemas, which show skills that code wrote).
    pub(crate) fn tokenize_result(&self, result: &mut rmcp::model::CallToolResult) {
        if let Some(value) = result.structured_content.as_mut() {
            self.tokenize_value(value);
        }
        for block in &mut result.content {
            if let rmcp::model::ContentBlock::Text(text) = block {
                text.text = self.tokenize(&text.text);
            }
        }
    }

    /// `text` with the tokens of this vault replaced by the values they stand for; other
    /// tokens (of another session, or bare redactions) stay as they are.
    pub(crate) fn detokenize(&self, text: &str) -> String {
        if !TOKEN.is_match(text) {
            return text.to_string();
        }
        let entries = self.entries.lock().expect("vault lock");
        TOKEN
            .replace_all(text, |c: &regex::Captures<'_>| {
                let token = &c[0];
                entries
                    .values
                    .get(token)
                    .cloned()
                    .unwrap_or_else(|| token.to_string())
            })
            .into_owned()
    }

    /// Detokenises every string and object key in `value`.
    pub(crate) fn detokenize_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.detokenize(text),
            Value::Array(items) => items.iter_mut().for_each(|v| self.detokenize_value(v)),
            Value::Object(map) => self.detokenize_map(map),
            _ => {}
        }
    }

    /// Detokenises every key and value of `map` (a call's arguments).
    pub(crate) fn detokenize_map(&self, map: &mut Map<String, Value>) {
        rewrite_map(
            map,
            |key| self.detokenize(key),
            |v| self.detokenize_value(v),
        );
    }

    /// Values held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().expect("vault lock").values.len()
    }
}

/// Rewrites every key of `map` with `key` and every value with `value` (keys cannot be changed
/// in place: the map is rebuilt, in its order).
fn rewrite_map(
    map: &mut Map<String, Value>,
    key: impl Fn(&str) -> String,
    value: impl Fn(&mut Value),
) {
    *map = std::mem::take(map)
        .into_iter()
        .map(|(k, mut v)| {
            value(&mut v);
            (key(&k), v)
        })
        .collect();
}

impl Entries {
    fn token_for(&mut self, kind: PiiKind, normal: String, seen: &str) -> String {
        let key = (kind, normal);
        if let Some(token) = self.tokens.get(&key) {
            return token.clone();
        }
        let label = detect::label(kind);
        if self.values.len() >= MAX_ENTRIES {
            return format!("[{label}]");
        }
        let number = self.numbers.entry(kind).or_insert(0);
        *number += 1;
        let token = format!("[{label}_{number}]");
        self.values.insert(token.clone(), seen.to_string());
        self.tokens.insert(key, token.clone());
        token
    }
}
