//! Which files discovery reads, in which dialect, and which definition wins by name.

use super::*;

#[test]
fn codex_toml_user_and_project() {
    let fx = Fixture::new();
    let user = fx.home_file(
        ".codex/config.toml",
        r#"model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time", "--local-timezone", "UTC"]
env = { TZ_DATA = "${HOME}/tz" }
startup_timeout_sec = 20

[mcp_servers.figma]
url = "https://mcp.figma.example/mcp"
bearer_token_env_var = "GITHUB_TOKEN"
http_headers = { "X-Team" = "core" }

[mcp_servers.old]
command = "old-server"
enabled = false

[mcp_servers.me]
command = "/usr/local/bin/code-executor"
args = ["serve"]
"#,
    );
    fx.project_file(
        ".codex/config.toml",
        "[mcp_servers.time]\ncommand = \"project-time\"\n",
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["figma", "time"]);
    let time = server(&d, "time");
    assert_eq!(
        time.source.kind,
        SourceKind::CodexProject,
        "the project file wins"
    );
    assert_eq!(time.transport, stdio("project-time", &[]));
    assert!(
        d.overridden
            .iter()
            .any(|o| o.name == "time" && o.source.kind == SourceKind::CodexUser)
    );
    let figma = server(&d, "figma");
    assert_eq!(
        figma.source,
        ConfigSource {
            kind: SourceKind::CodexUser,
            path: user
        }
    );
    assert_eq!(
        figma.transport,
        Transport::Http {
            url: "https://mcp.figma.example/mcp".into(),
            headers: map(&[("Authorization", "Bearer ghp_test123"), ("X-Team", "core")]),
        }
    );
    assert_eq!(disabled(&d, "old").reason, "\"enabled\": false");
    // This server's own entry is skipped without a warning.
    assert!(d.skipped_self.iter().any(|s| s.name == "me"), "{d:?}");
    assert!(d.warnings.iter().all(|w| !w.contains("\"me\"")), "{d:?}");
}

#[test]
fn codex_user_servers_with_their_variables() {
    let fx = Fixture::new();
    fx.home_file(
        ".codex/config.toml",
        "[mcp_servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\nenv = { DATA = \"${HOME}/tz\" }\n",
    );
    let d = fx.discover();
    let Transport::Stdio { env, .. } = &server(&d, "time").transport else {
        panic!("not stdio");
    };
    assert_eq!(env, &map(&[("DATA", &format!("{}/tz", fx.home.display()))]));
}

#[test]
fn gemini_settings_dialect_and_lists() {
    let fx = Fixture::new();
    fx.home_file(
        ".gemini/settings.json",
        r#"{
  "theme": "GitHub",
  "mcp": { "excluded": ["noisy"] },
  "mcpServers": {
"api": { "httpUrl": "https://api.example/mcp", "headers": { "Authorization": "Bearer $GITHUB_TOKEN" }, "timeout": 30000, "trust": true },
"events": { "url": "http://localhost:8080/sse" },
"local": { "command": "$HOME/bin/local-server", "args": ["--verbose"] },
"noisy": { "command": "noisy-server" }
  }
}"#,
    );
    fx.project_file(
        ".gemini/settings.json",
                    r#"{ "mcp": { "allowed": ["kept", "api", "events", "local"] }, "mcpServers": { "kept": { "command": "kept" }, "dropped": { "command": "dropped" } } }"#,
    );
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"noisy": {"command": "noisy-from-claude"}}}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["api", "events", "kept", "local", "noisy"]);
    assert_eq!(
        server(&d, "api").transport,
        Transport::Http {
            url: "https://api.example/mcp".into(),
            headers: map(&[("Authorization", "Bearer ghp_test123")]),
        }
    );
    assert_eq!(
        server(&d, "local").transport,
        stdio(
            &format!("{}/bin/local-server", fx.home.display()),
            &["--verbose"]
        )
    );
    assert_eq!(
        server(&d, "events").transport,
        Transport::Sse {
            url: "http://localhost:8080/sse".into(),
            headers: map(&[]),
        }
    );
    assert!(
        disabled(&d, "dropped")
            .reason
            .contains("not in \"mcp.allowed\"")
    );
    assert_eq!(server(&d, "kept").source.kind, SourceKind::GeminiProject);
    // Gemini CLI's exclusions are its own: Claude Code's `noisy` is used.
    assert_eq!(
        server(&d, "noisy").transport,
        stdio("noisy-from-claude", &[])
    );
}

