//! The interactive side of `setup`: what it prints (the clients found, diffs, a progress bar
//! while downstream servers are indexed, a summary table) and the confirmation. Decisions and
//! edits live in the parent module, the clients' files in [`crate::clients`]; nothing here
//! reads or writes a config itself.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::clients::{Client, Places, Scope};
use super::{Options, Plan, SetupError, Survey, Written};
use crate::clients::approval::{self, Approvals};
use crate::clients::brought::shell_word;
use crate::config::settings::Settings;

/// The command-line arguments of `setup`.
#[derive(Debug, Clone, clap::Args)]
pub struct SetupArgs {
    /// Register with this client (repeatable). Default: every client found.
    #[arg(long = "client", value_enum, value_name = "CLIENT")]
    pub clients: Vec<Client>,
    /// Register for the user (all projects) or for the current project only. Default: user,
    /// except VS Code (project).
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    /// Also switch the client's other MCP servers off, so that only code-executor loads; it keeps
    /// reaching them (they are copied into its own servers file, a project's servers for that
    /// project only; a project's servers that need approval are left alone). Claude Code's
    /// switch is per project: its servers are switched off in this project only (run setup
    /// again in each other project).
    #[arg(long)]
    pub disable_others: bool,
    /// Print the exact diff of every file and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Apply without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The command the clients should run (default: this executable).
    #[arg(long, value_name = "PATH")]
    pub command: Option<String>,
    /// Skip connecting to every downstream server at the end.
    #[arg(long)]
    pub no_index: bool,
    /// Skip installing the sandbox runtimes (Deno, Pyodide; `serve` then installs them on its
    /// first start, in the background).
    #[arg(long)]
    pub no_runtimes: bool,
    /// Put back, byte for byte, the files of one earlier run of setup from its backups (the
    /// newest without TIMESTAMP), after backing up their current state; nothing else is done.
    #[arg(long, value_name = "TIMESTAMP", num_args = 0..=1, default_missing_value = "")]
    pub restore: Option<String>,
}

