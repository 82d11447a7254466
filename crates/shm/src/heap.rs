//! The channel's memory under loom (`--cfg loom`): the header, index and data ring in ordinary heap memory, the data
//! bytes as atomic words (so loom sees every racing read and write of a frame), the writer lock as loom's mutex, and
//! a futex wait that is a yield (a spurious wake-up, which the protocol tolerates). `tests/loom.rs` model-checks
//! the protocol code of `ring` over it. A wait set's doorbell file is heap memory too, but its futex is modelled as
//! the kernel's (a sleep that only a wake ends, with no timeout): a lost wake-up then leaves the model's threads
//! all blocked, which loom reports.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::channel::Channel;
use crate::error::ShmError;
use crate::layout::{Bell, BellFileHeader, Entry, Geometry, Header, BELLS, BELL_MAGIC, MAGIC, READY_WORDS, VERSION};
use crate::ring::Shared;
use crate::sync::{AtomicI64, AtomicU32, AtomicU64, LoomLockState, Ordering, WriterLock};

/// No caches to warm under loom (see `sys::prefetch_for_write`).
pub(crate) fn prefetch_for_write(_addr: usize) {}

/// The channel's memory on the heap.
pub(crate) struct Memory {
    header: Header,
    entries: Box<[Entry]>,
    data: Box<[AtomicU64]>,
    geometry: Geometry,
}

/// Proof that this thread holds the writer lock; unlocks when dropped (W9).
pub(crate) struct WriterGuard<'a> {
    guard: loom::sync::MutexGuard<'a, LoomLockState>,
}

impl WriterGuard<'_> {
    /// After `REC`: the state the lock protects is consistent again.
    pub(crate) fn mark_consistent(&self) {}

    /// Simulates the owner's death: the next locker is told its owner died.
    pub(crate) fn die(mut self) {
        self.guard.owner_died = true;
    }
}

fn zero_u64() -> AtomicU64 {
    AtomicU64::new(0)
}

impl Memory {
    fn new(geometry: Geometry) -> Memory {
        let header = Header {
            magic: MAGIC,
            version: VERSION,
            header_size: 0,
            entries: geometry.entries,
            data_bytes: geometry.data_bytes,
            max_message: geometry.max_message,
            created_utime: 0,
            file_size: geometry.file_size as u64,
            flags: geometry.flags(),
            _reserved: [0; 8],
            lock: WriterLock::new(LoomLockState::default()),
            next_seq: AtomicU64::new(1),
            data_head: zero_u64(),
            _pad_writer: [0; crate::layout::WRITER_PAD],
            newest: zero_u64(),
            tail: zero_u64(),
            wake: AtomicU32::new(0),
            waiters: AtomicU32::new(0),
            bell_mask: AtomicU32::new(0),
            _reserved_reader: 0,
            _pad_reader: [0; 4],
            writer_opens: zero_u64(),
            reader_opens: zero_u64(),
            recoveries: zero_u64(),
            aborted_loans: zero_u64(),
            _pad_stats: [0; 4],
            bell_slots: std::array::from_fn(|_| zero_u64()),
        };
        let entries = (0..geometry.entries)
            .map(|_| Entry {
                seq: zero_u64(),
                start: zero_u64(),
                len: AtomicU32::new(0),
                _reserved: 0,
                put_utime: AtomicI64::new(0),
                origin: zero_u64(),
                checksum: zero_u64(),
            })
            .collect();
        let data = (0..geometry.data_bytes / 8).map(|_| zero_u64()).collect();
        Memory { header, entries, data, geometry }
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Heap memory cannot shrink under its handle.
    pub(crate) fn damaged(&self) -> bool {
        false
    }

    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    pub(crate) fn entry(&self, seq: u64) -> &Entry {
        &self.entries[(seq % self.geometry.entries) as usize]
    }

    /// No lines to warm under loom (see `sys::Memory::put_lines`): the model has no caches.
    pub(crate) fn put_lines(&self, _next_seq: u64, _data_head: u64) -> [usize; 4] {
        [0; 4]
    }

    pub(crate) fn lock(&self) -> Result<(WriterGuard<'_>, bool), String> {
        let guard = self.header.lock.lock().map_err(|_| "poisoned".to_string())?;
        let died = guard.owner_died;
        let mut guard = WriterGuard { guard };
        guard.guard.owner_died = false;
        Ok((guard, died))
    }

    pub(crate) fn wait(&self, _expected: u32, _timeout: Duration) {
        loom::thread::yield_now();
    }

    pub(crate) fn wake(&self) {}

    /// W5: frames start 8-aligned, so a frame is whole words (its last word padded with zeros).
    pub(crate) fn write_data(&self, off: u64, bytes: &[u8]) {
        assert_eq!(off % 8, 0, "frames are 8-aligned");
        for (i, chunk) in bytes.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.data[off as usize / 8 + i].store(u64::from_le_bytes(word), Ordering::Relaxed);
        }
    }

