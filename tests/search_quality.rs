//! Search quality: real queries against a catalogue of 143 realistic tools
//! (`tests/fixtures/catalogue.json`, modelled on public MCP servers), each with the tool that
//! must rank in the top 3. Runs the ranking function directly: no processes.

use code_executor::catalog::{CatalogEntry, search};
use rmcp::model::Tool;
use serde_json::Value;

fn catalogue() -> Vec<CatalogEntry> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/catalogue.json");
    let root: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut entries = Vec::new();
    for (server, tools) in root["servers"].as_object().unwrap() {
        for tool in tools.as_array().unwrap() {
            let tool: Tool = serde_json::from_value(tool.clone()).unwrap();
            entries.push(CatalogEntry::from_tool(server, &tool));
        }
    }
    entries
}

/// (query, the qualified tool that must be in the top 3)
const CASES: &[(&str, &str)] = &[
    // GitHub
    ("create an issue on github", "mcp__github__create_issue"),
    ("open a pull request", "mcp__github__create_pull_request"),
    ("merge the PR", "mcp__github__merge_pull_request"),
    (
        "approve a pull request review",
        "mcp__github__create_pull_request_review",
    ),
    (
        "comment on a github issue",
        "mcp__github__add_issue_comment",
    ),
    ("search code in repositories", "mcp__github__search_code"),
    (
        "get file contents from a github repository",
        "mcp__github__get_file_contents",
    ),
    (
        "files changed in a pull request",
        "mcp__github__get_pull_request_files",
    ),
    ("fork a repo", "mcp__github__fork_repository"),
    ("my github account details", "mcp__github__get_me"),
    // Slack
    (
        "send a slack message to a channel",
        "mcp__slack__slack_post_message",
    ),
    (
        "reply in a slack thread",
        "mcp__slack__slack_reply_to_thread",
    ),
    ("react with an emoji", "mcp__slack__slack_add_reaction"),
    (
        "recent messages in a channel",
        "mcp__slack__slack_get_channel_history",
    ),
    ("slack user profile", "mcp__slack__slack_get_user_profile"),
    // Files
    ("read a file", "mcp__filesystem__read_file"),
    ("write text to a file", "mcp__filesystem__write_file"),
    ("list directory contents", "mcp__filesystem__list_directory"),
    ("make a new folder", "mcp__filesystem__create_directory"),
    ("rename a file", "mcp__filesystem__move_file"),
    (
        "find files matching a glob pattern",
        "mcp__filesystem__search_files",
    ),
    (
        "file size and last modified time",
        "mcp__filesystem__get_file_info",
    ),
    (
        "recursive tree of a folder",
        "mcp__filesystem__directory_tree",
    ),
    // git
    ("show commit history", "mcp__git__git_log"),
    ("diff of staged changes", "mcp__git__git_diff_staged"),
    ("commit my changes", "mcp__git__git_commit"),
    ("switch to another branch", "mcp__git__git_checkout"),
    ("create a new git branch", "mcp__git__git_create_branch"),
    ("working tree status", "mcp__git__git_status"),
    ("unstage everything", "mcp__git__git_reset"),
    // Databases
    ("run a SQL query on postgres", "mcp__postgres__query"),
    (
        "explain analyze a slow query",
        "mcp__postgres__explain_query",
    ),
    (
        "columns and indexes of a table",
        "mcp__postgres__get_object_details",
    ),
    (
        "list tables in the sqlite database",
        "mcp__sqlite__list_tables",
    ),
    ("insert rows into sqlite", "mcp__sqlite__write_query"),
    // Jira, Linear, Sentry
    ("jira ticket details", "mcp__jira__jira_get_issue"),
    (
        "move a jira issue to done",
        "mcp__jira__jira_transition_issue",
    ),
    ("search jira with JQL", "mcp__jira__jira_search"),
    ("log time on a ticket", "mcp__jira__jira_add_worklog"),
    ("linear issues assigned to me", "mcp__linear__list_issues"),
    ("current sprint cycle in linear", "mcp__linear__list_cycles"),
    (
        "stack trace of a sentry error",
        "mcp__sentry__get_issue_details",
    ),
    ("resolve a sentry issue", "mcp__sentry__update_issue"),
    // Calendar, mail, time
    (
        "schedule a meeting with attendees",
        "mcp__calendar__create_event",
    ),
    (
        "what meetings do I have this week",
        "mcp__calendar__list_events",
    ),
    ("when is everyone available", "mcp__calendar__get_freebusy"),
    ("cancel an event", "mcp__calendar__delete_event"),
    ("send an email", "mcp__gmail__send_email"),
    ("unread emails from alice", "mcp__gmail__search_emails"),
    ("mark an email as read", "mcp__gmail__modify_email"),
    (
        "current time in Tokyo timezone",
        "mcp__time__get_current_time",
    ),
    (
        "convert 9am New York time to Berlin",
        "mcp__time__convert_time",
    ),
    // Web, browser, memory, notes, payments
    ("fetch a web page as markdown", "mcp__fetch__fetch"),
    (
        "search the web for news",
        "mcp__brave-search__brave_web_search",
    ),
    (
        "pizza restaurants nearby",
        "mcp__brave-search__brave_local_search",
    ),
    (
        "take a screenshot of the page",
        "mcp__playwright__browser_take_screenshot",
    ),
    (
        "click a button on the website",
        "mcp__playwright__browser_click",
    ),
    (
        "open a url in the browser",
        "mcp__playwright__browser_navigate",
    ),
    ("type into a text field", "mcp__playwright__browser_type"),
    (
        "add entities to the knowledge graph",
        "mcp__memory__create_entities",
    ),
    (
        "query a notion database",
        "mcp__notion__notion_query_database",
    ),
    (
        "append paragraphs to a notion page",
        "mcp__notion__notion_append_block_children",
    ),
    ("refund a payment", "mcp__stripe__create_refund"),
    ("stripe account balance", "mcp__stripe__retrieve_balance"),
    (
        "cancel a customer's subscription",
        "mcp__stripe__cancel_subscription",
    ),
    // Exact names, other spellings, typos
    ("git_log", "mcp__git__git_log"),
    (
        "mcp__slack__slack_post_message",
        "mcp__slack__slack_post_message",
    ),
    ("getCurrentTime", "mcp__time__get_current_time"),
    ("create-pull-request", "mcp__github__create_pull_request"),
    ("screnshot", "mcp__playwright__browser_take_screenshot"),
    ("calender events", "mcp__calendar__list_events"),
];

