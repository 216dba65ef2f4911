//! Over-tokenising: how often the detectors take common numbers that are not personal data.
//!
//! - A generated corpus of such numbers (timestamps, dates, times, prices, versions, order ids,
//!   UUIDs, git SHAs, ports, byte counts, coordinates, durations), alone and in log-like lines
//!   where they stand next to each other: nothing may be found in it.
//! - Real text on this machine (Rust and Python sources and docs under `~/.cargo/registry/src`,
//!   `/usr/share/doc` with its gzipped changelogs, logs under `/var/log`): the finds per kind
//!   and per MiB are printed, with samples, by an ignored test:
//!   `cargo test --release --lib pii::tests::corpus -- --ignored --nocapture`
//!   (`PII_CORPUS=DIR:DIR` picks other roots, `PII_CORPUS_MIB=N` the MiB read, default 64).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::super::detect::find;
use crate::config::settings::PiiKind;

/// A small deterministic generator (SplitMix64): the corpus is the same on every run.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub(super) fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.next() as usize % items.len()]
    }

    fn hex(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from(b"0123456789abcdef"[self.int(0, 15) as usize]))
            .collect()
    }
}

/// One common non-personal number, of the kind `which` names (by index).
fn common_number(rng: &mut Rng, which: u64) -> String {
    let (y, mo, d) = (rng.int(1990, 2035), rng.int(1, 12), rng.int(1, 28));
    let (h, mi, s) = (rng.int(0, 23), rng.int(0, 59), rng.int(0, 59));
    match which {
        // Unix timestamps, in seconds and milliseconds.
        0 => rng.int(1_000_000_000, 1_999_999_999).to_string(),
        1 => rng.int(1_000_000_000_000, 1_999_999_999_999).to_string(),
        // ISO dates and times, and the other ways dates are written.
        2 => format!("{y}-{mo:02}-{d:02}"),
        3 => format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        4 => format!(
            "{y}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{:03}",
            rng.int(0, 999)
        ),
        5 => format!("{d:02}/{mo:02}/{y}"),
        6 => format!("{d:02}.{mo:02}.{y}"),
        7 => format!("{mo}/{d}/{}", y % 100),
        8 => format!("{h:02}:{mi:02}"),
        9 => format!("{h:02}:{mi:02}:{s:02}"),
        // Prices.
        10 => format!("${}.{:02}", rng.int(0, 9999), rng.int(0, 99)),
        11 => format!(
            "{},{:03}.{:02}",
            rng.int(1, 999),
            rng.int(0, 999),
            rng.int(0, 99)
        ),
        12 => format!(
            "{} {:03},{:02} EUR",
            rng.int(1, 99),
            rng.int(0, 999),
            rng.int(0, 99)
        ),
        // Versions.
        13 => format!("v{}.{}.{}", rng.int(0, 30), rng.int(0, 99), rng.int(0, 999)),
        14 => format!(
            "{}.{}.{}-beta.{}",
            rng.int(0, 9),
            rng.int(0, 99),
            rng.int(0, 99),
            rng.int(1, 9)
        ),
        15 => format!(
            "{}.{}.{}.{}",
            rng.int(1, 20),
            rng.int(0, 9),
            rng.int(10000, 30000),
            rng.int(1000, 9999)
        ),
        // Order and invoice ids.
        16 => format!("ORD-{y}-{:06}", rng.int(0, 999_999)),
        17 => format!("#{}", rng.int(100_000, 999_999_999)),
        18 => format!("INV-{:08}", rng.int(0, 99_999_999)),
        19 => rng.int(10_000_000, 999_999_999_999).to_string(),
        // UUIDs and git SHAs.
        20 => format!(
            "{}-{}-4{}-{}-{}",
            rng.hex(8),
            rng.hex(4),
            rng.hex(3),
            rng.hex(4),
            rng.hex(12)
        ),
        21 => rng.hex(40),
        22 => rng.hex(7),
        // Ports.
        23 => format!("localhost:{}", rng.int(1024, 65535)),
        24 => format!(
            "port {}",
            rng.pick(&[22, 80, 443, 5432, 6379, 8080, 8443, 9090])
        ),
        // Byte counts.
        25 => format!("{} bytes", rng.int(0, 10_000_000_000)),
        26 => format!(
            "{},{:03},{:03} B",
            rng.int(1, 999),
            rng.int(0, 999),
            rng.int(0, 999)
        ),
        27 => format!("{}.{} MiB", rng.int(0, 4096), rng.int(0, 9)),
        // Coordinates.
        28 => format!(
            "{}.{:06}, -{}.{:06}",
            rng.int(0, 89),
            rng.int(0, 999_999),
            rng.int(0, 179),
            rng.int(0, 999_999)
        ),
        29 => format!(
            "{}.{:04} {}.{:04}",
            rng.int(0, 89),
            rng.int(0, 9999),
            rng.int(0, 179),
            rng.int(0, 9999)
        ),
        // Durations.
        30 => format!("{}h {}m {}s", rng.int(0, 99), mi, s),
        31 => format!("PT{}H{}M", rng.int(0, 99), mi),
        32 => format!("{h:02}:{mi:02}:{s:02}.{:03}", rng.int(0, 999)),
        33 => format!("{}.{:03}s", rng.int(0, 999), rng.int(0, 999)),
        _ => format!("{} ms", rng.int(0, 99_999)),
    }
}

const KINDS_OF_NUMBER: u64 = 35;

