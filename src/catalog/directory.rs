//! What the LLM and sandboxed code can learn about downstream tools: search, one tool's schema,
//! and the server list, answered over the live upstream pool, always within a viewer's
//! `Reach`: the LLM's (the server-wide policy), an execution's (the policy and its
//! `allowedTools`), or the operator's (everything, for the command line).
//!
//! A tool the viewer may not call is not shown: search leaves it out, `getToolSchema` answers as
//! for a tool that does not exist, server listings do not count it. A look-up starts only the
//! servers the viewer may cause to start (those that may hold a tool it may call,
//! `Reach::may_start`); the others are not searched, and say so (`notSearched`, `callable:
//! false`). Queries are bounded (`MAX_QUERY_BYTES`, `MAX_QUERY_WORDS`): every search costs
//! the host CPU.
//!
//! The server list also names the servers a project brings that wait for the user's approval
//! ([`set_needs_approval`]): they are not in the pool, so nothing here can start them.

use serde::Serialize;
use serde_json::Value;

use crate::broker::Reach;
use crate::catalog::{self, CatalogEntry};
use crate::upstream::{ServerStatus, UpstreamError, UpstreamPool};

/// Descriptions in search results are cut to this many characters.
const SUMMARY_CHARS: usize = 120;
/// Longest search query accepted, in bytes.
pub(crate) const MAX_QUERY_BYTES: usize = 1024;
/// Most distinct words a search query may hold.
pub(crate) const MAX_QUERY_WORDS: usize = 32;

/// Why a look-up has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LookupError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The query is too large to search.
    #[error("{0}")]
    Query(String),
}
/// Matches a search returns when the caller names no limit.
pub(crate) const DEFAULT_LIMIT: usize = 10;
/// The most matches a search returns, whatever the caller asks.
pub(crate) const MAX_LIMIT: usize = 100;

/// How much `searchTools` says about each match.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// Names only: the cheapest answer.
    Name,
    /// Names and one-line descriptions (the default).
    #[default]
    Summary,
    /// Names, whole descriptions and compact TypeScript signatures.
    Full,
}

/// A search as the LLM (`searchTools`) or sandboxed code (`searchTools`, `search_tools`) asks
/// it. Unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    pub query: String,
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub detail: Detail,
}

/// One search to run: `limit` defaulted and bounded (here, and only here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub text: String,
    pub server: Option<String>,
    pub limit: usize,
    pub detail: Detail,
}

impl SearchQuery {
    pub fn new(text: String, server: Option<String>, limit: Option<usize>, detail: Detail) -> Self {
        SearchQuery {
            text,
            server,
            limit: limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
            detail,
        }
    }
}

impl From<SearchArgs> for SearchQuery {
    fn from(args: SearchArgs) -> Self {
        SearchQuery::new(args.query, args.server, args.limit, args.detail)
    }
}

