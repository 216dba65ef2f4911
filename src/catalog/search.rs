//! Ranked search over tool names, servers, descriptions and parameter names.
//!
//! Scoring: an exact qualified or tool name wins outright; otherwise every query token scores by
//! where it matches (tool name > server > parameter names > description), with whole-token
//! matches above prefix matches above close fuzzy matches (Jaro-Winkler).

use std::collections::BTreeSet;

use rmcp::model::Tool;

/// One searchable tool.
#[derive(Debug, Clone)]
pub struct CatalogEntry {
    pub server: String,
    pub tool: String,
    pub description: String,
    pub params: Vec<String>,
}

impl CatalogEntry {
    pub fn from_tool(server: &str, tool: &Tool) -> Self {
        let params = tool
            .input_schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        CatalogEntry {
            server: server.to_string(),
            tool: tool.name.to_string(),
            description: tool.description.as_deref().unwrap_or_default().to_string(),
            params,
        }
    }

    pub fn qualified(&self) -> String {
        super::qualified_name(&self.server, &self.tool)
    }
}

/// A search result with its score (higher is better).
#[derive(Debug, Clone)]
pub struct SearchHit<'a> {
    pub entry: &'a CatalogEntry,
    pub score: f64,
}

/// Splits into lowercase word tokens: `getCurrentTime`, `get_current-time` and
/// `get current time` all give `get`, `current`, `time`.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            if ch.is_uppercase() && prev_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
            word.extend(ch.to_lowercase());
        } else {
            prev_lower = false;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "with", "by", "from", "is", "my",
    "me", "i", "all", "get",
];

fn token_score(query: &str, field: &BTreeSet<String>) -> f64 {
    let mut best: f64 = 0.0;
    for t in field {
        let s = if t == query {
            1.0
        } else if t.starts_with(query) && query.len() >= 3 {
            0.7
        } else if query.starts_with(t.as_str()) && t.len() >= 4 {
            0.6
        } else if query.len() >= 4 && t.len() >= 4 && strsim::jaro_winkler(query, t) >= 0.9 {
            0.5
        } else {
            0.0
        };
        best = best.max(s);
    }
    best
}

/// Ranks `entries` against `query`. Ties keep catalogue order (server, then tool name).
pub fn search<'a>(
    entries: &'a [CatalogEntry],
    query: &str,
    server: Option<&str>,
    limit: usize,
) -> Vec<SearchHit<'a>> {
    let query = query.trim();
    let all_tokens = tokens(query);
    let meaningful: Vec<&String> = all_tokens
        .iter()
        .filter(|t| !STOP_WORDS.contains(&t.as_str()))
        .collect();
    let query_tokens: Vec<&String> = if meaningful.is_empty() {
        all_tokens.iter().collect()
    } else {
        meaningful
    };
    let mut hits: Vec<SearchHit<'a>> = entries
        .iter()
        .filter(|e| server.is_none_or(|s| e.server == s))
        .filter_map(|entry| {
            let score = score(entry, query, &query_tokens);
            (score > 0.0 || query.is_empty()).then_some(SearchHit { entry, score })
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    hits
}

fn score(entry: &CatalogEntry, query: &str, query_tokens: &[&String]) -> f64 {
    if query == entry.qualified() || query == entry.tool {
        return 1000.0;
    }
    let name: BTreeSet<String> = tokens(&entry.tool).into_iter().collect();
    let server: BTreeSet<String> = tokens(&entry.server).into_iter().collect();
    let params: BTreeSet<String> = entry.params.iter().flat_map(|p| tokens(p)).collect();
    let description: BTreeSet<String> = tokens(&entry.description).into_iter().collect();
    let mut total = 0.0;
    let mut matched = 0usize;
    for q in query_tokens {
        let s = 3.0 * token_score(q, &name)
            + 2.0 * token_score(q, &server)
            + 1.0 * token_score(q, &params)
            + 1.5 * token_score(q, &description);
        if s > 0.0 {
            matched += 1;
        }
        total += s;
    }
    if matched == 0 {
        return 0.0;
    }
    // Reward covering more of the query.
    total * (matched as f64 / query_tokens.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str, tool: &str, description: &str, params: &[&str]) -> CatalogEntry {
        CatalogEntry {
            server: server.into(),
            tool: tool.into(),
            description: description.into(),
            params: params.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn tokens_split_cases_and_separators() {
        assert_eq!(tokens("getCurrentTime"), ["get", "current", "time"]);
        assert_eq!(tokens("git_log-v2 X"), ["git", "log", "v2", "x"]);
        assert_eq!(tokens("HTTPServer"), ["httpserver"]);
    }

    #[test]
    fn ranks_the_right_tool_first() {
        let entries = vec![
            entry(
                "time",
                "get_current_time",
                "Get current time in a specific timezone",
                &["timezone"],
            ),
            entry(
                "time",
                "convert_time",
                "Convert time between timezones",
                &["source_timezone", "time", "target_timezone"],
            ),
            entry(
                "git",
                "git_log",
                "Shows the commit logs",
                &["repo_path", "max_count"],
            ),
            entry(
                "git",
                "git_commit",
                "Records changes to the repository",
                &["repo_path", "message"],
            ),
        ];
        let hits = search(&entries, "current time timezone", None, 3);
        assert_eq!(hits[0].entry.tool, "get_current_time");
        let hits = search(&entries, "commit history log", None, 3);
        assert_eq!(hits[0].entry.tool, "git_log");
        let hits = search(&entries, "mcp__git__git_commit", None, 3);
        assert_eq!(hits[0].entry.tool, "git_commit");
        let hits = search(&entries, "time", Some("git"), 10);
        assert!(hits.iter().all(|h| h.entry.server == "git"));
        assert_eq!(search(&entries, "zzzz qqqq", None, 10).len(), 0);
        assert_eq!(search(&entries, "time", None, 1).len(), 1);
    }
}
