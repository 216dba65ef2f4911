//! The `code-executor` binary: command-line parsing, logging set-up, and one function per
//! subcommand. No policy lives here; everything is assembled by `app`.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use code_executor::app::App;
use code_executor::appliance::{self, posture};
use code_executor::catalog::directory;
use code_executor::config::first_run::{self, FirstRun};
use code_executor::config::settings::{self, Settings};
use code_executor::front;
use code_executor::front::http::{ALLOW_UNAUTHENTICATED_NETWORK, Exposure, HttpAccess};
use code_executor::ops::metrics;
use code_executor::sandbox::host::WorkerProcess;
use code_executor::sandbox::launch::Lanes;
use code_executor::sandbox::pool::Sessions;
use code_executor::sandbox::proto::Language;
use code_executor::sandbox::runtimes;
use code_executor::sandbox::snapshot;
use code_executor::setup::auth::AuthArgs;
use code_executor::setup::cli::SetupArgs;
use code_executor::setup::trust::TrustArgs;
use code_executor::workspace::Owner;
use code_executor::workspace::cli::WorkspaceArgs;
use code_executor::workspace::skills_cli::SkillsArgs;
use code_executor::wrappers::cli::WrappersArgs;

/// `--version`: the package version and the git commit built (see build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("BUILD_COMMIT"), ")");
/// The port `serve --http` listens on when ADDR names none.
const DEFAULT_HTTP_PORT: u16 = 8765;

/// One MCP server in front of all your MCP servers: the LLM writes TypeScript that runs in a
/// jailed sandbox and calls their tools through `callMCPTool(...)`.
#[derive(Parser)]
#[command(name = "code-executor", version = VERSION, about, long_about = None)]
struct Cli {
    /// The server's settings file (TOML). Default: $CODE_EXECUTOR_CONFIG, then
    /// ~/.config/code-executor/config.toml if it exists.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over stdio (default) or streamable HTTP.
    Serve {
        /// Serve streamable HTTP (endpoint /mcp) instead of stdio, at ADDR: HOST:PORT, an IP
        /// address or a host name such as localhost (port 8765 if none; default
        /// 127.0.0.1:8765; an address beyond loopback needs `http_token_file`).
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8765")]
        http: Option<String>,
        /// Serve HTTP beyond loopback without a token: every host that can reach the port can
        /// run code and call every configured tool. Only for a network you trust entirely.
        #[arg(long, requires = "http")]
        allow_unauthenticated_network: bool,
        /// If the settings file (--config, $CODE_EXECUTOR_CONFIG) does not exist, write it first
        /// from the CODE_EXECUTOR_* variables (servers from $CODE_EXECUTOR_SERVERS as JSON).
        #[arg(long)]
        init_config: bool,
    },
    /// List the configured downstream servers and their state (connects to each).
    Servers {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Search the downstream tools, as the LLM's searchTools does.
    Search {
        /// Keywords, or a tool name.
        query: String,
        /// Only this server.
        #[arg(long)]
        server: Option<String>,
        /// Number of results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// How much to show of each match.
        #[arg(long, value_enum, default_value_t = directory::Detail::Summary)]
        detail: directory::Detail,
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Check runtimes, configs and downstream servers; exits non-zero on any problem.
    Doctor,
    /// Register code-executor with your MCP clients (Claude Code, Cursor, VS Code, Claude
    /// Desktop, Codex, Gemini CLI), backing up every file it changes.
    Setup(SetupArgs),
    /// Log in to OAuth-protected HTTP servers (`auth login NAME`), show where each stands
    /// (`auth status`), forget a server's tokens (`auth logout NAME`).
    Auth(AuthArgs),
    /// Approve servers this project's own files define (.mcp.json, .cursor/mcp.json,
    /// .vscode/mcp.json, .codex/config.toml, .gemini/settings.json): none starts before.
    Trust(TrustArgs),
    /// Generate typed wrapper modules (TypeScript, Python) from the downstream servers' live
    /// tool schemas, for `import * as git from "wrappers/git.ts"` in the sandbox.
    Wrappers(WrappersArgs),
    /// The project's saved skills (modules code saved with saveSkill), or with `--principal
    /// NAME` an HTTP principal's: `skills ls`, `skills show NAME`, `skills rm NAME`.
    Skills(SkillsArgs),
    /// The project's workspace files (what sandboxed code keeps with `workspace.writeText`), or
    /// with `--principal NAME` an HTTP principal's: `path`, `ls [PATH]`, `cat PATH`, `rm PATH`,
    /// and `principals` (those with a workspace of their own).
    Workspace(WorkspaceArgs),
    /// Install the Deno and Pyodide runtimes (verified by SHA-256) and make the Pyodide snapshot.
    FetchRuntimes {
        /// A directory holding the npm tarballs (default: $CODE_EXECUTOR_RUNTIME_MIRROR, else
        /// the npm registry).
        #[arg(long, value_name = "DIR")]
        mirror: Option<PathBuf>,
    },
    /// Report the hardening of the container as seen from inside (pass/fail per check);
    /// exits non-zero if any check fails.
    Posture {
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
        /// The uid the server must run as.
        #[arg(long, default_value_t = 1001)]
        expect_uid: u32,
        /// The gid the server must run as.
        #[arg(long, default_value_t = 1001)]
        expect_gid: u32,
    },
    /// One syscall probe of `posture`, run in its own process.
    #[command(hide = true)]
    PostureProbe { name: String },
    /// Exit 0 if the operations endpoint (`ops_listen`) answers GET /readyz with 200.
    Healthcheck {
        /// The operations endpoint's address. Default: the `ops_listen` setting.
        #[arg(long, value_name = "ADDR")]
        addr: Option<SocketAddr>,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 5)]
        timeout: u64,
    },
    /// Forward TCP connections from LISTEN to TO (host:port): publishes the MCP port of a
    /// server that sits on an internal network.
    Relay {
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
        #[arg(long, value_name = "HOST:PORT")]
        to: String,
    },
}

