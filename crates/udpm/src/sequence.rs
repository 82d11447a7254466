//! Messages that never arrived, told from gaps in each sender's sequence numbers.
//!
//! An LCM sender numbers its messages 0, 1, 2, ... (one number per message, every fragment of it carrying the same
//! number; a send that fails still uses its number up). A receiver that hears every message a sender sends to its
//! port (udpm: one group and port) can therefore count the messages of which not one datagram arrived: dropped by
//! the network between hosts, by a switch, or by the kernel. A message of which some fragments arrived is the
//! reassembler's to count (incomplete), so the two counts never overlap.
//!
//! What is not a gap: a sender's first datagram (nothing is known before it), a step back (a datagram out of order
//! or a sender that started over on the same port) and a jump of [`MAX_GAP`] or more (the same) - these re-anchor
//! the sender's sequence and count nothing. A multi-port sender (mpudpm) spreads one sequence over many ports, so a
//! receiver on one of them sees gaps that are not losses; such a sender reveals itself by sending its channel-port
//! announcements ([`crate::multiport::UPDATE_CHANNEL`], [`crate::multiport::REQUEST_CHANNEL`]) on the start port,
//! and from then on it is not followed and the gaps counted against it are taken back.

use std::collections::HashMap;
use std::net::SocketAddr;

/// Senders followed at most; a new sender past this many starts the table over (its senders' next datagrams
/// re-anchor them; messages lost meanwhile are not counted), so a flood of forged source addresses costs bounded
/// memory.
pub const MAX_SENDERS: usize = 4096;
/// A forward jump this large is a sender that started over, not this many lost messages.
pub const MAX_GAP: u32 = 1 << 20;

#[derive(Debug, Clone, Copy)]
struct Sender {
    last: u32,
    /// Messages counted as unseen against this sender.
    gaps: u64,
    /// A multi-port sender: not followed.
    multiport: bool,
}

/// Senders kept out of the hash table, searched in order.
const RECENT: usize = 8;

/// Each sender's last sequence number, and the messages counted as never seen.
#[derive(Debug, Default)]
pub struct Sequences {
    /// The latest senders, kept out of the table: a receiver usually hears a few senders at a time (a request and
    /// its reply, its own datagrams looped back and a peer's, every fragment of a message), and those then cost
    /// a few address comparisons, no hashing (two SipHash lookups per datagram were a visible share of a receive
    /// thread's time per datagram, and on a round trip's path they come cold).
    recent: Vec<(SocketAddr, Sender)>,
    /// Every other sender.
    senders: HashMap<SocketAddr, Sender>,
    unseen: u64,
}

impl Sequences {
    /// Messages of which no datagram arrived, so far.
    pub fn unseen(&self) -> u64 {
        self.unseen
    }

    /// Notes a well-formed datagram of message `seq` from `from`; `channel` is its channel when the datagram
    /// carries it (a small message, a first fragment).
    pub fn note(&mut self, from: SocketAddr, seq: u32, channel: Option<&str>) {
        let announces =
            channel.is_some_and(|c| c == crate::multiport::UPDATE_CHANNEL || c == crate::multiport::REQUEST_CHANNEL);
        let at = match self.recent.iter().position(|(a, _)| *a == from) {
            Some(at) => at,
            None => {
                if self.recent.len() == RECENT {
                    // The oldest of the recent senders makes room.
                    let (a, s) = self.recent.remove(0);
                    if self.senders.len() + RECENT >= MAX_SENDERS {
                        self.senders.clear();
                    }
                    self.senders.insert(a, s);
                }
                let s = self.senders.remove(&from).unwrap_or(Sender { last: seq, gaps: 0, multiport: false });
                self.recent.push((from, s));
                self.recent.len() - 1
            }
        };
        let s = &mut self.recent[at].1;
        if s.multiport {
            return;
        }
        if announces {
            s.multiport = true;
            self.unseen -= s.gaps;
            s.gaps = 0;
            return;
        }
        let step = seq.wrapping_sub(s.last);
        if step == 0 {
            return; // another fragment of the same message, or the first datagram heard
        }
        if step < MAX_GAP {
            let gap = u64::from(step - 1);
            s.gaps += gap;
            self.unseen += gap;
        }
        // A step back (at or past half the number space) or a jump: re-anchored, nothing counted.
        s.last = seq;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], port))
    }

    #[test]
    fn gaps_are_counted_per_sender() {
        let mut s = Sequences::default();
        for seq in [5, 6, 6, 6, 9, 10] {
            s.note(addr(1), seq, None);
        }
        assert_eq!(s.unseen(), 2, "7 and 8");
        for seq in [100, 104] {
            s.note(addr(2), seq, Some("POSE"));
        }
        assert_eq!(s.unseen(), 5, "7, 8 of one sender; 101-103 of the other");
    }

    #[test]
    fn wrapping_steps_back_and_jumps() {
        let mut s = Sequences::default();
        for seq in [u32::MAX - 1, u32::MAX, 1] {
            s.note(addr(1), seq, None);
        }
        assert_eq!(s.unseen(), 1, "0 went missing across the wrap");
        s.note(addr(1), 0, None); // late: re-anchors, nothing counted
        s.note(addr(1), 1, None);
        assert_eq!(s.unseen(), 1);
        s.note(addr(1), 1 + MAX_GAP, None); // a sender that started over
        assert_eq!(s.unseen(), 1);
    }

    #[test]
    fn a_multiport_sender_is_not_followed_and_its_gaps_are_taken_back() {
        let mut s = Sequences::default();
        for seq in [0, 3, 7] {
            s.note(addr(1), seq, Some("CH"));
        }
        s.note(addr(2), 0, None);
        s.note(addr(2), 2, None);
        assert_eq!(s.unseen(), 6);
        s.note(addr(1), 9, Some(crate::multiport::UPDATE_CHANNEL));
        assert_eq!(s.unseen(), 1, "only the udpm sender's gap is left");
        s.note(addr(1), 20, None);
        assert_eq!(s.unseen(), 1);
    }

    #[test]
    fn senders_keep_their_sequences_moving_between_the_recent_ones_and_the_table() {
        let mut s = Sequences::default();
        let senders = RECENT as u16 * 3;
        // Round after round over more senders than are kept recent: each is moved to the table and back every
        // round, and only the one message each skips in round 2 is counted.
        for round in 0..5u32 {
            for k in 0..senders {
                let seq = if round >= 2 { round + 1 } else { round };
                s.note(addr(k), seq, None);
            }
        }
        assert_eq!(s.unseen(), u64::from(senders), "one message of each sender");
        assert!(s.recent.len() <= RECENT);
    }

    #[test]
    fn the_table_is_bounded() {
        let mut s = Sequences::default();
        for i in 0..(MAX_SENDERS as u32 * 3) {
            let from = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 1));
            s.note(from, i, None);
            s.note(from, i + 2, None);
        }
        assert!(
            s.senders.len() + s.recent.len() <= MAX_SENDERS,
            "the table and the recent senders together are bounded"
        );
        assert_eq!(s.unseen(), u64::from(MAX_SENDERS as u32 * 3));
    }
}
