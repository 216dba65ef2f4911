//! What the LLM and sandboxed code can learn about downstream tools: search, one tool's schema,
//! and the server list, answered over the live upstream pool (connecting servers as needed).

use serde::Serialize;
use serde_json::Value;

use crate::catalog::{self, CatalogEntry};
use crate::upstream::{ServerStatus, UpstreamError, UpstreamPool};

/// Descriptions in search results are cut to this many characters.
const SUMMARY_CHARS: usize = 120;

#[derive(Debug, Serialize)]
pub struct Match {
    pub name: String,
    pub server: String,
    pub tool: String,
    pub description: String,
}

#[derive(Debug, Serialize)]
pub struct Unavailable {
    pub server: String,
    pub error: String,
}

#[derive(Debug, Serialize)]
pub struct SearchResult {
    pub matches: Vec<Match>,
    /// Servers that could not be searched, with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSchema {
    pub name: String,
    pub server: String,
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub signature: String,
}

/// Searches the tools of every server (or of one), connecting them concurrently.
pub async fn search(
    pool: &UpstreamPool,
    query: &str,
    server: Option<&str>,
    limit: usize,
) -> Result<SearchResult, UpstreamError> {
    let listed = match server {
        Some(server) => vec![(server.to_string(), pool.tools(server).await)],
        None => pool.all_tools().await,
    };
    let mut entries = Vec::new();
    let mut unavailable = Vec::new();
    for (server, tools) in listed {
        match tools {
            Ok(tools) => entries.extend(tools.iter().map(|t| CatalogEntry::from_tool(&server, t))),
            Err(e @ UpstreamError::UnknownServer { .. }) => return Err(e),
            Err(e) => unavailable.push(Unavailable {
                server,
                error: e.to_string(),
            }),
        }
    }
    let matches = catalog::search(&entries, query, None, limit)
        .into_iter()
        .map(|hit| Match {
            name: hit.entry.qualified(),
            server: hit.entry.server.clone(),
            tool: hit.entry.tool.clone(),
            description: catalog::one_line(Some(&hit.entry.description), SUMMARY_CHARS),
        })
        .collect();
    Ok(SearchResult {
        matches,
        unavailable,
    })
}

/// The schema and TypeScript signature of one tool, by its qualified name.
pub async fn tool_schema(pool: &UpstreamPool, name: &str) -> Result<ToolSchema, UpstreamError> {
    let (server, tool) = pool.resolve(name)?;
    let tools = pool.tools(&server).await?;
    let found =
        tools
            .iter()
            .find(|t| t.name == tool)
            .ok_or_else(|| UpstreamError::UnknownTool {
                server: server.clone(),
                tool: tool.clone(),
            })?;
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

/// Every configured server and its state (connects nothing).
pub async fn servers(pool: &UpstreamPool) -> Vec<ServerStatus> {
    pool.statuses().await
}
