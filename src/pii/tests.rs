//! Tests of the detectors, the vault and the session registry.

mod corpus;
mod props;

use std::time::Instant;

use serde_json::json;

use super::detect::find;
use super::vault::MAX_ENTRIES;
use super::*;

/// libphonenumber keeps its compiled regexes in one cache of 100 behind a mutex: the property
/// tests' numbers of two dozen regions evict each other's regexes, and would the timing test's,
/// so the tests that parse many numbers take turns.
pub(super) static PHONE_PARSING: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(super) fn parsing_phones() -> std::sync::MutexGuard<'static, ()> {
    PHONE_PARSING.lock().unwrap_or_else(|e| e.into_inner())
}

fn kinds_in(text: &str) -> Vec<(PiiKind, String)> {
    find(text, &PiiKind::ALL)
        .into_iter()
        .map(|f| (f.kind, text[f.start..f.end].to_string()))
        .collect()
}

fn found(text: &str, kind: PiiKind) -> Vec<String> {
    kinds_in(text)
        .into_iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, s)| s)
        .collect()
}

fn nothing_in(text: &str) {
    assert_eq!(kinds_in(text), [], "{text}");
}

#[test]
fn emails_in_several_forms() {
    for email in [
        "alice@example.com",
        "Bob.Smith+tag@mail.example.co.uk",
        "x_y-z%1@sub-domain.example.org",
    ] {
        let text = format!("mail <{email}>, then.");
        assert_eq!(found(&text, PiiKind::Email), [email], "{text}");
    }
    nothing_in("user@localhost and @handle and a@b");
}

#[test]
fn cards_are_luhn_checked() {
    for card in [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "5555555555554444",
        "378282246310005",
        "6011 0009 9013 9424",
    ] {
        let text = format!("card: {card}.");
        assert_eq!(found(&text, PiiKind::Card), [card], "{text}");
    }
    // One digit off: Luhn fails. Too short, too long, or not a network's first digit.
    for near in [
        "4111 1111 1111 1112",
        "411111111111",
        "41111111111111111111111",
        "1111111111111111117",
        "order 9111111111111111",
    ] {
        assert!(found(near, PiiKind::Card).is_empty(), "{near}");
    }
}

#[test]
fn ibans_are_checksummed() {
    for iban in [
        "DE89 3704 0044 0532 0130 00",
        "DE89370400440532013000",
        "GB82 WEST 1234 5698 7654 32",
        "FR14 2004 1010 0505 0001 3M02 606",
    ] {
        let text = format!("pay to {iban} TODAY please");
        assert_eq!(found(&text, PiiKind::Iban), [iban], "{text}");
    }
    // A checksum off by one; a country that has no IBAN.
    nothing_in("GB82 WEST 1234 5698 7654 33");
    nothing_in("XX82WEST12345698765432");
}

#[test]
fn national_ids_follow_the_issuing_rules() {
    assert_eq!(
        found("SSN 123-45-6789", PiiKind::NationalId),
        ["123-45-6789"]
    );
    assert_eq!(
        found("NI: AB 12 34 56 C", PiiKind::NationalId),
        ["AB 12 34 56 C"]
    );
    assert_eq!(found("NI: JG103759A.", PiiKind::NationalId), ["JG103759A"]);
    for never_issued in [
        "000-12-3456",
        "666-12-3456",
        "912-12-3456",
        "123-00-4567",
        "123-45-0000",
        "QQ123456C",
        "GB123456A",
        "AB123456E",
    ] {
        nothing_in(never_issued);
    }
    // Not written as an SSN.
    nothing_in("part 123456789 and 12-345-6789");
}

