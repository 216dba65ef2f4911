//! One entry's fields and expansion, and files that are broken, empty or oddly shaped.

use super::*;

#[test]
fn expansion_everywhere_and_relative_cwd() {
    let fx = Fixture::new();
    let cursor_dir = fx.project.join(".cursor");
    fx.project_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {
  "local": {
"command": "${HOME}/bin/${TOOL:-server}",
"args": ["--token=${GITHUB_TOKEN}", "$HOME", "${workspaceFolder}", "${userHome}", 8080, true],
"env": { "TOKEN": "${env:GITHUB_TOKEN}", "PORT": 3000, "DROPPED": null, "LITERAL": "$PATH" },
"cwd": "${TOOL_DIR:-tools}/run"
  },
  "absolute-cwd": { "command": "x", "cwd": "${workspaceFolder}/sub" },
  "remote": {
"type": "http",
"url": "https://${HOST:-api.example.com}/mcp?v=${VERSION:-1}",
"headers": { "Authorization": "Bearer ${GITHUB_TOKEN}", "X-Count": 2 }
  }
}}"#,
    );
    let d = fx.discover();
    let home = fx.home.to_string_lossy().into_owned();
    let root = fx.project_str();
    assert_eq!(
        server(&d, "local").transport,
        Transport::Stdio {
            command: format!("{home}/bin/server"),
            args: vec![
                "--token=ghp_test123".into(),
                "$HOME".into(),
                root.clone(),
                home.clone(),
                "8080".into(),
                "true".into(),
            ],
            env: map(&[
                ("TOKEN", "ghp_test123"),
                ("PORT", "3000"),
                ("LITERAL", "$PATH")
            ]),
            cwd: Some(cursor_dir.join("tools/run")),
        }
    );
    let Transport::Stdio { cwd, .. } = &server(&d, "absolute-cwd").transport else {
        panic!()
    };
    assert_eq!(cwd, &Some(fx.project.join("sub")));
    assert_eq!(
        server(&d, "remote").transport,
        Transport::Http {
            url: "https://api.example.com/mcp?v=1".into(),
            headers: map(&[("Authorization", "Bearer ghp_test123"), ("X-Count", "2")]),
        }
    );
}

#[test]
fn relative_cwd_in_claude_json_is_relative_to_home() {
    let fx = Fixture::new();
    fx.home_file(
        ".claude.json",
        r#"{"mcpServers": {"s": {"command": "x", "cwd": "servers/s"}}}"#,
    );
    let d = fx.discover();
    let Transport::Stdio { cwd, .. } = &server(&d, "s").transport else {
        panic!()
    };
    assert_eq!(cwd, &Some(fx.home.join("servers/s")));
}

#[test]
fn invalid_entries_do_not_affect_others() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {
  "good": { "command": "good" },
  "unset": { "command": "npx", "args": ["--key", "${API_KEY}"], "env": { "A": "${API_KEY}", "B": "${OTHER_KEY}" } },
  "no-command": { "type": "stdio", "args": ["x"] },
  "no-url": { "type": "http", "headers": {} },
  "nothing": { "env": {} },
  "sse": { "type": "sse", "url": "https://example.com/sse" },
  "weird-type": { "type": "websocket", "url": "wss://example.com" },
  "type-not-string": { "type": 1, "command": "x" },
  "not-object": "npx server",
  "args-not-array": { "command": "x", "args": "--flag" },
  "arg-object": { "command": "x", "args": ["ok", {"k": 1}] },
  "env-array": { "command": "x", "env": ["A=1"] },
  "bad-scheme": { "url": "ftp://example.com/mcp" },
  "empty-command": { "command": "  " },
  "unterminated": { "command": "x", "cwd": "${HOME" },
  "": { "command": "x" }
}}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["good", "sse"]);
    assert_eq!(
        server(&d, "sse").transport,
        Transport::Sse {
            url: "https://example.com/sse".into(),
            headers: map(&[]),
        }
    );
    assert_eq!(d.invalid.len(), 14, "{:#?}", d.invalid);
    let expect = [
        (
            "unset",
            "args[1]: environment variable `API_KEY` is not set; env.A: environment variable `API_KEY` is not set; env.B: environment variable `OTHER_KEY` is not set",
        ),
        ("no-command", "a stdio server needs a \"command\""),
        ("no-url", "an HTTP server needs a \"url\""),
        (
            "nothing",
            "needs a \"command\" (stdio server) or a \"url\" (HTTP server)",
        ),
        (
            "weird-type",
            "unknown \"type\" \"websocket\"; expected \"stdio\", \"http\", \"streamable-http\" or \"sse\"",
        ),
        (
            "type-not-string",
            "\"type\" must be a string, found a number",
        ),
        (
            "not-object",
            "a server definition must be an object, found a string",
        ),
        (
            "args-not-array",
            "args: must be an array of strings, found a string",
        ),
        ("arg-object", "args[1]: must be a string, found an object"),
        ("env-array", "env: must be an object, found an array"),
        ("bad-scheme", "url: must start with http:// or https://"),
        ("empty-command", "command: is empty"),
        ("unterminated", "cwd: unterminated \"${\" at character 1"),
        ("", "the server name is empty"),
    ];
    for (name, error) in expect {
        assert_eq!(invalid(&d, name).error, error, "{name}");
    }
    assert!(
        d.invalid
            .iter()
            .all(|e| e.source.kind == SourceKind::ClaudeCodeProject)
    );
}

