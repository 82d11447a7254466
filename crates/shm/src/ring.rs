//! The put/get protocol of spec/shm-protocol.md, step by step: [`Writer`] (`put`, and [`Loan`] for writing in
//! place), [`Reader`] (`get`, zero-copy `get_with`, waiting) and the recovery `REC`. Each step's label from the spec
//! is in a comment at the line that performs it. The code works on the header and index atomics and on bounds-checked
//! data offsets; the memory itself is `sys::Memory` (a mapped file) or, under loom, `heap::Memory`.

use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::ShmError;
use crate::layout::{align_up, Geometry, Header, FRAME_ALIGN};
use crate::memory::{prefetch_for_write, Memory, WriterGuard};
use crate::sync::{fence, Ordering};

/// How long a waiting reader sleeps at most before it looks at `newest` again (G-WAIT's slice): it bounds the delay
/// a wake-up lost to a writer killed between W7 and W10 can cause.
pub const WAIT_SLICE: Duration = Duration::from_millis(20);

/// How many times in a row a `get` may find its message overwritten under it (G3/G5) before it returns
/// [`GetOutcome::Retry`] instead of trying again.
pub const RETRY_LIMIT: u32 = 64;

/// How long a writer waits for the writer lock before it gives up with [`ShmError::Lock`]: a lock held longer is
/// held by a stopped writer or was overwritten by another process, and a put must not hang on it.
#[cfg_attr(loom, allow(dead_code))]
pub const LOCK_PATIENCE: Duration = Duration::from_secs(1);

/// The checksum of a frame's bytes on a channel made with checksums (xxh3-64: the fastest well-kept 64-bit hash,
/// several GB/s, so a 1 MiB frame costs well under a millisecond).
pub(crate) fn frame_checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// What a channel handle shares with its writers and readers: the memory and the names for error messages.
pub(crate) struct Shared {
    pub(crate) memory: Memory,
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    /// The directory's doorbell file, found on the first put that has a wait set's doorbell to ring.
    pub(crate) bells: crate::bell::Link,
}

impl Shared {
    pub(crate) fn header(&self) -> &Header {
        self.memory.header()
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        self.memory.geometry()
    }

    pub(crate) fn corrupt(&self, what: String) -> ShmError {
        ShmError::Corrupt { path: self.path.clone(), what }
    }

    // The errors of put and get are made out of line (`cold`), so the code a put or get runs is short and dense: a
    // writer or a reader that just woke up finds it in fewer instruction cache lines.

    #[cold]
    #[inline(never)]
    fn corrupt_entry(&self, seq: u64, len: u64, start: u64) -> ShmError {
        self.corrupt(format!("entry of message {seq}: {len} bytes at {start}"))
    }

    #[cold]
    #[inline(never)]
    fn corrupt_writer_state(&self, seq: u64, head: u64) -> ShmError {
        self.corrupt(format!("writer state next_seq {seq}, data_head {head}"))
    }

    #[cold]
    #[inline(never)]
    fn too_large(&self, len: usize) -> ShmError {
        ShmError::MessageTooLarge { path: self.path.clone(), len, max: self.geometry().max_message }
    }

    /// The mapping faulted because the file shrank, and reads zeros now (see the `sys` module's "Shrinking files").
    #[cold]
    #[inline(never)]
    pub(crate) fn shrank(&self) -> ShmError {
        let now = match std::fs::metadata(&self.path) {
            Ok(m) => format!("{} bytes", m.len()),
            Err(_) => "gone".to_owned(),
        };
        self.corrupt(format!(
            "the channel file shrank under this handle (it is {now}, its layout needs {}); reopen the channel",
            self.geometry().file_size
        ))
    }

    /// Whether the channel file shrank under this handle's mapping (its accesses read zeros since).
    pub(crate) fn damaged(&self) -> bool {
        self.memory.damaged()
    }

