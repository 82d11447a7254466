//! Reader tests: clean logs, each kind of damage, and that every intact event after damage is recovered.

use std::io::Cursor;

use super::*;
use crate::{Event, LogWriter};

fn event(i: usize, len: usize) -> Event {
    // Data never holds 0xED, so no sync word can appear inside an event by chance.
    let data = (0..len).map(|k| ((k * 7 + i * 13) % 200) as u8).collect();
    Event { number: i as i64, utime: 1_700_000_000_000_000 + i as i64 * 1000, channel: format!("CH_{}", i % 5), data }
}

fn encode(events: &[Event]) -> (Vec<u8>, Vec<usize>) {
    let mut w = LogWriter::new(Vec::new());
    let mut offsets = Vec::new();
    for e in events {
        offsets.push(w.bytes_written() as usize);
        w.write_numbered(e.number, e.utime, e.channel.as_bytes(), &e.data).unwrap();
    }
    (w.into_inner(), offsets)
}

fn read_all(bytes: Vec<u8>) -> (Vec<Event>, Vec<Damage>, LogReader<Cursor<Vec<u8>>>) {
    let len = bytes.len() as u64;
    let mut r = LogReader::new(Cursor::new(bytes)).unwrap();
    let mut out = Vec::new();
    let mut event_bytes = 0;
    while let Some(e) = r.next_event().unwrap() {
        event_bytes += e.encoded_len();
        out.push(e.to_owned());
    }
    // Every byte is accounted for: inside an event or in a damaged region.
    assert_eq!(event_bytes + r.damage_totals().bytes, len);
    let d = r.damage().to_vec();
    (out, d, r)
}

fn sample(n: usize) -> Vec<Event> {
    (0..n).map(|i| event(i, i * 37 % 300)).collect()
}

#[test]
fn clean_log_reads_back_exactly() {
    let events = sample(50);
    let (bytes, _) = encode(&events);
    let (got, damage, r) = read_all(bytes.clone());
    assert_eq!(got, events);
    assert!(damage.is_empty());
    assert_eq!(r.offset(), bytes.len() as u64);
    assert_eq!(r.events_read(), 50);
}

#[test]
fn empty_file_has_no_events_and_no_damage() {
    let (got, damage, _) = read_all(Vec::new());
    assert!(got.is_empty() && damage.is_empty());
}

#[test]
fn a_file_without_a_sync_word_is_not_a_log() {
    for bytes in [
        b"hello, this is a text file\n".to_vec(),
        (0..600_000u32).map(|i| (i * 7 % 200) as u8).collect(),
        b"ab".to_vec(),
    ] {
        let len = bytes.len() as u64;
        let (got, damage, r) = read_all(bytes);
        assert!(got.is_empty());
        assert_eq!(damage, [Damage { offset: 0, kind: DamageKind::NotALog, skipped: len }]);
        assert!(r.is_not_a_log());
        assert!(damage[0].to_string().starts_with("offset 0: not an LCM event log"), "{}", damage[0]);
    }
    // Junk in front of real events, and a log that is only a truncated header, stay damage.
    let (mut bytes, _) = encode(&sample(2));
    bytes.truncate(20);
    let (_, damage, r) = read_all(bytes);
    assert_eq!(damage[0].kind, DamageKind::TruncatedHeader);
    assert!(!r.is_not_a_log());
}

#[test]
fn events_bigger_than_the_buffer() {
    let events = vec![event(0, 10), event(1, 3 * BUF_LEN + 5), event(2, 10), event(3, BUF_LEN), event(4, 1)];
    let (bytes, _) = encode(&events);
    let (got, damage, _) = read_all(bytes);
    assert_eq!(got, events);
    assert!(damage.is_empty());
}

#[test]
fn junk_before_the_first_event_is_skipped_and_reported() {
    let events = sample(3);
    let (bytes, _) = encode(&events);
    let mut junk = b"not a log at all".to_vec();
    junk.extend_from_slice(&bytes);
    let (got, damage, _) = read_all(junk);
    assert_eq!(got, events);
    assert_eq!(damage, [Damage { offset: 0, kind: DamageKind::Garbage, skipped: 16 }]);
}