#[test]
fn nothing_configured() {
    let fx = Fixture::new();
    let d = fx.discover();
    assert_eq!(d, Discovery::default());
}

#[test]
fn claude_desktop_linux() {
    let fx = Fixture::new();
    let path = fx.home_file(
        ".config/Claude/claude_desktop_config.json",
        r#"{
  "mcpServers": {
"filesystem": {
  "command": "npx",
  "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/ana/Desktop", "/home/ana/Downloads"]
},
"github": {
  "command": "docker",
  "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
  "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}" }
}
  },
  "globalShortcut": "Ctrl+Space",
  "isUsingBuiltInNodeForMcp": true
}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["filesystem", "github"]);
    let gh = server(&d, "github");
    assert_eq!(
        gh.source,
        ConfigSource {
            kind: SourceKind::ClaudeDesktop,
            path: path.clone()
        }
    );
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &gh.transport
    else {
        panic!("not stdio: {gh:?}");
    };
    assert_eq!(command, "docker");
    assert_eq!(args.last().unwrap(), "ghcr.io/github/github-mcp-server");
    assert_eq!(
        env,
        &map(&[("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_test123")])
    );
    assert_eq!(cwd, &None);
    assert_eq!(d.sources_read, [path]);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn claude_desktop_macos() {
    let fx = Fixture::new();
    let path = fx.home_file(
        "Library/Application Support/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"sqlite": {"command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "/Users/ana/test.db"]}}}"#,
    );
    let d = fx.discover();
    let s = server(&d, "sqlite");
    assert_eq!(s.source.kind, SourceKind::ClaudeDesktop);
    assert_eq!(s.source.path, path);
    assert_eq!(
        s.transport,
        stdio(
            "uvx",
            &["mcp-server-sqlite", "--db-path", "/Users/ana/test.db"]
        )
    );
}

#[test]
fn cursor_global_with_http_entries() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{
  "mcpServers": {
"context7": { "url": "https://mcp.context7.com/mcp", "headers": { "CONTEXT7_API_KEY": "${env:GITHUB_TOKEN}" } },
"linear": { "type": "streamable-http", "url": "https://mcp.linear.app/mcp" },
"notion": { "type": "streamableHttp", "url": "https://mcp.notion.com/mcp" },
"sentry": { "type": "http", "url": "https://mcp.sentry.dev/mcp", "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" } },
"puppeteer": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-puppeteer"], "env": {} }
  }
}"#,
    );
    let d = fx.discover();
    assert_eq!(
        names(&d),
        ["context7", "linear", "notion", "puppeteer", "sentry"]
    );
    assert_eq!(
        server(&d, "context7").transport,
        Transport::Http {
            url: "https://mcp.context7.com/mcp".into(),
            headers: map(&[("CONTEXT7_API_KEY", "ghp_test123")]),
        }
    );
    assert_eq!(
        server(&d, "sentry").transport,
        Transport::Http {
            url: "https://mcp.sentry.dev/mcp".into(),
            headers: map(&[("Authorization", "Bearer ghp_test123")]),
        }
    );
    for name in ["linear", "notion"] {
        assert!(matches!(server(&d, name).transport, Transport::Http { .. }));
    }
    assert_eq!(server(&d, "linear").source.kind, SourceKind::CursorGlobal);
}