    /// Whether the channel's path still names the file this handle mapped (not removed, nor replaced by a rename).
    pub(crate) fn is_current(&self) -> bool {
        #[cfg(not(loom))]
        {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.memory.file_id())
        }
        #[cfg(loom)]
        true
    }

    #[cold]
    #[inline(never)]
    fn lock_error(&self, reason: String) -> ShmError {
        ShmError::Lock { path: self.path.clone(), reason }
    }

    /// W10 (also the end of REC): bump the futex word and wake sleeping readers, if any.
    pub(crate) fn wake_readers(&self) {
        let h = self.header();
        // W10: SeqCst rather than Release, with SeqCst on the reader's `waiters` increment: then either this load
        // sees the reader registered, or the reader's re-check of `newest` sees this put (no lost wake-up).
        h.wake.fetch_add(1, Ordering::SeqCst);
        if h.waiters.load(Ordering::SeqCst) > 0 {
            self.memory.wake();
        }
    }

    /// W10, then B-RING: wake the readers sleeping on the channel, then ring the doorbells of the wait sets
    /// registered on it. After W10's SeqCst increment, so that either this load of `bell_mask` sees a set's
    /// registration or that set's re-check (B-REG) sees this put.
    pub(crate) fn announce(&self) {
        self.wake_readers();
        // B-RING: a SeqCst fence between this put's stores (W7, W10) and the load of `bell_mask`, paired with the
        // fence of B-REG between the registration and its re-check: of two such fences one comes first, so either
        // this load sees the registration or the re-check sees the put (loom checks fences, not SeqCst accesses).
        fence(Ordering::SeqCst);
        let mask = self.header().bell_mask.load(Ordering::SeqCst);
        if mask != 0 {
            crate::bell::ring(self.header(), &self.bells, &self.path, mask); // B-RING
        }
    }

    /// REC: the previous holder of the writer lock died holding it. Finish its put if it had completed W6;
    /// otherwise its put never became visible and there is nothing to undo.
    fn recover(&self) {
        let h = self.header();
        let g = self.geometry();
        let next = h.next_seq.load(Ordering::Relaxed);
        let e = self.memory.entry(next);
        // REC: the dead writer finished W6 iff the entry it reused holds its sequence number.
        if next != 0 && next < u64::MAX / 2 && e.seq.load(Ordering::Acquire) == next {
            let start = e.start.load(Ordering::Relaxed);
            let len = u64::from(e.len.load(Ordering::Relaxed));
            // Only a well-formed entry is adopted (a corrupt one would poison data_head); a bad one stays unpublished.
            if len <= g.max_message && start % g.data_bytes + len <= g.data_bytes {
                // REC: finish W7 and W8 for it.
                h.newest.store(next, Ordering::Release);
                h.data_head.store(align_up(start.saturating_add(len), FRAME_ALIGN), Ordering::Relaxed);
                h.next_seq.store(next + 1, Ordering::Relaxed);
            }
        }
        // REC: count the recovery and wake the readers (W10, B-RING).
        h.recoveries.fetch_add(1, Ordering::Relaxed);
        self.announce();
    }
}

/// A random id for this process, the default [`Writer::origin`] of its writers, so a process can recognise its own
/// messages (and not deliver them twice to its in-process subscribers).
pub fn process_origin() -> u64 {
    static ORIGIN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        // std's RandomState is seeded from the OS's random source once per process.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
        h.finish().max(1)
    })
}

/// W6's put time: microseconds since the Unix epoch (CLOCK_REALTIME). Read with one `clock_gettime` and integer
/// arithmetic: it is on every put's path to the wake-up, and `SystemTime`'s conversions (a checked subtraction, a
/// u128 `as_micros`) cost a large fraction of the clock read itself.
#[cfg(not(loom))]
fn now_utime() -> i64 {
    crate::sys::realtime_micros()
}

#[cfg(loom)]
fn now_utime() -> i64 {
    nerve_codec::now_utime()
}

/// Puts messages into a channel. Writers never wait for readers; several writers (in any processes) take turns on
/// the channel's writer lock, held only for the length of one put (or one [`Loan`]).
pub struct Writer {
    shared: Arc<Shared>,
    origin: u64,
    /// The lines the next put touches in the mapping (`Memory::put_lines`), kept here, beside `shared`, so that a
    /// put can ask for all of them at once before it follows a single pointer (see `warm_put_lines`). Only hints: a
    /// stale one (another writer put since, a frame that wraps) costs a wasted prefetch, nothing else. Atomics only
    /// because a [`Loan`] finishes a put through `&Writer`; relaxed loads and stores are plain moves.
    next_lines: [AtomicUsize; 4],
}

/// Where a put in progress writes: the data ring position and the sequence number it takes.
struct Slot {
    pos: u64,
    seq: u64,
    len: u64,
    /// The frame's checksum, on a channel with checksums (computed after W5).
    sum: u64,
}

