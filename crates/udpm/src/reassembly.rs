//! Reassembly of fragmented messages with bounded memory.
//!
//! A message in flight is keyed by (sender address, sequence number), as in LCM. Unlike LCM's C receiver, each
//! buffer remembers which fragments it has, so a duplicate fragment is ignored instead of completing the message
//! early with garbage; and the store is bounded by bytes and by messages: when a new message would exceed either
//! bound, an incomplete message of the sender holding the most is dropped, its least recently updated one (newest
//! data wins), and every drop is counted: a sender flooding fragments that never complete evicts its own messages,
//! not another sender's whose fragments are still arriving. A lost fragment therefore costs its whole message, never
//! a half-filled one. A message whose fragments
//! overlap or leave a hole (a forged or corrupt sender: their byte counts can add up to the total all the same) is
//! dropped as inconsistent at completion, never delivered with bytes no fragment carried.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use crate::packet::Fragment;

/// Bounds on what reassembly may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest total size a fragmented message may announce.
    pub max_message: usize,
    /// Most bytes reserved by incomplete messages at once.
    pub max_bytes_in_flight: usize,
    /// Most incomplete messages at once.
    pub max_messages_in_flight: usize,
}

impl Default for Limits {
    /// LCM's 256 MiB message cap and 1000-message store; 512 MiB in flight so one maximal message fits with room.
    fn default() -> Limits {
        Limits { max_message: 256 << 20, max_bytes_in_flight: 512 << 20, max_messages_in_flight: 1000 }
    }
}

/// What reassembly has done, for stats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Fragmented messages delivered whole.
    pub completed: u64,
    /// Fragments ignored because that fragment had already arrived.
    pub duplicate_fragments: u64,
    /// Incomplete messages dropped to make room, or replaced by a fragment that disagreed with them.
    pub dropped_incomplete: u64,
    /// Messages dropped because alone they exceed the in-flight byte bound.
    pub dropped_too_large: u64,
    /// Messages whose fragments, all present, did not add up to the announced size (a corrupt sender).
    pub dropped_inconsistent: u64,
}

/// A message put back together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassembled {
    /// Who sent it.
    pub sender: SocketAddr,
    /// Its sequence number.
    pub seq: u32,
    /// Its channel.
    pub channel: String,
    /// Its bytes.
    pub payload: Vec<u8>,
}

struct InFlight {
    total: u32,
    count: u16,
    have: Vec<u64>,
    fragments: u32,
    bytes: u64,
    /// Each arrived fragment's byte range in the payload (offset, length), checked to tile it at completion.
    ranges: Vec<(u32, u32)>,
    channel: Option<String>,
    payload: Vec<u8>,
    touched: u64,
}

/// How many skipped messages are remembered (their later fragments dropped unread); older ones are forgotten, and
/// a fragment of a forgotten one is buffered again like any other (bounded by [`Limits`]).
const SKIPPED_REMEMBERED: usize = 64;

/// What one sender's incomplete messages hold.
#[derive(Default)]
struct Held {
    bytes: usize,
    messages: usize,
}

/// The reassembly store of one receiver.
pub struct Reassembler {
    limits: Limits,
    in_flight: HashMap<(SocketAddr, u32), InFlight>,
    reserved: usize,
    /// Per sender with messages in flight, what they hold (the sum over senders is `reserved`, `in_flight.len()`).
    held: HashMap<SocketAddr, Held>,
    clock: u64,
    stats: ReassemblyStats,
    /// Messages nobody here wants (see [`Reassembler::skip`]), newest last.
    skipped: VecDeque<(SocketAddr, u32)>,
}

impl Reassembler {
    /// An empty store with these bounds.
    pub fn new(limits: Limits) -> Reassembler {
        Reassembler {
            limits,
            in_flight: HashMap::new(),
            reserved: 0,
            held: HashMap::new(),
            clock: 0,
            stats: ReassemblyStats::default(),
            skipped: VecDeque::new(),
        }
    }

