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
//!
//! What a search shows is bounded whatever the catalogue holds (a skill's exports, each
//! description and signature, and the whole answer: [`MAX_MATCHES_BYTES`]), and text that
//! code or a downstream server wrote reaches it cleaned for an LLM (`text::for_llm`): every
//! match, the LLM's, code's and the operator's, is made here.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::broker::Reach;
use crate::catalog::{self, CatalogEntry, suggest};
use crate::text;
use crate::upstream::{ServerStatus, UpstreamError, UpstreamPool};

/// Descriptions in search results are cut to this many characters.
const SUMMARY_CHARS: usize = 120;
/// Descriptions at `full` detail are cut to this many characters (`getToolSchema` has them whole).
const FULL_DESCRIPTION_CHARS: usize = 2000;
/// A tool's TypeScript signature at `full` detail is cut to this many characters.
const FULL_SIGNATURE_CHARS: usize = 2000;
/// A skill's exported signature is cut to this many characters wherever it is shown.
const EXPORT_CHARS: usize = 240;
/// Most exported signatures of one skill a search shows (`full` detail; `summary` shows none,
/// only their number); `getToolSchema` shows [`SCHEMA_EXPORTS`].
const SEARCH_EXPORTS: usize = 16;
/// Most exported signatures `getToolSchema` shows of one skill.
const SCHEMA_EXPORTS: usize = 64;
/// The most bytes of JSON a search answer's matches take: later matches are left out and
/// counted ([`SearchResult::omitted`]), whatever the number of skills and tools.
pub(crate) const MAX_MATCHES_BYTES: usize = 32 * 1024;
/// Longest search query accepted, in bytes.
pub(crate) const MAX_QUERY_BYTES: usize = 1024;
/// Most distinct words a search query may hold.
pub(crate) const MAX_QUERY_WORDS: usize = 32;

/// Why a look-up has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LookupError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The query cannot be searched as asked (too large, or its server filter names no
    /// server): the message says what to change.
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
    /// `null` (what strict-mode frameworks send for a field they have no value for) is the
    /// default, like an absent field.
    #[serde(default)]
    pub detail: Option<Detail>,
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
        // An empty server name, which strict-mode frameworks make a model invent, names none.
        let server = args.server.filter(|s| !s.trim().is_empty());
        SearchQuery::new(
            args.query,
            server,
            args.limit,
            args.detail.unwrap_or_default(),
        )
    }
}

