//! [`Channel::check`]: finds the damage another process's stray writes left in a channel's header and index (and,
//! on a channel with checksums, its retained frames), without the writer lock, so `nerve chan ls` can report a
//! damaged channel while its writers and readers run. Every test tolerates what a live writer does between two
//! loads (values only grow, a put in progress is between W3 and W8), so a healthy channel never reports damage.

use crate::error::ShmError;
use crate::layout::{Geometry, FRAME_ALIGN, MAGIC, VERSION};
use crate::ring::frame_checksum;
use crate::sync::{fence, Ordering};
use crate::Channel;

/// The largest value a byte position or sequence number reaches (the writer refuses state above it, W1).
const STATE_LIMIT: u64 = u64::MAX / 2;

impl Channel {
    /// Checks the channel for damage: a header whose fixed fields differ from what was validated at open, writer
    /// state (`next_seq`, `data_head`, `newest`, `tail`) no sequence of puts makes, index entries that describe
    /// impossible frames or sequence numbers, and, on a channel with checksums, retained frames whose bytes do not
    /// match their checksum. [`ShmError::Corrupt`] says what it found first. `nerve chan rm` and `mk` recover a
    /// damaged channel (a new file); processes that have the old one mapped keep it until they reopen.
    pub fn check(&self) -> Result<(), ShmError> {
        let shared = &self.shared;
        let damaged = |what: String| Err(shared.corrupt(what));
        let h = shared.header();
        let g: &Geometry = shared.geometry();
        // The fixed fields (written once before the file was published, validated at open) as they are now.
        let prefix = shared.memory.prefix_now();
        let u64_at = |o: usize| u64::from_ne_bytes(prefix[o..o + 8].try_into().expect("8 bytes"));
        let version = u32::from_ne_bytes(prefix[8..12].try_into().expect("4 bytes"));
        if prefix[..8] != MAGIC || version != VERSION {
            return damaged(format!("header magic or version overwritten ({:02x?}, {version})", &prefix[..8]));
        }
        let expected = (g.entries, g.data_bytes, g.max_message, g.file_size as u64, g.flags());
        let found = (u64_at(16), u64_at(24), u64_at(32), u64_at(48), u64_at(56));
        if found != expected {
            return damaged(format!("header sizes overwritten: {found:?}, opened as {expected:?}"));
        }
        // Writer state, read in an order that a live writer cannot make look inconsistent: `next_seq` first, then
        // `newest` (which is at least `next_seq - 1` from then on), then `next_seq` again (at least `newest`).
        let seq_before = h.next_seq.load(Ordering::Acquire);
        let tail = h.tail.load(Ordering::Acquire);
        let newest = h.newest.load(Ordering::Acquire);
        let head = h.data_head.load(Ordering::Acquire);
        let seq_after = h.next_seq.load(Ordering::Acquire);
        if seq_before == 0 || seq_after > STATE_LIMIT || head > STATE_LIMIT {
            return damaged(format!("writer state next_seq {seq_after}, data_head {head}"));
        }
        if newest.saturating_add(1) < seq_before || newest > seq_after {
            return damaged(format!("newest message {newest} with next sequence number {seq_before}..{seq_after}"));
        }
        // W3 raises `tail` to at most `pos + L - C`, below the frame being put, whose end becomes `data_head`.
        if tail > head.saturating_add(g.max_message) || !head.is_multiple_of(FRAME_ALIGN) {
            return damaged(format!("free-space watermark {tail} beyond the writer's position {head}"));
        }
        for i in 0..g.entries {
            let e = shared.memory.entry(i);
            let s1 = e.seq.load(Ordering::Acquire);
            let start = e.start.load(Ordering::Relaxed);
            let len = u64::from(e.len.load(Ordering::Relaxed));
            let sum = e.checksum.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            let s2 = e.seq.load(Ordering::Relaxed);
            if s1 == 0 || s1 != s2 {
                continue; // Being rewritten (W4..W6), or never used.
            }
            let latest = h.next_seq.load(Ordering::Acquire);
            if s1 % g.entries != i || s1 > latest {
                return damaged(format!("index entry {i} holds sequence number {s1} (next is {latest})"));
            }
            let off = start % g.data_bytes;
            if len > g.max_message || off + len > g.data_bytes || start > STATE_LIMIT {
                return damaged(format!("index entry of message {s1}: {len} bytes at {start}"));
            }
            if g.checksum && start >= tail {
                let found = shared.memory.view_data(off, len as usize, frame_checksum);
                fence(Ordering::Acquire);
                let overwritten = h.tail.load(Ordering::Relaxed) > start || e.seq.load(Ordering::Relaxed) != s1;
                if !overwritten && found != sum {
                    return damaged(format!("the bytes of message {s1} do not match their checksum"));
                }
            }
        }
        Ok(())
    }
}
