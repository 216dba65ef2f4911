//! Which tool calls need the user's approval before they leave, and what each client session
//! has already allowed for the rest of the session. A call needs approval when its tool
//! matches `approval_required` (names and `*` globs, as in `allowedTools`), or when its
//! annotations say `destructiveHint: true` (`approve_destructive_tools`, on by default) or
//! `readOnlyHint: false` (`approve_tools_not_read_only`, off by default). Asking is `ask`'s; the
//! gate sequences both.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use rmcp::model::ToolAnnotations;

use super::{Allowlist, PatternError};
use crate::clients::aliases::Aliases;

/// Most tools one session's "allow for this session" answers are remembered for; beyond it,
/// later tools are asked about each time.
const MAX_REMEMBERED_PER_SESSION: usize = 1000;
/// Most client sessions remembered at once; beyond it, the oldest is forgotten.
const MAX_SESSIONS: usize = 10_000;

/// The approval settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct ApprovalConfig {
    pub required: Vec<String>,
    pub destructive: bool,
    pub not_read_only: bool,
}

/// When calls need approval, and the approvals given for a whole session.
pub(crate) struct Approvals {
    required: Allowlist,
    /// The servers' other names: `approval_required` may name a server by any of them.
    aliases: Aliases,
    destructive: bool,
    not_read_only: bool,
    sessions: Mutex<Sessions>,
}

#[derive(Default)]
struct Sessions {
    allowed: HashMap<String, HashSet<String>>,
    /// Sessions in the order first remembered, to forget the oldest.
    order: Vec<String>,
}

impl Approvals {
    pub(crate) fn new(config: &ApprovalConfig) -> Result<Self, PatternError> {
        Ok(Approvals {
            required: Allowlist::new(&config.required)?,
            aliases: Aliases::default(),
            destructive: config.destructive,
            not_read_only: config.not_read_only,
            sessions: Mutex::default(),
        })
    }

    /// The approvals answering to the servers' other names too.
    pub(crate) fn with_aliases(mut self, aliases: Aliases) -> Self {
        self.aliases = aliases;
        self
    }

    /// Why a call of `tool` of `server` (its canonical name) needs approval, or `None` when it
    /// needs none.
    pub(crate) fn needed(
        &self,
        server: &str,
        tool: &str,
        annotations: Option<&ToolAnnotations>,
    ) -> Option<&'static str> {
        let named = |name: &str| self.required.matches(name, tool);
        if named(server) || self.aliases.of(server).iter().any(|a| named(&a.name)) {
            return Some("approval_required names it");
        }
        let annotations = annotations?;
        if self.destructive && annotations.destructive_hint == Some(true) {
            return Some("its server marks it destructive");
        }
        if self.not_read_only && annotations.read_only_hint == Some(false) {
            return Some("its server marks it as not read-only");
        }
        None
    }

    /// Whether `session` allowed `tool` for the rest of the session.
    pub(crate) fn allowed_for_session(&self, session: &str, tool: &str) -> bool {
        let sessions = self.sessions.lock().expect("approvals lock");
        sessions
            .allowed
            .get(session)
            .is_some_and(|tools| tools.contains(tool))
    }

    /// Remembers that `session` allowed `tool` for the rest of the session.
    pub(crate) fn allow_for_session(&self, session: &str, tool: &str) {
        let mut sessions = self.sessions.lock().expect("approvals lock");
        if !sessions.allowed.contains_key(session) {
            if sessions.order.len() >= MAX_SESSIONS {
                let oldest = sessions.order.remove(0);
                sessions.allowed.remove(&oldest);
            }
            sessions.order.push(session.to_string());
        }
        let tools = sessions.allowed.entry(session.to_string()).or_default();
        if tools.len() < MAX_REMEMBERED_PER_SESSION {
            tools.insert(tool.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approvals(required: &[&str], destructive: bool, not_read_only: bool) -> Approvals {
        Approvals::new(&ApprovalConfig {
            required: required.iter().map(|s| s.to_string()).collect(),
            destructive,
            not_read_only,
        })
        .unwrap()
    }

    fn hints(destructive: Option<bool>, read_only: Option<bool>) -> ToolAnnotations {
        let mut a = ToolAnnotations::default();
        a.destructive_hint = destructive;
        a.read_only_hint = read_only;
        a
    }

    #[test]
    fn names_globs_and_annotations_decide() {
        let a = approvals(&["mcp__db__drop_*"], true, false);
        assert!(a.needed("db", "drop_table", None).is_some());
        assert!(a.needed("db", "select", None).is_none());
        assert!(
            a.needed("fs", "rm", Some(&hints(Some(true), None)))
                .is_some()
        );
        assert!(
            a.needed("fs", "write", Some(&hints(Some(false), Some(false))))
                .is_none()
        );
        let strict = approvals(&[], false, true);
        assert!(
            strict
                .needed("fs", "write", Some(&hints(None, Some(false))))
                .is_some()
        );
        assert!(
            strict
                .needed("fs", "rm", Some(&hints(Some(true), None)))
                .is_none()
        );
        assert!(
            strict
                .needed("fs", "read", Some(&hints(None, Some(true))))
                .is_none()
        );
    }

    #[test]
    fn a_server_may_be_named_by_its_alias() {
        let a = approvals(&["mcp__git-server__git_commit"], false, false)
            .with_aliases(Aliases::of_pairs(&[("git-server", "git")]));
        assert!(a.needed("git", "git_commit", None).is_some());
        assert!(a.needed("git", "git_log", None).is_none());
    }

    #[test]
    fn a_session_approval_holds_for_that_session_only() {
        let a = approvals(&[], true, false);
        a.allow_for_session("stdio", "mcp__fs__rm");
        assert!(a.allowed_for_session("stdio", "mcp__fs__rm"));
        assert!(!a.allowed_for_session("http-token:x", "mcp__fs__rm"));
        assert!(!a.allowed_for_session("stdio", "mcp__fs__rmdir"));
    }
}
