//! Name patterns: the per-execution `allowedTools` and the server-wide policy lists, as exact
//! names and `*` globs, matched against a tool's resolved (server, tool) pair. Pure logic, no
//! I/O.
//!
//! A pattern names tools as `mcp__<server>__<tool>`. It matches the tool `tool` of the server
//! `server` when it can be cut at one of its `__` into a left part that matches `mcp__<server>`
//! and a right part that matches `<tool>`, each as a whole (`*` matches any run of characters,
//! within its part). The server part of a pattern therefore names whole server names and never
//! reaches across the `__` that ends one: with servers `fx` and `fx__admin`, `mcp__fx__*` is
//! every tool of `fx` and none of `fx__admin`'s (those are `mcp__fx__admin__*`), and
//! `mcp__*__read_*` is every `read_*` tool of every server. A pattern with no `__` after its
//! `mcp__` prefix (`*`, `mcp__*`, `mcp__git*`) names no server exactly and is matched against
//! whole qualified names.
//!
//! Names are compared exactly as given: no case folding, no Unicode normalisation, and a name
//! holding whitespace or control characters never matches anything.

use super::refusal::Refusal;

/// A pattern in `allowedTools` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tool pattern `{pattern}`: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

/// A list of tool patterns: the tools one execution may call, or a server-wide policy list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowlist {
    patterns: Vec<Pattern>,
}

/// One pattern, with the places it may be cut into a server part and a tool part.
#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    /// Byte offsets of every `__` that may end the server part; empty for a pattern matched
    /// against whole names.
    cuts: Vec<usize>,
}

pub(super) fn is_clean(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The qualified name of `tool` of `server`.
fn qualified(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

impl Pattern {
    fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        // Every `__` (overlapping ones too: `a___b` may be `a_`+`b` or `a`+`_b`) except the one
        // of a leading `mcp__`, which can never end a server part.
        let cuts: Vec<usize> = (0..bytes.len().saturating_sub(1))
            .filter(|&i| bytes[i] == b'_' && bytes[i + 1] == b'_')
            .filter(|&i| !(i == 3 && text.starts_with("mcp__")))
            .collect();
        Pattern {
            text: text.to_string(),
            cuts,
        }
    }

    /// The (server part, tool part) of each way to cut the pattern.
    fn parts(&self) -> impl Iterator<Item = (&str, &str)> {
        self.cuts
            .iter()
            .map(|&i| (&self.text[..i], &self.text[i + 2..]))
    }

    fn matches(&self, server: &str, tool: &str) -> bool {
        if self.cuts.is_empty() {
            return glob(&self.text, &qualified(server, tool));
        }
        let prefixed = format!("mcp__{server}");
        self.parts()
            .any(|(left, right)| glob(left, &prefixed) && glob(right, tool))
    }

    /// Whether some tool name could match: the pattern may name a tool of `server`.
    fn may_match_a_tool_of(&self, server: &str) -> bool {
        if self.cuts.is_empty() {
            // Some non-empty tool name completes `mcp__<server>__`: any unconsumed pattern
            // (a `*` or a character) can produce at least one character.
            let states = states_after(self.text.as_bytes(), qualified(server, "").as_bytes());
            return states[..self.text.len()].iter().any(|&s| s);
        }
        let prefixed = format!("mcp__{server}");
        self.parts()
            .any(|(left, right)| !right.is_empty() && glob(left, &prefixed))
    }

    /// Whether every tool of `server` matches.
    fn matches_every_tool_of(&self, server: &str) -> bool {
        let all_stars = |p: &[u8]| !p.is_empty() && p.iter().all(|&b| b == b'*');
        if self.cuts.is_empty() {
            let p = self.text.as_bytes();
            let states = states_after(p, qualified(server, "").as_bytes());
            return (0..p.len()).any(|i| states[i] && all_stars(&p[i..]));
        }
        let prefixed = format!("mcp__{server}");
        self.parts()
            .any(|(left, right)| all_stars(right.as_bytes()) && glob(left, &prefixed))
    }
}

/// The pattern positions reachable after reading `input` (a `*` may take any run of bytes).
/// `states[i]`: the first `i` bytes of the pattern can produce `input`; `states[p.len()]`: the
/// whole pattern matches it.
fn states_after(pattern: &[u8], input: &[u8]) -> Vec<bool> {
    let close = |states: &mut Vec<bool>| {
        for i in 0..pattern.len() {
            if states[i] && pattern[i] == b'*' {
                states[i + 1] = true;
            }
        }
    };
    let mut states = vec![false; pattern.len() + 1];
    states[0] = true;
    close(&mut states);
    for &byte in input {
        let mut next = vec![false; pattern.len() + 1];
        for i in 0..pattern.len() {
            if !states[i] {
                continue;
            }
            match pattern[i] {
                b'*' => next[i] = true,
                c if c == byte => next[i + 1] = true,
                _ => {}
            }
        }
        close(&mut next);
        if !next.iter().any(|&s| s) {
            return next;
        }
        states = next;
    }
    states
}

/// Whether the `*` glob `pattern` matches all of `name`.
fn glob(pattern: &str, name: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == name;
    }
    states_after(pattern.as_bytes(), name.as_bytes())[pattern.len()]
}

