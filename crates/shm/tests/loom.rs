//! loom model checks of the put/get protocol (`ring`) over heap memory with atomic data words: every interleaving
//! (up to loom's preemption bound) of two writers and a reader, and of a writer that dies at each step of a put
//! followed by a writer that recovers (`REC`). Run by scripts/test as
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p nerve-shm --release --test loom`.

#![cfg(loom)]

use loom::thread;
use nerve_shm::{Channel, GetOutcome, MessageInfo, ReadMode, Reader, Wait};

/// 16 bytes that check themselves: a tag (writer << 32 | counter) and a function of it.
fn message(writer: u64, counter: u64) -> [u8; 16] {
    let tag = writer << 32 | counter;
    let mut m = [0u8; 16];
    m[..8].copy_from_slice(&tag.to_le_bytes());
    m[8..].copy_from_slice(&(tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555).to_le_bytes());
    m
}

/// The tag of an intact message; panics on a torn one.
fn check(bytes: &[u8]) -> u64 {
    assert_eq!(bytes.len(), 16);
    let tag = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let check = u64::from_le_bytes(bytes[8..].try_into().unwrap());
    assert_eq!(check, tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555, "torn message: {bytes:?}");
    tag
}

/// A reader and the sequence number of the last message it was given.
struct Checked {
    reader: Reader,
    delivered: u64,
}

impl Checked {
    fn new(reader: Reader) -> Checked {
        let delivered = reader.last_seq();
        Checked { reader, delivered }
    }

    /// One poll; checks the message, that seqs only go forward and, in order, that `missed` accounts exactly for
    /// the gap since the last message it was given (misses found by a get that returned nothing are reported with
    /// the next message).
    fn poll(&mut self, mode: ReadMode) -> Option<(MessageInfo, u64)> {
        let mut buf = [0u8; 16];
        match self.reader.get(&mut buf, mode, Wait::Poll).unwrap() {
            GetOutcome::Message(info) => {
                let tag = check(&buf[..info.len]);
                assert!(info.seq > self.delivered, "sequence went back: {} -> {}", self.delivered, info.seq);
                if mode == ReadMode::Next {
                    assert_eq!(info.seq, self.delivered + 1 + info.missed, "missed count wrong");
                }
                self.delivered = info.seq;
                Some((info, tag))
            }
            GetOutcome::NothingNew | GetOutcome::Retry => None,
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn two_writers_and_a_reader_no_torn_read_seqs_forward_missed_exact_newest_reachable() {
    loom::model(|| {
        // N = 2 entries, C = 3 frames of 16 bytes: the third put reuses an entry and wraps the data ring.
        let ch = Channel::in_memory(2, 16).unwrap();
        let writers: Vec<_> = [(1u64, 2u64), (2, 1)]
            .into_iter()
            .map(|(id, count)| {
                let mut w = ch.writer();
                thread::spawn(move || {
                    for k in 0..count {
                        w.put(&message(id, k)).unwrap();
                    }
                })
            })
            .collect();
        let mut reader = Checked::new(ch.reader());
        let mut last_counter = [None::<u64>; 3];
        for _ in 0..2 {
            if let Some((_, tag)) = reader.poll(ReadMode::Next) {
                let (writer, counter) = ((tag >> 32) as usize, tag & 0xffff_ffff);
                assert!(last_counter[writer].is_none_or(|c| counter > c), "writer {writer} went back");
                last_counter[writer] = Some(counter);
            }
        }
        for w in writers {
            w.join().unwrap();
        }
        // Newest reachable: once the writers are done, the newest (seq 3) is there, intact.
        let mut late = Checked::new(ch.reader());
        let (info, _) = late.poll(ReadMode::Newest).expect("the newest message");
        assert_eq!(info.seq, 3);
        if reader.delivered < 3 {
            let (info, _) = reader.poll(ReadMode::Newest).expect("the newest message");
            assert_eq!(info.seq, 3);
        }
    });
}

#[test]
fn a_reader_racing_puts_that_wrap_the_data_ring_never_sees_a_torn_message() {
    loom::model(|| {
        let ch = Channel::in_memory(2, 16).unwrap();
        let mut w = ch.writer();
        w.put(&message(1, 0)).unwrap();
        let mut reader = Checked::new(ch.reader()); // starts at seq 1
        let writer = thread::spawn(move || {
            for k in 1..4 {
                w.put(&message(1, k)).unwrap();
            }
        });
        let mut got = Vec::new();
        for _ in 0..2 {
            if let Some((info, tag)) = reader.poll(ReadMode::Next) {
                assert_eq!(tag & 0xffff_ffff, info.seq - 1, "message {} holds another's bytes", info.seq);
                got.push(info.seq);
            }
        }
        writer.join().unwrap();
        if reader.delivered < 4 {
            let (info, _) = reader.poll(ReadMode::Newest).unwrap_or_else(|| panic!("newest after {got:?}"));
            assert_eq!(info.seq, 4);
        }
    });
}

#[test]
fn a_writer_that_dies_at_any_step_is_recovered_by_the_next() {
    // Step k: killed after W1..Wk (8: after W8's data_head store, 9: after all of W8, still holding the lock).
    for step in 1..=9 {
        loom::model(move || {
            let ch = Channel::in_memory(2, 16).unwrap();
            let mut first = ch.writer();
            first.put(&message(1, 0)).unwrap();
            let mut reader = Checked::new(ch.reader());
            let mut dying = ch.writer();
            let dead = thread::spawn(move || dying.put_and_die_after(&message(2, 0), step));
            let mut other = ch.writer();
            let next = thread::spawn(move || other.put(&message(3, 0)).unwrap());
            // A reader racing both sees only whole messages, in order.
            reader.poll(ReadMode::Next);
            dead.join().unwrap();
            next.join().unwrap();
            // Whichever ran first, one later lock found the owner dead and recovered: the dead put is published
            // iff it got past W6, and the final put comes right after.
            let last = ch.writer().put(&message(4, 0)).unwrap();
            assert_eq!(last, 3 + u64::from(step >= 6), "step {step}");
            assert_eq!(ch.stats().recoveries, 1, "step {step}");
            let mut all = Checked::new(ch.reader_from_oldest());
            let mut seen = Vec::new();
            while let Some((info, tag)) = all.poll(ReadMode::Next) {
                seen.push((info.seq, tag >> 32));
            }
            assert_eq!(seen.last(), Some(&(last, 4)), "step {step}: newest reachable");
            assert_eq!(seen.len(), 2, "step {step}: {seen:?}");
        });
    }
}

/// B-REG, B-RING and B-WAIT: a wait set that adds a channel while a writer puts on it, and then sleeps with no
/// deadline, is handed the channel's key and gets the message; the doorbell's futex is modelled as the kernel's (no
/// timeout, no spurious wake-up), so a lost wake-up would leave the waiter blocked forever, which loom reports.
#[test]
fn a_wait_set_that_registers_while_a_writer_puts_is_never_left_asleep() {
    loom::model(|| {
        let quiet = Channel::in_memory(2, 16).unwrap();
        let ch = Channel::in_memory(2, 16).unwrap();
        let mut w = ch.writer();
        let mut reader = Checked::new(ch.reader_after_newest());
        let (quiet2, ch2) = (quiet.clone(), ch.clone());
        let waiter = thread::spawn(move || {
            let mut set = nerve_shm::WaitSet::in_memory();
            set.add(&quiet2);
            let key = set.add(&ch2);
            let mut ready = Vec::new();
            loop {
                if ready.contains(&key) {
                    if let Some((info, _)) = reader.poll(ReadMode::Next) {
                        return info.seq;
                    }
                }
                set.wait(None, &mut ready);
            }
        });
        w.put(&message(1, 0)).unwrap();
        assert_eq!(waiter.join().unwrap(), 1);
    });
}
