//! The tool catalogue: what the LLM and sandboxed code can learn about downstream tools.
//! `names` (how a tool is named and summarised), `search` (a ranked search over every
//! downstream tool), `signature` (TypeScript signatures and TypeScript and Python types from tools' JSON
//! Schemas)
//! and `suggest` (the names a name that resolves to nothing most likely meant) are pure logic
//! over `rmcp` tool lists; `directory` answers searches, schemas and the server list over the
//! live upstream pool.

pub mod directory;
mod names;
mod search;
mod signature;
mod suggest;

pub(crate) use names::{one_line, qualified_name};
pub(crate) use search::tokens;
pub use search::{CatalogEntry, SearchHit, search};
pub(crate) use signature::{python_type_of, signature, type_of};
