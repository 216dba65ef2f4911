//! How the MCP lifecycle of a stdio downstream server is chosen, so that its first contact
//! costs one start: the `server/discover` probe on the connection that will serve (rmcp's
//! `ClientLifecycleMode::Auto`), the bound on waiting for its answer ([`ProbeDeadline`]), and
//! the memory of which lifecycle each server spoke ([`LifecycleMemory`]). No policy, no process
//! handling: `client` spawns and connects with what this module chooses.
//!
//! One child, one connection. The 2026-07-28 probe (`server/discover`) goes first; a legacy
//! server answers it with a JSON-RPC error (method not found, "not initialized", ...) and rmcp
//! goes on with `initialize` (offering 2025-11-25) on the same stream. A server that does not
//! answer the probe within [`PROBE_BOUND`] is taken for legacy the same way: the wrapper gives
//! rmcp a "method not found" answer to the probe's own request id and `initialize` follows.
//!
//! A late answer to the probe can never be taken for the answer to `initialize`: JSON-RPC
//! correlates by request id, rmcp numbers requests on a connection from one counter (the probe
//! and `initialize` never share an id), and rmcp's start-up refuses a response whose id is not
//! the one it waits for. [`ProbeDeadline`] goes further and drops any message answering the
//! probe once it has stopped waiting for it, so the late answer costs nothing. A server that was
//! only slow (it speaks 2026-07-28 but started after the bound) refuses the `initialize` that
//! followed; `client` then starts it once more with `server/discover` alone, unbounded, and
//! remembers that it is modern.
//!
//! What worked is remembered per launch spec (command, arguments, environment, working
//! directory) for the pool's life and, when the pool has a cache directory, on disk in
//! `upstream-lifecycles.json` there, as SHA-256 digests of the spec (never the spec itself: the
//! environment may hold credentials) with `modern` or `legacy`, so a later process skips the
//! probe of a legacy server (and its bound). A remembered lifecycle that fails with the server's
//! own refusal is forgotten and the probe runs again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, NumberOrString, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::clients::discovery::{ServerSpec, Transport as SpecTransport};

/// How long the `server/discover` probe of a server of unknown lifecycle is waited for before
/// the server is taken for legacy. A legacy server that answers the probe with an error (as
/// JSON-RPC requires) is not affected however slowly it starts; this bounds the cost of one
/// that never answers it, and is long enough for a typical modern server to start in.
pub(crate) const PROBE_BOUND: Duration = Duration::from_secs(3);

/// The name of the memory file in the cache directory.
const MEMORY_FILE: &str = "upstream-lifecycles.json";
/// Most launch specs remembered on disk (the oldest are dropped).
const MAX_REMEMBERED: usize = 512;

/// The lifecycle a server spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Known {
    /// 2026-07-28 and later: `server/discover`, no handshake.
    Modern,
    /// 2025-11-25 and earlier: the `initialize` handshake.
    Legacy,
}

impl Known {
    /// What a negotiated protocol version says.
    pub(crate) fn of(protocol: &rmcp::model::ProtocolVersion) -> Self {
        if protocol.has_initialize() {
            Known::Legacy
        } else {
            Known::Modern
        }
    }
}

/// Which lifecycle each stdio server spoke, by the digest of its launch spec.
#[derive(Default)]
pub(crate) struct LifecycleMemory {
    file: Option<PathBuf>,
    /// `None` until the file (if any) has been read.
    known: Mutex<Option<Remembered>>,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Remembered {
    /// Oldest first.
    servers: Vec<(String, Known)>,
}

impl Remembered {
    fn get(&self, key: &str) -> Option<Known> {
        self.servers
            .iter()
            .find_map(|(k, known)| (k == key).then_some(*known))
    }

