//! Property tests of the detectors: generated card numbers (several networks and lengths,
//! spaced, dashed or not), phone numbers (libphonenumber's example numbers of many regions,
//! their last digits varied, printed E.164, international and, for the regions read
//! nationally, national) and IBANs (several countries, check digits computed), put in random
//! text with other numbers right next to them (dates, expiry dates, CVVs, street numbers,
//! SSNs, other values, punctuation), are found with exactly their span.
//!
//! A value with a neighbour is ambiguous when another reading overlapping it is itself a
//! value (`4111 1111 1111 1111 123` where the 19 digits also pass Luhn; `1 650-253-0000`
//! after a street number `1`): text cannot say which was meant. For those the property is
//! weaker: something overlapping the value is found (the value is not left whole in clear).

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::super::detect::find;
use crate::config::settings::PiiKind;

/// Cases per kind.
const CASES: u32 = 2000;

/// The networks generated: the range of first digits, and lengths.
const NETWORKS: [(u32, u32, &[usize]); 11] = [
    (4, 4, &[13, 16, 19]),
    (51, 55, &[16]),
    (2221, 2720, &[16]),
    (34, 34, &[15]),
    (37, 37, &[15]),
    (6011, 6011, &[16, 19]),
    (65, 65, &[16]),
    (3528, 3589, &[16]),
    (62, 62, &[16, 17, 18, 19]),
    (36, 36, &[14]),
    (300, 305, &[14]),
];

/// The Luhn check digit that completes `body`.
fn luhn_digit(body: &[u8]) -> u8 {
    let sum: u32 = body
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 0 {
                let twice = d * 2;
                if twice > 9 { twice - 9 } else { twice }
            } else {
                d
            }
        })
        .sum();
    ((10 - sum % 10) % 10) as u8
}

/// Digits printed in groups of these lengths, joined by `sep`.
fn grouped(digits: &str, lengths: &[usize], sep: &str) -> String {
    let mut out = Vec::new();
    let mut at = 0;
    for &l in lengths {
        if at >= digits.len() {
            break;
        }
        let end = (at + l).min(digits.len());
        out.push(&digits[at..end]);
        at = end;
    }
    if at < digits.len() {
        out.push(&digits[at..]);
    }
    out.join(sep)
}

fn card() -> impl Strategy<Value = String> {
    (
        0..NETWORKS.len(),
        any::<prop::sample::Index>(),
        any::<u32>(),
        vec(0u8..10, 19),
        0..3usize,
    )
        .prop_map(|(network, length, prefix, body, style)| {
            let (low, high, lengths) = NETWORKS[network];
            let length = *length.get(lengths);
            let prefix = (low + prefix % (high - low + 1)).to_string();
            let mut digits: Vec<u8> = prefix.bytes().map(|b| b - b'0').collect();
            digits.extend(&body[..length - 1 - digits.len()]);
            digits.push(luhn_digit(&digits));
            let number: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
            let groups: &[usize] = match length {
                15 => &[4, 6, 5],
                14 => &[4, 6, 4],
                _ => &[4, 4, 4, 4, 4],
            };
            match style {
                0 => number,
                1 => grouped(&number, groups, " "),
                _ => grouped(&number, groups, "-"),
            }
        })
}

/// Regions whose example numbers are generated; the first two are also read nationally.
const REGIONS: [&str; 24] = [
    "US", "GB", "DE", "FR", "ES", "IT", "NL", "BE", "CH", "AT", "SE", "NO", "DK", "PL", "IE", "PT",
    "AU", "JP", "IN", "BR", "MX", "CA", "ZA", "SG",
];

