//! The worker runner: the JavaScript bootstrap of every sandboxed Deno worker. It is written as
//! the numbered plain scripts of `runner/` (`00_private.js` ... `99_main.js`, laid out like
//! Deno's own `runtime/js`), joined here in name order into one source that the host hands to
//! Deno as one `data:` URL (`super::launch::runner_url`). The pieces share one scope: none of
//! them may have imports or exports (see the opening comment of `runner/00_private.js`). The
//! tokenizer and source preparation pieces have their own tests in `tests/runner/` (run with the
//! project's Deno by `scripts/test`).

/// The whole runner: every piece of `runner/`, in name order.
pub(crate) const SOURCE: &str = concat!(
    include_str!("runner/00_private.js"),
    include_str!("runner/01_protocol.js"),
    include_str!("runner/02_helpers.js"),
    include_str!("runner/10_console.js"),
    include_str!("runner/20_host_calls.js"),
    include_str!("runner/30_tokenizer.js"),
    include_str!("runner/31_typescript.js"),
    include_str!("runner/40_values.js"),
    include_str!("runner/50_execute.js"),
    include_str!("runner/55_wrappers.js"),
    include_str!("runner/60_python.js"),
    include_str!("runner/61_snapshot_file.js"),
    include_str!("runner/62_python_runtime.js"),
    include_str!("runner/70_dispatch.js"),
    include_str!("runner/90_globals.js"),
    include_str!("runner/99_main.js"),
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.js` files of `runner/`, sorted by name, with their text.
    fn pieces() -> Vec<(String, String)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sandbox/runner");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("the runner directory")
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
    fn the_source_is_every_piece_in_name_order() {
        let pieces = pieces();
        assert!(pieces.len() > 1, "no pieces found");
        let joined: String = pieces.iter().map(|(_, text)| text.as_str()).collect();
        // Not assert_eq!: a failure would print two copies of the whole runner.
        assert!(
            SOURCE == joined,
            "SOURCE must list every .js file of src/sandbox/runner/, in name order: {:?}",
            pieces.iter().map(|(name, _)| name).collect::<Vec<_>>()
        );
    }

    #[test]
    fn every_piece_is_numbered_and_ends_with_a_line_break() {
        for (name, text) in pieces() {
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