#[test]
fn garbage_between_events_loses_nothing() {
    let events = sample(6);
    let (bytes, offsets) = encode(&events);
    let cut = offsets[3];
    let mut damaged = bytes[..cut].to_vec();
    damaged.extend_from_slice(&[0x11; 77]);
    damaged.extend_from_slice(&bytes[cut..]);
    let (got, damage, _) = read_all(damaged);
    // LCM's reader stops here and drops event 2 too; this one keeps all six.
    assert_eq!(got, events);
    assert_eq!(damage, [Damage { offset: cut as u64, kind: DamageKind::Garbage, skipped: 77 }]);
}

#[test]
fn truncated_last_event_is_reported() {
    let events = sample(5);
    let (bytes, offsets) = encode(&events);
    let cut = bytes.len() - 10;
    let (got, damage, _) = read_all(bytes[..cut].to_vec());
    assert_eq!(got, events[..4]);
    let claimed = (bytes.len() - offsets[4]) as u64;
    assert_eq!(
        damage,
        [Damage {
            offset: offsets[4] as u64,
            kind: DamageKind::TruncatedEvent { claimed },
            skipped: (cut - offsets[4]) as u64
        }]
    );
}

#[test]
fn truncated_header_at_the_end_is_reported() {
    let events = sample(3);
    let (bytes, offsets) = encode(&events);
    for keep in [1, 3, 4, 20, 27] {
        let cut = offsets[2] + keep;
        let (got, damage, _) = read_all(bytes[..cut].to_vec());
        assert_eq!(got, events[..2], "keep {keep}");
        assert_eq!(
            damage,
            [Damage { offset: offsets[2] as u64, kind: DamageKind::TruncatedHeader, skipped: keep as u64 }]
        );
    }
}

#[test]
fn huge_length_field_neither_allocates_nor_loses_what_follows() {
    let events = sample(6);
    let (mut bytes, offsets) = encode(&events);
    let at = offsets[2];
    bytes[at + 24..at + 28].copy_from_slice(&i32::MAX.to_be_bytes());
    let (got, damage, r) = read_all(bytes);
    let mut want = events.clone();
    want.remove(2);
    assert_eq!(got, want);
    assert_eq!(damage.len(), 1);
    assert_eq!(damage[0].offset, at as u64);
    assert!(matches!(damage[0].kind, DamageKind::BadLength { .. }));
    assert_eq!(damage[0].skipped, (offsets[3] - at) as u64);
    assert!(r.buf.len() <= BUF_LEN, "the buffer grew to {}", r.buf.len());
}

#[test]
fn huge_length_in_the_last_event_is_a_truncation() {
    let events = sample(3);
    let (mut bytes, offsets) = encode(&events);
    let at = offsets[2];
    bytes[at + 24..at + 28].copy_from_slice(&0x7fff_fff0i32.to_be_bytes());
    let (got, damage, r) = read_all(bytes.clone());
    assert_eq!(got, events[..2]);
    assert!(matches!(damage[..], [Damage { kind: DamageKind::TruncatedEvent { .. }, .. }]));
    assert_eq!(damage[0].skipped, (bytes.len() - at) as u64);
    assert!(r.buf.len() <= BUF_LEN);
}

#[test]
fn bad_headers_are_skipped_to_the_next_sync_word() {
    for (field, value) in [(20, 0i32), (20, 1000), (20, -1), (24, -5)] {
        let events = sample(5);
        let (mut bytes, offsets) = encode(&events);
        let at = offsets[1];
        bytes[at + field..at + field + 4].copy_from_slice(&value.to_be_bytes());
        let (got, damage, _) = read_all(bytes);
        let mut want = events.clone();
        want.remove(1);
        assert_eq!(got, want, "field {field} = {value}");
        assert_eq!(damage.len(), 1);
        assert!(matches!(damage[0].kind, DamageKind::BadHeader { .. }));
        assert_eq!((damage[0].offset, damage[0].skipped), (at as u64, (offsets[2] - at) as u64));
    }
}

