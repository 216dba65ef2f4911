//! The file-backed OAuth store: one JSON file per server URL under `oauth_dir`, holding the
//! client registered with that server's authorization server (one client per server URL) and
//! the tokens it was granted.
//!
//! Files are mode 0600 in a directory of mode 0700, and every write replaces the file
//! atomically (a temporary file in the same directory, synced, then renamed over it), so a
//! reader never sees half a record. Nothing here prints a token or a client secret: the
//! `Debug` impls redact them, and errors name files and reasons only.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Version of the record format; a file with another version is refused, not guessed at.
const RECORD_VERSION: u32 = 1;

/// Why the store could not be read or written. Names files, never contents.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the OAuth store directory {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the OAuth store file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the OAuth store file {path} is not a valid record ({reason}); delete it and run `code-executor auth login` again"
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot write the OAuth store file {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How the client was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientSource {
    /// Dynamic Client Registration (RFC 7591) at the authorization server.
    Dynamic,
    /// Given by the user (`auth login --client-id`).
    Configured,
}

/// The OAuth client code-executor uses with one server's authorization server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RegisteredClient {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The loopback redirect URI registered for this client.
    pub redirect_uri: String,
    pub source: ClientSource,
}

impl std::fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("redirect_uri", &self.redirect_uri)
            .field("source", &self.source)
            .finish()
    }
}

/// Everything stored for one server URL. `Debug` shows no token (rmcp's
/// `StoredCredentials` redacts its token response) and no secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    pub version: u32,
    pub server_url: String,
    #[serde(default)]
    pub client: Option<RegisteredClient>,
    #[serde(default)]
    pub credentials: Option<StoredCredentials>,
}

impl ServerRecord {
    pub fn new(server_url: &str) -> Self {
        ServerRecord {
            version: RECORD_VERSION,
            server_url: server_url.to_string(),
            client: None,
            credentials: None,
        }
    }

    /// Whether the record holds an access token (maybe expired).
    pub fn has_token(&self) -> bool {
        self.credentials
            .as_ref()
            .is_some_and(|c| c.token_response.is_some())
    }
}

/// The directory of records.
#[derive(Debug, Clone)]
pub struct OAuthStore {
    dir: PathBuf,
}

impl OAuthStore {
    pub fn new(dir: PathBuf) -> Self {
        OAuthStore { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `server_url`: a hash of the URL, so any URL makes a safe file name.
    pub fn path_for(&self, server_url: &str) -> PathBuf {
        let digest = Sha256::digest(server_url.as_bytes());
        self.dir
            .join(format!("{}.json", &hex::encode(digest)[..32]))
    }

    /// The record of `server_url`, if one was written.
    pub fn load(&self, server_url: &str) -> Result<Option<ServerRecord>, StoreError> {
        let path = self.path_for(server_url);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::Read { path, source }),
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            path: path.clone(),
            reason,
        };
        // serde_json's messages name positions and expected types, never the values read.
        let record: ServerRecord =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if record.version != RECORD_VERSION {
            return Err(corrupt(format!("unknown version {}", record.version)));
        }
        if record.server_url != server_url {
            return Err(corrupt("it belongs to another server URL".into()));
        }
        Ok(Some(record))
    }

    /// Writes `record` atomically (mode 0600; the directory is made mode 0700).
    pub fn save(&self, record: &ServerRecord) -> Result<(), StoreError> {
        self.ensure_dir()?;
        let path = self.path_for(&record.server_url);
        let write = |source| StoreError::Write {
            path: path.clone(),
            source,
        };
        let bytes = serde_json::to_vec_pretty(record)
            .map_err(|e| write(std::io::Error::other(e.to_string())))?;
        // NamedTempFile creates the file with mode 0600 in the same directory (same file
        // system, so the rename is atomic).
        let mut tmp = tempfile::Builder::new()
            .prefix(".oauth-")
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(&self.dir)
            .map_err(write)?;
        tmp.write_all(&bytes).map_err(write)?;
        tmp.as_file().sync_all().map_err(write)?;
        tmp.persist(&path).map_err(|e| write(e.error))?;
        Ok(())
    }

