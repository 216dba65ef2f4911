//! First-run configuration for the container appliance (`serve --init-config`): when the
//! settings file does not exist yet (a fresh config volume), write one from the
//! `CODE_EXECUTOR_*` variables, and the downstream servers given as JSON in
//! `CODE_EXECUTOR_SERVERS` to a `servers.json` beside it (referenced by `servers_file`). Every
//! later start reads the settings file, which the operator may edit; the settings variables
//! still set override its keys on every start (the loader's rule). `CODE_EXECUTOR_SERVERS` is
//! followed on every start too: when it changes, the servers file is rewritten from it, unless
//! the operator edited that file since it was written (a digest of what was written is kept
//! beside it), or the settings name another `servers_file`; then the start goes on with the
//! file, and the conflict is reported with the exact fix. Nothing else in an existing settings
//! file is touched (the one exception: `servers_file` is added when servers first come from the
//! variable after a first start without them).
//!
//! Each variable is checked on its own first, so a bad one stops the start with a message
//! naming it; nothing is written unless every variable is good. The token itself
//! (`CODE_EXECUTOR_HTTP_TOKEN`) is never written: `http_token_file` is the way to pass it.
//! This module owns the generation only; loading and validating settings stays in `settings`.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::Serialized;
use figment::value::Value;

use super::keys;
use super::settings::{ENV_PREFIX, RawSettings, Settings, SettingsError, settings_keys};

/// Variable holding the downstream servers as JSON: `{"name": {...}}` or
/// `{"mcpServers": {"name": {...}}}`, entries as in any MCP client config.
pub(crate) const SERVERS_ENV: &str = "CODE_EXECUTOR_SERVERS";
/// Name of the servers file written beside the settings file.
pub(crate) const SERVERS_FILE_NAME: &str = "servers.json";

/// Beside the servers file: the SHA-256 of what was last written there from the variable.
const SERVERS_DIGEST_NAME: &str = ".servers.json.from-env.sha256";

/// What `ensure` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirstRun {
    /// The settings file existed and was left alone.
    Existing(PathBuf),
    /// The settings file (and, when servers were given, the servers file) was written.
    Written {
        config: PathBuf,
        servers: Option<PathBuf>,
    },
    /// The settings file existed; the servers file was written from a changed
    /// `CODE_EXECUTOR_SERVERS`.
    ServersUpdated(PathBuf),
    /// `CODE_EXECUTOR_SERVERS` differs from the servers in use, which were left alone: `fix`
    /// says what the operator can do.
    ServersConflict { servers: PathBuf, fix: String },
}

#[derive(Debug, thiserror::Error)]
pub enum FirstRunError {
    #[error("{var} is invalid: {reason}")]
    Variable { var: String, reason: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The generated files' contents.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Generated {
    pub config_toml: String,
    /// `{"mcpServers": {...}}`, when `CODE_EXECUTOR_SERVERS` was set.
    pub servers_json: Option<String>,
}

/// Writes the settings file at `config` from the process environment unless it exists.
/// When it exists, follows a changed `CODE_EXECUTOR_SERVERS` (see the module doc).
pub fn ensure(config: &Path) -> Result<FirstRun, FirstRunError> {
    let vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX))
        .collect();
    let dir = config
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let servers_path = dir.join(SERVERS_FILE_NAME);
    if config.exists() {
        let servers = vars.iter().find(|(k, _)| k == SERVERS_ENV).map(|(_, v)| v);
        return match servers {
            Some(value) => follow_servers(config, &servers_path, &servers_json(value)?),
            None => Ok(FirstRun::Existing(config.to_path_buf())),
        };
    }
    let generated = generate(&vars, &servers_path)?;
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    let servers = match &generated.servers_json {
        Some(json) => {
            write_servers(&servers_path, json)?;
            Some(servers_path)
        }
        None => None,
    };
    write_private(config, &generated.config_toml).map_err(write_err(config))?;
    Ok(FirstRun::Written {
        config: config.to_path_buf(),
        servers,
    })
}

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> FirstRunError {
    let path = path.to_path_buf();
    move |source| FirstRunError::Write { path, source }
}

