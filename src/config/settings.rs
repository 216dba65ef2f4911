//! The server's own settings: limits, paths and pool sizes.
//!
//! Loaded in two stages (raw, then validated): a TOML file (`--config`, then
//! `CODE_EXECUTOR_CONFIG`, then `~/.config/code-executor/config.toml` if it exists), overridden
//! field by field by `CODE_EXECUTOR_<FIELD>` environment variables. Every field has a safe default,
//! documented on the field. This module owns no discovery of downstream servers (see `discovery`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use super::keys;

/// Environment variable naming the settings file.
pub const CONFIG_ENV: &str = "CODE_EXECUTOR_CONFIG";
/// Prefix of the environment variables that override single settings.
pub(crate) const ENV_PREFIX: &str = "CODE_EXECUTOR_";

/// Writable memory a worker's runtime maps besides the V8 heap (thread stacks, allocator arenas,
/// the JIT), in MiB: `worker_memory_mb` must be at least `heap_limit_mb` plus this.
pub const RUNTIME_MEMORY_MB: u64 = 768;

/// Environment variable holding the HTTP bearer token itself (`http_token_file` is preferred:
/// a file keeps the secret out of the process environment).
pub(crate) const HTTP_TOKEN_ENV: &str = "CODE_EXECUTOR_HTTP_TOKEN";

/// Shortest bearer token accepted: 32 characters (`openssl rand -hex 32` makes 64).
pub(crate) const MIN_TOKEN_LEN: usize = 32;
/// Fewest distinct characters in a token (`aaaa…` or a repeated word is not a secret; 32 random
/// hex digits have fewer with odds of 1 in 3·10⁷).
const MIN_TOKEN_DISTINCT_CHARS: usize = 8;
/// How an operator makes a token; named in every refusal.
const MAKE_A_TOKEN: &str = "make one with `openssl rand -hex 32`";
/// Words that mark a token as a placeholder copied from an example or a manifest (such as
/// deploy/code-executor.yaml's `REPLACE-WITH-A-LONG-RANDOM-TOKEN`), compared case-insensitively.
/// Each is at least 6 characters, so a random token holds one by chance with odds below 1 in 10⁷.
const PLACEHOLDER_WORDS: &[&str] = &[
    "replace",
    "changeme",
    "change-me",
    "change_me",
    "placeholder",
    "example",
    "your-token",
    "your_token",
    "yourtoken",
    "insert-",
    "random-token",
    "token-here",
    "secret-here",
    "xxxxxx",
];