#[test]
fn claude_json_user_and_local_scopes() {
    let fx = Fixture::new();
    let path = fx.claude_json(
        r#"{
"memory": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {} },
"shared": { "type": "stdio", "command": "user-shared", "args": [], "env": {} }
  }"#,
        r#",
  "mcpServers": {
    "shared": { "type": "stdio", "command": "local-shared", "args": ["--verbose"], "env": { "DEBUG": "1" } },
    "postgres": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/mydb"], "env": {} }
  }"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["memory", "postgres", "shared"]);
    assert_eq!(server(&d, "memory").source.kind, SourceKind::ClaudeCodeUser);
    assert_eq!(
        server(&d, "postgres").source.kind,
        SourceKind::ClaudeCodeLocal
    );
    let shared = server(&d, "shared");
    assert_eq!(shared.source.kind, SourceKind::ClaudeCodeLocal);
    assert_eq!(shared.source.path, path);
    assert_eq!(
        shared.transport,
        Transport::Stdio {
            command: "local-shared".into(),
            args: vec!["--verbose".into()],
            env: map(&[("DEBUG", "1")]),
            cwd: None,
        }
    );
    assert_eq!(
        d.overridden,
        [Overridden {
            name: "shared".into(),
            source: ConfigSource {
                kind: SourceKind::ClaudeCodeUser,
                path: path.clone()
            },
            by: ConfigSource {
                kind: SourceKind::ClaudeCodeLocal,
                path: path.clone()
            },
        }]
    );
    // Another project's servers are not ours.
    assert!(d.servers.iter().all(|s| s.name != "old-only"));
    assert_eq!(d.sources_read, [path]);
}

#[test]
fn claude_json_project_key_with_trailing_slash_and_symlink() {
    let fx = Fixture::new();
    fx.claude_json("{}", r#", "mcpServers": { "local": { "command": "x" } }"#);
    let mut inputs = fx.inputs();
    inputs.project_dir = PathBuf::from(format!("{}/", fx.project_str()));
    assert_eq!(names(&discover(&inputs).unwrap()), ["local"]);

    #[cfg(unix)]
    {
        let link = fx.home.join("link-to-app");
        std::os::unix::fs::symlink(&fx.project, &link).unwrap();
        inputs.project_dir = link;
        assert_eq!(names(&discover(&inputs).unwrap()), ["local"]);
    }
}

#[test]
fn vscode_workspace_config() {
    let fx = Fixture::new();
    let path = fx.project_file(
        ".vscode/mcp.json",
        r#"{
  // 💡 Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
{
  "type": "promptString",
  "id": "perplexity-key",
  "description": "Perplexity API Key",
  "password": true
}
  ],
  "servers": {
// https://github.com/ppl-ai/modelcontextprotocol/
"Perplexity": {
  "type": "stdio",
  "command": "npx",
  "args": ["-y", "server-perplexity-ask"],
  "env": {
    "PERPLEXITY_API_KEY": "${input:perplexity-key}"
  }
},
"fetch": {
  "type": "stdio",
  "command": "uvx",
  "args": ["mcp-server-fetch"],
},
/* remote */
"github": {
  "type": "http",
  "url": "https://api.githubcopilot.com/mcp/"
},
"legacy": { "type": "sse", "url": "http://localhost:3001/sse" },
"tools": {
  "type": "stdio",
  "command": "node",
  "args": ["${workspaceFolder}/tools/mcp-server.js", "--root", "${workspaceFolder}"],
  "envFile": "${workspaceFolder}/.env",
},
  },
}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["fetch", "github", "legacy", "tools"]);
    assert_eq!(server(&d, "fetch").source.kind, SourceKind::VsCode);
    assert_eq!(server(&d, "fetch").source.path, path);
    let root = fx.project_str();
    assert_eq!(
        server(&d, "tools").transport,
        stdio(
            "node",
            &[&format!("{root}/tools/mcp-server.js"), "--root", &root]
        )
    );
    let perplexity = invalid(&d, "Perplexity");
    assert!(
        perplexity.error.contains("env.PERPLEXITY_API_KEY")
            && perplexity.error.contains("${input:perplexity-key}")
            && perplexity.error.contains("cannot be resolved"),
        "{}",
        perplexity.error
    );
    assert_eq!(
        server(&d, "legacy").transport,
        Transport::Sse {
            url: "http://localhost:3001/sse".into(),
            headers: map(&[]),
        }
    );
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains("\"tools\"") && w.contains("envFile")),
        "{:?}",
        d.warnings
    );
}

