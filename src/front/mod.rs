//! The MCP server the client talks to: the rmcp `ServerHandler` over stdio or streamable HTTP
//! ([`http`], its connections accepted by [`guard`]). Each tool's schema sits next to its
//! handler: `execute` (`executeTypescript`, `executePython`), `catalog` (`searchTools`,
//! `getToolSchema`, `listServers`) and `health`. This module routes a call to its handler,
//! parses its arguments, reports what a call prints while it runs ([`live`]), turns a client's
//! cancellation into the execution's, gives each call its line back to the client (requests to a
//! handshake-era client over stdio, `input_required` rounds to a 2026-07-28 client: [`rounds`]),
//! and turns every outcome into `structuredContent` plus one readable text block. It holds no
//! policy of its own.

mod budget;
mod catalog;
mod complaints;
mod conform;
mod execute;
pub mod guard;
mod health;
pub mod http;
mod live;
mod malformed;
mod media;
mod reply;
mod rounds;
mod session;
mod stdio;
mod tasks;

pub use complaints::is_rmcp_error_answer_warning;
pub(crate) use health::RuntimeInfo;

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    CompleteRequestParams, CompleteResult, ContentBlock, DiscoverResult, GetTaskParams,
    GetTaskResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::ask::ClientLine;
use crate::ask::client::{Offered, Question};
use crate::catalog::directory::FailureMentions;
use crate::executor::{Executor, STDIO_SESSION, TaskTime};
use crate::ops::metrics::Metrics;
use crate::pii::Pii;
use crate::sandbox::proto::Language;
use crate::sandbox::tap::OutputTap;
use crate::upstream::UpstreamPool;
use reply::NoArgs;
use rounds::{Next, Parked};

const INSTRUCTIONS: &str = "Reach the tools of every configured MCP server through code: searchTools to find a tool, getToolSchema for its signature, then executeTypescript or executePython with allowedTools listing what the code may call. Only what the code prints or returns comes back. Code may also use llm.ask(prompt) (the client's LLM), and listResources/readResource/listPrompts/getPrompt (allow mcp__<server>__@resources or @prompts). Replies are cut to about 40 KB: filter and summarise in code. Return image(bytes, 'image/png') to show an image. Save reusable code with saveSkill(name, code, {description}); later code imports it from \"skills/<name>.ts\" (Python: from skills import name), and searchTools finds it. Files kept between executions: workspace.readText/writeText/list/remove (Python workspace.read_text...).";

/// The MCP server handler. Cheap to clone (one per HTTP session).
#[derive(Clone)]
pub struct Front {
    executor: Arc<Executor>,
    upstream: Arc<UpstreamPool>,
    metrics: Arc<Metrics>,
    /// Whether executions and tool calls are audited.
    audit: bool,
    runtime: Arc<RuntimeInfo>,
    tools: Arc<Vec<Tool>>,
    started: Instant,
    /// Calls waiting for their client's answers (protocol 2026-07-28), shared by every request.
    parked: Arc<Parked>,
    /// Executions run as MCP tasks, shared by every request.
    tasks: Arc<tasks::Tasks>,
    /// The log levels client sessions set (`logging/setLevel`), for live output.
    levels: Arc<live::Levels>,
    /// The failed servers each client session was told of by `searchTools`.
    mentions: Arc<FailureMentions>,
    /// The token vaults of the client sessions, when personal data is tokenised (`pii`).
    pii: Option<Arc<Pii>>,
    /// Warnings about unservable client messages, limited per client session.
    complaints: Arc<complaints::Complaints>,
}

/// Who is calling: the client session (for rate limits and audit) and the request's
/// cancellation (a `notifications/cancelled` from the client).
#[derive(Debug, Clone)]
struct Caller {
    session: String,
    cancel: CancellationToken,
    /// The line back to the client, for the questions an execution asks it.
    client: Arc<ClientLine>,
    /// Set when the call runs as a task.
    task: Option<TaskTime>,
    /// Where the output of the call's code is read live from.
    live: Arc<OutputTap>,
}

/// The session a request belongs to, for rate limits and audit records: over stdio the one
/// client of the process, `stdio`; over HTTP the [`guard::Principal`] the connection guard
/// admitted the request as (`http-token:<token fingerprint>`, or `http-peer:<IP>` without a
/// token). Nothing the client chooses (an `Mcp-Session-Id`, an unchecked `Authorization`)
/// picks it.
fn session_of(context: &RequestContext<RoleServer>) -> String {
    let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
        return STDIO_SESSION.into();
    };
    match parts.extensions.get::<guard::Principal>() {
        Some(principal) => principal.as_str().to_string(),
        // Every request through the guard carries one; this is a request served otherwise.
        None => "http".into(),
    }
}

