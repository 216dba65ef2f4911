//! Typed wrapper modules generated from the downstream servers' live tool schemas
//! (`code-executor wrappers`): one TypeScript or Python module per server, one async function
//! per tool (camelCase in TypeScript, snake_case in Python) documented from the tool's
//! description, with input and output types from its JSON Schemas (types via
//! `crate::catalog::type_of` in TypeScript, `crate::catalog::python_type_of` in Python). Output is deterministic; each module's header
//! carries a hash of the schemas it was made from, so stale modules are found
//! (`check`). This module owns the generated text only: no I/O, no connections.
//!
//! Tool names, descriptions and schemas are untrusted: names only ever appear inside string
//! literals or as sanitised identifiers, descriptions only inside comments or docstrings with
//! their terminators escaped.

pub mod cli;

use std::collections::BTreeSet;

use rmcp::model::Tool;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::catalog;
use crate::sandbox::proto::Language;

/// One generated module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Module {
    pub server: String,
    /// e.g. `git.ts`
    pub file_name: String,
    pub schema_hash: String,
    pub text: String,
}

/// The marker in every module header.
const HASH_MARK: &str = "schema-hash: ";

/// `sha256:<hex>` over the tools' names, descriptions and schemas in a canonical form (keys
/// sorted, tools sorted by name), so the same schemas always give the same hash.
pub(crate) fn schema_hash(tools: &[Tool]) -> String {
    let mut items: Vec<(String, String)> = tools
        .iter()
        .map(|t| {
            let mut obj = Map::new();
            obj.insert("name".into(), Value::String(t.name.to_string()));
            obj.insert(
                "description".into(),
                t.description
                    .as_deref()
                    .map(|d| Value::String(d.to_string()))
                    .unwrap_or(Value::Null),
            );
            obj.insert(
                "inputSchema".into(),
                Value::Object((*t.input_schema).clone()),
            );
            obj.insert(
                "outputSchema".into(),
                t.output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone()))
                    .unwrap_or(Value::Null),
            );
            (t.name.to_string(), canonical(&Value::Object(obj)))
        })
        .collect();
    items.sort();
    let mut hasher = Sha256::new();
    for (_, text) in &items {
        hasher.update(text.as_bytes());
        hasher.update(b"\n");
    }
    format!("sha256:{}", hex::encode(hasher.finalize()))
}

/// JSON with object keys sorted at every level.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// The schema hash written in a module's header, if any.
pub(crate) fn header_hash(text: &str) -> Option<&str> {
    text.lines()
        .take(12)
        .find_map(|l| l.split_once(HASH_MARK).map(|(_, h)| h.trim()))
}

/// Lowercase ASCII words of a name: `getCurrentTime`, `get-current_time` → `get`, `current`,
/// `time`. Anything outside ASCII letters and digits separates words.
fn words(name: &str) -> Vec<String> {
    let ascii: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' })
        .collect();
    crate::catalog::tokens(&ascii)
}

/// Words a TypeScript identifier may not be (also what skill names avoid, `workspace::skills`).
pub(crate) const TS_RESERVED: &[&str] = &[
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "new",
    "null",
    "return",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "let",
    "static",
    "yield",
    "await",
    "implements",
    "interface",
    "package",
    "private",
    "protected",
    "public",
    "arguments",
    "eval",
    "SERVER",
    "SCHEMA_HASH",
];

/// Words a Python identifier may not be (also what skill names avoid, `workspace::skills`).
pub(crate) const PY_RESERVED: &[&str] = &[
    "False",
    "None",
    "True",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "match",
    "case",
    "type",
    "SERVER",
    "SCHEMA_HASH",
    "call_mcp_tool",
    "_args",
    "_OMIT",
    "annotations",
    "Any",
    "Literal",
];

fn fix_start(mut ident: String, reserved: &[&str]) -> String {
    if ident.is_empty() {
        ident.push_str("tool");
    }
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    if reserved.contains(&ident.as_str()) {
        ident.push('_');
    }
    ident
}

