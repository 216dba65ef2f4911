//! The sandbox runtimes (Deno and Pyodide): which exact tarballs, how they are fetched and
//! verified, and where the installed files are.
//!
//! Nothing is ever extracted or executed before its SHA-256 matches the pinned value. Tarballs come
//! from a local mirror directory (`CODE_EXECUTOR_RUNTIME_MIRROR` or `--mirror`) or else from the
//! npm registry. An installed runtime is a directory `<runtime_dir>/<name>-<version>/` holding the
//! package contents and a `.verified` marker written last.
//!
//! An install reports its progress (bytes of each tarball fetched, then its unpacking) to a
//! callback: `setup` and `fetch-runtimes` show it on stderr, and a serving process that found
//! the runtimes missing installs them in the background ([`install_in_background`]) while it
//! already answers its client; its executions wait on the [`Readiness`] that install updates.

use std::io::Read;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

/// Environment variable naming a local directory with the npm tarballs.
pub(crate) const MIRROR_ENV: &str = "CODE_EXECUTOR_RUNTIME_MIRROR";

/// One pinned npm tarball.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Artifact {
    pub name: &'static str,
    pub version: &'static str,
    /// File name in a mirror directory.
    pub file: &'static str,
    pub url: &'static str,
    pub sha256: &'static str,
}

/// Deno for this build's architecture (x86-64).
#[cfg(not(target_arch = "aarch64"))]
pub(crate) const DENO: Artifact = DENO_LINUX_X64;
/// Deno for this build's architecture (arm64: refused until its checksum is pinned).
#[cfg(target_arch = "aarch64")]
pub(crate) const DENO: Artifact = DENO_LINUX_ARM64;

/// Deno (V8 + TypeScript) for x86-64, npm package `@deno/linux-x64-glibc`.
#[cfg_attr(target_arch = "aarch64", allow(dead_code))] // the other architecture's entry
pub(crate) const DENO_LINUX_X64: Artifact = Artifact {
    name: "deno",
    version: "2.9.6",
    file: "deno-linux-x64-glibc-2.9.6.tgz",
    url: "https://registry.npmjs.org/@deno/linux-x64-glibc/-/linux-x64-glibc-2.9.6.tgz",
    sha256: "a6596af07f3570b4f1ffa6783bfee9942aac14a719a601baa6bf5b71bf0105e2",
};

/// Deno for arm64, npm package `@deno/linux-arm64-glibc`, the same release as the x86-64 one.
/// Its SHA-256 is not pinned: the tarball has not been seen by this project (the machines that
/// build it reach neither npm nor a mirror holding it), and a checksum must come from the file
/// itself, never be trusted on faith. Until it is pinned ([`UNPINNED`]), installing it is
/// refused with the steps to pin it. To pin: fetch the tarball at `url` on a trusted machine,
/// compare its `sha512` with the registry's `dist.integrity` for the version, and put its
/// SHA-256 here.
#[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))] // the other architecture's entry
pub(crate) const DENO_LINUX_ARM64: Artifact = Artifact {
    name: "deno",
    version: "2.9.6",
    file: "deno-linux-arm64-glibc-2.9.6.tgz",
    url: "https://registry.npmjs.org/@deno/linux-arm64-glibc/-/linux-arm64-glibc-2.9.6.tgz",
    sha256: UNPINNED,
};

/// The `sha256` of an artifact whose checksum is not known yet: nothing matches it.
pub(crate) const UNPINNED: &str = "";

/// Pyodide (CPython in WebAssembly), npm package `pyodide`.
pub(crate) const PYODIDE: Artifact = Artifact {
    name: "pyodide",
    version: "314.0.7",
    file: "pyodide-314.0.7.tgz",
    url: "https://registry.npmjs.org/pyodide/-/pyodide-314.0.7.tgz",
    sha256: "66b7949e5a0cba2250b586d7e368bf12fb482800748d182c4618254b685ffaa0",
};

pub(crate) const ALL: [Artifact; 2] = [DENO, PYODIDE];

const MARKER: &str = ".verified";
/// The largest tarball we accept (Deno is ~45 MB, Pyodide ~12 MB).
const MAX_TARBALL_BYTES: u64 = 256 * 1024 * 1024;