fn init_logging(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CODE_EXECUTOR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    // Logs go to stderr only: in stdio mode stdout is the MCP stream. rmcp's warning of every
    // error answer is left out: the front warns about those, limited per client session.
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .finish()
        .with(tracing_subscriber::filter::filter_fn(|event| {
            !front::is_rmcp_error_answer_warning(event)
        }))
        .init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::PostureProbe { name } = &cli.command {
        // Before any runtime thread exists: the kernel refuses unshare(CLONE_NEWUSER) to every
        // multithreaded process, which would pass for a refusal by the container.
        return ExitCode::from(posture::probe_main(name) as u8);
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the tokio runtime starts")
        .block_on(async_main(cli))
}

async fn async_main(cli: Cli) -> ExitCode {
    let default_level = match cli.command {
        Command::Serve { .. } | Command::Relay { .. } => "info,rmcp=warn",
        _ => "warn",
    };
    init_logging(default_level);
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    // Commands that need no settings (they run in the container's probes and its relay).
    match &cli.command {
        Command::Posture {
            json,
            expect_uid,
            expect_gid,
        } => return posture(*json, *expect_uid, *expect_gid),
        Command::Relay { listen, to } => return relay(*listen, to.clone()).await,
        Command::Serve {
            init_config: true, ..
        } => init_config(cli.config.as_deref())?,
        _ => {}
    }
    let settings = Settings::load(cli.config.as_deref())?;
    match cli.command {
        Command::Serve {
            http,
            allow_unauthenticated_network,
            ..
        } => {
            let http = match http {
                Some(addr) => Some(resolve_http(&addr).await?),
                None => None,
            };
            serve(settings, http, allow_unauthenticated_network).await
        }
        Command::Healthcheck { addr, timeout } => healthcheck(&settings, addr, timeout).await,
        Command::Posture { .. } | Command::PostureProbe { .. } | Command::Relay { .. } => {
            unreachable!("handled before the settings are loaded")
        }
        Command::Servers { json } => servers(settings, json).await,
        Command::Search {
            query,
            server,
            limit,
            detail,
            json,
        } => search(settings, &query, server.as_deref(), limit, detail, json).await,
        Command::Doctor => doctor(settings).await,
        Command::Wrappers(args) => wrappers(settings, args).await,
        Command::Skills(args) => skills(settings, args),
        Command::Workspace(args) => {
            let owner = owner(args.principal.as_deref())?;
            code_executor::workspace::cli::run(args, &settings, &owner)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Setup(args) => setup(settings, args).await,
        Command::Trust(args) => trust(settings, args),
        Command::Auth(args) => auth(settings, args).await,
        Command::FetchRuntimes { mirror } => fetch_runtimes(settings, mirror).await,
    }
}

/// The address `serve --http ADDR` listens on: ADDR as an IP address and port, else resolved
/// as a host name (`localhost`, `localhost:9000`); without a port, [`DEFAULT_HTTP_PORT`].
async fn resolve_http(addr: &str) -> Result<SocketAddr> {
    if let Ok(parsed) = addr.parse::<SocketAddr>() {
        return Ok(parsed);
    }
    if let Ok(ip) = addr.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_HTTP_PORT));
    }
    let with_port = match addr.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() => addr.to_owned(),
        _ => format!("{addr}:{DEFAULT_HTTP_PORT}"),
    };
    let mut found = tokio::net::lookup_host(&with_port)
        .await
        .with_context(|| format!("--http {addr}: cannot resolve the host name"))?;
    found
        .next()
        .with_context(|| format!("--http {addr}: the host name has no address"))
}