fn phone() -> impl Strategy<Value = String> {
    (
        0..REGIONS.len(),
        any::<bool>(),
        vec(0u8..10, 3),
        0..=3usize,
        0..3usize,
    )
        .prop_filter_map("a valid number", |(region, mobile, tail, varied, mode)| {
            let meta = phonenumber::metadata::DATABASE.by_id(REGIONS[region])?;
            let descriptors = meta.descriptors();
            let kind = if mobile {
                descriptors.mobile()
            } else {
                descriptors.fixed_line()
            };
            let example = kind?.example()?;
            let keep = example.len() - varied;
            let varied: String = tail[..varied]
                .iter()
                .map(|d| char::from(b'0' + d))
                .collect();
            let national = format!("+{}{}{varied}", meta.country_code(), &example[..keep]);
            let number = phonenumber::parse(None, &national).ok()?;
            if !phonenumber::is_valid(&number) {
                return None;
            }
            let mode = match mode {
                0 => phonenumber::Mode::E164,
                2 if region < 2 => phonenumber::Mode::National,
                _ => phonenumber::Mode::International,
            };
            Some(number.format().mode(mode).to_string())
        })
}

/// IBAN countries and their BBAN layout (the IBAN registry's): runs of `n` digits, `a`
/// capitals, `c` either.
const IBAN_LAYOUTS: [(&str, &[(usize, u8)]); 12] = [
    ("DE", &[(18, b'n')]),
    ("GB", &[(4, b'a'), (14, b'n')]),
    ("FR", &[(10, b'n'), (11, b'c'), (2, b'n')]),
    ("ES", &[(20, b'n')]),
    ("IT", &[(1, b'a'), (10, b'n'), (12, b'c')]),
    ("NL", &[(4, b'a'), (10, b'n')]),
    ("CH", &[(5, b'n'), (12, b'c')]),
    ("AT", &[(16, b'n')]),
    ("PL", &[(24, b'n')]),
    ("IE", &[(4, b'a'), (14, b'n')]),
    ("SE", &[(20, b'n')]),
    ("NO", &[(11, b'n')]),
];

/// The ISO 7064 MOD 97-10 check digits of an IBAN with this country and BBAN.
fn iban_check(country: &str, bban: &str) -> u32 {
    let moved = format!("{bban}{country}00");
    let rest = moved.chars().fold(0u32, |rest, c| {
        let value = c.to_digit(36).expect("alphanumeric");
        if value < 10 {
            (rest * 10 + value) % 97
        } else {
            (rest * 100 + value) % 97
        }
    });
    98 - rest
}

fn iban() -> impl Strategy<Value = String> {
    (0..IBAN_LAYOUTS.len(), vec(any::<u8>(), 30), any::<bool>()).prop_map(
        |(country, random, spaced)| {
            let (country, layout) = IBAN_LAYOUTS[country];
            const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
            const BOTH: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            let classes = layout
                .iter()
                .flat_map(|&(count, class)| std::iter::repeat_n(class, count));
            let bban: String = classes
                .zip(&random)
                .map(|(class, r)| {
                    let r = usize::from(*r);
                    char::from(match class {
                        b'n' => b'0' + (r % 10) as u8,
                        b'a' => LETTERS[r % LETTERS.len()],
                        _ => BOTH[r % BOTH.len()],
                    })
                })
                .collect();
            let compact = format!("{country}{:02}{bban}", iban_check(country, &bban));
            if spaced {
                grouped(&compact, &[4; 9], " ")
            } else {
                compact
            }
        },
    )
}

/// What stands next to a value: words, numbers of every kind, other values, punctuation.
const NEIGHBOURS: [&str; 30] = [
    "Ada",
    "paid",
    "tel:",
    "card",
    "ref",
    "12",
    "123",
    "7",
    "1",
    "221B",
    "12/28",
    "12/28 123",
    "2024-01-15",
    "15.01.2024",
    "10:30",
    "123-45-6789",
    "1999",
    "42",
    "(",
    ")",
    "!",
    "#12",
    "€12.50",
    "4111 1111 1111 1111",
    "5555555555554444",
    "+44 20 7946 0958",
    "(650) 253-0000",
    "DE89 3704 0044 0532 0130 00",
    "ada@example.com",
    "203.0.113.7",
];

/// Between a value and its neighbours: at least one character that is not a letter or a
/// digit, never a bare `.` or `,` before digits (a decimal number).
const SEPARATORS: [&str; 12] = [
    " ", ", ", "; ", " / ", " - ", ": ", "\n", "\t", " | ", "-", "  ", " (",
];