/// Paths of installed, verified runtimes.
#[derive(Debug, Clone)]
pub struct Runtimes {
    pub deno: PathBuf,
    pub pyodide_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(
        "runtime {name} {version} is not installed in {dir}; run `code-executor fetch-runtimes`"
    )]
    NotInstalled {
        name: &'static str,
        version: &'static str,
        dir: PathBuf,
    },
    #[error(
        "{file}: no SHA-256 is pinned for it, so it cannot be verified and is not installed; \
         fetch {url} on a trusted machine, check it against the registry's integrity value and \
         pin its SHA-256 in src/sandbox/runtimes.rs"
    )]
    Unpinned {
        file: &'static str,
        url: &'static str,
    },
    #[error("{file}: SHA-256 is {actual}, expected {expected}; refusing to install it")]
    ChecksumMismatch {
        file: String,
        expected: &'static str,
        actual: String,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot download {url}: {reason}")]
    Download { url: &'static str, reason: String },
    #[error("cannot install into {path}: {source}")]
    Install {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where one artifact is installed.
pub(crate) fn install_dir(runtime_dir: &Path, artifact: &Artifact) -> PathBuf {
    runtime_dir.join(format!("{}-{}", artifact.name, artifact.version))
}

/// Finds the installed runtimes, without fetching.
pub(crate) fn locate(runtime_dir: &Path) -> Result<Runtimes, RuntimeError> {
    for artifact in ALL {
        if !is_installed(runtime_dir, &artifact) {
            return Err(RuntimeError::NotInstalled {
                name: artifact.name,
                version: artifact.version,
                dir: runtime_dir.to_path_buf(),
            });
        }
    }
    Ok(expected(runtime_dir))
}

/// Whether `artifact` is installed in `runtime_dir`: its marker holds its pinned SHA-256 (an
/// unpinned artifact never is, whatever its directory holds).
fn is_installed(runtime_dir: &Path, artifact: &Artifact) -> bool {
    let marker = std::fs::read_to_string(install_dir(runtime_dir, artifact).join(MARKER));
    artifact.sha256 != UNPINNED && marker.is_ok_and(|marker| marker.trim() == artifact.sha256)
}

/// Installs whatever is missing (from `mirror`, or the npm registry) and returns the paths.
pub async fn ensure(runtime_dir: &Path, mirror: Option<&Path>) -> Result<Runtimes, RuntimeError> {
    ensure_reporting(runtime_dir, mirror, &|_| {}).await
}

/// [`ensure`], telling `progress` how each install goes.
pub async fn ensure_reporting(
    runtime_dir: &Path,
    mirror: Option<&Path>,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Runtimes, RuntimeError> {
    install_missing(runtime_dir, mirror, &ALL, progress).await?;
    locate(runtime_dir)
}

/// Whether every runtime is installed in `runtime_dir`.
pub fn all_installed(runtime_dir: &Path) -> bool {
    ALL.iter().all(|a| is_installed(runtime_dir, a))
}

/// Where the runtimes are once installed in `runtime_dir` (whether they are yet or not).
pub fn expected(runtime_dir: &Path) -> Runtimes {
    Runtimes {
        deno: install_dir(runtime_dir, &DENO).join("package").join("deno"),
        pyodide_dir: install_dir(runtime_dir, &PYODIDE).join("package"),
    }
}

/// How far one runtime's install has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// `deno`, `pyodide`.
    pub name: &'static str,
    pub version: &'static str,
    pub step: Step,
}

/// A step of one runtime's install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Bytes of the tarball read so far, of `total` when known.
    Fetching { done: u64, total: Option<u64> },
    /// Verified; being unpacked.
    Unpacking,
    /// Installed.
    Installed,
}

impl Progress {
    /// `Deno 2.9.6 45%`, `Pyodide 314.0.7 unpacking`.
    pub fn describe(&self) -> String {
        let label = match self.name {
            "deno" => "Deno",
            "pyodide" => "Pyodide",
            other => other,
        };
        let step = match self.step {
            Step::Fetching {
                done,
                total: Some(total),
            } if total > 0 => format!("{}%", done.min(total) * 100 / total),
            Step::Fetching { done, .. } => format!("{} MiB", done / (1024 * 1024)),
            Step::Unpacking => "unpacking".to_owned(),
            Step::Installed => "installed".to_owned(),
        };
        format!("{label} {} {step}", self.version)
    }
}

/// Where a serving process's runtimes stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallState {
    Ready,
    /// Being installed: the step under way, as [`Progress::describe`] says it.
    Installing(String),
    /// The install failed: why, and what to run.
    Failed(String),
}

/// Whether the runtimes can be used yet, for what waits on a background install. The default
/// is ready (the runtimes were installed before the process started).
#[derive(Debug, Clone)]
pub struct Readiness(watch::Receiver<InstallState>);

impl Default for Readiness {
    fn default() -> Self {
        Readiness(watch::channel(InstallState::Ready).1)
    }
}

impl Readiness {
    /// Where the install stands now.
    pub fn now(&self) -> InstallState {
        self.0.borrow().clone()
    }

    /// Waits until the runtimes are installed (`Ok`) or their install failed (`Err`: why).
    pub async fn wait(&self) -> Result<(), String> {
        let mut state = self.0.clone();
        loop {
            match state.borrow_and_update().clone() {
                InstallState::Ready => return Ok(()),
                InstallState::Failed(why) => return Err(why),
                InstallState::Installing(_) => {}
            }
            if state.changed().await.is_err() {
                return match state.borrow().clone() {
                    InstallState::Ready => Ok(()),
                    InstallState::Failed(why) => Err(why),
                    InstallState::Installing(_) => Err("the runtime install stopped".to_owned()),
                };
            }
        }
    }
}

/// Installs the missing runtimes in a task of its own and returns at once: where they will
/// be, and the [`Readiness`] that follows the install (logged at `info` as it goes).
pub fn install_in_background(
    runtime_dir: PathBuf,
    mirror: Option<PathBuf>,
) -> (Runtimes, Readiness) {
    let (tx, rx) = watch::channel(InstallState::Installing("starting".to_owned()));
    let runtimes = expected(&runtime_dir);
    tokio::spawn(async move {
        let last_logged = std::sync::Mutex::new((String::new(), 0u64));
        let report = |p: Progress| {
            let text = p.describe();
            // The log gets each quarter of a tarball and each step; the state every change.
            let quarter = match p.step {
                Step::Fetching {
                    done,
                    total: Some(t),
                } if t > 0 => done * 4 / t,
                _ => u64::MAX,
            };
            let mut last = last_logged.lock().expect("progress lock");
            if last.0 != p.name || last.1 != quarter {
                tracing::info!("installing the sandbox runtimes: {text}");
                *last = (p.name.to_owned(), quarter);
            }
            tx.send_replace(InstallState::Installing(text));
        };
        let outcome = ensure_reporting(&runtime_dir, mirror.as_deref(), &report).await;
        tx.send_replace(match outcome {
            Ok(_) => {
                tracing::info!("the sandbox runtimes are installed");
                InstallState::Ready
            }
            Err(e) => {
                tracing::error!("cannot install the sandbox runtimes: {e}");
                InstallState::Failed(format!(
                    "the sandbox runtimes could not be installed: {e}; run `code-executor \
                     fetch-runtimes` (or `code-executor setup`) to install them, then restart"
                ))
            }
        });
    });
    (runtimes, Readiness(rx))
}

/// Installs each of `artifacts` that is not installed yet, after verifying it.
async fn install_missing(
    runtime_dir: &Path,
    mirror: Option<&Path>,
    artifacts: &[Artifact],
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<(), RuntimeError> {
    for &artifact in artifacts {
        if artifact.sha256 == UNPINNED {
            return Err(RuntimeError::Unpinned {
                file: artifact.file,
                url: artifact.url,
            });
        }
        if is_installed(runtime_dir, &artifact) {
            continue;
        }
        let step = |step| {
            progress(Progress {
                name: artifact.name,
                version: artifact.version,
                step,
            })
        };
        let bytes = match mirror {
            Some(mirror) => read_from_mirror(mirror, &artifact, &step).await?,
            None => download(&artifact, &step).await?,
        };
        verify(&artifact, &bytes)?;
        step(Step::Unpacking);
        let runtime_dir = runtime_dir.to_path_buf();
        tokio::task::spawn_blocking(move || unpack(&runtime_dir, &artifact, &bytes))
            .await
            .expect("unpack task panicked")?;
        step(Step::Installed);
        tracing::info!(
            name = artifact.name,
            version = artifact.version,
            "runtime installed"
        );
    }
    Ok(())
}

/// The mirror directory from the environment, if set.
pub fn mirror_from_env() -> Option<PathBuf> {
    std::env::var_os(MIRROR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Bytes read between two progress reports.
const PROGRESS_CHUNK: usize = 1024 * 1024;

async fn read_from_mirror(
    mirror: &Path,
    artifact: &Artifact,
    step: &(dyn Fn(Step) + Send + Sync),
) -> Result<Vec<u8>, RuntimeError> {
    let path = mirror.join(artifact.file);
    let read_err = |source| RuntimeError::Read {
        path: path.clone(),
        source,
    };
    let file = std::fs::File::open(&path).map_err(read_err)?;
    let total = file
        .metadata()
        .map_err(read_err)?
        .len()
        .min(MAX_TARBALL_BYTES);
    let mut file = file.take(MAX_TARBALL_BYTES);
    let mut bytes = Vec::with_capacity(total as usize);
    step(Step::Fetching {
        done: 0,
        total: Some(total),
    });
    let mut chunk = vec![0u8; PROGRESS_CHUNK];
    loop {
        let n = file.read(&mut chunk).map_err(read_err)?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
        step(Step::Fetching {
            done: bytes.len() as u64,
            total: Some(total),
        });
        // A mirror is a local directory: reading it is quick, but other tasks share the thread.
        tokio::task::yield_now().await;
    }
    Ok(bytes)
}

async fn download(
    artifact: &Artifact,
    step: &(dyn Fn(Step) + Send + Sync),
) -> Result<Vec<u8>, RuntimeError> {
    let fail = |reason: String| RuntimeError::Download {
        url: artifact.url,
        reason,
    };
    let response = reqwest::get(artifact.url)
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| fail(e.to_string()))?;
    let total = response.content_length();
    if total.unwrap_or(0) > MAX_TARBALL_BYTES {
        return Err(fail("tarball is larger than the 256 MiB cap".into()));
    }
    let mut bytes = Vec::with_capacity(total.unwrap_or(0) as usize);
    let mut reported = 0;
    step(Step::Fetching { done: 0, total });
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| fail(e.to_string()))?;
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > MAX_TARBALL_BYTES {
            return Err(fail("tarball is larger than the 256 MiB cap".into()));
        }
        if bytes.len() - reported >= PROGRESS_CHUNK {
            reported = bytes.len();
            step(Step::Fetching {
                done: reported as u64,
                total,
            });
        }
    }
    step(Step::Fetching {
        done: bytes.len() as u64,
        total,
    });
    Ok(bytes)
}

/// Checks the tarball against its pinned SHA-256.
pub(crate) fn verify(artifact: &Artifact, bytes: &[u8]) -> Result<(), RuntimeError> {
    if artifact.sha256 == UNPINNED {
        return Err(RuntimeError::Unpinned {
            file: artifact.file,
            url: artifact.url,
        });
    }
    let actual = hex::encode(Sha256::digest(bytes));
    if actual != artifact.sha256 {
        return Err(RuntimeError::ChecksumMismatch {
            file: artifact.file.to_string(),
            expected: artifact.sha256,
            actual,
        });
    }
    Ok(())
}

/// Extracts a verified tarball into a fresh directory, then moves it into place atomically.
fn unpack(runtime_dir: &Path, artifact: &Artifact, bytes: &[u8]) -> Result<(), RuntimeError> {
    let install = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RuntimeError::Install { path, source }
    };
    std::fs::create_dir_all(runtime_dir).map_err(install(runtime_dir))?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(runtime_dir)
        .map_err(install(runtime_dir))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    archive.set_preserve_permissions(true);
    // `unpack` refuses entries that would escape the target directory.
    archive
        .unpack(staging.path())
        .map_err(install(staging.path()))?;
    std::fs::write(staging.path().join(MARKER), artifact.sha256)
        .map_err(install(staging.path()))?;
    let target = install_dir(runtime_dir, artifact);
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(install(&target))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, &target).map_err(install(&target))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tampered_tarball_is_refused() {
        let err = verify(&DENO, b"not the deno tarball").unwrap_err();
        assert!(matches!(err, RuntimeError::ChecksumMismatch { .. }));
        assert!(err.to_string().contains(DENO.file));
    }

    #[test]
    fn nothing_installed_is_reported_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = locate(dir.path()).unwrap_err().to_string();
        assert!(err.contains("fetch-runtimes"), "{err}");
    }

    #[test]
    fn the_unpinned_arm64_deno_is_refused_whatever_its_bytes() {
        for bytes in [&b""[..], b"any tarball"] {
            let err = verify(&DENO_LINUX_ARM64, bytes).unwrap_err();
            assert!(matches!(err, RuntimeError::Unpinned { .. }), "{err}");
            assert!(err.to_string().contains("linux-arm64-glibc"), "{err}");
        }
    }

    #[tokio::test]
    async fn an_unpinned_artifact_is_never_installed_nor_taken_as_installed() {
        let target = tempfile::tempdir().unwrap();
        let mirror = tempfile::tempdir().unwrap();
        std::fs::write(mirror.path().join(DENO_LINUX_ARM64.file), b"tarball").unwrap();
        let err = install_missing(
            target.path(),
            Some(mirror.path()),
            &[DENO_LINUX_ARM64],
            &|_| {},
        )
        .await
        .unwrap_err();
        assert!(matches!(err, RuntimeError::Unpinned { .. }), "{err}");
        assert!(!install_dir(target.path(), &DENO_LINUX_ARM64).exists());
        // An empty marker (what the unpinned checksum would compare equal to) is no proof.
        let dir = install_dir(target.path(), &DENO_LINUX_ARM64);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(MARKER), "").unwrap();
        assert!(!is_installed(target.path(), &DENO_LINUX_ARM64));
    }

    #[tokio::test]
    async fn a_mirror_with_a_bad_file_installs_nothing() {
        let mirror = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        std::fs::write(mirror.path().join(DENO.file), b"tampered").unwrap();
        let err = ensure(target.path(), Some(mirror.path()))
            .await
            .unwrap_err();
        assert!(
            matches!(err, RuntimeError::ChecksumMismatch { .. }),
            "{err}"
        );
        assert!(!install_dir(target.path(), &DENO).exists());
    }

    #[test]
    fn progress_is_told_per_tarball() {
        let at = |step| Progress {
            name: "deno",
            version: "2.9.6",
            step,
        };
        let half = Step::Fetching {
            done: 45,
            total: Some(100),
        };
        assert_eq!(at(half).describe(), "Deno 2.9.6 45%");
        assert_eq!(at(Step::Unpacking).describe(), "Deno 2.9.6 unpacking");
        let unknown = Step::Fetching {
            done: 3 * 1024 * 1024,
            total: None,
        };
        assert_eq!(at(unknown).describe(), "Deno 2.9.6 3 MiB");
    }

    #[tokio::test]
    async fn readiness_waits_for_the_install_and_tells_its_failure() {
        assert_eq!(Readiness::default().wait().await, Ok(()));
        let (tx, rx) = watch::channel(InstallState::Installing("Deno 2.9.6 10%".into()));
        let readiness = Readiness(rx);
        assert_eq!(
            readiness.now(),
            InstallState::Installing("Deno 2.9.6 10%".into())
        );
        let waiting = tokio::spawn({
            let readiness = readiness.clone();
            async move { readiness.wait().await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        tx.send_replace(InstallState::Failed("no network".into()));
        drop(tx);
        assert_eq!(waiting.await.unwrap(), Err("no network".into()));
    }

    #[tokio::test]
    async fn a_background_install_of_a_bad_mirror_fails_with_what_to_run() {
        let mirror = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        std::fs::write(mirror.path().join(DENO.file), b"tampered").unwrap();
        let (runtimes, readiness) = install_in_background(
            target.path().to_path_buf(),
            Some(mirror.path().to_path_buf()),
        );
        assert_eq!(runtimes.deno, expected(target.path()).deno);
        let why = readiness.wait().await.unwrap_err();
        assert!(why.contains("SHA-256"), "{why}");
        assert!(why.contains("code-executor fetch-runtimes"), "{why}");
        assert!(!all_installed(target.path()));
    }
}