/// Why `setup` did not finish.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("no MCP client configuration found in {home} or {project}; name one with --client")]
    NothingFound { home: String, project: String },
    #[error(
        "not applying changes without confirmation: run in a terminal, or pass --yes (or --dry-run to only see them)"
    )]
    NotInteractive,
    #[error("cancelled; nothing was written")]
    Cancelled,
    #[error("cannot index the downstream servers: {0}")]
    Index(String),
    #[error(
        "code-executor is registered, but its sandbox runtimes could not be installed: {0}; \
         run `code-executor fetch-runtimes` (or `serve` installs them on its first start)"
    )]
    Runtimes(#[from] super::runtimes::InstallError),
    #[error(transparent)]
    Restore(#[from] super::backup::RestoreError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Runs `setup`.
pub async fn run(args: SetupArgs, settings: &Settings) -> Result<(), CliError> {
    let backups = super::backup::default_dir();
    if let Some(stamp) = &args.restore {
        return restore(&backups, Some(stamp.as_str()).filter(|s| !s.is_empty()));
    }
    let places = Places {
        home: dirs::home_dir().unwrap_or_else(|| "/".into()),
        project: settings.project_dir.clone(),
    };
    let command = match args.command.clone() {
        Some(c) => c,
        None => std::env::current_exe()?
            .canonicalize()?
            .to_string_lossy()
            .into_owned(),
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let approvals = Approvals::load(&places, &env, &approval::approvals_file(&env));
    let options = Options {
        clients: args.clients.clone(),
        scope: args.scope,
        disable_others: args.disable_others,
        command,
        args: vec!["serve".into()],
        servers_file: settings.servers_file.clone(),
        places: places.clone(),
        approvals,
    };
    let found = super::survey(&places);
    print_survey(&found, &options.approvals);

    let interactive = std::io::stdin().is_terminal();
    let clients = choose(&options, &found, &args, interactive)?;
    let plan = super::plan(&options, &clients)?;

    println!();
    for change in plan.changes.iter().filter(|c| c.changed()) {
        print!("{}", change.diff());
    }
    if plan.is_empty() {
        println!(
            "Nothing to change: code-executor is already set up for {}.",
            labels(&clients)
        );
    }
    if args.dry_run {
        println!("\nDry run: nothing was written.");
        print_summary(&plan, &[], true, &places.project);
        return Ok(());
    }
    let mut written = Vec::new();
    let mut backup_run = None;
    if !plan.is_empty() {
        if !args.yes {
            if !interactive {
                return Err(CliError::NotInteractive);
            }
            if !confirm("Apply these changes? [y/N] ")? {
                return Err(CliError::Cancelled);
            }
        }
        let (files, run) = super::apply(&plan, &backups, &super::stamp())?;
        written = files;
        backup_run = Some(run);
    }
    if !args.no_runtimes {
        install_runtimes(settings).await?;
    }
    if !args.no_index {
        index(settings).await?;
    }
    print_summary(&plan, &written, false, &places.project);
    if let Some(run) = backup_run {
        let stamp = run.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "  Backups of the old files: {} (put them back with `code-executor setup --restore {stamp}`)",
            run.display()
        );
    }
    Ok(())
}

/// `setup --restore`: puts one run's files back.
fn restore(backups: &std::path::Path, stamp: Option<&str>) -> Result<(), CliError> {
    use super::backup::RestoreStep;
    let (stamp, done, undo) = super::backup::restore(backups, stamp, &super::stamp())?;
    println!("Restoring the files of setup run {stamp}:");
    for r in &done {
        match r {
            RestoreStep::Restored(p) => println!("  restored {}", p.display()),
            RestoreStep::Removed(p) => println!("  removed {} (setup had created it)", p.display()),
            RestoreStep::KeptChanged(p) => println!(
                "  kept {} (setup had created it, but it changed since)",
                p.display()
            ),
        }
    }
    let undo_stamp = undo.file_name().unwrap_or_default().to_string_lossy();
    println!(
        "  The files as they were before this restore: {} (`code-executor setup --restore {undo_stamp}` undoes it)",
        undo.display()
    );
    println!("  Restart the client(s) to load the restored configs.");
    Ok(())
}

fn labels(clients: &[Client]) -> String {
    clients
        .iter()
        .map(|c| c.label())
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_survey(found: &[Survey], approvals: &Approvals) {
    println!("MCP clients on this machine:");
    let mut any = false;
    for s in found {
        if !s.detected && s.files.is_empty() {
            continue;
        }
        any = true;
        let state = if s.registered() {
            "code-executor registered"
        } else {
            "code-executor not registered"
        };
        println!(
            "  {} ({}; --client {})",
            s.client.label(),
            state,
            s.client.id()
        );
        if s.files.is_empty() {
            println!("      no MCP config file yet");
        }
        for (file, entries) in &s.files {
            let what = match entries {
                Err(e) => format!("ERROR {e}"),
                Ok(entries) if entries.is_empty() => "no servers".into(),
                Ok(entries) => entries
                    .iter()
                    .map(|e| {
                        if e.self_hit.is_some() {
                            format!("{} (this server)", e.name)
                        } else if super::flagged_off(s.client, e)
                            || s.listed_off.off(e.file.kind, &e.name).is_some()
                        {
                            format!("{} (off)", e.name)
                        } else if let Some(flag) = e.flag_off {
                            format!("{} ({flag} ignored by {})", e.name, s.client.label())
                        } else if approvals.withholds(e.file.kind, &e.name, &e.definition) {
                            format!("{} (needs approval)", e.name)
                        } else {
                            e.name.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            println!(
                "      {} [{}]: {what}",
                file.path.display(),
                file.scope_label()
            );
        }
    }
    if !any {
        println!("  none found");
    }
}

fn choose(
    options: &Options,
    found: &[Survey],
    args: &SetupArgs,
    interactive: bool,
) -> Result<Vec<Client>, CliError> {
    if !options.clients.is_empty() {
        let mut c = options.clients.clone();
        c.sort();
        c.dedup();
        return Ok(c);
    }
    let detected: Vec<Client> = found
        .iter()
        .filter(|s| s.detected || !s.files.is_empty())
        .map(|s| s.client)
        .collect();
    if detected.is_empty() {
        return Err(CliError::NothingFound {
            home: options.places.home.display().to_string(),
            project: options.places.project.display().to_string(),
        });
    }
    if args.yes || args.dry_run || !interactive {
        return Ok(detected);
    }
    println!();
    for (i, c) in detected.iter().enumerate() {
        println!("  {}. {}", i + 1, c.label());
    }
    print!(
        "Register code-executor with which clients? (numbers separated by commas, Enter = all) "
    );
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let picked: Vec<Client> = line
        .split([',', ' '])
        .filter_map(|t| t.trim().parse::<usize>().ok())
        .filter_map(|n| detected.get(n.wrapping_sub(1)).copied())
        .collect();
    Ok(if picked.is_empty() { detected } else { picked })
}

fn confirm(question: &str) -> Result<bool, CliError> {
    print!("\n{question}");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// Installs the sandbox runtimes now, so that the client's first start of the server does not
/// wait for them.
async fn install_runtimes(settings: &Settings) -> Result<(), CliError> {
    let mirror = crate::sandbox::runtimes::mirror_from_env();
    if crate::sandbox::runtimes::all_installed(&settings.runtime_dir)
        && crate::sandbox::snapshot::verified(&settings.cache_dir).is_some()
    {
        println!(
            "\nSandbox runtimes: installed in {}",
            settings.runtime_dir.display()
        );
        return Ok(());
    }
    println!("\nInstalling the sandbox runtimes (Deno, Pyodide; verified by SHA-256)...");
    let installed = super::runtimes::install(settings, mirror.as_deref()).await?;
    println!(
        "Sandbox runtimes: installed in {} (Pyodide snapshot {})",
        settings.runtime_dir.display(),
        installed.snapshot.display()
    );
    Ok(())
}

/// Connects to every downstream server this server will see (as `serve` would), with a
/// progress bar, and prints what each offers.
async fn index(settings: &Settings) -> Result<(), CliError> {
    let discovery = crate::app::discover(settings).map_err(|e| CliError::Index(e.to_string()))?;
    let pool = crate::app::upstream_pool(settings, &discovery);
    let names: Vec<String> = pool.server_names().map(str::to_owned).collect();
    println!();
    if names.is_empty() && discovery.needs_approval().next().is_none() {
        println!("code-executor sees no downstream MCP servers yet.");
        return Ok(());
    }
    let bar = ProgressBar::new(names.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} indexing tools {pos}/{len} servers {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    let lookups = names.iter().map(|name| {
        let (pool, bar) = (&pool, &bar);
        async move {
            let result = pool.tools(name).await;
            bar.set_message(name.clone());
            bar.inc(1);
            (name.clone(), result)
        }
    });
    let results = futures::future::join_all(lookups).await;
    bar.finish_and_clear();
    println!("Downstream servers code-executor reaches:");
    println!("  {:<24} {:>6}  STATUS", "SERVER", "TOOLS");
    for (name, result) in &results {
        match result {
            Ok(tools) => println!("  {name:<24} {:>6}  ok", tools.len()),
            Err(e) => println!("  {name:<24} {:>6}  {e}", "-"),
        }
    }
    for waiting in discovery.needs_approval() {
        println!(
            "  {:<24} {:>6}  {}",
            waiting.name,
            "-",
            waiting.needs_approval()
        );
    }
    pool.shutdown().await;
    Ok(())
}

fn print_summary(plan: &Plan, written: &[Written], dry_run: bool, project: &std::path::Path) {
    println!("\nSummary:");
    println!(
        "  {:<15} {:<20} {:<9} CONFIG",
        "CLIENT", "CODE-EXECUTOR", "DISABLED"
    );
    for o in &plan.outcomes {
        let registration = match (dry_run, o.registration) {
            (true, "added") => "would be added",
            (true, "updated") => "would be updated",
            (_, r) => r,
        };
        println!(
            "  {:<15} {:<20} {:<9} {}",
            o.client.label(),
            registration,
            o.disabled.len(),
            o.file.display()
        );
        if !o.disabled.is_empty() {
            println!(
                "  {:<15} switched off in the client: {}",
                "",
                o.disabled.join(", ")
            );
            if o.client == Client::ClaudeCode {
                println!(
                    "  {:<15} (Claude Code switches servers off per project: in {} only; run \
                     `code-executor setup --disable-others` in each other project too)",
                    "",
                    project.display()
                );
            }
        }
        if !o.needs_approval.is_empty() {
            let names: Vec<String> = o.needs_approval.iter().map(|n| shell_word(n)).collect();
            println!(
                "  {:<15} left alone, they need approval first: {} (run `code-executor trust {}`, then setup again)",
                "",
                o.needs_approval.join(", "),
                names.join(" ")
            );
        }
    }
    for w in written {
        match &w.backup {
            Some(b) => println!("  wrote {} (backup: {})", w.path.display(), b.display()),
            None => println!("  wrote {} (new file)", w.path.display()),
        }
    }
    if !dry_run && !plan.outcomes.is_empty() && !plan.is_empty() {
        println!("  Restart the client(s) to load code-executor.");
    }
}
