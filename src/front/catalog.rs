//! `searchTools`, `getToolSchema` and `listServers`: their schemas, their arguments and their
//! replies. The answers come from the live directory (`catalog::directory`), within what the
//! server-wide policy lets the LLM call: a tool the policy refuses is not shown, and a server it
//! closes entirely is not started by a search. A server that could not be searched is
//! mentioned once per client session (`FailureMentions`), not in every answer; a name that
//! resolves to nothing suggests the names likely meant.

use rmcp::model::{CallToolResult, Tool};
use serde::Deserialize;
use serde_json::json;

use super::reply::{NoArgs, object, structured};
use crate::catalog::directory::{
    self, FailureMentions, SearchArgs, SearchQuery, ServerList, Viewer,
};
use crate::executor::Executor;

pub(super) const SEARCH_TOOLS: &str = "searchTools";
pub(super) const GET_TOOL_SCHEMA: &str = "getToolSchema";
pub(super) const LIST_SERVERS: &str = "listServers";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SchemaArgs {
    name: String,
}

/// All three read the catalogue of the configured servers (a search may start one to list its
/// tools) and change nothing: read-only, idempotent, and closed-world (their domain is the
/// configured servers, nothing beyond).
pub(super) fn tools() -> [Tool; 3] {
    use rmcp::model::ToolAnnotations;

    let lookup = ToolAnnotations::new()
        .read_only(true)
        .idempotent(true)
        .open_world(false);
    let tool = |name, description, input, output| {
        Tool::new(name, description, object(input))
            .with_raw_output_schema(object(output))
            .annotate(lookup.clone())
    };
    [
        tool(
            SEARCH_TOOLS,
            "Find downstream tools by keywords.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "server": {"type": ["string", "null"]},
                "limit": {"type": ["integer", "null"], "minimum": 1},
                "detail": {"enum": ["name", "summary", "full", null]}
            }, "required": ["query"], "additionalProperties": false}),
            json!({"type": "object", "properties": {"matches": {"type": "array"}}}),
        ),
        tool(
            GET_TOOL_SCHEMA,
            "A tool's schemas and TypeScript signature, by name (mcp__server__tool).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}),
            json!({"type": "object"}),
        ),
        tool(
            LIST_SERVERS,
            "Configured MCP servers and their state.",
            json!({"type": "object"}),
            json!({"type": "object"}),
        ),
    ]
}

pub(super) async fn search(
    executor: &Executor,
    mentions: &FailureMentions,
    session: &str,
    args: SearchArgs,
) -> Result<CallToolResult, String> {
    let (upstream, reach) = executor.directory();
    let query = SearchQuery::from(args);
    let space = executor.workspaces().existing(session).await;
    let mut found = crate::executor::search_catalog(upstream, &reach, space.as_ref(), &query)
        .await
        .map_err(|e| e.to_string())?;
    mentions.mention_once(upstream, session, &query, &mut found);
    let text = found.text(&query.text);
    structured(&found, text)
}

pub(super) async fn schema(
    executor: &Executor,
    session: &str,
    args: SchemaArgs,
) -> Result<CallToolResult, String> {
    if crate::executor::skill_module(&args.name).is_some() {
        let space = executor.workspaces().for_skills(session).await;
        let skill = crate::executor::skill_schema(space, args.name.clone()).await?;
        let text = format!(
            "{}\n{}\n{}",
            skill["import"].as_str().unwrap_or_default(),
            skill["signature"].as_str().unwrap_or_default(),
            skill["description"].as_str().unwrap_or_default()
        );
        return structured(&skill, text);
    }
    let (upstream, reach) = executor.directory();
    let schema = directory::schema_for(upstream, &Viewer::of(reach), &args.name).await?;
    let text = format!("{}\n{}", schema.signature, schema.description);
    structured(&schema, text)
}

pub(super) async fn servers(executor: &Executor, _: NoArgs) -> Result<CallToolResult, String> {
    let (upstream, reach) = executor.directory();
    let servers = directory::servers_within(upstream, &reach).await;
    let text = servers
        .iter()
        .map(|s| {
            let mut line = format!("{} ({}): {}", s.name, s.transport, s.state);
            if let Some(n) = s.tools {
                line.push_str(&format!(", {n} tools"));
            }
            if s.callable == Some(false) {
                line.push_str(", none of its tools may be called");
            }
            if let Some(e) = &s.error {
                line.push_str(&format!(" - {e}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n");
    structured(&ServerList { servers }, text)
}
