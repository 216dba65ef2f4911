//! This server's own servers file (`servers_file` setting, default
//! `~/.config/code-executor/servers.json`): an MCP config (`{"mcpServers": {...}}`, comments
//! allowed) read after every client config, so its entries win by name. `setup --disable-others`
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
}
