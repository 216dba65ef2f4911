//! One client session's token vault: which token stands for which value, and who may have the
//! value back, in memory only. The same value (by its normal form: see `detect::Found`) gets
//! the same token for the life of the vault. A token is its kind and six random characters
//! (`[EMAIL_k7q2xm]`): nothing in it tells how many values came before, so none can be guessed
//! from another. Past [`MAX_ENTRIES`] a new value is replaced by its kind's bare redaction
//! (`[EMAIL]`), never left in clear.
//!
//! Put-back is scoped ([`Recipient`]). Code's own calls get every token of the session put back
//! (the code is the session's: the model chose to send the value), and the server called
//! becomes one of the value's holders. A downstream server answered by the client (a relayed
//! question) gets back only the values it holds: those it produced (in a result, or in the
//! question itself) or was sent. Any other token reaches it as the token. Nothing here is
//! serialised or logged: its `Debug` shows counts, never a value.

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use super::detect::{self, TOKEN};
use crate::config::settings::PiiKind;
use crate::content;

/// Values one vault holds tokens for at most.
pub(crate) const MAX_ENTRIES: usize = 10_000;
/// Values one vault knows the holders of at most (values servers produced that never reached
/// the client have no token but are known); past it a value's holders are not recorded, so
/// it goes back to none of them.
const MAX_KNOWN: usize = 50_000;
/// Servers recorded as holding one value at most.
const MAX_HOLDERS: usize = 64;
/// How much of one answer or call is scanned for the values a server holds.
const MAX_NOTED_BYTES: usize = 256 << 10;
/// The characters of a token's random part: lower-case letters and digits that cannot be
/// mistaken for one another.
const TOKEN_ALPHABET: &[u8] = b"23456789abcdefghjkmnpqrstuvwxyz";
/// Random characters in a token.
pub(crate) const TOKEN_CHARS: usize = 6;

