//! `${...}` expansion: every syntax the clients accept, unset and malformed variables, nesting.

use std::collections::BTreeMap;

use crate::clients::expand::{ExpandError, MAX_NESTING, Vars, expand};

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn run(input: &str, pairs: &[(&str, &str)]) -> Result<String, ExpandError> {
    let env = env(pairs);
    let vars = Vars {
        env: &env,
        workspace_folder: Some("/home/ana/proj"),
        user_home: Some("/home/ana"),
    };
    expand(input, &vars)
}

fn ok(input: &str, pairs: &[(&str, &str)]) -> String {
    run(input, pairs).unwrap_or_else(|e| panic!("{input:?} failed: {e}"))
}

fn unset(names: &[&str]) -> ExpandError {
    ExpandError::Unset {
        names: names.iter().map(|n| (*n).to_owned()).collect(),
    }
}

#[test]
fn text_without_expressions_is_unchanged() {
    assert_eq!(ok("", &[]), "");
    assert_eq!(ok("plain text", &[]), "plain text");
    assert_eq!(ok("--port=8080", &[]), "--port=8080");
}

#[test]
fn dollar_without_braces_is_left_alone() {
    let e = [("HOME", "/h")];
    assert_eq!(ok("$HOME/bin", &e), "$HOME/bin");
    assert_eq!(ok("cost: 5$", &e), "cost: 5$");
    assert_eq!(ok("$", &e), "$");
    assert_eq!(ok("$$", &e), "$$");
    assert_eq!(ok("a$b$c", &e), "a$b$c");
    assert_eq!(ok("$ {HOME}", &e), "$ {HOME}");
    assert_eq!(ok("{HOME}", &e), "{HOME}");
    assert_eq!(ok("}{", &e), "}{");
}

#[test]
fn no_dollar_dollar_escape() {
    // `$$` is not special: the second `$` still starts an expression.
    assert_eq!(ok("$${HOME}", &[("HOME", "/h")]), "$/h");
}

#[test]
fn simple_variables() {
    let e = [("HOME", "/home/ana"), ("TOKEN", "s3cr3t")];
    assert_eq!(ok("${HOME}", &e), "/home/ana");
    assert_eq!(ok("${HOME}/.cache", &e), "/home/ana/.cache");
    assert_eq!(ok("Bearer ${TOKEN}", &e), "Bearer s3cr3t");
    assert_eq!(ok("${HOME}${TOKEN}", &e), "/home/anas3cr3t");
    assert_eq!(ok("${TOKEN}-${TOKEN}", &e), "s3cr3t-s3cr3t");
}

#[test]
fn set_but_empty_variable_expands_to_empty() {
    assert_eq!(ok("[${EMPTY}]", &[("EMPTY", "")]), "[]");
}

#[test]
fn unset_variable_is_an_error_naming_it() {
    let err = run("--token=${GITHUB_TOKEN}", &[]).unwrap_err();
    assert_eq!(err, unset(&["GITHUB_TOKEN"]));
    assert_eq!(
        err.to_string(),
        "environment variable `GITHUB_TOKEN` is not set"
    );
}

#[test]
fn all_unset_variables_are_reported_once_in_order() {
    let err = run("${B} ${A} ${B} ${env:C} ${SET}", &[("SET", "x")]).unwrap_err();
    assert_eq!(err, unset(&["B", "A", "C"]));
    assert_eq!(
        err.to_string(),
        "environment variables `B`, `A`, `C` are not set"
    );
}

#[test]
fn variable_names_are_case_sensitive() {
    assert_eq!(run("${home}", &[("HOME", "/h")]), Err(unset(&["home"])));
}

#[test]
fn defaults() {
    let e = [("SET", "value"), ("EMPTY", "")];
    assert_eq!(ok("${UNSET:-fallback}", &e), "fallback");
    assert_eq!(ok("${SET:-fallback}", &e), "value");
    // POSIX `:-`: an empty value also takes the default.
    assert_eq!(ok("${EMPTY:-fallback}", &e), "fallback");
    assert_eq!(
        ok("http://${HOST:-localhost}:${PORT:-8080}/mcp", &e),
        "http://localhost:8080/mcp"
    );
}

#[test]
fn empty_default() {
    assert_eq!(ok("[${UNSET:-}]", &[]), "[]");
    assert_eq!(ok("[${SET:-}]", &[("SET", "v")]), "[v]");
}

#[test]
fn default_containing_colon_dash() {
    assert_eq!(ok("${UNSET:-a:-b}", &[]), "a:-b");
    assert_eq!(ok("${UNSET:-:-}", &[]), ":-");
    assert_eq!(ok("${UNSET:-http://h:-1/}", &[]), "http://h:-1/");
}