/// Writes the servers file from the variable, and the digest that marks it as written so.
fn write_servers(servers_path: &Path, json: &str) -> Result<(), FirstRunError> {
    write_private(servers_path, json).map_err(write_err(servers_path))?;
    let digest = servers_path.with_file_name(SERVERS_DIGEST_NAME);
    write_private(&digest, &sha256_hex(json.as_bytes())).map_err(write_err(&digest))
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// A later start with `CODE_EXECUTOR_SERVERS` set: brings the servers file (and, if the
/// settings name none yet, `servers_file`) in line with the variable, unless that would
/// overwrite what the operator chose.
fn follow_servers(
    config: &Path,
    servers_path: &Path,
    json: &str,
) -> Result<FirstRun, FirstRunError> {
    let unreadable = |path: &Path, source| FirstRunError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = std::fs::read_to_string(config).map_err(|e| unreadable(config, e))?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| FirstRunError::Variable {
        var: SERVERS_ENV.into(),
        reason: format!(
            "cannot be followed: {} is not valid TOML ({e})",
            config.display()
        ),
    })?;
    let ours = servers_path.display().to_string();
    match doc.get("servers_file").and_then(|v| v.as_str()) {
        Some(named) if named != ours => {
            return Ok(FirstRun::ServersConflict {
                servers: PathBuf::from(named),
                fix: format!(
                    "{SERVERS_ENV} is not used because {} sets servers_file = \"{named}\"; \
                     remove that line to use the variable, or unset the variable",
                    config.display()
                ),
            });
        }
        Some(_) => {}
        None => {
            write_servers(servers_path, json)?;
            doc["servers_file"] = toml_edit::value(ours);
            write_private(config, &doc.to_string()).map_err(write_err(config))?;
            return Ok(FirstRun::ServersUpdated(servers_path.to_path_buf()));
        }
    }
    let current = match std::fs::read(servers_path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(unreadable(servers_path, e)),
    };
    let Some(current) = current else {
        write_servers(servers_path, json)?;
        return Ok(FirstRun::ServersUpdated(servers_path.to_path_buf()));
    };
    if current == json.as_bytes() {
        return Ok(FirstRun::Existing(config.to_path_buf()));
    }
    let recorded = std::fs::read_to_string(servers_path.with_file_name(SERVERS_DIGEST_NAME))
        .unwrap_or_default();
    if recorded.trim() == sha256_hex(&current) {
        write_servers(servers_path, json)?;
        return Ok(FirstRun::ServersUpdated(servers_path.to_path_buf()));
    }
    Ok(FirstRun::ServersConflict {
        servers: servers_path.to_path_buf(),
        fix: format!(
            "{SERVERS_ENV} differs from {path}, which was edited since it was written from the \
             variable (or by an older version); edit {path} to your liking, or delete it to have \
             it written from {SERVERS_ENV} on the next start",
            path = servers_path.display()
        ),
    })
}

