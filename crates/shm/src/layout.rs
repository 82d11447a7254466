//! The channel file's layout (spec/shm-protocol.md, "Layout"): the [`Header`] and index [`Entry`] as `repr(C)`
//! structs of atomics, the sizes derived from a configuration ([`Geometry`]), and the validation of a file's fixed
//! header prefix before anything is mapped, so a foreign, old or truncated file is refused with a typed error.

use std::mem::size_of;
use std::path::Path;

use crate::error::ShmError;
use crate::sync::{AtomicI64, AtomicU32, AtomicU64, WriterLock};

/// The first 8 bytes of every channel file.
pub const MAGIC: [u8; 8] = *b"NERVESHM";
/// The layout version this library reads and writes. Any change to the file's layout or protocol bumps it.
pub const VERSION: u32 = 5;
/// How many bytes of the header are read (with `pread`) and validated before the file is mapped.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const PREFIX_LEN: usize = 64;
/// Frames are placed at multiples of this many bytes.
pub(crate) const FRAME_ALIGN: u64 = 8;
/// The most index entries a channel may have (keeps the index ring a sane size).
pub const MAX_FRAMES: u64 = 1 << 24;
/// The largest frame size: an entry's length is a `u32`.
pub const MAX_FRAME_SIZE: u64 = u32::MAX as u64;
/// The largest data ring (1 TiB: far above any tmpfs, far below overflow of the byte positions' arithmetic).
pub const MAX_DATA_BYTES: u64 = 1 << 40;
/// Header flag: every frame carries an xxh3-64 checksum of its bytes in its index entry (`checksum`), checked by
/// readers (G5). Off by default: it costs a hash of every message on both sides.
pub(crate) const FLAG_CHECKSUM: u64 = 1;
/// The flags this layout version knows; a file with others is refused as corrupt.
pub(crate) const KNOWN_FLAGS: u64 = FLAG_CHECKSUM;

/// Pads the writer's cache line (the lock and the writer state) to 64 bytes.
#[cfg(not(loom))]
pub(crate) const WRITER_PAD: usize = 64 - size_of::<WriterLock>() - 2 * size_of::<AtomicU64>();
/// Under loom the header is heap memory that nothing else maps: no padding to keep.
#[cfg(loom)]
pub(crate) const WRITER_PAD: usize = 0;

/// The channel header at offset 0 of the file.
///
/// The first fields (magic to `file_size`) are written once, before the file appears under its name, and read once
/// (into a [`Geometry`]) when it is opened; they are never trusted again. The atomics are the protocol's shared
/// state: `next_seq` and `data_head` are touched only under `lock`; readers read `newest` and `tail` without it.
///
/// After the prefix come three cache lines, each touched by different parties: the writer's (the lock and the
/// writer state: a put locks, reads and updates them in one line that readers never touch), the readers' (`newest`,
/// `tail`, the futex word and `waiters`: everything a reader reads, and a waiting reader's handshake, in one line),
/// and the statistics (touched only when a handle is made or a writer recovers).
#[repr(C, align(64))]
pub(crate) struct Header {
    pub(crate) magic: [u8; 8],
    pub(crate) version: u32,
    pub(crate) header_size: u32,
    /// `N`: index entries.
    pub(crate) entries: u64,
    /// `C`: data ring bytes.
    pub(crate) data_bytes: u64,
    /// `M`: the largest message.
    pub(crate) max_message: u64,
    pub(crate) created_utime: i64,
    pub(crate) file_size: u64,
    /// Channel options fixed at creation ([`FLAG_CHECKSUM`]).
    pub(crate) flags: u64,
    pub(crate) _reserved: [u64; 8],

    /// The writer lock (a futex word naming its holder, `sys::WriterLock`; loom's mutex under loom), in one cache
    /// line with the writer state it protects.
    pub(crate) lock: WriterLock,
    /// Writer state, only touched under `lock`: the sequence number the next put takes (starts at 1).
    pub(crate) next_seq: AtomicU64,
    /// Writer state: the byte position where the next frame goes.
    pub(crate) data_head: AtomicU64,
    pub(crate) _pad_writer: [u8; WRITER_PAD],

