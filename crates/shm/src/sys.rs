//! The unsafe code of nerve-shm besides the futex calls (`futex`): mapping a channel file (`mmap`), viewing the
//! mapping as the protocol's [`Header`], index [`Entry`]s and data ring ([`Memory`]), the liveness byte locks behind
//! the writer lock ([`WriterLock`], in `lock`), and the doorbell file of wait sets ([`BellMemory`]).
//!
//! Unsafe is allowed here because a channel is memory shared with other processes: it has to be reached through raw
//! pointers, and its liveness locks and wake-ups are kernel calls. Everything above this module (the protocol in
//! `ring`, the files in `channel`) is safe code over `&Header` / `&Entry` atomics and bounds-checked data offsets.
//!
//! Two things safe code cannot promise and this module documents instead: (1) the data ring's bytes are read while a
//! writer (in this or another process) may be overwriting them - the protocol's seqlock pattern, whose `G5` check
//! discards every such read; the reads are plain byte copies of `u8`s, for which every bit pattern is valid, and they
//! are never trusted before that check (loom checks the same protocol with atomic data words); (2) a process with
//! write access to the channel file can corrupt it or truncate it; corrupt values are bounds-checked before use, but
//! a truncated file faults (`SIGBUS`) on access, as with every shared-memory IPC: only processes trusted not to do
//! that may be given write access (the default mode is 0600). That fault does not kill the process: see
//! [Shrinking files](#shrinking-files).
//!
//! # Shrinking files
//!
//! A MAP_SHARED mapping of a file faults with `SIGBUS` where the file no longer has pages (another process ran
//! `truncate` on it, or shrank it), and the default action kills the process. No check before an access can close
//! that window (the file may shrink between the check and the load), so the fault itself is handled: the first
//! mapping installs a process-wide `SIGBUS` handler (`SA_SIGINFO | SA_ONSTACK`, so it also runs on a thread whose
//! stack overflowed into a guard page, where std's handler must see it). Every channel mapping is registered in a
//! fixed table of atomic `(start, len, damaged)` slots. When the faulting address lies in a registered mapping,
//! the handler maps anonymous zero pages over the whole mapping (`mmap(MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS)`,
//! a plain system call, allowed in a handler), sets the slot's `damaged` flag and returns: the access runs again
//! and reads zeros, which the protocol's validation already treats as a miss (a zero sequence number) or
//! corruption. Every put and get looks at the flag before it returns, and a damaged handle fails with
//! [`ShmError::Corrupt`](crate::ShmError) saying the file shrank and the channel must be reopened. The handler takes
//! no lock and allocates nothing (the table is a static array scanned with atomic loads).
//!
//! The put/get protocol (spec/shm.pml, tests/loom.rs) is unchanged by this: to it, a repaired mapping is a
//! channel private to this handle whose words all read 0 from some instant on. No get finds a message there (no
//! index entry holds the sequence number it wants), a put's writes go nowhere another process sees, and the damaged
//! flag, read after the access, fails the call whatever it found. The model has no file length to shrink.
//!
//! A `SIGBUS` at any other address is not Nerve's: the handler passes it on to the handler that was installed
//! before it (std's stack-overflow handler, a sanitizer's, an application's), or, if that was the default action,
//! puts the default action back and raises the signal again, so the process dies as it did without Nerve. A
//! handler installed later that does not chain to the previous one takes the protection away; nothing can prevent
//! that. Miri cannot run this (it has no signals); the handler is tested by the integration tests in real processes
//! (tests/hostile.rs).

#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::futex::{futex_wait, futex_wake};
use crate::layout::{Bell, BellFileHeader, Entry, Geometry, Header, BELLS, BELL_FILE_SIZE, PREFIX_LEN};
use crate::lock::{LockFailure, Locked, WriterLock, HOLDER_MASK};

/// How many channel mappings one process can have at once (each needs a slot in the fault table).
const FAULT_SLOTS: usize = 8192;
/// A slot's `start` while it is being filled in (no mapping starts at address 1).
const SLOT_FILLING: usize = 1;