    /// Sets or clears an entry; whether anything changed.
    fn set(&mut self, key: &str, known: Option<Known>) -> bool {
        if self.get(key) == known {
            return false;
        }
        self.servers.retain(|(k, _)| k != key);
        if let Some(known) = known {
            self.servers.push((key.to_string(), known));
        }
        let excess = self.servers.len().saturating_sub(MAX_REMEMBERED);
        self.servers.drain(..excess);
        true
    }
}

impl LifecycleMemory {
    /// A memory kept in `dir` (created when first written) as well as in memory.
    pub(crate) fn in_dir(dir: &Path) -> Self {
        LifecycleMemory {
            file: Some(dir.join(MEMORY_FILE)),
            known: Mutex::new(None),
        }
    }

    /// What `spec` spoke last, if it is a stdio server that has been connected.
    pub(crate) fn get(&self, spec: &ServerSpec) -> Option<Known> {
        let key = fingerprint(spec)?;
        self.with(|r| r.get(&key))
    }

    /// Records what `spec` spoke (`None`: forget it).
    pub(crate) fn set(&self, spec: &ServerSpec, known: Option<Known>) {
        let Some(key) = fingerprint(spec) else {
            return;
        };
        let snapshot = self.with(|r| r.set(&key, known).then(|| serde_json::to_vec(r)));
        if let (Some(Ok(bytes)), Some(file)) = (snapshot, &self.file)
            && let Err(e) = write_atomically(file, &bytes)
        {
            tracing::debug!(file = %file.display(), "cannot record downstream lifecycles: {e}");
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Remembered) -> T) -> T {
        let mut known = self.known.lock().expect("lifecycle memory lock");
        let remembered = known.get_or_insert_with(|| self.read());
        f(remembered)
    }

    /// The file's entries; nothing when it is absent or unreadable (it is only a hint).
    fn read(&self) -> Remembered {
        let Some(file) = &self.file else {
            return Remembered::default();
        };
        let Ok(bytes) = std::fs::read(file) else {
            return Remembered::default();
        };
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::debug!(file = %file.display(), "ignoring unreadable lifecycle memory: {e}");
            Remembered::default()
        })
    }
}

/// Writes `bytes` to `file` through a temporary file and a rename, readable by the owner only.
fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// The SHA-256 of a stdio server's launch spec (hex); `None` for other transports.
fn fingerprint(spec: &ServerSpec) -> Option<String> {
    let SpecTransport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &spec.transport
    else {
        return None;
    };
    let canonical = serde_json::json!({
        "command": command,
        "args": args,
        "env": env,
        "cwd": cwd.as_ref().map(|c| c.to_string_lossy()),
    });
    Some(hex::encode(Sha256::digest(canonical.to_string())))
}

/// A transport that stops waiting for the answer to the `server/discover` probe after a bound.
/// Everything else passes through unchanged.
///
/// When the bound passes, [`receive`](Transport::receive) yields a "method not found" error
/// for the probe's id (rmcp's `Auto` lifecycle then sends `initialize` on the same stream), and
/// from then on drops the server's own answer to the probe whenever it comes.
pub(crate) struct ProbeDeadline<T> {
    inner: T,
    bound: Option<Duration>,
    probe: Probe,
    /// Set when the bound passed: the server was taken for legacy without saying so.
    gave_up: Arc<AtomicBool>,
}

enum Probe {
    /// No probe sent yet.
    NotSent,
    /// Sent, its answer awaited until `until`.
    Waiting { id: RequestId, until: Instant },
    /// Given up on: its answer is dropped when it comes.
    Abandoned { id: RequestId },
    /// Answered (or its late answer dropped).
    Over,
}

impl<T> ProbeDeadline<T> {
    /// `bound`: how long the probe is waited for (`None`: as long as the connection lives);
    /// `gave_up` is set when the bound passes.
    pub(crate) fn new(inner: T, bound: Option<Duration>, gave_up: Arc<AtomicBool>) -> Self {
        ProbeDeadline {
            inner,
            bound,
            probe: Probe::NotSent,
            gave_up,
        }
    }
}