impl Allowlist {
    /// Builds a list. Entries are exact names, or globs where `*` matches any run of
    /// characters; `?`, `[...]`, `{...}` and `\` are refused rather than guessed at.
    pub(crate) fn new(patterns: &[String]) -> Result<Self, PatternError> {
        let mut list = Allowlist::default();
        for pattern in patterns {
            if !is_clean(pattern) {
                return Err(PatternError {
                    pattern: pattern.escape_debug().to_string(),
                    reason: "empty, or contains whitespace or control characters".into(),
                });
            }
            if pattern.contains(['?', '[', ']', '{', '}', '\\']) {
                return Err(PatternError {
                    pattern: pattern.clone(),
                    reason: "only `*` is supported as a wildcard".into(),
                });
            }
            list.patterns.push(Pattern::new(pattern));
        }
        Ok(list)
    }

    /// Whether the tool `tool` of `server` matches an entry. Names with whitespace or control
    /// characters never match.
    pub(crate) fn matches(&self, server: &str, tool: &str) -> bool {
        is_clean(server) && is_clean(tool) && self.patterns.iter().any(|p| p.matches(server, tool))
    }

    /// Whether some tool of `server`, whatever its name, could match an entry.
    pub(crate) fn may_match_a_tool_of(&self, server: &str) -> bool {
        is_clean(server) && self.patterns.iter().any(|p| p.may_match_a_tool_of(server))
    }

    /// Whether every tool of `server` matches an entry (one entry covers them all).
    pub(crate) fn matches_every_tool_of(&self, server: &str) -> bool {
        self.patterns
            .iter()
            .any(|p| p.matches_every_tool_of(server))
    }

