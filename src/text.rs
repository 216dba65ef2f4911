//! Text helpers: cutting text on character boundaries (the longest prefix or suffix of a string
//! within a number of bytes, for output caps, reply budgets, recorded names, diagnostics; a string
//! within a number of characters, for what a look-up shows), and text made fit for an LLM's
//! context (`for_llm`: no control or bidirectional formatting characters).

use std::borrow::Cow;

/// The longest prefix of `s` of at most `max` bytes.
pub(crate) fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest suffix of `s` of at most `max` bytes.
pub(crate) fn suffix(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Whether `c` is kept out of text meant for an LLM: C0 controls but line feed and tab, DEL, C1
/// controls, and the bidirectional embeddings, overrides and isolates (U+202A..=U+202E,
/// U+2066..=U+2069), which move or hide text in a terminal or a reader's view.
fn unfit_for_llm(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `s` without the characters [`unfit_for_llm`]: for any text an LLM reads that code or a
/// downstream server wrote (skills' descriptions and signatures, tools' descriptions).
pub(crate) fn for_llm(s: &str) -> Cow<'_, str> {
    if s.chars().any(unfit_for_llm) {
        Cow::Owned(s.chars().filter(|&c| !unfit_for_llm(c)).collect())
    } else {
        Cow::Borrowed(s)
    }
}

/// `s` cut to at most `max` characters, the last one `…` when it was cut.
pub(crate) fn clip_chars(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some(_) => {
            let cut: String = s.chars().take(max.saturating_sub(1)).collect();
            Cow::Owned(format!("{}…", cut.trim_end()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_character_boundaries() {
        assert_eq!(prefix("aé€", 4), "aé");
        assert_eq!(prefix("abc", 10), "abc");
        assert_eq!(suffix("aé€", 4), "€");
        assert_eq!(suffix("aé€", 5), "é€");
        assert_eq!(suffix("abc", 10), "abc");
    }

    #[test]
    fn text_for_an_llm_keeps_no_control_or_bidi_formatting() {
        let raw = "a\u{1b}[2Jb\u{7}c\td\ne\r\u{7f}\u{85}f\u{202e}g\u{2066}h\u{2069}é€";
        assert_eq!(for_llm(raw), "a[2Jbc\td\nefghé€");
        assert!(matches!(
            for_llm("plain text\n\tindented"),
            Cow::Borrowed(_)
        ));
        // Marks that do not reorder text stay (U+200E), and so do other scripts.
        assert_eq!(for_llm("a\u{200e}b שלום"), "a\u{200e}b שלום");
    }

    #[test]
    fn clipping_counts_characters() {
        assert_eq!(clip_chars("abcdef", 6), "abcdef");
        assert_eq!(clip_chars("abcdef", 4), "abc…");
        assert_eq!(clip_chars("éééé", 3), "éé…");
        assert_eq!(clip_chars("ab  cd", 4), "ab…");
    }
}
