//! Client dialects of an MCP server definition. Codex (`[mcp_servers.<name>]` tables in
//! `config.toml`) and Gemini CLI (`mcpServers` in `settings.json`) spell some fields their own
//! way; this module owns rewriting such a definition into the standard form the rest of
//! discovery reads (`type`/`url`/`headers`, `${VAR}`). The reader (`super::read`) applies it
//! to every entry, with the dialect the client table declares for the file; this module knows
//! no file.

use serde_json::{Map, Value};

/// Who wrote a definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Claude Code, Claude Desktop, Cursor, VS Code and this server's own files.
    Standard,
    /// Codex's TOML: `url` is streamable HTTP; `http_headers`, `env_http_headers` and
    /// `bearer_token_env_var` give the headers.
    Codex,
    /// Gemini CLI: `httpUrl` is streamable HTTP and `url` is the legacy HTTP+SSE transport
    /// (`"type": "sse"` in the standard form); strings may use `$VAR`.
    Gemini,
}

/// `definition` in the standard form. Fields the standard form does not know (timeouts, tool
/// filters, `trust`, `enabled`) are left as they are: discovery ignores them, or reads
/// `enabled`/`disabled` as the standard form does.
pub(crate) fn standard_form(
    dialect: Dialect,
    definition: &Map<String, Value>,
) -> Map<String, Value> {
    let mut def = definition.clone();
    match dialect {
        Dialect::Standard => {}
        Dialect::Codex => {
            if let Some(headers) = def.remove("http_headers") {
                def.insert("headers".into(), headers);
            }
            if let Some(Value::Object(from_env)) = def.remove("env_http_headers") {
                for (header, var) in from_env {
                    if let Value::String(var) = var {
                        header_map(&mut def).insert(header, format!("${{{var}}}").into());
                    }
                }
            }
            if let Some(Value::String(var)) = def.remove("bearer_token_env_var") {
                header_map(&mut def)
                    .insert("Authorization".into(), format!("Bearer ${{{var}}}").into());
            }
            if def.contains_key("url") && !def.contains_key("type") {
                def.insert("type".into(), "http".into());
            }
        }
        Dialect::Gemini => {
            if let Some(url) = def.remove("httpUrl") {
                def.insert("type".into(), "http".into());
                def.insert("url".into(), url);
            } else if def.contains_key("url") && !def.contains_key("type") {
                def.insert("type".into(), "sse".into());
            }
            // Gemini CLI expands `$VAR` as well as `${VAR}`; discovery expands `${VAR}` only.
            for key in ["command", "args", "env", "headers", "url", "cwd"] {
                if let Some(v) = def.get_mut(key) {
                    braces_for_dollar_vars(v);
                }
            }
        }
    }
    def
}

/// `def["headers"]` as a map, created if missing (replaced if not an object).
fn header_map(def: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let headers = def
        .entry("headers")
        .or_insert_with(|| Value::Object(Map::new()));
    if !headers.is_object() {
        *headers = Value::Object(Map::new());
    }
    headers.as_object_mut().expect("made an object above")
}

/// `$NAME` → `${NAME}` in every string of `value` (`${...}` and a lone `$` stay as they are).
fn braces_for_dollar_vars(value: &mut Value) {
    match value {
        Value::String(s) => {
            let mut out = String::with_capacity(s.len());
            let mut chars = s.chars().peekable();
            while let Some(c) = chars.next() {
                let starts_name = chars
                    .peek()
                    .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_');
                if c == '$' && starts_name {
                    out.push_str("${");
                    while let Some(&n) = chars.peek() {
                        if n.is_ascii_alphanumeric() || n == '_' {
                            out.push(n);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    out.push('}');
                } else {
                    out.push(c);
                }
            }
            *s = out;
        }
        Value::Array(items) => items.iter_mut().for_each(braces_for_dollar_vars),
        Value::Object(map) => map.values_mut().for_each(braces_for_dollar_vars),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn standard(dialect: Dialect, v: Value) -> Value {
        Value::Object(standard_form(dialect, v.as_object().unwrap()))
    }

    #[test]
    fn codex_spellings_become_standard_headers_and_http() {
        let codex = json!({
            "url": "https://x.example/mcp",
            "http_headers": {"X-Team": "core"},
            "env_http_headers": {"X-Key": "KEY_VAR"},
            "bearer_token_env_var": "TOKEN",
            "enabled": false,
            "tool_timeout_sec": 30
        });
        assert_eq!(
            standard(Dialect::Codex, codex),
            json!({
                "type": "http",
                "url": "https://x.example/mcp",
                "headers": {"X-Team": "core", "X-Key": "${KEY_VAR}", "Authorization": "Bearer ${TOKEN}"},
                "enabled": false,
                "tool_timeout_sec": 30
            })
        );
        let stdio = json!({"command": "uvx", "args": ["mcp-server-time"], "env": {"A": "$B"}});
        assert_eq!(standard(Dialect::Codex, stdio.clone()), stdio);
    }

    #[test]
    fn gemini_http_sse_and_dollar_variables() {
        let http = json!({"httpUrl": "https://x.example/mcp", "headers": {"Authorization": "Bearer $TOKEN", "X": "${A} $ 5$"}, "trust": true});
        assert_eq!(
            standard(Dialect::Gemini, http),
            json!({"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X": "${A} $ 5$"}, "trust": true})
        );
        let sse = json!({"url": "http://localhost:8080/sse"});
        assert_eq!(
            standard(Dialect::Gemini, sse),
            json!({"type": "sse", "url": "http://localhost:8080/sse"})
        );
        let stdio =
            json!({"command": "$HOME/bin/srv", "args": ["--key=$KEY_1x"], "env": {"T": "$T"}});
        assert_eq!(
            standard(Dialect::Gemini, stdio),
            json!({"command": "${HOME}/bin/srv", "args": ["--key=${KEY_1x}"], "env": {"T": "${T}"}})
        );
    }
}