impl Writer {
    pub(crate) fn new(shared: Arc<Shared>) -> Writer {
        shared.header().writer_opens.fetch_add(1, Ordering::Relaxed);
        let h = shared.header();
        let next_lines = shared
            .memory
            .put_lines(h.next_seq.load(Ordering::Relaxed), h.data_head.load(Ordering::Relaxed))
            .map(AtomicUsize::new);
        Writer { shared, origin: process_origin(), next_lines }
    }

    /// Asks the CPU for every line a put is about to write, at once. A control loop puts after a sleep, when none of
    /// them is cached, and a put otherwise misses them one after another, each miss revealing the next address
    /// (the writer, then the channel's `Shared`, then the header, then the entry and the frame), each a trip to
    /// memory. The addresses come from this struct alone, so the misses overlap.
    #[inline(always)]
    fn warm_put_lines(&self) {
        let shared = Arc::as_ptr(&self.shared) as usize;
        prefetch_for_write(shared);
        prefetch_for_write(shared + 64);
        for line in &self.next_lines {
            prefetch_for_write(line.load(Ordering::Relaxed));
        }
    }

    /// The origin id stored with every message this writer puts ([`process_origin`] unless changed).
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// Sets the origin id stored with this writer's messages.
    pub fn set_origin(&mut self, origin: u64) {
        self.origin = origin;
    }

    /// The largest message this channel takes (its frame size).
    pub fn max_message(&self) -> usize {
        self.shared.geometry().max_message as usize
    }

    /// Publishes a copy of `bytes` and returns its sequence number. When the channel is full the oldest messages
    /// are dropped to make room; this never waits for a reader.
    ///
    /// A file that shrank under the handle (another process truncated it) fails the put: the mapping reads zeros
    /// from then on, and the channel must be opened again.
    pub fn put(&mut self, bytes: &[u8]) -> Result<u64, ShmError> {
        let (guard, mut slot) = self.begin(bytes.len())?;
        // W5: copy the message into the data ring at pos (and hash it, on a channel with checksums).
        self.shared.memory.write_data(slot.pos % self.shared.geometry().data_bytes, bytes);
        if self.shared.geometry().checksum {
            slot.sum = frame_checksum(bytes);
        }
        let seq = self.finish(guard, slot);
        if self.shared.damaged() {
            return Err(self.shared.shrank());
        }
        Ok(seq)
    }

    /// Whether the channel file shrank under this handle (a truncate by another process): every put fails since,
    /// and the channel must be opened again.
    pub fn is_damaged(&self) -> bool {
        self.shared.damaged()
    }

    /// Whether the channel's path still names the file this writer writes (it was not removed or replaced since
    /// it was opened). One `stat`: a publisher that keeps a writer for long asks now and then, and opens the
    /// channel again when the answer is no.
    pub fn is_current(&self) -> bool {
        self.shared.is_current()
    }

