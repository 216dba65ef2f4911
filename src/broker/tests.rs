//! The broker as pure logic: bypass attempts on names and patterns, policy against allowlists
//! (on resolved (server, tool) pairs), the host-call budget, sizes, rate limits on a fake clock,
//! and schema validation.

use std::time::Duration;

use governor::clock::FakeRelativeClock;
use serde_json::{Map, Value, json};

use super::limits::{CALLS_AFTER_BUDGET, Spent};
use super::refusal::Scope;
use super::*;

fn strings(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| s.to_string()).collect()
}

fn broker(allow: Option<&[&str]>, deny: &[&str]) -> Broker {
    let allow = allow.map(strings);
    Broker::new(BrokerConfig {
        policy: Policy::new(allow.as_deref(), &strings(deny)).unwrap(),
        rates: RateQuotas::per_minute(1000, 1000, 1000),
        max_argument_bytes: 1024,
        max_result_bytes: 2048,
    })
}

/// The (server, tool) a name would resolve to with single-word server names.
fn pair(name: &str) -> (&str, &str) {
    let rest = name.strip_prefix("mcp__").unwrap_or(name);
    rest.split_once("__").unwrap_or((rest, ""))
}

fn admit(b: &Broker, allowed: &[&str], name: &str) -> Result<(), Refusal> {
    admit_pair(b, allowed, pair(name), name)
}

fn admit_pair(b: &Broker, allowed: &[&str], pair: (&str, &str), name: &str) -> Result<(), Refusal> {
    let allowlist = Allowlist::new(&strings(allowed)).unwrap();
    let reach = Reach::execution(b.policy(), &allowlist);
    b.admit(&reach, pair, name, 2)
}

#[test]
fn an_empty_allowlist_allows_nothing() {
    let b = broker(None, &[]);
    assert_eq!(
        admit(&b, &[], "mcp__time__get_current_time"),
        Err(Refusal::NotAllowed("mcp__time__get_current_time".into()))
    );
}

#[test]
fn prefix_suffix_case_and_lookalike_names_are_refused() {
    let b = broker(None, &[]);
    let allowed = ["mcp__git__git_status"];
    assert_eq!(admit(&b, &allowed, "mcp__git__git_status"), Ok(()));
    for name in [
        "mcp__git__git_status_all",     // suffix
        "xmcp__git__git_status",        // prefix
        "mcp__git__git_statu",          // truncated
        "MCP__GIT__GIT_STATUS",         // case
        "mcp__git__Git_status",         // case, one letter
        "mcp__git__git_ѕtatus",         // Cyrillic ѕ
        "mcp__git__git＿status",        // fullwidth low line
        "mcp__git__git_status\u{200b}", // zero-width space
        "mcp__git__git%5Fstatus",       // percent-encoding is not decoded
        "mcp__git__git_status\u{301}",  // combining accent, not normalised
    ] {
        assert!(
            admit(&b, &allowed, name).is_err(),
            "{name:?} must be refused"
        );
    }
}

#[test]
fn nul_newline_and_whitespace_are_malformed_even_under_a_catch_all() {
    let b = broker(None, &[]);
    for name in [
        "mcp__git__git_status\0",
        "mcp__git__git_status\n",
        "mcp__git__git_status\r\nmcp__time__x",
        " mcp__git__git_status",
        "mcp__git__git_status\t",
        "mcp__git__git_status\u{1b}[2J",
        "",
    ] {
        assert!(
            matches!(admit(&b, &["*"], name), Err(Refusal::MalformedName(_))),
            "{name:?} must be malformed"
        );
    }
}