#[test]
fn default_containing_other_punctuation() {
    assert_eq!(ok("${U:-/default/path}", &[]), "/default/path");
    assert_eq!(ok("${U:-a:b}", &[]), "a:b");
    assert_eq!(ok("${U:- spaced out }", &[]), " spaced out ");
    assert_eq!(ok("${U:-$HOME}", &[("HOME", "/h")]), "$HOME");
    assert_eq!(ok("${U:-$}", &[]), "$");
}

#[test]
fn nested_default_is_expanded() {
    let e = [("B", "bee")];
    assert_eq!(ok("${A:-${B}}", &e), "bee");
    assert_eq!(ok("${A:-x${B}y}", &e), "xbeey");
    assert_eq!(ok("${A:-${C:-${B}}}", &e), "bee");
    assert_eq!(ok("${A:-${C:-${D:-deep}}}", &e), "deep");
    assert_eq!(ok("${A:-${C:-}}", &e), "");
}

#[test]
fn nested_default_is_lazy() {
    // B is unset, but A is set, so the default is never looked at.
    assert_eq!(ok("${A:-${B}}", &[("A", "a")]), "a");
    assert_eq!(ok("${A:-${input:x}}", &[("A", "a")]), "a");
}

#[test]
fn nested_default_reports_inner_unset_variable() {
    assert_eq!(run("${A:-${B}}", &[]), Err(unset(&["B"])));
    assert_eq!(run("${A:-${B}} ${C}", &[]), Err(unset(&["B", "C"])));
}

#[test]
fn braces_in_default_are_balanced() {
    assert_eq!(ok("${U:-{x}}", &[]), "{x}");
    assert_eq!(ok("${U:-{\"a\":{}}}", &[]), "{\"a\":{}}");
    assert_eq!(ok("${U:-{x}}tail", &[]), "{x}tail");
}

#[test]
fn nesting_limit() {
    let mut deep = String::from("end");
    for _ in 0..MAX_NESTING {
        deep = format!("${{U:-{deep}}}");
    }
    assert_eq!(ok(&deep, &[]), "end");
    let too_deep = format!("${{U:-{deep}}}");
    assert_eq!(run(&too_deep, &[]), Err(ExpandError::TooDeep));
}

#[test]
fn values_are_not_expanded_again() {
    let e = [("A", "${B}"), ("B", "bee")];
    assert_eq!(ok("${A}", &e), "${B}");
    assert_eq!(ok("${U:-${A}}", &e), "${B}");
}

#[test]
fn unterminated_expression_is_an_error() {
    assert_eq!(run("${", &[]), Err(ExpandError::Unterminated { at: 1 }));
    assert_eq!(
        run("abc${HOME", &[]),
        Err(ExpandError::Unterminated { at: 4 })
    );
    assert_eq!(
        run("${A:-${B}", &[]),
        Err(ExpandError::Unterminated { at: 1 })
    );
    assert_eq!(
        run("${A:-{x}", &[]),
        Err(ExpandError::Unterminated { at: 1 })
    );
    assert_eq!(
        run("${HOME} ${", &[("HOME", "/h")]),
        Err(ExpandError::Unterminated { at: 9 })
    );
    assert_eq!(
        run("x${A:-${B:-y}", &[]),
        Err(ExpandError::Unterminated { at: 2 })
    );
    assert_eq!(
        ExpandError::Unterminated { at: 4 }.to_string(),
        "unterminated \"${\" at character 4"
    );
}

#[test]
fn empty_names_are_errors() {
    assert_eq!(run("${}", &[]), Err(ExpandError::EmptyName { at: 1 }));
    assert_eq!(run("ab${:-x}", &[]), Err(ExpandError::EmptyName { at: 3 }));
    assert_eq!(run("${env:}", &[]), Err(ExpandError::EmptyName { at: 1 }));
    assert_eq!(run("${U:-${}}", &[]), Err(ExpandError::EmptyName { at: 6 }));
}

#[test]
fn malformed_names_are_errors() {
    assert_eq!(
        run("${A B}", &[]),
        Err(ExpandError::InvalidName {
            name: "A B".into(),
            at: 1
        })
    );
    assert_eq!(
        run("${A{B}}", &[]),
        Err(ExpandError::InvalidName {
            name: "A{B}".into(),
            at: 1
        })
    );
    assert_eq!(
        run("${${A}}", &[]),
        Err(ExpandError::InvalidName {
            name: "${A}".into(),
            at: 1
        })
    );
    assert_eq!(
        run("${ HOME }", &[("HOME", "/h")]),
        Err(ExpandError::InvalidName {
            name: " HOME ".into(),
            at: 1
        })
    );
}

