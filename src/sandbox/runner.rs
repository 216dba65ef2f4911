//! The JavaScript of a worker process, in two parts, each written as numbered plain scripts
//! (`00_private.js` ... `99_main.js`, laid out like Deno's own `runtime/js`) joined here in
//! name order into one source:
//! - the supervisor (`supervisor/`): the process's main module, handed to Deno as one `data:`
//!   URL (`super::launch::supervisor_url`). It starts the execution isolates and routes their
//!   messages to the host.
//! - the isolate runner (`runner/`): what runs in every execution isolate, given to the
//!   supervisor on the process's standard input (`super::host`), evaluated in each isolate as
//!   one function body.
//!
//! The pieces of one part share one scope: none of them may have imports or exports (see the
//! opening comment of each part's `00_private.js`). The tokenizer, source preparation and
//! sandbox-limits pieces of the runner have their own tests in `tests/runner/` (run with the
//! project's Deno by `scripts/test`).

/// The isolate runner: every piece of `runner/`, in name order.
pub(crate) const ISOLATE_SOURCE: &str = concat!(
    include_str!("runner/00_private.js"),
    include_str!("runner/01_protocol.js"),
    include_str!("runner/02_helpers.js"),
    include_str!("runner/03_intrinsics.js"),
    include_str!("runner/10_console.js"),
    include_str!("runner/20_host_calls.js"),
    include_str!("runner/21_workspace.js"),
    include_str!("runner/30_tokenizer.js"),
    include_str!("runner/31_typescript.js"),
    include_str!("runner/32_imports.js"),
    include_str!("runner/40_values.js"),
    include_str!("runner/41_limits.js"),
    include_str!("runner/50_execute.js"),
    include_str!("runner/51_contexts.js"),
    include_str!("runner/52_context_modules.js"),
    include_str!("runner/55_wrappers.js"),
    include_str!("runner/56_skills.js"),
    include_str!("runner/60_python.js"),
    include_str!("runner/61_snapshot_file.js"),
    include_str!("runner/62_python_runtime.js"),
    include_str!("runner/63_python_lane.js"),
    include_str!("runner/64_python_memory.js"),
    include_str!("runner/70_dispatch.js"),
    include_str!("runner/90_globals.js"),
    include_str!("runner/99_main.js"),
);

/// The supervisor: every piece of `supervisor/`, in name order.
pub(crate) const SUPERVISOR_SOURCE: &str = concat!(
    include_str!("supervisor/00_private.js"),
    include_str!("supervisor/10_host.js"),
    include_str!("supervisor/20_isolates.js"),
    include_str!("supervisor/30_python.js"),
    include_str!("supervisor/40_threads.js"),
    include_str!("supervisor/99_main.js"),
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.js` files of `dir` (under src/sandbox/), sorted by name, with their text.
    fn pieces(dir: &str) -> Vec<(String, String)> {
        let dir = format!("{}/src/sandbox/{dir}", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("the pieces' directory")
            .map(|entry| entry.expect("a directory entry").file_name())
            .map(|name| name.into_string().expect("a UTF-8 file name"))
            .filter(|name| name.ends_with(".js"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let text = std::fs::read_to_string(format!("{dir}/{name}")).expect("a piece");
                (name, text)
            })
            .collect()
    }

    #[test]
    fn each_source_is_every_piece_in_name_order() {
        for (dir, source) in [
            ("runner", ISOLATE_SOURCE),
            ("supervisor", SUPERVISOR_SOURCE),
        ] {
            let pieces = pieces(dir);
            assert!(pieces.len() > 1, "no pieces found in {dir}");
            let joined: String = pieces.iter().map(|(_, text)| text.as_str()).collect();
            // Not assert_eq!: a failure would print two copies of the whole source.
            assert!(
                source == joined,
                "the source must list every .js file of src/sandbox/{dir}/, in name order: {:?}",
                pieces.iter().map(|(name, _)| name).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn every_piece_is_numbered_and_ends_with_a_line_break() {
        for (name, text) in pieces("runner").into_iter().chain(pieces("supervisor")) {
            let number = name.split('_').next().unwrap_or("");
            assert!(
                number.len() == 2 && number.bytes().all(|b| b.is_ascii_digit()),
                "{name}: pieces are named NN_name.js"
            );
            // Otherwise its last line would run into the next piece's first.
            assert!(text.ends_with('\n'), "{name} must end with a line break");
        }
    }
}
