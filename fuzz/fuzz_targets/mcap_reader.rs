//! Fuzzes the MCAP recording reader: any bytes must read as messages followed by the end or an error, never a
//! panic, a hang or an allocation past the reader's record limit, and nothing is read after the end or an error.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use nerve_log::mcap::{McapReader, MAX_RECORD};

fuzz_target!(|data: &[u8]| {
    let mut r = McapReader::from_reader(Cursor::new(data.to_vec()), data.len() as u64);
    loop {
        match r.next_event() {
            Ok(Some(e)) => assert!(e.data.len() <= MAX_RECORD, "a message past the record limit"),
            Ok(None) | Err(_) => break,
        }
    }
    assert!(matches!(r.next_event(), Ok(None)), "nothing after the end or an error");
});