#[test]
fn globs_cover_whole_names_only() {
    let b = broker(None, &[]);
    let allowed = ["mcp__github__*", "mcp__*__read_*"];
    assert_eq!(admit(&b, &allowed, "mcp__github__create_issue"), Ok(()));
    assert_eq!(admit(&b, &allowed, "mcp__fs__read_file"), Ok(()));
    assert!(admit(&b, &allowed, "mcp__githubx__create_issue").is_err());
    assert!(admit(&b, &allowed, "mcp__fs__write_file").is_err());
    assert!(admit(&b, &allowed, "xmcp__github__create_issue").is_err());
    assert!(admit(&b, &allowed, "mcp__fs__xread_file").is_err());
    // Glob syntax beyond `*` is refused rather than guessed at.
    for pattern in [
        "mcp__git__git_?",
        "mcp__[gh]it__*",
        "mcp__{a,b}__*",
        "mcp__git__\\*",
    ] {
        assert!(Allowlist::new(&strings(&[pattern])).is_err(), "{pattern}");
    }
}

#[test]
fn deny_wins_over_every_allow() {
    let b = broker(None, &["mcp__git__git_commit", "mcp__*__delete_*"]);
    assert_eq!(admit(&b, &["mcp__git__*"], "mcp__git__git_log"), Ok(()));
    assert_eq!(
        admit(&b, &["mcp__git__*"], "mcp__git__git_commit"),
        Err(Refusal::DeniedByPolicy("mcp__git__git_commit".into()))
    );
    assert_eq!(
        admit(&b, &["mcp__git__git_commit"], "mcp__git__git_commit"),
        Err(Refusal::DeniedByPolicy("mcp__git__git_commit".into()))
    );
    assert!(matches!(
        admit(&b, &["*"], "mcp__fs__delete_file"),
        Err(Refusal::DeniedByPolicy(_))
    ));
}

#[test]
fn a_policy_allowlist_bounds_every_execution() {
    let b = broker(Some(&["mcp__time__*"]), &[]);
    assert_eq!(admit(&b, &["*"], "mcp__time__get_current_time"), Ok(()));
    assert_eq!(
        admit(&b, &["*"], "mcp__git__git_log"),
        Err(Refusal::OutsidePolicy("mcp__git__git_log".into()))
    );
    // The execution's own allowlist still applies inside the policy.
    assert!(matches!(
        admit(
            &b,
            &["mcp__time__convert_time"],
            "mcp__time__get_current_time"
        ),
        Err(Refusal::NotAllowed(_))
    ));
}

#[test]
fn a_glob_for_one_server_never_reaches_another() {
    // Servers `fx` and `fx__admin`: `mcp__fx__admin__echo` resolves to (fx__admin, echo).
    let b = broker(None, &[]);
    let fx = ["mcp__fx__*"];
    assert_eq!(admit_pair(&b, &fx, ("fx", "echo"), "mcp__fx__echo"), Ok(()));
    assert_eq!(
        admit_pair(&b, &fx, ("fx__admin", "echo"), "mcp__fx__admin__echo"),
        Err(Refusal::NotAllowed("mcp__fx__admin__echo".into()))
    );
    // The same holds for the server-wide policy, both ways.
    let b = broker(Some(&["mcp__fx__*"]), &[]);
    assert!(matches!(
        admit_pair(&b, &["*"], ("fx__admin", "echo"), "mcp__fx__admin__echo"),
        Err(Refusal::OutsidePolicy(_))
    ));
    let b = broker(None, &["mcp__fx__*"]);
    assert_eq!(
        admit_pair(&b, &["*"], ("fx__admin", "echo"), "mcp__fx__admin__echo"),
        Ok(())
    );
    assert!(matches!(
        admit_pair(&b, &["*"], ("fx", "echo"), "mcp__fx__echo"),
        Err(Refusal::DeniedByPolicy(_))
    ));
    let b = broker(None, &["mcp__fx__admin__*"]);
    assert_eq!(
        admit_pair(&b, &["*"], ("fx", "echo"), "mcp__fx__echo"),
        Ok(())
    );
    assert!(admit_pair(&b, &["*"], ("fx__admin", "echo"), "mcp__fx__admin__echo").is_err());
}

