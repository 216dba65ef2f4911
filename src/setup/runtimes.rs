//! Installing the sandbox runtimes ahead of the first `serve`, for `setup` and `fetch-runtimes`:
//! Deno and Pyodide (verified, see [`crate::sandbox::runtimes`]) with the progress of each
//! tarball on stderr (a bar in a terminal, a line per quarter otherwise), then the Pyodide
//! memory snapshot. A client that gives its server a few seconds to start then finds nothing
//! left to download. This module owns only the showing; installing is `runtimes`'s, the
//! snapshot `snapshot`'s.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::app::App;
use crate::config::settings::Settings;
use crate::sandbox::runtimes::{self, Progress, Runtimes, Step};
use crate::sandbox::snapshot;

/// What was installed, and where.
pub struct Installed {
    pub runtimes: Runtimes,
    pub snapshot: PathBuf,
}

/// Why the runtimes could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Runtime(#[from] runtimes::RuntimeError),
    #[error("{0}")]
    Start(String),
    #[error("making the Pyodide memory snapshot: {0}")]
    Snapshot(String),
}

/// Installs what is missing (from `mirror`, else the npm registry), showing each tarball's
/// progress on stderr, then makes the Pyodide snapshot unless a verified one exists.
pub async fn install(
    settings: &Settings,
    mirror: Option<&Path>,
) -> Result<Installed, InstallError> {
    let shown = Shown::new(std::io::stderr().is_terminal());
    let installed =
        runtimes::ensure_reporting(&settings.runtime_dir, mirror, &|p| shown.show(p)).await;
    shown.finish();
    let runtimes = installed?;
    let app = App::build(settings.clone(), None)
        .await
        .map_err(|e| InstallError::Start(e.to_string()))?;
    if snapshot::verified(&app.settings.cache_dir).is_none() {
        eprintln!("Preparing the Pyodide memory snapshot (once; Python starts faster from it)...");
    }
    let prepared = snapshot::ensure(&app.worker, &app.settings.cache_dir)
        .await
        .map_err(|e| InstallError::Snapshot(e.to_string()))?;
    Ok(Installed {
        runtimes,
        snapshot: prepared.snapshot,
    })
}

/// How progress reaches stderr: one bar per tarball in a terminal, else a line at each quarter
/// of each tarball and at each step.
struct Shown {
    bars: Option<MultiProgress>,
    /// Per runtime: its bar, and the last line printed without one.
    state: Mutex<HashMap<&'static str, (Option<ProgressBar>, String)>>,
}

impl Shown {
    fn new(terminal: bool) -> Self {
        Shown {
            bars: terminal.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
            state: Mutex::new(HashMap::new()),
        }
    }

    fn show(&self, progress: Progress) {
        let mut state = self.state.lock().expect("progress lock");
        let (bar, last) = state.entry(progress.name).or_insert_with(|| {
            let bar = self.bars.as_ref().map(|bars| {
                let bar = bars.add(ProgressBar::new(0));
                bar.set_style(
                    ProgressStyle::with_template(
                        "{prefix:>16} [{bar:30}] {bytes}/{total_bytes} {wide_msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                bar.set_prefix(name_of(&progress));
                bar
            });
            (bar, String::new())
        });
        if let Some(bar) = bar {
            match progress.step {
                Step::Fetching { done, total } => {
                    bar.set_length(total.unwrap_or(done));
                    bar.set_position(done);
                }
                Step::Unpacking => bar.set_message("verified, unpacking"),
                Step::Installed => bar.finish_with_message("installed"),
            }
            return;
        }
        let line = line_for(&progress);
        if line != *last {
            eprintln!("{line}");
            *last = line;
        }
    }

    fn finish(&self) {
        if let Some(bars) = &self.bars {
            let _ = bars.clear();
        }
    }
}

/// The line shown without a terminal: the tarball's progress rounded down to a quarter.
fn line_for(progress: &Progress) -> String {
    let quartered = match progress.step {
        Step::Fetching {
            done,
            total: Some(total),
        } if total > 0 => Progress {
            step: Step::Fetching {
                done: done.min(total) * 4 / total * total / 4,
                total: Some(total),
            },
            ..*progress
        },
        Step::Fetching { done, total: None } => Progress {
            step: Step::Fetching {
                done: done / (10 << 20) * (10 << 20),
                total: None,
            },
            ..*progress
        },
        _ => *progress,
    };
    format!("installing {}", quartered.describe())
}

/// `Deno 2.9.6`: the runtime of `progress`, without its step.
fn name_of(progress: &Progress) -> String {
    let installed = Progress {
        step: Step::Installed,
        ..*progress
    };
    let text = installed.describe();
    text.trim_end_matches(" installed").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_at_each_quarter() {
        let at = |done| Progress {
            name: "pyodide",
            version: "314.0.7",
            step: Step::Fetching {
                done,
                total: Some(1000),
            },
        };
        let lines: Vec<String> = [0, 100, 249, 250, 600, 999, 1000]
            .into_iter()
            .map(|d| line_for(&at(d)))
            .collect();
        assert_eq!(
            lines,
            [
                "installing Pyodide 314.0.7 0%",
                "installing Pyodide 314.0.7 0%",
                "installing Pyodide 314.0.7 0%",
                "installing Pyodide 314.0.7 25%",
                "installing Pyodide 314.0.7 50%",
                "installing Pyodide 314.0.7 75%",
                "installing Pyodide 314.0.7 100%",
            ]
        );
        assert_eq!(name_of(&at(0)), "Pyodide 314.0.7");
    }
}