#[test]
fn vscode_ignores_mcp_servers_key_with_a_warning() {
    let fx = Fixture::new();
    fx.project_file(
        ".vscode/mcp.json",
        r#"{ "mcpServers": { "x": { "command": "x" } } }"#,
    );
    fx.project_file(".mcp.json", r#"{ "servers": { "y": { "command": "y" } } }"#);
    let d = fx.discover();
    assert!(d.servers.is_empty());
    assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
    assert!(d.warnings[0].contains("has \"mcpServers\" but VS Code (workspace) reads \"servers\""));
    assert!(
        d.warnings[1]
            .contains("has \"servers\" but Claude Code (project scope) reads \"mcpServers\"")
    );
}

#[test]
fn cursor_project_and_dot_mcp_json() {
    let fx = Fixture::new();
    fx.project_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"browser": {"command": "npx", "args": ["@browsermcp/mcp@latest"]}}}"#,
    );
    fx.project_file(
        ".mcp.json",
        r#"{
  "mcpServers": {
"airtable": {
  "type": "stdio",
  "command": "npx",
  "args": ["-y", "airtable-mcp-server"],
  "env": { "AIRTABLE_API_KEY": "${AIRTABLE_API_KEY:-none}" }
}
  }
}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["airtable", "browser"]);
    assert_eq!(server(&d, "browser").source.kind, SourceKind::CursorProject);
    let airtable = server(&d, "airtable");
    assert_eq!(airtable.source.kind, SourceKind::ClaudeCodeProject);
    let Transport::Stdio { env, .. } = &airtable.transport else {
        panic!()
    };
    assert_eq!(env, &map(&[("AIRTABLE_API_KEY", "none")]));
    assert_eq!(d.sources_read.len(), 2);
}

#[test]
fn explicit_file_accepts_servers_and_mcp_servers() {
    let fx = Fixture::new();
    let path = fx.write(
        &fx.home.join("configs/code-executor.json"),
        r#"{
  "servers": { "a": { "command": "a" }, "both": { "command": "from-servers" } },
  "mcpServers": { "b": { "command": "b" }, "both": { "command": "from-mcpServers" } }
}"#,
    );
    let mut inputs = fx.inputs();
    inputs.explicit = Some(path.clone());
    let d = discover(&inputs).unwrap();
    assert_eq!(names(&d), ["a", "b", "both"]);
    assert_eq!(server(&d, "both").transport, stdio("from-mcpServers", &[]));
    assert_eq!(server(&d, "a").source.kind, SourceKind::Explicit);
    assert_eq!(d.sources_read, [path]);
}