/// A text with `value` in it: its span, and the text.
fn in_context(value: String) -> impl Strategy<Value = (String, usize, usize)> {
    (
        vec((0..NEIGHBOURS.len(), 0..SEPARATORS.len()), 0..4),
        vec((0..SEPARATORS.len(), 0..NEIGHBOURS.len()), 0..4),
    )
        .prop_map(move |(before, after)| {
            let mut text = String::new();
            for (n, s) in before {
                text.push_str(NEIGHBOURS[n]);
                text.push_str(SEPARATORS[s]);
            }
            let start = text.len();
            text.push_str(&value);
            let end = text.len();
            for (s, n) in after {
                text.push_str(SEPARATORS[s]);
                text.push_str(NEIGHBOURS[n]);
            }
            (text, start, end)
        })
}

/// Whether another reading overlapping `start..end` (a run of whole words and numbers, with
/// the `+` or `(` before it, not inside the value) is by itself a value of some kind.
fn ambiguous(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_alphanumeric() {
            let s = i;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            words.push((s, i));
        } else {
            i += 1;
        }
    }
    for (a, &(s, _)) in words.iter().enumerate() {
        for &(_, e) in &words[a..] {
            if e - s > 48 {
                break;
            }
            let overlaps = s < end && e > start;
            let inside = s >= start && e <= end;
            if !overlaps || inside || (s, e) == (start, end) {
                continue;
            }
            let mut starts = vec![s];
            if s > 0 && matches!(bytes[s - 1], b'+' | b'(') {
                starts.push(s - 1);
            }
            for s in starts {
                let window = &text[s..e];
                if find(window, &PiiKind::ALL)
                    .iter()
                    .any(|f| f.start == 0 && f.end == window.len())
                {
                    return true;
                }
            }
        }
    }
    false
}

/// Checks that `values` in random contexts are found as `kind` with exactly their span.
fn found_exactly(kind: PiiKind, values: impl Strategy<Value = String>) {
    let _turn = super::parsing_phones();
    let ambiguous_cases = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let cases = values.prop_flat_map(in_context);
    let outcome = runner.run(&cases, |(text, start, end)| {
        let found = find(&text, &PiiKind::ALL);
        let exact = found
            .iter()
            .any(|f| f.kind == kind && f.start == start && f.end == end);
        if exact {
            return Ok(());
        }
        if ambiguous(&text, start, end) {
            ambiguous_cases.fetch_add(1, Ordering::Relaxed);
            let touched = found.iter().any(|f| f.start < end && f.end > start);
            prop_assert!(
                touched,
                "{text:?}: nothing found over {:?}",
                &text[start..end]
            );
            return Ok(());
        }
        let shown: Vec<_> = found
            .iter()
            .map(|f| (f.kind, &text[f.start..f.end]))
            .collect();
        Err(TestCaseError::fail(format!(
            "{text:?}: {:?} not found as {kind:?}; found {shown:?}",
            &text[start..end]
        )))
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    println!(
        "{kind:?}: {CASES} cases, {} ambiguous",
        ambiguous_cases.load(Ordering::Relaxed)
    );
}

#[test]
fn generated_values_are_valid() {
    let mut runner = TestRunner::default();
    let all = (card(), phone(), iban());
    runner
        .run(&all, |(card, phone, iban)| {
            let digits: String = card.chars().filter(char::is_ascii_digit).collect();
            prop_assert!(luhn::valid(&digits), "{card}");
            let number = phonenumber::parse(None, phone.trim_start_matches('('));
            prop_assert!(
                phone.starts_with('+') || phone.starts_with('(') || phone.starts_with('0'),
                "{phone}"
            );
            prop_assert!(number.is_ok() || !phone.starts_with('+'), "{phone}");
            let compact: String = iban.chars().filter(|c| *c != ' ').collect();
            prop_assert!(compact.parse::<iban::Iban>().is_ok(), "{iban}");
            Ok(())
        })
        .unwrap();
}

#[test]
fn cards_next_to_anything_are_found_exactly() {
    found_exactly(PiiKind::Card, card());
}

#[test]
fn phone_numbers_next_to_anything_are_found_exactly() {
    found_exactly(PiiKind::Phone, phone());
}

#[test]
fn ibans_next_to_anything_are_found_exactly() {
    found_exactly(PiiKind::Iban, iban());
}