    /// Lends a frame of `len` bytes of the data ring to write a message in place (a camera image, say), holding the
    /// writer lock until [`Loan::commit`] publishes it or the loan is dropped (which publishes nothing). Other
    /// writers wait meanwhile; readers never do.
    pub fn loan(&mut self, len: usize) -> Result<Loan<'_>, ShmError> {
        let (guard, slot) = self.begin(len)?;
        Ok(Loan {
            writer: self,
            guard: Some(guard),
            slot,
            #[cfg(loom)]
            staging: vec![0; len],
        })
    }

    /// W1-W4: lock (recovering if the last owner died), place the frame, free space, invalidate the reused entry.
    fn begin(&self, len: usize) -> Result<(WriterGuard<'_>, Slot), ShmError> {
        self.warm_put_lines();
        let shared = &*self.shared;
        let g = *shared.geometry();
        let l = len as u64;
        if l > g.max_message {
            return Err(shared.too_large(len));
        }
        if shared.damaged() {
            return Err(shared.shrank());
        }
        let h = shared.header();
        let c = g.data_bytes;
        // W1: lock; if the owner died holding it, REC, then mark it consistent.
        let (guard, owner_died) = shared.memory.lock().map_err(|reason| shared.lock_error(reason))?;
        if owner_died {
            shared.recover(); // REC
            guard.mark_consistent();
        }
        let seq = h.next_seq.load(Ordering::Relaxed);
        let head = h.data_head.load(Ordering::Relaxed);
        if seq == 0 || seq > u64::MAX / 2 || head > u64::MAX / 2 {
            // Zeros where the writer state was: the file may have shrunk under the mapping just now.
            if shared.damaged() {
                return Err(shared.shrank());
            }
            return Err(shared.corrupt_writer_state(seq, head));
        }
        // W2: pos = data_head; a frame that would cross the end of the ring starts at the next multiple of C.
        let mut pos = head;
        if pos % c + l > c {
            pos = (pos / c + 1) * c;
        }
        // W3: free space: everything below need = pos + L - C may be overwritten from now on.
        if pos + l > c {
            let need = pos + l - c;
            if need > h.tail.load(Ordering::Relaxed) {
                h.tail.store(need, Ordering::Relaxed);
            }
        }
        fence(Ordering::Release); // W3: the tail store is ordered before the data stores of W5.
                                  // W4: invalidate the index entry this put reuses (it described seq - N).
        shared.memory.entry(seq).seq.store(0, Ordering::Relaxed);
        fence(Ordering::Release); // W4
        Ok((guard, Slot { pos, seq, len: l, sum: 0 }))
    }

    /// W6-W10: describe the frame in its entry, publish it, advance the writer state, unlock, wake readers.
    fn finish(&self, guard: WriterGuard<'_>, slot: Slot) -> u64 {
        let shared = &*self.shared;
        let h = shared.header();
        let e = shared.memory.entry(slot.seq);
        // W6: fill the entry (Relaxed), then publish it with its sequence number (Release).
        e.start.store(slot.pos, Ordering::Relaxed);
        e.len.store(slot.len as u32, Ordering::Relaxed);
        e.put_utime.store(now_utime(), Ordering::Relaxed);
        e.origin.store(self.origin, Ordering::Relaxed);
        e.checksum.store(slot.sum, Ordering::Relaxed);
        e.seq.store(slot.seq, Ordering::Release);
        // W7: the newest message is this one.
        h.newest.store(slot.seq, Ordering::Release);
        // W8: data_head = align8(pos + L); then next_seq += 1.
        let head = align_up(slot.pos + slot.len, FRAME_ALIGN);
        h.data_head.store(head, Ordering::Relaxed);
        h.next_seq.store(slot.seq + 1, Ordering::Relaxed);
        for (hint, line) in self.next_lines.iter().zip(shared.memory.put_lines(slot.seq + 1, head)) {
            hint.store(line, Ordering::Relaxed);
        }
        // W9: unlock.
        drop(guard);
        // W10: wake the readers; B-RING: ring the wait sets' doorbells.
        shared.announce();
        slot.seq
    }

    /// Test hook for the loom model: a put that stops after `step` (1 to 7: after W1..W7; 8: after W8's
    /// `data_head` store; 9: after all of W8) as if its process had been killed there, holding the writer lock, to
    /// be recovered (REC) by the next writer.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn put_and_die_after(&mut self, bytes: &[u8], step: u32) {
        let (guard, slot) = self.begin(bytes.len()).expect("begin");
        if step >= 5 {
            self.shared.memory.write_data(slot.pos % self.shared.geometry().data_bytes, bytes);
            // W5
        }
        let h = self.shared.header();
        let e = self.shared.memory.entry(slot.seq);
        if step >= 6 {
            e.start.store(slot.pos, Ordering::Relaxed);
            e.len.store(slot.len as u32, Ordering::Relaxed);
            e.put_utime.store(now_utime(), Ordering::Relaxed);
            e.origin.store(self.origin, Ordering::Relaxed);
            e.seq.store(slot.seq, Ordering::Release); // W6
        }
        if step >= 7 {
            h.newest.store(slot.seq, Ordering::Release); // W7
        }
        if step >= 8 {
            h.data_head.store(align_up(slot.pos + slot.len, FRAME_ALIGN), Ordering::Relaxed);
            // W8
        }
        if step >= 9 {
            h.next_seq.store(slot.seq + 1, Ordering::Relaxed); // W8
        }
        guard.die();
    }
}

/// A frame of the data ring lent to a writer: fill [`Loan::bytes_mut`], then [`Loan::commit`]. Dropping it without
/// committing publishes nothing (the frame's bytes stay unreferenced); to make room, the oldest messages the put
/// would have replaced may already be gone. It holds the channel's writer lock, so commit or drop it promptly. It
/// stays on the thread that made it (the lock is released by the thread that took it):
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// fn lend(w: &mut nerve_shm::Writer) {
///     send(w.loan(8).unwrap());
/// }
/// ```
pub struct Loan<'w> {
    writer: &'w Writer,
    guard: Option<WriterGuard<'w>>,
    slot: Slot,
    #[cfg(loom)]
    staging: Vec<u8>,
}