#[test]
fn a_length_that_overlaps_the_next_event_drops_only_that_event() {
    let events = sample(5);
    let (mut bytes, offsets) = encode(&events);
    let at = offsets[1];
    let dl = events[1].data.len() as i32 + 10;
    bytes[at + 24..at + 28].copy_from_slice(&dl.to_be_bytes());
    let (got, damage, _) = read_all(bytes);
    let mut want = events.clone();
    want.remove(1);
    assert_eq!(got, want);
    assert_eq!(
        damage,
        [Damage {
            offset: at as u64,
            kind: DamageKind::BadLength { claimed: (offsets[2] - at + 10) as u64 },
            skipped: (offsets[2] - at) as u64
        }]
    );
}

#[test]
fn a_big_event_with_a_bad_length_is_checked_without_reading_it() {
    // The claimed end is far beyond the buffer: peeked by seeking.
    let events = vec![event(0, 5), event(1, 2 * BUF_LEN), event(2, 5), event(3, 5)];
    let (mut bytes, offsets) = encode(&events);
    let at = offsets[1];
    let dl = events[1].data.len() as i32 + 3;
    bytes[at + 24..at + 28].copy_from_slice(&dl.to_be_bytes());
    let (got, damage, _) = read_all(bytes);
    assert_eq!(got, [events[0].clone(), events[2].clone(), events[3].clone()]);
    assert_eq!(damage.len(), 1);
    assert_eq!(damage[0].skipped, (offsets[2] - at) as u64);
}

#[test]
fn random_garbage_anywhere_between_events_loses_no_event() {
    // A small deterministic generator: no dependency, same cases every run.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..200 {
        let n = 1 + (next() % 20) as usize;
        let events: Vec<Event> = (0..n).map(|i| event(i + round, (next() % 400) as usize)).collect();
        let (bytes, offsets) = encode(&events);
        let mut damaged = Vec::new();
        let mut garbage_total = 0u64;
        let mut regions = 0;
        for (i, &start) in offsets.iter().enumerate() {
            if next() % 3 == 0 {
                let len = 1 + (next() % 100) as usize;
                // Garbage never holds 0xED, so it cannot hold a sync word.
                damaged.extend((0..len).map(|_| (next() % 0xED) as u8));
                garbage_total += len as u64;
                regions += 1;
            }
            let end = offsets.get(i + 1).copied().unwrap_or(bytes.len());
            damaged.extend_from_slice(&bytes[start..end]);
        }
        let (got, damage, r) = read_all(damaged);
        assert_eq!(got, events, "round {round}");
        assert_eq!(r.damage_totals(), DamageTotals { regions, bytes: garbage_total }, "round {round}");
        assert!(damage.iter().all(|d| d.kind == DamageKind::Garbage));
    }
}

#[test]
fn seek_to_resynchronises() {
    let events = sample(10);
    let (bytes, offsets) = encode(&events);
    let mut r = LogReader::new(Cursor::new(bytes)).unwrap();
    r.seek_to(offsets[4] as u64 + 3).unwrap();
    assert_eq!(r.next_event().unwrap().unwrap().to_owned(), events[5]);
    assert!(r.damage().is_empty());
}

#[test]
fn damage_records_are_capped_but_counted() {
    let mut bytes = Vec::new();
    // Each bad header is its own region: a sync word, then a channel length of 0.
    for _ in 0..(MAX_DAMAGE_RECORDS + 10) {
        bytes.extend_from_slice(&SYNC_BYTES);
        bytes.extend_from_slice(&[0u8; 24]);
    }
    let (got, damage, r) = read_all(bytes);
    assert!(got.is_empty());
    assert_eq!(damage.len(), MAX_DAMAGE_RECORDS);
    assert_eq!(r.damage_totals().regions, MAX_DAMAGE_RECORDS as u64 + 10);
}