#[test]
fn ip_addresses_but_not_versions_or_loopback() {
    assert_eq!(found("from 203.0.113.7:443", PiiKind::Ip), ["203.0.113.7"]);
    assert_eq!(found("lan 192.168.1.20", PiiKind::Ip), ["192.168.1.20"]);
    assert_eq!(found("v6 2001:db8::1.", PiiKind::Ip), ["2001:db8::1"]);
    assert_eq!(
        found("[fe80::1ff:fe23:4567:890a]", PiiKind::Ip),
        ["fe80::1ff:fe23:4567:890a"]
    );
    for not_one in [
        "999.1.1.1",
        "127.0.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "::1",
        "version v1.2.3.4",
        "1.2.3.4.5",
        "at 10:30:45",
        "std::vector",
        "mac 00:1a:2b:3c:4d:5e",
    ] {
        nothing_in(not_one);
    }
}

#[test]
fn phone_numbers_international_and_national() {
    for phone in [
        "+1 650-253-0000",
        "+44 20 7946 0958",
        "+4930901820",
        "(650) 253-0000",
        "650.253.0000",
        "020 7946 0958",
    ] {
        let text = format!("call {phone} now");
        assert_eq!(found(&text, PiiKind::Phone), [phone], "{text}");
    }
    for not_one in [
        "2024-01-15",
        "15.01.2024",
        "order 6502530000",
        "+1 000 000",
        "pages 12-34",
    ] {
        nothing_in(not_one);
    }
}

/// Issue 30, crossing 3: a value next to other digits was left in clear, because the candidate
/// ran on into the next number and then failed its check as a whole.
#[test]
fn values_next_to_other_digits_are_found_issue_30() {
    use PiiKind::{Card, Iban, NationalId, Phone};
    let cases: [(&str, &[(PiiKind, &str)]); 14] = [
        (
            "Ada +1 650-253-0000 4111 1111 1111 1111",
            &[(Phone, "+1 650-253-0000"), (Card, "4111 1111 1111 1111")],
        ),
        (
            "4111 1111 1111 1111 12/28 123",
            &[(Card, "4111 1111 1111 1111")],
        ),
        ("5555555555554444 12/28 123", &[(Card, "5555555555554444")]),
        ("4111-1111-1111-1111-12", &[(Card, "4111-1111-1111-1111")]),
        ("378282246310005 1234", &[(Card, "378282246310005")]),
        (
            "+1 650-253-0000 221 Baker Street",
            &[(Phone, "+1 650-253-0000")],
        ),
        ("+1 650-253-0000 2024-01-15", &[(Phone, "+1 650-253-0000")]),
        (
            "+1 650-253-0000 123-45-6789",
            &[(Phone, "+1 650-253-0000"), (NationalId, "123-45-6789")],
        ),
        ("+44 20 7946 0958 12", &[(Phone, "+44 20 7946 0958")]),
        ("+4930901820 12", &[(Phone, "+4930901820")]),
        ("12 (650) 253-0000 4", &[(Phone, "(650) 253-0000")]),
        ("2024-01-15 020 7946 0958 12", &[(Phone, "020 7946 0958")]),
        (
            "DE89 3704 0044 0532 0130 00 12 4111 1111 1111 1111",
            &[
                (Iban, "DE89 3704 0044 0532 0130 00"),
                (Card, "4111 1111 1111 1111"),
            ],
        ),
        (
            "AB12 DE89 3704 0044 0532 0130 00",
            &[(Iban, "DE89 3704 0044 0532 0130 00")],
        ),
    ];
    for (text, expected) in cases {
        let expected: Vec<(PiiKind, String)> =
            expected.iter().map(|(k, v)| (*k, v.to_string())).collect();
        assert_eq!(kinds_in(text), expected, "{text}");
    }
}

