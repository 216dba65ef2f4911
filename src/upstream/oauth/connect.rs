//! The authorized HTTP client the pool connects a streamable-HTTP server with, when the user
//! has logged in to it: rmcp's `AuthClient` over reqwest, reading and writing tokens through
//! the file store, so tokens are attached to every request and refreshed before they expire
//! and once on a 401.
//!
//! Address policy: discovery and token requests go through rmcp's own filtered HTTP client
//! (`AuthorizationManager::new`): metadata, authorization and token endpoints may not sit on
//! loopback, private, link-local or cloud-metadata addresses unless the server's own URL names
//! an address of that class (`localhost` or a loopback or private IP literal: a server on
//! 127.0.0.1 may use an authorization server on loopback, one on 10.0.0.5 one on a private
//! address). A server reached by a public name cannot steer code-executor's OAuth requests into
//! the local network; an operator whose public-named server uses a private authorization server
//! must name the server by its private address.

use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager, OAuthClientConfig};

use super::store::{FileCredentialStore, OAuthStore, StoreError};

/// Why an authorized client could not be made. `public` is safe to show anywhere (no tokens,
/// no secrets, no server output); `detail` is for the operator's log.
#[derive(Debug)]
pub struct Unavailable {
    pub public: String,
    pub detail: String,
}

/// The rmcp authorization manager for `server_url`, with the address policy above.
pub async fn manager(server_url: &str) -> Result<AuthorizationManager, AuthError> {
    AuthorizationManager::new(server_url).await
}

/// The authorized client for `server_url` when the store holds tokens for it, `None` when it
/// holds none (the server is reached without authorization; a 401 then means "needs login").
pub async fn authorized_client(
    store: &OAuthStore,
    server_url: &str,
) -> Result<Option<AuthClient<reqwest::Client>>, Unavailable> {
    let record = store
        .load(server_url)
        .map_err(|e: StoreError| Unavailable {
            public: "its OAuth tokens cannot be read; see the server log".into(),
            detail: e.to_string(),
        })?;
    let Some(record) = record.filter(|r| r.has_token()) else {
        return Ok(None);
    };
    let failed = |what: &str, e: AuthError| Unavailable {
        public: format!("{what}; see the server log"),
        detail: format!("{what}: {e}"),
    };
    let mut manager = manager(server_url)
        .await
        .map_err(|e| failed("its OAuth client could not be set up", e))?;
    manager.set_credential_store(FileCredentialStore::new(store.clone(), server_url));
    let ready = manager
        .initialize_from_store()
        .await
        .map_err(|e| failed("its authorization server's metadata could not be read", e))?;
    if !ready {
        // The authorization server changed issuer: rmcp dropped the tokens.
        return Ok(None);
    }
    // rmcp restores the client id only; a configured confidential client needs its secret
    // (for refreshes) and every client its registered redirect URI.
    if let Some(client) = &record.client {
        let mut config = OAuthClientConfig::new(&client.client_id, &client.redirect_uri);
        if let Some(secret) = &client.client_secret {
            config = config.with_client_secret(secret);
        }
        manager
            .configure_client(config)
            .map_err(|e| failed("its OAuth client could not be set up", e))?;
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Unavailable {
            public: "an HTTP client could not be made".into(),
            detail: e.to_string(),
        })?;
    Ok(Some(AuthClient::new(http, manager)))
}
