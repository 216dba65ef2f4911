//! The server-wide `Policy`, and what one viewer may call, see and cause to start: the LLM
//! (bounded by the policy) or one execution (the policy and its `allowedTools`). Pure logic over
//! name patterns, no I/O; the gate asks it before a call, the catalogue before showing a tool or
//! starting a server.
//!
//! - A tool is **callable** when no `policy_deny` entry matches it, `policy_allow` (when set)
//!   matches it and, for an execution, `allowedTools` matches it.
//! - A tool is **visible** (search results, `getToolSchema`, tool counts) exactly when it is
//!   callable: a tool the viewer may not call answers like a tool that does not exist.
//! - A server **may be started** by a viewer when it may hold a callable tool: some entry of
//!   each list that applies could match one of its tools, and no `policy_deny` entry covers all
//!   of them. Look-ups never start any other server. (Before a server runs its tools are not
//!   known, so this reads the patterns only: a server whose only candidates are refused by
//!   another list may still be started, and shows no tool.)
//! - A server configured under several names (`crate::clients::aliases`) is one server: the
//!   server named here is always its canonical name, and a pattern of any list matches when it
//!   matches the tool under any of the server's names. `allowedTools: ["mcp__mcp-git__*"]`
//!   therefore admits `git`'s tools when `mcp-git` is an alias of `git`, and a `policy_deny`
//!   entry naming an alias refuses the server under every name.

use super::allowlist::{Allowlist, PatternError, is_clean};
use super::refusal::Refusal;
use crate::clients::aliases::Aliases;

/// The server-wide policy from the settings, and the servers' other names every list is
/// matched under.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    /// When set, nothing outside it may be called.
    pub allow: Option<Allowlist>,
    /// Never callable; wins over every allow.
    pub deny: Allowlist,
    /// The servers' other names.
    pub aliases: Aliases,
}

impl Policy {
    pub(crate) fn new(allow: Option<&[String]>, deny: &[String]) -> Result<Self, PatternError> {
        Ok(Policy {
            allow: allow.map(Allowlist::new).transpose()?,
            deny: Allowlist::new(deny)?,
            aliases: Aliases::default(),
        })
    }

    /// The policy matching patterns under the servers' other names too.
    pub(crate) fn with_aliases(mut self, aliases: Aliases) -> Self {
        self.aliases = aliases;
        self
    }
}

/// The view of one viewer. `Reach::everything()` is the operator's (the command line).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reach<'a> {
    policy: Option<&'a Policy>,
    allowlist: Option<&'a Allowlist>,
}

impl<'a> Reach<'a> {
    /// The operator's view: every tool of every server.
    pub(crate) fn everything() -> Self {
        Reach {
            policy: None,
            allowlist: None,
        }
    }

    /// The LLM's view: what the server-wide policy allows.
    pub(crate) fn policy(policy: &'a Policy) -> Self {
        Reach {
            policy: Some(policy),
            allowlist: None,
        }
    }

    /// One execution's view: the policy and its `allowedTools`.
    pub(crate) fn execution(policy: &'a Policy, allowlist: &'a Allowlist) -> Self {
        Reach {
            policy: Some(policy),
            allowlist: Some(allowlist),
        }
    }

    /// Whether `test` holds for one of the names of the server `server` (canonical first).
    fn any_name(&self, server: &str, test: impl Fn(&str) -> bool) -> bool {
        let aliases = self.policy.map_or(&[][..], |p| p.aliases.of(server));
        test(server) || aliases.iter().any(|a| test(&a.name))
    }

    /// Whether the tool may be called, or the refusal saying which list refuses it (deny
    /// first: it wins over every allow). `server` is a canonical name; `qualified` is the
    /// tool's name in messages.
    pub(crate) fn check(&self, server: &str, tool: &str, qualified: &str) -> Result<(), Refusal> {
        if !is_clean(server) || !is_clean(tool) {
            return Err(Refusal::MalformedName(qualified.escape_debug().to_string()));
        }
        if let Some(policy) = self.policy {
            if self.any_name(server, |name| policy.deny.matches(name, tool)) {
                return Err(Refusal::DeniedByPolicy(qualified.to_string()));
            }
            if let Some(allow) = &policy.allow
                && !self.any_name(server, |name| allow.matches(name, tool))
            {
                return Err(Refusal::OutsidePolicy(qualified.to_string()));
            }
        }
        if let Some(allowlist) = self.allowlist
            && !self.any_name(server, |name| allowlist.matches(name, tool))
        {
            allowlist.check(server, tool)?;
        }
        Ok(())
    }

    /// Whether the tool is shown at all (exactly when it may be called).
    pub(crate) fn sees(&self, server: &str, tool: &str) -> bool {
        self.check(server, tool, "").is_ok()
    }

