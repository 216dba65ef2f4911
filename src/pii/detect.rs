//! The detectors: where in a text the personal data of each kind is, found by linear-time
//! regexes (the `regex` crate) and confirmed by a check made for the kind: libphonenumber's
//! metadata (`phonenumber`) for phone numbers, the ISO 13616 checksum and per-country formats
//! (`iban_validate`) for IBANs, the Luhn checksum (`luhn`) for card numbers, `std::net`'s
//! parsers for IP addresses, the issuing rules for US SSNs and UK NINOs. What each finds, and
//! what it does not, is listed in `docs/interface.md` ("Personal data").
//!
//! Kinds are tried in a fixed order and a span taken by one is not looked at by the next:
//! tokens already in the text (`[EMAIL_3]`) first, then emails, IBANs, card numbers, national
//! IDs, IP addresses, phone numbers last (so a card number is not also a phone number, nor is
//! an IPv4 address).
//!
//! Values made of digits often stand next to other digits (a phone number then a card number,
//! a card then its expiry date and CVV, an IBAN then a reference). Card numbers, phone numbers
//! and IBANs are therefore looked for in runs of groups (digits, or capitals and digits, joined
//! by separators), and each reading of whole groups that the kind's structure allows is tried,
//! longest first: a network's prefix, lengths and grouping and the Luhn checksum for cards;
//! the country code's possible lengths, libphonenumber's validity and its printed grouping for
//! phone numbers; the country's length and format and the checksum for IBANs. A cheap check
//! comes before each dear one, and at most a handful of readings are parsed per starting
//! group, so the work stays linear in the text.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

use crate::config::settings::PiiKind;

/// A token's label for each kind (`[EMAIL_1]`).
pub(crate) fn label(kind: PiiKind) -> &'static str {
    match kind {
        PiiKind::Email => "EMAIL",
        PiiKind::Phone => "PHONE",
        PiiKind::Card => "CARD",
        PiiKind::Iban => "IBAN",
        PiiKind::NationalId => "NATIONAL_ID",
        PiiKind::Ip => "IP",
    }
}

/// A token as the vault writes it (its kind and six random characters), or bare (the
/// redaction past a vault's cap).
pub(crate) static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[(EMAIL|PHONE|CARD|IBAN|NATIONAL_ID|IP)(?:_([a-z0-9]{6}))?\]").expect("regex")
});

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i-u)[a-z0-9](?:[a-z0-9._%+\-]{0,63})@[a-z0-9](?:[a-z0-9\-]{0,62})(?:\.[a-z0-9](?:[a-z0-9\-]{0,62}))*\.[a-z]{2,24}",
    )
    .expect("regex")
});

/// Where an IBAN may start: a country code and check digits at the start of a word.
static IBAN_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\b[A-Z]{2}[0-9]{2}").expect("regex"));

/// Runs of digit groups joined by single spaces or dashes: where card numbers are looked for.
static CARD_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)[0-9]+(?:[ \-][0-9]+)*").expect("regex"));

static SSN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\b([0-9]{3})-([0-9]{2})-([0-9]{4})\b").expect("regex"));

static NINO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u)\b([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]) ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]\b",
    )
    .expect("regex")
});

static IPV4: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\b[0-9]{1,3}(?:\.[0-9]{1,3}){3}\b").expect("regex"));

static IPV6: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*").expect("regex")
});