    /// The newest published sequence number (0: none yet).
    pub(crate) newest: AtomicU64,
    /// Data below this byte position may be overwritten and must not be trusted.
    pub(crate) tail: AtomicU64,
    /// The futex word readers sleep on; writers bump it after every put.
    pub(crate) wake: AtomicU32,
    /// How many readers are (or were, if killed while waiting) sleeping on `wake`.
    pub(crate) waiters: AtomicU32,
    /// Which of `bell_slots` hold a wait set's registration (bit `i`: slot `i`), read by every put after W10 (B-RING):
    /// zero, the common case, costs the put one load of a line it touched already.
    pub(crate) bell_mask: AtomicU32,
    pub(crate) _reserved_reader: u32,
    pub(crate) _pad_reader: [u64; 4],

    /// Statistics: writers ever made on this channel (cumulative, by any process).
    pub(crate) writer_opens: AtomicU64,
    /// Statistics: readers ever made on this channel (cumulative, by any process).
    pub(crate) reader_opens: AtomicU64,
    /// Statistics: times a writer found the lock's owner dead and ran `REC`.
    pub(crate) recoveries: AtomicU64,
    /// Statistics: loans dropped without commit.
    pub(crate) aborted_loans: AtomicU64,
    pub(crate) _pad_stats: [u64; 4],

    /// Wait sets sleeping on this channel through their doorbell ([`encode_registration`]; 0: free). Touched by
    /// a wait set when it adds or removes the channel, and read by a put only when `bell_mask` says one is in use.
    pub(crate) bell_slots: [AtomicU64; BELL_SLOTS],
}

/// One index entry: entry `s % N` describes sequence number `s`. It fills a cache line of its own, so a reader
/// validating it (G3) and the writer filling it (W4, W6) each touch one line, never two.
#[repr(C, align(64))]
pub(crate) struct Entry {
    /// The sequence number this entry describes; 0 while it is being rewritten.
    pub(crate) seq: AtomicU64,
    /// The frame's byte position in the data ring.
    pub(crate) start: AtomicU64,
    /// The message length.
    pub(crate) len: AtomicU32,
    pub(crate) _reserved: u32,
    /// When it was put, in microseconds since the Unix epoch.
    pub(crate) put_utime: AtomicI64,
    /// The writer's origin id.
    pub(crate) origin: AtomicU64,
    /// The xxh3-64 hash of the frame's bytes, on a channel with [`FLAG_CHECKSUM`] (0 otherwise).
    pub(crate) checksum: AtomicU64,
}

#[cfg(not(loom))]
const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<Header>() == 320 + 8 * BELL_SLOTS && size_of::<WriterLock>() == 8);
    // The prefix, then one cache line each: the writer's, the readers', the statistics.
    assert!(offset_of!(Header, lock) == 128 && offset_of!(Header, data_head) + 8 <= 192);
    assert!(offset_of!(Header, newest) == 192 && offset_of!(Header, bell_mask) < 256);
    assert!(offset_of!(Header, writer_opens) == 256 && offset_of!(Header, bell_slots) == 320);
    assert!(size_of::<Entry>() == 64);
    assert!(size_of::<BellFileHeader>() == 64 && size_of::<Bell>() == 64 + 8 * READY_WORDS);
};

/// How many wait sets can register on one channel at once (`Header::bell_slots`); more fall back to sleeping on the
/// channel's own futex word.
#[cfg(not(loom))]
pub(crate) const BELL_SLOTS: usize = 32;
/// Under loom, fewer (each atomic is a modelled object).
#[cfg(loom)]
pub(crate) const BELL_SLOTS: usize = 4;

/// The doorbell file's first 8 bytes.
pub const BELL_MAGIC: [u8; 8] = *b"NERVEBEL";
/// The doorbell file of a channel directory: hidden, and without the channel prefix, so listings skip it.
pub const BELL_FILE: &str = ".nerve-bells";
/// How many doorbells (wait sets) one directory's doorbell file has.
#[cfg(not(loom))]
pub(crate) const BELLS: usize = 256;
#[cfg(loom)]
pub(crate) const BELLS: usize = 2;
/// The words of a doorbell's ready bitmap: `64 * READY_WORDS` hints, one bit each.
#[cfg(not(loom))]
pub(crate) const READY_WORDS: usize = 64;
#[cfg(loom)]
pub(crate) const READY_WORDS: usize = 2;
/// How many distinct hints a doorbell has: a wait set's channel `k` rings hint `k % HINTS`.
pub(crate) const HINTS: usize = 64 * READY_WORDS;
/// The doorbell file's length: its header and `BELLS` doorbells.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const BELL_FILE_SIZE: usize = size_of::<BellFileHeader>() + BELLS * size_of::<Bell>();