#[derive(Debug, Serialize)]
pub struct Match {
    pub name: String,
    pub server: String,
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Unavailable {
    pub server: String,
    pub error: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub matches: Vec<Match>,
    /// Servers that could not be searched, with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
    /// Configured servers that were not connected and were connected for this search.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connected: Vec<String>,
    /// Configured servers not searched (nor started): none of their tools may be called here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_searched: Vec<String>,
}

impl SearchResult {
    /// The readable text of a search: one line per match (a second, indented line with the
    /// signature at `full` detail), then what was connected or could not be searched.
    pub fn text(&self, query: &str) -> String {
        let mut lines: Vec<String> = Vec::new();
        for m in &self.matches {
            match &m.description {
                Some(d) if !d.is_empty() => lines.push(format!("{} - {}", m.name, d)),
                _ => lines.push(m.name.clone()),
            }
            if let Some(sig) = &m.signature {
                lines.push(format!("    {sig}"));
            }
        }
        if lines.is_empty() {
            lines.push(format!("No tool matches `{query}`."));
        }
        if !self.connected.is_empty() {
            lines.push(format!(
                "(connected {} to search {})",
                self.connected.join(", "),
                if self.connected.len() == 1 {
                    "it"
                } else {
                    "them"
                }
            ));
        }
        for u in &self.unavailable {
            lines.push(format!("(not searched: {})", u.error));
        }
        if !self.not_searched.is_empty() {
            lines.push(format!(
                "(not searched, not started: {}; no tool of theirs may be called here)",
                self.not_searched.join(", ")
            ));
        }
        lines.join("\n")
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolSchema {
    pub name: String,
    pub server: String,
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub signature: String,
}

/// Searches the tools of every server (or of one) for the operator: every tool, every server
/// connected as needed (`search_within` with `Reach::everything()`).
pub async fn search(pool: &UpstreamPool, query: &SearchQuery) -> Result<SearchResult, LookupError> {
    search_within(pool, &Reach::everything(), query).await
}

/// Refuses a query too large to search.
fn check_query(text: &str) -> Result<(), LookupError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(LookupError::Query(format!(
            "search query is {} bytes, over the limit of {MAX_QUERY_BYTES} bytes",
            text.len()
        )));
    }
    let mut words = catalog::tokens(text);
    words.sort();
    words.dedup();
    if words.len() > MAX_QUERY_WORDS {
        return Err(LookupError::Query(format!(
            "search query has {} distinct words, over the limit of {MAX_QUERY_WORDS}",
            words.len()
        )));
    }
    Ok(())
}

/// Searches the tools `reach` may call, of every server (or of one), with the given level of
/// detail for each match. Servers `reach` may start that are not connected yet are connected
/// (concurrently) and listed in [`SearchResult::connected`], so a query naming a configured
/// server that has not been used yet still finds its tools, and says it connected it; the
/// others are neither started nor searched, and are listed in [`SearchResult::not_searched`].
pub(crate) async fn search_within(
    pool: &UpstreamPool,
    reach: &Reach<'_>,
    query: &SearchQuery,
) -> Result<SearchResult, LookupError> {
    check_query(&query.text)?;
    let (limit, detail) = (query.limit, query.detail);
    // An alias names its server.
    let server = match query.server.as_deref() {
        Some(server) => Some(pool.ensure_known(server)?),
        None => None,
    };
    let server = server.as_deref();
    let statuses = pool.statuses().await;
    let (startable, not_searched): (Vec<&ServerStatus>, Vec<&ServerStatus>) = statuses
        .iter()
        .filter(|s| server.is_none_or(|only| only == s.name))
        .partition(|s| reach.may_start(&s.name));
    let lookups = startable.iter().map(|s| async move {
        let tools = pool.tools(&s.name).await;
        (s.name.clone(), s.state == "idle", tools)
    });
    let listed = futures::future::join_all(lookups).await;
    let mut entries = Vec::new();
    let mut tools_by_name = std::collections::BTreeMap::new();
    let mut unavailable = Vec::new();
    let mut connected = Vec::new();
    for (server, was_idle, tools) in listed {
        match tools {
            Ok(tools) => {
                if was_idle {
                    connected.push(server.clone());
                }
                entries.extend(
                    tools
                        .iter()
                        .filter(|t| reach.sees(&server, &t.name))
                        .map(|t| CatalogEntry::from_tool(&server, t)),
                );
                tools_by_name.insert(server, tools);
            }
            Err(e @ UpstreamError::UnknownServer { .. }) => return Err(e.into()),
            Err(e) => unavailable.push(Unavailable {
                server,
                error: e.to_string(),
            }),
        }
    }
    let matches = catalog::search(&entries, &query.text, None, limit)
        .into_iter()
        .map(|hit| {
            let e = hit.entry;
            let (description, signature) = match detail {
                Detail::Name => (None, None),
                Detail::Summary => (
                    Some(catalog::one_line(Some(&e.description), SUMMARY_CHARS)),
                    None,
                ),
                Detail::Full => {
                    let signature = tools_by_name
                        .get(&e.server)
                        .and_then(|tools| tools.iter().find(|t| t.name == e.tool))
                        .map(|t| {
                            catalog::signature(&e.tool, &t.input_schema, t.output_schema.as_deref())
                        });
                    (Some(e.description.trim().to_string()), signature)
                }
            };
            Match {
                name: e.qualified(),
                server: e.server.clone(),
                tool: e.tool.clone(),
                description,
                signature,
            }
        })
        .collect();
    Ok(SearchResult {
        matches,
        unavailable,
        connected,
        not_searched: not_searched.into_iter().map(|s| s.name.clone()).collect(),
    })
}

/// The schema and TypeScript signature of one tool `reach` may call, by its qualified name. A
/// tool it may not call answers exactly as a tool the server does not have, and its server is
/// not started for it.
pub(crate) async fn tool_schema(
    pool: &UpstreamPool,
    reach: &Reach<'_>,
    name: &str,
) -> Result<ToolSchema, UpstreamError> {
    let (server, tool) = pool.resolve(name)?;
    let unknown = || UpstreamError::UnknownTool {
        server: server.clone(),
        tool: tool.clone(),
    };
    if !reach.sees(&server, &tool) {
        return Err(unknown());
    }
    let tools = pool.tools(&server).await?;
    let found = tools.iter().find(|t| t.name == tool).ok_or_else(unknown)?;
    Ok(ToolSchema {
        name: catalog::qualified_name(&server, &tool),
        signature: catalog::signature(&tool, &found.input_schema, found.output_schema.as_deref()),
        description: found.description.as_deref().unwrap_or_default().to_string(),
        input_schema: Value::Object((*found.input_schema).clone()),
        output_schema: found
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone())),
        server,
        tool,
    })
}