/// Settings as written by the user: every field optional. A key no field has is refused by
/// [`Settings::load`] (with the closest real one), not ignored.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RawSettings {
    /// Where the verified Deno and Pyodide runtimes live.
    /// Default: `$XDG_DATA_HOME/code-executor/runtimes` (`~/.local/share/...`).
    pub runtime_dir: Option<PathBuf>,
    /// The project root used for project-scoped client configs. Default: the current directory.
    pub project_dir: Option<PathBuf>,
    /// Where the Pyodide memory snapshot is kept. Default: `$XDG_CACHE_HOME/code-executor`.
    pub cache_dir: Option<PathBuf>,
    /// Timeout of an execution when the caller gives none, in ms. Default 30000.
    pub timeout_ms: Option<u64>,
    /// Largest timeout a caller may ask for, in ms. Default 300000.
    pub max_timeout_ms: Option<u64>,
    /// Cap on the console output the host keeps of one execution, in bytes (its beginning; the
    /// worker also sends its end). Default 1 MiB.
    pub output_limit_bytes: Option<usize>,
    /// The bytes an execution's reply may put before the model: output, return value and error
    /// together, counted over the text block and `structuredContent` as a client receives
    /// them. Default 40000 (about 10,000 tokens).
    pub reply_budget_bytes: Option<usize>,
    /// Cap on the images, audio and embedded resources one reply carries as their own content
    /// blocks (decoded bytes, all blocks together). Default 2 MiB.
    pub media_limit_bytes: Option<usize>,
    /// V8 heap limit of a worker, in MiB. Default 256.
    pub heap_limit_mb: Option<u32>,
    /// Writable memory a worker may map (RLIMIT_DATA), in MiB: V8 heap, buffers, WebAssembly.
    /// Default 1536; must leave room above `heap_limit_mb` for the runtime itself.
    pub worker_memory_mb: Option<u64>,
    /// Executions running at once; further ones wait in the queue. Default 4.
    pub max_concurrent_executions: Option<usize>,
    /// Executions allowed to wait for a slot; beyond that a call is refused as busy. Default 32.
    pub max_queued_executions: Option<usize>,
    /// Executions one HTTP principal (the token's holders together, or one peer address) may run
    /// at once; its further ones wait in its own queue, and waiting executions are admitted
    /// round-robin between principals, so that one principal never holds every slot. Over stdio
    /// the process's one client may use every slot. Default: half of
    /// `max_concurrent_executions`, rounded up, when the server has no token (each peer address
    /// is a principal); all of them with a token (every client is then the one principal).
    pub max_concurrent_executions_per_principal: Option<usize>,
    /// Executions one HTTP principal may have waiting for a slot; beyond that its calls are
    /// refused as busy while other principals' still queue. Default: half of
    /// `max_queued_executions`, rounded up, without a token; all of them with one.
    pub max_queued_executions_per_principal: Option<usize>,
    /// Execution isolates each TypeScript worker process keeps prepared (each used for one
    /// execution); with any, one spare process is also kept started. 0 disables both. Default 2.
    pub pool_size_typescript: Option<usize>,
    /// Execution isolates (Pyodide loaded) each Python worker process keeps prepared; with any,
    /// one spare process is also kept started. 0 disables both. Default 1.
    pub pool_size_python: Option<usize>,
    /// The most lanes a client session's TypeScript process holds at once (each serves
    /// executions one after another, each in a fresh context); executions beyond them wait for
    /// one. Default: `max_concurrent_executions` (none waits).
    pub max_lanes_typescript: Option<usize>,
    /// The same for Python (each lane holds a Pyodide, about 70 MiB). Default 2: with more, the
    /// executions of one session share the same cores, only using more memory.
    pub max_lanes_python: Option<usize>,
    /// Executions a worker process runs (on its lanes) before it is replaced. Default 1000.
    pub worker_process_executions: Option<u64>,
    /// Seconds a worker process serves before it is replaced. Default 1800.
    pub worker_process_lifetime_s: Option<u64>,
    /// Largest `code` accepted, in bytes. Default 1 MiB.
    pub max_code_bytes: Option<usize>,
    /// Tool calls one execution may make. Default 1000.
    pub max_tool_calls_per_execution: Option<u32>,
    /// Timeout of one downstream tool call, in ms. Default 60000.
    pub tool_call_timeout_ms: Option<u64>,
    /// Timeout for starting and initialising a downstream server, in ms. Default 30000.
    pub connect_timeout_ms: Option<u64>,
    /// This server's own MCP config (`{"mcpServers": {...}}`), read after every client config
    /// so its entries win; `setup --disable-others` copies there the servers it switches off in
    /// a client. Default: `$XDG_CONFIG_HOME/code-executor/servers.json` (used if it exists).
    pub servers_file: Option<PathBuf>,
    /// Typed wrapper modules (`code-executor wrappers`) sandboxed code may import as
    /// `wrappers/<server>.ts` (TypeScript) or `wrappers.<server>` (Python). Default:
    /// `$XDG_DATA_HOME/code-executor/wrappers` (used if it exists).
    pub wrappers_dir: Option<PathBuf>,
    /// Where `code-executor auth login` keeps the OAuth clients and tokens of remote servers:
    /// one file per server URL, mode 0600, in a directory of mode 0700. Default:
    /// `$XDG_CONFIG_HOME/code-executor/oauth` (the appliance points it at its config volume).
    pub oauth_dir: Option<PathBuf>,
    /// Server-wide policy: when set, no execution may call a tool outside these exact names or
    /// `*` globs, whatever its `allowedTools` says. Default: unset (`allowedTools` decides).
    pub policy_allow: Option<Vec<String>>,
    /// Server-wide policy: tools no execution may ever call (names or `*` globs). Deny wins over
    /// every allow. Default: empty.
    pub policy_deny: Option<Vec<String>>,
    /// Largest arguments object of one tool call, in bytes of JSON. Default 1 MiB.
    pub max_argument_bytes: Option<usize>,
    /// Largest downstream result handed to the sandbox, in bytes of JSON. Default 8 MiB.
    pub max_result_bytes: Option<usize>,
    /// Tool calls per minute one client session may make (bursts up to the same number).
    /// Default 12000.
    pub session_calls_per_minute: Option<u32>,
    /// Tool calls per minute to one downstream server, all sessions together. Default 6000.
    pub server_calls_per_minute: Option<u32>,
    /// Tool calls per minute to one tool, all sessions together. Default 3000 (above the default
    /// per-execution cap, so one execution's loop over one tool is not throttled).
    pub tool_calls_per_minute: Option<u32>,
    /// Directory of the audit log: JSON lines, one file per day (`audit.YYYY-MM-DD.jsonl`).
    /// Default: none (no audit log).
    pub audit_log_dir: Option<PathBuf>,
    /// A file holding the bearer token the HTTP endpoint requires (`Authorization: Bearer ..`).
    /// `CODE_EXECUTOR_HTTP_TOKEN` may hold the token instead. Default: none (no authentication;
    /// the endpoint binds loopback unless told otherwise).
    pub http_token_file: Option<PathBuf>,
    /// `Host` header values accepted by the HTTP endpoint besides the loopback names (which
    /// are always accepted). Default: none.
    pub http_allowed_hosts: Option<Vec<String>>,
    /// Browser `Origin`s accepted by the HTTP endpoint besides loopback pages (`*` may stand for
    /// the port, e.g. `https://app.example.com:*`). Default: none.
    pub http_allowed_origins: Option<Vec<String>>,
    /// Address of the operations endpoint: `/livez`, `/readyz` and `/metrics` (Prometheus).
    /// Default: none (not served).
    pub ops_listen: Option<SocketAddr>,
    /// Refuse to run any code when the kernel has no Landlock, instead of running it with
    /// Deno's permissions, seccomp and resource limits only (with a loud warning). Default
    /// false; the container appliance sets it.
    pub require_landlock: Option<bool>,
    /// Tool calls that need the user's approval (through the client's elicitation) before they
    /// leave: names and `*` globs, as in `allowedTools`. Default: none beyond the annotations.
    pub approval_required: Option<Vec<String>>,
    /// Tools whose server marks them `destructiveHint: true` need approval. Default true.
    pub approve_destructive_tools: Option<bool>,
    /// Tools whose server marks them `readOnlyHint: false` need approval. Default false.
    pub approve_tools_not_read_only: Option<bool>,
    /// How long the client's answer to a question (sampling, elicitation, approval) is
    /// waited for, in ms. Default 120000.
    pub ask_timeout_ms: Option<u64>,
    /// Sampling requests (`llm.ask`/`llm.think`, and relayed ones) one execution may make.
    /// Default 10.
    pub sampling_rounds_per_execution: Option<u32>,
    /// The `maxTokens` one execution's sampling requests may add up to. Default 20000.
    pub sampling_tokens_per_execution: Option<u64>,
    /// Questions to the user (approvals and relayed elicitations) one execution may ask.
    /// Default 10.
    pub elicitations_per_execution: Option<u32>,
    /// The largest question a downstream server may have relayed to the client (a sampling
    /// request or an elicitation, as JSON), in bytes: a larger one is refused (sampling) or
    /// answered `cancel` (elicitation) and never reaches the client. Default 65536.
    pub relayed_question_max_bytes: Option<usize>,
    /// Roots offered to downstream servers (`file://` URIs); with none, no roots capability is
    /// declared to them. Default: none.
    pub roots: Option<Vec<String>>,
    /// The longest an execution run as an MCP task may take, in ms: its `timeoutMs` may ask up
    /// to this (instead of `max_timeout_ms`), and the task is stopped this long after it began,
    /// time in the queue and waiting for the client's answers included. Default 3600000.
    pub task_max_ms: Option<u64>,
    /// How long a finished task's result is kept for `tasks/get`, in ms. Default 600000.
    pub task_ttl_ms: Option<u64>,
    /// Tasks one client session may hold, running or finished and kept; at the limit the
    /// oldest finished one is dropped, and a call is refused when all are running. 0 turns
    /// tasks off. Default 16.
    pub max_tasks_per_session: Option<usize>,
    /// The project's workspace: files (`workspace.readText(...)`) and skills (`saveSkill`)
    /// that persist between executions, reached only through host calls. Default true.
    pub workspace: Option<bool>,
    /// Where the workspaces live, one directory per project (the appliance: a volume).
    /// Default: `$XDG_DATA_HOME/code-executor/workspaces`.
    pub workspace_dir: Option<PathBuf>,
    /// Bytes the files of one project's workspace may hold together. Default 104857600.
    pub workspace_max_bytes: Option<u64>,
    /// Files and directories one project's workspace may hold. Default 10000.
    pub workspace_max_files: Option<u64>,
    /// Largest file in a workspace, in bytes (at most 3 MiB less 4 KiB: one pipe message
    /// carries it).
    /// Default 2097152.
    pub workspace_max_file_bytes: Option<u64>,
    /// Whose workspace (files and skills) an HTTP client uses: `principal`, its principal's own
    /// (the token's holders together, or one peer address), so that what one client saved never
    /// runs in another's executions; or `project`, the project's one workspace shared by every
    /// principal. Over stdio the process's one client uses the project's workspace either way.
    /// Default `principal`.
    pub workspace_sharing: Option<WorkspaceSharing>,
    /// Personal data in what reaches the client: `off`, or `tokenize` (replaced by stable
    /// tokens such as `[EMAIL_k7q2xm]`, and put back in tool-call arguments). Default off.
    pub pii: Option<PiiMode>,
    /// The kinds `tokenize` replaces: `email`, `phone`, `card`, `iban`, `national_id`, `ip`.
    /// Default: all of them.
    pub pii_kinds: Option<Vec<PiiKind>>,
}