/// Whether `message` answers the request `id` (an error without an id answers the request
/// awaited, as JSON-RPC has it for a request the server could not read).
fn answers(message: &ServerJsonRpcMessage, id: &RequestId, idless_counts: bool) -> bool {
    let same = |other: &RequestId| {
        other == id
            || matches!((id, other), (NumberOrString::Number(n), NumberOrString::String(s))
                if s.as_ref() == n.to_string())
    };
    match message {
        ServerJsonRpcMessage::Response(response) => same(&response.id),
        ServerJsonRpcMessage::Error(error) => match &error.id {
            Some(other) => same(other),
            None => idless_counts,
        },
        _ => false,
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProbeDeadline<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let (Probe::NotSent, Some(bound), ClientJsonRpcMessage::Request(request)) =
            (&self.probe, self.bound, &item)
            && matches!(request.request, ClientRequest::DiscoverRequest(_))
        {
            self.probe = Probe::Waiting {
                id: request.id.clone(),
                until: Instant::now() + bound,
            };
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            match &self.probe {
                Probe::Waiting { id, until } => {
                    let (id, until) = (id.clone(), *until);
                    tokio::select! {
                        message = self.inner.receive() => {
                            let message = message?;
                            if answers(&message, &id, true) {
                                self.probe = Probe::Over;
                            }
                            return Some(message);
                        }
                        () = tokio::time::sleep_until(until) => {
                            self.gave_up.store(true, Ordering::SeqCst);
                            self.probe = Probe::Abandoned { id: id.clone() };
                            let error = ErrorData::new(
                                ErrorCode::METHOD_NOT_FOUND,
                                format!(
                                    "no answer to server/discover within {} ms",
                                    self.bound.unwrap_or_default().as_millis()
                                ),
                                None,
                            );
                            return Some(ServerJsonRpcMessage::error(error, Some(id)));
                        }
                    }
                }
                Probe::Abandoned { id } => {
                    let message = self.inner.receive().await?;
                    if answers(&message, id, false) {
                        tracing::debug!("dropped a late answer to server/discover");
                        self.probe = Probe::Over;
                        continue;
                    }
                    return Some(message);
                }
                Probe::NotSent | Probe::Over => return self.inner.receive().await,
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::discovery::ConfigSource;

    fn spec(args: &[&str], env: &[(&str, &str)]) -> ServerSpec {
        ServerSpec {
            name: "s".into(),
            transport: SpecTransport::Stdio {
                command: "srv".into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                cwd: None,
            },
            source: ConfigSource::test(),
        }
    }

    #[test]
    fn the_fingerprint_follows_the_whole_launch_spec_and_not_the_name() {
        let a = spec(&["--x"], &[("TOKEN", "1")]);
        let mut renamed = a.clone();
        renamed.name = "other".into();
        assert_eq!(fingerprint(&a), fingerprint(&renamed));
        assert_ne!(
            fingerprint(&a),
            fingerprint(&spec(&["--y"], &[("TOKEN", "1")]))
        );
        assert_ne!(
            fingerprint(&a),
            fingerprint(&spec(&["--x"], &[("TOKEN", "2")]))
        );
        let http = ServerSpec {
            transport: SpecTransport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: Default::default(),
            },
            ..a.clone()
        };
        assert_eq!(fingerprint(&http), None);
    }

    #[test]
    fn the_memory_survives_the_process_and_holds_no_spec() {
        let dir = tempfile::tempdir().unwrap();
        let secret = spec(&["--x"], &[("TOKEN", "hunter2-secret")]);
        let first = LifecycleMemory::in_dir(dir.path());
        assert_eq!(first.get(&secret), None);
        first.set(&secret, Some(Known::Legacy));
        let text = std::fs::read_to_string(dir.path().join(MEMORY_FILE)).unwrap();
        assert!(!text.contains("hunter2") && !text.contains("srv"), "{text}");
        let second = LifecycleMemory::in_dir(dir.path());
        assert_eq!(second.get(&secret), Some(Known::Legacy));
        second.set(&secret, None);
        assert_eq!(LifecycleMemory::in_dir(dir.path()).get(&secret), None);
        // An unreadable file is ignored, then replaced.
        std::fs::write(dir.path().join(MEMORY_FILE), b"{not json").unwrap();
        let third = LifecycleMemory::in_dir(dir.path());
        assert_eq!(third.get(&secret), None);
        third.set(&secret, Some(Known::Modern));
        assert_eq!(
            LifecycleMemory::in_dir(dir.path()).get(&secret),
            Some(Known::Modern)
        );
    }

    #[test]
    fn the_memory_is_bounded() {
        let mut r = Remembered::default();
        for i in 0..MAX_REMEMBERED + 10 {
            assert!(r.set(&i.to_string(), Some(Known::Modern)));
        }
        assert_eq!(r.servers.len(), MAX_REMEMBERED);
        assert_eq!(r.get("0"), None);
        assert_eq!(
            r.get(&(MAX_REMEMBERED + 9).to_string()),
            Some(Known::Modern)
        );
        // Setting what is already known changes nothing (and writes nothing).
        assert!(!r.set(&(MAX_REMEMBERED + 9).to_string(), Some(Known::Modern)));
    }

    #[test]
    fn late_answers_are_recognised_by_id() {
        let id = NumberOrString::Number(0);
        let err = |id: Option<RequestId>| {
            ServerJsonRpcMessage::error(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "x", None), id)
        };
        assert!(answers(&err(Some(id.clone())), &id, false));
        assert!(answers(
            &err(Some(NumberOrString::String("0".into()))),
            &id,
            false
        ));
        assert!(!answers(&err(Some(NumberOrString::Number(1))), &id, true));
        assert!(answers(&err(None), &id, true) && !answers(&err(None), &id, false));
    }

    /// A server that leaves the probe unanswered until `initialize` comes, then answers both, the
    /// probe first: the late answer is dropped, `initialize`'s own answer is used.
    #[tokio::test]
    async fn a_late_answer_to_the_probe_is_dropped_and_initialize_is_served() {
        use rmcp::ClientServiceExt;
        use rmcp::transport::async_rw::AsyncRwTransport;
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        let server = tokio::spawn(async move {
            let (read, mut write) = tokio::io::split(theirs);
            let mut lines = BufReader::new(read).lines();
            let probe: serde_json::Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            assert_eq!(probe["method"], "server/discover");
            let init: serde_json::Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            assert_eq!(init["method"], "initialize");
            assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
            assert_ne!(init["id"], probe["id"]);
            let late = serde_json::json!({"jsonrpc": "2.0", "id": probe["id"],
                "error": {"code": -32601, "message": "Method not found"}});
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": init["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "serverInfo": {"name": "late", "version": "1"}}});
            for message in [late, answer] {
                write
                    .write_all(format!("{message}\n").as_bytes())
                    .await
                    .unwrap();
            }
            let initialized = lines.next_line().await.unwrap().unwrap();
            assert!(
                initialized.contains("notifications/initialized"),
                "{initialized}"
            );
        });
        let gave_up = Arc::new(AtomicBool::new(false));
        let transport = ProbeDeadline::new(
            AsyncRwTransport::new_client(read, write),
            Some(Duration::from_millis(50)),
            gave_up.clone(),
        );
        let lifecycle = rmcp::ClientLifecycleMode::Auto {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            legacy_version: Some(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        let client = ().serve_with_lifecycle(transport, lifecycle).await.unwrap();
        assert!(gave_up.load(Ordering::SeqCst));
        let info = client.peer_info().unwrap();
        assert_eq!(info.protocol_version.as_str(), "2025-06-18");
        server.await.unwrap();
    }
}