/// The settings file to write on a first start: --config, else $CODE_EXECUTOR_CONFIG.
fn init_config(explicit: Option<&std::path::Path>) -> Result<()> {
    let Some(path) = explicit
        .map(PathBuf::from)
        .or_else(|| std::env::var_os(settings::CONFIG_ENV).map(PathBuf::from))
    else {
        anyhow::bail!(
            "--init-config needs --config FILE or ${}",
            settings::CONFIG_ENV
        );
    };
    match first_run::ensure(&path)? {
        FirstRun::Existing(path) => {
            tracing::info!(path = %path.display(), "settings file exists; not generated")
        }
        FirstRun::ServersUpdated(servers) => tracing::info!(
            servers = %servers.display(),
            "CODE_EXECUTOR_SERVERS changed: the servers file was written from it"
        ),
        FirstRun::ServersConflict { servers, fix } => {
            tracing::error!(servers = %servers.display(), "{fix}")
        }
        FirstRun::Written { config, servers } => tracing::info!(
            config = %config.display(),
            servers = ?servers,
            "first start: settings written from the CODE_EXECUTOR_* variables"
        ),
    }
    Ok(())
}

fn posture(json: bool, expect_uid: u32, expect_gid: u32) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find this binary")?;
    let expect = posture::Expectations {
        uid: expect_uid,
        gid: expect_gid,
        ..Default::default()
    };
    let report = posture::report(&exe, &expect);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn relay(listen: SocketAddr, to: String) -> Result<ExitCode> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    tracing::info!("relaying {} to {to}", listener.local_addr()?);
    let shutdown = cancelled_on_signal();
    appliance::relay(listener, to, shutdown).await;
    Ok(ExitCode::SUCCESS)
}