impl Loan<'_> {
    /// The frame's bytes, to be filled completely (their previous content is whatever an old message left there).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        #[cfg(not(loom))]
        {
            let memory = &self.writer.shared.memory;
            let off = self.slot.pos % memory.geometry().data_bytes;
            // W5: the caller writes the message in place.
            memory.loan_data(self.guard.as_mut().expect("held until commit"), off, self.slot.len as usize)
        }
        #[cfg(loom)]
        {
            &mut self.staging
        }
    }

    /// The frame's length.
    pub fn len(&self) -> usize {
        self.slot.len as usize
    }

    /// Whether the frame is empty (a zero-length message).
    pub fn is_empty(&self) -> bool {
        self.slot.len == 0
    }

    /// The sequence number the message will have.
    pub fn seq(&self) -> u64 {
        self.slot.seq
    }

    /// Publishes the frame's content as the newest message and returns its sequence number.
    pub fn commit(mut self) -> u64 {
        #[cfg(loom)]
        {
            let memory = &self.writer.shared.memory;
            // W5 (loom: the staged bytes go into the atomic data words now).
            memory.write_data(self.slot.pos % memory.geometry().data_bytes, &self.staging);
        }
        let memory = &self.writer.shared.memory;
        let sum = if memory.geometry().checksum {
            // W5 ends: hash the bytes the caller wrote in place.
            let off = self.slot.pos % memory.geometry().data_bytes;
            memory.view_data(off, self.slot.len as usize, frame_checksum)
        } else {
            0
        };
        let guard = self.guard.take().expect("held until commit");
        let slot = Slot { pos: self.slot.pos, seq: self.slot.seq, len: self.slot.len, sum };
        self.writer.finish(guard, slot)
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        if self.guard.is_some() {
            // Not committed: W9 without W6-W8 (data_head unchanged, the bytes unreferenced).
            self.writer.shared.header().aborted_loans.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Which message a `get` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// The next message this reader has not seen, in order (messages dropped before it got to them are counted in
    /// [`MessageInfo::missed`]).
    Next,
    /// The newest message, skipping any older unseen ones (skipped messages are not counted as missed).
    Newest,
}

/// Whether a `get` waits when there is nothing new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Return [`GetOutcome::NothingNew`] at once.
    Poll,
    /// Wait at most this long, then return [`GetOutcome::TimedOut`].
    Timeout(Duration),
    /// Wait until a message comes.
    Forever,
}

/// What came with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    /// Its sequence number in the channel (1, 2, ...).
    pub seq: u64,
    /// Its length in bytes.
    pub len: usize,
    /// Messages this reader missed (dropped before it read them, in [`ReadMode::Next`]) since its previous message.
    pub missed: u64,
    /// When it was put, in microseconds since the Unix epoch.
    pub put_utime: i64,
    /// Its writer's origin id ([`Writer::origin`]).
    pub origin: u64,
}

/// The result of a `get`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetOutcome<T = MessageInfo> {
    /// A message (for `get`, its bytes are at the front of the buffer).
    Message(T),
    /// Nothing newer than the last message this reader got ([`Wait::Poll`]).
    NothingNew,
    /// Nothing newer came within the timeout.
    TimedOut,
    /// The next message is longer than the buffer: it is still unread (nothing was skipped), call again with a
    /// buffer of at least `needed` bytes.
    BufferTooSmall {
        /// The message's length.
        needed: usize,
    },
    /// Writers overwrote the messages this reader went for [`RETRY_LIMIT`] times in a row; the losses are counted in
    /// the next message's `missed`. Call again.
    Retry,
}

impl<T> GetOutcome<T> {
    /// Maps the message, keeping any other outcome.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> GetOutcome<U> {
        match self {
            GetOutcome::Message(m) => GetOutcome::Message(f(m)),
            GetOutcome::NothingNew => GetOutcome::NothingNew,
            GetOutcome::TimedOut => GetOutcome::TimedOut,
            GetOutcome::BufferTooSmall { needed } => GetOutcome::BufferTooSmall { needed },
            GetOutcome::Retry => GetOutcome::Retry,
        }
    }

    /// The message, if this outcome is one.
    pub fn message(self) -> Option<T> {
        match self {
            GetOutcome::Message(m) => Some(m),
            _ => None,
        }
    }
}

