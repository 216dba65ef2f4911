//! Messages between the host and the sandbox (see `docs/worker-protocol.md`): the version 2
//! envelopes exchanged with a worker process's supervisor (`ProcessMessage`, `execute_envelope`,
//! `reply_envelope`, `cancel_envelope`), and inside them the version 1 lines of one execution's
//! isolate (`WorkerMessage`, `execute_line`, `reply_line`).
//!
//! Pure data and parsing: no I/O. Everything a worker process sends is untrusted; parsing is
//! strict (unknown message types, a wrong version or malformed fields are protocol violations).

use super::typescript::ForContext;
use crate::catalog::directory::{SearchArgs, SearchQuery};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version of an execution's lines (inside the envelopes).
pub(crate) const VERSION: u32 = 1;
/// The protocol version of the envelopes between the host and a worker process.
pub(crate) const ENVELOPE_VERSION: u32 = 2;
/// The longest line an execution may send (bytes). Longer lines end the execution.
pub(crate) const MAX_WORKER_LINE: usize = 4 * 1024 * 1024;
/// The longest envelope a worker process may send (bytes): a line escaped as a JSON string
/// (at most 3 bytes of UTF-8 per UTF-16 unit of the runner's 4 MiB cap) with its envelope. The
/// supervisor ends an isolate whose line would not fit; a longer envelope is a protocol
/// violation of the whole process.
pub(crate) const MAX_PROCESS_LINE: usize = 3 * MAX_WORKER_LINE + 64 * 1024;

/// The language of sandboxed code: what an execution runs, and what a wrapper module is
/// written in (`--lang ts|py` on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[value(name = "ts")]
    Typescript,
    #[value(name = "py")]
    Python,
}

impl Language {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Language::Typescript => "typescript",
            Language::Python => "python",
        }
    }

    /// The file extension of its source files (wrapper modules).
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Language::Typescript => "ts",
            Language::Python => "py",
        }
    }
}

/// Which console stream a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// An error thrown by user code, as the worker reports it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct UserError {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub stack: Option<String>,
}

/// A message from the worker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WorkerMessage {
    Ready,
    Output {
        stream: Stream,
        text: String,
    },
    /// The newest output of an execution whose output passed its limit, sent once before
    /// `done`, and the bytes between the last `output` and it.
    OutputTail {
        text: String,
        skipped: u64,
    },
    Call {
        id: u64,
        request: HostRequest,
    },
    Done {
        ok: bool,
        value: Option<Value>,
        error: Option<UserError>,
    },
}

/// What sandboxed code asks the host for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HostRequest {
    CallTool {
        target: ToolTarget,
        args: Value,
        /// Return the downstream result untouched instead of its most useful form.
        raw: bool,
    },
    SearchTools(SearchQuery),
    GetToolSchema {
        name: String,
    },
    ListServers,
    /// `llm.ask` / `llm.think`: the params as sent, checked by the host (`ask::sampling`), so
    /// that a bad request is the code's error, not a protocol violation.
    Sample(Value),
    ListResources {
        server: Option<String>,
    },
    ReadResource {
        uri: String,
        server: Option<String>,
    },
    ListPrompts {
        server: Option<String>,
    },
    /// `getPrompt("mcp__<server>__<prompt>", args)`.
    GetPrompt {
        name: String,
        args: Value,
    },
    /// `saveSkill(name, code, {description, language})`: the runner sends the language it
    /// resolved (the caller's by default) after checking that the code parses.
    SaveSkill {
        name: String,
        code: String,
        description: String,
        language: Language,
    },
    /// The code of the skills an execution imports, before it runs (`skills/<name>.ts`,
    /// `from skills import name`).
    LoadSkills {
        names: Vec<String>,
        language: Language,
    },
    /// `workspace.readText(path)` and the rest: one operation on the project's files.
    Workspace(WorkspaceCall),
}

/// One operation on the project's workspace files; paths are checked by the host
/// (`workspace::files`), so that a bad path is the code's error, not a protocol violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorkspaceCall {
    Read {
        path: String,
    },
    /// The bytes, decoded from the line's base64.
    Write {
        path: String,
        data: Vec<u8>,
    },
    /// `""`: the whole workspace.
    List {
        path: String,
    },
    Remove {
        path: String,
    },
}