/// One registered mapping: `start == 0` is a free slot.
struct FaultSlot {
    start: AtomicUsize,
    len: AtomicUsize,
    damaged: AtomicBool,
}

/// The channel mappings the `SIGBUS` handler may repair. A static array of atomics: the handler reads it with no
/// lock and no allocation.
static FAULT_TABLE: [FaultSlot; FAULT_SLOTS] = {
    #[allow(clippy::declare_interior_mutable_const)] // only a template for the array's elements
    const FREE: FaultSlot =
        FaultSlot { start: AtomicUsize::new(0), len: AtomicUsize::new(0), damaged: AtomicBool::new(false) };
    [FREE; FAULT_SLOTS]
};

/// The `SIGBUS` disposition found before ours was installed, for addresses that are not Nerve's.
static PREVIOUS_SIGBUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Installs the `SIGBUS` handler once per process.
fn install_fault_handler() -> io::Result<()> {
    static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        // SAFETY: sigaction with a null new action only writes the current one into `previous`, a valid local for
        // which all-zero bytes are a valid value.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above: a query, into a valid local.
        if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) } != 0 {
            return Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL));
        }
        // Stored before ours is installed, so the handler never runs without it.
        let _ = PREVIOUS_SIGBUS.set(previous);
        // SAFETY: all-zero bytes are a valid sigaction; the fields that matter are set below.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `sa_mask` is a valid sigset_t inside a local; sigemptyset only writes it.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: installs a handler with the signature SA_SIGINFO requires (`on_sigbus`), which only does
        // async-signal-safe things (atomics, mmap, sigaction, raise, calling the previous handler).
        if unsafe { libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL));
        }
        Ok(())
    });
    (*installed).map_err(io::Error::from_raw_os_error)
}

/// The `SIGBUS` handler (see the module doc): repairs a fault inside a registered channel mapping, passes any other
/// on.
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler; si_addr is the faulting address for a
    // fault, and some address or 0 for a signal sent by kill (never inside a mapping by chance that matters: a
    // repair then only zeroes a channel that a hostile process asked to be zeroed).
    let addr = unsafe { (*info).si_addr() } as usize;
    // SAFETY: __errno_location returns this thread's errno, always valid. It is kept across the repair's mmap, so
    // the interrupted code never sees it change.
    let errno = unsafe { *libc::__errno_location() };
    let repaired = repair(addr);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    if repaired {
        return;
    }
    let Some(previous) = PREVIOUS_SIGBUS.get() else {
        default_and_raise(sig);
        return;
    };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // An ignored SIGBUS from a fault would fault forever: die as the default action does.
        default_and_raise(sig);
    } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed with SA_SIGINFO, so it has this signature; it gets the same
        // arguments the kernel gave this one.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        f(sig, info, context);
    } else {
        // SAFETY: a handler installed without SA_SIGINFO takes the signal number alone.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        f(sig);
    }
}