/// Gets messages from a channel, in order or newest-first, without ever making a writer wait. Its position (the
/// last sequence number it got) is its own.
pub struct Reader {
    pub(crate) shared: Arc<Shared>,
    last: u64,
    pending_missed: u64,
    spin: Duration,
    corrupt: u64,
}

impl Reader {
    pub(crate) fn new(shared: Arc<Shared>, last: u64) -> Reader {
        shared.header().reader_opens.fetch_add(1, Ordering::Relaxed);
        Reader { shared, last, pending_missed: 0, spin: Duration::ZERO, corrupt: 0 }
    }

    /// The channel file (for error messages).
    pub fn path(&self) -> &std::path::Path {
        &self.shared.path
    }

    /// The sequence number of the last message this reader got (or skipped past).
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    /// Moves this reader's position: the next [`ReadMode::Next`] get returns the message after `last` if it is
    /// still in the channel.
    pub fn seek(&mut self, last: u64) {
        self.last = last;
        self.pending_missed = 0;
    }

    /// Messages this reader skipped because their bytes did not match their checksum (on a channel made with
    /// checksums: another process overwrote them). Each is also counted in the next message's `missed`.
    pub fn corrupt_frames(&self) -> u64 {
        self.corrupt
    }

    /// Whether the channel file shrank under this handle (a truncate by another process): every get fails since,
    /// and the channel must be opened again.
    pub fn is_damaged(&self) -> bool {
        self.shared.damaged()
    }

    /// Whether the channel's path still names the file this reader reads (see [`Writer::is_current`]).
    pub fn is_current(&self) -> bool {
        self.shared.is_current()
    }

    /// Makes waiting gets poll `newest` for up to `spin` before they sleep (costs CPU; saves the wake-up latency of
    /// a sleeping process when messages come fast). Zero, the default, sleeps at once.
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// Copies the next (or newest) message into the front of `buf`. See [`GetOutcome`] for the other results; a
    /// buffer too small changes nothing.
    pub fn get(&mut self, buf: &mut [u8], mode: ReadMode, wait: Wait) -> Result<GetOutcome, ShmError> {
        let outcome = self.get_core(
            mode,
            wait,
            Some(buf.len()),
            || false,
            |memory, frame, hash| {
                // G5: copy the bytes (and hash the copy, on a channel with checksums).
                memory.read_data(frame.off, &mut buf[..frame.len]);
                ((), if hash { frame_checksum(&buf[..frame.len]) } else { 0 })
            },
        )?;
        Ok(outcome.map(|(info, ())| info))
    }

    /// [`Reader::get`] whose wait can be cut short: it ends with [`GetOutcome::TimedOut`] as soon as `interrupted`
    /// returns true when asked, which is before every sleep and after every wake-up (so within one
    /// [`WAIT_SLICE`] at most). [`Channel::wake_readers`](crate::Channel::wake_readers) wakes sleeping readers to ask
    /// at once: that is how Ach's `ach_cancel` stops a waiting `ach_get`, even from a signal handler. A message that is
    /// there is returned whatever `interrupted` says.
    pub fn get_interruptible(
        &mut self,
        buf: &mut [u8],
        mode: ReadMode,
        wait: Wait,
        interrupted: impl Fn() -> bool,
    ) -> Result<GetOutcome, ShmError> {
        let outcome = self.get_core(mode, wait, Some(buf.len()), interrupted, |memory, frame, hash| {
            // G5: copy the bytes (and hash the copy, on a channel with checksums).
            memory.read_data(frame.off, &mut buf[..frame.len]);
            ((), if hash { frame_checksum(&buf[..frame.len]) } else { 0 })
        })?;
        Ok(outcome.map(|(info, ())| info))
    }

    /// Zero-copy get: runs `f` over the message's bytes where they lie in shared memory and returns its result with
    /// the message's info - only if the bytes were still intact after `f` returned.
    ///
    /// `f` may be called more than once (when a writer overwrote the frame while `f` read it, its result is dropped
    /// and the next message is tried), may see bytes that are being overwritten, and must not keep a reference to
    /// them or act on them (no side effects, no panic on garbage): only a returned result is valid. This never
    /// returns [`GetOutcome::BufferTooSmall`].
    pub fn get_with<R>(
        &mut self,
        mode: ReadMode,
        wait: Wait,
        mut f: impl FnMut(&[u8]) -> R,
    ) -> Result<GetOutcome<(MessageInfo, R)>, ShmError> {
        // G5: run the caller's zero-copy closure over the bytes, then (on a channel with checksums) hash them. The
        // order matters: another process may write the mapping at any time, and a byte `f` read scribbled is
        // still scribbled when the hash reads it later, so the sum cannot match. Hashing first would leave a gap
        // in which `f` sees a scribble that the already-computed sum never saw.
        self.get_core(
            mode,
            wait,
            None,
            || false,
            |memory, frame, hash| {
                memory.view_data(frame.off, frame.len, |bytes| {
                    let result = f(bytes);
                    (result, if hash { frame_checksum(bytes) } else { 0 })
                })
            },
        )
    }

