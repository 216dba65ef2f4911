//! Cutting text on character boundaries: the longest prefix or suffix of a string within a
//! number of bytes (output caps, reply budgets, recorded names, diagnostics).

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
}