/// Numbers that are not personal data, some of them taken for phone numbers or cards before
/// the detectors looked at the structure of each kind (found in real text).
#[test]
fn numbers_that_only_look_like_values() {
    for not_one in [
        "ORD-2026-616852",
        "2024-01-15 12",
        "12.50 13.99 14.25",
        "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15",
        "LeapSecond::new(1341100824, 25)",
        "## 0.9.0 (2020-06-09)",
        "- 0.1.7 - 2016-09-03",
        "rsa 512 bits   0.0006s   0.0001s   1683.8  18456.2",
        "89142  42181  52443  74895  89586",
        "GET /api/orders/3293129 301 28270 7235ms",
        "52323 59481 40991",
        "2300 2400 2500 2600",
        "+4111111111111111",
        "x4111111111111111",
        "3.4111111111111111",
    ] {
        nothing_in(not_one);
    }
}

#[test]
fn the_order_decides_between_kinds() {
    let text = "4111 1111 1111 1111 / 203.0.113.7 / a.b@example.com / 123-45-6789";
    let kinds: Vec<PiiKind> = kinds_in(text).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        [
            PiiKind::Card,
            PiiKind::Ip,
            PiiKind::Email,
            PiiKind::NationalId
        ]
    );
    // Only the kinds asked for.
    assert_eq!(find(text, &[PiiKind::Ip]).len(), 1);
}

/// The tokens of `text`, in order.
fn tokens_in(text: &str) -> Vec<String> {
    detect::TOKEN
        .find_iter(text)
        .map(|m| m.as_str().to_string())
        .collect()
}

#[test]
fn tokens_are_stable_and_not_tokenised_again() {
    let vault = Vault::new(PiiKind::ALL.to_vec());
    let once = vault.tokenize("Alice@Example.com, alice@example.com, bob@example.com");
    let [alice, again, bob] = <[String; 3]>::try_from(tokens_in(&once)).unwrap();
    assert_eq!(once, format!("{alice}, {again}, {bob}"));
    assert_eq!(alice, again);
    assert_ne!(alice, bob);
    assert_eq!(vault.tokenize(&once), once);
    let card = vault.tokenize("4111-1111-1111-1111 then 4111111111111111");
    let [c1, c2] = <[String; 2]>::try_from(tokens_in(&card)).unwrap();
    assert_eq!(
        (c1.as_str(), card.as_str()),
        (c2.as_str(), format!("{c1} then {c1}").as_str())
    );
    assert_eq!(vault.tokenize("[IP_7abcde] [EMAIL]"), "[IP_7abcde] [EMAIL]");
    // The first form seen is the one given back.
    let to_code = |text: &str| vault.put_back(text, Recipient::Code);
    assert_eq!(to_code(&format!("to {alice}")), "to Alice@Example.com");
    assert_eq!(to_code(&c1), "4111-1111-1111-1111");
    // Unknown tokens stay as they are.
    assert_eq!(
        to_code("[EMAIL_zzzzzz] [CARD] [X_1] [EMAIL_1]"),
        "[EMAIL_zzzzzz] [CARD] [X_1] [EMAIL_1]"
    );
}

#[test]
fn tokens_carry_no_order() {
    let vault = Vault::new(vec![PiiKind::Email]);
    let tokens: Vec<String> = (0..200)
        .map(|n| vault.tokenize(&format!("u{n}@example.com")))
        .collect();
    // The first character is a letter: no token reads as a number.
    let shape = regex::Regex::new(r"^\[EMAIL_[a-hjkmnp-z][2-9a-hjkmnp-z]{5}\]$").unwrap();
    assert!(tokens.iter().all(|t| shape.is_match(t)), "{tokens:?}");
    let distinct: std::collections::HashSet<_> = tokens.iter().collect();
    assert_eq!(distinct.len(), tokens.len());
    // Not numbered: the token of the 1st, 2nd, ... value says nothing of the next.
    assert!(!tokens.iter().any(|t| t == "[EMAIL_1]" || t == "[EMAIL_2]"));
    let mut sorted = tokens.clone();
    sorted.sort();
    assert_ne!(sorted, tokens, "tokens given in order");
}