    /// Deletes the record of `server_url`; whether there was one.
    pub fn remove(&self, server_url: &str) -> Result<bool, StoreError> {
        let path = self.path_for(server_url);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StoreError::Write { path, source }),
        }
    }

    fn ensure_dir(&self) -> Result<(), StoreError> {
        let dir_error = |source| StoreError::Dir {
            path: self.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(dir_error)?;
        let mode = std::fs::metadata(&self.dir)
            .map_err(dir_error)?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                .map_err(dir_error)?;
        }
        Ok(())
    }
}

/// rmcp's view of one server's tokens in the store: `load`/`save`/`clear` read and replace
/// the `credentials` of its record, keeping its client.
pub struct FileCredentialStore {
    store: OAuthStore,
    server_url: String,
}

impl FileCredentialStore {
    pub fn new(store: OAuthStore, server_url: &str) -> Self {
        FileCredentialStore {
            store,
            server_url: server_url.to_string(),
        }
    }

    fn record(&self) -> Result<ServerRecord, AuthError> {
        Ok(self
            .store
            .load(&self.server_url)
            .map_err(store_error)?
            .unwrap_or_else(|| ServerRecord::new(&self.server_url)))
    }
}

fn store_error(e: StoreError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.record()?.credentials)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let mut record = self.record()?;
        record.credentials = Some(credentials);
        self.store.save(&record).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let mut record = self.record()?;
        if record.credentials.take().is_some() {
            self.store.save(&record).map_err(store_error)?;
        }
        Ok(())
    }

    /// The authorization server refused the refresh token for good: the tokens are dropped
    /// (the client is kept), so `auth status` says the server needs login.
    async fn on_refresh_token_rejected(
        &self,
        rejected: &StoredCredentials,
    ) -> Result<(), AuthError> {
        let mut record = self.record()?;
        let same = |c: &StoredCredentials| refresh_token_of(c) == refresh_token_of(rejected);
        if record.credentials.as_ref().is_some_and(same) {
            record.credentials = None;
            self.store.save(&record).map_err(store_error)?;
        }
        Ok(())
    }
}

