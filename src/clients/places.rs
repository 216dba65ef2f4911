//! The client table ([`super::table`]) resolved against one home and one project directory:
//! the files a client keeps servers in ([`ServerFile`], with the key path of its servers), the
//! file `setup` registers in, whether a client is used here, and Claude Code's key for the
//! project in `~/.claude.json`. Looks at which files exist and reads `~/.claude.json` for the
//! project key; parses nothing else and writes nothing.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::parse;
use super::table::{self, Client, Format, Loc, Row, Scope, Seg, SourceKind};

/// Where home and project are. Tests pass temporary directories.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    pub home: PathBuf,
    pub project: PathBuf,
}

/// How a file stores its servers, with the key path resolved for this project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A JSON object at this key path.
    Json(Vec<String>),
    /// TOML tables under `[key]`.
    Toml(String),
}

/// One file holding servers of a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerFile {
    /// Its row in the table.
    pub kind: SourceKind,
    pub path: PathBuf,
    pub layout: Layout,
}

impl ServerFile {
    pub(crate) fn row(&self) -> &'static Row {
        table::row(self.kind)
    }

    /// A short description, e.g. "user scope".
    pub(crate) fn scope_label(&self) -> &'static str {
        self.row().scope_label
    }
}

impl Places {
    /// The path of `loc`; for [`Loc::HomeEach`], the directory holding the directories.
    pub(crate) fn resolve(&self, loc: Loc) -> PathBuf {
        match loc {
            Loc::Home(rel) => self.home.join(rel),
            Loc::Project(rel) => self.project.join(rel),
            Loc::HomeEach { dir, .. } => self.home.join(dir),
        }
    }

    /// The files `loc` names: its path, or for [`Loc::HomeEach`] the file in each directory
    /// that holds it, in byte order of the directory names (links not followed out of it).
    pub(crate) fn files(&self, loc: Loc) -> Vec<PathBuf> {
        let Loc::HomeEach { dir, file } = loc else {
            return vec![self.resolve(loc)];
        };
        let Ok(entries) = std::fs::read_dir(self.home.join(dir)) else {
            return Vec::new();
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        dirs.into_iter()
            .map(|d| d.join(file))
            .filter(|f| f.is_file())
            .collect()
    }

    /// The keys under which Claude Code may have stored this project: the path as given,
    /// without a trailing separator, made absolute, and with symlinks resolved (Claude Code
    /// uses the physical working directory).
    pub(crate) fn project_keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        let mut push = |p: &Path| {
            let s = p.to_string_lossy();
            for key in [s.as_ref(), s.trim_end_matches('/')] {
                if !key.is_empty() && !keys.iter().any(|k| k == key) {
                    keys.push(key.to_owned());
                }
            }
        };
        push(&self.project);
        if let Ok(abs) = std::path::absolute(&self.project) {
            push(&abs);
        }
        if let Ok(canonical) = std::fs::canonicalize(&self.project) {
            push(&canonical);
        }
        keys
    }

    /// This project's key in `projects`: the first of [`Places::project_keys`] there, else the
    /// physical path (what Claude Code writes).
    pub(crate) fn project_key(&self, projects: Option<&Map<String, Value>>) -> String {
        if let Some(projects) = projects
            && let Some(key) = self
                .project_keys()
                .into_iter()
                .find(|k| projects.contains_key(k))
        {
            return key;
        }
        std::fs::canonicalize(&self.project)
            .unwrap_or_else(|_| self.project.clone())
            .to_string_lossy()
            .into_owned()
    }

    /// `at` with this project's key in place of [`Seg::ThisProject`], looked up in `root`.
    pub(crate) fn key_path(&self, at: &[Seg], root: Option<&Value>) -> Vec<String> {
        let mut out = Vec::with_capacity(at.len());
        let mut here = root;
        for seg in at {
            let key = match seg {
                Seg::Key(k) => (*k).to_owned(),
                Seg::ThisProject => self.project_key(here.and_then(Value::as_object)),
            };
            here = here.and_then(|v| v.get(&key));
            out.push(key);
        }
        out
    }

    /// The file `path` of `row`, with its servers' key path resolved (reading the file when
    /// the path holds the project's key).
    fn server_file(&self, row: &'static Row, path: PathBuf) -> ServerFile {
        let at = row.servers[0];
        let layout = match row.format() {
            Format::Toml => Layout::Toml(at.iter().map(seg_key).collect::<Vec<_>>().join(".")),
            Format::Jsonc => {
                let root = if at.contains(&Seg::ThisProject) {
                    parse::read_config(&path, Format::Jsonc)
                        .ok()
                        .flatten()
                        .map(|p| p.root)
                } else {
                    None
                };
                Layout::Json(self.key_path(at, root.as_ref()))
            }
        };
        ServerFile {
            kind: row.kind,
            path,
            layout,
        }
    }

    /// Where a row's file is registered in: the first of its single files (a Linux and a
    /// macOS location, ...) whose directory exists, else the first.
    fn registration_path(&self, row: &Row) -> Option<PathBuf> {
        let single: Vec<PathBuf> = (row.files.iter())
            .filter(|l| !matches!(l, Loc::HomeEach { .. }))
            .map(|&l| self.resolve(l))
            .collect();
        let first = single.first()?.clone();
        Some(
            single
                .into_iter()
                .find(|p| p.parent().is_some_and(Path::exists))
                .unwrap_or(first),
        )
    }

    /// The file where `client` registers servers in `scope`, and how.
    pub(crate) fn target(&self, client: Client, scope: Scope) -> Option<ServerFile> {
        let row = table::rows_of(client).find(|r| r.scope == scope && r.registers)?;
        let path = self.registration_path(row)?;
        Some(self.server_file(row, path))
    }

    /// Every file whose servers `client` loads in this project, lowest precedence first.
    pub(crate) fn server_files(&self, client: Client) -> Vec<ServerFile> {
        table::rows_of(client)
            .flat_map(|row| {
                row.files.iter().flat_map(move |&loc| {
                    (self.files(loc).into_iter()).map(move |path| self.server_file(row, path))
                })
            })
            .collect()
    }

    /// Whether the client looks installed or configured here: one of its config files or of
    /// its marks exists.
    pub(crate) fn detected(&self, client: Client) -> bool {
        let files = table::rows_of(client).flat_map(|r| r.files.iter());
        files
            .chain(client.info().marks)
            .any(|&loc| self.resolve(loc).exists())
    }
}

fn seg_key(seg: &Seg) -> &'static str {
    match seg {
        Seg::Key(k) => k,
        Seg::ThisProject => "<project>",
    }
}