/// Whom tokens are put back for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Recipient<'a> {
    /// The execution's own code (the client's answers to its questions): every token.
    Code,
    /// A downstream server, in a call code makes (arguments, a prompt's arguments, a resource
    /// URI): every token, and the server then holds the values it is sent.
    CallTo(&'a str),
    /// A downstream server, in the client's answer to a question it asked: only the values
    /// it holds.
    AnswerTo(&'a str),
}

/// A client session's tokens and the values they stand for.
pub(crate) struct Vault {
    kinds: Vec<PiiKind>,
    entries: Mutex<Entries>,
}

/// A value by its kind and normal form.
type Key = (PiiKind, String);

#[derive(Default)]
struct Entries {
    /// What is known of each value: its token, once it has one, and who holds it.
    known: HashMap<Key, Known>,
    /// The value each token stands for, as it was first seen, and its key.
    values: HashMap<String, (String, Key)>,
}

#[derive(Default)]
struct Known {
    token: Option<String>,
    /// The downstream servers that produced the value or were sent it.
    holders: Vec<String>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (tokens, known) = self
            .entries
            .lock()
            .map_or((0, 0), |e| (e.values.len(), e.known.len()));
        f.debug_struct("Vault")
            .field("kinds", &self.kinds)
            .field("tokens", &tokens)
            .field("known", &known)
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
        self.tokenize_from(None, text)
    }

    /// The same, for text downstream server `from` wrote (a question it asks the client): it
    /// holds every value found.
    pub(crate) fn tokenize_from(&self, from: Option<&str>, text: &str) -> String {
        let found = detect::find(text, &self.kinds);
        if found.is_empty() {
            return text.to_string();
        }
        let mut entries = self.entries.lock().expect("vault lock");
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in found {
            out.push_str(&text[at..f.start]);
            let key = (f.kind, f.normal);
            if let Some(server) = from {
                entries.hold(&key, server);
            }
            out.push_str(&entries.token_for(key, &text[f.start..f.end]));
            at = f.end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Tokenises every string and object key in `value`.
    pub(crate) fn tokenize_value(&self, value: &mut Value) {
        self.tokenize_value_from(None, value);
    }

    /// The same, for a value downstream server `from` wrote.
    pub(crate) fn tokenize_value_from(&self, from: Option<&str>, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.tokenize_from(from, text),
            Value::Array(items) => items
                .iter_mut()
                .for_each(|v| self.tokenize_value_from(from, v)),
            Value::Object(map) => rewrite_map(
                map,
                |key| self.tokenize_from(from, key),
                |v| self.tokenize_value_from(from, v),
            ),
            _ => {}
        }
    }

    /// Tokenises a whole tool result the client gets: `structuredContent` and every field of
    /// every content block (see [`Vault::tokenize_block`]).
    pub(crate) fn tokenize_result(&self, result: &mut CallToolResult) {
        if let Some(value) = result.structured_content.as_mut() {
            self.tokenize_value(value);
        }
        result
            .content
            .iter_mut()
            .for_each(|block| self.tokenize_block(block));
    }

    /// Tokenises every field of a content block but its media payload (an image's or audio's
    /// base64 `data`, a resource's `blob`): text, a resource's `uri`, `mimeType` and `text`,
    /// `annotations`, `_meta`, whatever the block carries.
    pub(crate) fn tokenize_block(&self, block: &mut ContentBlock) {
        if let ContentBlock::Text(text) = block
            && text.meta.is_none()
            && text.annotations.is_none()
        {
            text.text = self.tokenize(&text.text);
            return;
        }
        let Ok(mut value) = serde_json::to_value(&*block) else {
            return;
        };
        let payload = content::take_payload(&mut value);
        self.tokenize_value(&mut value);
        content::restore_payload(&mut value, payload);
        match serde_json::from_value(value) {
            Ok(tokenised) => *block = tokenised,
            // A block that no longer parses (a tokenised field with a format of its own) is
            // not sent as it was: only a note of what it was.
            Err(_) => {
                *block = ContentBlock::text("[a content block withheld: it holds personal data]")
            }
        }
    }

    /// `text` with the tokens of this vault that `to` may have replaced by the values they
    /// stand for; other tokens (another session's, one `to` may not have, bare redactions)
    /// stay as they are.
    pub(crate) fn put_back(&self, text: &str, to: Recipient<'_>) -> String {
        if !TOKEN.is_match(text) {
            return text.to_string();
        }
        let mut entries = self.entries.lock().expect("vault lock");
        TOKEN
            .replace_all(text, |c: &regex::Captures<'_>| {
                let token = &c[0];
                entries
                    .put_back(token, to)
                    .unwrap_or_else(|| token.to_string())
            })
            .into_owned()
    }

    /// Puts back tokens in every string and object key of `value` (see [`Vault::put_back`]).
    pub(crate) fn put_back_value(&self, value: &mut Value, to: Recipient<'_>) {
        match value {
            Value::String(text) => *text = self.put_back(text, to),
            Value::Array(items) => items.iter_mut().for_each(|v| self.put_back_value(v, to)),
            Value::Object(map) => self.put_back_map(map, to),
            _ => {}
        }
    }

    /// Puts back tokens in every key and value of `map` (a call's arguments).
    pub(crate) fn put_back_map(&self, map: &mut Map<String, Value>, to: Recipient<'_>) {
        rewrite_map(
            map,
            |key| self.put_back(key, to),
            |v| self.put_back_value(v, to),
        );
    }

    /// Records that downstream server `server` holds every value found in the strings of
    /// `value` (its first [`MAX_NOTED_BYTES`]): it produced them, or was sent them.
    pub(crate) fn note_held(&self, server: &str, value: &Value) {
        let mut texts = Vec::new();
        let mut budget = MAX_NOTED_BYTES;
        collect_texts(value, &mut texts, &mut budget);
        self.note_held_texts(server, &texts);
    }

    /// The same for a downstream tool's result: its `structuredContent` and every field of
    /// its content blocks but their media payloads.
    pub(crate) fn note_held_result(&self, server: &str, result: &CallToolResult) {
        let Ok(mut value) = serde_json::to_value(result) else {
            return;
        };
        if let Some(Value::Array(blocks)) = value.get_mut("content") {
            blocks.iter_mut().for_each(|block| {
                content::take_payload(block);
            });
        }
        self.note_held(server, &value);
    }

    fn note_held_texts(&self, server: &str, texts: &[&str]) {
        let found: Vec<Key> = texts
            .iter()
            .flat_map(|text| detect::find(text, &self.kinds))
            .map(|f| (f.kind, f.normal))
            .collect();
        if found.is_empty() {
            return;
        }
        let mut entries = self.entries.lock().expect("vault lock");
        for key in found {
            entries.hold(&key, server);
        }
    }

    /// Values held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().expect("vault lock").values.len()
    }
}