/// How user code named a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolTarget {
    /// `mcp__<server>__<tool>`, resolved against the configured server names later.
    Qualified(String),
    Split {
        server: String,
        tool: String,
    },
}

/// A protocol violation by the worker.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum ProtocolError {
    #[error("worker sent malformed JSON: {0}")]
    Json(String),
    #[error("worker spoke protocol version {0}, expected {VERSION}")]
    Version(u64),
    #[error("worker sent an unknown message type `{0}`")]
    UnknownType(String),
    #[error("worker sent an invalid `{kind}` message: {reason}")]
    Invalid { kind: &'static str, reason: String },
}

/// A message from a worker process's supervisor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ProcessMessage {
    /// The process has started and an isolate is ready: it can serve.
    Ready,
    /// How many prepared isolates wait for an execution.
    Stock { ready: usize },
    /// How many isolates the process is about to hold (its main thread's included): the host
    /// fits its data limit to them, then answers with [`allowed_envelope`].
    Isolates { count: u64 },
    /// A line of execution `exec`'s isolate, to parse with [`parse_worker_line`].
    Line { exec: u64, line: String },
    /// Execution `exec` ended without a `done` line.
    Ended {
        exec: u64,
        reason: EndReason,
        message: Option<String>,
    },
}

/// Why the supervisor ended an execution's isolate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EndReason {
    /// At the host's request (deadline or cancellation).
    Cancelled,
    /// The isolate threw outside the runner's reach, or could not run.
    Crashed,
    /// The isolate sent faster than the host reads.
    Flood,
    /// The isolate sent something the supervisor refuses (a line over the cap).
    Protocol,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessEnvelope {
    v: u64,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    exec: Option<u64>,
    #[serde(default)]
    line: Option<String>,
    #[serde(default)]
    ready: Option<usize>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    reason: Option<EndReason>,
    #[serde(default)]
    message: Option<String>,
}

/// Parses one envelope from a worker process.
pub(crate) fn parse_process_line(text: &str) -> Result<ProcessMessage, ProtocolError> {
    let e: ProcessEnvelope =
        serde_json::from_str(text).map_err(|e| ProtocolError::Json(e.to_string()))?;
    if e.v != u64::from(ENVELOPE_VERSION) {
        return Err(ProtocolError::Version(e.v));
    }
    let invalid = |reason: &str| ProtocolError::Invalid {
        kind: "envelope",
        reason: reason.into(),
    };
    match (e.kind.as_deref(), e.exec, e.line) {
        (None, Some(exec), Some(line)) => Ok(ProcessMessage::Line { exec, line }),
        (Some("ready"), None, None) => Ok(ProcessMessage::Ready),
        (Some("stock"), None, None) => Ok(ProcessMessage::Stock {
            ready: e.ready.ok_or_else(|| invalid("`stock` without `ready`"))?,
        }),
        (Some("isolates"), None, None) => Ok(ProcessMessage::Isolates {
            count: e
                .count
                .ok_or_else(|| invalid("`isolates` without a `count`"))?,
        }),
        (Some("ended"), Some(exec), None) => Ok(ProcessMessage::Ended {
            exec,
            reason: e
                .reason
                .ok_or_else(|| invalid("`ended` without a `reason`"))?,
            message: e.message,
        }),
        (Some(other), ..) if !["ready", "stock", "isolates", "ended"].contains(&other) => {
            Err(ProtocolError::UnknownType(other.chars().take(64).collect()))
        }
        _ => Err(invalid("fields that do not fit its type")),
    }
}

/// The envelope that starts execution `exec` in a worker process.
pub(crate) fn execute_envelope(
    exec: u64,
    language: Language,
    code: &str,
    context: Option<&ForContext>,
    output_limit: usize,
) -> String {
    envelope(
        "execute",
        exec,
        Some(execute_line(language, code, context, output_limit)),
    )
}

/// The envelope carrying the answer to call `id` of execution `exec`.
pub(crate) fn reply_envelope(exec: u64, id: u64, result: &Result<Value, String>) -> String {
    envelope("reply", exec, Some(reply_line(id, result)))
}

/// The answer to an `isolates` envelope: the data limit fits that many isolates now.
pub(crate) fn allowed_envelope(count: u64) -> String {
    line(serde_json::json!({"v": ENVELOPE_VERSION, "type": "allowed", "count": count}))
}

