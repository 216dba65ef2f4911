//! What every new worker process starts from: [`Prepared`], the verified output of the trusted
//! preparation run (see [`super::snapshot`]: the Pyodide memory snapshot Python isolates start
//! from), held in a [`PreparedSlot`] while it is usable. A module of its own so that `launch`
//! (which reads the slot) and `snapshot` (which fills it, and launches its run) do not import
//! each other.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// What the trusted preparation run made, verified.
#[derive(Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The Pyodide memory snapshot Python isolates start from.
    pub snapshot: PathBuf,
}

/// What worker processes currently start from, shared by every clone of a config.
#[derive(Debug, Clone, Default)]
pub struct PreparedSlot(Arc<RwLock<Option<Arc<Prepared>>>>);

impl PreparedSlot {
    pub(crate) fn get(&self) -> Option<Arc<Prepared>> {
        self.0.read().expect("prepared slot lock").clone()
    }

    pub(crate) fn set(&self, prepared: Prepared) {
        *self.0.write().expect("prepared slot lock") = Some(Arc::new(prepared));
    }

    /// Stops using the snapshot (Python then starts the slow way, but still starts).
    pub(crate) fn discard(&self) {
        *self.0.write().expect("prepared slot lock") = None;
    }
}
