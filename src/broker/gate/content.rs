//! The resources and prompts of downstream servers, for sandboxed code, through the same gate
//! as tool calls: every request spends a host call, is admitted by the server-wide policy and
//! the execution's `allowedTools` (a server's resources are named `mcp__<server>__@resources`,
//! its prompts `mcp__<server>__@prompts`; `mcp__<server>__*` and `*` cover them), has its
//! answer's size checked and is recorded like a call.

use std::time::Instant;

use serde_json::{Value, json};

use super::{CallFacts, Ending, ExecutionCalls, Failure, Gate, Stop};
use crate::broker::Refusal;
use crate::catalog;
use crate::sandbox::proto::HostRequest;

/// The name a server's resources go by in `allowedTools` and policies (after its `__`).
pub(crate) const RESOURCES: &str = "@resources";
/// The name a server's prompts go by.
pub(crate) const PROMPTS: &str = "@prompts";

impl Gate {
    /// Answers a resource or prompt request of sandboxed code. The error is the message the
    /// code sees.
    pub(crate) async fn content(
        &self,
        calls: &ExecutionCalls,
        request: HostRequest,
    ) -> Result<Value, String> {
        if let Err(refusal) = calls.spend() {
            return self.stopped(calls, "resources/prompts", "", 0, refusal.into());
        }
        match request {
            HostRequest::ListResources { server } => self.listing(calls, server, RESOURCES).await,
            HostRequest::ListPrompts { server } => self.listing(calls, server, PROMPTS).await,
            HostRequest::ReadResource { uri, server } => self.read(calls, &uri, server).await,
            HostRequest::GetPrompt { name, args } => self.prompt(calls, &name, args).await,
            _ => Err("not a resource or prompt request".into()),
        }
    }

    /// The canonical server `asked` names, admitted for `kind` (`@resources` or `@prompts`).
    fn admit_content(
        &self,
        calls: &ExecutionCalls,
        asked: &str,
        kind: &str,
    ) -> Result<(String, String), (String, Stop)> {
        let server = self.upstream.ensure_known(asked).map_err(|e| {
            let name = catalog::qualified_name(asked, kind);
            (name, Refusal::UnknownTool(e.to_string()).into())
        })?;
        let name = catalog::qualified_name(&server, kind);
        let reach = calls.reach(self.broker.policy());
        match self.broker.admit(&reach, (&server, kind), &name, 0) {
            Ok(()) => Ok((server, name)),
            Err(refusal) => Err((name, refusal.into())),
        }
    }

    /// The servers whose `kind` this execution may read without naming them.
    fn content_servers(&self, calls: &ExecutionCalls, kind: &str) -> Vec<String> {
        let reach = calls.reach(self.broker.policy());
        self.upstream
            .server_names()
            .filter(|server| reach.check(server, kind, "").is_ok())
            .map(String::from)
            .collect()
    }

    async fn listing(
        &self,
        calls: &ExecutionCalls,
        server: Option<String>,
        kind: &str,
    ) -> Result<Value, String> {
        let servers = match server {
            Some(asked) => match self.admit_content(calls, &asked, kind) {
                Ok((server, _)) => vec![server],
                Err((name, stop)) => return self.stopped(calls, &name, &asked, 0, stop),
            },
            None => self.content_servers(calls, kind),
        };
        let named = servers.len() == 1;
        let mut items = Vec::new();
        for server in servers {
            let name = catalog::qualified_name(&server, kind);
            let started = Instant::now();
            let listed = if kind == RESOURCES {
                self.upstream.list_resources(&server).await
            } else {
                self.upstream.list_prompts(&server).await
            };
            let ending = match &listed {
                Ok(_) => Ending::Answered,
                Err(_) => Ending::Failed(Failure::ServerError),
            };
            let bytes = listed.as_ref().ok().map(|v| v.to_string().len());
            self.record(calls, facts(&name, &server, ending, started, bytes));
            match listed {
                Ok(Value::Array(list)) => {
                    items.extend(list.into_iter().map(|item| entry(&server, kind, item)));
                }
                Ok(_) => {}
                Err(e) if named => return Err(e.to_string()),
                Err(e) => items.push(json!({"server": server, "error": e.to_string()})),
            }
        }
        Ok(Value::Array(items))
    }