#[test]
fn invalid_project_definition_shadows_valid_global_one() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"db": {"command": "db-mcp"}}}"#,
    );
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"db": {"command": "db-mcp", "env": {"URL": "${DATABASE_URL}"}}}}"#,
    );
    let d = fx.discover();
    assert!(d.servers.is_empty());
    assert_eq!(
        invalid(&d, "db").error,
        "env.URL: environment variable `DATABASE_URL` is not set"
    );
    assert_eq!(d.overridden[0].source.kind, SourceKind::CursorGlobal);
}

#[test]
fn command_and_url_without_type_prefers_command() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"both": {"command": "x", "url": "http://localhost:1/mcp"}}}"#,
    );
    let d = fx.discover();
    assert_eq!(server(&d, "both").transport, stdio("x", &[]));
    assert_eq!(d.warnings.len(), 1);
    assert!(d.warnings[0].contains("both \"command\" and \"url\""));
}

#[test]
fn broken_codex_toml_is_skipped_with_its_line() {
    let fx = Fixture::new();
    fx.home_file(
        ".codex/config.toml",
        "model = \"x\"\n\n[mcp_servers.a\ncommand = \"a\"\n",
    );
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"b": {"command": "b"}}}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["b"]);
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains(".codex/config.toml") && w.contains("line 3")),
        "{:?}",
        d.warnings
    );
}

#[test]
fn broken_file_becomes_a_warning_naming_file_and_line() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
    );
    let broken = fx.project_file(
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" }\n    \"b\": { \"command\": \"y\" }\n  }\n}\n",
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["fine"]);
    assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
    let w = &d.warnings[0];
    assert!(w.contains(&*broken.to_string_lossy()), "{w}");
    assert!(w.contains("line 3, column 28: Expected comma"), "{w}");
    assert!(!d.sources_read.contains(&broken));
}

#[test]
fn broken_explicit_file_is_an_error() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
    );
    let path = fx.home_file(
        "explicit.json",
        "{\n  \"mcpServers\": {\n    \"a\": ,\n  }\n}",
    );
    let mut inputs = fx.inputs();
    inputs.explicit = Some(path.clone());
    let err = discover(&inputs).unwrap_err();
    let DiscoveryError::Parse { line, column, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((*line, *column), (3, 10));
    assert_eq!(err.path(), path);
    let msg = err.to_string();
    assert!(
        msg.contains(&*path.to_string_lossy()) && msg.contains("line 3, column 10"),
        "{msg}"
    );
}

#[test]
fn missing_explicit_file_is_an_error() {
    let fx = Fixture::new();
    let mut inputs = fx.inputs();
    inputs.explicit = Some(fx.home.join("nope.json"));
    let err = discover(&inputs).unwrap_err();
    assert!(matches!(err, DiscoveryError::NotFound { .. }));
    assert!(err.to_string().contains("nope.json"));
}

#[test]
fn wrongly_shaped_files() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": ["not", "an", "object"]}"#,
    );
    fx.project_file(".cursor/mcp.json", r#"[{"command": "x"}]"#);
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
    );
    fx.home_file(
        ".claude.json",
        r#"{"projects": [], "disabledMcpServers": "fine"}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["fine"]);
    assert_eq!(d.warnings.len(), 4, "{:#?}", d.warnings);
    assert!(d.warnings[0].contains("\"mcpServers\" must be an object, found an array"));
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains("expected an object at the top level"))
    );

    let mut inputs = fx.inputs();
    inputs.explicit = Some(fx.home.join(".cursor/mcp.json"));
    let err = discover(&inputs).unwrap_err();
    assert!(matches!(err, DiscoveryError::Shape { .. }), "{err:?}");
}

#[test]
fn unreadable_files_become_warnings() {
    let fx = Fixture::new();
    fs::create_dir_all(fx.project.join(".mcp.json")).unwrap();
    fx.write(&fx.home.join(".cursor/mcp.json"), "");
    fs::write(
        fx.home.join(".cursor/mcp.json"),
        b"{\"mcpServers\": {\"\xff\": {}}}",
    )
    .unwrap();
    fx.project_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"fine": {"command": "ok"}}}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["fine"]);
    assert_eq!(d.warnings.len(), 2, "{:#?}", d.warnings);
    assert!(d.warnings.iter().any(|w| w.contains("not valid UTF-8")));
    assert!(
        d.warnings
            .iter()
            .all(|w| w.starts_with("cannot read MCP config file"))
    );
}

#[test]
fn empty_file_and_byte_order_mark() {
    let fx = Fixture::new();
    let empty = fx.project_file(".mcp.json", "  \n");
    let bom = fx.project_file(
        ".vscode/mcp.json",
        "\u{feff}{ \"servers\": { \"x\": { \"type\": \"stdio\", \"command\": \"x\" } } }",
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["x"]);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.sources_read, [bom, empty]);
}

#[test]
fn servers_are_sorted_by_name() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"zeta": {"command": "z"}, "Alpha": {"command": "a"}, "beta": {"command": "b"}}}"#,
    );
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"gamma": {"command": "g"}}}"#,
    );
    assert_eq!(names(&fx.discover()), ["Alpha", "beta", "gamma", "zeta"]);
}

#[test]
fn debug_output_hides_secrets() {
    let t = Transport::Http {
        url: "https://x/mcp".into(),
        headers: map(&[("Authorization", "Bearer hunter2")]),
    };
    let s = Transport::Stdio {
        command: "x".into(),
        args: vec![],
        env: map(&[("API_KEY", "hunter2")]),
        cwd: None,
    };
    for dbg in [format!("{t:?}"), format!("{s:?}")] {
        assert!(!dbg.contains("hunter2"), "{dbg}");
        assert!(dbg.contains("<redacted>"), "{dbg}");
    }
}
