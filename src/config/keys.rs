//! The names of the settings as a user writes them: which `CODE_EXECUTOR_*` variables are not
//! settings (the one list), a key no setting has with the closest one that exists ("did you
//! mean"), and a load error phrased once, naming the key as written (`timeout_ms` in the file,
//! `CODE_EXECUTOR_TIMEOUT_MS` in the environment). Pure logic: the known keys are passed in by
//! `settings`, which owns what the settings are.

use std::collections::BTreeSet;
use std::path::Path;

use figment::Source;

/// Variables with the prefix (suffix in lower case) that are not settings keys: read
/// elsewhere, or secrets. The settings loader ignores them, `first_run` passes them by.
pub(crate) const NOT_SETTINGS: &[&str] = &[
    "config",
    "runtime_mirror",
    "bin",
    "log",
    "http_token",
    "browser",
    "oauth_client_secret",
    "servers",
    "approvals_file",
];

/// Whether `CODE_EXECUTOR_<suffix>` is read elsewhere rather than being a setting.
pub(crate) fn is_not_a_setting(suffix: &str) -> bool {
    NOT_SETTINGS.contains(&suffix.to_ascii_lowercase().as_str())
}

/// The known key most like `asked`, if one is close enough to be a likely typo: within an
/// edit distance of a third of its length (at least 2), or one holding the other.
pub(crate) fn closest<'k>(asked: &str, known: &'k BTreeSet<String>) -> Option<&'k str> {
    let asked = asked.to_ascii_lowercase();
    let within = (asked.len() / 3).max(2);
    known
        .iter()
        .map(|k| (strsim::osa_distance(&asked, k), k))
        .filter(|(d, k)| *d <= within || (asked.len() >= 4 && k.contains(asked.as_str())))
        .min()
        .map(|(_, k)| k.as_str())
}

/// `; did you mean `x`?` when a close key exists, else nothing.
fn did_you_mean(closest: Option<&str>, spelled: impl Fn(&str) -> String) -> String {
    closest
        .map(|k| format!("; did you mean `{}`?", spelled(k)))
        .unwrap_or_default()
}

/// The top-level keys of the settings file `text` that no setting has, each in a sentence
/// naming the key as written, the file and the closest real setting. Empty when every key is
/// known, or when the text is not TOML (the loader then reports that).
pub(crate) fn unknown_in_file(text: &str, file: &Path, known: &BTreeSet<String>) -> Vec<String> {
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    table
        .keys()
        .filter(|k| !known.contains(k.as_str()))
        .map(|k| {
            format!(
                "unknown setting `{k}` in {}{}",
                file.display(),
                did_you_mean(closest(k, known), str::to_owned)
            )
        })
        .collect()
}

/// The sentence for a `CODE_EXECUTOR_*` variable that is no setting, with the closest one.
pub(crate) fn unknown_variable(prefix: &str, suffix: &str, known: &BTreeSet<String>) -> String {
    format!(
        "not a setting of code-executor{}",
        did_you_mean(closest(suffix, known), |k| format!(
            "{prefix}{}",
            k.to_ascii_uppercase()
        ))
    )
}

/// A figment error as one line per problem, each naming the key as the user writes it: the
/// key and the file (`` `timeout_ms` in /etc/c.toml``), or the variable
/// (`CODE_EXECUTOR_TIMEOUT_MS`), never figment's profile-qualified `default.timeout_ms`.
pub(crate) fn describe_load_error(error: figment::Error, prefix: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for e in error {
        let key = e.path.join(".");
        let source = e.metadata.as_ref().and_then(|m| m.source.as_ref());
        let from_env = e
            .metadata
            .as_ref()
            .is_some_and(|m| m.name.contains("environment"));
        let line = match source {
            _ if key.is_empty() => e.kind.to_string(),
            Some(Source::File(path)) => {
                format!("`{key}` in {}: {}", path.display(), e.kind)
            }
            _ if from_env => format!("{prefix}{}: {}", key.to_ascii_uppercase(), e.kind),
            _ => format!("`{key}`: {}", e.kind),
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> BTreeSet<String> {
        [
            "timeout_ms",
            "max_timeout_ms",
            "heap_limit_mb",
            "servers_file",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn a_typo_finds_the_setting_meant() {
        assert_eq!(closest("timout_ms", &known()), Some("timeout_ms"));
        assert_eq!(closest("TIMEOUT_MSS", &known()), Some("timeout_ms"));
        assert_eq!(closest("heap_limit", &known()), Some("heap_limit_mb"));
        assert_eq!(closest("colour", &known()), None);
    }

    #[test]
    fn unknown_keys_of_a_file_are_named_as_written_with_the_closest() {
        let file = Path::new("/etc/ce/config.toml");
        let found = unknown_in_file("timout_ms = 5\nheap_limit_mb = 64\n", file, &known());
        assert_eq!(
            found,
            ["unknown setting `timout_ms` in /etc/ce/config.toml; did you mean `timeout_ms`?"]
        );
        let none = unknown_in_file("flavour = 1\n", file, &known());
        assert_eq!(none, ["unknown setting `flavour` in /etc/ce/config.toml"]);
        assert!(unknown_in_file("timeout_ms = 5\n", file, &known()).is_empty());
        assert!(unknown_in_file("not toml [", file, &known()).is_empty());
    }

    #[test]
    fn an_unknown_variable_suggests_the_variable() {
        assert_eq!(
            unknown_variable("CODE_EXECUTOR_", "TIMEOUT_MSS", &known()),
            "not a setting of code-executor; did you mean `CODE_EXECUTOR_TIMEOUT_MS`?"
        );
    }

    #[test]
    fn variables_read_elsewhere_are_not_settings_in_any_case() {
        assert!(is_not_a_setting("SERVERS"));
        assert!(is_not_a_setting("oauth_client_secret"));
        assert!(!is_not_a_setting("TIMEOUT_MS"));
    }
}