async fn serve(
    settings: Settings,
    http: Option<SocketAddr>,
    allow_unauthenticated_network: bool,
) -> Result<ExitCode> {
    // Before anything starts: an address beyond loopback needs a token or the loud opt-out.
    let exposure = match http {
        Some(addr) => Some(
            front::http::check_exposure(
                addr,
                settings.http_token.is_some(),
                allow_unauthenticated_network,
            )
            .map_err(anyhow::Error::msg)?,
        ),
        None => None,
    };
    // The port is tried before anything starts, so that a port in use stops the start with a
    // clear error, never after "ready" (the front binds it again below).
    if let Some(addr) = http {
        std::net::TcpListener::bind(addr).with_context(|| {
            format!("cannot serve HTTP on {addr} (is another server listening there?)")
        })?;
    }
    // Over stdio the server has one client session, over HTTP any number.
    let sessions = if http.is_some() {
        Sessions::Many
    } else {
        Sessions::One
    };
    let app = App::build(settings, Some(sessions)).await?;
    let ready = || {
        tracing::info!(
            servers = app.discovery.servers.len(),
            sources = ?app.discovery.sources_read,
            audit = app.audit.is_enabled(),
            "code-executor ready"
        )
    };
    let front = app.front();
    let shutdown = cancelled_on_signal();
    if let Some(addr) = app.settings.ops_listen {
        let listener = metrics::serve_ops(
            addr,
            app.metrics.clone(),
            app.executor.clone(),
            app.settings.http_token.clone(),
            shutdown.clone(),
            |bound| tracing::info!("serving /livez, /readyz and /metrics at http://{bound}"),
        );
        // Bind failures stop the start; later errors are logged.
        let ops = tokio::spawn(listener);
        tokio::task::yield_now().await;
        if ops.is_finished() {
            ops.await?
                .with_context(|| format!("cannot serve the operations endpoint on {addr}"))?;
        }
    }
    match http {
        Some(addr) => {
            if exposure == Some(Exposure::UnauthenticatedNetwork) {
                tracing::warn!(
                    "UNAUTHENTICATED NETWORK SERVER: serving HTTP on {addr} without a token \
                     ({ALLOW_UNAUTHENTICATED_NETWORK}); every host that can reach this port can \
                     run code and call every configured tool. Set http_token_file instead."
                );
            }
            let access = HttpAccess {
                token: app.settings.http_token.clone(),
                extra_hosts: app.settings.http_allowed_hosts.clone(),
                extra_origins: app.settings.http_allowed_origins.clone(),
                max_body_bytes: front::http::request_body_limit(app.settings.max_code_bytes),
            };
            let authenticated = access.token.is_some();
            front::http::serve(front, addr, access, shutdown, |bound| {
                ready();
                tracing::info!(
                    authenticated,
                    "serving MCP over streamable HTTP at http://{bound}/mcp"
                );
            })
            .await
            .with_context(|| format!("cannot serve HTTP on {addr}"))?;
        }
        None => {
            ready();
            let running = front
                .serve_stdio()
                .await
                .context("MCP handshake over stdio failed")?;
            tokio::select! {
                _ = running.waiting() => {}
                _ = shutdown.cancelled() => {}
            }
        }
    }
    app.upstream.shutdown().await;
    app.audit.close();
    Ok(ExitCode::SUCCESS)
}

/// A token cancelled by SIGINT or SIGTERM.
fn cancelled_on_signal() -> CancellationToken {
    let shutdown = CancellationToken::new();
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            shutdown_signal().await;
            shutdown.cancel();
        }
    });
    shutdown
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