    /// The bounds.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Counters so far.
    pub fn stats(&self) -> ReassemblyStats {
        self.stats
    }

    /// Incomplete messages held now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Bytes reserved by incomplete messages now.
    pub fn bytes_in_flight(&self) -> usize {
        self.reserved
    }

    fn remove(&mut self, key: &(SocketAddr, u32)) -> Option<InFlight> {
        let entry = self.in_flight.remove(key)?;
        self.reserved -= entry.total as usize;
        if let Some(h) = self.held.get_mut(&key.0) {
            h.bytes -= entry.total as usize;
            h.messages -= 1;
            if h.messages == 0 {
                self.held.remove(&key.0);
            }
        }
        Some(entry)
    }

    /// Drops incomplete messages until `need` more bytes and one more message fit. The one dropped is the least
    /// recently updated message of the sender that holds the most of what is short (bytes, or messages): a global
    /// least-recently-updated rule let a fast flood of fragments that never complete push out a slower sender's
    /// message between two of its fragments (seen in crates/udpm/tests/hostile.rs on a loaded host).
    fn make_room(&mut self, need: usize) {
        loop {
            let bytes_short = self.reserved + need > self.limits.max_bytes_in_flight;
            if self.in_flight.is_empty() || !(bytes_short || self.in_flight.len() >= self.limits.max_messages_in_flight)
            {
                return;
            }
            let share = |sender: &SocketAddr| {
                let h = &self.held[sender];
                if bytes_short {
                    h.bytes
                } else {
                    h.messages
                }
            };
            let victim = *self
                .in_flight
                .iter()
                .max_by_key(|((sender, _), e)| (share(sender), std::cmp::Reverse(e.touched)))
                .map(|(k, _)| k)
                .expect("not empty");
            self.remove(&victim);
            self.stats.dropped_incomplete += 1;
        }
    }

    /// Gives up message `seq` of `sender` because nobody here wants it (its channel, in fragment 0, matched no
    /// subscription): what arrived of it is freed, and its later fragments are dropped without being copied.
    pub fn skip(&mut self, sender: SocketAddr, seq: u32) {
        let key = (sender, seq);
        self.remove(&key);
        if !self.skipped.contains(&key) {
            if self.skipped.len() >= SKIPPED_REMEMBERED {
                self.skipped.pop_front();
            }
            self.skipped.push_back(key);
        }
    }

    /// Adds one (already validated) fragment; returns the message when it is complete.
    pub fn add(&mut self, sender: SocketAddr, frag: &Fragment<'_>) -> Option<Reassembled> {
        let key = (sender, frag.seq);
        if self.skipped.contains(&key) {
            return None;
        }
        self.clock += 1;
        // A fragment that disagrees with the message in flight under its key starts that message over (the sender
        // restarted, or its sequence numbers wrapped): the old one can never complete.
        if let Some(e) = self.in_flight.get(&key) {
            if e.total != frag.total || e.count != frag.count {
                self.remove(&key);
                self.stats.dropped_incomplete += 1;
            }
        }
        if !self.in_flight.contains_key(&key) {
            let total = frag.total as usize;
            if total > self.limits.max_bytes_in_flight {
                self.stats.dropped_too_large += 1;
                return None;
            }
            self.make_room(total);
            self.reserved += total;
            let held = self.held.entry(sender).or_default();
            held.bytes += total;
            held.messages += 1;
            self.in_flight.insert(
                key,
                InFlight {
                    total: frag.total,
                    count: frag.count,
                    have: vec![0; (frag.count as usize).div_ceil(64)],
                    fragments: 0,
                    bytes: 0,
                    ranges: Vec::new(),
                    channel: None,
                    // Zeroed allocation: large ones are fresh pages from the OS, so memory is only committed as
                    // fragments actually arrive; a forged total costs address space, not RAM.
                    payload: vec![0; total],
                    touched: 0,
                },
            );
        }
        let e = self.in_flight.get_mut(&key).expect("inserted above");
        e.touched = self.clock;
        let (word, bit) = (frag.number as usize / 64, 1u64 << (frag.number % 64));
        if e.have[word] & bit != 0 {
            self.stats.duplicate_fragments += 1;
            return None;
        }
        e.have[word] |= bit;
        e.fragments += 1;
        e.bytes += frag.data.len() as u64;
        e.ranges.push((frag.offset, frag.data.len() as u32));
        let at = frag.offset as usize;
        e.payload[at..at + frag.data.len()].copy_from_slice(frag.data);
        if let Some(c) = frag.channel {
            e.channel = Some(c.to_owned());
        }
        if e.fragments < e.count as u32 {
            return None;
        }
        let mut done = self.remove(&key).expect("present");
        match done.channel.take() {
            Some(channel) if done.bytes == done.total as u64 && tiles(&mut done.ranges, done.total) => {
                self.stats.completed += 1;
                Some(Reassembled { sender, seq: frag.seq, channel, payload: done.payload })
            }
            _ => {
                self.stats.dropped_inconsistent += 1;
                None
            }
        }
    }
}