    /// Whether this viewer may cause `server` to start: it may hold a callable tool.
    pub(crate) fn may_start(&self, server: &str) -> bool {
        if let Some(policy) = self.policy {
            if self.any_name(server, |name| policy.deny.matches_every_tool_of(name)) {
                return false;
            }
            if let Some(allow) = &policy.allow
                && !self.any_name(server, |name| allow.may_match_a_tool_of(name))
            {
                return false;
            }
        }
        self.allowlist
            .is_none_or(|list| self.any_name(server, |name| list.may_match_a_tool_of(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(p: &[&str]) -> Allowlist {
        Allowlist::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn policy(allow: Option<&[&str]>, deny: &[&str]) -> Policy {
        Policy {
            allow: allow.map(list),
            deny: list(deny),
            aliases: Aliases::default(),
        }
    }

    #[test]
    fn the_operator_sees_and_starts_everything() {
        let r = Reach::everything();
        assert!(r.sees("fx__admin", "echo") && r.may_start("fx__admin"));
    }

    #[test]
    fn an_empty_allowlist_starts_nothing_and_sees_nothing() {
        let p = Policy::default();
        let empty = list(&[]);
        let r = Reach::execution(&p, &empty);
        assert!(!r.may_start("time") && !r.sees("time", "get_current_time"));
        // The LLM, bounded by the policy only, sees and starts both.
        let llm = Reach::policy(&p);
        assert!(llm.may_start("time") && llm.sees("time", "get_current_time"));
    }

    #[test]
    fn an_execution_starts_only_the_servers_its_allowlist_names() {
        let p = Policy::default();
        let allowed = list(&["mcp__fx__*", "mcp__time__get_current_time"]);
        let r = Reach::execution(&p, &allowed);
        assert!(r.may_start("fx") && r.may_start("time"));
        assert!(!r.may_start("fx__admin") && !r.may_start("git"));
        assert!(r.sees("fx", "echo") && !r.sees("fx__admin", "echo"));
        assert!(!r.sees("time", "convert_time"));
    }

    #[test]
    fn the_policy_hides_and_keeps_servers_closed() {
        let p = policy(
            Some(&["mcp__time__*", "mcp__git__git_log"]),
            &["mcp__git__*"],
        );
        let llm = Reach::policy(&p);
        assert!(llm.may_start("time") && llm.sees("time", "convert_time"));
        // Denied entirely: never started, never shown, even though policy_allow names it.
        assert!(!llm.may_start("git") && !llm.sees("git", "git_log"));
        // Outside policy_allow: never started.
        assert!(!llm.may_start("fx"));
        let all = list(&["*"]);
        let r = Reach::execution(&p, &all);
        assert!(r.may_start("time") && !r.may_start("git") && !r.may_start("fx"));
        assert_eq!(
            r.check("git", "git_log", "mcp__git__git_log"),
            Err(Refusal::DeniedByPolicy("mcp__git__git_log".into()))
        );
        assert_eq!(
            r.check("fx", "echo", "mcp__fx__echo"),
            Err(Refusal::OutsidePolicy("mcp__fx__echo".into()))
        );
        // A deny entry for some tools of a server leaves the server reachable.
        let p = policy(None, &["mcp__*__delete_*"]);
        let r = Reach::execution(&p, &all);
        assert!(r.may_start("store") && !r.sees("store", "delete_customer"));
        assert!(r.sees("store", "list_customers"));
    }

    /// `git` is also configured as `git-server` and `mcp-git`: a pattern naming the server by
    /// any name covers it, one naming another server does not.
    #[test]
    fn patterns_naming_an_alias_cover_the_server() {
        let aliases = Aliases::of_pairs(&[("git-server", "git"), ("mcp-git", "git")]);
        let p = Policy::default().with_aliases(aliases.clone());
        let by_alias = list(&["mcp__mcp-git__git_log"]);
        let r = Reach::execution(&p, &by_alias);
        assert!(r.may_start("git") && r.sees("git", "git_log"));
        assert!(!r.sees("git", "git_commit") && !r.may_start("time"));
        assert_eq!(r.check("git", "git_log", "mcp__git__git_log"), Ok(()));
        let other = list(&["mcp__time__*"]);
        let r = Reach::execution(&p, &other);
        assert!(!r.may_start("git"));
        assert_eq!(
            r.check("git", "git_log", "mcp__git__git_log"),
            Err(Refusal::NotAllowed("mcp__git__git_log".into()))
        );
        // Globs reach aliases too, and an alias of one server is no name of another.
        let glob = list(&["mcp__git-*__*"]);
        let r = Reach::execution(&p, &glob);
        assert!(r.sees("git", "git_status") && !r.sees("gitlab", "x"));
        // A deny entry naming an alias closes the server under every name.
        let p = policy(None, &["mcp__git-server__*"]).with_aliases(aliases.clone());
        let all = list(&["*"]);
        let r = Reach::execution(&p, &all);
        assert!(!r.may_start("git") && !r.sees("git", "git_log"));
        assert_eq!(
            r.check("git", "git_log", "mcp__git__git_log"),
            Err(Refusal::DeniedByPolicy("mcp__git__git_log".into()))
        );
        // policy_allow naming an alias admits the server.
        let p = policy(Some(&["mcp__mcp-git__*"]), &[]).with_aliases(aliases);
        let llm = Reach::policy(&p);
        assert!(llm.may_start("git") && llm.sees("git", "git_log") && !llm.may_start("time"));
    }
}