#[test]
fn explicit_relative_and_tilde_paths() {
    let fx = Fixture::new();
    fx.project_file(
        "conf/mcp.json",
        r#"{"mcpServers": {"rel": {"command": "r"}}}"#,
    );
    fx.home_file("mcp.json", r#"{"mcpServers": {"tilde": {"command": "t"}}}"#);
    let mut inputs = fx.inputs();
    inputs.explicit = Some(PathBuf::from("conf/mcp.json"));
    assert_eq!(names(&discover(&inputs).unwrap()), ["rel"]);
    inputs.explicit = Some(PathBuf::from("~/mcp.json"));
    assert_eq!(names(&discover(&inputs).unwrap()), ["tilde"]);
}

#[test]
fn precedence_by_name_across_all_sources() {
    let fx = Fixture::new();
    let entry = |cmd: &str| {
        format!(
            r#"{{ "shared": {{ "command": "{cmd}" }}, "only-{cmd}": {{ "command": "{cmd}" }} }}"#
        )
    };
    let explicit = fx.home.join("explicit.json");
    // Highest precedence first, so that each step can remove the winner.
    let layers: Vec<(SourceKind, PathBuf, String)> = vec![
        (
            SourceKind::Explicit,
            explicit.clone(),
            format!(r#"{{"mcpServers": {}}}"#, entry("explicit")),
        ),
        (
            SourceKind::ClaudeCodeProject,
            fx.project.join(".mcp.json"),
            format!(r#"{{"mcpServers": {}}}"#, entry("dotmcp")),
        ),
        (
            SourceKind::CursorProject,
            fx.project.join(".cursor/mcp.json"),
            format!(r#"{{"mcpServers": {}}}"#, entry("cursor-project")),
        ),
        (
            SourceKind::VsCode,
            fx.project.join(".vscode/mcp.json"),
            format!(r#"{{"servers": {}}}"#, entry("vscode")),
        ),
        (
            SourceKind::ClaudeCodeUser,
            fx.home.join(".claude.json"),
            String::new(),
        ),
        (
            SourceKind::CursorGlobal,
            fx.home.join(".cursor/mcp.json"),
            format!(r#"{{"mcpServers": {}}}"#, entry("cursor-global")),
        ),
        (
            SourceKind::ClaudeDesktop,
            fx.home.join(".config/Claude/claude_desktop_config.json"),
            format!(r#"{{"mcpServers": {}}}"#, entry("desktop")),
        ),
    ];
    for (kind, path, text) in &layers {
        if *kind == SourceKind::ClaudeCodeUser {
            fx.claude_json(
                &entry("claude-user"),
                &format!(r#", "mcpServers": {}"#, entry("claude-local")),
            );
        } else {
            fx.write(path, text);
        }
    }
    let mut inputs = fx.inputs();
    inputs.explicit = Some(explicit);

    let expected = [
        "explicit",
        "dotmcp",
        "cursor-project",
        "vscode",
        "claude-local",
        "claude-user",
        "cursor-global",
        "desktop",
    ];
    for (i, winner) in expected.iter().enumerate() {
        let d = discover(&inputs).unwrap();
        assert_eq!(
            server(&d, "shared").transport,
            stdio(winner, &[]),
            "step {i}"
        );
        // Every source still contributes its unique entry.
        assert_eq!(
            d.servers.len(),
            expected.len() - i + 1,
            "step {i}: {:?}",
            names(&d)
        );
        let losers: Vec<_> = d
            .overridden
            .iter()
            .filter(|o| o.name == "shared")
            .map(|o| o.source.kind)
            .collect();
        let mut sorted = losers.clone();
        sorted.sort();
        assert_eq!(losers, sorted, "lowest precedence first");
        assert_eq!(losers.len(), expected.len() - i - 1);
        assert!(
            d.overridden
                .iter()
                .all(|o| o.by == server(&d, "shared").source)
        );

        // Remove the winner for the next step.
        match *winner {
            "explicit" => inputs.explicit = None,
            "claude-local" => {
                fx.claude_json(&entry("claude-user"), "");
            }
            "claude-user" => {
                fs::remove_file(fx.home.join(".claude.json")).unwrap();
            }
            _ => {
                let (_, path, _) = layers
                    .iter()
                    .find(|(k, ..)| server(&d, "shared").source.kind == *k)
                    .unwrap();
                fs::remove_file(path).unwrap();
            }
        }
    }
    assert!(fx.discover().servers.is_empty());
}

#[test]
fn labels_of_every_source() {
    let labels: Vec<_> = [
        SourceKind::ClaudeDesktop,
        SourceKind::CursorGlobal,
        SourceKind::CodexUser,
        SourceKind::GeminiUser,
        SourceKind::VsCodeUser,
        SourceKind::ClaudeCodeUser,
        SourceKind::ClaudeCodeLocal,
        SourceKind::VsCode,
        SourceKind::CursorProject,
        SourceKind::CodexProject,
        SourceKind::GeminiProject,
        SourceKind::ClaudeCodeProject,
        SourceKind::Explicit,
        SourceKind::ServersFile,
    ]
    .iter()
    .map(|k| k.label())
    .collect();
    assert_eq!(
        labels,
        [
            "Claude Desktop",
            "Cursor (global)",
            "Codex (user)",
            "Gemini CLI (user)",
            "VS Code (user)",
            "Claude Code (user scope)",
            "Claude Code (local scope)",
            "VS Code (workspace)",
            "Cursor (project)",
            "Codex (project)",
            "Gemini CLI (project)",
            "Claude Code (project scope)",
            "MCP_CONFIG_PATH",
            "servers file",
        ]
    );
    let source = ConfigSource {
        kind: SourceKind::CursorGlobal,
        path: PathBuf::from("/h/.cursor/mcp.json"),
    };
    assert_eq!(
        source.to_string(),
        "Cursor (global) config /h/.cursor/mcp.json"
    );
}

#[test]
fn claude_desktop_reads_both_files_macos_last() {
    let fx = Fixture::new();
    let linux = fx.home_file(
        ".config/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"a": {"command": "linux"}, "l": {"command": "l"}}}"#,
    );
    let mac = fx.home_file(
        "Library/Application Support/Claude/claude_desktop_config.json",
        r#"{"mcpServers": {"a": {"command": "mac"}}}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["a", "l"]);
    assert_eq!(server(&d, "a").transport, stdio("mac", &[]));
    assert_eq!(d.sources_read, [linux, mac]);
}

#[test]
fn vscode_user_config() {
    let fx = Fixture::new();
    let linux = fx.home_file(
        ".config/Code/User/mcp.json",
        r#"{"servers": {"u": {"command": "u"}, "both": {"command": "linux"}, "mine": {"command": "vscode"}}}"#,
    );
    let mac = fx.home_file(
        "Library/Application Support/Code/User/mcp.json",
        r#"{"servers": {"m": {"command": "m"}, "both": {"command": "mac"}}}"#,
    );
    fx.home_file(
        ".gemini/settings.json",
        r#"{"mcpServers": {"mine": {"command": "gemini"}}}"#,
    );
    fx.home_file(
        ".claude.json",
        r#"{"mcpServers": {"u": {"command": "claude"}}}"#,
    );
    let d = fx.discover();
    assert_eq!(names(&d), ["both", "m", "mine", "u"]);
    assert_eq!(server(&d, "both").transport, stdio("mac", &[]));
    assert_eq!(server(&d, "both").source.kind, SourceKind::VsCodeUser);
    // Above Gemini CLI's user settings, below Claude Code's user scope.
    assert_eq!(server(&d, "mine").transport, stdio("vscode", &[]));
    assert_eq!(server(&d, "u").transport, stdio("claude", &[]));
    assert!(
        d.sources_read
            .ends_with(&[linux, mac, fx.home.join(".claude.json")])
    );
}

#[test]
fn explicit_file_is_json_whatever_its_name() {
    let fx = Fixture::new();
    let path = fx.home_file("mcp.toml", "[mcpServers.t]\ncommand = \"t\"\n");
    let mut inputs = fx.inputs();
    inputs.explicit = Some(path);
    let err = discover(&inputs).unwrap_err();
    assert!(matches!(err, DiscoveryError::Parse { .. }), "{err:?}");
}

/// VS Code's user `mcp.json` lives in the user profile: the default profile's directory, each
/// other profile's, for VS Code and Insiders, on Linux and macOS.
#[test]
fn vs_code_user_files_are_read_in_every_documented_place() {
    let places = [
        ".config/Code/User/mcp.json",
        "Library/Application Support/Code/User/mcp.json",
        ".config/Code - Insiders/User/mcp.json",
        "Library/Application Support/Code - Insiders/User/mcp.json",
        ".config/Code/User/profiles/-5d2a9c1e/mcp.json",
        "Library/Application Support/Code/User/profiles/7f3b/mcp.json",
        ".config/Code - Insiders/User/profiles/3e1a/mcp.json",
    ];
    for (i, rel) in places.iter().enumerate() {
        let fx = Fixture::new();
        let path = fx.home_file(
            rel,
            &format!(r#"{{"servers": {{"s{i}": {{"type": "stdio", "command": "s{i}"}}}}}}"#),
        );
        let d = fx.discover();
        assert_eq!(names(&d), [format!("s{i}")], "{rel}");
        assert_eq!(d.servers[0].source.kind, SourceKind::VsCodeUser, "{rel}");
        assert_eq!(d.servers[0].source.path, path, "{rel}");
    }
    // A profile directory without the file, and a file where a profile directory belongs,
    // are not configs.
    let fx = Fixture::new();
    fs::create_dir_all(fx.home.join(".config/Code/User/profiles/empty")).unwrap();
    fx.home_file(
        ".config/Code/User/profiles/mcp.json",
        r#"{"servers": {"x": {"command": "x"}}}"#,
    );
    assert!(fx.discover().servers.is_empty());
}