    async fn read(
        &self,
        calls: &ExecutionCalls,
        uri: &str,
        server: Option<String>,
    ) -> Result<Value, String> {
        let asked = match server {
            Some(server) => server,
            None => self.server_listing(calls, uri).await?,
        };
        let (server, name) = match self.admit_content(calls, &asked, RESOURCES) {
            Ok(found) => found,
            Err((name, stop)) => return self.stopped(calls, &name, &asked, 0, stop),
        };
        let started = Instant::now();
        let uri = calls.put_back_text_for(&server, uri);
        let read = self
            .upstream
            .read_resource(&server, &uri, Some(calls.asking()))
            .await;
        self.finish_content(calls, &name, &server, started, read)
    }

    /// The one server, among those this execution may read, that lists `uri`.
    async fn server_listing(&self, calls: &ExecutionCalls, uri: &str) -> Result<String, String> {
        let mut found = Vec::new();
        for server in self.content_servers(calls, RESOURCES) {
            if let Ok(Value::Array(list)) = self.upstream.list_resources(&server).await
                && list.iter().any(|r| r["uri"] == uri)
            {
                found.push(server);
            }
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(format!(
                "no server this execution may read lists the resource `{uri}` (name the server: readResource(uri, {{server}}), and allow mcp__<server>__{RESOURCES})"
            )),
            _ => Err(format!(
                "several servers list the resource `{uri}` ({}); name one: readResource(uri, {{server}})",
                found.join(", ")
            )),
        }
    }

    async fn prompt(
        &self,
        calls: &ExecutionCalls,
        asked: &str,
        args: Value,
    ) -> Result<Value, String> {
        let (server, prompt) = match self.upstream.resolve(asked) {
            Ok(pair) => pair,
            Err(e) => {
                return self.stopped(
                    calls,
                    asked,
                    "",
                    0,
                    Refusal::UnknownTool(e.to_string()).into(),
                );
            }
        };
        let (server, name) = match self.admit_content(calls, &server, PROMPTS) {
            Ok(found) => found,
            Err((name, stop)) => return self.stopped(calls, &name, &server, 0, stop),
        };
        let mut args = args;
        calls.put_back_for(&server, &mut args);
        let Value::Object(args) = args else {
            let refusal = Refusal::ArgumentsNotObject(asked.to_string());
            return self.stopped(calls, &name, &server, 0, refusal.into());
        };
        let started = Instant::now();
        let got = self
            .upstream
            .get_prompt(&server, &prompt, args, Some(calls.asking()))
            .await;
        self.finish_content(calls, &name, &server, started, got)
    }

    /// Checks an answer's size and records the request.
    fn finish_content(
        &self,
        calls: &ExecutionCalls,
        name: &str,
        server: &str,
        started: Instant,
        answer: Result<Value, crate::upstream::UpstreamError>,
    ) -> Result<Value, String> {
        let (result, bytes, ending) = match answer {
            Ok(value) => {
                calls.note_produced(server, &value);
                let bytes = value.to_string().len();
                match self.broker.check_result(name, bytes) {
                    Ok(()) => (Ok(value), Some(bytes), Ending::Answered),
                    Err(refusal) => (
                        Err(refusal.to_string()),
                        Some(bytes),
                        Ending::Failed(Failure::ResultSize),
                    ),
                }
            }
            Err(e) => (Err(e.to_string()), None, Ending::Failed(Failure::of(&e))),
        };
        self.record(calls, facts(name, server, ending, started, bytes));
        result
    }
}

fn facts<'a>(
    tool: &'a str,
    server: &'a str,
    ending: Ending,
    started: Instant,
    result_bytes: Option<usize>,
) -> CallFacts<'a> {
    CallFacts {
        tool,
        server,
        ending,
        elapsed: started.elapsed(),
        argument_bytes: 0,
        result_bytes,
    }
}

/// One listed resource or prompt as code receives it: its server named; a prompt's name
/// qualified (`mcp__<server>__<prompt>`, what `getPrompt` takes).
fn entry(server: &str, kind: &str, mut item: Value) -> Value {
    if let Value::Object(fields) = &mut item {
        if kind == PROMPTS
            && let Some(Value::String(prompt)) = fields.get("name")
        {
            let qualified = catalog::qualified_name(server, prompt);
            fields.insert("name".into(), Value::String(qualified));
        }
        fields.insert("server".into(), Value::String(server.to_string()));
    }
    item
}