#[test]
fn values_are_walked_keys_included() {
    let vault = Vault::new(PiiKind::ALL.to_vec());
    let mut value = json!({
        "alice@example.com": {"card": "4111 1111 1111 1111", "n": 4111111111111111u64},
        "list": ["+44 20 7946 0958", null, true]
    });
    vault.tokenize_value(&mut value);
    let email = vault.tokenize("alice@example.com");
    let card = vault.tokenize("4111 1111 1111 1111");
    let phone = vault.tokenize("+44 20 7946 0958");
    assert_eq!(
        value,
        json!({
            email.clone(): {"card": card, "n": 4111111111111111u64},
            "list": [phone.clone(), null, true]
        })
    );
    let mut back = json!({email: [phone, 3]});
    vault.put_back_value(&mut back, Recipient::Code);
    assert_eq!(back, json!({"alice@example.com": ["+44 20 7946 0958", 3]}));
}

#[test]
fn a_server_gets_back_only_the_values_it_holds() {
    let vault = Vault::new(PiiKind::ALL.to_vec());
    // Code's output: no server holds these.
    let shown = vault.tokenize("ada@example.com 4111 1111 1111 1111");
    let [email, card] = <[String; 2]>::try_from(tokens_in(&shown)).unwrap();
    let answer = format!("Repeat: {email} {card}");
    assert_eq!(vault.put_back(&answer, Recipient::AnswerTo("h2")), answer);
    // Code's own questions get every token back.
    assert_eq!(
        vault.put_back(&answer, Recipient::Code),
        "Repeat: ada@example.com 4111 1111 1111 1111"
    );
    // A server code sends the email to holds it from then on; not the card.
    let mut args = json!({"to": email.clone()});
    vault.put_back_value(&mut args, Recipient::CallTo("mail"));
    assert_eq!(args, json!({"to": "ada@example.com"}));
    assert_eq!(
        vault.put_back(&answer, Recipient::AnswerTo("mail")),
        format!("Repeat: ada@example.com {card}")
    );
    // A server that asks a question showing a value, or returned it in a result, holds it.
    let question = vault.tokenize_from(Some("crm"), "Delete bob@example.com?");
    let bob = tokens_in(&question).remove(0);
    assert_eq!(
        vault.put_back(&bob, Recipient::AnswerTo("crm")),
        "bob@example.com"
    );
    assert_eq!(vault.put_back(&bob, Recipient::AnswerTo("h2")), bob);
    vault.note_held("sheets", &json!({"rows": [{"card": "4111111111111111"}]}));
    assert_eq!(
        vault.put_back(&card, Recipient::AnswerTo("sheets")),
        "4111 1111 1111 1111"
    );
    assert!(!format!("{vault:?}").contains("example"));
}

#[test]
fn every_field_of_a_block_but_its_payload_is_tokenised() {
    let vault = Vault::new(PiiKind::ALL.to_vec());
    let mut block: rmcp::model::ContentBlock = serde_json::from_value(json!({
        "type": "resource",
        "resource": {"uri": "crm://customers/ada@example.com/statement.pdf", "blob": "YWRhQGV4YW1wbGUuY29t", "mimeType": "application/pdf"},
        "annotations": {"audience": ["user"]},
        "_meta": {"owner": "ada@example.com"}
    }))
    .unwrap();
    vault.tokenize_block(&mut block);
    let sent = serde_json::to_string(&block).unwrap();
    assert!(!sent.contains("ada@example.com"), "{sent}");
    assert!(
        sent.contains("YWRhQGV4YW1wbGUuY29t"),
        "the payload is base64, left alone: {sent}"
    );
    assert!(sent.contains("crm://customers/[EMAIL_"), "{sent}");
}

#[test]
fn past_its_cap_a_vault_redacts() {
    let vault = Vault::new(vec![PiiKind::Email]);
    let first = vault.tokenize("u0@example.com");
    for n in 1..MAX_ENTRIES {
        vault.tokenize(&format!("u{n}@example.com"));
    }
    assert_eq!(vault.len(), MAX_ENTRIES);
    assert_eq!(vault.tokenize("new@example.com"), "[EMAIL]");
    assert_eq!(vault.tokenize("u0@example.com"), first);
    assert!(!format!("{vault:?}").contains("example"));
}