/// Builds the files from `CODE_EXECUTOR_*` variables (name, value). `servers_path` is where
/// the servers file will be written (named by `servers_file` in the settings).
pub(crate) fn generate(
    vars: &[(String, String)],
    servers_path: &Path,
) -> Result<Generated, FirstRunError> {
    let known = settings_keys();
    let mut raw = Figment::from(Serialized::defaults(RawSettings::default()));
    let mut servers = None;
    let mut seen = BTreeSet::new();
    for (var, value) in vars {
        let Some(suffix) = var.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        if keys::is_not_a_setting(suffix) {
            if var == SERVERS_ENV {
                servers = Some(servers_json(value)?);
            }
            continue;
        }
        let key = suffix.to_ascii_lowercase();
        if !known.contains(&key) {
            return Err(FirstRunError::Variable {
                var: var.clone(),
                reason: keys::unknown_variable(ENV_PREFIX, suffix, &known),
            });
        }
        // Parsed exactly as the settings loader parses variables (`5000`, `[a,b]`, paths).
        let parsed: Value = value.parse().expect("parsing a value is infallible");
        let single = Figment::from(Serialized::defaults(RawSettings::default()))
            .merge(Serialized::default(&key, parsed.clone()));
        if let Err(e) = single.extract::<RawSettings>() {
            return Err(FirstRunError::Variable {
                var: var.clone(),
                reason: e.kind.to_string(),
            });
        }
        raw = raw.merge(Serialized::default(&key, parsed));
        seen.insert(key);
    }
    let raw: RawSettings = raw.extract().map_err(|e| FirstRunError::Variable {
        var: format!("{ENV_PREFIX}*"),
        reason: e.to_string(),
    })?;
    if servers.is_some() && seen.contains("servers_file") {
        return Err(FirstRunError::Variable {
            var: SERVERS_ENV.into(),
            reason: format!("give either {SERVERS_ENV} or {ENV_PREFIX}SERVERS_FILE, not both"),
        });
    }
    // The combination must be valid too (ranges, heap below worker memory, ...).
    Settings::validate(raw.clone(), None).map_err(|e| match e {
        SettingsError::Invalid { field, reason } => FirstRunError::Variable {
            var: format!("{ENV_PREFIX}{}", field.to_ascii_uppercase()),
            reason,
        },
        e @ SettingsError::TokenFile { .. } => FirstRunError::Variable {
            var: format!("{ENV_PREFIX}HTTP_TOKEN_FILE"),
            reason: e.to_string(),
        },
        other => FirstRunError::Variable {
            var: format!("{ENV_PREFIX}*"),
            reason: other.to_string(),
        },
    })?;
    let as_toml = |e: &dyn std::fmt::Display| FirstRunError::Variable {
        var: format!("{ENV_PREFIX}*"),
        reason: format!("cannot be written as TOML: {e}"),
    };
    let mut table = toml::Table::try_from(&raw).map_err(|e| as_toml(&e))?;
    if servers.is_some() {
        table.insert(
            "servers_file".into(),
            toml::Value::String(servers_path.display().to_string()),
        );
    }
    let body = toml::to_string(&table).map_err(|e| as_toml(&e))?;
    let config_toml = format!(
        "# code-executor settings, written on the first start from the CODE_EXECUTOR_* variables.\n\
         # Read on every start; edit freely. A CODE_EXECUTOR_<KEY> variable that is still set\n\
         # overrides the same key. The HTTP token is never written here (use http_token_file).\n\n{body}"
    );
    Ok(Generated {
        config_toml,
        servers_json: servers,
    })
}

/// Checks `CODE_EXECUTOR_SERVERS` and returns the servers file's content.
fn servers_json(value: &str) -> Result<String, FirstRunError> {
    let bad = |reason: String| FirstRunError::Variable {
        var: SERVERS_ENV.into(),
        reason,
    };
    let parsed: serde_json::Value =
        serde_json::from_str(value).map_err(|e| bad(format!("not JSON: {e}")))?;
    let servers = match parsed.get("mcpServers") {
        Some(inner) => inner.clone(),
        None => parsed,
    };
    let Some(map) = servers.as_object() else {
        return Err(bad("must be a JSON object of servers by name".into()));
    };
    for (name, entry) in map {
        let Some(entry) = entry.as_object() else {
            return Err(bad(format!("server `{name}` must be an object")));
        };
        let has = |k: &str| entry.get(k).is_some_and(serde_json::Value::is_string);
        if !has("command") && !has("url") {
            return Err(bad(format!(
                "server `{name}` needs a `command` (stdio) or a `url` (streamable HTTP)"
            )));
        }
    }
    let file = serde_json::json!({ "mcpServers": servers });
    Ok(serde_json::to_string_pretty(&file).expect("JSON serialises") + "\n")
}

