//! Fuzzes the udpm receive path without sockets: the input is a run of datagrams (each behind a 2-byte length, from
//! one of four senders), parsed, reassembled with small bounds, and followed for gaps in the senders' sequence
//! numbers. Nothing may panic, the bounds must hold, a delivered message must be exactly as long as its fragments
//! announced, and no datagram may count more unseen messages than its jump allows.
#![no_main]

use std::net::SocketAddr;

use libfuzzer_sys::fuzz_target;
use nerve_udpm::packet::{parse, Datagram};
use nerve_udpm::sequence::{Sequences, MAX_GAP};
use nerve_udpm::{Limits, Reassembler};

fuzz_target!(|data: &[u8]| {
    // A message over 64 KiB can never complete within one input (scripts/fuzz-soak caps inputs at 64 KiB), so a
    // larger cap would only buy a zeroed buffer per announced total: 1 MiB caps held the soak to 3,000 inputs/s.
    let limits = Limits { max_message: 1 << 16, max_bytes_in_flight: 3 << 15, max_messages_in_flight: 8 };
    let mut r = Reassembler::new(limits);
    let mut seqs = Sequences::default();
    let mut rest = data;
    while rest.len() >= 3 {
        let sender = SocketAddr::from(([127, 0, 0, 1], 1000 + (rest[0] % 4) as u16));
        let len = (u16::from_be_bytes([rest[1], rest[2]]) as usize).min(rest.len() - 3);
        let datagram = &rest[3..3 + len];
        rest = &rest[3 + len..];
        let unseen = seqs.unseen();
        match parse(datagram, limits.max_message) {
            Err(_) => {}
            Ok(Datagram::Small { seq, channel, .. }) => {
                assert!(channel.len() <= 63);
                seqs.note(sender, seq, Some(channel));
            }
            Ok(Datagram::Fragment(f)) => {
                seqs.note(sender, f.seq, f.channel);
                assert!(f.offset as u64 + f.data.len() as u64 <= f.total as u64);
                if let Some(m) = r.add(sender, &f) {
                    assert_eq!(m.payload.len(), f.total as usize);
                }
            }
        }
        assert!(seqs.unseen() <= unseen + u64::from(MAX_GAP), "one datagram counts at most one jump");
        assert!(r.bytes_in_flight() <= limits.max_bytes_in_flight);
        assert!(r.in_flight() <= limits.max_messages_in_flight);
    }
});
