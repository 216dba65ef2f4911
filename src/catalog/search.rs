//! Ranked search over tool names, servers, descriptions and parameter names.
//!
//! Scoring: an exact qualified or tool name wins outright; otherwise every query word scores by
//! where it matches (tool name > server > description > parameter names) and how (the same
//! word or stem > a prefix > a synonym > a close spelling, Jaro-Winkler), weighted by how rare
//! the word is in the catalogue, and scaled by the share of query words matched. Pure logic;
//! `tests/search_quality.rs` holds it to a fixed set of real queries over a 100+ tool catalogue.

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
        super::names::qualified_name(&self.server, &self.tool)
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
pub(crate) fn tokens(text: &str) -> Vec<String> {
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
    "me", "i", "all", "get", "some", "this", "that", "it", "its", "into", "at", "as", "be", "can",
    "how", "what", "which", "do", "does", "via", "using", "tool", "tools",
];

/// Words that mean the same thing in tool names and descriptions (each group is one meaning).
const SYNONYMS: &[&[&str]] = &[
    &["issue", "ticket", "bug"],
    &["pr", "pull", "merge"],
    &["repo", "repository"],
    &["delete", "remove", "rm", "erase", "destroy"],
    &["create", "add", "new", "make", "open", "insert"],
    &["update", "edit", "modify", "change", "patch", "rename"],
    &["search", "find", "query", "lookup", "look"],
    &["list", "enumerate", "browse"],
    &[
        "read", "fetch", "retrieve", "view", "show", "load", "download",
    ],
    &["write", "save", "store", "upload"],
    &["directory", "folder", "dir"],
    &["file", "document", "doc"],
    &["event", "meeting", "appointment"],
    &["calendar", "schedule"],
    &["email", "mail", "inbox"],
    &["message", "msg", "chat", "dm"],
    &["send", "post", "notify", "reply"],
    &["database", "db", "sql"],
    &["table", "tables", "schema"],
    &["user", "member", "person", "people", "account"],
    &["channel", "room"],
    &["comment", "note", "annotation"],
    &["timezone", "tz", "zone"],
    &["time", "clock", "date", "datetime", "now"],
    &["log", "history"],
    &["diff", "changes", "difference"],
    &["branch", "checkout"],
    &["stock", "inventory"],
    &["price", "cost", "pricing"],
    &["customer", "client"],
    &["order", "purchase"],
    &["page", "wiki"],
    &["screenshot", "capture"],
    &["navigate", "goto", "visit", "url"],
    &["run", "execute", "exec"],
];

/// A crude English stemmer: plural and verb endings, so `issues`/`issue` and
/// `commits`/`committed`/`commit` meet.
pub(crate) fn stem(word: &str) -> String {
    let w = word;
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..n - 3]);
    }
    if n > 5 && w.ends_with("ing") {
        let base = &w[..n - 3];
        return undouble(base);
    }
    if n > 4 && w.ends_with("ed") {
        let base = &w[..n - 2];
        return undouble(base);
    }
    if n > 4
        && (w.ends_with("ches") || w.ends_with("shes") || w.ends_with("sses") || w.ends_with("xes"))
    {
        return w[..n - 2].to_string();
    }
    if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        return w[..n - 1].to_string();
    }
    w.to_string()
}

/// `committ` → `commit`, `mapp` → `map`.
fn undouble(base: &str) -> String {
    let b = base.as_bytes();
    if b.len() >= 3
        && b[b.len() - 1] == b[b.len() - 2]
        && !matches!(b[b.len() - 1], b'l' | b's' | b'z')
    {
        return base[..base.len() - 1].to_string();
    }
    base.to_string()
}

fn synonym_group(word: &str) -> Option<usize> {
    SYNONYMS.iter().position(|g| g.contains(&word))
}

/// The searchable words of one field: stems, and synonym groups.
#[derive(Default)]
struct Field {
    stems: BTreeSet<String>,
    groups: BTreeSet<usize>,
}

impl Field {
    fn new(text_tokens: impl IntoIterator<Item = String>) -> Self {
        let mut f = Field::default();
        for t in text_tokens {
            let s = stem(&t);
            if let Some(g) = synonym_group(&s).or_else(|| synonym_group(&t)) {
                f.groups.insert(g);
            }
            f.stems.insert(s);
        }
        f
    }

    /// How well one (stemmed) query word matches: 1 the same word, 0.7 a prefix of a word,
    /// 0.6 a synonym, 0.5 a near spelling (Jaro-Winkler), 0 none.
    fn score(&self, q: &QueryWord) -> f64 {
        if self.stems.contains(&q.stem) {
            return 1.0;
        }
        let mut best: f64 = 0.0;
        if q.group.is_some_and(|g| self.groups.contains(&g)) {
            best = 0.6;
        }
        for t in &self.stems {
            let s = if t.starts_with(q.stem.as_str()) && q.stem.len() >= 3 {
                0.7
            } else if q.stem.starts_with(t.as_str()) && t.len() >= 4 {
                0.6
            } else if q.stem.len() >= 4 && t.len() >= 4 && strsim::jaro_winkler(&q.stem, t) >= 0.92
            {
                0.5
            } else {
                0.0
            };
            best = best.max(s);
        }
        best
    }
}

