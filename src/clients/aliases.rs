//! One entry per server: the same server configured under several names (in several clients'
//! files, or twice in one) becomes one server with aliases. This module owns what "the same
//! server" means, which of its names is canonical, and the [`Aliases`] table every name lookup
//! goes through (the upstream pool, the broker's name patterns, the catalogue). It reads no
//! file and launches nothing.
//!
//! # Same server
//!
//! Two usable servers are the same when they launch the same way, every variable already
//! expanded (so `${HOME}/x` and `/home/ana/x` are one value): for stdio, the same `command`,
//! `args` (in order), `env` (the variables the entry sets, with their values) and `cwd`; for
//! streamable HTTP, the same `url` and `headers`. Anything else differing (one more argument,
//! another token) makes two servers.
//!
//! # The canonical name
//!
//! The shortest of the names, then the first in byte order: deterministic, independent of the
//! order files are read in, and unchanged when one more client configures the server under a
//! longer name (`git`, `git-server`, `mcp-git` → `git`). The others are aliases: every place a
//! server name is accepted accepts them, and listings show the server once, under its canonical
//! name, with its aliases.
//!
//! Only discovery's usable servers are folded: servers the project brings that wait for approval
//! stay separate (and unstartable) until approved, so approving nothing can ever be done by
//! aliasing; once approved they are folded like any other.

use std::collections::BTreeMap;

use super::spec::{ConfigSource, ServerSpec};

/// Another name of a server, and the file that gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    pub name: String,
    pub source: ConfigSource,
}

/// The aliases of every server: alias → canonical name, and canonical name → its aliases.
/// Never holds a server's launch details (so nothing printed from it can leak a secret).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aliases {
    canonical: BTreeMap<String, String>,
    by_server: BTreeMap<String, Vec<Alias>>,
}

impl Aliases {
    /// The canonical name of `name` (itself when it is not an alias).
    pub fn canonical<'a>(&'a self, name: &'a str) -> &'a str {
        self.canonical.get(name).map_or(name, String::as_str)
    }

    /// The aliases of the server `canonical`, sorted by name (empty for none).
    pub fn of(&self, canonical: &str) -> &[Alias] {
        self.by_server.get(canonical).map_or(&[], Vec::as_slice)
    }

    /// The alias names of the server `canonical`, sorted.
    pub fn names_of(&self, canonical: &str) -> Vec<String> {
        self.of(canonical).iter().map(|a| a.name.clone()).collect()
    }

    /// Every alias with its canonical name, sorted by alias.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.canonical.iter().map(|(a, c)| (a.as_str(), c.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.canonical.is_empty()
    }

    /// A table of `(alias, canonical)` pairs, for other modules' unit tests.
    #[cfg(test)]
    pub(crate) fn of_pairs(pairs: &[(&str, &str)]) -> Aliases {
        let mut aliases = Aliases::default();
        for (alias, canonical) in pairs {
            let source = ConfigSource::test();
            let name = alias.to_string();
            aliases.add(canonical, Alias { name, source });
        }
        aliases
    }

    fn add(&mut self, canonical: &str, alias: Alias) {
        self.canonical
            .insert(alias.name.clone(), canonical.to_owned());
        let list = self.by_server.entry(canonical.to_owned()).or_default();
        list.push(alias);
        list.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// Whether `a` sorts before `b` as a canonical name: shorter first, then byte order.
fn better(a: &str, b: &str) -> bool {
    (a.len(), a) < (b.len(), b)
}

/// Folds `servers` that launch the same way into one, under the canonical name (see the module
/// docs), and returns the other names. The servers stay sorted by name.
pub(crate) fn fold(all: &mut Vec<ServerSpec>) -> Aliases {
    let servers = std::mem::take(all);
    // Groups of the same server, in the order their first member appears.
    let mut groups: Vec<Vec<ServerSpec>> = Vec::new();
    for spec in servers {
        match groups.iter_mut().find(|g| g[0].transport == spec.transport) {
            Some(group) => group.push(spec),
            None => groups.push(vec![spec]),
        }
    }
    let mut aliases = Aliases::default();
    for mut group in groups {
        let best = (0..group.len())
            .reduce(|i, j| {
                if better(&group[j].name, &group[i].name) {
                    j
                } else {
                    i
                }
            })
            .unwrap_or(0);
        let canonical = group.swap_remove(best);
        for other in group {
            aliases.add(
                &canonical.name,
                Alias {
                    name: other.name,
                    source: other.source,
                },
            );
        }
        all.push(canonical);
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    aliases
}
