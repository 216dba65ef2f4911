//! Makes a SQLite write-ahead log byte-for-byte reproducible, so that the Deno cache seed saved
//! with the Pyodide snapshot (and so the container image holding both) depends only on what the
//! databases contain. SQLite stamps every log with two random "salts" (copied into each frame
//! header, and folded into every checksum); a log made twice from the same writes differs only
//! there. [`normalize`] rewrites the log with both salts and the checkpoint counter set to zero
//! and every checksum recomputed, keeping exactly the frames SQLite itself would read (those up
//! to the last valid commit; stale frames of an earlier log generation are dropped).
//!
//! The format is SQLite's documented WAL file format (<https://www.sqlite.org/fileformat2.html>,
//! "The WAL File Format"); the tests read a log written by SQLite itself.

/// Size of the log header and of each frame header.
const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;
/// The two magic numbers; the low bit says whether checksums read big-endian words.
const MAGIC_LITTLE: u32 = 0x377f_0682;
const MAGIC_BIG: u32 = 0x377f_0683;

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

/// SQLite's WAL checksum of `data` (a multiple of 8 bytes), continuing from `(s0, s1)`.
fn checksum(data: &[u8], (mut s0, mut s1): (u32, u32), big_endian: bool) -> (u32, u32) {
    let word = |chunk: &[u8]| {
        let bytes: [u8; 4] = chunk.try_into().expect("four bytes");
        if big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        }
    };
    for pair in data.chunks_exact(8) {
        s0 = s0.wrapping_add(word(&pair[..4])).wrapping_add(s1);
        s1 = s1.wrapping_add(word(&pair[4..])).wrapping_add(s0);
    }
    (s0, s1)
}

fn put_checksum(out: &mut Vec<u8>, (s0, s1): (u32, u32)) {
    out.extend_from_slice(&s0.to_be_bytes());
    out.extend_from_slice(&s1.to_be_bytes());
}

/// The log with fixed salts and recomputed checksums, or `None` when `log` is not a WAL file
/// with a valid header (the caller keeps such a file as it is).
pub(crate) fn normalize(log: &[u8]) -> Option<Vec<u8>> {
    if log.len() < HEADER {
        return None;
    }
    let magic = be32(log, 0);
    let big_endian = match magic {
        MAGIC_LITTLE => false,
        MAGIC_BIG => true,
        _ => return None,
    };
    let page_size = be32(log, 8) as usize;
    if !page_size.is_power_of_two() || !(512..=65536).contains(&page_size) {
        return None;
    }
    let header_sum = checksum(&log[..24], (0, 0), big_endian);
    if header_sum != (be32(log, 24), be32(log, 28)) {
        return None;
    }
    let salts = &log[16..24];

    // Header: magic, format version, page size, checkpoint counter 0, salts 0, 0.
    let mut out = log[..12].to_vec();
    out.extend_from_slice(&[0; 12]);
    let mut new_sum = checksum(&out, (0, 0), big_endian);
    put_checksum(&mut out, new_sum);
    let mut old_sum = header_sum;
    let mut committed = out.len();

    let mut at = HEADER;
    while at + FRAME_HEADER + page_size <= log.len() {
        let frame = &log[at..at + FRAME_HEADER];
        let page = &log[at + FRAME_HEADER..at + FRAME_HEADER + page_size];
        // A frame belongs to this log only with its salts and the running checksum.
        if &frame[8..16] != salts {
            break;
        }
        old_sum = checksum(page, checksum(&frame[..8], old_sum, big_endian), big_endian);
        if old_sum != (be32(frame, 16), be32(frame, 20)) {
            break;
        }
        new_sum = checksum(page, checksum(&frame[..8], new_sum, big_endian), big_endian);
        out.extend_from_slice(&frame[..8]);
        out.extend_from_slice(&[0; 8]);
        put_checksum(&mut out, new_sum);
        out.extend_from_slice(page);
        // A non-zero "database size" field marks a commit: frames after the last one are not
        // part of the database.
        if be32(frame, 4) != 0 {
            committed = out.len();
        }
        at += FRAME_HEADER + page_size;
    }
    out.truncate(committed);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log written by SQLite (Python's sqlite3): page size 512, three committed transactions.
    const REAL_LOG: &[u8] = include_bytes!("../../tests/fixtures/sqlite/three-commits.db-wal");

    /// Every frame of `log` that a reader takes (valid salts and checksum chain).
    fn valid_frames(log: &[u8]) -> usize {
        let big_endian = be32(log, 0) == MAGIC_BIG;
        let page_size = be32(log, 8) as usize;
        let mut sum = checksum(&log[..24], (0, 0), big_endian);
        assert_eq!(sum, (be32(log, 24), be32(log, 28)), "header checksum");
        let (mut at, mut frames) = (HEADER, 0);
        while at + FRAME_HEADER + page_size <= log.len() {
            let frame = &log[at..at + FRAME_HEADER];
            let page = &log[at + FRAME_HEADER..at + FRAME_HEADER + page_size];
            sum = checksum(page, checksum(&frame[..8], sum, big_endian), big_endian);
            if frame[8..16] != log[16..24] || sum != (be32(frame, 16), be32(frame, 20)) {
                break;
            }
            frames += 1;
            at += FRAME_HEADER + page_size;
        }
        frames
    }

    #[test]
    fn the_checksums_agree_with_sqlite() {
        // Every frame of SQLite's own log passes: the checksum is computed as SQLite does.
        let frames = (REAL_LOG.len() - HEADER) / (FRAME_HEADER + 512);
        assert!(frames >= 3);
        assert_eq!(valid_frames(REAL_LOG), frames);
    }

    #[test]
    fn logs_that_differ_only_in_salts_become_equal_and_stay_valid() {
        let normalized = normalize(REAL_LOG).unwrap();
        assert_eq!(normalized.len(), REAL_LOG.len(), "all frames are committed");
        assert_eq!(valid_frames(&normalized), valid_frames(REAL_LOG));
        assert_eq!(&normalized[12..24], &[0; 12]);
        // The same log under other salts (as a second run would write it).
        let mut other = REAL_LOG.to_vec();
        other[16..24].copy_from_slice(b"saltsalt");
        let header_sum = checksum(&other[..24], (0, 0), false);
        other[24..28].copy_from_slice(&header_sum.0.to_be_bytes());
        other[28..32].copy_from_slice(&header_sum.1.to_be_bytes());
        assert_eq!(valid_frames(&other), 0, "frames no longer match the salts");
        assert_eq!(normalize(&other).unwrap().len(), HEADER, "so none is kept");
        assert_eq!(normalize(&normalized).unwrap(), normalized, "idempotent");
    }

    #[test]
    fn a_torn_or_uncommitted_tail_is_dropped() {
        let normalized = normalize(REAL_LOG).unwrap();
        // A damaged last page: its frame fails the checksum, so its transaction is gone.
        let mut damaged = REAL_LOG.to_vec();
        let last = damaged.len() - 1;
        damaged[last] ^= 0xff;
        let shorter = normalize(&damaged).unwrap();
        assert!(shorter.len() < normalized.len());
        assert_eq!(shorter[..], normalized[..shorter.len()]);
        assert_eq!(
            valid_frames(&shorter),
            (shorter.len() - HEADER) / (FRAME_HEADER + 512)
        );
    }

    #[test]
    fn anything_else_is_left_alone() {
        assert_eq!(normalize(b""), None);
        assert_eq!(normalize(&[0u8; 64]), None);
        let mut bad_header = REAL_LOG.to_vec();
        bad_header[12] ^= 1;
        assert_eq!(normalize(&bad_header), None);
    }
}