/// Writes `content` to `path` (mode 0600) through a temporary file and a rename, so a crash
/// never leaves a half-written file that a later start would take as the configuration.
fn write_private(path: &Path, content: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(content.as_bytes())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
// figment's `Jail` closures return its own large error type.
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn parse(toml_text: &str) -> RawSettings {
        toml::from_str(toml_text).expect("the generated file is valid TOML")
    }

    #[test]
    fn variables_become_the_settings_file() {
        let g = generate(
            &vars(&[
                ("CODE_EXECUTOR_TIMEOUT_MS", "5000"),
                ("CODE_EXECUTOR_POOL_SIZE_PYTHON", "0"),
                ("CODE_EXECUTOR_CACHE_DIR", "/opt/cache dir"),
                ("CODE_EXECUTOR_LOG", "debug"),
                ("CODE_EXECUTOR_HTTP_TOKEN", "never-written-secret"),
                ("CODE_EXECUTOR_CONFIG", "/config/config.toml"),
            ]),
            Path::new("/config/servers.json"),
        )
        .unwrap();
        let raw = parse(&g.config_toml);
        assert_eq!(raw.timeout_ms, Some(5000));
        assert_eq!(raw.pool_size_python, Some(0));
        assert_eq!(raw.cache_dir, Some(PathBuf::from("/opt/cache dir")));
        assert_eq!(raw.heap_limit_mb, None, "unset variables stay unset");
        assert!(!g.config_toml.contains("never-written-secret"));
        assert!(!g.config_toml.contains("debug"));
        assert_eq!(g.servers_json, None);
        // And the settings loader accepts it.
        let s = Settings::validate(raw, None).unwrap();
        assert_eq!(s.default_timeout, std::time::Duration::from_secs(5));
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        let err = generate(
            &vars(&[
                ("CODE_EXECUTOR_TIMEOUT_MS", "5000"),
                ("CODE_EXECUTOR_HEAP_LIMIT_MB", "lots"),
            ]),
            Path::new("/x/servers.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("CODE_EXECUTOR_HEAP_LIMIT_MB is invalid"),
            "{err}"
        );
    }

    #[test]
    fn an_out_of_range_value_names_its_variable() {
        let err = generate(
            &vars(&[("CODE_EXECUTOR_POOL_SIZE_TYPESCRIPT", "1000")]),
            Path::new("/x/servers.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("CODE_EXECUTOR_POOL_SIZE_TYPESCRIPT is invalid"),
            "{err}"
        );
    }

    #[test]
    fn a_misspelt_variable_is_refused() {
        let err = generate(
            &vars(&[("CODE_EXECUTOR_TIMEOUT_MSS", "5000")]),
            Path::new("/x/servers.json"),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "CODE_EXECUTOR_TIMEOUT_MSS is invalid: not a setting of code-executor; did you mean \
             `CODE_EXECUTOR_TIMEOUT_MS`?"
        );
    }

    #[test]
    fn servers_are_written_beside_and_referenced() {
        let servers = r#"{"time": {"command": "uvx", "args": ["mcp-server-time"]},
                          "docs": {"type": "http", "url": "http://docs:8080/mcp"}}"#;
        let g = generate(
            &vars(&[("CODE_EXECUTOR_SERVERS", servers)]),
            Path::new("/config/servers.json"),
        )
        .unwrap();
        let raw: toml::Value = toml::from_str(&g.config_toml).unwrap();
        assert_eq!(raw["servers_file"].as_str(), Some("/config/servers.json"));
        let json: serde_json::Value =
            serde_json::from_str(g.servers_json.as_deref().unwrap()).unwrap();
        assert_eq!(json["mcpServers"]["time"]["command"], "uvx");
        assert_eq!(json["mcpServers"]["docs"]["url"], "http://docs:8080/mcp");
        // The wrapped form gives the same file.
        let wrapped = format!(r#"{{"mcpServers": {servers}}}"#);
        let g2 = generate(
            &vars(&[("CODE_EXECUTOR_SERVERS", &wrapped)]),
            Path::new("/config/servers.json"),
        )
        .unwrap();
        assert_eq!(g.servers_json, g2.servers_json);
    }

    #[test]
    fn bad_servers_are_refused_with_the_variable_and_the_server_named() {
        for (value, needle) in [
            ("{not json", "not JSON"),
            ("[1, 2]", "JSON object"),
            (r#"{"git": {"args": []}}"#, "server `git` needs"),
            (r#"{"git": "uvx"}"#, "server `git` must be an object"),
        ] {
            let err = generate(
                &vars(&[("CODE_EXECUTOR_SERVERS", value)]),
                Path::new("/x/servers.json"),
            )
            .unwrap_err()
            .to_string();
            assert!(err.starts_with("CODE_EXECUTOR_SERVERS is invalid"), "{err}");
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn ensure_writes_once_and_then_leaves_the_file_alone() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("CODE_EXECUTOR_TIMEOUT_MS", "7000");
            jail.set_env("CODE_EXECUTOR_SERVERS", r#"{"t": {"command": "true"}}"#);
            let config = jail.directory().join("vol").join("config.toml");
            let first = ensure(&config).expect("first run writes");
            let servers = jail.directory().join("vol").join("servers.json");
            assert_eq!(
                first,
                FirstRun::Written {
                    config: config.clone(),
                    servers: Some(servers.clone()),
                }
            );
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&config).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            assert!(servers.is_file());
            // Later starts: the settings file is kept as it is, even when the settings
            // variables changed (they override its keys when loaded, not by rewriting it).
            std::fs::write(&config, "timeout_ms = 9000\n").unwrap();
            jail.clear_env();
            jail.set_env("CODE_EXECUTOR_TIMEOUT_MS", "oops");
            assert_eq!(ensure(&config).unwrap(), FirstRun::Existing(config.clone()));
            assert_eq!(
                std::fs::read_to_string(&config).unwrap(),
                "timeout_ms = 9000\n"
            );
            Ok(())
        });
    }

    #[test]
    fn a_changed_servers_variable_is_followed_on_later_starts() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("CODE_EXECUTOR_SERVERS", r#"{"a": {"command": "true"}}"#);
            let config = jail.directory().join("vol").join("config.toml");
            let servers = jail.directory().join("vol").join("servers.json");
            ensure(&config).expect("first run writes");
            let settings_before = std::fs::read(&config).unwrap();
            // Unchanged: nothing is written.
            assert_eq!(ensure(&config).unwrap(), FirstRun::Existing(config.clone()));
            // Changed: the servers file follows; the settings file is untouched.
            jail.set_env("CODE_EXECUTOR_SERVERS", r#"{"b": {"command": "true"}}"#);
            assert_eq!(
                ensure(&config).unwrap(),
                FirstRun::ServersUpdated(servers.clone())
            );
            let written = std::fs::read_to_string(&servers).unwrap();
            assert!(
                written.contains("\"b\"") && !written.contains("\"a\""),
                "{written}"
            );
            assert_eq!(std::fs::read(&config).unwrap(), settings_before);
            // Edited by the operator: left alone, and the fix is named.
            std::fs::write(&servers, r#"{"mcpServers": {"mine": {"command": "true"}}}"#).unwrap();
            jail.set_env("CODE_EXECUTOR_SERVERS", r#"{"c": {"command": "true"}}"#);
            match ensure(&config).unwrap() {
                FirstRun::ServersConflict { servers: s, fix } => {
                    assert_eq!(s, servers);
                    assert!(fix.contains("delete it"), "{fix}");
                }
                other => panic!("{other:?}"),
            }
            assert!(std::fs::read_to_string(&servers).unwrap().contains("mine"));
            // Deleted as the fix says: written from the variable again.
            std::fs::remove_file(&servers).unwrap();
            assert_eq!(
                ensure(&config).unwrap(),
                FirstRun::ServersUpdated(servers.clone())
            );
            assert!(std::fs::read_to_string(&servers).unwrap().contains("\"c\""));
            // A bad value stops the start, named, and writes nothing.
            jail.set_env("CODE_EXECUTOR_SERVERS", "{not json");
            let err = ensure(&config).unwrap_err().to_string();
            assert!(err.contains("CODE_EXECUTOR_SERVERS"), "{err}");
            assert!(std::fs::read_to_string(&servers).unwrap().contains("\"c\""));
            Ok(())
        });
    }

    #[test]
    fn servers_given_after_a_first_start_without_them_are_referenced() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("CODE_EXECUTOR_TIMEOUT_MS", "7000");
            let config = jail.directory().join("vol").join("config.toml");
            let servers = jail.directory().join("vol").join("servers.json");
            ensure(&config).expect("first run writes");
            assert!(!servers.exists());
            jail.set_env("CODE_EXECUTOR_SERVERS", r#"{"a": {"command": "true"}}"#);
            assert_eq!(
                ensure(&config).unwrap(),
                FirstRun::ServersUpdated(servers.clone())
            );
            let raw = parse(&std::fs::read_to_string(&config).unwrap());
            assert_eq!(raw.servers_file.as_deref(), Some(servers.as_path()));
            assert_eq!(raw.timeout_ms, Some(7000));
            // Settings naming another servers file win; the variable is reported, not used.
            std::fs::write(&config, "servers_file = \"/elsewhere.json\"\n").unwrap();
            assert!(matches!(
                ensure(&config).unwrap(),
                FirstRun::ServersConflict { fix, .. } if fix.contains("/elsewhere.json")
            ));
            Ok(())
        });
    }

    #[test]
    fn nothing_is_written_when_a_variable_is_bad() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("CODE_EXECUTOR_MAX_CONCURRENT_EXECUTIONS", "0");
            let config = jail.directory().join("config.toml");
            let err = ensure(&config).unwrap_err().to_string();
            assert!(
                err.starts_with("CODE_EXECUTOR_MAX_CONCURRENT_EXECUTIONS is invalid"),
                "{err}"
            );
            assert!(!config.exists());
            Ok(())
        });
    }
}