#[test]
fn env_prefix() {
    let e = [("API_KEY", "k"), ("env", "not this")];
    assert_eq!(ok("${env:API_KEY}", &e), "k");
    assert_eq!(ok("key=${env:API_KEY};", &e), "key=k;");
    assert_eq!(run("${env:MISSING}", &e), Err(unset(&["MISSING"])));
    assert_eq!(ok("${env:MISSING:-d}", &e), "d");
    // `env:` reads only the environment, never the built-ins.
    assert_eq!(
        run("${env:workspaceFolder}", &e),
        Err(unset(&["workspaceFolder"]))
    );
    // A plain variable that happens to be called `env`.
    assert_eq!(ok("${env}", &e), "not this");
    assert_eq!(ok("${env:-d}", &e), "not this");
}

#[test]
fn builtins() {
    let e = [("workspaceFolder", "/from/env")];
    assert_eq!(ok("${workspaceFolder}", &e), "/home/ana/proj");
    assert_eq!(
        ok("${workspaceFolder}/src/server.js", &e),
        "/home/ana/proj/src/server.js"
    );
    assert_eq!(ok("${workspaceFolderBasename}", &e), "proj");
    assert_eq!(ok("${userHome}/.config", &e), "/home/ana/.config");
    assert_eq!(ok("a${pathSeparator}b${/}c", &e), "a/b/c");
    assert_eq!(ok("${workspaceFolder:-x}", &e), "/home/ana/proj");
}

#[test]
fn builtins_fall_back_to_env_when_not_provided() {
    let env = env(&[("workspaceFolder", "/from/env")]);
    let vars = Vars {
        env: &env,
        workspace_folder: None,
        user_home: None,
    };
    assert_eq!(expand("${workspaceFolder}", &vars).unwrap(), "/from/env");
    assert_eq!(expand("${userHome}", &vars), Err(unset(&["userHome"])));
    assert_eq!(
        expand("${workspaceFolderBasename:-none}", &vars).unwrap(),
        "none"
    );
}

#[test]
fn workspace_basename_ignores_trailing_separator() {
    let env = BTreeMap::new();
    let vars = Vars {
        env: &env,
        workspace_folder: Some("/srv/app/"),
        user_home: None,
    };
    assert_eq!(expand("${workspaceFolderBasename}", &vars).unwrap(), "app");
}

#[test]
fn input_variables_cannot_be_resolved() {
    let err = run("${input:github-token}", &[]).unwrap_err();
    assert_eq!(
        err,
        ExpandError::Input {
            id: "github-token".into()
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("${input:github-token}"), "{msg}");
    assert!(msg.contains("${env:NAME}"), "{msg}");
    // Even with a default: VS Code has no such syntax.
    assert!(matches!(
        run("${input:x:-d}", &[]),
        Err(ExpandError::Input { .. })
    ));
}

#[test]
fn other_prefixes_are_unsupported() {
    for expr in [
        "config:editor.fontSize",
        "command:pickFile",
        "workspaceFolder:other",
        "file:x",
    ] {
        let err = run(&format!("${{{expr}}}"), &[]).unwrap_err();
        assert_eq!(
            err,
            ExpandError::Unsupported {
                expr: expr.to_owned()
            }
        );
        assert!(err.to_string().contains(&format!("${{{expr}}}")));
    }
}

#[test]
fn first_syntax_error_wins_over_unset_names() {
    assert_eq!(
        run("${A} ${input:x}", &[]),
        Err(ExpandError::Input { id: "x".into() })
    );
}

#[test]
fn unicode_text_values_and_names() {
    let e = [("GRÜSSE", "grüß gott 👋"), ("Ω", "омега")];
    assert_eq!(ok("→ ${GRÜSSE} ←", &e), "→ grüß gott 👋 ←");
    assert_eq!(ok("${Ω}/${UNSET:-日本語}", &e), "омега/日本語");
    assert_eq!(ok("😀${U:-{ü}}😀", &e), "😀{ü}😀");
    assert_eq!(run("${ДРУГОЕ}", &e), Err(unset(&["ДРУГОЕ"])));
}

#[test]
fn positions_count_characters_not_bytes() {
    assert_eq!(run("ééé${", &[]), Err(ExpandError::Unterminated { at: 4 }));
    assert_eq!(run("👋${}", &[]), Err(ExpandError::EmptyName { at: 2 }));
    assert_eq!(
        run("ü${U:-ö${}}", &[]),
        Err(ExpandError::EmptyName { at: 8 })
    );
}

#[test]
fn messages_do_not_echo_the_input() {
    let secret = "sk-live-12345";
    let errors = [
        run(&format!("{secret}${{"), &[]).unwrap_err(),
        run(&format!("{secret}${{}}"), &[]).unwrap_err(),
        run(&format!("{secret}${{U}}"), &[]).unwrap_err(),
    ];
    for err in errors {
        assert!(!err.to_string().contains(secret), "{err}");
    }
}
