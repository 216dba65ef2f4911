//! This server's own servers file (`servers_file` setting, default
//! `~/.config/code-executor/servers.json`): an MCP config (`{"mcpServers": {...}}`, or the bare
//! map of servers by name `{"time": {"command": ...}}`; comments allowed; any other shape is
//! refused, naming the file) read after every client config, so its entries win by name. `setup --disable-others`
//! copies there the servers it switches off in a client, which is what keeps them reachable:
//! a user's servers under `mcpServers`, a project's under `projects.<project>.mcpServers`, which
//! only that project reads (`super::table::OWN_FILE`). The file is the user's own, written by
//! them or by `setup` (which copies a project's server only once it is approved), so its
//! entries need no approval. This module owns merging that file into a [`Discovery`]; it reads
//! no client config and writes nothing (`setup` writes the file).

use std::path::Path;

use crate::clients::discovery::{self, Discovery, DiscoveryError, DiscoveryInputs, Overridden};

/// Reads `path` (if it exists) and lets its entries replace the same names in `main`.
pub(crate) fn merge_into(
    main: &mut Discovery,
    inputs: &DiscoveryInputs,
    path: &Path,
) -> Result<(), DiscoveryError> {
    if !path.exists() {
        return Ok(());
    }
    let own = discovery::discover_file(inputs, path)?;
    merge(main, own);
    Ok(())
}

/// `own` wins by name over `main`.
pub(crate) fn merge(main: &mut Discovery, own: Discovery) {
    let names: Vec<(String, discovery::ConfigSource)> = own
        .servers
        .iter()
        .map(|s| (s.name.clone(), s.source.clone()))
        .chain(
            own.disabled
                .iter()
                .map(|d| (d.name.clone(), d.source.clone())),
        )
        .chain(
            own.invalid
                .iter()
                .map(|i| (i.name.clone(), i.source.clone())),
        )
        .collect();
    for (name, by) in names {
        let lost = main
            .servers
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.source.clone())
            .chain(
                main.disabled
                    .iter()
                    .filter(|d| d.name == name)
                    .map(|d| d.source.clone()),
            )
            .chain(
                main.invalid
                    .iter()
                    .filter(|i| i.name == name)
                    .map(|i| i.source.clone()),
            )
            .chain(
                main.needs_approval()
                    .filter(|p| p.name == name)
                    .map(|p| p.source.clone()),
            );
        let lost: Vec<_> = lost.collect();
        for source in lost {
            main.overridden.push(Overridden {
                name: name.clone(),
                source,
                by: by.clone(),
            });
        }
        main.servers.retain(|s| s.name != name);
        main.disabled.retain(|d| d.name != name);
        main.invalid.retain(|i| i.name != name);
        main.project_servers.retain(|p| p.name != name);
    }
    main.servers.extend(own.servers);
    main.disabled.extend(own.disabled);
    main.invalid.extend(own.invalid);
    main.servers.sort_by(|a, b| a.name.cmp(&b.name));
    main.disabled.sort_by(|a, b| a.name.cmp(&b.name));
    main.invalid.sort_by(|a, b| a.name.cmp(&b.name));
    main.overridden.sort_by(|a, b| a.name.cmp(&b.name));
    for path in own.sources_read {
        if !main.sources_read.contains(&path) {
            main.sources_read.push(path);
        }
    }
    main.warnings.extend(own.warnings);
    main.skipped_self.extend(own.skipped_self);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_entries_win_over_disabled_client_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        std::fs::create_dir_all(home.join(".cursor")).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            home.join(".cursor/mcp.json"),
            r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"], "disabled": true},
                               "other": {"command": "other"}}}"#,
        )
        .unwrap();
        let own = tmp.path().join("servers.json");
        std::fs::write(
            &own,
            "// ours\n{\"mcpServers\": {\"time\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}}}",
        )
        .unwrap();
        let inputs = DiscoveryInputs {
            home,
            project_dir: project,
            ..Default::default()
        };
        let mut found = discovery::discover(&inputs).unwrap();
        assert_eq!(found.disabled.len(), 1);
        merge_into(&mut found, &inputs, &own).unwrap();
        let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["other", "time"]);
        assert!(found.disabled.is_empty());
        assert_eq!(found.overridden.len(), 1);
        // A missing file changes nothing.
        let before = found.clone();
        merge_into(&mut found, &inputs, &tmp.path().join("none.json")).unwrap();
        assert_eq!(found, before);
    }

    fn inputs_in(tmp: &Path) -> DiscoveryInputs {
        let (home, project) = (tmp.join("home"), tmp.join("project"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        DiscoveryInputs {
            home,
            project_dir: project,
            ..Default::default()
        }
    }

    #[test]
    fn the_bare_map_of_servers_is_read_as_mcp_servers() {
        let tmp = tempfile::tempdir().unwrap();
        let inputs = inputs_in(tmp.path());
        let own = tmp.path().join("servers.json");
        std::fs::write(
            &own,
            r#"{"time": {"command": "uvx", "args": ["mcp-server-time"]}, "git": {"command": "git-mcp"}}"#,
        )
        .unwrap();
        let mut found = Discovery::default();
        merge_into(&mut found, &inputs, &own).unwrap();
        let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["git", "time"]);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
        // Its servers are said to come from the servers file, in words a user knows.
        assert_eq!(
            found.servers[0].source.to_string(),
            format!("servers file {}", own.display())
        );
        // The wrapped form reads the same servers.
        std::fs::write(
            &own,
            r#"{"mcpServers": {"time": {"command": "uvx"}, "git": {"command": "git-mcp"}}}"#,
        )
        .unwrap();
        let mut wrapped = Discovery::default();
        merge_into(&mut wrapped, &inputs, &own).unwrap();
        assert_eq!(wrapped.servers.len(), 2);
    }

    #[test]
    fn another_shape_is_refused_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let inputs = inputs_in(tmp.path());
        let own = tmp.path().join("servers.json");
        std::fs::write(&own, r#"{"time": {"command": "uvx"}, "version": 2}"#).unwrap();
        let err = merge_into(&mut Discovery::default(), &inputs, &own)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&*own.to_string_lossy()), "{err}");
        assert!(
            err.contains("\"version\" is not a server definition"),
            "{err}"
        );
        assert!(err.contains("mcpServers"), "{err}");
        // Servers beside `mcpServers` would be lost: refused too.
        std::fs::write(
            &own,
            r#"{"time": {"command": "uvx"}, "mcpServers": {"git": {"command": "git-mcp"}}}"#,
        )
        .unwrap();
        let err = merge_into(&mut Discovery::default(), &inputs, &own)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"time\" stands beside \"mcpServers\""),
            "{err}"
        );
        // An empty object is an empty servers file, not a wrong one.
        std::fs::write(&own, "{}").unwrap();
        merge_into(&mut Discovery::default(), &inputs, &own).unwrap();
    }

    #[test]
    fn mcp_config_path_takes_the_bare_map_too() {
        let tmp = tempfile::tempdir().unwrap();
        let mut inputs = inputs_in(tmp.path());
        let explicit = tmp.path().join("mcp.json");
        std::fs::write(&explicit, r#"{"time": {"command": "uvx"}}"#).unwrap();
        inputs.explicit = Some(explicit);
        let found = discovery::discover(&inputs).unwrap();
        assert_eq!(found.servers.len(), 1);
        assert_eq!(found.servers[0].name, "time");
    }
}