/// Puts the default action back and raises `sig`: it is blocked while the handler runs, so it is delivered (and
/// kills the process) as soon as the handler returns; a fault would also repeat and kill the same way.
fn default_and_raise(sig: libc::c_int) {
    // SAFETY: all-zero bytes are a valid sigaction, and SIG_DFL is 0.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_DFL;
    // SAFETY: sigaction and raise are async-signal-safe; `action` is a valid local.
    unsafe {
        libc::sigaction(sig, &action, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// If `addr` lies in a registered mapping: replaces the whole mapping with anonymous zero pages, marks it damaged
/// and returns true. Async-signal-safe: atomic loads and stores, and one mmap.
fn repair(addr: usize) -> bool {
    for slot in &FAULT_TABLE {
        let start = slot.start.load(Ordering::Acquire);
        if start <= SLOT_FILLING {
            continue;
        }
        let len = slot.len.load(Ordering::Acquire);
        if addr < start || addr - start >= len || slot.start.load(Ordering::Acquire) != start {
            continue;
        }
        // SAFETY: [start, start + len) is a channel mapping this process made and has not unmapped (a slot is freed
        // before its munmap, and the fault came from an access to it, so its handle is alive). MAP_FIXED replaces
        // it in one step with private zero pages of the same length and protection: every reference into it
        // stays valid and now reads zeros. mmap is a plain system call, safe in a signal handler.
        let p = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return false;
        }
        slot.damaged.store(true, Ordering::Release);
        return true;
    }
    false
}

/// Registers a channel mapping with the fault handler; returns its slot.
fn register_mapping(start: usize, len: usize) -> io::Result<usize> {
    install_fault_handler()?;
    for (i, slot) in FAULT_TABLE.iter().enumerate() {
        if slot.start.compare_exchange(0, SLOT_FILLING, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            slot.len.store(len, Ordering::Release);
            slot.damaged.store(false, Ordering::Release);
            slot.start.store(start, Ordering::Release);
            return Ok(i);
        }
    }
    Err(io::Error::other(format!("more than {FAULT_SLOTS} channel mappings in this process")))
}

/// Where the liveness byte locks start in the channel file: far past the end of any channel (byte-range locks may
/// lie past the end of a file), with room for every id.
const LIVENESS_BASE: i64 = 1 << 62;

/// A writer handle's liveness id: the byte lock at `LIVENESS_BASE + id` of the channel file, held through the
/// handle's open file description (so for as long as the handle is open, and by nothing else: the lock is
/// exclusive). Returns an id nobody holds and the lock word does not name (a holder that died holding the writer
/// lock leaves its id there, which must not be mistaken for this handle's).
fn claim_liveness_id(file: &File, lock: &WriterLock) -> io::Result<u32> {
    use std::hash::{BuildHasher, Hasher};
    for _ in 0..64 {
        // std's RandomState is seeded from the OS's random source and differs at each call.
        let id = (std::collections::hash_map::RandomState::new().build_hasher().finish() as u32) & HOLDER_MASK;
        if id == 0 {
            continue;
        }
        match byte_lock(file, libc::F_OFD_SETLK, libc::F_WRLCK, id) {
            Ok(_) if lock.holder() == id => {
                byte_lock(file, libc::F_OFD_SETLK, libc::F_UNLCK, id)?;
            }
            Ok(_) => return Ok(id),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free liveness id in 64 random tries"))
}

/// Whether a handle (of any process) holds liveness id `id` on this file. An error (a filesystem without byte
/// locks) answers "alive": a lock is never taken over on a guess.
fn liveness_held(file: &File, id: u32) -> bool {
    match byte_lock(file, libc::F_OFD_GETLK, libc::F_WRLCK, id) {
        Ok(found) => i32::from(found.l_type) != libc::F_UNLCK,
        Err(_) => true,
    }
}

/// One `fcntl` byte-range lock call on the liveness byte of `id`: `F_OFD_SETLK` (without waiting) or `F_OFD_GETLK`.
fn byte_lock(file: &File, cmd: libc::c_int, kind: libc::c_int, id: u32) -> io::Result<libc::flock> {
    // SAFETY: flock is a plain C struct for which all-zero bytes are a valid value.
    let mut request: libc::flock = unsafe { std::mem::zeroed() };
    request.l_type = kind as libc::c_short;
    request.l_whence = libc::SEEK_SET as libc::c_short;
    request.l_start = LIVENESS_BASE + i64::from(id);
    request.l_len = 1;
    // SAFETY: fcntl with an OFD lock command reads and (for GETLK) writes the one flock struct passed, a valid local;
    // l_pid is 0 as OFD locks require.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), cmd, &mut request as *mut libc::flock) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(request)
}

/// CLOCK_REALTIME in microseconds since the Unix epoch (a put's time stamp, W6).
pub(crate) fn realtime_micros() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `ts`, a valid local. CLOCK_REALTIME always exists, so it cannot
    // fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec.saturating_mul(1_000_000).saturating_add(ts.tv_nsec / 1_000)
}

/// Proof that this thread holds the writer lock; unlocks when dropped (W9). Not `Send`: the lock is recorded as held
/// by this thread (see [`HELD_HERE`]), so a [`crate::Loan`] stays on the thread that made it.
pub(crate) struct WriterGuard<'a> {
    memory: &'a Memory,
    /// Taken over from a dead holder and `REC` not yet finished: dropped like this, the lock is left abandoned.
    recovering: Cell<bool>,
    _same_thread: PhantomData<*const ()>,
}

impl WriterGuard<'_> {
    /// After `REC`: the state the lock protects is consistent again.
    pub(crate) fn mark_consistent(&self) {
        self.recovering.set(false);
    }
}

impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        self.memory.header().lock.unlock(self.recovering.get());
        // `try_with`: a guard may be dropped while this thread's locals are torn down (then there is no record).
        let _ = HELD_HERE.try_with(|held| held.borrow_mut().retain(|&file| file != self.memory.file_id));
    }
}