/// Runs of digit groups joined by one to three of ` -.()`, after an optional `+` or `(`: where
/// phone numbers are looked for.
static PHONE_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)[+(]?[0-9]+(?:[ \-.()]{1,3}[0-9]+)*").expect("regex"));

/// The regions whose national formats (no `+`) are recognised: the US (and the rest of the
/// North American Numbering Plan) and the UK.
const NATIONAL_REGIONS: [phonenumber::country::Id; 2] =
    [phonenumber::country::Id::US, phonenumber::country::Id::GB];

/// Most digits of a phone number: E.164's 15.
const MAX_PHONE_DIGITS: usize = 15;
/// Fewest digits of a phone number written with `+` (a country code and a 4-digit subscriber
/// number, as in Niue or Saint Helena).
const MIN_INTERNATIONAL_DIGITS: usize = 7;
/// Most numbers libphonenumber parses for one starting point: the candidates that pass the
/// cheap checks (length, grouping, separators) before it are few, this bounds them anyway.
const MAX_PHONE_PARSES: usize = 8;

/// One piece of personal data in a text: its byte range, its kind and the form that stands for
/// the value (the same value written another way has the same form: an email in lower case,
/// digits only for card numbers and IDs, E.164 for phone numbers, the canonical address).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub start: usize,
    pub end: usize,
    pub kind: PiiKind,
    pub normal: String,
}

/// The spans taken so far, by start: a new span is taken only if it overlaps none.
#[derive(Default)]
struct Taken {
    spans: BTreeMap<usize, (usize, Option<Found>)>,
}

impl Taken {
    fn free(&self, start: usize, end: usize) -> bool {
        // The last span starting before `end` must end at or before `start`.
        match self.spans.range(..end).next_back() {
            Some((_, (last_end, _))) => *last_end <= start,
            None => true,
        }
    }

    fn take(&mut self, start: usize, end: usize, found: Option<Found>) {
        self.spans.insert(start, (end, found));
    }
}

/// A detector: takes the spans of its kind that are still free.
type Detector = fn(&str, &mut Taken);

/// Finds the kinds asked for in `text`, in order of position, never overlapping; tokens
/// already in the text are left alone.
pub(crate) fn find(text: &str, kinds: &[PiiKind]) -> Vec<Found> {
    let mut taken = Taken::default();
    for m in TOKEN.find_iter(text) {
        taken.take(m.start(), m.end(), None);
    }
    let wanted = |kind| kinds.contains(&kind);
    let detectors: [(PiiKind, Detector); 6] = [
        (PiiKind::Email, emails),
        (PiiKind::Iban, ibans),
        (PiiKind::Card, cards),
        (PiiKind::NationalId, national_ids),
        (PiiKind::Ip, ips),
        (PiiKind::Phone, phones),
    ];
    for (kind, detect) in detectors {
        if wanted(kind) {
            detect(text, &mut taken);
        }
    }
    taken.spans.into_values().filter_map(|(_, f)| f).collect()
}

fn offer(taken: &mut Taken, start: usize, end: usize, kind: PiiKind, normal: String) {
    if taken.free(start, end) {
        let found = Found {
            start,
            end,
            kind,
            normal,
        };
        taken.take(start, end, Some(found));
    }
}