/// Whose workspace an HTTP client uses (`workspace_sharing`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceSharing {
    /// Each principal has a workspace of its own.
    #[default]
    Principal,
    /// Every principal uses the project's workspace.
    Project,
}

/// What happens to personal data on its way to the client.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PiiMode {
    /// It passes unchanged.
    #[default]
    Off,
    /// It is replaced by tokens that stand for it within the client session.
    Tokenize,
}

/// A kind of personal data `pii = "tokenize"` recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiKind {
    Email,
    Phone,
    Card,
    Iban,
    NationalId,
    Ip,
}

impl PiiKind {
    pub const ALL: [PiiKind; 6] = [
        PiiKind::Email,
        PiiKind::Phone,
        PiiKind::Card,
        PiiKind::Iban,
        PiiKind::NationalId,
        PiiKind::Ip,
    ];
}

/// The limits of one workspace (the project's, or one principal's): each has its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceQuota {
    pub max_bytes: u64,
    pub max_files: u64,
    pub max_file_bytes: u64,
}

/// What one principal may hold of the execution slots and of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrincipalShare {
    /// Executions running at once.
    pub running: usize,
    /// Executions waiting for a slot.
    pub queued: usize,
}

/// Largest `workspace_max_file_bytes`: a file's bytes cross the worker pipe in one message
/// (base64, within the 4 MiB line limit): 3 MiB less 4 KiB, the room of the rest of a `write`
/// call's line (its path of at most 1024 bytes, JSON-escaped, and the envelope).
pub const MAX_WORKSPACE_FILE_BYTES: u64 = 3 * 1024 * 1024 - 4 * 1024;

