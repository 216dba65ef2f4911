//! What the MCP specification asks of our answers beyond their content, in one place for the
//! handler to apply:
//!
//! - Who we are ([`implementation`]), in the `initialize` result and `server/discover` (rmcp
//!   puts it there from `get_info`), and in the `_meta` of every result to a client on
//!   2026-07-28 or later as `io.modelcontextprotocol/serverInfo` ([`identify`]): that revision
//!   (`basic`, per-response protocol fields) says servers SHOULD include it in every result,
//!   so that a client keeping no connection state knows who answered. Earlier protocols name
//!   the server in the `initialize` result only, and their results keep the shape they had.
//! - A request for a feature we do not declare (prompts, resources, completions: we have none
//!   of our own; downstream servers' are reached from code) is a method we do not have:
//!   `-32601` ([`not_offered`]; on HTTP a 2026-07-28 request gets 404), where rmcp would
//!   answer an empty list. Servers that support a feature MUST declare its capability
//!   (2026-07-28 `server/prompts`, `server/resources`), and a server not implementing a
//!   method MUST answer `-32601` (`transports/streamable-http`); an empty answer beside an
//!   undeclared capability says both "none" and "not supported".
//! - A list answered on one page refuses a cursor ([`one_page`]): we never hand one out.

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, ErrorCode, Implementation, MetaObject, PaginatedRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};

/// The `_meta` key of the server's own name and version.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// This server's name and version.
pub(super) fn implementation() -> Implementation {
    Implementation::new("code-executor", env!("CARGO_PKG_VERSION"))
}

/// Whether a request was made on a protocol without the `initialize` handshake (2026-07-28 or
/// later): its client says what it offers with each request and is asked in `input_required`
/// rounds, and its results name their server.
pub(super) fn handshake_free(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// Puts our identity into a result's `_meta` when the request was made on a protocol whose
/// results carry it, beside what is there (an identity already there stays).
pub(super) fn identify(meta: &mut Option<MetaObject>, context: &RequestContext<RoleServer>) {
    // Results on a protocol without the `initialize` handshake name their server.
    if handshake_free(context) {
        put_identity(meta);
    }
}

fn put_identity(meta: &mut Option<MetaObject>) {
    meta.get_or_insert_default()
        .0
        .entry(SERVER_INFO)
        .or_insert_with(|| {
            serde_json::to_value(implementation()).expect("an Implementation serializes")
        });
}

/// A `tools/call` answer, complete or asking, with our identity (see [`identify`]).
pub(super) fn identified(
    mut response: CallToolResponse,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    match &mut response {
        CallToolResponse::Complete(result) => identify(&mut result.meta, context),
        CallToolResponse::InputRequired(input) => identify(&mut input.meta, context),
        CallToolResponse::Task(task) => identify(&mut task.meta, context),
        _ => {}
    }
    response
}

/// Refuses a cursor for a list we answer on one page: we never handed one out (pagination:
/// an invalid cursor SHOULD get `-32602`). An empty one is taken for none.
pub(super) fn one_page(
    method: &str,
    request: Option<PaginatedRequestParams>,
) -> Result<(), ErrorData> {
    match request.and_then(|r| r.cursor) {
        Some(cursor) if !cursor.is_empty() => Err(ErrorData::invalid_params(
            format!("{method}: unknown cursor (the first page holds every item)"),
            None,
        )),
        _ => Ok(()),
    }
}

/// The answer to `method` of a `feature` we do not declare.
pub(super) fn not_offered(method: &str, feature: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {method} (this server declares no {feature})"),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn our_identity_goes_beside_what_meta_holds() {
        let mut meta = None;
        put_identity(&mut meta);
        let wire = serde_json::to_value(&meta).unwrap();
        assert_eq!(wire[SERVER_INFO]["name"], "code-executor");
        assert_eq!(wire[SERVER_INFO]["version"], env!("CARGO_PKG_VERSION"));

        let mut own = MetaObject::new();
        own.0.insert("com.example/trace".into(), json!("t1"));
        own.0
            .insert(SERVER_INFO.into(), json!({"name": "kept", "version": "0"}));
        let mut meta = Some(own);
        put_identity(&mut meta);
        let wire = serde_json::to_value(&meta).unwrap();
        assert_eq!(wire["com.example/trace"], "t1");
        assert_eq!(wire[SERVER_INFO]["name"], "kept");
    }

    #[test]
    fn a_cursor_we_never_handed_out_is_invalid() {
        let with = |cursor: Option<&str>| {
            let params = PaginatedRequestParams::default().with_cursor(cursor.map(String::from));
            one_page("tools/list", Some(params))
        };
        assert!(one_page("tools/list", None).is_ok());
        assert!(with(None).is_ok());
        assert!(with(Some("")).is_ok());
        let error = with(Some("abc")).unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.starts_with("tools/list: unknown cursor"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_feature_not_offered_is_a_method_not_found() {
        let error = not_offered("prompts/list", "prompts");
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(
            error.message,
            "Method not found: prompts/list (this server declares no prompts)"
        );
    }
}
