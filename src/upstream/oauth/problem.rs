//! Reading an rmcp error for what the user must do about authorization: log in (a 401, or
//! tokens that can no longer be refreshed) or log in again asking for more scope (a 403 with
//! `insufficient_scope`). Pure: looks at error values only.

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::auth::{AuthError, WWWAuthenticateParams};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpError,
};

/// What an authorization failure asks of the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthProblem {
    /// No usable tokens: `auth login SERVER`.
    NeedsLogin,
    /// The token lacks a scope the server requires for this request.
    InsufficientScope { required: Vec<String> },
}

/// The problem in a failed handshake, if it is one of authorization.
pub fn of_handshake(error: &ClientInitializeError) -> Option<AuthProblem> {
    match error {
        ClientInitializeError::TransportError { error, .. } => of_chain(error),
        other => {
            let challenge = other.auth_challenge()?;
            Some(of_challenge(challenge))
        }
    }
}

/// The problem in a failed request on a live connection, if it is one of authorization.
pub fn of_service(error: &ServiceError) -> Option<AuthProblem> {
    match error {
        ServiceError::TransportSend(e) => of_chain(e),
        _ => None,
    }
}

/// Walks an error and its sources.
pub fn of_chain(error: &(dyn std::error::Error + 'static)) -> Option<AuthProblem> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            match http {
                StreamableHttpError::AuthRequired(_) => return Some(AuthProblem::NeedsLogin),
                StreamableHttpError::InsufficientScope(s) => return Some(of_scope_error(s)),
                StreamableHttpError::Auth(a) => {
                    if let Some(p) = of_auth_error(a) {
                        return Some(p);
                    }
                }
                _ => {}
            }
        }
        if e.downcast_ref::<AuthRequiredError>().is_some()
            || matches!(
                e.downcast_ref::<crate::upstream::sse::SseError>(),
                Some(crate::upstream::sse::SseError::Unauthorized)
            )
        {
            return Some(AuthProblem::NeedsLogin);
        }
        if let Some(s) = e.downcast_ref::<InsufficientScopeError>() {
            return Some(of_scope_error(s));
        }
        if let Some(a) = e.downcast_ref::<AuthError>()
            && let Some(p) = of_auth_error(a)
        {
            return Some(p);
        }
        current = e.source();
    }
    None
}

fn of_auth_error(error: &AuthError) -> Option<AuthProblem> {
    match error {
        AuthError::AuthorizationRequired
        | AuthError::TokenRefreshRejected(_)
        | AuthError::TokenExpired => Some(AuthProblem::NeedsLogin),
        AuthError::InsufficientScope { required_scope, .. } => {
            Some(AuthProblem::InsufficientScope {
                required: split_scopes(required_scope),
            })
        }
        _ => None,
    }
}

fn of_scope_error(error: &InsufficientScopeError) -> AuthProblem {
    let required = match error.get_required_scope() {
        Some(scope) => split_scopes(scope),
        None => scope_of_challenge(&error.www_authenticate_header),
    };
    AuthProblem::InsufficientScope { required }
}

/// A `WWW-Authenticate` challenge: `insufficient_scope` or (otherwise) a login.
fn of_challenge(header: &str) -> AuthProblem {
    let params = parse(header);
    if params.is_insufficient_scope() {
        AuthProblem::InsufficientScope {
            required: params
                .scope
                .as_deref()
                .map(split_scopes)
                .unwrap_or_default(),
        }
    } else {
        AuthProblem::NeedsLogin
    }
}

fn scope_of_challenge(header: &str) -> Vec<String> {
    parse(header)
        .scope
        .as_deref()
        .map(split_scopes)
        .unwrap_or_default()
}

fn parse(header: &str) -> WWWAuthenticateParams {
    let base = reqwest::Url::parse("http://localhost/").expect("a valid URL");
    WWWAuthenticateParams::parse(header, &base)
}

/// Scope values are space-separated (RFC 6749 §3.3); only printable, unquoted ones are kept,
/// so a hostile server cannot put shell syntax into the command we print.
fn split_scopes(scopes: &str) -> Vec<String> {
    scopes
        .split_ascii_whitespace()
        .filter(|s| {
            s.len() <= 128
                && s.chars()
                    .all(|c| c.is_ascii_graphic() && !"\"\\'`$;&|<>(){}".contains(c))
        })
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_401_means_login_and_a_403_names_the_scope() {
        let e: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::AuthRequired(AuthRequiredError::new("Bearer".into()));
        assert_eq!(of_chain(&e), Some(AuthProblem::NeedsLogin));
        let e: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
                r#"Bearer error="insufficient_scope", scope="read write""#.into(),
                None,
            ));
        assert_eq!(
            of_chain(&e),
            Some(AuthProblem::InsufficientScope {
                required: vec!["read".into(), "write".into()]
            })
        );
        let e: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::Auth(AuthError::TokenRefreshRejected("gone".into()));
        assert_eq!(of_chain(&e), Some(AuthProblem::NeedsLogin));
        let e: StreamableHttpError<reqwest::Error> = StreamableHttpError::UnexpectedEndOfStream;
        assert_eq!(of_chain(&e), None);
    }

    #[test]
    fn scopes_with_shell_syntax_are_dropped() {
        assert_eq!(
            split_scopes("write $(rm -rf ~) `x` ok:scope a;b"),
            ["write", "-rf", "ok:scope"]
        );
    }
}