#[test]
fn the_host_call_budget_counts_every_call_then_stops() {
    let budget = HostCallBudget::new(2);
    assert_eq!(budget.spend(), Spent::Ok);
    assert_eq!(budget.spend(), Spent::Ok);
    for _ in 0..CALLS_AFTER_BUDGET {
        assert_eq!(budget.spend(), Spent::Refused(Refusal::QuotaExceeded(2)));
    }
    assert_eq!(budget.spend(), Spent::Stop(Refusal::QuotaExceeded(2)));
    assert_eq!(budget.used(), 2 + CALLS_AFTER_BUDGET + 1);
    let refusal = Refusal::QuotaExceeded(2).to_string();
    assert!(refusal.contains("limit of 2 host calls"), "{refusal}");
}

#[test]
fn argument_and_result_sizes_are_capped() {
    let b = broker(None, &[]);
    let allowlist = Allowlist::new(&strings(&["*"])).unwrap();
    let reach = Reach::execution(b.policy(), &allowlist);
    assert_eq!(b.admit(&reach, ("a", "b"), "mcp__a__b", 1024), Ok(()));
    assert!(matches!(
        b.admit(&reach, ("a", "b"), "mcp__a__b", 1025),
        Err(Refusal::ArgumentsTooLarge {
            bytes: 1025,
            limit: 1024,
            ..
        })
    ));
    assert_eq!(b.check_result("mcp__a__b", 2048), Ok(()));
    let refusal = b.check_result("mcp__a__b", 4096).unwrap_err();
    assert_eq!(refusal.code(), "result_size");
    assert!(refusal.to_string().contains("4096 bytes"), "{refusal}");
}

#[test]
fn rate_limits_name_the_scope_and_the_wait() {
    let clock = FakeRelativeClock::default();
    let limits = RateLimits::with_clock(RateQuotas::per_minute(100, 100, 3), clock.clone());
    for _ in 0..3 {
        assert_eq!(limits.check("s1", "git", "mcp__git__git_log"), Ok(()));
    }
    let refusal = limits.check("s1", "git", "mcp__git__git_log").unwrap_err();
    let Refusal::RateLimited {
        scope,
        key,
        per_minute,
        retry_after,
    } = &refusal
    else {
        panic!("{refusal:?}");
    };
    assert_eq!(
        (*scope, key.as_str(), *per_minute),
        (Scope::Tool, "mcp__git__git_log", 3)
    );
    // Three per minute: one token comes back every 20 s.
    assert_eq!(*retry_after, Duration::from_secs(20));
    assert!(
        refusal.to_string().contains("retry in 20000 ms"),
        "{refusal}"
    );
    // Another tool of the same server is not affected; time refills the bucket.
    assert_eq!(limits.check("s1", "git", "mcp__git__git_status"), Ok(()));
    clock.advance(Duration::from_secs(20));
    assert_eq!(limits.check("s1", "git", "mcp__git__git_log"), Ok(()));
}

#[test]
fn server_and_session_limits_apply_across_tools() {
    let clock = FakeRelativeClock::default();
    let limits = RateLimits::with_clock(RateQuotas::per_minute(100, 2, 100), clock.clone());
    assert_eq!(limits.check("s1", "git", "mcp__git__a"), Ok(()));
    assert_eq!(limits.check("s2", "git", "mcp__git__b"), Ok(()));
    assert!(matches!(
        limits.check("s3", "git", "mcp__git__c"),
        Err(Refusal::RateLimited {
            scope: Scope::Server,
            ..
        })
    ));
    assert_eq!(limits.check("s1", "time", "mcp__time__a"), Ok(()));

    let limits = RateLimits::with_clock(RateQuotas::per_minute(2, 100, 100), clock);
    assert_eq!(limits.check("s1", "git", "mcp__git__a"), Ok(()));
    assert_eq!(limits.check("s1", "time", "mcp__time__a"), Ok(()));
    assert!(matches!(
        limits.check("s1", "fs", "mcp__fs__a"),
        Err(Refusal::RateLimited {
            scope: Scope::Session,
            ..
        })
    ));
    // Another session has its own bucket.
    assert_eq!(limits.check("s2", "fs", "mcp__fs__a"), Ok(()));
}

