//! `code-executor wrappers`: connects to every configured downstream server, generates the
//! wrapper modules from their live schemas and writes them (only files whose text changed), or
//! with `--check` reports stale ones and exits non-zero. The modules are importable by sandboxed
//! code, so they hold only what the server-wide policy lets code call: a server the policy closes
//! is not started, a tool it refuses is left out.

use std::path::{Path, PathBuf};

use super::Module;
use crate::broker::{Policy, Reach};
use crate::config::settings::Settings;
use crate::sandbox::proto::Language;

/// The command-line arguments of `wrappers`.
#[derive(Debug, Clone, clap::Args)]
pub struct WrappersArgs {
    /// Language of the modules (repeatable). Default: both.
    #[arg(long = "lang", value_enum)]
    pub langs: Vec<Language>,
    /// Output directory. Default: the `wrappers_dir` setting, where the sandbox imports them
    /// from.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only these servers (repeatable). Default: all.
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,
    /// Write nothing; exit non-zero if a module is missing or its schema hash is stale.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum WrappersError {
    #[error("{0}")]
    Discovery(String),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What happened, for the exit code.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Servers whose tools could not be listed.
    pub failed: Vec<String>,
    /// Stale or missing modules (`--check`).
    pub stale: usize,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.failed.is_empty() && self.stale == 0
    }
}

pub async fn run(args: WrappersArgs, settings: &Settings) -> Result<Outcome, WrappersError> {
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| settings.wrappers_dir.clone());
    let langs = if args.langs.is_empty() {
        vec![Language::Typescript, Language::Python]
    } else {
        args.langs.clone()
    };
    let discovery =
        crate::app::discover(settings).map_err(|e| WrappersError::Discovery(e.to_string()))?;
    let pool = crate::app::upstream_pool(settings, &discovery);
    // An alias names its server: one module per server, under its canonical name.
    let mut wanted = Vec::new();
    for server in &args.servers {
        match pool.ensure_known(server) {
            Ok(canonical) => wanted.push(canonical),
            Err(e) => return Err(WrappersError::Discovery(e.to_string())),
        }
    }
    let policy = Policy::new(settings.policy_allow.as_deref(), &settings.policy_deny)
        .map_err(|e| WrappersError::Discovery(format!("settings: policy_allow/policy_deny: {e}")))?
        .with_aliases(discovery.aliases.clone());
    let reach = Reach::policy(&policy);
    let lookups = pool
        .server_names()
        .filter(|name| reach.may_start(name))
        .map(|name| async { (name.to_string(), pool.tools(name).await) });
    let listed = futures::future::join_all(lookups).await;
    pool.shutdown().await;
    let mut outcome = Outcome::default();
    let mut servers = Vec::new();
    for (name, tools) in listed {
        if !wanted.is_empty() && !wanted.contains(&name) {
            continue;
        }
        match tools {
            Ok(tools) => {
                let visible = tools.iter().filter(|t| reach.sees(&name, &t.name));
                let visible = visible.cloned().collect();
                servers.push((name, visible));
            }
            Err(e) => {
                eprintln!("skipped {name}: {e}");
                outcome.failed.push(name);
            }
        }
    }
    for lang in langs {
        let modules = super::generate_all(&servers, lang);
        if args.check {
            let stale = super::check(&modules, &|file| {
                std::fs::read_to_string(out_dir.join(file)).ok()
            });
            for s in &stale {
                println!(
                    "stale: {} ({})",
                    out_dir.join(&s.file_name).display(),
                    s.reason
                );
            }
            outcome.stale += stale.len();
            if stale.is_empty() {
                println!(
                    "{} {} module(s) in {} are up to date",
                    modules.len(),
                    lang.extension(),
                    out_dir.display()
                );
            }
        } else {
            write(&out_dir, &modules)?;
        }
    }
    Ok(outcome)
}

fn write(dir: &Path, modules: &[Module]) -> Result<(), WrappersError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| WrappersError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    for m in modules {
        let path = dir.join(&m.file_name);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(m.text.as_str()) {
            println!("unchanged {}", path.display());
            continue;
        }
        std::fs::write(&path, &m.text).map_err(io(&path))?;
        println!("wrote {} ({}, {})", path.display(), m.server, m.schema_hash);
    }
    Ok(())
}