#[derive(Debug, Serialize)]
pub struct Match {
    pub name: String,
    /// Empty for a skill (which belongs to no server).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tool: String,
    /// `"skill"` for a saved skill; absent for a tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// A skill's language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<&'static str>,
    /// How code imports a skill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A skill's exported signatures (at `full` detail, at most [`SEARCH_EXPORTS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exports: Option<Vec<String>>,
    /// How many signatures a skill exports (beyond `name` detail).
    #[serde(rename = "exportCount", skip_serializing_if = "Option::is_none")]
    pub export_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// A saved skill as a search sees it (the project's skills, `workspace::skills`): found by the
/// same word matching as tools, over its name, description and exported signatures.
#[derive(Debug, Clone)]
pub struct SkillEntry {
    /// The skill's name (`fetch_report`).
    pub name: String,
    /// Its module (`skills/fetch_report.ts`).
    pub module: String,
    pub language: &'static str,
    pub description: String,
    pub exports: Vec<String>,
    /// How code imports it.
    pub import: String,
    /// When it was saved (RFC 3339; empty if unknown).
    pub saved_at: String,
}

/// The server name skills are searched under (a query word `skill` finds them all).
const SKILLS_SERVER: &str = "skills";

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
    /// Matches left out to keep the answer within [`MAX_MATCHES_BYTES`].
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl SearchResult {
    /// The readable text of a search: one line per match (a second, indented line with the
    /// signature at `full` detail), then what was connected or could not be searched.
    pub fn text(&self, query: &str) -> String {
        let mut lines: Vec<String> = Vec::new();
        for m in &self.matches {
            let name = match m.kind {
                Some(kind) => format!("{} ({kind})", m.name),
                None => m.name.clone(),
            };
            match &m.description {
                Some(d) if !d.is_empty() => lines.push(format!("{name} - {d}")),
                _ => lines.push(name),
            }
            if let Some(sig) = &m.signature {
                lines.push(format!("    {sig}"));
            }
            if let Some(import) = &m.import {
                lines.push(format!("    {import}"));
            }
            let shown = m.exports.as_ref().map_or(0, Vec::len);
            for export in m.exports.iter().flatten() {
                lines.push(format!("    {export}"));
            }
            match m.export_count {
                Some(n) if m.exports.is_none() && n > 0 => {
                    lines.push(format!("    ({n} exported signature{})", plural(n)));
                }
                Some(n) if n > shown => lines.push(format!("    …and {} more", n - shown)),
                _ => {}
            }
        }
        if lines.is_empty() {
            lines.push(format!("No tool matches `{query}`."));
        }
        if self.omitted > 0 {
            lines.push(format!(
                "({} more match{} left out: the answer holds at most {} KiB; search with more words, a lower limit or less detail)",
                self.omitted,
                if self.omitted == 1 { "" } else { "es" },
                MAX_MATCHES_BYTES / 1024
            ));
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

/// Refuses a query too large to search.
fn check_query(text: &str) -> Result<(), LookupError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(LookupError::Query(format!(
            "search query is {} bytes, over the limit of {MAX_QUERY_BYTES} bytes: search with a few keywords",
            text.len()
        )));
    }
    let mut words = catalog::tokens(text);
    words.sort();
    words.dedup();
    if words.len() > MAX_QUERY_WORDS {
        return Err(LookupError::Query(format!(
            "search query has {} distinct words, over the limit of {MAX_QUERY_WORDS}: search with a few keywords",
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
/// `skills` (the project's saved skills) are ranked with the tools, unless the query names a
/// server; they are marked `kind: "skill"`.
pub(crate) async fn search_within(
    pool: &UpstreamPool,
    reach: &Reach<'_>,
    query: &SearchQuery,
    skills: &[SkillEntry],
) -> Result<SearchResult, LookupError> {
    check_query(&query.text)?;
    let (limit, detail) = (query.limit, query.detail);
    let server = match query.server.as_deref() {
        Some(asked) => Some(known_server(pool, reach, asked)?),
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
    let tool_count = entries.len();
    if server.is_none() {
        entries.extend(skills.iter().map(|s| CatalogEntry {
            server: SKILLS_SERVER.to_string(),
            tool: s.name.clone(),
            description: format!("{}\n{}", s.description, s.exports.join("\n")),
            params: Vec::new(),
        }));
    }
    let matches = catalog::search(&entries, &query.text, None, limit)
        .into_iter()
        .map(|hit| {
            let e = hit.entry;
            let index = entries.iter().position(|x| std::ptr::eq(x, e));
            if let Some(skill) = index
                .filter(|&i| i >= tool_count)
                .map(|i| &skills[i - tool_count])
            {
                return skill_match(skill, detail);
            }
            let signature = (detail == Detail::Full)
                .then(|| tools_by_name.get(&e.server))
                .flatten()
                .and_then(|tools| tools.iter().find(|t| t.name == e.tool))
                .map(|t| {
                    let full =
                        catalog::signature(&e.tool, &t.input_schema, t.output_schema.as_deref());
                    shown(&full, FULL_SIGNATURE_CHARS)
                });
            Match {
                name: shown(&e.qualified(), usize::MAX),
                server: shown(&e.server, usize::MAX),
                tool: shown(&e.tool, usize::MAX),
                kind: None,
                language: None,
                import: None,
                description: description_at(&e.description, detail),
                exports: None,
                export_count: None,
                signature,
            }
        })
        .collect();
    let (matches, omitted) = within_bound(matches);
    Ok(SearchResult {
        matches,
        unavailable,
        connected,
        not_searched: not_searched.into_iter().map(|s| s.name.clone()).collect(),
        omitted,
    })
}

/// `text` as an answer shows it: cleaned for an LLM ([`text::for_llm`]), at most `max`
/// characters.
fn shown(text: &str, max: usize) -> String {
    text::clip_chars(&text::for_llm(text), max).into_owned()
}

/// A description as `detail` shows it: none, its first line, or (cut) the whole of it.
fn description_at(description: &str, detail: Detail) -> Option<String> {
    match detail {
        Detail::Name => None,
        Detail::Summary => Some(catalog::one_line(
            Some(text::for_llm(description).as_ref()),
            SUMMARY_CHARS,
        )),
        Detail::Full => Some(shown(description.trim(), FULL_DESCRIPTION_CHARS)),
    }
}

/// The first `max` of a skill's exported signatures, as shown.
fn exports_shown(skill: &SkillEntry, max: usize) -> Vec<String> {
    skill
        .exports
        .iter()
        .take(max)
        .map(|e| shown(e, EXPORT_CHARS))
        .collect()
}

/// A skill's match, with as much as `detail` asks: its name and import line always; beyond
/// `name`, its description (one line at `summary`) and how many signatures it exports; at
/// `full`, the first [`SEARCH_EXPORTS`] of them.
fn skill_match(skill: &SkillEntry, detail: Detail) -> Match {
    Match {
        name: shown(&skill.module, usize::MAX),
        server: String::new(),
        tool: String::new(),
        kind: Some("skill"),
        language: Some(skill.language),
        import: Some(shown(&skill.import, usize::MAX)),
        description: description_at(&skill.description, detail),
        exports: (detail == Detail::Full).then(|| exports_shown(skill, SEARCH_EXPORTS)),
        export_count: (detail != Detail::Name).then_some(skill.exports.len()),
        signature: None,
    }
}

/// The matches, in rank order, that fit in [`MAX_MATCHES_BYTES`] of JSON, and how many did not.
fn within_bound(matches: Vec<Match>) -> (Vec<Match>, usize) {
    let mut used = 0;
    let mut kept = Vec::new();
    let mut omitted = 0;
    for m in matches {
        let size = serde_json::to_vec(&m).map_or(usize::MAX, |json| json.len() + 1);
        if omitted == 0 && used + size <= MAX_MATCHES_BYTES {
            used += size;
            kept.push(m);
        } else {
            omitted += 1;
        }
    }
    (kept, omitted)
}

/// `getToolSchema("skills/<name>.ts")`: one skill, its text cleaned and bounded like a search
/// match's (every exported signature up to [`SCHEMA_EXPORTS`]).
pub(crate) fn skill_schema(skill: &SkillEntry) -> Value {
    let exports = exports_shown(skill, SCHEMA_EXPORTS);
    serde_json::json!({
        "name": shown(&skill.module, usize::MAX),
        "kind": "skill",
        "language": skill.language,
        "description": shown(skill.description.trim(), FULL_DESCRIPTION_CHARS),
        "import": shown(&skill.import, usize::MAX),
        "signature": exports.join("\n"),
        "exports": exports,
        "exportCount": skill.exports.len(),
        "savedAt": shown(&skill.saved_at, 64),
    })
}

/// The canonical name of the server a search filter names (an alias names its server); for a
/// name that is none, the error suggests those alike.
fn known_server(
    pool: &UpstreamPool,
    reach: &Reach<'_>,
    asked: &str,
) -> Result<String, LookupError> {
    pool.ensure_known(asked)
        .map_err(|e| LookupError::Query(format!("{e}{}", server_hint(pool, reach, asked))))
}

/// Most client sessions [`FailureMentions`] remembers; past them it starts afresh (each
/// session is then told of failed servers once more).
const MAX_SESSIONS_REMEMBERED: usize = 1024;

/// The failed servers each client session was told of in the LLM's `searchTools` answers. A
/// server that could not be searched is mentioned in a session's first answer after it failed
/// (and again when the reason changes), and whenever a search concerns it: its server filter
/// names it, or the query names it. Other answers leave it out: `listServers` says why any
/// server is down. (Code's searches always list them: code reads them, the LLM's context does
/// not pay for them.)
#[derive(Debug, Default)]
pub(crate) struct FailureMentions {
    /// Per session, the servers told of and the reason they were told.
    told: std::sync::Mutex<HashMap<String, HashMap<String, String>>>,
}

impl FailureMentions {
    /// Leaves out of `found` the failed servers `session` was told of already, unless `query`
    /// concerns them; remembers those it keeps.
    pub(crate) fn mention_once(
        &self,
        pool: &UpstreamPool,
        session: &str,
        query: &SearchQuery,
        found: &mut SearchResult,
    ) {
        if found.unavailable.is_empty() {
            return;
        }
        let mut told = self.told.lock().unwrap_or_else(|e| e.into_inner());
        if told.len() >= MAX_SESSIONS_REMEMBERED && !told.contains_key(session) {
            told.clear();
        }
        let told = told.entry(session.to_string()).or_default();
        found.unavailable.retain(|u| {
            let news = told.get(&u.server) != Some(&u.error);
            if news {
                told.insert(u.server.clone(), u.error.clone());
            }
            news || concerns(pool, query, &u.server)
        });
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whether a search is about `server`: its server filter names it (by any name), or its query
/// holds every word of one of the server's names.
fn concerns(pool: &UpstreamPool, query: &SearchQuery, server: &str) -> bool {
    if query
        .server
        .as_deref()
        .is_some_and(|s| pool.aliases().canonical(s) == server)
    {
        return true;
    }
    let words = catalog::tokens(&query.text);
    std::iter::once(server.to_string())
        .chain(pool.aliases().names_of(server))
        .any(|name| {
            let name_words = catalog::tokens(&name);
            !name_words.is_empty() && name_words.iter().all(|w| words.contains(w))
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
    let signature = catalog::signature(&tool, &found.input_schema, found.output_schema.as_deref());
    Ok(ToolSchema {
        name: catalog::qualified_name(&server, &tool),
        signature: text::for_llm(&signature).into_owned(),
        description: text::for_llm(found.description.as_deref().unwrap_or_default()).into_owned(),
        input_schema: Value::Object((*found.input_schema).clone()),
        output_schema: found
            .output_schema
            .as_ref()
            .map(|s| Value::Object((**s).clone())),
        server,
        tool,
    })
}

/// Who looks something up, for the words of a name that resolves to nothing: what it may call
/// and cause to start (`reach`), within what the server-wide policy shows (`shown`). Names are
/// suggested from what `shown` sees (never a tool the policy hides); those `reach` may not call
/// say how to allow them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Viewer<'a> {
    pub reach: Reach<'a>,
    pub shown: Reach<'a>,
}

impl<'a> Viewer<'a> {
    /// A viewer that may call everything it is shown: the LLM (`Reach::policy`), the operator.
    pub(crate) fn of(reach: Reach<'a>) -> Self {
        Viewer {
            reach,
            shown: reach,
        }
    }
}

/// The tools `viewer.shown` sees, to suggest from: those of the servers `viewer.reach` may
/// start (connected if need be, as a search would), and those already listed of the others
/// (nothing is started for them).
async fn shown_entries(pool: &UpstreamPool, viewer: &Viewer<'_>) -> Vec<CatalogEntry> {
    let servers: Vec<&str> = pool
        .server_names()
        .filter(|server| viewer.shown.may_start(server))
        .collect();
    let lookups = servers.into_iter().map(|server| async move {
        let tools = if viewer.reach.may_start(server) {
            pool.tools(server).await.ok()
        } else {
            pool.cached_tools(server)
        };
        (server, tools)
    });
    let mut entries = Vec::new();
    for (server, tools) in futures::future::join_all(lookups).await {
        for tool in tools.iter().flat_map(|t| t.iter()) {
            if viewer.shown.sees(server, &tool.name) {
                entries.push(CatalogEntry::from_tool(server, tool));
            }
        }
    }
    entries
}

/// `; did you mean ...?` for a tool name (`mcp__<server>__<tool>`, or a bare tool name) that
/// resolves to no tool `viewer` may see; empty when nothing is alike.
pub(crate) async fn tool_hint(pool: &UpstreamPool, viewer: &Viewer<'_>, asked: &str) -> String {
    let entries = shown_entries(pool, viewer).await;
    let found = suggest::tools(asked, &entries);
    let names: Vec<String> = found.iter().map(|e| e.qualified()).collect();
    let not_allowed: Vec<String> = found
        .iter()
        .filter(|e| !viewer.reach.sees(&e.server, &e.tool))
        .map(|e| e.qualified())
        .collect();
    suggest::did_you_mean(&names, &not_allowed)
}

/// `; did you mean ...?` for a server name that names no configured server: the configured
/// names and aliases of the servers `reach` may start that are alike.
pub(crate) fn server_hint(pool: &UpstreamPool, reach: &Reach<'_>, asked: &str) -> String {
    let aliases = pool.aliases().iter().map(|(alias, _)| alias);
    let names = pool
        .server_names()
        .chain(aliases)
        .filter(|name| reach.may_start(pool.aliases().canonical(name)));
    let found: Vec<String> = suggest::servers(asked, names)
        .into_iter()
        .map(String::from)
        .collect();
    suggest::did_you_mean(&found, &[])
}

/// `getToolSchema` as `viewer` asks it, its errors in words that say what to do: a name that
/// resolves to no tool suggests the likely ones; a tool the policy shows but the execution's
/// `allowedTools` leaves out says how to allow it (its server is not started for it); a tool
/// the policy hides answers as one that does not exist.
pub(crate) async fn schema_for(
    pool: &UpstreamPool,
    viewer: &Viewer<'_>,
    name: &str,
) -> Result<ToolSchema, String> {
    let (server, tool) = match pool.resolve(name) {
        Ok(pair) => pair,
        Err(e) => return Err(format!("{e}{}", tool_hint(pool, viewer, name).await)),
    };
    if viewer.shown.sees(&server, &tool)
        && let Err(refusal) =
            viewer
                .reach
                .check(&server, &tool, &catalog::qualified_name(&server, &tool))
    {
        return Err(refusal.to_string());
    }
    match tool_schema(pool, &viewer.reach, name).await {
        Ok(schema) => Ok(schema),
        Err(e @ UpstreamError::UnknownTool { .. }) => {
            Err(format!("{e}{}", tool_hint(pool, viewer, name).await))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The answer of `listServers` (the MCP tool and the sandbox's helper alike).
#[derive(Debug, Serialize)]
pub(crate) struct ServerList {
    pub servers: Vec<ServerStatus>,
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

    fn pool_of(names: &[&str]) -> UpstreamPool {
        let invalid = names
            .iter()
            .map(|n| (n.to_string(), "unusable".to_string()))
            .collect();
        let timeouts = crate::upstream::UpstreamTimeouts {
            connect: std::time::Duration::from_secs(1),
            call: std::time::Duration::from_secs(1),
        };
        UpstreamPool::new(Vec::new(), invalid, timeouts).with_aliases(
            crate::clients::aliases::Aliases::of_pairs(&[("mcp-store", "Test-Store")]),
        )
    }

    /// What a search leaves for the LLM after `mentions` saw it, as (unavailable servers).
    fn told(
        mentions: &FailureMentions,
        pool: &UpstreamPool,
        session: &str,
        query: (&str, Option<&str>),
        failed: &[(&str, &str)],
    ) -> Vec<String> {
        let mut found = SearchResult {
            matches: Vec::new(),
            unavailable: failed
                .iter()
                .map(|(server, error)| Unavailable {
                    server: server.to_string(),
                    error: error.to_string(),
                })
                .collect(),
            connected: Vec::new(),
            not_searched: Vec::new(),
            omitted: 0,
        };
        let query = SearchQuery::new(
            query.0.into(),
            query.1.map(String::from),
            None,
            Detail::Name,
        );
        mentions.mention_once(pool, session, &query, &mut found);
        found.unavailable.into_iter().map(|u| u.server).collect()
    }

    #[test]
    fn failed_servers_are_mentioned_once_per_session_and_when_asked_about() {
        let pool = pool_of(&["broken", "Test-Store", "time"]);
        let m = FailureMentions::default();
        let both = [("broken", "failed to start"), ("Test-Store", "timed out")];
        assert_eq!(
            told(&m, &pool, "stdio", ("time", None), &both),
            ["broken", "Test-Store"]
        );
        assert!(told(&m, &pool, "stdio", ("time", None), &both).is_empty());
        // Another session is told too.
        assert_eq!(
            told(&m, &pool, "http-peer:1", ("time", None), &both).len(),
            2
        );
        // A search about one of them: its words in the query, or its name (or alias) as filter.
        assert_eq!(
            told(&m, &pool, "stdio", ("broken tools", None), &both),
            ["broken"]
        );
        assert_eq!(
            told(&m, &pool, "stdio", ("store test orders", None), &both),
            ["Test-Store"]
        );
        assert_eq!(
            told(&m, &pool, "stdio", ("x", Some("mcp-store")), &both),
            ["Test-Store"]
        );
        assert!(told(&m, &pool, "stdio", ("store orders", None), &both).is_empty());
        // A new reason is news.
        let changed = [("broken", "needs login"), ("Test-Store", "timed out")];
        assert_eq!(
            told(&m, &pool, "stdio", ("time", None), &changed),
            ["broken"]
        );
    }

    /// A skill with `exports` signatures of `width` characters, its text full of terminal escapes
    /// and bidirectional overrides.
    fn painted_skill(exports: usize, width: usize) -> SkillEntry {
        SkillEntry {
            name: "painted".into(),
            module: "skills/painted.ts".into(),
            language: "typescript",
            description: "Paints\u{202e} walls\u{1b}[2J\nsecond line".into(),
            exports: (0..exports)
                .map(|i| {
                    format!(
                        "export function f{i}(a = \"\u{1b}[31m\u{7}{}\")",
                        "x".repeat(width)
                    )
                })
                .collect(),
            import: "import { f0 } from \"skills/painted.ts\"".into(),
            saved_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_skill_is_shown_cleaned_and_within_bounds_at_every_detail() {
        let skill = painted_skill(64, 300);
        let name = skill_match(&skill, Detail::Name);
        assert_eq!(
            (name.description, name.exports, name.export_count),
            (None, None, None)
        );
        let summary = skill_match(&skill, Detail::Summary);
        assert_eq!(summary.description.as_deref(), Some("Paints walls[2J"));
        assert_eq!((summary.exports, summary.export_count), (None, Some(64)));
        let full = skill_match(&skill, Detail::Full);
        let exports = full.exports.unwrap();
        assert_eq!(exports.len(), SEARCH_EXPORTS);
        assert!(
            exports
                .iter()
                .all(|e| e.chars().count() <= EXPORT_CHARS && e.ends_with('…'))
        );
        assert!(
            exports[0].starts_with("export function f0(a = \"[31mxxx"),
            "{}",
            exports[0]
        );
        let schema = skill_schema(&skill);
        assert_eq!(schema["exports"].as_array().unwrap().len(), 64);
        let text = schema.to_string();
        for c in ['\u{1b}', '\u{7}', '\u{202e}'] {
            assert!(!text.contains(c), "{c:?} in {text}");
        }
        let answer = SearchResult {
            matches: vec![full_match(&skill)],
            unavailable: Vec::new(),
            connected: Vec::new(),
            not_searched: Vec::new(),
            omitted: 0,
        };
        assert!(
            answer.text("q").contains("    …and 48 more"),
            "{}",
            answer.text("q")
        );
    }

    fn full_match(skill: &SkillEntry) -> Match {
        skill_match(skill, Detail::Full)
    }

    #[test]
    fn an_answer_keeps_within_its_bound_whatever_the_number_of_matches() {
        let skill = painted_skill(64, 300);
        let many: Vec<Match> = (0..500).map(|_| full_match(&skill)).collect();
        let (kept, omitted) = within_bound(many);
        let bytes = serde_json::to_vec(&kept).unwrap().len();
        assert!(bytes <= MAX_MATCHES_BYTES + 2, "{bytes}");
        assert!(
            !kept.is_empty() && kept.len() + omitted == 500,
            "{} {omitted}",
            kept.len()
        );
        let few: Vec<Match> = (0..3)
            .map(|_| skill_match(&skill, Detail::Summary))
            .collect();
        assert_eq!(within_bound(few).1, 0);
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