#[test]
fn sessions_have_their_own_vaults_and_are_bounded() {
    let pii = Pii::new(PiiKind::ALL.to_vec());
    let a = pii.vault("stdio");
    let token = a.tokenize("a@example.com");
    let b = pii.vault("http-token:abc");
    assert_eq!(b.put_back(&token, Recipient::Code), token);
    assert_eq!(
        pii.vault("stdio").put_back(&token, Recipient::Code),
        "a@example.com"
    );
    for n in 0..(MAX_SESSIONS + 5) {
        pii.vault(&format!("http-peer:{n}"));
    }
    assert_eq!(pii.sessions(), MAX_SESSIONS);
    // A vault in use by an execution is not the one forgotten.
    assert_eq!(
        pii.vault("stdio").put_back(&token, Recipient::Code),
        "a@example.com"
    );
    drop(a);
}

#[test]
fn redaction_for_the_audit_trail_needs_no_vault() {
    assert_eq!(
        redact("to ada@example.com, +44 20 7946 0958"),
        "to [EMAIL], [PHONE]"
    );
    assert!(matches!(
        redact("mcp__time__now"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn cut_edges_drop_what_may_be_part_of_a_value() {
    let mut head = "line one\nmail alice@exa".to_string();
    trim_cut_end(&mut head);
    assert_eq!(head, "line one\n");
    let mut tail = "mple.com\nlast line".to_string();
    trim_cut_start(&mut tail);
    assert_eq!(tail, "\nlast line");
    let mut long = "x".repeat(200);
    trim_cut_end(&mut long);
    assert_eq!(long.len(), 200 - EDGE_BYTES);
}

#[test]
fn a_mebibyte_of_output_is_tokenised_quickly() {
    let line = "id 1234, alice@example.com paid with 4111 1111 1111 1111 from 203.0.113.7, tel +44 20 7946 0958, 2024-01-15 ok\n";
    let text = line.repeat((1 << 20) / line.len());
    let vault = Vault::new(PiiKind::ALL.to_vec());
    let _turn = parsing_phones();
    let started = Instant::now();
    let out = vault.tokenize(&text);
    let took = started.elapsed();
    println!("1 MiB tokenised in {took:?}");
    assert!(!out.contains("alice@") && !out.contains("4111") && !out.contains("7946"));
    assert!(took.as_secs() < 5, "{took:?}");
    // A mebibyte of digits and separators, the worst for the candidate regexes.
    let digits = "12-34 56.78 ".repeat((1 << 20) / 12);
    let started = Instant::now();
    vault.tokenize(&digits);
    let took = started.elapsed();
    println!("1 MiB of digits in {took:?}");
    assert!(took.as_secs() < 5, "{took:?}");
    // A quarter of one of each worst case for the readings tried in a run of digit groups:
    // many starts, each with several candidates passing the cheap checks, or valid
    // (libphonenumber's check of a valid number is the dearest part, some 20 µs).
    for worst in [
        "+1 2 3 4 5 6 7 ",
        "+44 20 7946 0958 1 2 3 ",
        "+44 20 7946 0958, ",
        "(650) 253-0000 ",
        "650 253 0000 1 ",
        "020 7946 0958 ",
        "4111 1111 1111 1111 ",
        "1234 5678 9012 3456 7 ",
        "DE89 3704 ",
        "DE89 3704 0044 0532 0130 00 ",
    ] {
        let text = worst.repeat((256 << 10) / worst.len());
        let vault = Vault::new(PiiKind::ALL.to_vec());
        let started = Instant::now();
        vault.tokenize(&text);
        let took = started.elapsed();
        println!("256 KiB of {worst:?} in {took:?}");
        assert!(took.as_secs() < 5, "{worst:?}: {took:?}");
    }
}