struct QueryWord {
    stem: String,
    group: Option<usize>,
    /// Rarer words count more (inverse document frequency over the catalogue).
    weight: f64,
}

struct Indexed {
    name: Field,
    server: Field,
    params: Field,
    description: Field,
    /// The tool name's own words, for "the query names this tool" bonuses.
    name_stems: Vec<String>,
}

impl Indexed {
    fn new(entry: &CatalogEntry) -> Self {
        let name_tokens = tokens(&entry.tool);
        Indexed {
            name_stems: name_tokens.iter().map(|t| stem(t)).collect(),
            name: Field::new(name_tokens),
            server: Field::new(tokens(&entry.server)),
            params: Field::new(entry.params.iter().flat_map(|p| tokens(p))),
            description: Field::new(
                tokens(&entry.description)
                    .into_iter()
                    .filter(|t| !STOP_WORDS.contains(&t.as_str())),
            ),
        }
    }

    fn all_stems(&self) -> impl Iterator<Item = &String> {
        self.name
            .stems
            .iter()
            .chain(&self.server.stems)
            .chain(&self.params.stems)
            .chain(&self.description.stems)
    }
}

/// Ranks `entries` against `query`: an exact qualified or tool name first, then by how well
/// every query word matches the tool name (weight 3), server name (2), description (1.5) and
/// parameter names (1), rarer words weighing more, with a bonus when the query covers the
/// whole tool name and a penalty for each query word matched nowhere. Ties keep catalogue
/// order.
pub fn search<'a>(
    entries: &'a [CatalogEntry],
    query: &str,
    server: Option<&str>,
    limit: usize,
) -> Vec<SearchHit<'a>> {
    let query = query.trim();
    let candidates: Vec<&CatalogEntry> = entries
        .iter()
        .filter(|e| server.is_none_or(|s| e.server == s))
        .collect();
    let indexed: Vec<Indexed> = candidates.iter().map(|e| Indexed::new(e)).collect();
    let all_tokens = tokens(query);
    let meaningful: Vec<&String> = all_tokens
        .iter()
        .filter(|t| !STOP_WORDS.contains(&t.as_str()))
        .collect();
    let chosen: Vec<&String> = if meaningful.is_empty() {
        all_tokens.iter().collect()
    } else {
        meaningful
    };
    let n = indexed.len().max(1) as f64;
    let mut words: Vec<QueryWord> = Vec::new();
    for t in chosen {
        let s = stem(t);
        if words.iter().any(|w| w.stem == s) {
            continue;
        }
        let df = indexed
            .iter()
            .filter(|ix| ix.all_stems().any(|x| *x == s))
            .count() as f64;
        words.push(QueryWord {
            group: synonym_group(&s).or_else(|| synonym_group(t)),
            weight: 1.0 + (n / (df + 1.0)).ln().max(0.0),
            stem: s,
        });
    }
    let mut hits: Vec<SearchHit<'a>> = candidates
        .iter()
        .zip(&indexed)
        .filter_map(|(entry, ix)| {
            let score = score(entry, ix, query, &words);
            (score > 0.0 || query.is_empty()).then_some(SearchHit { entry, score })
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    hits
}

fn score(entry: &CatalogEntry, ix: &Indexed, query: &str, words: &[QueryWord]) -> f64 {
    if query == entry.qualified() || query == entry.tool {
        return 1000.0;
    }
    if words.is_empty() {
        return 0.0;
    }
    let mut total = 0.0;
    let mut matched = 0usize;
    let mut weight_sum = 0.0;
    for q in words {
        let s = 3.0 * ix.name.score(q)
            + 2.0 * ix.server.score(q)
            + 1.5 * ix.description.score(q)
            + 1.0 * ix.params.score(q);
        if s > 0.0 {
            matched += 1;
        }
        total += q.weight * s;
        weight_sum += q.weight;
    }
    if matched == 0 {
        return 0.0;
    }
    let mut score = total / weight_sum;
    // The query spells out the whole tool name (`create issue` → `create_issue`).
    let query_stems: Vec<&str> = words.iter().map(|w| w.stem.as_str()).collect();
    if !ix.name_stems.is_empty()
        && ix
            .name_stems
            .iter()
            .all(|s| query_stems.contains(&s.as_str()))
    {
        score += 2.0;
    }
    // Same words as the tool name in another spelling (`getCurrentTime`).
    if tokens(query) == tokens(&entry.tool) {
        score += 100.0;
    }
    let coverage = matched as f64 / words.len() as f64;
    score * coverage * coverage
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