/// Validated settings with every default applied.
#[derive(Debug, Clone)]
pub struct Settings {
    pub runtime_dir: PathBuf,
    pub project_dir: PathBuf,
    pub cache_dir: PathBuf,
    pub default_timeout: Duration,
    pub max_timeout: Duration,
    pub output_limit_bytes: usize,
    pub reply_budget_bytes: usize,
    pub media_limit_bytes: usize,
    pub heap_limit_mb: u32,
    pub worker_memory_mb: u64,
    pub max_concurrent_executions: usize,
    pub max_queued_executions: usize,
    /// As set; [`Settings::principal_share`] applies the default.
    pub max_concurrent_executions_per_principal: Option<usize>,
    /// As set; [`Settings::principal_share`] applies the default.
    pub max_queued_executions_per_principal: Option<usize>,
    pub pool_size_typescript: usize,
    pub pool_size_python: usize,
    /// As set; [`Settings::max_lanes_typescript`] applies the default.
    pub max_lanes_typescript: Option<usize>,
    pub max_lanes_python: usize,
    pub worker_process_executions: u64,
    pub worker_process_lifetime: Duration,
    pub max_code_bytes: usize,
    pub max_tool_calls_per_execution: u32,
    pub tool_call_timeout: Duration,
    pub connect_timeout: Duration,
    pub servers_file: PathBuf,
    pub wrappers_dir: PathBuf,
    pub oauth_dir: PathBuf,
    pub policy_allow: Option<Vec<String>>,
    pub policy_deny: Vec<String>,
    pub max_argument_bytes: usize,
    pub max_result_bytes: usize,
    pub session_calls_per_minute: u32,
    pub server_calls_per_minute: u32,
    pub tool_calls_per_minute: u32,
    pub audit_log_dir: Option<PathBuf>,
    /// The HTTP bearer token, from `http_token_file` or `CODE_EXECUTOR_HTTP_TOKEN`.
    pub http_token: Option<Secret>,
    pub http_allowed_hosts: Vec<String>,
    pub http_allowed_origins: Vec<String>,
    pub ops_listen: Option<SocketAddr>,
    pub require_landlock: bool,
    pub approval_required: Vec<String>,
    pub approve_destructive_tools: bool,
    pub approve_tools_not_read_only: bool,
    pub ask_timeout: Duration,
    pub sampling_rounds_per_execution: u32,
    pub sampling_tokens_per_execution: u64,
    pub elicitations_per_execution: u32,
    pub relayed_question_max_bytes: usize,
    pub roots: Vec<String>,
    pub task_max: Duration,
    pub task_ttl: Duration,
    pub max_tasks_per_session: usize,
    /// The project workspace's root directory for all projects, when workspaces are on.
    pub workspace_dir: Option<PathBuf>,
    pub workspace_quota: WorkspaceQuota,
    pub workspace_sharing: WorkspaceSharing,
    pub pii: PiiMode,
    pub pii_kinds: Vec<PiiKind>,
    /// The settings file that was read, if any.
    pub source: Option<PathBuf>,
}