/// The refresh token of `credentials`, read from its serialized form (the token response's own
/// accessor is a trait of the `oauth2` crate, which this crate does not depend on).
fn refresh_token_of(credentials: &StoredCredentials) -> Option<String> {
    let value = serde_json::to_value(credentials.token_response.as_ref()?).ok()?;
    value.get("refresh_token")?.as_str().map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(token: &str) -> StoredCredentials {
        let json = serde_json::json!({
            "client_id": "client-1",
            "token_response": {
                "access_token": token,
                "token_type": "bearer",
                "expires_in": 3600,
                "refresh_token": format!("refresh-{token}"),
            },
            "granted_scopes": ["read"],
            "token_received_at": 1,
        });
        serde_json::from_value(json).unwrap()
    }

    fn record(url: &str, token: &str) -> ServerRecord {
        let mut r = ServerRecord::new(url);
        r.client = Some(RegisteredClient {
            client_id: "client-1".into(),
            client_secret: Some("client-secret-value".into()),
            redirect_uri: "http://127.0.0.1:1234/callback".into(),
            source: ClientSource::Dynamic,
        });
        r.credentials = Some(credentials(token));
        r
    }

    #[test]
    fn records_are_private_files_in_a_private_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("oauth");
        let store = OAuthStore::new(dir.clone());
        store
            .save(&record("https://mcp.example/mcp", "tok-A"))
            .unwrap();
        let path = store.path_for("https://mcp.example/mcp");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        // A directory someone loosened is tightened on the next write.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        store
            .save(&record("https://mcp.example/mcp", "tok-B"))
            .unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn a_write_replaces_the_file_atomically_and_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let store = OAuthStore::new(tmp.path().to_path_buf());
        let url = "https://mcp.example/mcp";
        store.save(&record(url, "tok-A")).unwrap();
        let path = store.path_for(url);
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = inode(&path);
        store.save(&record(url, "tok-B")).unwrap();
        // A new file renamed over the old one, not the old one rewritten in place.
        assert_ne!(inode(&path), before);
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, [path.file_name().unwrap().to_str().unwrap()]);
        let loaded = store.load(url).unwrap().unwrap();
        let text = serde_json::to_string(&loaded).unwrap();
        assert!(text.contains("tok-B") && !text.contains("tok-A"));
    }

    #[test]
    fn one_file_per_server_url() {
        let tmp = tempfile::tempdir().unwrap();
        let store = OAuthStore::new(tmp.path().to_path_buf());
        store
            .save(&record("https://a.example/mcp", "tok-A"))
            .unwrap();
        store
            .save(&record("https://b.example/mcp", "tok-B"))
            .unwrap();
        assert_ne!(
            store.path_for("https://a.example/mcp"),
            store.path_for("https://b.example/mcp")
        );
        assert!(store.load("https://c.example/mcp").unwrap().is_none());
        assert!(store.remove("https://a.example/mcp").unwrap());
        assert!(!store.remove("https://a.example/mcp").unwrap());
        assert!(store.load("https://b.example/mcp").unwrap().is_some());
    }

    #[test]
    fn a_corrupted_file_is_a_clear_error_naming_the_file_not_its_contents() {
        let tmp = tempfile::tempdir().unwrap();
        let store = OAuthStore::new(tmp.path().to_path_buf());
        let url = "https://mcp.example/mcp";
        let path = store.path_for(url);
        std::fs::write(
            &path,
            b"{\"version\": 1, \"server_url\": \"secret-token-xyz",
        )
        .unwrap();
        let err = store.load(url).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("auth login"), "{err}");
        assert!(!err.contains("secret-token-xyz"), "{err}");
        // A record of another URL under this URL's name is refused too.
        store
            .save(&record("https://other.example/mcp", "t"))
            .unwrap();
        std::fs::rename(store.path_for("https://other.example/mcp"), &path).unwrap();
        let err = store.load(url).unwrap_err().to_string();
        assert!(err.contains("another server URL"), "{err}");
    }

    #[test]
    fn debug_output_shows_no_token_and_no_secret() {
        let r = record("https://mcp.example/mcp", "tok-SECRET-123");
        let shown = format!("{r:?}");
        assert!(!shown.contains("tok-SECRET-123"), "{shown}");
        assert!(!shown.contains("client-secret-value"), "{shown}");
        assert!(shown.contains("client-1"));
    }

    #[tokio::test]
    async fn the_credential_store_keeps_the_client_and_forgets_rejected_tokens() {
        let tmp = tempfile::tempdir().unwrap();
        let store = OAuthStore::new(tmp.path().to_path_buf());
        let url = "https://mcp.example/mcp";
        store.save(&record(url, "tok-A")).unwrap();
        let creds = FileCredentialStore::new(store.clone(), url);
        creds.save(credentials("tok-B")).await.unwrap();
        let loaded = store.load(url).unwrap().unwrap();
        assert!(loaded.client.is_some());
        assert!(serde_json::to_string(&loaded).unwrap().contains("tok-B"));
        // A rejection of an older refresh token does not drop newer tokens.
        creds
            .on_refresh_token_rejected(&credentials("tok-A"))
            .await
            .unwrap();
        assert!(store.load(url).unwrap().unwrap().has_token());
        creds
            .on_refresh_token_rejected(&credentials("tok-B"))
            .await
            .unwrap();
        let after = store.load(url).unwrap().unwrap();
        assert!(!after.has_token());
        assert!(after.client.is_some());
    }
}
