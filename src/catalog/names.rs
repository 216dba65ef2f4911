//! How a downstream tool is named and summarised for the LLM and for code: its qualified name
//! (`mcp__<server>__<tool>`) and the one line of its description a search shows.

/// The name sandboxed code and the LLM use for a downstream tool.
pub(crate) fn qualified_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// The first line of a description, cut to `max` characters: enough to choose a tool.
pub(crate) fn one_line(description: Option<&str>, max: usize) -> String {
    let line = description
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if line.chars().count() <= max {
        line.to_string()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}