/// Every tool, in the order listed.
fn all_tools() -> Vec<Tool> {
    let mut tools = Vec::from(execute::tools());
    tools.extend(catalog::tools());
    tools.push(health::tool());
    tools
}

impl Front {
    pub(crate) fn new(
        executor: Arc<Executor>,
        upstream: Arc<UpstreamPool>,
        metrics: Arc<Metrics>,
        audit: bool,
        runtime: RuntimeInfo,
    ) -> Self {
        let tasks = tasks::Tasks::new(tasks::TaskLimits::of(executor.settings()));
        Front {
            upstream,
            metrics,
            audit,
            runtime: Arc::new(runtime),
            tools: Arc::new(all_tools()),
            started: Instant::now(),
            parked: Arc::default(),
            tasks: Arc::new(tasks),
            levels: Arc::default(),
            mentions: Arc::default(),
            pii: Pii::of(executor.settings()),
            complaints: Arc::default(),
            executor,
        }
    }

    /// Serves the one client of this process over stdin and stdout (see [`session`] and
    /// [`stdio`]) until its handshake fails or the service starts.
    pub async fn serve_stdio(
        self,
    ) -> Result<
        rmcp::service::RunningService<RoleServer, impl rmcp::Service<RoleServer>>,
        rmcp::service::ServerInitializeError,
    > {
        use rmcp::ServiceExt;
        let complaints = self.complaints.clone();
        let lines = stdio::Lines::new(tokio::io::stdin(), tokio::io::stdout(), complaints.clone());
        session::Session::new(self, complaints).serve(lines).await
    }

    /// The answer to a `tools/call` of a tool we do not have: a protocol error, `-32602`, as
    /// the specification's tools chapter lists "unknown tools" (see docs/interface.md).
    fn unknown_tool(&self, name: &str) -> Option<ErrorData> {
        if self.tools.iter().any(|tool| tool.name == name) {
            return None;
        }
        let available: Vec<&str> = self.tools.iter().map(|t| t.name.as_ref()).collect();
        Some(ErrorData::invalid_params(
            format!("Unknown tool: {name} (available: {})", available.join(", ")),
            None,
        ))
    }

