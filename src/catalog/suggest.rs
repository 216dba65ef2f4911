//! "Did you mean": the tools and servers a name that resolves to nothing most likely meant, and
//! the words that say so. Pure logic over the tools a viewer is shown (the caller passes only
//! those: a tool the server-wide policy hides is never suggested).
//!
//! A tool is suggested when its name is within a small edit distance of the name asked (whole,
//! `server__tool`, or its tool part alone: a bare `get_current_time` finds
//! `mcp__time__get_current_time`), or when its tool name holds every word of the asked tool
//! part in order (`get_time` → `get_current_time`); then the top hit of a search for the asked
//! words comes last. At most [`MAX_SUGGESTIONS`] names.

use super::search::{CatalogEntry, search, tokens};

/// Most names one message suggests.
pub(crate) const MAX_SUGGESTIONS: usize = 3;

/// Longest name anything is suggested for, in bytes: no tool is named at such length, and
/// comparing costs its length times each candidate's.
const MAX_ASKED_BYTES: usize = 256;

/// The edit distance within which two names of `len` characters are close: one typo in a short
/// name, about one in five characters in a long one.
fn close_within(len: usize) -> usize {
    (len / 5).max(1)
}

/// Whether every word of `words` appears in `within`, in order.
fn holds_in_order(within: &[String], words: &[String]) -> bool {
    let mut rest = within.iter();
    words.iter().all(|w| rest.any(|x| x == w))
}

/// How alike a name is, lower first: (class, distance, on another server than the one asked,
/// catalogue order); class 0 is a close spelling, 1 the asked words within the name.
type Rank = (u8, usize, bool, usize);

/// The tools of `entries` that `asked` most likely meant, best first, at most
/// [`MAX_SUGGESTIONS`].
pub(crate) fn tools<'a>(asked: &str, entries: &'a [CatalogEntry]) -> Vec<&'a CatalogEntry> {
    if asked.len() > MAX_ASKED_BYTES {
        return Vec::new();
    }
    let lower = asked.to_lowercase();
    let rest = lower.strip_prefix("mcp__").unwrap_or(&lower);
    let (asked_server, tool_part) = match rest.split_once("__") {
        Some((server, tool)) if !tool.is_empty() => (Some(server), tool),
        _ => (None, rest),
    };
    let words = tokens(tool_part);
    let mut ranked: Vec<(Rank, &CatalogEntry)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let server = entry.server.to_lowercase();
        let tool = entry.tool.to_lowercase();
        let whole = format!("{server}__{tool}");
        let d_whole = strsim::osa_distance(rest, &whole);
        let d_tool = strsim::osa_distance(tool_part, &tool);
        let elsewhere = asked_server.is_some_and(|s| s != server);
        let key = if d_whole <= close_within(whole.len()) || d_tool <= close_within(tool.len()) {
            (0, d_whole.min(d_tool), elsewhere, i)
        } else if !words.is_empty() && holds_in_order(&tokens(&entry.tool), &words) {
            let extra = tokens(&entry.tool).len() - words.len();
            (1, extra, elsewhere, i)
        } else {
            continue;
        };
        ranked.push((key, entry));
    }
    ranked.sort_by_key(|(key, _)| *key);
    let mut found: Vec<&CatalogEntry> = ranked.into_iter().map(|(_, e)| e).collect();
    found.truncate(MAX_SUGGESTIONS);
    if found.len() < MAX_SUGGESTIONS && !words.is_empty() {
        let server = asked_server.and_then(|s| {
            entries
                .iter()
                .find(|e| e.server.to_lowercase() == s)
                .map(|e| e.server.as_str())
        });
        let query = words.join(" ");
        let top = search(entries, &query, server, 1)
            .into_iter()
            .chain(search(entries, &query, None, 1))
            .next();
        if let Some(hit) = top
            && !found.iter().any(|e| std::ptr::eq(*e, hit.entry))
        {
            found.push(hit.entry);
        }
    }
    found
}

/// The names of `servers` that `asked` most likely meant (case aside, within a small edit
/// distance, or holding its words), best first, at most [`MAX_SUGGESTIONS`].
pub(crate) fn servers<'a>(asked: &str, servers: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    if asked.len() > MAX_ASKED_BYTES {
        return Vec::new();
    }
    let lower = asked.to_lowercase();
    let words = tokens(asked);
    let mut ranked: Vec<((u8, usize, usize), &str)> = Vec::new();
    for (i, name) in servers.into_iter().enumerate() {
        let d = strsim::osa_distance(&lower, &name.to_lowercase());
        let key = if d <= close_within(name.len().max(4)) {
            (0, d, i)
        } else if !words.is_empty() && holds_in_order(&tokens(name), &words) {
            (1, tokens(name).len() - words.len(), i)
        } else {
            continue;
        };
        ranked.push((key, name));
    }
    ranked.sort_by_key(|(key, _)| *key);
    ranked.dedup_by(|a, b| a.1 == b.1);
    ranked
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, n)| n)
        .collect()
}