/// The envelope that ends execution `exec` (its isolate is terminated).
pub(crate) fn cancel_envelope(exec: u64) -> String {
    envelope("cancel", exec, None)
}

fn envelope(kind: &str, exec: u64, inner: Option<String>) -> String {
    let mut message = serde_json::json!({"v": ENVELOPE_VERSION, "type": kind, "exec": exec});
    if let Some(mut inner) = inner {
        inner.pop(); // the inner line's own newline
        message["line"] = Value::String(inner);
    }
    line(message)
}

#[derive(Deserialize)]
struct Envelope {
    v: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(flatten)]
    rest: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
struct OutputFields {
    stream: Stream,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputTailFields {
    #[serde(rename = "stream")]
    _stream: Stream,
    text: String,
    skipped: u64,
}

#[derive(Deserialize)]
struct CallFields {
    id: u64,
    method: String,
    #[serde(default)]
    params: Value,
}

#[derive(Deserialize)]
struct DoneFields {
    ok: bool,
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    error: Option<UserError>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallToolParams {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    args: Value,
    #[serde(default)]
    raw: bool,
}

#[derive(Deserialize)]
struct SchemaParams {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerParams {
    #[serde(default)]
    server: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadResourceParams {
    uri: String,
    #[serde(default)]
    server: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GetPromptParams {
    name: String,
    #[serde(default)]
    args: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveSkillParams {
    name: String,
    code: String,
    #[serde(default)]
    description: String,
    language: Language,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadSkillsParams {
    names: Vec<String>,
    language: Language,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkspaceParams {
    op: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    data: Option<String>,
}

fn workspace_call(params: Value) -> Result<HostRequest, ProtocolError> {
    use base64::Engine;
    let p: WorkspaceParams = fields("workspace", params)?;
    let invalid = |reason: String| ProtocolError::Invalid {
        kind: "workspace",
        reason,
    };
    let call = match (p.op.as_str(), p.data) {
        ("read", None) => WorkspaceCall::Read { path: p.path },
        ("list", None) => WorkspaceCall::List { path: p.path },
        ("remove", None) => WorkspaceCall::Remove { path: p.path },
        ("write", Some(data)) => WorkspaceCall::Write {
            path: p.path,
            data: base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| invalid(format!("`data` is not base64: {e}")))?,
        },
        ("write", None) => return Err(invalid("`write` without `data`".into())),
        (op @ ("read" | "list" | "remove"), Some(_)) => {
            return Err(invalid(format!("`{op}` with `data`")));
        }
        (other, _) => {
            return Err(invalid(format!(
                "unknown op `{}`",
                other.chars().take(64).collect::<String>()
            )));
        }
    };
    Ok(HostRequest::Workspace(call))
}

fn fields<T: serde::de::DeserializeOwned>(
    kind: &'static str,
    value: Value,
) -> Result<T, ProtocolError> {
    serde_json::from_value(value).map_err(|e| ProtocolError::Invalid {
        kind,
        reason: e.to_string(),
    })
}

/// Parses one line from a worker.
pub(crate) fn parse_worker_line(line: &str) -> Result<WorkerMessage, ProtocolError> {
    let envelope: Envelope =
        serde_json::from_str(line).map_err(|e| ProtocolError::Json(e.to_string()))?;
    if envelope.v != u64::from(VERSION) {
        return Err(ProtocolError::Version(envelope.v));
    }
    let rest = Value::Object(envelope.rest);
    match envelope.kind.as_str() {
        "ready" => Ok(WorkerMessage::Ready),
        "output" => {
            let f: OutputFields = fields("output", rest)?;
            Ok(WorkerMessage::Output {
                stream: f.stream,
                text: f.text,
            })
        }
        "output_tail" => {
            let f: OutputTailFields = fields("output_tail", rest)?;
            Ok(WorkerMessage::OutputTail {
                text: f.text,
                skipped: f.skipped,
            })
        }
        "call" => {
            let f: CallFields = fields("call", rest)?;
            let request = parse_request(&f.method, f.params)?;
            Ok(WorkerMessage::Call { id: f.id, request })
        }
        "done" => {
            let f: DoneFields = fields("done", rest)?;
            Ok(WorkerMessage::Done {
                ok: f.ok,
                value: f.value,
                error: f.error,
            })
        }
        other => Err(ProtocolError::UnknownType(other.chars().take(64).collect())),
    }
}

fn parse_request(method: &str, params: Value) -> Result<HostRequest, ProtocolError> {
    match method {
        "callTool" => {
            let p: CallToolParams = fields("callTool", params)?;
            let target = match (p.name, p.server, p.tool) {
                (Some(name), None, None) => ToolTarget::Qualified(name),
                (None, Some(server), Some(tool)) => ToolTarget::Split { server, tool },
                _ => {
                    return Err(ProtocolError::Invalid {
                        kind: "callTool",
                        reason: "give either `name` or both `server` and `tool`".into(),
                    });
                }
            };
            let args = match p.args {
                Value::Null => Value::Object(Default::default()),
                args => args,
            };
            Ok(HostRequest::CallTool {
                target,
                args,
                raw: p.raw,
            })
        }
        "searchTools" => {
            let args: SearchArgs = fields("searchTools", params)?;
            Ok(HostRequest::SearchTools(args.into()))
        }
        "getToolSchema" => {
            let p: SchemaParams = fields("getToolSchema", params)?;
            Ok(HostRequest::GetToolSchema { name: p.name })
        }
        "listServers" => Ok(HostRequest::ListServers),
        "sample" => Ok(HostRequest::Sample(params)),
        "listResources" => {
            let p: ServerParams = fields("listResources", params)?;
            Ok(HostRequest::ListResources { server: p.server })
        }
        "readResource" => {
            let p: ReadResourceParams = fields("readResource", params)?;
            Ok(HostRequest::ReadResource {
                uri: p.uri,
                server: p.server,
            })
        }
        "listPrompts" => {
            let p: ServerParams = fields("listPrompts", params)?;
            Ok(HostRequest::ListPrompts { server: p.server })
        }
        "getPrompt" => {
            let p: GetPromptParams = fields("getPrompt", params)?;
            let args = match p.args {
                Value::Null => Value::Object(Default::default()),
                args => args,
            };
            Ok(HostRequest::GetPrompt { name: p.name, args })
        }
        "saveSkill" => {
            let p: SaveSkillParams = fields("saveSkill", params)?;
            Ok(HostRequest::SaveSkill {
                name: p.name,
                code: p.code,
                description: p.description,
                language: p.language,
            })
        }
        "loadSkills" => {
            let p: LoadSkillsParams = fields("loadSkills", params)?;
            Ok(HostRequest::LoadSkills {
                names: p.names,
                language: p.language,
            })
        }
        "workspace" => workspace_call(params),
        other => Err(ProtocolError::Invalid {
            kind: "call",
            reason: format!(
                "unknown method `{}`",
                other.chars().take(64).collect::<String>()
            ),
        }),
    }
}

/// The `execute` line of an execution (inside its envelope).
/// The `execute` line; `context` is what a TypeScript lane's context runs of the code (`js`, its
/// types and import declarations blanked out, and `imports`; see `sandbox::typescript`), when
/// it differs from the code.
pub(crate) fn execute_line(
    language: Language,
    code: &str,
    context: Option<&ForContext>,
    output_limit: usize,
) -> String {
    let mut message = serde_json::json!({
        "v": VERSION,
        "type": "execute",
        "language": language,
        "code": code,
        "outputLimit": output_limit,
    });
    if let Some(context) = context {
        message["js"] = Value::from(context.js.as_str());
        if !context.imports.is_empty() {
            message["imports"] = serde_json::to_value(&context.imports).unwrap_or_default();
        }
    }
    line(message)
}

/// The answer to call `id`.
pub(crate) fn reply_line(id: u64, result: &Result<Value, String>) -> String {
    line(match result {
        Ok(value) => {
            serde_json::json!({"v": VERSION, "type": "reply", "id": id, "ok": true, "value": value})
        }
        Err(error) => {
            serde_json::json!({"v": VERSION, "type": "reply", "id": id, "ok": false, "error": error})
        }
    })
}

fn line(value: Value) -> String {
    let mut s = value.to_string();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_message_kind() {
        assert_eq!(
            parse_worker_line(r#"{"v":1,"type":"ready"}"#),
            Ok(WorkerMessage::Ready)
        );
        assert_eq!(
            parse_worker_line(r#"{"v":1,"type":"output","stream":"stderr","text":"x\n"}"#),
            Ok(WorkerMessage::Output {
                stream: Stream::Stderr,
                text: "x\n".into()
            })
        );
        assert_eq!(
            parse_worker_line(
                r#"{"v":1,"type":"output_tail","stream":"stdout","text":"end\n","skipped":9}"#
            ),
            Ok(WorkerMessage::OutputTail {
                text: "end\n".into(),
                skipped: 9
            })
        );
        assert_eq!(
            parse_worker_line(
                r#"{"v":1,"type":"call","id":3,"method":"callTool","params":{"server":"a-B","tool":"t","args":{"x":1}}}"#
            ),
            Ok(WorkerMessage::Call {
                id: 3,
                request: HostRequest::CallTool {
                    target: ToolTarget::Split {
                        server: "a-B".into(),
                        tool: "t".into()
                    },
                    args: serde_json::json!({"x":1}),
                    raw: false,
                }
            })
        );
        let done = parse_worker_line(
            r#"{"v":1,"type":"done","ok":false,"error":{"name":"Error","message":"boom"}}"#,
        )
        .unwrap();
        assert!(
            matches!(done, WorkerMessage::Done { ok: false, error: Some(e), .. } if e.message == "boom")
        );
    }

    #[test]
    fn skill_calls_are_parsed_strictly() {
        let call = |params: &str, method: &str| {
            parse_worker_line(&format!(
                r#"{{"v":1,"type":"call","id":1,"method":"{method}","params":{params}}}"#
            ))
        };
        assert_eq!(
            call(
                r#"{"name":"greet","code":"export const a = 1;","language":"typescript"}"#,
                "saveSkill"
            ),
            Ok(WorkerMessage::Call {
                id: 1,
                request: HostRequest::SaveSkill {
                    name: "greet".into(),
                    code: "export const a = 1;".into(),
                    description: String::new(),
                    language: Language::Typescript,
                }
            })
        );
        assert_eq!(
            call(r#"{"names":["a","b"],"language":"python"}"#, "loadSkills"),
            Ok(WorkerMessage::Call {
                id: 1,
                request: HostRequest::LoadSkills {
                    names: vec!["a".into(), "b".into()],
                    language: Language::Python,
                }
            })
        );
        for (params, method) in [
            (r#"{"name":"a","code":"x"}"#, "saveSkill"),
            (r#"{"name":"a","code":"x","language":"ruby"}"#, "saveSkill"),
            (
                r#"{"name":"a","code":"x","language":"python","path":"/etc"}"#,
                "saveSkill",
            ),
            (r#"{"name":1,"code":"x","language":"python"}"#, "saveSkill"),
            (r#"{"names":"a","language":"python"}"#, "loadSkills"),
            (r#"{"names":["a"]}"#, "loadSkills"),
            (
                r#"{"names":["a"],"language":"python","dir":"x"}"#,
                "loadSkills",
            ),
        ] {
            assert!(
                matches!(call(params, method), Err(ProtocolError::Invalid { .. })),
                "{method} {params}"
            );
        }
    }

    #[test]
    fn violations_are_refused() {
        assert!(matches!(
            parse_worker_line("not json"),
            Err(ProtocolError::Json(_))
        ));
        assert_eq!(
            parse_worker_line(r#"{"v":2,"type":"ready"}"#),
            Err(ProtocolError::Version(2))
        );
        assert!(matches!(
            parse_worker_line(r#"{"v":1,"type":"exec"}"#),
            Err(ProtocolError::UnknownType(_))
        ));
        assert!(matches!(
            parse_worker_line(r#"{"v":1,"type":"call","id":1,"method":"spawn","params":{}}"#),
            Err(ProtocolError::Invalid { .. })
        ));
        // Both naming forms at once is ambiguous.
        assert!(matches!(
            parse_worker_line(
                r#"{"v":1,"type":"call","id":1,"method":"callTool","params":{"name":"mcp__a__b","server":"a","tool":"b"}}"#
            ),
            Err(ProtocolError::Invalid { .. })
        ));
        assert!(matches!(
            parse_worker_line(r#"{"v":1,"type":"call","id":-1,"method":"listServers"}"#),
            Err(ProtocolError::Invalid { .. })
        ));
    }

    #[test]
    fn workspace_calls_are_parsed_strictly() {
        let call = |params: &str| {
            parse_worker_line(&format!(
                r#"{{"v":1,"type":"call","id":1,"method":"workspace","params":{params}}}"#
            ))
        };
        let request = |c| {
            Ok(WorkerMessage::Call {
                id: 1,
                request: HostRequest::Workspace(c),
            })
        };
        assert_eq!(
            call(r#"{"op":"write","path":"a/b","data":"AP8="}"#),
            request(WorkspaceCall::Write {
                path: "a/b".into(),
                data: vec![0, 255]
            })
        );
        assert_eq!(
            call(r#"{"op":"read","path":"../x"}"#),
            request(WorkspaceCall::Read {
                path: "../x".into()
            })
        );
        assert_eq!(
            call(r#"{"op":"list"}"#),
            request(WorkspaceCall::List { path: "".into() })
        );
        assert_eq!(
            call(r#"{"op":"remove","path":"x"}"#),
            request(WorkspaceCall::Remove { path: "x".into() })
        );
        for bad in [
            r#"{"op":"write","path":"a"}"#,
            r#"{"op":"write","path":"a","data":"not base64!"}"#,
            r#"{"op":"read","path":"a","data":""}"#,
            r#"{"op":"chmod","path":"a"}"#,
            r#"{"op":"read","path":"a","follow":true}"#,
            r#"{"op":"read","path":7}"#,
            r#"{"path":"a"}"#,
        ] {
            assert!(
                matches!(call(bad), Err(ProtocolError::Invalid { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn envelopes_are_parsed_strictly() {
        assert_eq!(
            parse_process_line(r#"{"v":2,"type":"ready"}"#),
            Ok(ProcessMessage::Ready)
        );
        assert_eq!(
            parse_process_line(r#"{"v":2,"type":"stock","ready":3}"#),
            Ok(ProcessMessage::Stock { ready: 3 })
        );
        assert_eq!(
            parse_process_line(r#"{"v":2,"exec":7,"line":"{\"v\":1}"}"#),
            Ok(ProcessMessage::Line {
                exec: 7,
                line: r#"{"v":1}"#.into()
            })
        );
        assert_eq!(
            parse_process_line(r#"{"v":2,"type":"isolates","count":4}"#),
            Ok(ProcessMessage::Isolates { count: 4 })
        );
        assert_eq!(
            parse_process_line(r#"{"v":2,"exec":7,"type":"ended","reason":"flood"}"#),
            Ok(ProcessMessage::Ended {
                exec: 7,
                reason: EndReason::Flood,
                message: None
            })
        );
        for bad in [
            r#"{"v":1,"type":"ready"}"#,
            r#"{"v":2,"type":"ready","exec":1}"#,
            r#"{"v":2,"exec":-1,"line":"x"}"#,
            r#"{"v":2,"exec":1}"#,
            r#"{"v":2,"exec":1,"line":"x","extra":1}"#,
            r#"{"v":2,"exec":1,"type":"ended","reason":"bored"}"#,
            r#"{"v":2,"type":"spawn"}"#,
        ] {
            assert!(parse_process_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn envelopes_carry_their_line_as_a_string() {
        let e = execute_envelope(3, Language::Python, "print(1)\n", None, 10);
        assert_eq!(e.matches('\n').count(), 1);
        let v: Value = serde_json::from_str(&e).unwrap();
        assert_eq!(
            (v["type"].as_str(), v["exec"].as_u64()),
            (Some("execute"), Some(3))
        );
        let inner: Value = serde_json::from_str(v["line"].as_str().unwrap()).unwrap();
        assert_eq!(inner["code"], "print(1)\n");
        let r: Value = serde_json::from_str(&reply_envelope(3, 9, &Ok(Value::Null))).unwrap();
        let inner: Value = serde_json::from_str(r["line"].as_str().unwrap()).unwrap();
        assert_eq!(
            inner,
            serde_json::json!({"v": 1, "type": "reply", "id": 9, "ok": true, "value": null})
        );
        let c: Value = serde_json::from_str(&cancel_envelope(4)).unwrap();
        assert_eq!(c, serde_json::json!({"v": 2, "type": "cancel", "exec": 4}));
    }

    #[test]
    fn host_lines_are_single_lines() {
        let l = execute_line(Language::Typescript, "a\nb", None, 10);
        assert_eq!(l.matches('\n').count(), 1);
        assert!(l.ends_with('\n'));
        let r = reply_line(1, &Err("no\nway".into()));
        assert_eq!(r.matches('\n').count(), 1);
    }
}
