//! One client session over stdio, as rmcp serves it: the [`Front`] plus what the session
//! itself holds, its protocol.
//!
//! - One protocol per session. The first `initialize` (or, on 2026-07-28, the first request
//!   naming its protocol in `_meta`) fixes it; a later `initialize` is refused with `-32600`
//!   naming the session's protocol, and changes nothing. rmcp would answer it, store the
//!   requested version as the client's (unnegotiated), and serve the session on a protocol
//!   it never agreed to (on 2026-07-28 `ping` is not found, results gain `resultType`).
//! - One wording of `-32601`: rmcp's own answers name only the method (`ping`); each is
//!   reworded [`malformed::method_not_found`].
//! - Requests refused for what the client sent are warned about through [`Complaints`],
//!   limited per session; other error answers each time (rmcp's own warning of every error
//!   answer is left out of the log, see [`super::complaints::is_rmcp_error_answer_warning`]).
//!
//! Over HTTP every request is its own session (the endpoint issues none), so this wrapper
//! serves stdio only; [`super::http`] rewords `-32601` answers on its side.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::ErrorData;
use rmcp::model::{
    ClientNotification, ClientRequest, ErrorCode, ProtocolVersion, ServerConfig, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, Service};

use super::Front;
use super::complaints::{Complaints, client_fault};
use super::malformed;
use crate::executor::STDIO_SESSION;

/// The stdio client session.
pub(crate) struct Session {
    front: Front,
    /// The protocol the session was opened on.
    protocol: OnceLock<ProtocolVersion>,
    complaints: Arc<Complaints>,
}

impl Session {
    pub(crate) fn new(front: Front, complaints: Arc<Complaints>) -> Self {
        Session {
            front,
            protocol: OnceLock::new(),
            complaints,
        }
    }

    /// Notes the protocol a request opens the session on, before it is served: a request other
    /// than `initialize`, `server/discover` (a probe before any lifecycle) and `ping` (allowed
    /// before `initialize`) that names its protocol in `_meta`, with no handshake behind it,
    /// opens a 2026-07-28 session.
    fn note_inline_opening(&self, request: &ClientRequest, context: &RequestContext<RoleServer>) {
        if self.protocol.get().is_some()
            || context.peer.peer_info().is_some()
            || matches!(
                request,
                ClientRequest::InitializeRequest(_)
                    | ClientRequest::DiscoverRequest(_)
                    | ClientRequest::PingRequest(_)
            )
        {
            return;
        }
        if let Some(version) = context.meta.protocol_version() {
            let _ = self.protocol.set(version);
        }
    }
}

/// The refusal of an `initialize` on a session already opened on `protocol`.
pub(crate) fn already_initialized(protocol: &ProtocolVersion) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "Invalid Request: this session is already initialized with protocol {protocol}; a second initialize is refused and changes nothing (start a new session for another protocol)"
        ),
        None,
    )
}

/// Rewords a `-32601` answer to `method` the one way ([`malformed::method_not_found`]); an
/// answer already worded so (with a reason after it) stays.
pub(crate) fn reword_not_found(error: &mut ErrorData, method: &str) {
    let wording = malformed::method_not_found(method);
    if error.code == ErrorCode::METHOD_NOT_FOUND && !error.message.starts_with(&wording) {
        error.message = Cow::Owned(wording);
    }
}

impl Service<RoleServer> for Session {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let method = request.method().to_string();
        // rmcp hands the session's first `initialize` over with the client's parameters already
        // stored; one arriving where none are stored comes to a session opened without it.
        if matches!(request, ClientRequest::InitializeRequest(_))
            && (self.protocol.get().is_some() || context.peer.peer_info().is_none())
        {
            let protocol = self
                .protocol
                .get()
                .cloned()
                .unwrap_or(ProtocolVersion::V_2026_07_28);
            let refusal = already_initialized(&protocol);
            self.complaints.complain(STDIO_SESSION, &refusal.message);
            return Err(refusal);
        }
        self.note_inline_opening(&request, &context);
        let result = self.front.handle_request(request, context).await;
        match result {
            Ok(ServerResult::InitializeResult(ref opened)) => {
                let _ = self.protocol.set(opened.protocol_version.clone());
                result
            }
            Ok(served) => Ok(served),
            Err(mut error) => {
                reword_not_found(&mut error, &method);
                let what = format!("{method}: {} {}", error.code.0, error.message);
                if client_fault(&error) {
                    self.complaints.complain(STDIO_SESSION, &what);
                } else {
                    tracing::warn!(session = STDIO_SESSION, "front: error answer: {what}");
                }
                Err(error)
            }
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.front.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        Service::<RoleServer>::get_info(&self.front)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::<RoleServer>::supported_protocol_versions(&self.front)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_not_found_is_worded_one_way() {
        let mut bare = ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "ping", None);
        reword_not_found(&mut bare, "ping");
        assert_eq!(bare.message, "Method not found: ping");
        let mut with_reason = ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "Method not found: prompts/list (this server declares no prompts)",
            None,
        );
        reword_not_found(&mut with_reason, "prompts/list");
        assert_eq!(
            with_reason.message,
            "Method not found: prompts/list (this server declares no prompts)"
        );
        let mut other = ErrorData::invalid_params("bad cursor", None);
        reword_not_found(&mut other, "tools/list");
        assert_eq!(other.message, "bad cursor");
    }

    #[test]
    fn a_second_initialize_names_the_sessions_protocol() {
        let refusal = already_initialized(&ProtocolVersion::V_2025_11_25);
        assert_eq!(refusal.code, ErrorCode::INVALID_REQUEST);
        assert!(
            refusal
                .message
                .contains("already initialized with protocol 2025-11-25"),
            "{}",
            refusal.message
        );
    }
}