thread_local! {
    /// The channel files (device, inode) whose writer lock this thread holds: taking one again from the same thread
    /// (a second writer while a loan is open) is an error at once rather than a wait that cannot end.
    static HELD_HERE: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
}

/// A hint that the line at `addr` is about to be written: fetch it for ownership now. Any address will do (a stale
/// hint, an unmapped page): a prefetch is dropped, never trapped.
#[inline(always)]
pub(crate) fn prefetch_for_write(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86_64's baseline, so the instruction exists; a prefetch reads and writes nothing and
    // does not fault on any address. ET0 is `prefetchw`: the line comes for ownership, so the store that follows
    // needs no second round trip.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// The MAP_SHARED mapping of a whole channel file, with its validated geometry.
pub(crate) struct Memory {
    base: NonNull<u8>,
    geometry: Geometry,
    /// The channel file, open for as long as the mapping: its open file description carries this handle's liveness
    /// byte lock.
    file: File,
    /// The file's (device, inode), which names the channel's writer lock in [`HELD_HERE`].
    file_id: (u64, u64),
    /// This handle's liveness id, claimed when it first takes the writer lock.
    liveness: OnceLock<u32>,
    /// The mapping's slot in the fault table.
    fault_slot: usize,
}

// SAFETY: the mapping is process-wide memory; every shared field is an atomic (the writer state is touched only by
// the holder of the writer lock), and the data ring is accessed under the protocol's rules (see the module doc).
unsafe impl Send for Memory {}
// SAFETY: as for Send: concurrent use from several threads is what the protocol is for.
unsafe impl Sync for Memory {}

impl Memory {
    /// Maps an existing channel file whose header prefix validated as `geometry` (and whose length is at least
    /// `geometry.file_size`), and keeps the file open.
    pub(crate) fn open(file: File, geometry: Geometry) -> io::Result<Memory> {
        let meta = file.metadata()?;
        // SAFETY: mapping a file we opened read-write, for its validated length; the kernel chooses the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                geometry.file_size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let unmap = |e: io::Error| {
            // SAFETY: unmapping the region just mapped, which nothing references yet.
            unsafe { libc::munmap(p, geometry.file_size) };
            e
        };
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null")).map_err(unmap)?;
        let fault_slot = register_mapping(p as usize, geometry.file_size).map_err(unmap)?;
        Ok(Memory { base, geometry, file, file_id: (meta.dev(), meta.ino()), liveness: OnceLock::new(), fault_slot })
    }

    /// Whether the file shrank under this mapping: an access faulted, and the mapping now holds zeros, not the
    /// channel (see the module doc). Such a handle must be dropped and the channel opened again.
    pub(crate) fn damaged(&self) -> bool {
        FAULT_TABLE[self.fault_slot].damaged.load(Ordering::Acquire)
    }

    /// The (device, inode) of the file this handle mapped.
    pub(crate) fn file_id(&self) -> (u64, u64) {
        self.file_id
    }

    /// Maps a new, zero-filled file of `geometry.file_size` bytes that no other process can see yet, and writes a
    /// fresh header: the prefix and `next_seq = 1` (a zero lock word is a free lock).
    pub(crate) fn initialise(file: File, geometry: Geometry, created_utime: i64) -> io::Result<Memory> {
        let memory = Memory::open(file, geometry)?;
        let prefix = geometry.prefix(created_utime);
        // SAFETY: the mapping is at least a Header long, and nobody else can reach it yet (the file has a temporary
        // name). The prefix bytes are the header's first fields (magic to file_size, repr(C)).
        unsafe { std::ptr::copy_nonoverlapping(prefix.as_ptr(), memory.base.as_ptr(), PREFIX_LEN) };
        memory.header().next_seq.store(1, Ordering::Release);
        Ok(memory)
    }

    /// The channel file.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// The channel's sizes (validated once, never re-read from the file).
    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The header at offset 0.
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is at least `size_of::<Header>()` bytes (validated geometry), page-aligned, and lives
        // as long as `self`. Header is repr(C) atomics and plain integers: any bytes another
        // process leaves there are a valid value of it (the fields read through the reference are atomics; the
        // plain ones are not read after open).
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }

    /// The header's fixed prefix as it is in the file now (another process may have overwritten it since open).
    pub(crate) fn prefix_now(&self) -> [u8; PREFIX_LEN] {
        let mut out = [0u8; PREFIX_LEN];
        for (i, byte) in out.iter_mut().enumerate() {
            // SAFETY: the mapping is at least a Header (more than PREFIX_LEN bytes) long; the bytes are read
            // volatile, one at a time, because other processes may write them (any value is a valid u8).
            *byte = unsafe { std::ptr::read_volatile(self.base.as_ptr().add(i)) };
        }
        out
    }

    /// The index entry for sequence number `seq`: entry `seq % N`.
    pub(crate) fn entry(&self, seq: u64) -> &Entry {
        let i = (seq % self.geometry.entries) as usize;
        // SAFETY: `i < N` and the index ring of N entries starts at the 64-aligned `index_offset` inside the mapping
        // (validated geometry); Entry is repr(C) atomics and a plain u32 that is never read: any bytes are valid.
        unsafe { &*self.base.as_ptr().add(self.geometry.index_offset).cast::<Entry>().add(i) }
    }

    /// The addresses of the lines the put after this one touches: the header's writer and reader lines, the index
    /// entry of `next_seq` and the data ring at `data_head` (where the frame goes unless it wraps). Only addresses,
    /// for [`prefetch_for_write`]: nothing is read through them.
    pub(crate) fn put_lines(&self, next_seq: u64, data_head: u64) -> [usize; 4] {
        let base = self.base.as_ptr() as usize;
        let g = &self.geometry;
        let entry = g.index_offset + (next_seq % g.entries) as usize * size_of::<Entry>();
        let data = g.data_offset + (data_head % g.data_bytes) as usize;
        [
            base + std::mem::offset_of!(Header, lock),
            base + std::mem::offset_of!(Header, newest),
            base + entry,
            base + data,
        ]
    }

    /// A raw pointer to `len` bytes at ring offset `off`, after checking they lie inside the data ring.
    fn data_ptr(&self, off: u64, len: usize) -> *mut u8 {
        let end = off.checked_add(len as u64);
        assert!(end.is_some_and(|e| e <= self.geometry.data_bytes), "data ring access out of bounds: {off}+{len}");
        // SAFETY: `off + len <= C` (checked above), and the data ring of C bytes starts at `data_offset` inside the
        // mapping (validated geometry), so the pointer and the `len` bytes after it are inside the mapping.
        unsafe { self.base.as_ptr().add(self.geometry.data_offset + off as usize) }
    }

    /// W5: copies a message into the data ring at offset `off` (the caller holds the writer lock).
    pub(crate) fn write_data(&self, off: u64, bytes: &[u8]) {
        let dst = self.data_ptr(off, bytes.len());
        // SAFETY: `dst..dst+len` is inside the mapping (data_ptr); `bytes` is a separate Rust slice, so the regions
        // do not overlap. Readers may be reading these bytes concurrently; they discard what they read (G5).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) }
    }

    /// G5: copies `out.len()` bytes at ring offset `off` out of the data ring (validated afterwards by the caller).
    pub(crate) fn read_data(&self, off: u64, out: &mut [u8]) {
        let src = self.data_ptr(off, out.len());
        // SAFETY: the source is inside the mapping (data_ptr) and `out` is a separate Rust slice. A writer may be
        // overwriting the source: the caller validates (G5) and discards the bytes in that case (module doc).
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) }
    }

    /// G5, zero-copy: runs `f` over `len` bytes at ring offset `off`, in place.
    pub(crate) fn view_data<R>(&self, off: u64, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let src = self.data_ptr(off, len);
        // SAFETY: the bytes are inside the mapping (data_ptr), which outlives the call; the slice does not escape
        // `f` (its lifetime is the closure call). They may change under `f` if a writer overwrites the frame: the
        // caller validates (G5) after `f` returns and discards its result in that case (module doc).
        f(unsafe { std::slice::from_raw_parts(src, len) })
    }

    /// V1, a view: the `len` bytes at ring offset `off`, in place, for as long as the mapping is borrowed (a
    /// `View` keeps its channel's `Shared`, and so this mapping, alive).
    pub(crate) fn data(&self, off: u64, len: usize) -> &[u8] {
        let src = self.data_ptr(off, len);
        // SAFETY: the bytes are inside the mapping (data_ptr), which lives as long as `self` (munmap is in Drop), so
        // as long as the returned borrow; a file that shrinks under it gets zero pages mapped over it, never a hole.
        // They change under the borrow when a writer overwrites the frame, as under `view_data`'s closure: a view
        // reports that (V2: `tail` passed its start) and its rule is that only what was read before a passing check
        // counts (module doc).
        unsafe { std::slice::from_raw_parts(src, len) }
    }

    /// Takes the writer lock (W1): the guard, and whether its previous holder died holding it (then run `REC`).
    pub(crate) fn lock(&self) -> Result<(WriterGuard<'_>, bool), String> {
        if HELD_HERE.try_with(|held| held.borrow().contains(&self.file_id)).unwrap_or(false) {
            return Err("this thread already holds it (an uncommitted loan on this channel?)".into());
        }
        let me = self.liveness_id().map_err(|e| format!("claiming this writer's liveness lock: {e}"))?;
        let alive = |id| liveness_held(&self.file, id);
        let locked = self.header().lock.lock(me, crate::LOCK_PATIENCE, alive).map_err(|LockFailure::TimedOut| {
            format!(
                "held for more than {:?} by another live writer (an uncommitted loan, a stopped process) or damaged",
                crate::LOCK_PATIENCE
            )
        })?;
        let _ = HELD_HERE.try_with(|held| held.borrow_mut().push(self.file_id));
        let owner_died = locked == Locked::OwnerDied;
        Ok((WriterGuard { memory: self, recovering: Cell::new(owner_died), _same_thread: PhantomData }, owner_died))
    }

    /// This handle's liveness id, claimed the first time.
    fn liveness_id(&self) -> io::Result<u32> {
        if let Some(&id) = self.liveness.get() {
            return Ok(id);
        }
        let claimed = claim_liveness_id(&self.file, &self.header().lock)?;
        match self.liveness.set(claimed) {
            Ok(()) => Ok(claimed),
            Err(_) => {
                // Another thread of this handle claimed one first: give this one back and use that.
                byte_lock(&self.file, libc::F_OFD_SETLK, libc::F_UNLCK, claimed)?;
                self.liveness.get().copied().ok_or_else(|| io::Error::other("liveness id vanished"))
            }
        }
    }

    /// G-WAIT: sleeps on the `wake` futex word while it holds `expected`, for at most `timeout`.
    pub(crate) fn wait(&self, expected: u32, timeout: Duration) {
        futex_wait(&self.header().wake, expected, timeout)
    }

    /// W10: wakes every reader sleeping on the `wake` word.
    pub(crate) fn wake(&self) {
        futex_wake(&self.header().wake, i32::MAX)
    }

    /// W5 as a loan: the `len` bytes at ring offset `off`, for the writer holding the lock to fill in place.
    pub(crate) fn loan_data<'g>(&self, _proof: &'g mut WriterGuard<'_>, off: u64, len: usize) -> &'g mut [u8] {
        let dst = self.data_ptr(off, len);
        // SAFETY: the bytes are inside the mapping (data_ptr), which outlives the guard (the guard borrows the
        // mapping's lock). Only the holder of the writer lock (`_proof`, borrowed mutably for as long as the slice
        // lives, so there is one slice at a time) writes the data ring, and the frame at `off` is referenced by no index entry
        // until commit, so no other writer aliases it; stale readers may read it and discard what they read (G5).
        unsafe { std::slice::from_raw_parts_mut(dst, len) }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // The slot is freed before the munmap: the address range may be reused for anything once unmapped.
        let slot = &FAULT_TABLE[self.fault_slot];
        slot.start.store(0, Ordering::Release);
        // SAFETY: unmapping exactly the region mapped in `map`; no reference into it outlives `self` (every
        // accessor borrows `self`).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.geometry.file_size);
        }
    }
}