    /// Routes one tool call for `caller` (its session and cancellation) to its handler.
    async fn dispatch_for(
        &self,
        name: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<CallToolResult, String> {
        match name {
            execute::TYPESCRIPT | execute::PYTHON => {
                let language = if name == execute::PYTHON {
                    Language::Python
                } else {
                    Language::Typescript
                };
                let args = parse(name, args)?;
                let context = execute::CallerContext {
                    session: caller.session.clone(),
                    cancel: caller.cancel.clone(),
                    client: caller.client.clone(),
                    task: caller.task,
                    live: caller.live.clone(),
                    pii: self.vault(&caller.session),
                };
                Ok(execute::run(&self.executor, language, args, context).await)
            }
            // Skills in these answers carry text code wrote (descriptions, signatures), which
            // may hold personal data.
            catalog::SEARCH_TOOLS | catalog::GET_TOOL_SCHEMA => {
                let mut result = if name == catalog::SEARCH_TOOLS {
                    let args = parse(name, args)?;
                    catalog::search(&self.executor, &self.mentions, &caller.session, args).await
                } else {
                    catalog::schema(&self.executor, &caller.session, parse(name, args)?).await
                }?;
                if let Some(vault) = self.vault(&caller.session) {
                    vault.tokenize_result(&mut result);
                }
                Ok(result)
            }
            catalog::LIST_SERVERS => catalog::servers(&self.executor, parse(name, args)?).await,
            health::HEALTH => {
                let NoArgs {} = parse(name, args)?;
                let sources = health::Sources {
                    executor: &self.executor,
                    upstream: &self.upstream,
                    metrics: &self.metrics,
                    audit: self.audit,
                    runtime: &self.runtime,
                    started: self.started,
                };
                health::report(sources).await
            }
            other => Err(format!(
                "unknown tool `{other}`; available: {}",
                self.tools
                    .iter()
                    .map(|t| t.name.as_ref())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

impl Front {
    /// Starts a call in its own task, with the line back to its client.
    fn start_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        session: String,
    ) -> rounds::Call {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        // Not the request's token: a call that asks its client outlives the request.
        let cancel = CancellationToken::new();
        let (client, questions) = self.client_line(&session, context);
        let live = Arc::new(OutputTap::new());
        let caller = Caller {
            session: session.clone(),
            cancel: cancel.clone(),
            client: Arc::new(client),
            task: None,
            live: live.clone(),
        };
        let front = self.clone();
        let name = request.name.to_string();
        let tool = name.clone();
        let task = tokio::spawn(async move { front.dispatch_for(&name, args, &caller).await });
        rounds::Call {
            session,
            tool,
            task,
            questions,
            owed: Default::default(),
            cancel,
            live,
        }
    }

    /// The line back to the client of this request, and the questions it will carry in
    /// `input_required` results (for a client on 2026-07-28, with what it declares in the
    /// request). A handshake-era client over stdio is the process's one client, asked by
    /// request; its capabilities are also what downstream servers are offered. Over HTTP only
    /// 2026-07-28 clients can be asked: each request is answered on its own, with no stream to
    /// carry a request back.
    fn client_line(
        &self,
        session: &str,
        context: &RequestContext<RoleServer>,
    ) -> (ClientLine, mpsc::UnboundedReceiver<Question>) {
        if conform::handshake_free(context) {
            let declared = context.meta.client_capabilities().unwrap_or_default();
            return self.rounds_line(session, &declared);
        }
        let timeout = self.executor.ask_timeout();
        let line = if session == STDIO_SESSION {
            let line = ClientLine::requests(context.peer.clone(), timeout);
            self.upstream.set_offered(line.offered());
            line
        } else {
            ClientLine::unreachable(
                "over HTTP this server answers each request on its own and cannot send requests back to a client on a protocol before 2026-07-28 (connect over stdio, or with protocol 2026-07-28)",
            )
        };
        (line, mpsc::unbounded_channel().1)
    }
}

impl Front {
    /// The token vault of a client session, when personal data is tokenised. The session is
    /// [`session_of`]'s: over stdio the process's one client, over HTTP the principal (this
    /// server issues no MCP sessions, so two clients with one bearer token share one vault).
    fn vault(&self, session: &str) -> Option<Arc<crate::pii::Vault>> {
        self.pii.as_ref().map(|pii| pii.vault(session))
    }

    /// A line whose questions travel in the answers to the client's requests (`input_required`
    /// rounds, or a task's `inputRequests`), offering what the client declares. Over stdio
    /// that is also what downstream servers are offered.
    fn rounds_line(
        &self,
        session: &str,
        declared: &ClientCapabilities,
    ) -> (ClientLine, mpsc::UnboundedReceiver<Question>) {
        let offered = Offered {
            sampling: declared.sampling.is_some(),
            elicitation: declared.elicitation.is_some(),
        };
        if session == STDIO_SESSION {
            self.upstream.set_offered(offered);
        }
        ClientLine::rounds(offered, self.executor.ask_timeout())
    }
}

fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    serde_json::from_value(args)
        .map_err(|e| format!("invalid arguments for {tool}: {e}; {}", usage(tool)))
}

/// What a tool takes, for the message of a call whose arguments do not fit.
fn usage(tool: &str) -> &'static str {
    match tool {
        execute::TYPESCRIPT | execute::PYTHON => {
            "it takes {code: string, allowedTools?: string[] (tool names or * globs, e.g. \"mcp__time__*\"), timeoutMs?: integer}"
        }
        catalog::SEARCH_TOOLS => {
            "it takes {query: string (a few keywords), server?: string, limit?: integer, detail?: \"name\" | \"summary\" | \"full\"}"
        }
        catalog::GET_TOOL_SCHEMA => {
            "it takes {name: string}, a tool's name as searchTools gives it (mcp__<server>__<tool>)"
        }
        _ => "it takes no arguments: {}",
    }
}

impl ServerHandler for Front {
    // The `logging` capability (live output as log messages) is deprecated as of 2026-07-28.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        ServerConfig::new(self.tasks.declare(capabilities))
            .with_server_info(conform::implementation())
            .with_instructions(INSTRUCTIONS)
    }

    // Tools only: what is not declared is not found (see `conform`), not an empty list.
    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Err(conform::not_offered("prompts/list", "prompts"))
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Err(conform::not_offered("resources/list", "resources"))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Err(conform::not_offered(
            "resources/templates/list",
            "resources",
        ))
    }

    async fn complete(
        &self,
        _: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Err(conform::not_offered("completion/complete", "completions"))
    }

    /// `server/discover` (protocol 2026-07-28): the capabilities without `logging`, which that
    /// revision deprecates; its clients get live output as progress notifications only.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        info.capabilities.logging = None;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        conform::one_page("tools/list", request)?;
        let mut result = ListToolsResult::with_all_items((*self.tools).clone());
        conform::identify(&mut result.meta, &context);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let received = Instant::now();
        tracing::debug!(tool = %request.name, "front: call received");
        if let Some(unknown) = self.unknown_tool(&request.name) {
            return Err(unknown);
        }
        let session = session_of(&context);
        let level = self.levels.for_request(&session, &context);
        let vault = self.vault(&session);
        let call = match &request.request_state {
            // The retry of a call that asked its client (protocol 2026-07-28).
            Some(state) => {
                let responses = request.input_responses.clone();
                match self
                    .parked
                    .resume(state, &session, &request.name, responses)
                {
                    Ok(call) => call,
                    Err(message) => {
                        let refused = CallToolResult::error(vec![ContentBlock::text(message)]);
                        return Ok(conform::identified(refused.into(), &context));
                    }
                }
            }
            None if self.tasks.may_take(&request.name, &context) => {
                let response = self.call_as_task(request, &context, session).await;
                return Ok(conform::identified(response, &context));
            }
            None => self.start_call(request, &context, session),
        };
        // The call runs in its own task, so that when this future is dropped (an HTTP client
        // that disconnects) the execution still sees a cancellation, kills its isolate and
        // leaves its audit record, instead of vanishing mid-way.
        let output = call.live.clone();
        let drive = self
            .parked
            .drive(call, context.ct.clone(), self.executor.ask_timeout());
        // The output the code prints, live, to a client that asked for progress or set a log
        // level (and a heartbeat while it prints nothing), until the call returns.
        let next = live::report(drive, &context, level, output, vault).await;
        let result = match next {
            Next::Asks(input) => return Ok(conform::identified(input.into(), &context)),
            Next::Done(Ok(result)) => result,
            Next::Done(Err(message)) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        tracing::debug!(
            us = received.elapsed().as_micros() as u64,
            "front: call answered"
        );
        Ok(conform::identified(result.into(), &context))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut result = self.tasks.get(&request.task_id, &session_of(&context))?;
        conform::identify(&mut result.meta, &context);
        Ok(result)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = session_of(&context);
        self.tasks
            .update(&request.task_id, &session, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id, &session_of(&context))
    }

    /// `logging/setLevel`: the level of the log messages (live output) this client session gets
    /// from now on. Deprecated as of protocol 2026-07-28, whose requests carry their own level.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.levels.set(&session_of(&context), request.level);
        Ok(())
    }