/// A server the project's own files define that the user has not approved: listed, never
/// started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsApproval {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// How to approve it (`needs approval: run `code-executor trust NAME` in <project>`).
    pub message: String,
}

/// The state `servers` gives a server that needs approval.
pub const NEEDS_APPROVAL: &str = "needs approval";

static AWAITING_APPROVAL: std::sync::RwLock<Vec<NeedsApproval>> =
    std::sync::RwLock::new(Vec::new());

/// Sets the servers [`servers`] lists as needing approval (the assembly does, once per
/// discovery).
pub fn set_needs_approval(servers: Vec<NeedsApproval>) {
    *AWAITING_APPROVAL.write().unwrap_or_else(|e| e.into_inner()) = servers;
}

/// Every configured server and its state (connects nothing), with the servers that need
/// approval.
pub async fn servers(pool: &UpstreamPool) -> Vec<ServerStatus> {
    let mut all = pool.statuses().await;
    let awaiting = AWAITING_APPROVAL.read().unwrap_or_else(|e| e.into_inner());
    all.extend(awaiting.iter().map(|s| ServerStatus {
        name: s.name.clone(),
        transport: s.transport,
        state: NEEDS_APPROVAL,
        tools: None,
        protocol: None,
        aliases: Vec::new(),
        error: Some(s.message.clone()),
        callable: None,
    }));
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// Every configured server as `reach` sees it (connects nothing): tool counts hold only the
/// tools it may call, and `callable` says whether it may hold any (whether look-ups may start
/// it).
pub(crate) async fn servers_within(pool: &UpstreamPool, reach: &Reach<'_>) -> Vec<ServerStatus> {
    let mut statuses = servers(pool).await;
    for status in &mut statuses {
        if status.state == NEEDS_APPROVAL {
            // Not in the pool: nothing can start it or call it until the user approves it.
            status.callable = Some(false);
            continue;
        }
        let callable = reach.may_start(&status.name);
        status.callable = Some(callable);
        status.tools = pool.cached_tools(&status.name).map(|tools| {
            tools
                .iter()
                .filter(|t| callable && reach.sees(&status.name, &t.name))
                .count()
        });
    }
    statuses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_defaulted_and_bounded_once() {
        let query = |limit| SearchQuery::new("q".into(), None, limit, Detail::Name).limit;
        assert_eq!(query(None), DEFAULT_LIMIT);
        assert_eq!(query(Some(0)), 1);
        assert_eq!(query(Some(7)), 7);
        assert_eq!(query(Some(10_000)), MAX_LIMIT);
        let args: SearchArgs = serde_json::from_value(serde_json::json!({"query": "git"})).unwrap();
        assert_eq!(SearchQuery::from(args).detail, Detail::Summary);
        assert!(
            serde_json::from_value::<SearchArgs>(serde_json::json!({"query": "a", "x": 1}))
                .is_err()
        );
    }

    #[test]
    fn queries_too_large_to_search_are_refused() {
        assert!(check_query("current time in a timezone").is_ok());
        let long = "a".repeat(MAX_QUERY_BYTES + 1);
        let e = check_query(&long).unwrap_err().to_string();
        assert!(e.contains("bytes, over the limit of 1024"), "{e}");
        let many: Vec<String> = (0..=MAX_QUERY_WORDS).map(|i| format!("w{i}")).collect();
        let e = check_query(&many.join(" ")).unwrap_err().to_string();
        assert!(e.contains("distinct words"), "{e}");
        // Repeated words count once.
        assert!(check_query(&"time ".repeat(100)).is_ok());
    }
}
