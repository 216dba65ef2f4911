//! The tools the LLM sees: names, one-line descriptions and compact JSON Schemas. The whole
//! `tools/list` answer is kept small on purpose (the point of the product); a test holds it
//! under its budget.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

pub const EXECUTE_TYPESCRIPT: &str = "executeTypescript";
pub const SEARCH_TOOLS: &str = "searchTools";
pub const GET_TOOL_SCHEMA: &str = "getToolSchema";
pub const LIST_SERVERS: &str = "listServers";
pub const HEALTH: &str = "health";

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are objects"),
    }
}

fn tool(name: &'static str, description: &'static str, input: Value, output: Value) -> Tool {
    Tool::new(name, description, object(input)).with_raw_output_schema(object(output))
}

fn read_only(tool: Tool) -> Tool {
    tool.annotate(ToolAnnotations::new().read_only(true))
}

/// Every tool, in the order listed.
pub fn all() -> Vec<Tool> {
    vec![
        tool(
            EXECUTE_TYPESCRIPT,
            "Run TypeScript in a fresh sandbox (no files, network or env). Inside: await callMCPTool('mcp__server__tool', args), searchTools(q), getToolSchema(name). Returns console output and the returned or last value.",
            json!({"type": "object", "properties": {
                "code": {"type": "string"},
                "allowedTools": {"type": "array", "items": {"type": "string"}, "description": "Tools the code may call (exact or * globs); default none"},
                "timeoutMs": {"type": "integer"}
            }, "required": ["code"]}),
            json!({"type": "object", "properties": {
                "success": {"type": "boolean"},
                "output": {"type": "string"},
                "error": {"type": ["string", "null"]},
                "result": {},
                "executionTimeMs": {"type": "number"},
                "toolCallsMade": {"type": "array"},
                "toolCallSummary": {"type": "array"}
            }, "required": ["success", "output"]}),
        ),
        read_only(tool(
            SEARCH_TOOLS,
            "Find downstream tools by keywords; returns names with one-line descriptions.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "server": {"type": "string"},
                "limit": {"type": "integer"}
            }, "required": ["query"]}),
            json!({"type": "object", "properties": {"matches": {"type": "array"}}, "required": ["matches"]}),
        )),
        read_only(tool(
            GET_TOOL_SCHEMA,
            "A tool's input/output schema and TypeScript signature, by name (mcp__server__tool).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            json!({"type": "object", "properties": {"inputSchema": {"type": "object"}, "signature": {"type": "string"}}, "required": ["inputSchema"]}),
        )),
        read_only(tool(
            LIST_SERVERS,
            "Configured MCP servers and their state.",
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "properties": {"servers": {"type": "array"}}, "required": ["servers"]}),
        )),
        read_only(tool(
            HEALTH,
            "Server health: runtimes, servers, executions.",
            json!({"type": "object", "properties": {}}),
            json!({"type": "object", "properties": {"status": {"type": "string"}}, "required": ["status"]}),
        )),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_list_stays_under_budget() {
        let tools = all();
        let size = serde_json::to_string(&json!({"tools": tools}))
            .unwrap()
            .len();
        assert!(size < 2500, "tools/list is {size} bytes");
        assert!(tools.iter().all(|t| t.output_schema.is_some()));
    }
}
