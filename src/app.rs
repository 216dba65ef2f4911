//! Assembling the server from settings: runtimes, discovered downstream servers, the upstream
//! pool, the records (audit, metrics), the broker's gate, the executor and the MCP front. Shared
//! by every subcommand so that `serve`, `servers`, `search` and `doctor` see exactly the same
//! configuration. The [`App`] owns the shared services; nothing else hands them out.

use std::sync::Arc;

use crate::broker::approval::{ApprovalConfig, Approvals};
use crate::broker::gate::Gate;
use crate::broker::{Broker, BrokerConfig, PatternError, Policy, RateQuotas};
use crate::clients::discovery::{self, Discovery};
use crate::config::memory_fit;
use crate::config::settings::Settings;
use crate::executor::{Executor, Wiring};
use crate::front::{Front, RuntimeInfo};
use crate::ops::audit::{AuditError, AuditLog};
use crate::ops::metrics::Metrics;
use crate::sandbox::fs_rules;
use crate::sandbox::jail::JailPolicy;
use crate::sandbox::launch::{self, WorkerConfig};
use crate::sandbox::pool::Sessions;
use crate::sandbox::runtimes::{self, Runtimes};
use crate::sandbox::snapshot;
use crate::upstream::{UpstreamPool, UpstreamTimeouts};
use crate::workspace::Space;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Settings(#[from] crate::config::settings::SettingsError),
    #[error(transparent)]
    Runtime(#[from] runtimes::RuntimeError),
    #[error(transparent)]
    Discovery(#[from] discovery::DiscoveryError),
    #[error("settings: policy_allow/policy_deny: {0}")]
    Policy(#[from] PatternError),
    #[error("settings: approval_required: {0}")]
    Approval(PatternError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error(transparent)]
    Memory(#[from] memory_fit::FitError),
}

/// Everything a subcommand needs.
pub struct App {
    pub settings: Arc<Settings>,
    pub discovery: Discovery,
    pub runtimes: Runtimes,
    pub runtime_info: RuntimeInfo,
    /// How sandbox workers are started.
    pub worker: WorkerConfig,
    /// The downstream servers.
    pub upstream: Arc<UpstreamPool>,
    pub audit: Arc<AuditLog>,
    pub metrics: Arc<Metrics>,
    pub executor: Arc<Executor>,
}

impl App {
    /// Builds the app. `serving` (for `serve`: how many client sessions it will have) installs
    /// missing runtimes (verified) in the background, so that the client's handshake is
    /// answered at once (executions wait for the install), and warms the worker pools; the
    /// other subcommands (`None`) only use what is installed.
    /// A serving process also fits `worker_memory_mb` into its cgroup's memory limit first
    /// (see [`memory_fit`]), or refuses to start when the settings cannot fit.
    pub async fn build(
        mut settings: Settings,
        sessions: Option<Sessions>,
    ) -> Result<App, AppError> {
        let serving = sessions.is_some();
        let memory = if serving {
            Some(memory_fit::apply(&mut settings)?)
        } else {
            None
        };
        let settings = Arc::new(settings);
        let (runtimes, runtimes_ready) =
            if serving && !runtimes::all_installed(&settings.runtime_dir) {
                tracing::info!(
                    dir = %settings.runtime_dir.display(),
                    "the sandbox runtimes are not installed: installing them in the background \
                     (executions wait for them; `code-executor setup` or `fetch-runtimes` \
                     installs them ahead)"
                );
                runtimes::install_in_background(
                    settings.runtime_dir.clone(),
                    runtimes::mirror_from_env(),
                )
            } else {
                (
                    runtimes::locate(&settings.runtime_dir)?,
                    runtimes::Readiness::default(),
                )
            };
        let policy = Policy::new(settings.policy_allow.as_deref(), &settings.policy_deny)?;
        let discovery = discover(&settings)?;
        let policy = policy.with_aliases(discovery.aliases.clone());
        for warning in &discovery.warnings {
            tracing::warn!("{warning}");
        }
        for invalid in &discovery.invalid {
            tracing::warn!(
                "MCP server `{}` is not usable: {}",
                invalid.name,
                invalid.error
            );
        }
        crate::catalog::directory::set_needs_approval(needs_approval(&discovery));
        let upstream = Arc::new(upstream_pool(&settings, &discovery));
        let worker = WorkerConfig {
            deno: runtimes.deno.clone(),
            pyodide_dir: runtimes.pyodide_dir.clone(),
            prepared: Default::default(),
            heap_limit_mb: settings.heap_limit_mb,
            jail: JailPolicy {
                max_data_bytes: settings.worker_memory_mb * 1024 * 1024,
                // The main thread's and the router's, the prepared ones, those preparing (the
                // supervisor starts at most two at once), one per execution that may run, and
                // a few ended ones still being torn down.
                max_isolates: (2
                    + settings.pool_size_typescript.max(settings.pool_size_python)
                    + 2
                    + settings.max_concurrent_executions
                    + 4) as u64,
                ..JailPolicy::default()
            },
            wrappers_dir: Some(settings.wrappers_dir.clone()),
            require_landlock: settings.require_landlock,
            runtimes: runtimes_ready.clone(),
        };
        let landlock = fs_rules::support();
        if !landlock.available() {
            let consequence = if settings.require_landlock {
                "no code will run (require_landlock is set)"
            } else {
                "code still runs (set require_landlock to refuse instead)"
            };
            tracing::warn!(
                "!!! this kernel has no Landlock: workers are confined by Deno's permissions, \
                 seccomp and resource limits only, not by a kernel-enforced filesystem view; \
                 {consequence} !!!"
            );
        }
        // A verified snapshot (and seed) is used at once. When serving without one, it is made
        // in the background; workers start meanwhile, only slower.
        if let Some(prepared) = snapshot::verified(&settings.cache_dir) {
            worker.prepared.set(prepared);
        } else if serving {
            let (worker, cache_dir) = (worker.clone(), settings.cache_dir.clone());
            tokio::spawn(async move {
                if worker.runtimes.wait().await.is_err() {
                    return;
                }
                match snapshot::ensure(&worker, &cache_dir).await {
                    Ok(prepared) => worker.prepared.set(prepared),
                    Err(e) => tracing::warn!("Python workers start without a snapshot: {e}"),
                }
            });
        }
        let runtime_info = RuntimeInfo {
            deno: launch::deno_version(&runtimes.deno).await.ok(),
            pyodide: Some(runtimes::PYODIDE.version.to_string()),
            landlock: landlock.describe(),
            memory,
        };
        let broker = Arc::new(Broker::new(BrokerConfig {
            policy,
            rates: RateQuotas::per_minute(
                settings.session_calls_per_minute,
                settings.server_calls_per_minute,
                settings.tool_calls_per_minute,
            ),
            max_argument_bytes: settings.max_argument_bytes,
            max_result_bytes: settings.max_result_bytes,
        }));
        // Only a serving process writes audit records; the other subcommands run no code.
        let audit = Arc::new(match (&settings.audit_log_dir, serving) {
            (Some(dir), true) => AuditLog::open(dir)?,
            _ => AuditLog::disabled(),
        });
        let metrics = Arc::new(Metrics::new());
        let approvals = Approvals::new(&ApprovalConfig {
            required: settings.approval_required.clone(),
            destructive: settings.approve_destructive_tools,
            not_read_only: settings.approve_tools_not_read_only,
        })
        .map_err(AppError::Approval)?
        .with_aliases(discovery.aliases.clone());
        let gate = Arc::new(Gate::new(
            broker,
            Arc::new(approvals),
            upstream.clone(),
            audit.clone(),
            metrics.clone(),
        ));
        // Only a serving process creates the workspace; the other subcommands use one that
        // exists (`fetch-runtimes` runs as root while the container image is built, and must
        // leave no directory behind in the image).
        let in_use = serving || settings.workspace_dir.as_ref().is_some_and(|d| d.is_dir());
        let space = match in_use.then(|| Space::open(&settings)) {
            Some(Ok(space)) => space.map(Arc::new),
            Some(Err(e)) => {
                tracing::warn!("{e}: executions run without a workspace");
                None
            }
            None => None,
        };
        let wiring = Wiring {
            gate,
            upstream: upstream.clone(),
            audit: audit.clone(),
            metrics: metrics.clone(),
            space,
        };
        let executor = Arc::new(Executor::new(
            settings.clone(),
            worker.clone(),
            wiring,
            sessions,
        ));
        Ok(App {
            settings,
            discovery,
            runtimes,
            runtime_info,
            worker,
            upstream,
            audit,
            metrics,
            executor,
        })
    }

    pub fn front(&self) -> Front {
        Front::new(
            self.executor.clone(),
            self.upstream.clone(),
            self.metrics.clone(),
            self.audit.is_enabled(),
            self.runtime_info.clone(),
        )
    }
}

/// The pool of downstream servers `discovery` found (unusable entries kept, to be reported).
pub(crate) fn upstream_pool(settings: &Settings, discovery: &Discovery) -> UpstreamPool {
    crate::upstream::oauth::use_store_dir(settings.oauth_dir.clone());
    UpstreamPool::new(
        discovery.servers.clone(),
        discovery
            .invalid
            .iter()
            .map(|i| (i.name.clone(), i.error.clone()))
            .collect(),
        UpstreamTimeouts {
            connect: settings.connect_timeout,
            call: settings.tool_call_timeout,
        },
    )
    .remembering_lifecycles_in(&settings.cache_dir)
    .with_roots(&settings.roots)
    .with_aliases(discovery.aliases.clone())
}

/// The servers of the project's own files that wait for approval, as the server list shows
/// them (they are never in the pool).
pub(crate) fn needs_approval(
    discovery: &Discovery,
) -> Vec<crate::catalog::directory::NeedsApproval> {
    discovery
        .needs_approval()
        .map(|p| crate::catalog::directory::NeedsApproval {
            name: p.name.clone(),
            transport: p.transport,
            message: p.needs_approval(),
        })
        .collect()
}

/// Reads the client configs for this user and project, then this server's own servers file
/// (`servers_file`), whose entries win by name (see [`crate::clients::discover`]).
pub(crate) fn discover(settings: &Settings) -> Result<Discovery, discovery::DiscoveryError> {
    crate::clients::discover(&settings.project_dir, &settings.servers_file)
}