async fn servers(settings: Settings, json: bool) -> Result<ExitCode> {
    let app = App::build(settings, None).await?;
    let pool = &app.upstream;
    // Connect every server so the listing shows real states and tool counts.
    pool.all_tools().await;
    let statuses = directory::servers(pool).await;
    if json {
        println!("{}", serde_json::to_string_pretty(&statuses)?);
    } else if statuses.is_empty() {
        println!(
            "No downstream MCP servers found. Add one to a client's config (`code-executor setup` \
             lists them) or to the servers file {} as {{\"mcpServers\": {{\"time\": \
             {{\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}}}}}}.",
            app.settings.servers_file.display()
        );
    } else {
        println!(
            "{:<24} {:<9} {:<14} {:>5}  ERROR",
            "NAME", "TRANSPORT", "STATE", "TOOLS"
        );
        for s in &statuses {
            println!(
                "{:<24} {:<9} {:<14} {:>5}  {}",
                s.name,
                s.transport,
                s.state,
                s.tools.map(|n| n.to_string()).unwrap_or_else(|| "-".into()),
                s.error.as_deref().unwrap_or("")
            );
            if !s.aliases.is_empty() {
                println!("  also named: {}", s.aliases.join(", "));
            }
            if s.error.is_some() {
                let tail = stderr_tail(pool, &s.name).await;
                if !tail.is_empty() {
                    eprintln!("{}:{tail}", s.name);
                }
            }
        }
    }
    pool.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn search(
    settings: Settings,
    query: &str,
    server: Option<&str>,
    limit: usize,
    detail: directory::Detail,
    json: bool,
) -> Result<ExitCode> {
    let app = App::build(settings, None).await?;
    let pool = &app.upstream;
    let query = directory::SearchQuery::new(
        query.to_string(),
        server.map(String::from),
        Some(limit),
        detail,
    );
    let found =
        code_executor::executor::search_everything(pool, app.executor.space(), &query).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        println!("{}", found.text(&query.text));
    }
    pool.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn doctor(settings: Settings) -> Result<ExitCode> {
    let (mut problems, mut warnings) = (0, 0);
    let mut report = |level: Level, what: &str, detail: String| {
        match level {
            Level::Ok => {}
            Level::Warn => warnings += 1,
            Level::Fail => problems += 1,
        }
        println!("[{}] {what}: {detail}", level.tag());
    };
    let check = |ok: bool| if ok { Level::Ok } else { Level::Fail };
    report(
        Level::Ok,
        "settings",
        settings
            .source
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "defaults (no settings file)".into()),
    );
    let servers_file = settings.servers_file.clone();
    let app = match App::build(settings, None).await {
        Ok(app) => app,
        Err(e) => {
            report(Level::Fail, "start-up", e.to_string());
            return Ok(ExitCode::FAILURE);
        }
    };
    report(
        check(app.runtime_info.deno.is_some()),
        "deno",
        app.runtime_info
            .deno
            .clone()
            .unwrap_or_else(|| format!("{} does not run", app.runtimes.deno.display())),
    );
    match WorkerProcess::start(
        &app.worker,
        Language::Typescript,
        Lanes {
            ready: 1,
            most: 1,
            awaited: false,
        },
    )
    .await
    {
        Ok(_) => report(
            Level::Ok,
            "sandbox",
            "a jailed worker process starts".into(),
        ),
        Err(e) => report(Level::Fail, "sandbox", e.to_string()),
    }
    let sources: Vec<String> = app
        .discovery
        .sources_read
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    report(
        Level::Ok,
        "configs read",
        if sources.is_empty() {
            "none found".into()
        } else {
            sources.join(", ")
        },
    );
    report(
        Level::Ok,
        "servers file",
        if servers_file.exists() {
            servers_file.display().to_string()
        } else {
            format!("{} (none yet)", servers_file.display())
        },
    );
    for warning in &app.discovery.warnings {
        report(Level::Fail, "config", warning.clone());
    }
    // A project's own servers: who approved each, and what waits for approval (never
    // started).
    for server in &app.discovery.project_servers {
        match &server.approved_by {
            Some(by) => report(
                Level::Ok,
                &format!("approval {}", server.name),
                format!("by {by}"),
            ),
            None => report(
                Level::Fail,
                &format!("server {}", server.name),
                server.needs_approval(),
            ),
        }
    }
    let pool = &app.upstream;
    let all_tools = pool.all_tools().await;
    if all_tools.is_empty() && app.discovery.project_servers.is_empty() {
        report(
            Level::Warn,
            "servers",
            format!(
                "no downstream MCP servers found, so code has no tools to call; add one to a \
                 client's config (`code-executor setup` lists them) or to the servers file {} \
                 as {{\"mcpServers\": {{\"time\": {{\"command\": \"uvx\", \"args\": \
                 [\"mcp-server-time\"]}}}}}}",
                servers_file.display()
            ),
        );
    }
    for (name, tools) in all_tools {
        // The same server configured under other names: one entry, its aliases and their files.
        let aliases: Vec<String> = (pool.aliases().of(&name).iter())
            .map(|a| format!("{} ({})", a.name, a.source))
            .collect();
        let also = if aliases.is_empty() {
            String::new()
        } else {
            format!("; also named {}", aliases.join(", "))
        };
        match tools {
            Ok(tools) => report(
                Level::Ok,
                &format!("server {name}"),
                format!("{} tools{also}", tools.len()),
            ),
            Err(e) => {
                report(Level::Fail, &format!("server {name}"), e.to_string());
                let tail = stderr_tail(pool, &name).await;
                if !tail.is_empty() {
                    eprintln!("{name}:{tail}");
                }
            }
        }
    }
    pool.shutdown().await;
    if problems == 0 && warnings == 0 {
        println!("All checks passed.");
        Ok(ExitCode::SUCCESS)
    } else if problems == 0 {
        println!("No problem found; {warnings} warning(s) above.");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{problems} problem(s) found.");
        Ok(ExitCode::FAILURE)
    }
}