    /// G1-G6 with G-WAIT: find the message, validate its entry (G3), check the buffer (G4), read it with `read`
    /// and validate the read (G5). A wait ends as `TimedOut` when `interrupted()` says so (asked before each sleep).
    ///
    /// After a wake-up this is the whole of a waiting reader's latency, so it touches as little as it can: the
    /// fields are borrowed apart rather than the `Arc` cloned (no reference-count writes), and the clock is read
    /// only when there is nothing to get and the wait has a timeout (never when a message is there).
    ///
    /// A file that shrank under the handle fails the get, whatever the zeros it then read looked like.
    pub(crate) fn get_core<R>(
        &mut self,
        mode: ReadMode,
        wait: Wait,
        capacity: Option<usize>,
        interrupted: impl Fn() -> bool,
        read: impl FnMut(&Memory, FrameAt, bool) -> (R, u64),
    ) -> Result<GetOutcome<(MessageInfo, R)>, ShmError> {
        let got = self.get_unchecked(mode, wait, capacity, interrupted, read);
        if self.shared.damaged() {
            return Err(self.shared.shrank());
        }
        got
    }

    /// [`Reader::get_core`] before its check for a shrunk file.
    fn get_unchecked<R>(
        &mut self,
        mode: ReadMode,
        wait: Wait,
        capacity: Option<usize>,
        interrupted: impl Fn() -> bool,
        mut read: impl FnMut(&Memory, FrameAt, bool) -> (R, u64),
    ) -> Result<GetOutcome<(MessageInfo, R)>, ShmError> {
        let Reader { shared, last, pending_missed, spin, corrupt } = self;
        let shared: &Shared = shared;
        let h = shared.header();
        let g = shared.geometry();
        let mut deadline: Option<Instant> = None;
        let mut failures = 0u32;
        loop {
            // G1: n = newest; nothing newer than last: return or wait (G-WAIT).
            let n = h.newest.load(Ordering::Acquire);
            if n < *last && *last - n >= g.entries {
                // G1: `newest` never goes back by a whole ring: another process overwrote it (before now, or now).
                // Say so, and follow it, so this reader neither waits forever for a sequence number nor skips ahead.
                let was = std::mem::replace(last, n);
                return Err(shared.corrupt(format!("newest message went back from {was} to {n}")));
            }
            if n <= *last {
                let remaining = match wait {
                    Wait::Poll => return Ok(GetOutcome::NothingNew),
                    Wait::Forever => None,
                    Wait::Timeout(d) => {
                        let now = Instant::now();
                        let end = *deadline.get_or_insert_with(|| now.checked_add(d).unwrap_or_else(far_future));
                        let left = end.saturating_duration_since(now);
                        if left.is_zero() {
                            return Ok(GetOutcome::TimedOut);
                        }
                        Some(left)
                    }
                };
                if interrupted() || shared.damaged() {
                    return Ok(GetOutcome::TimedOut);
                }
                wait_once(shared, *last, remaining, *spin);
                continue;
            }
            // G2: pick want.
            let want = match mode {
                ReadMode::Next => {
                    let oldest = n.saturating_sub(g.entries - 1).max(1);
                    let next = last.saturating_add(1);
                    if next < oldest {
                        // G2: fell behind: the difference is missed. `last` moves past what is gone at once, so a
                        // G4 (buffer too small) return below cannot make the next get count the same skip again.
                        *pending_missed = pending_missed.saturating_add(oldest - next);
                        *last = oldest - 1;
                        oldest
                    } else {
                        next
                    }
                }
                ReadMode::Newest => n,
            };
            // G3: read the index entry as a seqlock.
            let e = shared.memory.entry(want);
            let s1 = e.seq.load(Ordering::Acquire);
            let start = e.start.load(Ordering::Relaxed);
            let len = u64::from(e.len.load(Ordering::Relaxed));
            let put_utime = e.put_utime.load(Ordering::Relaxed);
            let origin = e.origin.load(Ordering::Relaxed);
            let sum = e.checksum.load(Ordering::Relaxed);
            fence(Ordering::Acquire); // G3
            let s2 = e.seq.load(Ordering::Relaxed);
            if s1 != want || s2 != want {
                // G3: message `want` was overwritten: count it missed and go to G2 with last = want.
                lost(last, pending_missed, want, mode);
                failures += 1;
                if failures >= RETRY_LIMIT {
                    return Ok(GetOutcome::Retry);
                }
                continue;
            }
            let off = start % g.data_bytes;
            if len > g.max_message || off + len > g.data_bytes {
                return Err(shared.corrupt_entry(want, len, start));
            }
            let len = len as usize;
            // G4: a buffer too small: say so and change nothing.
            if capacity.is_some_and(|cap| len > cap) {
                return Ok(GetOutcome::BufferTooSmall { needed: len });
            }
            // G5: read the bytes, then check that no writer freed them meanwhile.
            let (result, read_sum) = read(&shared.memory, FrameAt { start, off, len }, g.checksum);
            fence(Ordering::Acquire); // G5
            let t = h.tail.load(Ordering::Relaxed);
            // G5: on a channel with checksums, intact bytes that do not match their checksum were scribbled over.
            let scribbled = t <= start && g.checksum && read_sum != sum;
            if scribbled {
                *corrupt += 1;
            }
            if t > start || scribbled {
                // G5: the bytes may have been overwritten while read: discard them, count want missed, go to G2.
                drop(result);
                lost(last, pending_missed, want, mode);
                failures += 1;
                if failures >= RETRY_LIMIT {
                    return Ok(GetOutcome::Retry);
                }
                continue;
            }
            // G6: last = want; return the message and how many were missed since the last get.
            *last = want;
            let missed = std::mem::take(pending_missed);
            return Ok(GetOutcome::Message((MessageInfo { seq: want, len, missed, put_utime, origin }, result)));
        }
    }
}