/// The MAP_SHARED mapping of a channel directory's doorbell file (`layout::BELL_FILE`): its header and its
/// [`BELLS`] doorbells. Registered with the fault handler like a channel, so a doorbell file truncated under it
/// reads zeros instead of killing the process ([`BellMemory::damaged`]).
pub(crate) struct BellMemory {
    base: NonNull<u8>,
    file: File,
    file_id: (u64, u64),
    fault_slot: usize,
}

// SAFETY: as for Memory: every field the mapping is read through is an atomic.
unsafe impl Send for BellMemory {}
// SAFETY: as above.
unsafe impl Sync for BellMemory {}

impl BellMemory {
    /// Maps a doorbell file whose length the caller checked is at least [`BELL_FILE_SIZE`].
    pub(crate) fn open(file: File) -> io::Result<BellMemory> {
        let meta = file.metadata()?;
        if meta.len() < BELL_FILE_SIZE as u64 {
            return Err(io::Error::other(format!("{} bytes, a doorbell file has {BELL_FILE_SIZE}", meta.len())));
        }
        // SAFETY: mapping a file opened read-write, for a length it has; the kernel chooses the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BELL_FILE_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let unmap = |e: io::Error| {
            // SAFETY: unmapping the region just mapped, which nothing references yet.
            unsafe { libc::munmap(p, BELL_FILE_SIZE) };
            e
        };
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null")).map_err(unmap)?;
        let fault_slot = register_mapping(p as usize, BELL_FILE_SIZE).map_err(unmap)?;
        Ok(BellMemory { base, file, file_id: (meta.dev(), meta.ino()), fault_slot })
    }

    /// The doorbell file's header.
    pub(crate) fn header(&self) -> &BellFileHeader {
        // SAFETY: the mapping is BELL_FILE_SIZE bytes, page-aligned, and lives as long as `self`; BellFileHeader is
        // repr(C) plain integers and atomics, valid for any bytes (the plain ones are only compared).
        unsafe { &*self.base.as_ptr().cast::<BellFileHeader>() }
    }

    /// The header's fixed part as bytes, for validation (magic, version, bells, file size).
    pub(crate) fn prefix(&self) -> [u8; 24] {
        let mut out = [0u8; 24];
        for (i, byte) in out.iter_mut().enumerate() {
            // SAFETY: inside the mapping; read volatile because other processes may write it (any u8 is valid).
            *byte = unsafe { std::ptr::read_volatile(self.base.as_ptr().add(i)) };
        }
        out
    }

    /// Writes the fixed part of a new doorbell file's header (nobody else can see the file yet).
    pub(crate) fn write_prefix(&self, prefix: &[u8; 24]) {
        // SAFETY: inside the mapping, which only this process can reach (the file has a temporary name).
        unsafe { std::ptr::copy_nonoverlapping(prefix.as_ptr(), self.base.as_ptr(), prefix.len()) };
    }

    /// Doorbell `i` (taken modulo [`BELLS`]).
    pub(crate) fn bell(&self, i: usize) -> &Bell {
        let offset = size_of::<BellFileHeader>() + (i % BELLS) * size_of::<Bell>();
        // SAFETY: `offset + size_of::<Bell>() <= BELL_FILE_SIZE`, 64-aligned inside the mapping; Bell is repr(C)
        // atomics and padding, valid for any bytes.
        unsafe { &*self.base.as_ptr().add(offset).cast::<Bell>() }
    }

    /// Whether the doorbell file shrank under this mapping (see [`Memory::damaged`]).
    pub(crate) fn damaged(&self) -> bool {
        FAULT_TABLE[self.fault_slot].damaged.load(Ordering::Acquire)
    }

    /// The (device, inode) of the file mapped.
    pub(crate) fn file_id(&self) -> (u64, u64) {
        self.file_id
    }

    /// B-WAIT: sleeps on doorbell `bell`'s word while it holds `expected`, for at most `timeout`.
    pub(crate) fn wait(&self, bell: &Bell, expected: u32, timeout: Duration) {
        futex_wait(&bell.word, expected, timeout)
    }

    /// B-RING: wakes the owner of `bell` if it sleeps.
    pub(crate) fn wake(&self, bell: &Bell) {
        futex_wake(&bell.word, i32::MAX)
    }

    /// Claims a doorbell no live process holds and this process does not use (`taken`): its liveness byte lock,
    /// held through this mapping's open file description until [`BellMemory::release`] or the process's death.
    pub(crate) fn claim(&self, taken: &[bool]) -> io::Result<Option<usize>> {
        let start = std::process::id() as usize % BELLS;
        for k in 0..BELLS {
            let i = (start + k) % BELLS;
            if taken.get(i).copied().unwrap_or(false) {
                continue;
            }
            match byte_lock(&self.file, libc::F_OFD_SETLK, libc::F_WRLCK, i as u32) {
                Ok(_) => return Ok(Some(i)),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Gives doorbell `i` back.
    pub(crate) fn release(&self, i: usize) {
        let _ = byte_lock(&self.file, libc::F_OFD_SETLK, libc::F_UNLCK, i as u32);
    }

    /// Whether another open file description (another process) holds doorbell `i`. The caller answers for its own.
    pub(crate) fn held_elsewhere(&self, i: usize) -> bool {
        liveness_held(&self.file, i as u32)
    }
}

impl Drop for BellMemory {
    fn drop(&mut self) {
        FAULT_TABLE[self.fault_slot].start.store(0, Ordering::Release);
        // SAFETY: unmapping exactly the region mapped in `open`; no reference into it outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), BELL_FILE_SIZE);
        }
    }
}

/// Reserves the file's blocks so a full tmpfs fails here (`ENOSPC`) rather than with a `SIGBUS` on first touch.
/// Returns `Ok(false)` if the filesystem does not support it (the caller then only sets the length).
pub(crate) fn allocate(file: &File, len: usize) -> io::Result<bool> {
    // SAFETY: plain system call on an open file descriptor.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    match rc {
        0 => Ok(true),
        libc::EOPNOTSUPP | libc::EINVAL => Ok(false),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::held_by;

    #[test]
    fn liveness_ids_are_unique_per_open_file_and_die_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let open =
            || std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).unwrap();
        let (a, b) = (open(), open());
        let lock = held_by(0);
        let id = claim_liveness_id(&a, &lock).unwrap();
        assert!(liveness_held(&b, id), "another open file sees the id held");
        assert!(!liveness_held(&a, id), "its own open file never conflicts with itself (so it is never asked)");
        assert_eq!(byte_lock(&b, libc::F_OFD_SETLK, libc::F_WRLCK, id).unwrap_err().raw_os_error(), Some(libc::EAGAIN));
        drop(a);
        assert!(!liveness_held(&b, id), "closing the file (as a dying process does) frees the id");
    }
}