fn emails(text: &str, taken: &mut Taken) {
    for m in EMAIL.find_iter(text) {
        offer(
            taken,
            m.start(),
            m.end(),
            PiiKind::Email,
            m.as_str().to_ascii_lowercase(),
        );
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// IBANs: a country code, check digits and up to 30 capitals and digits, spaced in groups or
/// not, accepted when `iban_validate` finds the checksum and the country's length and format
/// right. A printed IBAN may be followed by more groups (a word in capitals, a reference
/// number): the candidate ends after each group in turn, longest first.
fn ibans(text: &str, taken: &mut Taken) {
    let bytes = text.as_bytes();
    let alnum = |b: &u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    for m in IBAN_START.find_iter(text) {
        let start = m.start();
        let mut ends = Vec::new();
        let (mut at, mut letters) = (start, 0);
        loop {
            let end = at + bytes[at..].iter().take_while(|b| alnum(b)).count();
            letters += end - at;
            if letters > 34 {
                break;
            }
            ends.push(end);
            match bytes.get(end..end + 2) {
                Some([b' ', next]) if alnum(next) => at = end + 1,
                _ => break,
            }
        }
        for end in ends.into_iter().rev() {
            if bytes.get(end).copied().is_some_and(is_word) || !taken.free(start, end) {
                continue;
            }
            let compact: String = text[start..end].chars().filter(|c| *c != ' ').collect();
            if compact.len() >= 15 && compact.parse::<iban::Iban>().is_ok() {
                offer(taken, start, end, PiiKind::Iban, compact);
                break;
            }
        }
    }
}

/// The digit groups of a run of digits and separators (a match of [`CARD_RUN`] or
/// [`PHONE_RUN`]): the byte range of each maximal sequence of digits.
struct Run {
    groups: Vec<(usize, usize)>,
}

impl Run {
    fn of(text: &str, m: regex::Match<'_>) -> Run {
        let bytes = text.as_bytes();
        let mut groups = Vec::new();
        let mut i = m.start();
        while i < m.end() {
            if bytes[i].is_ascii_digit() {
                let start = i;
                while i < m.end() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                groups.push((start, i));
            } else {
                i += 1;
            }
        }
        Run { groups }
    }

    fn len(&self) -> usize {
        self.groups.len()
    }

    fn start(&self, i: usize) -> usize {
        self.groups[i].0
    }

    fn end(&self, j: usize) -> usize {
        self.groups[j].1
    }

    /// The number of digits in groups `i..=j`.
    fn count(&self, i: usize, j: usize) -> usize {
        self.groups[i..=j].iter().map(|(s, e)| e - s).sum()
    }

    /// The digits of groups `i..=j`.
    fn digits(&self, text: &str, i: usize, j: usize) -> String {
        self.groups[i..=j]
            .iter()
            .map(|&(s, e)| &text[s..e])
            .collect()
    }

    /// The lengths of groups `i..=j`.
    fn lengths(&self, i: usize, j: usize) -> Vec<usize> {
        self.groups[i..=j].iter().map(|(s, e)| e - s).collect()
    }

    /// The last group `j >= i` such that groups `i..=j` hold at most `max` digits.
    fn last_within(&self, i: usize, max: usize) -> Option<usize> {
        let mut count = 0;
        let mut last = None;
        for j in i..self.len() {
            count += self.groups[j].1 - self.groups[j].0;
            if count > max {
                break;
            }
            last = Some(j);
        }
        last
    }
}

/// Whether a value may start at `start`: not inside a word (`x4111…`) nor after a number's
/// decimal point or thousands separator (`3.4111…`, `1,4111…`).
fn clear_before(text: &str, start: usize) -> bool {
    let bytes = text.as_bytes();
    match start.checked_sub(1).map(|i| bytes[i]) {
        None => true,
        Some(b) if is_word(b) => false,
        Some(b'.' | b',') => !start
            .checked_sub(2)
            .is_some_and(|i| bytes[i].is_ascii_digit()),
        Some(_) => true,
    }
}

/// The same at the end of a value: not followed by a word character, a decimal part or more
/// thousands.
fn clear_after(text: &str, end: usize) -> bool {
    let bytes = text.as_bytes();
    match bytes.get(end) {
        None => true,
        Some(&b) if is_word(b) => false,
        Some(b'.' | b',') => !bytes.get(end + 1).is_some_and(u8::is_ascii_digit),
        Some(_) => true,
    }
}

/// The card networks: the range of a number's first digits (its issuer identification
/// number, both ends written with as many digits) and the lengths the network issues (bit `n`
/// set: `n` digits).
const NETWORKS: [(u32, u32, u32); 17] = [
    (4, 4, lengths(&[13, 16, 19])),                   // Visa
    (51, 55, lengths(&[16])),                         // Mastercard
    (2221, 2720, lengths(&[16])),                     // Mastercard
    (34, 34, lengths(&[15])),                         // American Express
    (37, 37, lengths(&[15])),                         // American Express
    (300, 305, lengths(&[14, 15, 16, 17, 18, 19])),   // Diners Club
    (36, 36, lengths(&[14, 15, 16, 17, 18, 19])),     // Diners Club
    (38, 39, lengths(&[14, 15, 16, 17, 18, 19])),     // Diners Club
    (6011, 6011, lengths(&[16, 17, 18, 19])),         // Discover
    (644, 649, lengths(&[16, 17, 18, 19])),           // Discover
    (65, 65, lengths(&[16, 17, 18, 19])),             // Discover, RuPay
    (3528, 3589, lengths(&[16, 17, 18, 19])),         // JCB
    (62, 62, lengths(&[16, 17, 18, 19])),             // UnionPay
    (2200, 2204, lengths(&[16, 17, 18, 19])),         // Mir
    (60, 60, lengths(&[16])),                         // RuPay
    (50, 50, lengths(&[13, 14, 15, 16, 17, 18, 19])), // Maestro
    (56, 58, lengths(&[13, 14, 15, 16, 17, 18, 19])), // Maestro
];

const fn lengths(list: &[u32]) -> u32 {
    let mut bits = 0;
    let mut i = 0;
    while i < list.len() {
        bits |= 1 << list[i];
        i += 1;
    }
    bits
}

/// Whether a number starts as one of the [`NETWORKS`] numbers and has a length it issues.
fn issued(number: &str) -> bool {
    NETWORKS.iter().any(|&(low, high, issued_lengths)| {
        let width = low.to_string().len();
        number.len() >= width
            && issued_lengths & (1 << number.len()) != 0
            && number[..width]
                .parse::<u32>()
                .is_ok_and(|prefix| (low..=high).contains(&prefix))
    })
}

/// How card numbers are grouped when printed: in fours (the last group shorter, for 13 and
/// 19 digits), 4-6-5 (American Express) or 4-6-4 (Diners Club), or not at all.
fn grouped_as_a_card(lengths: &[usize]) -> bool {
    match lengths {
        [_] | [4, 6, 5] | [4, 6, 4] => true,
        [fours @ .., last] => fours.iter().all(|&l| l == 4) && (1..=4).contains(last),
        [] => false,
    }
}

/// Card numbers: 13 to 19 digits, grouped as cards are printed with one kind of separator
/// (single spaces or single dashes) or none, starting as a network's numbers do with a length
/// it issues, passing Luhn. In a run of digit groups (a card next to an expiry date, a CVV, a
/// phone number), each group in turn is tried as the start and the groups after it as the
/// end, longest first: the first candidate that passes is taken and the search goes on after
/// it. At most 19 candidates per start (a candidate is whole groups of at most 19 digits).
fn cards(text: &str, taken: &mut Taken) {
    for m in CARD_RUN.find_iter(text) {
        let run = Run::of(text, m);
        let mut i = 0;
        while i < run.len() {
            i = match card_from(text, &run, i, taken) {
                Some(j) => j + 1,
                None => i + 1,
            };
        }
    }
}

/// The longest card number starting at group `i` of `run`, taken; the index of its last group.
fn card_from(text: &str, run: &Run, i: usize, taken: &mut Taken) -> Option<usize> {
    let start = run.start(i);
    // After a `+`: an international phone number (`+4915123456787`), not a card.
    let plus = start > 0 && text.as_bytes()[start - 1] == b'+';
    if plus || !clear_before(text, start) {
        return None;
    }
    let last = run.last_within(i, 19)?;
    let bytes = text.as_bytes();
    for j in (i..=last).rev() {
        let end = run.end(j);
        if run.count(i, j) < 13 {
            break;
        }
        if !clear_after(text, end) || !taken.free(start, end) {
            continue;
        }
        let one_separator =
            (i + 1..=j).all(|k| bytes[run.start(k) - 1] == bytes[run.start(i + 1) - 1]);
        if !one_separator || !grouped_as_a_card(&run.lengths(i, j)) {
            continue;
        }
        let number = run.digits(text, i, j);
        if issued(&number) && luhn::valid(&number) {
            offer(taken, start, end, PiiKind::Card, number);
            return Some(j);
        }
    }
    None
}

fn digits(text: &str) -> String {
    text.chars().filter(char::is_ascii_digit).collect()
}

/// Whether a match continues a longer run of digits and separators (`1234-5678-...` of which
/// it is only a part, or a number with a decimal point).
fn adjoins_digit_run(text: &str, m: regex::Match<'_>) -> bool {
    let bytes = text.as_bytes();
    let before = m.start().checked_sub(2).map(|i| &bytes[i..m.start()]);
    let after = bytes.get(m.end()..(m.end() + 2).min(bytes.len()));
    let joined = |pair: &[u8], sep_first: bool| {
        pair.len() == 2 && {
            let (sep, digit) = if sep_first {
                (pair[0], pair[1])
            } else {
                (pair[1], pair[0])
            };
            matches!(sep, b'-' | b'.' | b',') && digit.is_ascii_digit()
        }
    };
    before.is_some_and(|p| joined(p, false)) || after.is_some_and(|p| joined(p, true))
}
/// US Social Security numbers written `AAA-GG-SSSS`, without the numbers never issued (area
/// 000, 666 or 900-999, group 00, serial 0000); UK National Insurance numbers (`AB123456C`,
/// spaced or not, without the prefixes never used).
fn national_ids(text: &str, taken: &mut Taken) {
    for c in SSN.captures_iter(text) {
        let whole = c.get(0).expect("match");
        let area: u32 = c[1].parse().unwrap_or(0);
        let valid = area != 0 && area != 666 && area < 900 && &c[2] != "00" && &c[3] != "0000";
        if valid && !adjoins_digit_run(text, whole) {
            let normal = digits(whole.as_str());
            offer(
                taken,
                whole.start(),
                whole.end(),
                PiiKind::NationalId,
                normal,
            );
        }
    }
    for c in NINO.captures_iter(text) {
        let whole = c.get(0).expect("match");
        if matches!(&c[1], "BG" | "GB" | "NK" | "KN" | "TN" | "NT" | "ZZ") {
            continue;
        }
        let normal: String = whole.as_str().chars().filter(|c| *c != ' ').collect();
        offer(
            taken,
            whole.start(),
            whole.end(),
            PiiKind::NationalId,
            normal,
        );
    }
}

/// IPv4 and IPv6 addresses as `std::net` parses them, but not the loopback, unspecified or
/// broadcast addresses (they name no one), nor a dotted quad inside a longer dotted run
/// (`1.2.3.4.5`) or after a `v` (`v1.2.3.4`, a version).
fn ips(text: &str, taken: &mut Taken) {
    let bytes = text.as_bytes();
    for m in IPV4.find_iter(text) {
        let before = m.start().checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(m.end()).copied();
        let versioned = matches!(before, Some(b'v' | b'V' | b'.'));
        let longer = after == Some(b'.') && bytes.get(m.end() + 1).is_some_and(u8::is_ascii_digit);
        if versioned || longer {
            continue;
        }
        if let Ok(ip) = m.as_str().parse::<Ipv4Addr>()
            && names_someone(IpAddr::V4(ip))
        {
            offer(taken, m.start(), m.end(), PiiKind::Ip, ip.to_string());
        }
    }
    for m in IPV6.find_iter(text) {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let before = m.start().checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(m.end()).copied();
        if before.is_some_and(word) || after.is_some_and(word) {
            continue;
        }
        // A sentence's full stop or a list's colon may follow the address.
        let whole = m.as_str();
        let trimmed = whole.strip_suffix(['.', ':']).unwrap_or(whole);
        let candidate = if whole.parse::<Ipv6Addr>().is_ok() {
            whole
        } else {
            trimmed
        };
        if candidate.len() < 6 {
            continue;
        }
        if let Ok(ip) = candidate.parse::<Ipv6Addr>()
            && names_someone(IpAddr::V6(ip))
        {
            let end = m.start() + candidate.len();
            offer(taken, m.start(), end, PiiKind::Ip, ip.to_string());
        }
    }
}

fn names_someone(ip: IpAddr) -> bool {
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    !(ip.is_loopback() || ip.is_unspecified() || broadcast)
}

/// Phone numbers libphonenumber finds valid (`phonenumber`: each country's lengths and
/// number ranges), looked for in runs of digit groups joined by spaces, dashes, dots or
/// parentheses, so that a number next to other digits (a card, a street number, a date) is
/// found alone:
/// - written with `+` and a country code: the candidate ends after each group of the run in
///   turn, 7 to 15 digits, longest first; of the valid ones, the first grouped as
///   libphonenumber prints the number (international or E.164), else the first;
/// - written nationally (no `+`), numbers of the [`NATIONAL_REGIONS`] starting at any group
///   of the run, with at least one separator and laid out as they are printed: US/NANP
///   numbers in groups of 3-3-4 (after a trunk `1`, the area code in parentheses or not), UK
///   numbers with their trunk `0` in two or three groups of 3 digits or more; one separator
///   between each two groups, dots not mixed with others. A bare run of digits is more often
///   an order number than a phone number, and a date (`2024-01-15 12`) is not one.
fn phones(text: &str, taken: &mut Taken) {
    for m in PHONE_RUN.find_iter(text) {
        let run = Run::of(text, m);
        let plus = text.as_bytes()[m.start()] == b'+';
        let mut i = 0;
        while i < run.len() {
            let found = if i == 0 && plus {
                international(text, &run, m.start(), taken)
            } else {
                national(text, &run, i, taken)
            };
            i = match found {
                Some(j) => j + 1,
                None => i + 1,
            };
        }
    }
}

/// The phone number written with `+` at `start`, the run's first group being its country
/// code: taken; the index of its last group.
fn international(text: &str, run: &Run, start: usize, taken: &mut Taken) -> Option<usize> {
    if !clear_before(text, start) {
        return None;
    }
    let last = run.last_within(0, MAX_PHONE_DIGITS)?;
    let mut valid = Vec::new();
    let mut parses = 0;
    for j in (0..=last).rev() {
        let end = run.end(j);
        if run.count(0, j) < MIN_INTERNATIONAL_DIGITS || parses == MAX_PHONE_PARSES {
            break;
        }
        if !clear_after(text, end)
            || !taken.free(start, end)
            || !possible_length(&run.digits(text, 0, j))
        {
            continue;
        }
        parses += 1;
        if let Some(number) = valid_phone(None, &text[start..end]) {
            valid.push((j, end, number));
        }
    }
    // Longest first; when several are valid, the one written as it is printed.
    let chosen = match valid.len() {
        0 => return None,
        1 => 0,
        _ => valid
            .iter()
            .position(|(j, _, number)| printed_alike(number, &run.lengths(0, *j)))
            .unwrap_or(0),
    };
    let (j, end, number) = valid.swap_remove(chosen);
    let normal = number.format().mode(phonenumber::Mode::E164).to_string();
    offer(taken, start, end, PiiKind::Phone, normal);
    Some(j)
}

/// The phone number written nationally from group `i` of `run`: taken; the index of its last
/// group.
fn national(text: &str, run: &Run, i: usize, taken: &mut Taken) -> Option<usize> {
    let bytes = text.as_bytes();
    // An area code in parentheses: the `(` is part of the number.
    let first = run.start(i);
    let enclosed = first > 0 && bytes[first - 1] == b'(' && bytes.get(run.end(i)) == Some(&b')');
    let start = if enclosed { first - 1 } else { first };
    if !clear_before(text, start) {
        return None;
    }
    let last = run.last_within(i, 11)?;
    let mut parses = 0;
    for j in (i..=last).rev() {
        let end = run.end(j);
        if run.count(i, j) < 10 || parses == MAX_PHONE_PARSES {
            break;
        }
        if !clear_after(text, end) || !taken.free(start, end) {
            continue;
        }
        let candidate = &text[start..end];
        if !one_separator(candidate) || looks_like_a_date(candidate) {
            continue;
        }
        let lengths = run.lengths(i, j);
        for region in NATIONAL_REGIONS {
            if !laid_out_as_in(region, candidate, &lengths) {
                continue;
            }
            parses += 1;
            if let Some(number) = valid_phone(Some(region), candidate) {
                let normal = number.format().mode(phonenumber::Mode::E164).to_string();
                offer(taken, start, end, PiiKind::Phone, normal);
                return Some(j);
            }
        }
    }
    None
}

/// Whether the digits of a number written with `+` are a country code and a national number
/// of a length its numbering plan has (libphonenumber's possible lengths): a cheap check
/// before parsing. Country codes are a prefix code, so at most one of 1 to 3 digits is one.
fn possible_length(digits: &str) -> bool {
    (1..=3.min(digits.len().saturating_sub(1))).any(|code_length| {
        let national = (digits.len() - code_length) as u16;
        digits[..code_length]
            .parse::<u16>()
            .ok()
            .and_then(|code| phonenumber::metadata::DATABASE.by_code(&code))
            .is_some_and(|plans| {
                plans.iter().any(|plan| {
                    let lengths = plan.descriptors().general().possible_length();
                    lengths.is_empty() || lengths.contains(&national)
                })
            })
    })
}

/// A number libphonenumber parses and finds valid, without an extension.
fn valid_phone(
    region: Option<phonenumber::country::Id>,
    candidate: &str,
) -> Option<phonenumber::PhoneNumber> {
    phonenumber::parse(region, candidate)
        .ok()
        .filter(|n| n.extension().is_none() && phonenumber::is_valid(n))
}

/// Whether the digit groups as written are those of the number as libphonenumber prints it
/// internationally, or in E.164 (one group).
fn printed_alike(number: &phonenumber::PhoneNumber, written: &[usize]) -> bool {
    if written.len() == 1 {
        return true;
    }
    let printed = number
        .format()
        .mode(phonenumber::Mode::International)
        .to_string();
    let lengths: Vec<usize> = printed
        .split(|c: char| !c.is_ascii_digit())
        .filter(|g| !g.is_empty())
        .map(str::len)
        .collect();
    lengths == written
}

/// Whether a national candidate has one separator between each two groups (a space, a dash or
/// a dot; dots never mixed with the others, as in prices), besides at most one pair of
/// parentheses around its first group or the one after a trunk `1` (`(650) 253-0000`).
fn one_separator(candidate: &str) -> bool {
    let opens = candidate.matches('(').count();
    if opens != candidate.matches(')').count() || opens > 1 {
        return false;
    }
    if let (Some(open), Some(close)) = (candidate.find('('), candidate.find(')')) {
        let before = candidate[..open].trim_end_matches([' ', '-']);
        let inside = &candidate[(open + 1).min(close)..close];
        if !(before.is_empty() || before == "1")
            || inside.is_empty()
            || !inside.bytes().all(|b| b.is_ascii_digit())
        {
            return false;
        }
    }
    let separators: Vec<String> = candidate
        .split(|c: char| c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.replace(['(', ')'], ""))
        .collect();
    if separators.iter().any(|s| s.len() > 1) {
        return false;
    }
    // Dots only between the groups of a number written with dots (`650.253.0000`), never
    // with other separators (`12.50 13.99 14`: prices).
    let dotted = separators.iter().any(|s| s == ".");
    !dotted || (opens == 0 && separators.iter().all(|s| s == "."))
}

/// Whether digit groups of these lengths are how a national number of `region` is printed.
fn laid_out_as_in(region: phonenumber::country::Id, candidate: &str, lengths: &[usize]) -> bool {
    match region {
        phonenumber::country::Id::US => matches!(lengths, [3, 3, 4] | [1, 3, 3, 4]),
        phonenumber::country::Id::GB => {
            candidate.trim_start_matches('(').starts_with('0')
                && matches!(lengths.len(), 2 | 3)
                && (3..=5).contains(&lengths[0])
                && lengths.iter().all(|&l| l >= 3)
        }
        _ => false,
    }
}

/// `2024-01-15`, `15.01.2024`, `01/15/2024`: dates, not phone numbers.
fn looks_like_a_date(candidate: &str) -> bool {
    static DATE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:[0-9]{4}[\-./][0-9]{1,2}[\-./][0-9]{1,2}|[0-9]{1,2}[\-./][0-9]{1,2}[\-./][0-9]{4})")
            .expect("regex")
    });
    DATE.is_match(candidate.trim_start_matches('('))
}