fn schema(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn arguments_are_checked_against_the_schema_with_a_helpful_error() {
    let b = broker(None, &[]);
    let s = schema(json!({
        "type": "object",
        "properties": {
            "repo_path": {"type": "string"},
            "max_count": {"type": "integer", "minimum": 1}
        },
        "required": ["repo_path"],
        "additionalProperties": false
    }));
    let expected = || "git_log(args: { repo_path: string; max_count?: number })".to_string();
    assert_eq!(
        b.validate(
            "mcp__git__git_log",
            &s,
            &json!({"repo_path": "/r", "max_count": 3}),
            expected
        ),
        Ok(())
    );
    let refusal = b
        .validate(
            "mcp__git__git_log",
            &s,
            &json!({"max_count": "three", "colour": true}),
            expected,
        )
        .unwrap_err();
    assert_eq!(refusal.code(), "schema");
    let text = refusal.to_string();
    for needle in [
        "mcp__git__git_log",
        "repo_path",
        "/max_count",
        "integer",
        "colour",
        "expected: git_log(args: { repo_path: string; max_count?: number })",
        "given: { colour: boolean, max_count: string }",
        "was not sent",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn validators_follow_a_changed_schema() {
    let b = broker(None, &[]);
    let v1 = schema(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    let v2 = schema(json!({"type": "object", "properties": {"n": {"type": "string"}}}));
    let args = json!({"n": "x"});
    assert!(b.validate("mcp__a__t", &v1, &args, String::new).is_err());
    assert_eq!(b.validate("mcp__a__t", &v2, &args, String::new), Ok(()));
    assert!(b.validate("mcp__a__t", &v1, &args, String::new).is_err());
}

#[test]
fn remote_references_are_never_fetched() {
    let b = broker(None, &[]);
    let s = schema(json!({
        "type": "object",
        "properties": {"x": {"$ref": "http://169.254.169.254/latest/meta-data/schema.json"}}
    }));
    let refusal = b
        .validate("mcp__a__t", &s, &json!({"x": 1}), String::new)
        .unwrap_err();
    assert_eq!(refusal.code(), "unusable_schema", "{refusal}");
    // Local references work.
    let local = schema(json!({
        "type": "object",
        "$defs": {"n": {"type": "integer"}},
        "properties": {"x": {"$ref": "#/$defs/n"}}
    }));
    assert_eq!(
        b.validate("mcp__a__u", &local, &json!({"x": 1}), String::new),
        Ok(())
    );
    assert!(
        b.validate("mcp__a__u", &local, &json!({"x": "1"}), String::new)
            .is_err()
    );
}

#[test]
fn schemas_too_large_or_too_deep_are_not_compiled() {
    let b = broker(None, &[]);
    let mut deep = json!({"type": "string"});
    for _ in 0..schema::MAX_SCHEMA_DEPTH {
        deep = json!({"type": "array", "items": deep});
    }
    let s = schema(json!({"type": "object", "properties": {"x": deep}}));
    let refusal = b
        .validate("mcp__a__deep", &s, &json!({"x": []}), String::new)
        .unwrap_err();
    assert_eq!(refusal.code(), "unusable_schema", "{refusal}");
    assert!(
        refusal.to_string().contains("nested deeper than"),
        "{refusal}"
    );
    let props: Map<String, Value> = (0..20_000)
        .map(|i| (format!("property_number_{i}"), json!({"type": "string"})))
        .collect();
    let s = schema(json!({"type": "object", "properties": props}));
    let refusal = b
        .validate("mcp__a__big", &s, &json!({}), String::new)
        .unwrap_err();
    assert!(
        refusal.to_string().contains("over the limit of"),
        "{refusal}"
    );
    // A schema that refers to itself compiles and validates.
    let props: Map<String, Value> = (0..40)
        .map(|i| (format!("p{i}"), json!({"$ref": "#"})))
        .collect();
    let s = schema(json!({"type": "object", "properties": props}));
    assert_eq!(
        b.validate("mcp__a__rec", &s, &json!({"p0": {"p1": {}}}), String::new),
        Ok(())
    );
    assert!(
        b.validate("mcp__a__rec", &s, &json!({"p0": {"p1": 3}}), String::new)
            .is_err()
    );
}
