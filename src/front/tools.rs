//! The tools the LLM sees: names, one-line descriptions and compact JSON Schemas. The whole
//! `tools/list` answer is kept small on purpose (the point of the product); a test holds it
//! under its budget.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

pub const EXECUTE_TYPESCRIPT: &str = "executeTypescript";
pub const EXECUTE_PYTHON: &str = "executePython";
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

fn execute_input() -> Value {
    json!({"type": "object", "properties": {
        "code": {"type": "string"},
        "allowedTools": {"type": "array", "items": {"type": "string"}, "description": "Tools the code may call (names or * globs); default none"},
        "timeoutMs": {"type": "integer"}
    }, "required": ["code"]})
}

fn execute_output() -> Value {
    json!({"type": "object", "properties": {
        "success": {"type": "boolean"},
        "output": {"type": "string"},
        "error": {"type": ["string", "null"]},
        "result": {},
        "executionTimeMs": {"type": "number"},
        "toolCallsMade": {"type": "array"},
        "toolCallSummary": {"type": "array"}
    }, "required": ["success", "output"]})
}

/// Every tool, in the order listed.
pub fn all() -> Vec<Tool> {
    vec![
        tool(
            EXECUTE_TYPESCRIPT,
            "Run TypeScript in a fresh sandbox (no files, network or env). Inside: await callMCPTool('mcp__server__tool', args), searchTools(q), getToolSchema(name). Returns console output and the returned or last value.",
            execute_input(),
            execute_output(),
        ),
        tool(
            EXECUTE_PYTHON,
            "Same, in Python 3.14: await call_mcp_tool('mcp__server__tool', args), search_tools(q), get_tool_schema(name); print output and the last value return.",
            execute_input(),
            execute_output(),
        ),
        tool(
            SEARCH_TOOLS,
            "Find downstream tools by keywords.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"},
                "server": {"type": "string"},
                "limit": {"type": "integer"},
                "detail": {"enum": ["name", "summary", "full"]}
            }, "required": ["query"]}),
            json!({"type": "object", "properties": {"matches": {"type": "array"}}}),
        ),
        tool(
            GET_TOOL_SCHEMA,
            "A tool's schemas and TypeScript signature, by name (mcp__server__tool).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            json!({"type": "object"}),
        ),
        tool(
            LIST_SERVERS,
            "Configured MCP servers and their state.",
            json!({"type": "object"}),
            json!({"type": "object"}),
        ),
        tool(
            HEALTH,
            "Server health.",
            json!({"type": "object"}),
            json!({"type": "object"}),
        ),
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
        println!("tools/list is {size} bytes");
        assert!(size < 2500, "tools/list is {size} bytes");
        assert!(tools.iter().all(|t| t.output_schema.is_some()));
    }
}