/// Where G3 found message `want`'s frame: its byte position (G5 and a view's check compare `tail` with it), its
/// offset in the data ring and its length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameAt {
    pub(crate) start: u64,
    pub(crate) off: u64,
    pub(crate) len: usize,
}

/// A message `want` could not be read (G3/G5): in order, it is missed and skipped; newest-only just looks again.
fn lost(last: &mut u64, pending_missed: &mut u64, want: u64, mode: ReadMode) {
    if mode == ReadMode::Next {
        *pending_missed = pending_missed.saturating_add(1);
        *last = want;
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365)
}

/// G-WAIT, once: spin if asked, then register as a waiter, re-check G1 and sleep on the futex for at most one slice
/// (and at most `remaining`, the time left before the caller's deadline: `None` for none). The caller reads the
/// clock, once, and only if it has a deadline; it looks at `newest` again (G1) after this returns, whatever woke it.
pub(crate) fn wait_once(shared: &Shared, last: u64, mut remaining: Option<Duration>, spin: Duration) {
    let h = shared.header();
    if !spin.is_zero() {
        // G-WAIT: with spin asked for, poll newest for that long before sleeping (bounded by the spin and deadline);
        // the time spun comes off the sleep, so the deadline holds.
        let start = Instant::now();
        let spin_for = remaining.map_or(spin, |r| r.min(spin));
        loop {
            if h.newest.load(Ordering::Acquire) > last {
                return;
            }
            let spun = start.elapsed();
            if spun >= spin_for {
                remaining = remaining.map(|r| r.saturating_sub(spun));
                if remaining == Some(Duration::ZERO) {
                    return;
                }
                break;
            }
            std::hint::spin_loop();
        }
    }
    // G-WAIT: w0 is read before registering and re-checking, so a put after the re-check changes the word.
    let w0 = h.wake.load(Ordering::SeqCst);
    h.waiters.fetch_add(1, Ordering::SeqCst); // G-WAIT: waiters += 1
    if h.newest.load(Ordering::SeqCst) > last {
        // G-WAIT: re-check G1.
        h.waiters.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let slice = remaining.map_or(WAIT_SLICE, |r| r.min(WAIT_SLICE));
    if !slice.is_zero() {
        shared.memory.wait(w0, slice); // G-WAIT: futex_wait(wake, w0, min(timeout, slice))
    }
    h.waiters.fetch_sub(1, Ordering::SeqCst); // G-WAIT: waiters -= 1
}
