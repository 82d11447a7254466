//! loom model checks of views (`Reader::view`, spec/shm-protocol.md `V1`/`V2`) over heap memory with atomic data
//! words: a view held while a writer wraps the data ring over its frame never passes a check with torn or foreign
//! bytes, and reports the reclaiming once it happened. Under loom a view's `read`/`to_vec` read the data words
//! again, so every racing load is in the model. (Taking a view, `V1`, is `G1`-`G5`, which tests/loom.rs covers
//! racing writers through `get`.) Run by scripts/test as
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p nerve-shm --release --test loom_view`.

#![cfg(loom)]

use loom::thread;
use nerve_shm::{Channel, GetOutcome, ReadMode, Wait};

/// 16 bytes that check themselves: a tag and a function of it.
fn message(tag: u64) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[..8].copy_from_slice(&tag.to_le_bytes());
    m[8..].copy_from_slice(&(tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555).to_le_bytes());
    m
}

/// The tag of an intact message; panics on a torn one.
fn tag_of(bytes: &[u8]) -> u64 {
    assert_eq!(bytes.len(), 16);
    let tag = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let check = u64::from_le_bytes(bytes[8..].try_into().unwrap());
    assert_eq!(check, tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555, "torn message: {bytes:?}");
    tag
}

#[test]
fn a_view_held_while_a_writer_wraps_over_its_frame_never_passes_a_torn_read() {
    loom::model(|| {
        // N = 2 entries, C = 48 bytes: message 1 is at bytes 0..16, and the third put after it (at 48, offset 0)
        // reclaims them.
        let ch = Channel::in_memory(2, 16).unwrap();
        let mut w = ch.writer();
        w.put(&message(1)).unwrap();
        let mut r = ch.reader();
        let GetOutcome::Message(view) = r.view(ReadMode::Newest, Wait::Poll).unwrap() else { panic!("no view") };
        assert_eq!(view.seq(), 1);
        let writer = thread::spawn(move || {
            for k in 2..=4 {
                w.put(&message(k)).unwrap();
            }
        });
        match view.to_vec() {
            Ok(bytes) => assert_eq!(tag_of(&bytes), 1, "a passing check vouched for another message's bytes"),
            Err(e) => assert_eq!(e.seq(), 1),
        }
        writer.join().unwrap();
        assert!(view.check().is_err(), "the frame was reclaimed: the view must say so");
        assert!(view.to_vec().is_err());
    });
}
