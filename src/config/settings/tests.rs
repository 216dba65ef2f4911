//! Tests of the settings: defaults, the file and environment layers, ranges, the HTTP token,
//! and that the settings shipped with the Kubernetes deployment load.
// figment's `Jail` closures return its own large error type.
#![allow(clippy::result_large_err)]

use super::*;

#[test]
fn defaults_are_safe_and_valid() {
    let s = Settings::validate(RawSettings::default(), None).unwrap();
    assert_eq!(s.output_limit_bytes, 1024 * 1024);
    assert_eq!(s.default_timeout, Duration::from_secs(30));
    assert_eq!(s.heap_limit_mb, 256);
}

#[test]
fn the_kubernetes_settings_load_and_keep_no_workspace() {
    let text = include_str!("../../../deploy/config/config.toml");
    let mut raw: RawSettings = Figment::from(Serialized::defaults(RawSettings::default()))
        .merge(Toml::string(text))
        .extract()
        .expect("deploy/config/config.toml parses");
    // The token file exists only in the pod.
    assert!(raw.http_token_file.take().is_some());
    let s = Settings::validate(raw, None).expect("deploy/config/config.toml is valid");
    assert_eq!(
        s.workspace_dir, None,
        "replicas behind one Service share no workspace"
    );
    assert_eq!(s.max_concurrent_executions, 2);
}

#[test]
fn file_then_env_override() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("c.toml", "timeout_ms = 5000\nheap_limit_mb = 128\n")?;
        jail.set_env("CODE_EXECUTOR_HEAP_LIMIT_MB", "64");
        let s = Settings::load(Some(Path::new("c.toml"))).expect("loads");
        assert_eq!(s.default_timeout, Duration::from_secs(5));
        assert_eq!(s.heap_limit_mb, 64);
        Ok(())
    });
}

#[test]
fn an_unknown_key_in_the_file_is_refused_with_the_setting_meant() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("c.toml", "timout_ms = 5000\n")?;
        let err = Settings::load(Some(Path::new("c.toml")))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "unknown setting `timout_ms` in c.toml; did you mean `timeout_ms`?"
        );
        Ok(())
    });
}

#[test]
fn a_wrongly_typed_value_is_named_once_as_written() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("c.toml", "timeout_ms = \"soon\"\n")?;
        let err = Settings::load(Some(Path::new("c.toml"))).unwrap_err();
        let text = format!("{:#}", anyhow::Error::from(err));
        assert_eq!(text.matches("soon").count(), 1, "{text}");
        assert!(text.contains("`timeout_ms` in "), "{text}");
        assert!(!text.contains("default."), "{text}");
        Ok(())
    });
}

#[test]
fn bad_variable_is_named() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("CODE_EXECUTOR_TIMEOUT_MS", "soon");
        let err = Settings::load(None).unwrap_err().to_string();
        assert!(
            err.contains("TIMEOUT_MS") && err.contains("CODE_EXECUTOR_"),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn lists_and_the_token_come_from_the_environment() {
    figment::Jail::expect_with(|jail| {
        jail.set_env(
            "CODE_EXECUTOR_POLICY_DENY",
            "[mcp__Test-Store__delete_*, mcp__time__convert_time]",
        );
        jail.set_env(
            "CODE_EXECUTOR_HTTP_TOKEN",
            "0123456789abcdef0123456789abcdef",
        );
        let s = Settings::load(None).expect("loads");
        assert_eq!(
            s.policy_deny,
            ["mcp__Test-Store__delete_*", "mcp__time__convert_time"]
        );
        assert_eq!(
            s.http_token.as_ref().map(Secret::expose),
            Some("0123456789abcdef0123456789abcdef")
        );
        assert!(!format!("{s:?}").contains("0123456789abcdef"));
        jail.set_env("CODE_EXECUTOR_HTTP_TOKEN", "short");
        let err = Settings::load(None).unwrap_err().to_string();
        assert!(
            err.contains("at least 32") && err.contains("openssl rand -hex 32"),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn a_token_file_is_read_and_trimmed() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("token", "file-token-0123456789abcdef0123456789\n")?;
        jail.create_file("c.toml", "http_token_file = \"token\"\n")?;
        let s = Settings::load(Some(Path::new("c.toml"))).expect("loads");
        assert_eq!(
            s.http_token.as_ref().map(Secret::expose),
            Some("file-token-0123456789abcdef0123456789")
        );
        jail.create_file("c2.toml", "http_token_file = \"missing\"\n")?;
        let err = Settings::load(Some(Path::new("c2.toml"))).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        Ok(())
    });
}

#[test]
fn placeholder_short_and_weak_tokens_are_refused() {
    for (token, why) in [
        // deploy/code-executor.yaml's Secret as shipped.
        ("REPLACE-WITH-A-LONG-RANDOM-TOKEN", "placeholder"),
        ("changeme-changeme-changeme-changeme", "placeholder"),
        ("please-put-your-token-here-0123456789", "placeholder"),
        ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "placeholder"),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "distinct"),
        ("passwordpasswordpasswordpassword", "distinct"),
        ("0123456789abcdef0123456789abcde", "at least 32"),
        ("changeme", "at least 32"),
        ("0123456789abcdef 0123456789abcdef", "whitespace"),
    ] {
        let reason = token_problem(token).unwrap_or_else(|| panic!("{token} accepted"));
        assert!(reason.contains(why), "{token}: {reason}");
    }
    // What the documentation and the compose appliance make.
    for token in [
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "q3Jm+4b/TnXc0a1ZpV9sYk2LwE8uHf7GdRi6oPjQ5yM=",
        "q3Jm4bTnXc0a1ZpV9sYk2LwE8uHf7GdRi6oPjQ5yM",
    ] {
        assert_eq!(token_problem(token), None, "{token}");
    }
}

