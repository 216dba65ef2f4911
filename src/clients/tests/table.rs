//! The client table agrees with itself: rows in precedence order, a row for every source,
//! `--client` ids as clap spells them, a registration target for every client and scope it
//! offers, a list for every client that `setup` switches off by list.

use super::*;
use crate::clients::table::{CLIENTS, Client, LISTS, Meaning, ROWS, Scope, SwitchOff, rows_of};

#[test]
fn rows_are_in_precedence_order_and_cover_every_source() {
    let kinds: Vec<SourceKind> = ROWS.iter().map(|r| r.kind).collect();
    let mut sorted = kinds.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(kinds, sorted, "one row per kind, lowest precedence first");
    assert_eq!(kinds.len(), 13);
    assert_eq!(kinds.last(), Some(&SourceKind::Explicit));
    for row in ROWS {
        assert_eq!(row.client.is_none(), row.files.is_empty(), "{:?}", row.kind);
        assert!(!row.servers.is_empty(), "{:?}", row.kind);
    }
}

#[test]
fn every_client_has_an_id_as_clap_spells_it() {
    use clap::ValueEnum;
    let ids: Vec<_> = CLIENTS.iter().map(|c| c.id).collect();
    let all: Vec<_> = Client::ALL.iter().map(|c| c.id()).collect();
    assert_eq!(ids, all);
    for c in Client::ALL {
        assert_eq!(c.to_possible_value().unwrap().get_name(), c.id());
        assert!(rows_of(c).count() >= 1, "{c:?}");
    }
}

#[test]
fn registration_targets() {
    for c in Client::ALL {
        for scope in [Scope::User, Scope::Project] {
            let targets = rows_of(c)
                .filter(|r| r.scope == scope && r.registers)
                .count();
            let expected = usize::from(!(c == Client::ClaudeDesktop && scope == Scope::Project));
            assert_eq!(targets, expected, "{c:?} {scope:?}");
        }
        let default = c.default_scope();
        assert!(
            rows_of(c).any(|r| r.scope == default && r.registers),
            "{c:?}"
        );
    }
}

#[test]
fn clients_switched_off_by_list_have_a_written_exclusion_list_for_every_file() {
    for info in CLIENTS {
        if info.switch_off != SwitchOff::List {
            continue;
        }
        for row in rows_of(info.client) {
            assert!(
                LISTS.iter().any(|l| l.client == info.client
                    && l.written
                    && l.meaning == Meaning::Excludes
                    && l.reaches(row.kind)),
                "{:?}",
                row.kind
            );
        }
    }
}

/// Replaces the guess from the file name (`.toml` → Codex, `.gemini/settings.json` → Gemini):
/// every row now declares its dialect, and each client's files are read in its own.
#[test]
fn every_row_declares_the_dialect_of_its_client() {
    use crate::clients::dialects::Dialect;
    use crate::clients::table::Format;
    for row in ROWS {
        let expected = match row.client {
            Some(Client::Codex) => Dialect::Codex,
            Some(Client::Gemini) => Dialect::Gemini,
            _ => Dialect::Standard,
        };
        assert_eq!(row.dialect, expected, "{:?}", row.kind);
        let format = if expected == Dialect::Codex {
            Format::Toml
        } else {
            Format::Jsonc
        };
        assert_eq!(row.format(), format, "{:?}", row.kind);
    }
}