/// `; did you mean `a`, `b` or `c`?` for the names suggested (empty for none). `not_allowed`
/// are those of them the execution's `allowedTools` leaves out: the words say how to allow them.
pub(crate) fn did_you_mean(names: &[String], not_allowed: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    let list = match quoted.as_slice() {
        [] => return String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    let mut text = format!("; did you mean {list}?");
    match not_allowed {
        [] => {}
        [one] => text.push_str(&format!(
            " `{one}` is not in allowedTools for this execution: add \"{one}\" to allowedTools to call it."
        )),
        many => text.push_str(&format!(
            " Not in allowedTools for this execution: {}; add the one you mean to allowedTools to call it.",
            many.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str, tool: &str, description: &str) -> CatalogEntry {
        CatalogEntry {
            server: server.into(),
            tool: tool.into(),
            description: description.into(),
            params: Vec::new(),
        }
    }

    fn catalogue() -> Vec<CatalogEntry> {
        vec![
            entry("time", "convert_time", "Convert time between timezones"),
            entry(
                "time",
                "get_current_time",
                "Get current time in a specific timezone",
            ),
            entry("git", "git_log", "Shows the commit logs"),
            entry("git", "git_status", "Shows the working tree status"),
            entry("Test-Store", "get_customer", "One customer by id"),
            entry("Test-Store", "list_customers", "Every customer"),
        ]
    }

    fn names(asked: &str) -> Vec<String> {
        let entries = catalogue();
        tools(asked, &entries)
            .into_iter()
            .map(CatalogEntry::qualified)
            .collect()
    }

    #[test]
    fn a_bare_tool_name_finds_its_qualified_name() {
        assert_eq!(names("get_current_time")[0], "mcp__time__get_current_time");
        // Its words, in order, within a longer name; then the top search hit.
        assert_eq!(
            names("get_time"),
            ["mcp__time__get_current_time", "mcp__time__convert_time"]
        );
        assert_eq!(names("gitlog")[0], "mcp__git__git_log");
    }

    #[test]
    fn typos_in_whole_names_are_close() {
        assert_eq!(
            names("mcp__time__get_curent_time")[0],
            "mcp__time__get_current_time"
        );
        assert_eq!(
            names("mcp__tme__get_current_time")[0],
            "mcp__time__get_current_time"
        );
        assert_eq!(names("mcp__git__git_stauts")[0], "mcp__git__git_status");
        assert_eq!(
            names("mcp__test-store__get_customer")[0],
            "mcp__Test-Store__get_customer"
        );
        // A tool part asked of one server prefers that server's tools.
        assert_eq!(names("mcp__git__log")[0], "mcp__git__git_log");
    }

    #[test]
    fn nothing_alike_suggests_nothing_and_suggestions_are_few() {
        assert!(names("zzqx").is_empty());
        assert!(names("mcp__nothing__qqq_zzz").is_empty());
        assert!(names("get").len() <= MAX_SUGGESTIONS);
        assert!(names(&"get_current_time".repeat(100)).is_empty());
        // Only what the caller passes can be suggested: a hidden tool never is.
        let shown: Vec<CatalogEntry> = catalogue()
            .into_iter()
            .filter(|e| e.tool != "get_current_time")
            .collect();
        let found: Vec<String> = tools("get_current_time", &shown)
            .into_iter()
            .map(CatalogEntry::qualified)
            .collect();
        assert!(
            !found.iter().any(|n| n.ends_with("get_current_time")),
            "{found:?}"
        );
    }

    #[test]
    fn servers_close_to_the_name() {
        let all = ["Test-Store", "broken", "git", "time"];
        assert_eq!(servers("tme", all), ["time"]);
        assert_eq!(servers("test-store", all), ["Test-Store"]);
        assert_eq!(servers("store", all), ["Test-Store"]);
        assert_eq!(servers("gti", all), ["git"]);
        assert!(servers("database", all).is_empty());
    }

    #[test]
    fn the_words_of_a_suggestion() {
        assert_eq!(did_you_mean(&[], &[]), "");
        let one = vec!["mcp__time__get_current_time".to_string()];
        assert_eq!(
            did_you_mean(&one, &[]),
            "; did you mean `mcp__time__get_current_time`?"
        );
        assert_eq!(
            did_you_mean(&one, &one),
            "; did you mean `mcp__time__get_current_time`? `mcp__time__get_current_time` is not in allowedTools for this execution: add \"mcp__time__get_current_time\" to allowedTools to call it."
        );
        let pair = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            did_you_mean(&pair, &pair[1..]),
            "; did you mean `a` or `b`? `b` is not in allowedTools for this execution: add \"b\" to allowedTools to call it."
        );
        let two = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        assert_eq!(
            did_you_mean(&two, &two[1..]),
            "; did you mean `a`, `b` or `c`? Not in allowedTools for this execution: `b`, `c`; add the one you mean to allowedTools to call it."
        );
    }
}
