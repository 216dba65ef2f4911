//! Personal data on its way to the client (`pii = "tokenize"`): the sandbox sees real data, but
//! what reaches the client (an execution's reply, its live output, the questions it asks) has
//! emails, phone numbers, card numbers, IBANs, national IDs and IP addresses replaced by tokens
//! (`[EMAIL_k7q2xm]`) that stand for them within the client session; a token code passes back
//! in a tool call's arguments, a prompt's arguments or a resource URI is replaced by its value
//! just before the call leaves the host, and a token in the client's answer to a downstream
//! server's question only when that server holds the value ([`vault::Recipient`]). [`detect`]
//! finds the values, [`vault`] holds one session's tokens, [`Pii`] holds the vaults of the
//! sessions, in memory only: never on disk, in logs or in the audit trail ([`redact`] is what
//! the audit trail records of a name code made up).

pub(crate) mod detect;
pub(crate) mod vault;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::config::settings::{PiiKind, PiiMode, Settings};
pub(crate) use vault::{Recipient, Vault};

/// Client sessions whose vaults are held at most; past it the vault used least recently and
/// not in use by an execution is forgotten (its tokens then mean nothing).
pub(crate) const MAX_SESSIONS: usize = 256;

/// The vaults of the client sessions.
pub(crate) struct Pii {
    kinds: Vec<PiiKind>,
    sessions: Mutex<Sessions>,
}

#[derive(Default)]
struct Sessions {
    vaults: HashMap<String, (Arc<Vault>, u64)>,
    clock: u64,
}

impl std::fmt::Debug for Pii {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.sessions.lock().map_or(0, |s| s.vaults.len());
        f.debug_struct("Pii")
            .field("kinds", &self.kinds)
            .field("sessions", &held)
            .finish()
    }
}

impl Pii {
    /// The vaults of a server whose settings tokenise, else none.
    pub(crate) fn of(settings: &Settings) -> Option<Arc<Pii>> {
        (settings.pii == PiiMode::Tokenize).then(|| Arc::new(Pii::new(settings.pii_kinds.clone())))
    }

    pub(crate) fn new(kinds: Vec<PiiKind>) -> Self {
        Pii {
            kinds,
            sessions: Mutex::default(),
        }
    }

    /// The vault of a client session, made on first use.
    pub(crate) fn vault(&self, session: &str) -> Arc<Vault> {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        sessions.clock += 1;
        let now = sessions.clock;
        if let Some((vault, used)) = sessions.vaults.get_mut(session) {
            *used = now;
            return vault.clone();
        }
        if sessions.vaults.len() >= MAX_SESSIONS {
            let idle = |v: &Arc<Vault>| Arc::strong_count(v) == 1;
            let oldest = sessions
                .vaults
                .iter()
                .filter(|(_, (v, _))| idle(v))
                .min_by_key(|(_, (_, used))| *used)
                .or_else(|| sessions.vaults.iter().min_by_key(|(_, (_, used))| *used))
                .map(|(key, _)| key.clone());
            if let Some(key) = oldest {
                sessions.vaults.remove(&key);
            }
        }
        let vault = Arc::new(Vault::new(self.kinds.clone()));
        sessions
            .vaults
            .insert(session.to_string(), (vault.clone(), now));
        vault
    }

    /// Sessions held.
    #[cfg(test)]
    pub(crate) fn sessions(&self) -> usize {
        self.sessions.lock().expect("sessions lock").vaults.len()
    }
}

/// `text` with every kind of personal data replaced by its kind's bare redaction (`[EMAIL]`),
/// whatever the settings: what the audit trail records of a name code made up (a tool name that
/// resolved to nothing may be any text code chose).
pub(crate) fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    let found = detect::find(text, &PiiKind::ALL);
    if found.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.start]);
        out.push('[');
        out.push_str(detect::label(f.kind));
        out.push(']');
        at = f.end;
    }
    out.push_str(&text[at..]);
    std::borrow::Cow::Owned(out)
}

/// Longest piece of a value cut at an edge that [`trim_cut_end`] and [`trim_cut_start`] drop.
const EDGE_BYTES: usize = 80;

/// Whether a character may be part of a value some detector finds.
fn in_value(c: char) -> bool {
    c.is_ascii_alphanumeric() || "@.+-_%:() ".contains(c)
}

/// `text` ended where output was cut: drops the run of characters that may be the first part of
/// a value (at most [`EDGE_BYTES`]), which no detector would recognise cut and would otherwise
/// reach the client in clear.
pub(crate) fn trim_cut_end(text: &mut String) {
    let keep = text
        .char_indices()
        .rev()
        .take_while(|&(i, c)| in_value(c) && text.len() - i <= EDGE_BYTES)
        .last()
        .map_or(text.len(), |(i, _)| i);
    text.truncate(keep);
}

/// The same for text that starts where output was cut.
pub(crate) fn trim_cut_start(text: &mut String) {
    let drop = text
        .char_indices()
        .take_while(|&(i, c)| in_value(c) && i + c.len_utf8() <= EDGE_BYTES)
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    text.replace_range(..drop, "");
}