/// A settings file or variable that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A value of the wrong type, phrased once, naming the key as the user writes it.
    #[error("settings: {0}")]
    Load(String),
    /// Keys of the settings file that no setting has, each with the closest real one.
    #[error("{}", .0.join("; "))]
    Unknown(Vec<String>),
    #[error("settings file {path} does not exist")]
    MissingFile { path: PathBuf },
    #[error("setting `{field}` is invalid: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("cannot determine the current directory: {0}")]
    CurrentDir(std::io::Error),
    #[error("cannot read the HTTP token file {path}: {source}")]
    TokenFile {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Every key a settings file may hold: the fields of [`RawSettings`].
pub(crate) fn settings_keys() -> std::collections::BTreeSet<String> {
    match serde_json::to_value(RawSettings::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Default::default(),
    }
}

/// A secret string that never shows in `Debug` output or logs.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub(crate) fn new(value: String) -> Self {
        Secret(value)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Settings {
    /// Loads settings from the file (explicit path, `CODE_EXECUTOR_CONFIG`, or the default
    /// location if present) and the environment.
    pub fn load(explicit: Option<&Path>) -> Result<Self, SettingsError> {
        let file = match explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os(CONFIG_ENV).map(PathBuf::from))
        {
            Some(path) if !path.is_file() => return Err(SettingsError::MissingFile { path }),
            Some(path) => Some(path),
            None => default_settings_file().filter(|p| p.is_file()),
        };
        let mut figment = Figment::from(Serialized::defaults(RawSettings::default()));
        if let Some(path) = &file {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let unknown = keys::unknown_in_file(&text, path, &settings_keys());
            if !unknown.is_empty() {
                return Err(SettingsError::Unknown(unknown));
            }
            figment = figment.merge(Toml::file_exact(path));
        }
        figment = figment.merge(Env::prefixed(ENV_PREFIX).ignore(keys::NOT_SETTINGS));
        let raw: RawSettings = figment
            .extract()
            .map_err(|e| SettingsError::Load(keys::describe_load_error(e, ENV_PREFIX)))?;
        let env_token = std::env::var(HTTP_TOKEN_ENV).ok().filter(|t| !t.is_empty());
        let mut settings = Self::validate(raw, file)?;
        if settings.http_token.is_none() {
            settings.http_token = env_token.map(Secret::new);
        }
        settings.check_token()?;
        Ok(settings)
    }

    /// Applies defaults and checks ranges.
    pub(crate) fn validate(
        raw: RawSettings,
        source: Option<PathBuf>,
    ) -> Result<Self, SettingsError> {
        let project_dir = match raw.project_dir {
            Some(dir) => dir,
            None => std::env::current_dir().map_err(SettingsError::CurrentDir)?,
        };
        let settings = Settings {
            runtime_dir: raw.runtime_dir.unwrap_or_else(default_runtime_dir),
            cache_dir: raw.cache_dir.unwrap_or_else(default_cache_dir),
            project_dir,
            default_timeout: Duration::from_millis(raw.timeout_ms.unwrap_or(30_000)),
            max_timeout: Duration::from_millis(raw.max_timeout_ms.unwrap_or(300_000)),
            output_limit_bytes: raw.output_limit_bytes.unwrap_or(1024 * 1024),
            reply_budget_bytes: raw.reply_budget_bytes.unwrap_or(40_000),
            media_limit_bytes: raw.media_limit_bytes.unwrap_or(2 * 1024 * 1024),
            heap_limit_mb: raw.heap_limit_mb.unwrap_or(256),
            worker_memory_mb: raw.worker_memory_mb.unwrap_or(1536),
            max_concurrent_executions: raw.max_concurrent_executions.unwrap_or(4),
            max_queued_executions: raw.max_queued_executions.unwrap_or(32),
            max_concurrent_executions_per_principal: raw.max_concurrent_executions_per_principal,
            max_queued_executions_per_principal: raw.max_queued_executions_per_principal,
            pool_size_typescript: raw.pool_size_typescript.unwrap_or(2),
            pool_size_python: raw.pool_size_python.unwrap_or(1),
            max_lanes_typescript: raw.max_lanes_typescript,
            max_lanes_python: raw.max_lanes_python.unwrap_or(2),
            worker_process_executions: raw.worker_process_executions.unwrap_or(1000),
            worker_process_lifetime: Duration::from_secs(
                raw.worker_process_lifetime_s.unwrap_or(1800),
            ),
            max_code_bytes: raw.max_code_bytes.unwrap_or(1024 * 1024),
            max_tool_calls_per_execution: raw.max_tool_calls_per_execution.unwrap_or(1000),
            tool_call_timeout: Duration::from_millis(raw.tool_call_timeout_ms.unwrap_or(60_000)),
            connect_timeout: Duration::from_millis(raw.connect_timeout_ms.unwrap_or(30_000)),
            servers_file: raw
                .servers_file
                .unwrap_or_else(|| own_config_dir().join("servers.json")),
            wrappers_dir: raw
                .wrappers_dir
                .unwrap_or_else(|| own_data_dir().join("wrappers")),
            oauth_dir: raw
                .oauth_dir
                .unwrap_or_else(|| own_config_dir().join("oauth")),
            policy_allow: raw.policy_allow,
            policy_deny: raw.policy_deny.unwrap_or_default(),
            max_argument_bytes: raw.max_argument_bytes.unwrap_or(1024 * 1024),
            max_result_bytes: raw.max_result_bytes.unwrap_or(8 * 1024 * 1024),
            session_calls_per_minute: raw.session_calls_per_minute.unwrap_or(12_000),
            server_calls_per_minute: raw.server_calls_per_minute.unwrap_or(6000),
            tool_calls_per_minute: raw.tool_calls_per_minute.unwrap_or(3000),
            audit_log_dir: raw.audit_log_dir,
            http_token: match &raw.http_token_file {
                Some(path) => Some(read_token(path)?),
                None => None,
            },
            http_allowed_hosts: raw.http_allowed_hosts.unwrap_or_default(),
            http_allowed_origins: raw.http_allowed_origins.unwrap_or_default(),
            ops_listen: raw.ops_listen,
            require_landlock: raw.require_landlock.unwrap_or(false),
            approval_required: raw.approval_required.unwrap_or_default(),
            approve_destructive_tools: raw.approve_destructive_tools.unwrap_or(true),
            approve_tools_not_read_only: raw.approve_tools_not_read_only.unwrap_or(false),
            ask_timeout: Duration::from_millis(raw.ask_timeout_ms.unwrap_or(120_000)),
            sampling_rounds_per_execution: raw.sampling_rounds_per_execution.unwrap_or(10),
            sampling_tokens_per_execution: raw.sampling_tokens_per_execution.unwrap_or(20_000),
            elicitations_per_execution: raw.elicitations_per_execution.unwrap_or(10),
            relayed_question_max_bytes: raw.relayed_question_max_bytes.unwrap_or(65_536),
            roots: raw.roots.unwrap_or_default(),
            task_max: Duration::from_millis(raw.task_max_ms.unwrap_or(3_600_000)),
            task_ttl: Duration::from_millis(raw.task_ttl_ms.unwrap_or(600_000)),
            max_tasks_per_session: raw.max_tasks_per_session.unwrap_or(16),
            workspace_dir: raw.workspace.unwrap_or(true).then(|| {
                raw.workspace_dir
                    .clone()
                    .unwrap_or_else(|| own_data_dir().join("workspaces"))
            }),
            workspace_quota: WorkspaceQuota {
                max_bytes: raw.workspace_max_bytes.unwrap_or(100 * 1024 * 1024),
                max_files: raw.workspace_max_files.unwrap_or(10_000),
                max_file_bytes: raw.workspace_max_file_bytes.unwrap_or(2 * 1024 * 1024),
            },
            workspace_sharing: raw.workspace_sharing.unwrap_or_default(),
            pii: raw.pii.unwrap_or_default(),
            pii_kinds: {
                let mut kinds = raw
                    .pii_kinds
                    .clone()
                    .unwrap_or_else(|| PiiKind::ALL.to_vec());
                kinds.sort();
                kinds.dedup();
                kinds
            },
            source,
        };
        settings.check()?;
        Ok(settings)
    }

    /// The smallest `worker_memory_mb` accepted: `heap_limit_mb` plus what the runtime itself
    /// maps ([`RUNTIME_MEMORY_MB`]).
    pub fn min_worker_memory_mb(&self) -> u64 {
        u64::from(self.heap_limit_mb) + RUNTIME_MEMORY_MB
    }

    /// The most lanes a client session's TypeScript process holds at once.
    pub fn max_lanes_typescript(&self) -> usize {
        self.max_lanes_typescript
            .unwrap_or(self.max_concurrent_executions)
    }

    /// What one HTTP principal may hold of the execution slots and of the queue: the settings
    /// `max_concurrent_executions_per_principal` and `max_queued_executions_per_principal`, by
    /// default half of each (rounded up) when the server has no token, since each peer address
    /// is then a principal of its own, and all of each with a token, whose holders are one
    /// principal with no other to share with.
    pub fn principal_share(&self) -> PrincipalShare {
        let (running, queued) = match self.http_token {
            Some(_) => (self.max_concurrent_executions, self.max_queued_executions),
            None => (
                self.max_concurrent_executions.div_ceil(2),
                self.max_queued_executions.div_ceil(2),
            ),
        };
        PrincipalShare {
            running: self
                .max_concurrent_executions_per_principal
                .unwrap_or(running),
            queued: self.max_queued_executions_per_principal.unwrap_or(queued),
        }
    }

    fn check(&self) -> Result<(), SettingsError> {
        let invalid = |field, reason: &str| {
            Err(SettingsError::Invalid {
                field,
                reason: reason.to_string(),
            })
        };
        if self.default_timeout.is_zero() {
            return invalid("timeout_ms", "must be positive");
        }
        if self.max_timeout < self.default_timeout {
            return invalid("max_timeout_ms", "must be at least timeout_ms");
        }
        if self.output_limit_bytes < 1024 {
            return invalid("output_limit_bytes", "must be at least 1024");
        }
        if self.reply_budget_bytes < 2048 {
            return invalid(
                "reply_budget_bytes",
                "must be at least 2048 (room for a reply's own fields and the cut markers)",
            );
        }
        if self.relayed_question_max_bytes < 1024 {
            return invalid("relayed_question_max_bytes", "must be at least 1024");
        }
        if !(32..=16_384).contains(&self.heap_limit_mb) {
            return invalid("heap_limit_mb", "must be between 32 and 16384");
        }
        if self.worker_memory_mb < self.min_worker_memory_mb() {
            return invalid(
                "worker_memory_mb",
                "must be at least heap_limit_mb + 768 (the runtime reserves that much)",
            );
        }
        if self.pool_size_typescript > 64 {
            return invalid("pool_size_typescript", "must be at most 64");
        }
        if self.pool_size_python > 16 {
            return invalid("pool_size_python", "must be at most 16");
        }
        if self
            .max_lanes_typescript
            .is_some_and(|n| !(1..=64).contains(&n))
        {
            return invalid("max_lanes_typescript", "must be between 1 and 64");
        }
        if !(1..=16).contains(&self.max_lanes_python) {
            return invalid("max_lanes_python", "must be between 1 and 16");
        }
        if self.worker_process_executions == 0 {
            return invalid("worker_process_executions", "must be positive");
        }
        if self.worker_process_lifetime.is_zero() {
            return invalid("worker_process_lifetime_s", "must be positive");
        }
        if self.max_concurrent_executions == 0 {
            return invalid("max_concurrent_executions", "must be at least 1");
        }
        match self.max_concurrent_executions_per_principal {
            Some(n) if n == 0 || n > self.max_concurrent_executions => {
                return invalid(
                    "max_concurrent_executions_per_principal",
                    "must be between 1 and max_concurrent_executions",
                );
            }
            _ => {}
        }
        match self.max_queued_executions_per_principal {
            Some(n) if n > self.max_queued_executions => {
                return invalid(
                    "max_queued_executions_per_principal",
                    "must be at most max_queued_executions",
                );
            }
            _ => {}
        }
        if self.tool_call_timeout.is_zero() || self.connect_timeout.is_zero() {
            return invalid("tool_call_timeout_ms", "timeouts must be positive");
        }
        if self.max_argument_bytes < 1024 {
            return invalid("max_argument_bytes", "must be at least 1024");
        }
        if self.max_result_bytes < 1024 {
            return invalid("max_result_bytes", "must be at least 1024");
        }
        if self.ask_timeout.is_zero() {
            return invalid("ask_timeout_ms", "must be positive");
        }
        if self.task_max < self.max_timeout {
            return invalid("task_max_ms", "must be at least max_timeout_ms");
        }
        if self.task_ttl < Duration::from_secs(1) {
            return invalid("task_ttl_ms", "must be at least 1000");
        }
        let quota = self.workspace_quota;
        if quota.max_file_bytes == 0 || quota.max_file_bytes > MAX_WORKSPACE_FILE_BYTES {
            return invalid(
                "workspace_max_file_bytes",
                "must be between 1 and 3141632 (3 MiB less 4 KiB: a file crosses the worker pipe in one message)",
            );
        }
        if quota.max_bytes < quota.max_file_bytes {
            return invalid(
                "workspace_max_bytes",
                "must be at least workspace_max_file_bytes",
            );
        }
        if quota.max_files == 0 {
            return invalid("workspace_max_files", "must be at least 1");
        }
        if self.pii == PiiMode::Tokenize && self.pii_kinds.is_empty() {
            return invalid("pii_kinds", "names no kind; set pii = \"off\" instead");
        }
        if let Some(root) = self.roots.iter().find(|r| !r.starts_with("file://")) {
            return invalid("roots", &format!("`{root}` is not a file:// URI"));
        }
        for (field, value) in [
            ("session_calls_per_minute", self.session_calls_per_minute),
            ("server_calls_per_minute", self.server_calls_per_minute),
            ("tool_calls_per_minute", self.tool_calls_per_minute),
        ] {
            if value == 0 {
                return invalid(field, "must be at least 1");
            }
        }
        self.check_token()
    }

    fn check_token(&self) -> Result<(), SettingsError> {
        match &self.http_token {
            Some(token) => token_problem(token.expose()).map_or(Ok(()), |reason| {
                Err(SettingsError::Invalid {
                    field: "http_token_file",
                    reason: format!(
                        "the HTTP token (from http_token_file or {HTTP_TOKEN_ENV}) {reason}; \
                         {MAKE_A_TOKEN}"
                    ),
                })
            }),
            None => Ok(()),
        }
    }
}