/// `git_status` → `gitStatus`.
pub(crate) fn camel_case(name: &str) -> String {
    let mut out = String::new();
    for (i, w) in words(name).into_iter().enumerate() {
        if i == 0 {
            out.push_str(&w);
        } else {
            let mut chars = w.chars();
            if let Some(first) = chars.next() {
                out.push(first.to_ascii_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    fix_start(out, TS_RESERVED)
}

/// `getInventory` → `get_inventory`.
pub(crate) fn snake_case(name: &str) -> String {
    fix_start(words(name).join("_"), PY_RESERVED)
}

fn pascal_case(name: &str) -> String {
    let camel = camel_case(name);
    let mut chars = camel.trim_end_matches('_').chars();
    match chars.next() {
        Some(c) => format!("{}{}", c.to_ascii_uppercase(), chars.as_str()),
        None => "Tool".into(),
    }
}

/// The module name for a server, a valid identifier in both languages: `Test-Store` →
/// `test_store`.
pub(crate) fn module_name(server: &str) -> String {
    fix_start(words(server).join("_"), PY_RESERVED)
}

/// Makes `name` unique among `taken` by appending `_2`, `_3`, ...
fn unique(name: String, taken: &mut BTreeSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}_{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A JSON string literal, valid in TypeScript and Python alike.
fn string_literal(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Text safe inside a `/** ... */` comment, one line per entry.
fn doc_lines(text: &str) -> Vec<String> {
    text.replace("*/", "*\\/")
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect::<Vec<_>>()
        .into_iter()
        .skip_while(|l| l.trim().is_empty())
        .collect()
}

/// Text safe inside a `"""` docstring.
fn docstring(text: &str) -> String {
    text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

fn properties(schema: &Map<String, Value>) -> Vec<(String, Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn required(schema: &Map<String, Value>) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn sorted_tools(tools: &[Tool]) -> Vec<&Tool> {
    let mut sorted: Vec<&Tool> = tools.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted
}

/// Generates the module for one server.
pub(crate) fn generate(server: &str, tools: &[Tool], lang: Language, module: &str) -> Module {
    let hash = schema_hash(tools);
    let text = match lang {
        Language::Typescript => typescript(server, tools, &hash, module),
        Language::Python => python(server, tools, &hash, module),
    };
    Module {
        server: server.to_string(),
        file_name: format!("{module}.{}", lang.extension()),
        schema_hash: hash,
        text,
    }
}

/// Generates every server's module, with module names unique across servers (servers sorted
/// by name).
pub(crate) fn generate_all(servers: &[(String, Vec<Tool>)], lang: Language) -> Vec<Module> {
    let mut sorted: Vec<&(String, Vec<Tool>)> = servers.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut taken = BTreeSet::new();
    sorted
        .into_iter()
        .map(|(server, tools)| {
            let module = unique(module_name(server), &mut taken);
            generate(server, tools, lang, &module)
        })
        .collect()
}

fn typescript(server: &str, tools: &[Tool], hash: &str, module: &str) -> String {
    let mut out = String::new();
    let server_lit = string_literal(server);
    out.push_str(&format!(
        "// Typed wrappers for the tools of MCP server {}.\n// Generated by `code-executor wrappers` from the server's tool schemas; do not edit.\n// {HASH_MARK}{hash}\n//\n// In code-executor's sandbox: import * as {module} from \"wrappers/{module}.ts\";\n\n",
        doc_lines(&server_lit).join(" ")
    ));
    out.push_str("declare function callMCPTool(server: string, tool: string, args: unknown): Promise<any>;\n\n");
    out.push_str(&format!("export const SERVER = {server_lit};\n"));
    out.push_str(&format!(
        "export const SCHEMA_HASH = {};\n",
        string_literal(hash)
    ));
    let mut functions = BTreeSet::new();
    let mut types = BTreeSet::new();
    for tool in sorted_tools(tools) {
        let name = tool.name.to_string();
        let function = unique(camel_case(&name), &mut functions);
        let base = pascal_case(&name);
        let args_type = unique(format!("{base}Args"), &mut types);
        let input = &*tool.input_schema;
        let root_in = Value::Object(input.clone());
        let req = required(input);

        out.push_str(&format!("\nexport interface {args_type} {{\n"));
        for (prop, schema) in properties(input) {
            if let Some(d) = schema.get("description").and_then(Value::as_str) {
                let lines = doc_lines(d);
                if lines.len() == 1 {
                    out.push_str(&format!("  /** {} */\n", lines[0]));
                } else if !lines.is_empty() {
                    out.push_str("  /**\n");
                    for l in lines {
                        out.push_str(&format!("   * {l}\n").replace("*  \n", "*\n"));
                    }
                    out.push_str("   */\n");
                }
            }
            let key = if is_identifier(&prop) {
                prop.clone()
            } else {
                string_literal(&prop)
            };
            let q = if req.contains(&prop) { "" } else { "?" };
            out.push_str(&format!(
                "  {key}{q}: {};\n",
                catalog::type_of(&schema, &root_in)
            ));
        }
        match input.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => out.push_str("  [key: string]: unknown;\n"),
            Some(extra @ Value::Object(_)) => out.push_str(&format!(
                "  [key: string]: {};\n",
                catalog::type_of(extra, &root_in)
            )),
            _ => {}
        }
        out.push_str("}\n");

        let ret = match tool.output_schema.as_deref() {
            Some(schema) => {
                let result_type = unique(format!("{base}Result"), &mut types);
                let root_out = Value::Object(schema.clone());
                out.push_str(&format!(
                    "\nexport type {result_type} = {};\n",
                    catalog::type_of(&root_out, &root_out)
                ));
                result_type
            }
            None => "unknown".to_string(),
        };

        out.push_str("\n/**\n");
        for l in doc_lines(tool.description.as_deref().unwrap_or_default()) {
            out.push_str(&format!(" * {l}\n").replace(" * \n", " *\n"));
        }
        if tool
            .description
            .as_deref()
            .is_some_and(|d| !d.trim().is_empty())
        {
            out.push_str(" *\n");
        }
        out.push_str(&format!(
            " * Tool `{}`.\n */\n",
            doc_lines(&catalog::qualified_name(server, &name)).join(" ")
        ));
        let param = if req.is_empty() {
            format!("args: {args_type} = {{}}")
        } else {
            format!("args: {args_type}")
        };
        out.push_str(&format!(
            "export async function {function}({param}): Promise<{ret}> {{\n  return await callMCPTool(SERVER, {}, args);\n}}\n",
            string_literal(&name)
        ));
    }
    out
}

fn python(server: &str, tools: &[Tool], hash: &str, module: &str) -> String {
    let mut out = String::new();
    let server_lit = string_literal(server);
    out.push_str(&format!(
        "\"\"\"Typed wrappers for the tools of MCP server {}.\n\nGenerated by `code-executor wrappers` from the server's tool schemas; do not edit.\n{HASH_MARK}{hash}\n\nIn code-executor's sandbox: from wrappers import {module}\n\"\"\"\n\n",
        docstring(&server_lit)
    ));
    out.push_str("from __future__ import annotations\n\nfrom typing import Any, Literal\n\n");
    out.push_str("try:\n    from sandbox import call_mcp_tool\nexcept ImportError:  # outside code-executor's sandbox\n\n    async def call_mcp_tool(*args: Any, **kwargs: Any) -> Any:\n        raise RuntimeError(\"these wrappers call tools only inside code-executor's sandbox\")\n\n\n");
    out.push_str(&format!(
        "SERVER = {server_lit}\nSCHEMA_HASH = {}\n",
        string_literal(hash)
    ));
    out.push_str("_OMIT: Any = object()\n\n\ndef _args(**kwargs: Any) -> dict[str, Any]:\n    return {k: v for k, v in kwargs.items() if v is not _OMIT}\n");
    let mut functions = BTreeSet::new();
    for tool in sorted_tools(tools) {
        let name = tool.name.to_string();
        let function = unique(snake_case(&name), &mut functions);
        let input = &*tool.input_schema;
        let root_in = Value::Object(input.clone());
        let req = required(input);
        let props = properties(input);
        let keyword_style = props
            .iter()
            .all(|(p, _)| is_identifier(p) && !PY_RESERVED.contains(&p.as_str()));
        let ret = match tool.output_schema.as_deref() {
            Some(schema) => catalog::python_type_of(
                &Value::Object(schema.clone()),
                &Value::Object(schema.clone()),
            ),
            None => "Any".into(),
        };
        let mut params = Vec::new();
        let mut call = Vec::new();
        if keyword_style {
            let mut ordered: Vec<&(String, Value)> =
                props.iter().filter(|(p, _)| req.contains(p)).collect();
            ordered.extend(props.iter().filter(|(p, _)| !req.contains(p)));
            for (p, schema) in ordered {
                let ty = catalog::python_type_of(schema, &root_in);
                if req.contains(p) {
                    params.push(format!("{p}: {ty}"));
                } else {
                    params.push(format!("{p}: {ty} = _OMIT"));
                }
                call.push(format!("{p}={p}"));
            }
        }
        let signature = if !keyword_style {
            "args: dict[str, Any]".to_string()
        } else if params.is_empty() {
            String::new()
        } else {
            format!("*, {}", params.join(", "))
        };
        out.push_str(&format!(
            "\n\nasync def {function}({signature}) -> {ret}:\n"
        ));
        let mut doc = String::new();
        let description = tool.description.as_deref().unwrap_or_default().trim();
        if !description.is_empty() {
            doc.push_str(&docstring(description));
            doc.push_str("\n\n");
        }
        let described: Vec<(String, String)> = props
            .iter()
            .filter_map(|(p, s)| {
                s.get("description").and_then(Value::as_str).map(|d| {
                    (
                        p.clone(),
                        d.split_whitespace().collect::<Vec<_>>().join(" "),
                    )
                })
            })
            .collect();
        if !described.is_empty() {
            doc.push_str("Args:\n");
            for (p, d) in described {
                doc.push_str(&format!("    {}: {}\n", docstring(&p), docstring(&d)));
            }
            doc.push('\n');
        }
        doc.push_str(&format!(
            "Tool `{}`.",
            docstring(&catalog::qualified_name(server, &name))
        ));
        let indented: Vec<String> = doc
            .lines()
            .map(|l| {
                if l.is_empty() {
                    String::new()
                } else {
                    format!("    {l}")
                }
            })
            .collect();
        out.push_str(&format!(
            "    \"\"\"{}\n    \"\"\"\n",
            indented.join("\n").trim_start()
        ));
        let args = if keyword_style {
            format!("_args({})", call.join(", "))
        } else {
            "args".to_string()
        };
        out.push_str(&format!(
            "    return await call_mcp_tool(SERVER, {}, {args})\n",
            string_literal(&name)
        ));
    }
    out
}

/// Why a module on disk does not match what would be generated now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stale {
    pub file_name: String,
    pub reason: String,
}

/// Compares generated modules with the files found (`file name → text`).
pub(crate) fn check(expected: &[Module], found: &dyn Fn(&str) -> Option<String>) -> Vec<Stale> {
    let mut stale = Vec::new();
    for m in expected {
        match found(&m.file_name) {
            None => stale.push(Stale {
                file_name: m.file_name.clone(),
                reason: format!("missing (server `{}`)", m.server),
            }),
            Some(text) => match header_hash(&text) {
                Some(h) if h == m.schema_hash && text == m.text => {}
                Some(h) if h == m.schema_hash => stale.push(Stale {
                    file_name: m.file_name.clone(),
                    reason: "edited or made by another version; regenerate".into(),
                }),
                Some(h) => stale.push(Stale {
                    file_name: m.file_name.clone(),
                    reason: format!(
                        "the tools of `{}` changed (schema hash {h}, now {})",
                        m.server, m.schema_hash
                    ),
                }),
                None => stale.push(Stale {
                    file_name: m.file_name.clone(),
                    reason: "no schema hash in its header".into(),
                }),
            },
        }
    }
    stale
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn tool(name: &str, description: &str, input: Value, output: Option<Value>) -> Tool {
        let mut t = Tool::new(
            name.to_string(),
            description.to_string(),
            Arc::new(input.as_object().unwrap().clone()),
        );
        if let Some(o) = output {
            t = t.with_raw_output_schema(Arc::new(o.as_object().unwrap().clone()));
        }
        t
    }

    fn tools() -> Vec<Tool> {
        vec![
            tool(
                "git_status",
                "Shows the working tree status",
                json!({"type": "object", "properties": {"repo_path": {"type": "string", "description": "Path to the repository"}}, "required": ["repo_path"]}),
                None,
            ),
            tool(
                "get-Inventory",
                "Stock levels.\nEvil */ console.log(1) /* and \"\"\" too",
                json!({"type": "object", "properties": {"sku": {"type": "string"}, "limit": {"type": ["integer", "null"]}, "kind": {"enum": ["a", "b"]}}}),
                Some(
                    json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}, "required": ["items"]}),
                ),
            ),
            tool(
                "delete",
                "",
                json!({"type": "object", "properties": {"from": {"type": "string"}, "weird-key": {"type": "number"}}, "required": ["from"]}),
                None,
            ),
        ]
    }

    #[test]
    fn names() {
        assert_eq!(camel_case("git_status"), "gitStatus");
        assert_eq!(camel_case("get-Inventory"), "getInventory");
        assert_eq!(camel_case("delete"), "delete_");
        assert_eq!(snake_case("getInventory"), "get_inventory");
        assert_eq!(snake_case("import"), "import_");
        assert_eq!(module_name("Test-Store"), "test_store");
        assert_eq!(module_name("2fa"), "_2fa");
    }

    #[test]
    fn typescript_module() {
        let m = generate("Test-Store", &tools(), Language::Typescript, "test_store");
        let t = &m.text;
        assert_eq!(m.file_name, "test_store.ts");
        assert_eq!(header_hash(t), Some(m.schema_hash.as_str()));
        assert!(t.contains("export async function gitStatus(args: GitStatusArgs): Promise<unknown> {\n  return await callMCPTool(SERVER, \"git_status\", args);"), "{t}");
        assert!(
            t.contains("  /** Path to the repository */\n  repo_path: string;"),
            "{t}"
        );
        assert!(
            t.contains("export type GetInventoryResult = { items: string[] };"),
            "{t}"
        );
        assert!(t.contains("export async function getInventory(args: GetInventoryArgs = {}): Promise<GetInventoryResult>"), "{t}");
        assert!(
            t.contains("  kind?: \"a\" | \"b\";\n  limit?: number | null;"),
            "{t}"
        );
        assert!(
            t.contains("export async function delete_(args: DeleteArgs)"),
            "{t}"
        );
        assert!(t.contains("  \"weird-key\"?: number;"), "{t}");
        // A description cannot end the comment.
        assert!(!t.contains("Evil */"), "{t}");
        assert_eq!(t.matches("*/").count(), t.matches("/**").count(), "{t}");
    }

    #[test]
    fn python_module() {
        let m = generate("Test-Store", &tools(), Language::Python, "test_store");
        let t = &m.text;
        assert!(
            t.contains("async def git_status(*, repo_path: str) -> Any:"),
            "{t}"
        );
        assert!(
            t.contains(
                "return await call_mcp_tool(SERVER, \"git_status\", _args(repo_path=repo_path))"
            ),
            "{t}"
        );
        assert!(t.contains("async def get_inventory(*, kind: Literal[\"a\", \"b\"] = _OMIT, limit: int | None = _OMIT, sku: str = _OMIT) -> dict[str, Any]:"), "{t}");
        // `from` is a keyword and `weird-key` no identifier: the dict form.
        assert!(
            t.contains("async def delete(args: dict[str, Any]) -> Any:"),
            "{t}"
        );
        assert!(!t.contains("too\"\"\""), "{t}");
        assert_eq!(header_hash(t), Some(m.schema_hash.as_str()));
    }

    #[test]
    fn deterministic_and_staleness() {
        let mut reversed = tools();
        reversed.reverse();
        let a = generate_all(&[("s".into(), tools())], Language::Typescript);
        let b = generate_all(&[("s".into(), reversed)], Language::Typescript);
        assert_eq!(a, b);
        let files = |text: String| move |_: &str| Some(text.clone());
        assert!(check(&a, &files(a[0].text.clone())).is_empty());
        let mut changed = tools();
        changed[0].description = Some("Shows the status".into());
        let c = generate_all(&[("s".into(), changed)], Language::Typescript);
        assert_ne!(a[0].schema_hash, c[0].schema_hash);
        let stale = check(&c, &files(a[0].text.clone()));
        assert_eq!(stale.len(), 1);
        assert!(stale[0].reason.contains("changed"), "{stale:?}");
        assert_eq!(check(&c, &|_| None)[0].reason, "missing (server `s`)");
        // Two servers with the same module name get distinct files.
        let two = generate_all(
            &[("a-b".into(), tools()), ("a_b".into(), tools())],
            Language::Python,
        );
        assert_eq!(two[0].file_name, "a_b.py");
        assert_eq!(two[1].file_name, "a_b_2.py");
    }
}
