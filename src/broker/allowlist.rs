//! Name patterns: the per-execution `allowedTools` and the server-wide policy lists, as exact
//! names and `*` globs. Pure logic, no I/O.
//!
//! Names are compared exactly as given: no case folding, no Unicode normalisation, and a name
//! holding whitespace or control characters never matches anything.

use globset::{GlobBuilder, GlobMatcher};

use super::refusal::Refusal;

/// A pattern in `allowedTools` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tool pattern `{pattern}`: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

/// The tools one execution may call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowlist {
    exact: Vec<String>,
    globs: Vec<GlobMatcher>,
}

pub(super) fn is_clean(name: &str) -> bool {
    !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

impl Allowlist {
    /// Builds an allowlist. Entries are exact names, or globs where `*` matches any run of
    /// characters; `?`, `[...]` and `{...}` are taken literally-unsafe and refused.
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
            if pattern.contains('*') {
                let glob = GlobBuilder::new(pattern)
                    .case_insensitive(false)
                    .literal_separator(false)
                    .backslash_escape(false)
                    .build()
                    .map_err(|e| PatternError {
                        pattern: pattern.clone(),
                        reason: e.to_string(),
                    })?;
                list.globs.push(glob.compile_matcher());
            } else {
                list.exact.push(pattern.clone());
            }
        }
        Ok(list)
    }

    /// Whether a clean `qualified` name (`mcp__<server>__<tool>`) matches an entry.
    pub(crate) fn matches(&self, qualified: &str) -> bool {
        is_clean(qualified)
            && (self.exact.iter().any(|e| e == qualified)
                || self.globs.iter().any(|g| g.is_match(qualified)))
    }

    /// Whether `qualified` may be called under this execution's allowlist.
    pub(crate) fn check(&self, qualified: &str) -> Result<(), Refusal> {
        if !is_clean(qualified) {
            return Err(Refusal::MalformedName(qualified.escape_debug().to_string()));
        }
        if self.matches(qualified) {
            Ok(())
        } else {
            Err(Refusal::NotAllowed(qualified.to_string()))
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
        assert!(list(&[]).check("mcp__time__get_current_time").is_err());
    }

    #[test]
    fn exact_names_match_exactly() {
        let l = list(&["mcp__time__get_current_time"]);
        assert!(l.check("mcp__time__get_current_time").is_ok());
        for bad in [
            "mcp__time__get_current_timeX",
            "Xmcp__time__get_current_time",
            "mcp__time__get_current_time ",
            "mcp__time__get_current_time\n",
            "mcp__time__get_current_time\0",
            "MCP__TIME__GET_CURRENT_TIME",
            "mcp__time__get_current_tіme", // Cyrillic і
            "mcp__time__get_current",
        ] {
            assert!(l.check(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn globs_match_whole_names() {
        let l = list(&["mcp__git__*", "mcp__*__read_*"]);
        assert!(l.check("mcp__git__git_log").is_ok());
        assert!(l.check("mcp__fs__read_file").is_ok());
        assert!(l.check("mcp__github__create_issue").is_err());
        assert!(l.check("mcp__fs__write_file").is_err());
        assert!(l.check("xmcp__git__git_log").is_err());
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