#[test]
fn a_placeholder_token_stops_the_load_with_how_to_make_one() {
    figment::Jail::expect_with(|jail| {
        jail.create_file("token", "REPLACE-WITH-A-LONG-RANDOM-TOKEN\n")?;
        jail.create_file("c.toml", "http_token_file = \"token\"\n")?;
        let err = Settings::load(Some(Path::new("c.toml")))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("http_token_file")
                && err.contains("placeholder")
                && err.contains("openssl rand -hex 32")
                && !err.contains("REPLACE-WITH"),
            "{err}"
        );
        Ok(())
    });
}

#[test]
fn tasks_run_at_least_as_long_as_calls() {
    let s = Settings::validate(RawSettings::default(), None).unwrap();
    assert_eq!(s.task_max, Duration::from_secs(3600));
    assert_eq!(s.task_ttl, Duration::from_secs(600));
    assert_eq!(s.max_tasks_per_session, 16);
    let raw = RawSettings {
        task_max_ms: Some(60_000),
        ..Default::default()
    };
    let err = Settings::validate(raw, None).unwrap_err().to_string();
    assert!(
        err.contains("task_max_ms") && err.contains("max_timeout_ms"),
        "{err}"
    );
}

#[test]
fn out_of_range_is_refused() {
    let raw = RawSettings {
        heap_limit_mb: Some(1),
        ..Default::default()
    };
    let err = Settings::validate(raw, None).unwrap_err().to_string();
    assert!(err.contains("heap_limit_mb"), "{err}");
}

#[test]
fn lanes_default_to_two_pyodides_and_as_many_contexts_as_may_run() {
    let s = Settings::validate(RawSettings::default(), None).unwrap();
    assert_eq!(s.max_lanes_python, 2);
    assert_eq!(s.max_lanes_typescript(), s.max_concurrent_executions);
    let raw = RawSettings {
        max_lanes_typescript: Some(3),
        ..Default::default()
    };
    assert_eq!(
        Settings::validate(raw, None)
            .unwrap()
            .max_lanes_typescript(),
        3
    );
    for (raw, name) in [
        (
            RawSettings {
                max_lanes_python: Some(0),
                ..Default::default()
            },
            "max_lanes_python",
        ),
        (
            RawSettings {
                max_lanes_typescript: Some(0),
                ..Default::default()
            },
            "max_lanes_typescript",
        ),
    ] {
        let err = Settings::validate(raw, None).unwrap_err().to_string();
        assert!(err.contains(name), "{err}");
    }
}

#[test]
fn a_principal_gets_half_the_slots_without_a_token_and_all_with_one() {
    let mut s = Settings::validate(RawSettings::default(), None).unwrap();
    assert_eq!(
        s.principal_share(),
        PrincipalShare {
            running: 2,
            queued: 16
        }
    );
    // With a token every client is the one principal: nobody to share with.
    s.http_token = Some(Secret::new("x".repeat(40)));
    assert_eq!(
        s.principal_share(),
        PrincipalShare {
            running: 4,
            queued: 32
        }
    );
    // Odd numbers round up; one slot is one principal's.
    let raw = RawSettings {
        max_concurrent_executions: Some(1),
        max_queued_executions: Some(3),
        ..Default::default()
    };
    let s = Settings::validate(raw, None).unwrap();
    assert_eq!(
        s.principal_share(),
        PrincipalShare {
            running: 1,
            queued: 2
        }
    );
    // Set, they hold with a token too.
    let raw = RawSettings {
        max_concurrent_executions_per_principal: Some(3),
        max_queued_executions_per_principal: Some(0),
        ..Default::default()
    };
    let mut s = Settings::validate(raw, None).unwrap();
    s.http_token = Some(Secret::new("x".repeat(40)));
    assert_eq!(
        s.principal_share(),
        PrincipalShare {
            running: 3,
            queued: 0
        }
    );
}

#[test]
fn a_principals_share_is_within_the_whole() {
    for (raw, field) in [
        (
            RawSettings {
                max_concurrent_executions_per_principal: Some(0),
                ..Default::default()
            },
            "max_concurrent_executions_per_principal",
        ),
        (
            RawSettings {
                max_concurrent_executions_per_principal: Some(5),
                ..Default::default()
            },
            "max_concurrent_executions_per_principal",
        ),
        (
            RawSettings {
                max_queued_executions: Some(4),
                max_queued_executions_per_principal: Some(5),
                ..Default::default()
            },
            "max_queued_executions_per_principal",
        ),
    ] {
        let err = Settings::validate(raw, None).unwrap_err().to_string();
        assert!(err.contains(field), "{err}");
    }
}

#[test]
fn workspaces_are_the_principals_unless_shared() {
    let s = Settings::validate(RawSettings::default(), None).unwrap();
    assert_eq!(s.workspace_sharing, WorkspaceSharing::Principal);
    figment::Jail::expect_with(|jail| {
        jail.set_env("CODE_EXECUTOR_WORKSPACE_SHARING", "project");
        let s = Settings::load(None).expect("loads");
        assert_eq!(s.workspace_sharing, WorkspaceSharing::Project);
        jail.set_env("CODE_EXECUTOR_WORKSPACE_SHARING", "everyone");
        let err = Settings::load(None).unwrap_err().to_string();
        assert!(
            err.contains("WORKSPACE_SHARING") && err.contains("principal"),
            "{err}"
        );
        Ok(())
    });
}