/// How a `doctor` check came out.
#[derive(Clone, Copy)]
enum Level {
    Ok,
    /// Worth knowing; not a failure.
    Warn,
    Fail,
}

impl Level {
    fn tag(self) -> &'static str {
        match self {
            Level::Ok => " ok ",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        }
    }
}

/// The last lines a failed stdio server wrote to its stderr, for the operator's own commands
/// (`servers`, `doctor`), which print them on their stderr: their stdout is often read by an
/// agent, and a server's stderr may carry secrets or text aimed at a model.
async fn stderr_tail(pool: &code_executor::upstream::UpstreamPool, server: &str) -> String {
    let lines = pool.stderr_tail(server).await;
    if lines.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = lines.iter().map(|l| format!("\n    | {l}")).collect();
    format!("\n  its stderr ended with:{}", shown.concat())
}

async fn healthcheck(
    settings: &Settings,
    addr: Option<SocketAddr>,
    timeout: u64,
) -> Result<ExitCode> {
    let Some(addr) = addr.or(settings.ops_listen) else {
        anyhow::bail!("no operations endpoint: set `ops_listen` or give --addr");
    };
    match appliance::healthcheck(addr, std::time::Duration::from_secs(timeout)).await {
        Ok(body) => {
            println!("{body}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("unhealthy: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn wrappers(settings: Settings, args: WrappersArgs) -> Result<ExitCode> {
    let outcome = code_executor::wrappers::cli::run(args, &settings).await?;
    Ok(if outcome.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Whose workspace `workspace` and `skills` work on: the project's, or with `--principal` an
/// HTTP principal's (named as the connection guard names it).
fn owner(principal: Option<&str>) -> Result<Owner> {
    Ok(match principal {
        Some(name) => Owner::Principal(
            front::guard::Principal::parse(name)
                .map_err(anyhow::Error::msg)?
                .as_str()
                .to_string(),
        ),
        None => Owner::Project,
    })
}

fn skills(settings: Settings, args: SkillsArgs) -> Result<ExitCode> {
    let owner = owner(args.principal.as_deref())?;
    let found = code_executor::workspace::skills_cli::run(args, &settings, &owner)?;
    Ok(if found {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn setup(settings: Settings, args: SetupArgs) -> Result<ExitCode> {
    code_executor::setup::cli::run(args, &settings).await?;
    Ok(ExitCode::SUCCESS)
}

async fn auth(settings: Settings, args: AuthArgs) -> Result<ExitCode> {
    let ok = code_executor::setup::auth::run(args, &settings).await?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn trust(settings: Settings, args: TrustArgs) -> Result<ExitCode> {
    code_executor::setup::trust::run(args, &settings)?;
    Ok(ExitCode::SUCCESS)
}

async fn fetch_runtimes(settings: Settings, mirror: Option<PathBuf>) -> Result<ExitCode> {
    let mirror = mirror.or_else(runtimes::mirror_from_env);
    let runtimes = runtimes::ensure(&settings.runtime_dir, mirror.as_deref()).await?;
    println!("deno:     {}", runtimes.deno.display());
    println!("pyodide:  {}", runtimes.pyodide_dir.display());
    let app = App::build(settings, None).await?;
    let prepared = snapshot::ensure(&app.worker, &app.settings.cache_dir)
        .await
        .context("making the Pyodide memory snapshot")?;
    println!("snapshot: {}", prepared.snapshot.display());
    Ok(ExitCode::SUCCESS)
}