/// Why a token cannot be a secret, if it cannot: too short, too few distinct characters, a
/// placeholder, or whitespace or control characters.
pub(crate) fn token_problem(token: &str) -> Option<String> {
    let length = token.chars().count();
    if length < MIN_TOKEN_LEN {
        return Some(format!(
            "is {length} characters; it must be at least {MIN_TOKEN_LEN}"
        ));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("must not contain whitespace or control characters".into());
    }
    let lower = token.to_lowercase();
    if let Some(word) = PLACEHOLDER_WORDS.iter().find(|w| lower.contains(*w)) {
        return Some(format!(
            "is a placeholder (it contains `{word}`), not a secret"
        ));
    }
    let distinct = token
        .chars()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if distinct < MIN_TOKEN_DISTINCT_CHARS {
        return Some(format!(
            "has only {distinct} distinct characters; it must have at least \
             {MIN_TOKEN_DISTINCT_CHARS}"
        ));
    }
    None
}

/// Reads a token file; surrounding whitespace (a trailing newline) is not part of the token.
fn read_token(path: &Path) -> Result<Secret, SettingsError> {
    let text = std::fs::read_to_string(path).map_err(|source| SettingsError::TokenFile {
        path: path.to_owned(),
        source,
    })?;
    Ok(Secret::new(text.trim().to_string()))
}

/// `~/.config/code-executor/config.toml` (or the platform's config dir).
pub(crate) fn default_settings_file() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("code-executor").join("config.toml"))
}

fn own_config_dir() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("code-executor")
}

fn own_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("code-executor")
}

fn default_cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("code-executor")
}

fn default_runtime_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("code-executor")
        .join("runtimes")
}

#[cfg(test)]
mod tests;