    /// A request rmcp could not read as a method it knows: a known method with parameters that
    /// do not fit (`-32602`), or a method nobody defines (`-32601`). The transports answer
    /// these before rmcp sees them ([`malformed`]); this is the same answer for any that pass.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        Err(malformed::unserved(
            &request.method,
            request.params.as_ref(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_list_stays_under_budget() {
        let tools = all_tools();
        let size = serde_json::to_string(&serde_json::json!({"tools": tools}))
            .unwrap()
            .len();
        println!("tools/list is {size} bytes");
        assert!(size < 3000, "tools/list is {size} bytes");
        assert!(tools.iter().all(|t| t.output_schema.is_some()));
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "executeTypescript",
                "executePython",
                "searchTools",
                "getToolSchema",
                "listServers",
                "health"
            ]
        );
    }

    #[test]
    fn our_tools_say_what_they_may_touch() {
        for tool in all_tools() {
            let hints = tool.annotations.clone().expect("annotated");
            let says = (
                hints.read_only_hint,
                hints.destructive_hint,
                hints.idempotent_hint,
                hints.open_world_hint,
            );
            match tool.name.as_ref() {
                // Code may call any downstream tool it is allowed: nothing is promised (not
                // read-only and not idempotent are the defaults, left out of tools/list).
                execute::TYPESCRIPT | execute::PYTHON => {
                    assert_eq!(says, (None, Some(true), None, Some(true)))
                }
                // Look-ups of the configured servers and of this process.
                _ => assert_eq!(
                    says,
                    (Some(true), None, Some(true), Some(false)),
                    "{}",
                    tool.name
                ),
            }
        }
    }
}