/// Every string (keys included) of `value`, at most `budget` bytes of them.
fn collect_texts<'a>(value: &'a Value, out: &mut Vec<&'a str>, budget: &mut usize) {
    fn take<'a>(text: &'a str, out: &mut Vec<&'a str>, budget: &mut usize) {
        if *budget >= text.len() {
            *budget -= text.len();
            out.push(text);
        } else {
            *budget = 0;
        }
    }
    match value {
        Value::String(text) => take(text, out, budget),
        Value::Array(items) => items.iter().for_each(|v| collect_texts(v, out, budget)),
        Value::Object(map) => {
            for (key, v) in map {
                take(key, out, budget);
                collect_texts(v, out, budget);
            }
        }
        _ => {}
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
    fn token_for(&mut self, key: Key, seen: &str) -> String {
        if let Some(token) = self.known.get(&key).and_then(|k| k.token.clone()) {
            return token;
        }
        let label = detect::label(key.0);
        if self.values.len() >= MAX_ENTRIES
            || (self.known.len() >= MAX_KNOWN && !self.known.contains_key(&key))
        {
            return format!("[{label}]");
        }
        let token = loop {
            let token = format!("[{label}_{}]", random_chars());
            if !self.values.contains_key(&token) {
                break token;
            }
        };
        self.values
            .insert(token.clone(), (seen.to_string(), key.clone()));
        self.known.entry(key).or_default().token = Some(token.clone());
        token
    }

    /// Records `server` as holding the value `key`.
    fn hold(&mut self, key: &Key, server: &str) {
        if !self.known.contains_key(key) && self.known.len() >= MAX_KNOWN {
            return;
        }
        let known = self.known.entry(key.clone()).or_default();
        if known.holders.len() < MAX_HOLDERS && !known.holders.iter().any(|h| h == server) {
            known.holders.push(server.to_string());
        }
    }

    /// The value of `token` if `to` may have it; a call's server then holds it.
    fn put_back(&mut self, token: &str, to: Recipient<'_>) -> Option<String> {
        let (value, key) = self.values.get(token)?;
        let (value, key) = (value.clone(), key.clone());
        match to {
            Recipient::Code => Some(value),
            Recipient::CallTo(server) => {
                self.hold(&key, server);
                Some(value)
            }
            Recipient::AnswerTo(server) => self
                .known
                .get(&key)
                .is_some_and(|k| k.holders.iter().any(|h| h == server))
                .then_some(value),
        }
    }
}

/// [`TOKEN_CHARS`] characters of [`TOKEN_ALPHABET`], from the operating system's random source
/// (a v4 UUID's 122 random bits). The first is a letter, so that no token reads as a number
/// (`[EMAIL_123456]` would look like the numbered tokens of old).
fn random_chars() -> String {
    let mut bits = uuid::Uuid::new_v4().as_u128();
    let letters = &TOKEN_ALPHABET[TOKEN_ALPHABET
        .iter()
        .position(u8::is_ascii_alphabetic)
        .unwrap_or(0)..];
    (0..TOKEN_CHARS)
        .map(|i| {
            let alphabet = if i == 0 { letters } else { TOKEN_ALPHABET };
            let n = alphabet.len() as u128;
            let c = alphabet[(bits % n) as usize] as char;
            bits /= n;
            c
        })
        .collect()
}
