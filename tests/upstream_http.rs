//! The upstream pool against real rmcp servers over streamable HTTP: one that speaks only
//! protocol 2025-11-25 (the `initialize` handshake) and one that speaks only 2026-07-28
//! (`server/discover`), both behind a static-header check, as a user's remote servers would be.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::Response;
use code_executor::clients::discovery::{ConfigSource, ServerSpec, SourceKind, Transport};
use code_executor::upstream::{UpstreamPool, UpstreamTimeouts};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;

const API_KEY: &str = "s3cret-key";

#[derive(Clone)]
struct VersionServer {
    versions: &'static [ProtocolVersion],
}

const LEGACY: &[ProtocolVersion] = &[ProtocolVersion::V_2025_11_25];
const MODERN: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

impl ServerHandler for VersionServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = self.versions[0].clone();
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(self.versions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "shout",
            "Upper-cases text",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_uppercase();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

async fn require_key(request: Request, next: Next) -> Result<Response, StatusCode> {
    match request.headers().get("x-api-key") {
        Some(v) if v == API_KEY => Ok(next.run(request).await),
        _ => Err(StatusCode::UNAUTHORIZED),
    }
}

async fn start(versions: &'static [ProtocolVersion]) -> SocketAddr {
    let service = StreamableHttpService::new(
        move || Ok(VersionServer { versions }),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(require_key));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

fn spec(name: &str, addr: SocketAddr, key: &str) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        transport: Transport::Http {
            url: format!("http://{addr}/mcp"),
            headers: BTreeMap::from([("X-Api-Key".to_string(), key.to_string())]),
        },
        source: ConfigSource {
            kind: SourceKind::Explicit,
            path: "mcp.json".into(),
        },
    }
}

#[tokio::test]
async fn http_servers_of_both_protocol_generations_with_headers() {
    let legacy = start(LEGACY).await;
    let modern = start(MODERN).await;
    let pool = UpstreamPool::new(
        vec![
            spec("legacy", legacy, API_KEY),
            spec("modern", modern, API_KEY),
            spec("wrong-key", modern, "nope"),
        ],
        BTreeMap::new(),
        UpstreamTimeouts {
            connect: Duration::from_secs(15),
            call: Duration::from_secs(10),
        },
    );
    for server in ["legacy", "modern"] {
        let tools = pool.tools(server).await.expect(server);
        assert_eq!(tools[0].name, "shout");
        let mut args = serde_json::Map::new();
        args.insert("text".into(), json!(format!("hi {server}")));
        let result = pool.call(server, "shout", args).await.expect(server);
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, format!("HI {}", server.to_uppercase()));
    }
    let statuses = pool.statuses().await;
    let protocol = |name: &str| {
        statuses
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.protocol.clone())
    };
    assert_eq!(protocol("legacy").as_deref(), Some("2025-11-25"));
    assert_eq!(protocol("modern").as_deref(), Some("2026-07-28"));

    // A server that refuses us fails alone, with an error naming it.
    let err = pool.tools("wrong-key").await.unwrap_err().to_string();
    assert!(err.contains("wrong-key"), "{err}");
    assert!(pool.tools("modern").await.is_ok());
}