/// A log-like line: several common numbers next to each other, as logs and tables hold them.
fn log_line(rng: &mut Rng) -> String {
    let (y, mo, d) = (rng.int(2000, 2030), rng.int(1, 12), rng.int(1, 28));
    match rng.int(0, 4) {
        0 => format!(
            "{y}-{mo:02}-{d:02} {:02}:{:02}:{:02} GET /api/orders/{} {} {} {}ms",
            rng.int(0, 23),
            rng.int(0, 59),
            rng.int(0, 59),
            rng.int(1, 9_999_999),
            rng.pick(&[200, 201, 204, 301, 404, 500]),
            rng.int(0, 99_999),
            rng.int(0, 9999)
        ),
        1 => {
            // A table row of counts.
            let cells: Vec<String> = (0..rng.int(3, 8))
                .map(|_| rng.int(0, 99_999).to_string())
                .collect();
            cells.join(*rng.pick(&[" ", "  ", "\t", ", ", " | "]))
        }
        2 => format!(
            "{} {} {} {} {}",
            rng.int(1_000_000_000, 1_999_999_999),
            rng.int(1, 65535),
            rng.int(0, 10_000_000),
            rng.int(0, 999),
            rng.int(0, 9)
        ),
        3 => {
            // Numbers of several kinds side by side.
            let n = rng.int(2, 5);
            (0..n)
                .map(|_| {
                    let which = rng.int(0, KINDS_OF_NUMBER - 1);
                    common_number(rng, which)
                })
                .collect::<Vec<_>>()
                .join(*rng.pick(&[" ", ", ", " - ", " / ", "; "]))
        }
        _ => format!(
            "[{y}-{mo:02}-{d:02}] build {} took {}.{}s, {} tests, {} passed, {} KiB",
            rng.hex(7),
            rng.int(0, 999),
            rng.int(0, 9),
            rng.int(0, 5000),
            rng.int(0, 5000),
            rng.int(0, 1_000_000)
        ),
    }
}

/// The generated corpus: every kind of number alone, then log-like lines.
pub(super) fn generated_corpus(lines: usize) -> Vec<String> {
    let mut rng = Rng::new(0x5EED_C0DE);
    let mut out = Vec::with_capacity(lines);
    for i in 0..lines {
        if i % 2 == 0 {
            out.push(common_number(&mut rng, (i as u64 / 2) % KINDS_OF_NUMBER));
        } else {
            out.push(log_line(&mut rng));
        }
    }
    out
}

/// What was found in `lines`, by kind, with every found text.
fn finds(lines: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in lines {
        for f in find(line, &PiiKind::ALL) {
            by_kind
                .entry(format!("{:?}", f.kind))
                .or_default()
                .push(format!("{:?} in {line:?}", &line[f.start..f.end]));
        }
    }
    by_kind
}

#[test]
fn common_numbers_are_not_taken_for_personal_data() {
    let lines = generated_corpus(40_000);
    let found = finds(&lines);
    let total: usize = found.values().map(Vec::len).sum();
    for (kind, items) in &found {
        println!("{kind}: {} of {} lines", items.len(), lines.len());
        for item in items.iter().take(10) {
            println!("  {item}");
        }
    }
    assert_eq!(total, 0, "{found:#?}");
}

/// Text files under `root`, sorted, skipping version-control and build directories.
fn text_files(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !matches!(name, ".git" | "target" | "node_modules") {
                text_files(&path, out);
            }
        } else if meta.is_file() && meta.len() > 0 {
            out.push(path);
        }
    }
}

/// A file's text (gunzipped when it ends in `.gz`), at most `cap` bytes; none if it is binary.
fn read_text(path: &Path, cap: usize) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file)
            .take(cap as u64)
            .read_to_end(&mut bytes)
            .ok()?;
    } else {
        file.take(cap as u64).read_to_end(&mut bytes).ok()?;
    }
    if bytes.contains(&0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The real-text figure: finds per kind and per MiB over text on this machine.
#[test]
#[ignore = "reads up to PII_CORPUS_MIB MiB of this machine's files; run with --ignored --nocapture"]
fn real_text_over_tokenising() {
    let home = std::env::var("HOME").unwrap_or_default();
    let roots = std::env::var("PII_CORPUS")
        .unwrap_or_else(|_| format!("{home}/.cargo/registry/src:/usr/share/doc:/var/log"));
    let budget: usize = std::env::var("PII_CORPUS_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
        << 20;
    let mut files = Vec::new();
    for root in roots.split(':').filter(|r| !r.is_empty()) {
        text_files(Path::new(root), &mut files);
    }
    // An even sample over every root: every n-th file, each read up to 256 KiB.
    let per_file = 256 << 10;
    let started = Instant::now();
    let (mut read, mut used, mut lines) = (0usize, 0usize, 0usize);
    let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let stride = (files.len() / 4000).max(1);
    'files: for pass in 0..stride {
        for path in files.iter().skip(pass).step_by(stride) {
            if read >= budget {
                break 'files;
            }
            let Some(text) = read_text(path, per_file) else {
                continue;
            };
            read += text.len();
            used += 1;
            for line in text.lines() {
                lines += 1;
                for f in find(line, &PiiKind::ALL) {
                    let shown: String = line.chars().take(160).collect();
                    by_kind
                        .entry(format!("{:?}", f.kind))
                        .or_default()
                        .push(format!(
                            "{:?} in {}: {shown:?}",
                            &line[f.start..f.end],
                            path.display()
                        ));
                }
            }
        }
    }
    let mib = read as f64 / f64::from(1 << 20);
    println!(
        "real text: {used} files, {lines} lines, {mib:.1} MiB from {roots}, in {:.1?}",
        started.elapsed()
    );
    for (kind, items) in &by_kind {
        println!(
            "{kind}: {} finds, {:.2} per MiB, {:.2} per 100k lines",
            items.len(),
            items.len() as f64 / mib,
            items.len() as f64 * 100_000.0 / lines as f64
        );
        for item in items.iter().take(25) {
            println!("  {item}");
        }
    }
}