    /// G5: the bytes, read word by word.
    pub(crate) fn read_data(&self, off: u64, out: &mut [u8]) {
        assert_eq!(off % 8, 0, "frames are 8-aligned");
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let word = self.data[off as usize / 8 + i].load(Ordering::Relaxed).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    pub(crate) fn view_data<R>(&self, off: u64, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut copy = vec![0; len];
        self.read_data(off, &mut copy);
        f(&copy)
    }
}

impl Channel {
    /// A channel in heap memory, for the loom model (`--cfg loom` only).
    pub fn in_memory(frames: u64, frame_size: u64) -> Result<Channel, ShmError> {
        let geometry = Geometry::new(frames, frame_size)?;
        let memory = Memory::new(geometry);
        Ok(Channel {
            shared: Arc::new(Shared {
                memory,
                name: "loom".into(),
                path: PathBuf::from("(loom heap)"),
                bells: Default::default(),
            }),
        })
    }
}

/// A doorbell file on the heap, with the kernel's futex modelled: a wait checks the word and sleeps under one lock,
/// a wake notifies under it, so a wake between the check and the sleep cannot be lost, as in the kernel.
pub(crate) struct BellMemory {
    header: BellFileHeader,
    bells: Box<[Bell]>,
    futex: loom::sync::Mutex<()>,
    sleepers: loom::sync::Condvar,
}

impl BellMemory {
    pub(crate) fn new() -> BellMemory {
        let header = BellFileHeader {
            magic: BELL_MAGIC,
            version: VERSION,
            bells: BELLS as u32,
            file_size: 0,
            generation: AtomicU64::new(1),
            _pad: [0; 4],
        };
        let bells = (0..BELLS)
            .map(|_| Bell {
                word: AtomicU32::new(0),
                sleeping: AtomicU32::new(0),
                generation: zero_u64(),
                summary: zero_u64(),
                _pad: [0; 5],
                ready: std::array::from_fn::<_, READY_WORDS, _>(|_| zero_u64()),
            })
            .collect();
        BellMemory { header, bells, futex: loom::sync::Mutex::new(()), sleepers: loom::sync::Condvar::new() }
    }

    pub(crate) fn header(&self) -> &BellFileHeader {
        &self.header
    }

    pub(crate) fn bell(&self, i: usize) -> &Bell {
        &self.bells[i % BELLS]
    }

    /// B-WAIT's futex_wait, without its timeout (see the module doc).
    pub(crate) fn wait(&self, bell: &Bell, expected: u32, _timeout: Duration) {
        let guard = self.futex.lock().unwrap();
        if bell.word.load(Ordering::SeqCst) == expected {
            drop(self.sleepers.wait(guard).unwrap());
        }
    }

    pub(crate) fn wake(&self, _bell: &Bell) {
        let _guard = self.futex.lock().unwrap();
        self.sleepers.notify_all();
    }
}
