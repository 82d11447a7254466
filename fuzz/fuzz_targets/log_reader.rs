//! Fuzzes the event-log reader: any bytes must read as events and damage, never a panic or a huge allocation;
//! every byte of the input is accounted for (inside an event or in a damaged region); and the events read, written
//! again by the writer, read back identically with no damage.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use nerve_log::{Event, LogReader, LogWriter};

fuzz_target!(|data: &[u8]| {
    let mut r = LogReader::new(Cursor::new(data)).expect("a cursor does not fail");
    let mut events: Vec<(Event, Vec<u8>)> = Vec::new();
    let mut event_bytes = 0u64;
    while let Some(e) = r.next_event().expect("a cursor does not fail") {
        event_bytes += e.encoded_len();
        events.push((e.to_owned(), e.channel_bytes.to_vec()));
    }
    let damage = r.damage_totals();
    assert_eq!(event_bytes + damage.bytes, data.len() as u64, "every byte is an event's or damage's");
    if (damage.regions as usize) <= nerve_log::MAX_DAMAGE_RECORDS {
        let listed: u64 = r.damage().iter().map(|d| d.skipped).sum();
        assert_eq!(listed, damage.bytes);
    }
    let mut w = LogWriter::new(Vec::new());
    for (e, channel) in &events {
        w.write_numbered(e.number, e.utime, channel, &e.data).expect("a read event can be written");
    }
    let bytes = w.into_inner();
    let mut again = LogReader::new(Cursor::new(&bytes[..])).expect("a cursor does not fail");
    for (e, _) in &events {
        let got = again.next_event().expect("a cursor does not fail").expect("as many events");
        assert_eq!(&got.to_owned(), e);
    }
    assert!(again.next_event().expect("a cursor does not fail").is_none());
    assert_eq!(again.damage_totals().regions, 0);
});