/// The header of a directory's doorbell file (spec/shm-protocol.md, "Wait sets").
#[repr(C, align(64))]
pub(crate) struct BellFileHeader {
    pub(crate) magic: [u8; 8],
    pub(crate) version: u32,
    /// `BELLS`.
    pub(crate) bells: u32,
    pub(crate) file_size: u64,
    /// Generations handed to doorbells as they are claimed: starts at a random value when the file is made, so a
    /// registration made against another file (or an earlier owner of a doorbell) never matches by chance.
    pub(crate) generation: AtomicU64,
    pub(crate) _pad: [u64; 4],
}

/// One doorbell: the futex word its wait set sleeps on, and which of its channels rang.
#[repr(C, align(64))]
pub(crate) struct Bell {
    /// The futex word: every ring bumps it.
    pub(crate) word: AtomicU32,
    /// Non-zero while the owner is about to sleep or sleeping on `word` (a ring then makes the futex call).
    pub(crate) sleeping: AtomicU32,
    /// The owner's generation (see `BellFileHeader::generation`); registrations carry it.
    pub(crate) generation: AtomicU64,
    /// Bit `w`: `ready[w]` has bits set.
    pub(crate) summary: AtomicU64,
    pub(crate) _pad: [u64; 5],
    /// Bit `h % 64` of word `h / 64`: a channel with hint `h` rang.
    pub(crate) ready: [AtomicU64; READY_WORDS],
}

/// A registration in a channel's `bell_slots`: doorbell `bell` of the channel directory's doorbell file, with
/// `hint` to set when the channel rings, valid while that doorbell's generation is `generation` (44 bits, never 0).
pub(crate) fn encode_registration(bell: usize, hint: usize, generation: u64) -> u64 {
    (bell as u64 & 0xff) | ((hint as u64 & 0xfff) << 8) | ((generation & GENERATION_MASK) << 20)
}

/// `(bell, hint, generation)` of a registration, bounded whatever the word holds (a scribbled one too).
pub(crate) fn decode_registration(reg: u64) -> (usize, usize, u64) {
    ((reg & 0xff) as usize % BELLS, ((reg >> 8) & 0xfff) as usize % HINTS, reg >> 20)
}

/// The bits of a generation a registration keeps.
pub(crate) const GENERATION_MASK: u64 = (1 << 44) - 1;

/// The sizes of a channel, derived from its configuration or validated from its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// `N`: index entries (the `frames` asked for).
    pub(crate) entries: u64,
    /// `C`: data ring bytes, `max(N, 3) * align8(M)`.
    pub(crate) data_bytes: u64,
    /// `M`: the largest message (the `frame_size` asked for).
    pub(crate) max_message: u64,
    /// Where the index ring starts in the file.
    pub(crate) index_offset: usize,
    /// Where the data ring starts in the file.
    pub(crate) data_offset: usize,
    /// The whole file's length.
    pub(crate) file_size: usize,
    /// Whether frames carry a checksum ([`FLAG_CHECKSUM`]).
    pub(crate) checksum: bool,
}

pub(crate) fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

impl Geometry {
    /// The sizes of a channel of `frames` messages of at most `frame_size` bytes.
    pub(crate) fn new(frames: u64, frame_size: u64) -> Result<Geometry, ShmError> {
        let bad = |reason: String| Err(ShmError::InvalidConfig { reason });
        if frames < 2 {
            // With one entry a put would invalidate the newest message's entry (W4): it would not stay readable.
            return bad(format!("frames must be at least 2, not {frames}"));
        }
        if frames > MAX_FRAMES {
            return bad(format!("frames must be at most {MAX_FRAMES}, not {frames}"));
        }
        if frame_size == 0 || frame_size > MAX_FRAME_SIZE {
            return bad(format!("frame size must be 1 to {MAX_FRAME_SIZE} bytes, not {frame_size}"));
        }
        let data_bytes = frames.max(3).checked_mul(align_up(frame_size, FRAME_ALIGN));
        match data_bytes {
            Some(c) if c <= MAX_DATA_BYTES => Geometry::with_data_bytes(frames, c, frame_size),
            _ => bad(format!("{frames} frames of {frame_size} bytes exceed the {MAX_DATA_BYTES}-byte data ring limit")),
        }
    }