#[test]
fn every_query_finds_its_tool_in_the_top_3() {
    let entries = catalogue();
    assert!(
        entries.len() >= 100,
        "the catalogue has {} tools",
        entries.len()
    );
    let mut failures = Vec::new();
    let mut first = 0;
    for (query, expected) in CASES {
        let hits = search(&entries, query, None, 3);
        let names: Vec<String> = hits.iter().map(|h| h.entry.qualified()).collect();
        match names.iter().position(|n| n == expected) {
            Some(0) => first += 1,
            Some(_) => {}
            None => failures.push(format!("{query:?}: expected {expected}, got {names:?}")),
        }
    }
    println!(
        "{} queries, {} with the expected tool first, {} in the top 3",
        CASES.len(),
        first,
        CASES.len() - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn exact_names_rank_first() {
    let entries = catalogue();
    for name in ["git_log", "mcp__github__create_issue", "fetch", "query"] {
        let hits = search(&entries, name, None, 1);
        let top = hits[0].entry;
        assert!(
            top.tool == name || top.qualified() == name,
            "{name}: got {}",
            top.qualified()
        );
    }
}

#[test]
fn a_server_filter_and_nonsense() {
    let entries = catalogue();
    let hits = search(&entries, "create issue", Some("linear"), 5);
    assert!(!hits.is_empty() && hits.iter().all(|h| h.entry.server == "linear"));
    assert_eq!(hits[0].entry.tool, "create_issue");
    assert!(search(&entries, "xylophone quasar", None, 5).is_empty());
}