/// Whether the fragments' byte ranges cover `0..total` exactly once (no overlap, no hole).
fn tiles(ranges: &mut [(u32, u32)], total: u32) -> bool {
    ranges.sort_unstable();
    let mut at = 0u64;
    for &(offset, len) in ranges.iter() {
        if u64::from(offset) != at {
            return false;
        }
        at += u64::from(len);
    }
    at == u64::from(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{parse, plan, write_fragment, Datagram, Plan};

    fn fragments(seq: u32, channel: &str, payload: &[u8]) -> Vec<Vec<u8>> {
        let Ok(Plan::Fragmented { count }) = plan(channel, payload.len()) else { panic!("expected fragments") };
        (0..count)
            .map(|n| {
                let mut b = Vec::new();
                write_fragment(&mut b, seq, channel, payload, n, count);
                b
            })
            .collect()
    }

    fn feed(r: &mut Reassembler, from: SocketAddr, datagram: &[u8]) -> Option<Reassembled> {
        match parse(datagram, r.limits().max_message).expect("valid") {
            Datagram::Fragment(f) => r.add(from, &f),
            Datagram::Small { .. } => panic!("not a fragment"),
        }
    }

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn any_order_reassembles() {
        let p = payload(200_000);
        let frags = fragments(5, "CAM", &p);
        let mut r = Reassembler::new(Limits::default());
        let mut order: Vec<usize> = (0..frags.len()).rev().collect();
        order.rotate_left(1);
        let mut out = None;
        for i in order {
            out = feed(&mut r, addr(1), &frags[i]).or(out);
        }
        let m = out.expect("complete");
        assert_eq!((m.channel.as_str(), m.seq, m.payload == p), ("CAM", 5, true));
        assert_eq!(r.in_flight(), 0);
        assert_eq!(r.bytes_in_flight(), 0);
    }

    #[test]
    fn a_skipped_message_is_freed_and_its_later_fragments_are_not_held() {
        let p = payload(200_000);
        let frags = fragments(9, "CAM", &p);
        let mut r = Reassembler::new(Limits::default());
        // A fragment that came before fragment 0 is held until the channel is known ...
        assert_eq!(feed(&mut r, addr(1), &frags[2]), None);
        assert_eq!(r.in_flight(), 1);
        // ... and freed when the receiver, reading fragment 0, skips the message.
        r.skip(addr(1), 9);
        assert_eq!((r.in_flight(), r.bytes_in_flight()), (0, 0));
        for f in &frags[1..] {
            assert_eq!(feed(&mut r, addr(1), f), None);
        }
        assert_eq!(r.in_flight(), 0, "later fragments are dropped, not held");
        // The same sequence number from another sender is another message.
        let mut out = None;
        for f in &frags {
            out = feed(&mut r, addr(2), f).or(out);
        }
        assert_eq!(out.map(|m| m.payload == p), Some(true));
        assert_eq!(r.stats().dropped_incomplete, 0);
    }

    #[test]
    fn duplicates_do_not_complete_a_message_early() {
        // LCM C delivers a 3-fragment message with garbage if fragment 0 arrives twice and fragment 1 never does.
        let p = payload(150_000);
        let frags = fragments(1, "X", &p);
        assert_eq!(frags.len(), 3);
        let mut r = Reassembler::new(Limits::default());
        assert_eq!(feed(&mut r, addr(1), &frags[0]), None);
        assert_eq!(feed(&mut r, addr(1), &frags[0]), None);
        assert_eq!(feed(&mut r, addr(1), &frags[2]), None);
        assert_eq!(r.stats().duplicate_fragments, 1);
        assert_eq!(feed(&mut r, addr(1), &frags[1]).map(|m| m.payload == p), Some(true));
    }

    #[test]
    fn senders_and_sequence_numbers_are_kept_apart() {
        let (a, b) = (payload(100_000), vec![9u8; 100_000]);
        let (fa, fb) = (fragments(1, "A", &a), fragments(1, "A", &b));
        let mut r = Reassembler::new(Limits::default());
        assert_eq!(feed(&mut r, addr(1), &fa[0]), None);
        assert_eq!(feed(&mut r, addr(2), &fb[0]), None);
        assert_eq!(feed(&mut r, addr(2), &fb[1]).map(|m| m.payload == b), Some(true));
        assert_eq!(feed(&mut r, addr(1), &fa[1]).map(|m| m.payload == a), Some(true));
    }

    #[test]
    fn memory_is_bounded_and_the_oldest_goes_first() {
        let limits = Limits { max_message: 1 << 20, max_bytes_in_flight: 250_000, max_messages_in_flight: 1000 };
        let mut r = Reassembler::new(limits);
        let msgs: Vec<_> = (0..3).map(|s| fragments(s, "M", &payload(100_000))).collect();
        // Three incomplete 100 kB messages do not fit in 250 kB: the first is dropped for the third.
        for m in &msgs {
            assert_eq!(feed(&mut r, addr(1), &m[0]), None);
        }
        assert_eq!(r.in_flight(), 2);
        assert!(r.bytes_in_flight() <= 250_000);
        assert_eq!(r.stats().dropped_incomplete, 1);
        // The dropped message's last fragment starts it over and can never complete it; the others complete.
        assert!(feed(&mut r, addr(1), &msgs[1][1]).is_some());
        assert!(feed(&mut r, addr(1), &msgs[2][1]).is_some());
        // A message that alone exceeds the bound is refused outright.
        let big = fragments(9, "M", &payload(300_000));
        assert_eq!(feed(&mut r, addr(1), &big[0]), None);
        assert_eq!(r.stats().dropped_too_large, 1);
    }

    #[test]
    fn a_flooding_sender_evicts_its_own_messages_not_anothers() {
        // Bytes short: sender 2's messages that never complete make room for each other, never by dropping sender
        // 1's message, although it is the least recently updated.
        let limits = Limits { max_message: 1 << 20, max_bytes_in_flight: 250_000, max_messages_in_flight: 1000 };
        let mut r = Reassembler::new(limits);
        let good = fragments(1, "G", &payload(100_000));
        assert_eq!(feed(&mut r, addr(1), &good[0]), None);
        for s in 0..10 {
            assert_eq!(feed(&mut r, addr(2), &fragments(100 + s, "E", &payload(70_000))[0]), None);
        }
        assert!(r.bytes_in_flight() <= 250_000);
        assert_eq!(r.stats().dropped_incomplete, 8);
        let rest = good[1..].iter().filter_map(|f| feed(&mut r, addr(1), f)).next();
        assert_eq!(rest.map(|m| m.payload), Some(payload(100_000)));
        // Messages short: the same with the count bound.
        let limits = Limits { max_message: 1 << 20, max_bytes_in_flight: 1 << 30, max_messages_in_flight: 4 };
        let mut r = Reassembler::new(limits);
        assert_eq!(feed(&mut r, addr(1), &good[0]), None);
        for s in 0..10 {
            feed(&mut r, addr(2), &fragments(100 + s, "E", &payload(70_000))[0]);
        }
        assert_eq!((r.in_flight(), r.stats().dropped_incomplete), (4, 7));
        let rest = good[1..].iter().filter_map(|f| feed(&mut r, addr(1), f)).next();
        assert_eq!(rest.map(|m| m.payload), Some(payload(100_000)));
    }

    #[test]
    fn message_count_is_bounded() {
        let limits = Limits { max_message: 1 << 20, max_bytes_in_flight: 1 << 30, max_messages_in_flight: 4 };
        let mut r = Reassembler::new(limits);
        for s in 0..10 {
            feed(&mut r, addr(1), &fragments(s, "M", &payload(70_000))[0]);
        }
        assert_eq!(r.in_flight(), 4);
        assert_eq!(r.stats().dropped_incomplete, 6);
    }

    #[test]
    fn a_disagreeing_fragment_restarts_the_message() {
        let mut r = Reassembler::new(Limits::default());
        let a = fragments(3, "A", &payload(100_000));
        let b = fragments(3, "A", &payload(140_000));
        feed(&mut r, addr(1), &a[0]);
        feed(&mut r, addr(1), &b[0]);
        assert_eq!(r.stats().dropped_incomplete, 1);
        assert_eq!(feed(&mut r, addr(1), &b[1]), None);
        assert_eq!(feed(&mut r, addr(1), &b[2]).map(|m| m.payload.len()), Some(140_000));
    }

    #[test]
    fn fragments_that_do_not_add_up_are_dropped() {
        // Two fragments that both claim offset 0 cover only part of the message.
        let mut r = Reassembler::new(Limits::default());
        let mut f0 = Vec::new();
        f0.extend_from_slice(b"LC03\0\0\0\x01\0\0\0\x0a\0\0\0\0\0\0\0\x02c\0abc");
        let mut f1 = Vec::new();
        f1.extend_from_slice(b"LC03\0\0\0\x01\0\0\0\x0a\0\0\0\0\0\x01\0\x02def");
        assert_eq!(feed(&mut r, addr(1), &f0), None);
        assert_eq!(feed(&mut r, addr(1), &f1), None);
        assert_eq!(r.stats().dropped_inconsistent, 1);
    }

    #[test]
    fn overlapping_fragments_whose_sizes_add_up_are_dropped_not_delivered_with_a_hole() {
        // Total 6: fragment 0 carries bytes 0..3, fragment 1 claims offset 2 with 3 bytes (2..5): 3 + 3 = 6, yet
        // byte 5 was never sent and byte 2 twice. LCM's receiver would deliver it.
        let mut r = Reassembler::new(Limits::default());
        let f0 = b"LC03\0\0\0\x01\0\0\0\x06\0\0\0\0\0\0\0\x02c\0abc".to_vec();
        let f1 = b"LC03\0\0\0\x01\0\0\0\x06\0\0\0\x02\0\x01\0\x02def".to_vec();
        assert_eq!(feed(&mut r, addr(1), &f0), None);
        assert_eq!(feed(&mut r, addr(1), &f1), None);
        assert_eq!((r.stats().dropped_inconsistent, r.stats().completed), (1, 0));
        // The same message with fragment 1 where it belongs completes.
        let f1 = b"LC03\0\0\0\x02\0\0\0\x06\0\0\0\x03\0\x01\0\x02def".to_vec();
        let f0 = b"LC03\0\0\0\x02\0\0\0\x06\0\0\0\0\0\0\0\x02c\0abc".to_vec();
        assert_eq!(feed(&mut r, addr(1), &f0), None);
        assert_eq!(feed(&mut r, addr(1), &f1).map(|m| m.payload), Some(b"abcdef".to_vec()));
    }
}