    fn with_data_bytes(entries: u64, data_bytes: u64, max_message: u64) -> Result<Geometry, ShmError> {
        let header = size_of::<Header>() as u64;
        let index_offset = header;
        let data_offset = align_up(index_offset + entries * size_of::<Entry>() as u64, 64);
        let file_size = data_offset + data_bytes;
        let to_usize = |x: u64| {
            usize::try_from(x)
                .map_err(|_| ShmError::InvalidConfig { reason: format!("{x} bytes do not fit in memory") })
        };
        Ok(Geometry {
            entries,
            data_bytes,
            max_message,
            index_offset: to_usize(index_offset)?,
            data_offset: to_usize(data_offset)?,
            file_size: to_usize(file_size)?,
            checksum: false,
        })
    }

    /// The same sizes, with or without per-frame checksums.
    pub(crate) fn with_checksum(mut self, checksum: bool) -> Geometry {
        self.checksum = checksum;
        self
    }

    /// The header flags this geometry is written with.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn flags(&self) -> u64 {
        if self.checksum {
            FLAG_CHECKSUM
        } else {
            0
        }
    }

    #[cfg_attr(loom, allow(dead_code))]
    /// Validates a file's header prefix (its first [`PREFIX_LEN`] bytes, host byte order) against the file's length.
    pub(crate) fn from_prefix(path: &Path, prefix: &[u8], file_len: u64) -> Result<Geometry, ShmError> {
        if prefix.len() < PREFIX_LEN || file_len < PREFIX_LEN as u64 {
            if prefix.len() >= 8 && prefix[..8] != MAGIC {
                return Err(ShmError::NotAChannel { path: path.into(), found: prefix[..8].try_into().unwrap() });
            }
            return Err(ShmError::Truncated { path: path.into(), len: file_len, needed: size_of::<Header>() as u64 });
        }
        let u32_at = |o: usize| u32::from_ne_bytes(prefix[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_ne_bytes(prefix[o..o + 8].try_into().unwrap());
        let found: [u8; 8] = prefix[..8].try_into().unwrap();
        if found != MAGIC {
            return Err(ShmError::NotAChannel { path: path.into(), found });
        }
        let version = u32_at(8);
        if version != VERSION {
            return Err(ShmError::UnsupportedVersion { path: path.into(), found: version, supported: VERSION });
        }
        let corrupt = |what: String| Err(ShmError::Corrupt { path: path.into(), what });
        let header_size = u32_at(12);
        if header_size as usize != size_of::<Header>() {
            return corrupt(format!("header size {header_size}, version {VERSION} has {}", size_of::<Header>()));
        }
        let (entries, data_bytes, max_message, file_size) = (u64_at(16), u64_at(24), u64_at(32), u64_at(48));
        if !(2..=MAX_FRAMES).contains(&entries) {
            return corrupt(format!("{entries} index entries (must be 2 to {MAX_FRAMES})"));
        }
        if max_message == 0 || max_message > MAX_FRAME_SIZE {
            return corrupt(format!("largest message {max_message} bytes (must be 1 to {MAX_FRAME_SIZE})"));
        }
        // The protocol needs C >= 3 * align8(M) (the newest message stays readable during a put) and C aligned.
        let min_data = 3 * align_up(max_message, FRAME_ALIGN);
        if data_bytes % FRAME_ALIGN != 0 || data_bytes < min_data || data_bytes > MAX_DATA_BYTES {
            return corrupt(format!(
                "data ring of {data_bytes} bytes for messages of {max_message} (needs a multiple of 8, at least {min_data})"
            ));
        }
        let flags = u64_at(56);
        if flags & !KNOWN_FLAGS != 0 {
            return corrupt(format!("unknown flags {flags:#x} (this version knows {KNOWN_FLAGS:#x})"));
        }
        let g = Geometry::with_data_bytes(entries, data_bytes, max_message)?.with_checksum(flags & FLAG_CHECKSUM != 0);
        if file_size != g.file_size as u64 {
            return corrupt(format!("header says {file_size} bytes, its sizes make {}", g.file_size));
        }
        if file_len < file_size {
            return Err(ShmError::Truncated { path: path.into(), len: file_len, needed: file_size });
        }
        Ok(g)
    }

    #[cfg_attr(loom, allow(dead_code))]
    /// The header prefix a new channel file of this geometry starts with.
    pub(crate) fn prefix(&self, created_utime: i64) -> [u8; PREFIX_LEN] {
        let mut p = [0u8; PREFIX_LEN];
        p[..8].copy_from_slice(&MAGIC);
        p[8..12].copy_from_slice(&VERSION.to_ne_bytes());
        p[12..16].copy_from_slice(&(size_of::<Header>() as u32).to_ne_bytes());
        p[16..24].copy_from_slice(&self.entries.to_ne_bytes());
        p[24..32].copy_from_slice(&self.data_bytes.to_ne_bytes());
        p[32..40].copy_from_slice(&self.max_message.to_ne_bytes());
        p[40..48].copy_from_slice(&created_utime.to_ne_bytes());
        p[48..56].copy_from_slice(&(self.file_size as u64).to_ne_bytes());
        p[56..64].copy_from_slice(&self.flags().to_ne_bytes());
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> &'static Path {
        Path::new("/x/nerve-t")
    }

    #[test]
    fn geometry_keeps_three_frames_of_data_and_aligns_frames() {
        let g = Geometry::new(2, 13).unwrap();
        assert_eq!((g.entries, g.max_message, g.data_bytes), (2, 13, 3 * 16));
        let g = Geometry::new(10, 64).unwrap();
        assert_eq!(g.data_bytes, 640);
        assert_eq!(g.data_offset % 64, 0);
        assert_eq!(g.file_size, g.data_offset + 640);
    }

    #[test]
    fn bad_sizes_are_refused() {
        for (n, m) in
            [(0, 8), (1, 8), (4, 0), (MAX_FRAMES + 1, 8), (4, MAX_FRAME_SIZE + 1), (MAX_FRAMES, MAX_FRAME_SIZE)]
        {
            assert!(matches!(Geometry::new(n, m), Err(ShmError::InvalidConfig { .. })), "{n} x {m}");
        }
    }

    #[test]
    fn prefix_round_trips() {
        let g = Geometry::new(7, 1000).unwrap();
        let p = g.prefix(5);
        assert_eq!(Geometry::from_prefix(path(), &p, g.file_size as u64).unwrap(), g);
        let g = g.with_checksum(true);
        let p = g.prefix(5);
        assert_eq!(Geometry::from_prefix(path(), &p, g.file_size as u64).unwrap(), g);
    }

    #[test]
    fn unknown_flags_are_corrupt() {
        let g = Geometry::new(7, 1000).unwrap();
        let mut p = g.prefix(5);
        p[56..64].copy_from_slice(&2u64.to_ne_bytes());
        assert!(matches!(Geometry::from_prefix(path(), &p, g.file_size as u64), Err(ShmError::Corrupt { .. })));
    }

    #[test]
    fn foreign_old_and_truncated_prefixes_are_refused() {
        let g = Geometry::new(7, 1000).unwrap();
        let len = g.file_size as u64;
        let mut p = g.prefix(5);
        p[0] = b'X';
        assert!(
            matches!(Geometry::from_prefix(path(), &p, len), Err(ShmError::NotAChannel { found, .. }) if found[0] == b'X')
        );
        let mut p = g.prefix(5);
        p[8..12].copy_from_slice(&99u32.to_ne_bytes());
        assert!(matches!(
            Geometry::from_prefix(path(), &p, len),
            Err(ShmError::UnsupportedVersion { found: 99, supported: VERSION, .. })
        ));
        let p = g.prefix(5);
        assert!(matches!(
            Geometry::from_prefix(path(), &p, len - 1),
            Err(ShmError::Truncated { needed, .. }) if needed == len
        ));
        assert!(matches!(Geometry::from_prefix(path(), &p[..10], 10), Err(ShmError::Truncated { .. })));
        assert!(matches!(Geometry::from_prefix(path(), &[], 0), Err(ShmError::Truncated { len: 0, .. })));
    }

    #[test]
    fn inconsistent_sizes_are_corrupt() {
        let g = Geometry::new(7, 1000).unwrap();
        let len = g.file_size as u64;
        let cases: [(usize, u64); 5] = [(16, 1), (16, u64::MAX), (24, 8), (32, 0), (48, len + 8)];
        for (offset, value) in cases {
            let mut p = g.prefix(5);
            p[offset..offset + 8].copy_from_slice(&value.to_ne_bytes());
            assert!(
                matches!(Geometry::from_prefix(path(), &p, len), Err(ShmError::Corrupt { .. })),
                "{offset}={value}"
            );
        }
        let mut p = g.prefix(5);
        p[12..16].copy_from_slice(&1u32.to_ne_bytes());
        assert!(matches!(Geometry::from_prefix(path(), &p, len), Err(ShmError::Corrupt { .. })));
    }
}