    /// Whether the tool may be called under this execution's allowlist.
    pub(crate) fn check(&self, server: &str, tool: &str) -> Result<(), Refusal> {
        let name = qualified(server, tool);
        if !is_clean(&name) {
            return Err(Refusal::MalformedName(name.escape_debug().to_string()));
        }
        if self.matches(server, tool) {
            Ok(())
        } else {
            Err(Refusal::NotAllowed(name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(p: &[&str]) -> Allowlist {
        Allowlist::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn empty_allows_nothing() {
        assert!(list(&[]).check("time", "get_current_time").is_err());
        assert!(!list(&[]).may_match_a_tool_of("time"));
    }

    #[test]
    fn exact_names_match_exactly() {
        let l = list(&["mcp__time__get_current_time"]);
        assert!(l.check("time", "get_current_time").is_ok());
        for (server, tool) in [
            ("time", "get_current_timeX"),
            ("time", "get_current_time "),
            ("time", "get_current_time\n"),
            ("time", "get_current_time\0"),
            ("TIME", "GET_CURRENT_TIME"),
            ("time", "get_current_tіme"), // Cyrillic і
            ("time", "get_current"),
            ("xtime", "get_current_time"),
        ] {
            assert!(
                l.check(server, tool).is_err(),
                "{server:?}/{tool:?} must be refused"
            );
        }
    }

    #[test]
    fn globs_match_whole_parts() {
        let l = list(&["mcp__git__*", "mcp__*__read_*"]);
        assert!(l.check("git", "git_log").is_ok());
        assert!(l.check("fs", "read_file").is_ok());
        assert!(l.check("github", "create_issue").is_err());
        assert!(l.check("fs", "write_file").is_err());
        assert!(l.check("fs", "xread_file").is_err());
    }

    #[test]
    fn a_server_glob_never_reaches_a_longer_server_name() {
        let l = list(&["mcp__fx__*"]);
        assert!(l.matches("fx", "echo"));
        // A tool of `fx` whose own name holds `__` is still `fx`'s.
        assert!(l.matches("fx", "admin__echo"));
        assert!(!l.matches("fx__admin", "echo"));
        assert!(l.may_match_a_tool_of("fx"));
        assert!(!l.may_match_a_tool_of("fx__admin"));
        // The longer server is named by its own whole name.
        let admin = list(&["mcp__fx__admin__*"]);
        assert!(admin.matches("fx__admin", "echo"));
        assert!(!admin.matches("fx", "echo"));
        // ... and an exact name may be read either way, both meaning that very name.
        let exact = list(&["mcp__fx__admin__echo"]);
        assert!(exact.matches("fx__admin", "echo"));
        assert!(exact.matches("fx", "admin__echo"));
        assert!(!exact.matches("fx", "echo"));
        // `*` for the server is any whole server name.
        let any = list(&["mcp__*__echo"]);
        assert!(any.matches("fx", "echo") && any.matches("fx__admin", "echo"));
        assert!(!any.matches("fx", "admin__echo2"));
    }

    #[test]
    fn patterns_without_a_server_part_match_whole_names() {
        for p in ["*", "mcp__*", "mcp__f*"] {
            let l = list(&[p]);
            assert!(
                l.matches("fx", "echo") && l.matches("fx__admin", "echo"),
                "{p}"
            );
            assert!(l.may_match_a_tool_of("fx__admin"), "{p}");
            assert!(l.matches_every_tool_of("fx"), "{p}");
        }
        let l = list(&["mcp__fx*"]);
        assert!(!l.matches("gx", "echo") && !l.may_match_a_tool_of("gx"));
        // A whole-name glob may end inside the tool name.
        let l = list(&["mcp__fx__ad*"]);
        assert!(l.matches("fx", "admin") && !l.matches("fx", "echo"));
        assert!(!l.matches("fx__admin", "echo"));
    }

    #[test]
    fn servers_a_list_may_reach_and_servers_it_covers() {
        let l = list(&["mcp__time__get_current_time", "mcp__*__read_*"]);
        assert!(l.may_match_a_tool_of("time"));
        assert!(l.may_match_a_tool_of("anything"));
        assert!(!l.matches_every_tool_of("time"));
        let l = list(&["mcp__git__git_log"]);
        assert!(l.may_match_a_tool_of("git") && !l.may_match_a_tool_of("time"));
        let l = list(&["mcp__git__*"]);
        assert!(l.matches_every_tool_of("git") && !l.matches_every_tool_of("github"));
        // Underscores at the edges of server names cut where the name ends.
        let l = list(&["mcp___x___*"]);
        assert!(l.matches("_x_", "t") && l.matches_every_tool_of("_x_"));
    }

    #[test]
    fn unsupported_patterns_are_refused() {
        for p in [
            "mcp__git__git_?og",
            "mcp__{a,b}__x",
            "",
            " mcp__a__b",
            "a\nb",
        ] {
            assert!(Allowlist::new(&[p.to_string()]).is_err(), "{p:?}");
        }
    }
}
