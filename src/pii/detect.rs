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

static IBAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b").expect("regex"));

static CARD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\b[0-9](?:[ \-]?[0-9]){12,18}\b").expect("regex"));

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

/// Phone candidates: `+` and a country code, or a national number with separators.
static PHONE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)(?:\+|\(|\b)[0-9][0-9 \-.()]{5,22}[0-9]\b").expect("regex"));

/// The regions whose national formats (no `+`) are recognised: the US (and the rest of the
/// North American Numbering Plan) and the UK.
const NATIONAL_REGIONS: [phonenumber::country::Id; 2] =
    [phonenumber::country::Id::US, phonenumber::country::Id::GB];

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

fn ibans(text: &str, taken: &mut Taken) {
    for m in IBAN.find_iter(text) {
        // A printed IBAN may be followed by a word in capitals: try the candidate, then shorter
        // ones ending before each space.
        let candidate = m.as_str();
        let ends = std::iter::once(candidate.len()).chain(
            candidate
                .char_indices()
                .rev()
                .filter(|&(_, c)| c == ' ')
                .map(|(i, _)| i),
        );
        for end in ends {
            let compact: String = candidate[..end].chars().filter(|c| *c != ' ').collect();
            if compact.parse::<iban::Iban>().is_ok() {
                offer(taken, m.start(), m.start() + end, PiiKind::Iban, compact);
                break;
            }
        }
    }
}

fn digits(text: &str) -> String {
    text.chars().filter(char::is_ascii_digit).collect()
}

/// 13 to 19 digits, spaces or dashes between them, starting as the card networks' numbers do
/// (2 to 6: Mastercard, Amex and Diners, Visa, Mastercard, Discover and UnionPay), passing Luhn.
fn cards(text: &str, taken: &mut Taken) {
    for m in CARD.find_iter(text) {
        let number = digits(m.as_str());
        let first = number.as_bytes()[0];
        if (b'2'..=b'6').contains(&first) && luhn::valid(&number) && !adjoins_digit_run(text, m) {
            offer(taken, m.start(), m.end(), PiiKind::Card, number);
        }
    }
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

/// Phone numbers libphonenumber finds valid: any written with `+` and a country code; written
/// nationally (no `+`), those of the [`NATIONAL_REGIONS`] with 10 or 11 digits and at least one
/// separator (a bare run of digits is more often an order number than a phone number).
fn phones(text: &str, taken: &mut Taken) {
    for m in PHONE.find_iter(text) {
        let candidate = m.as_str();
        if !taken.free(m.start(), m.end()) || looks_like_a_date(candidate) {
            continue;
        }
        let count = candidate.bytes().filter(u8::is_ascii_digit).count();
        let parsed = if candidate.starts_with('+') {
            phonenumber::parse(None, candidate)
                .ok()
                .filter(phonenumber::is_valid)
        } else {
            let separated = candidate.bytes().any(|b| !b.is_ascii_digit());
            if !(10..=11).contains(&count) || !separated {
                continue;
            }
            NATIONAL_REGIONS.iter().find_map(|region| {
                phonenumber::parse(Some(*region), candidate)
                    .ok()
                    .filter(phonenumber::is_valid)
            })
        };
        if let Some(number) = parsed {
            let normal = number.format().mode(phonenumber::Mode::E164).to_string();
            offer(taken, m.start(), m.end(), PiiKind::Phone, normal);
        }
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
