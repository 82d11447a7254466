//! The only unsafe code of nerve-shm: mapping a channel file (`mmap`), viewing the mapping as the protocol's
//! [`Header`], index [`Entry`]s and data ring ([`Memory`]), the robust process-shared writer lock
//! ([`RobustMutex`]), and the futex calls that put readers to sleep and wake them.
//!
//! Unsafe is allowed here because a channel is memory shared with other processes: it has to be reached through raw
//! pointers, and its lock and wake-ups are libc and kernel calls. Everything above this module (the protocol in
//! `ring`, the files in `channel`) is safe code over `&Header` / `&Entry` atomics and bounds-checked data offsets.
//!
//! Two things safe code cannot promise and this module documents instead: (1) the data ring's bytes are read while a
//! writer (in this or another process) may be overwriting them - the protocol's seqlock pattern, whose `G5` check
//! discards every such read; the reads are plain byte copies of `u8`s, for which every bit pattern is valid, and they
//! are never trusted before that check (loom checks the same protocol with atomic data words); (2) a process with
//! write access to the channel file can corrupt it or truncate it; corrupt values are bounds-checked before use, but
//! a truncated file faults (`SIGBUS`) on access, as with every shared-memory IPC: only processes trusted not to do
//! that may be given write access (the default mode is 0600).

#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use crate::layout::{Entry, Geometry, Header, PREFIX_LEN};

/// A process-shared, robust, error-checking pthread mutex (the header keeps the writer state in the rest of its
/// cache line).
#[repr(C)]
pub(crate) struct RobustMutex {
    mutex: UnsafeCell<libc::pthread_mutex_t>,
}

// SAFETY: a pthread mutex is made to be used from several threads (and, being process-shared, several processes)
// at once; all access goes through the pthread calls below.
unsafe impl Sync for RobustMutex {}
// SAFETY: the mutex is never moved while in use: it lives in a mapping and is only ever reached by reference.
unsafe impl Send for RobustMutex {}

/// What `RobustMutex::lock` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Locked {
    /// The lock was free or released normally.
    Clean,
    /// Its owner died holding it: the state it protects may be half-updated (run `REC`, then `consistent`).
    OwnerDied,
}

impl RobustMutex {
    /// Initialises the mutex at `this` (zeroed memory of a new channel file, not yet visible to other processes).
    ///
    /// # Safety
    ///
    /// `this` must point to writable memory that holds a `RobustMutex` no other thread or process uses yet.
    unsafe fn init(this: *mut RobustMutex) -> io::Result<()> {
        let mut attr = MaybeUninit::<libc::pthread_mutexattr_t>::uninit();
        let check = |rc: libc::c_int| if rc == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(rc)) };
        // SAFETY: `attr` is initialised by pthread_mutexattr_init before any other use and destroyed after; the mutex
        // pointer is valid and unshared (the caller's contract), and a process-shared mutex may live in a mapping.
        unsafe {
            check(libc::pthread_mutexattr_init(attr.as_mut_ptr()))?;
            let result = (|| {
                check(libc::pthread_mutexattr_setpshared(attr.as_mut_ptr(), libc::PTHREAD_PROCESS_SHARED))?;
                check(libc::pthread_mutexattr_setrobust(attr.as_mut_ptr(), libc::PTHREAD_MUTEX_ROBUST))?;
                check(libc::pthread_mutexattr_settype(attr.as_mut_ptr(), libc::PTHREAD_MUTEX_ERRORCHECK))?;
                check(libc::pthread_mutex_init(UnsafeCell::raw_get(&raw const (*this).mutex), attr.as_ptr()))
            })();
            libc::pthread_mutexattr_destroy(attr.as_mut_ptr());
            result
        }
    }

    /// Locks, reporting whether the previous owner died holding the lock. Errors are pthread error numbers
    /// (`ENOTRECOVERABLE`, `EDEADLK` when this thread already holds it, `EINVAL` for a corrupt mutex, `ETIMEDOUT`
    /// when it was not free within [`crate::LOCK_PATIENCE`]).
    pub(crate) fn lock(&self) -> Result<Locked, i32> {
        if !self.kind_is_intact() {
            // A scribbled type word can send glibc down its priority-inheritance paths, whose assertions abort the
            // process: refuse it instead (a damaged channel is an error, never a crash).
            return Err(libc::EINVAL);
        }
        let deadline = realtime_deadline(crate::LOCK_PATIENCE);
        // SAFETY: the mutex was initialised when the channel file was made, and its type word is the one
        // initialisation wrote (checked above). A scribbled lock word can only make the lock look held, which the
        // deadline bounds (no hang).
        match unsafe { libc::pthread_mutex_timedlock(self.mutex.get(), &deadline) } {
            0 => Ok(Locked::Clean),
            libc::EOWNERDEAD => Ok(Locked::OwnerDied),
            e => Err(e),
        }
    }

    /// Whether the mutex's type word (glibc's `__kind`, the fifth `int`) is what `init` writes.
    fn kind_is_intact(&self) -> bool {
        static EXPECTED: std::sync::OnceLock<Option<i32>> = std::sync::OnceLock::new();
        let expected = EXPECTED.get_or_init(|| {
            let mut template = MaybeUninit::<RobustMutex>::zeroed();
            // SAFETY: a zeroed local mutex that nothing else sees, initialised in place and never locked; its type
            // word is read as plain bytes.
            unsafe {
                RobustMutex::init(template.as_mut_ptr()).ok()?;
                Some(std::ptr::read_volatile(template.as_ptr().cast::<i32>().add(KIND_INDEX)))
            }
        });
        // SAFETY: the mutex is at least 5 ints long (pthread_mutex_t is 40 bytes on x86-64 and 48 on aarch64); the
        // word is read volatile because other processes may write the mapping.
        let found = unsafe { std::ptr::read_volatile(self.mutex.get().cast::<i32>().add(KIND_INDEX)) };
        expected.is_none_or(|k| k == found)
    }

    /// Marks the state consistent again after `REC` (only after `lock` returned `OwnerDied`, by the same thread).
    pub(crate) fn consistent(&self) {
        // SAFETY: called by the thread that holds the lock after EOWNERDEAD (the guard enforces it). It fails only
        // if another process scribbled over the mutex meanwhile: nothing to do about that here.
        unsafe { libc::pthread_mutex_consistent(self.mutex.get()) };
    }

    /// Unlocks (only by the thread that locked it: the guard enforces it).
    pub(crate) fn unlock(&self) {
        // SAFETY: called once per successful lock, by the locking thread (the guard's drop). It fails (EPERM) only
        // if another process scribbled over the mutex meanwhile; the next lock then reports what it finds.
        unsafe { libc::pthread_mutex_unlock(self.mutex.get()) };
    }
}

/// Byte ranges of a locked glibc `pthread_mutex_t` that point into the locking process: `__list` (its robust-list
/// links: `__prev`/`__next` on x86-64, `__next` and padding on aarch64). Not `__owner`: `pthread_mutex_consistent`
/// rewrites it legitimately after `REC` (a scribbled owner makes the unlock fail with EPERM, which harms only the
/// channel: the next writers time out on its lock).
const LINK_RANGES: [(usize, usize); 1] = [(24, 40)];

/// The saved bytes of [`LINK_RANGES`].
type Links = [u8; 16];

impl RobustMutex {
    /// The robust-list words as they are now (just after locking: as glibc set them).
    fn links(&self) -> Links {
        let mut out = [0u8; 16];
        let base = self.mutex.get().cast::<u8>();
        let mut k = 0;
        for (from, to) in LINK_RANGES {
            for i in from..to {
                // SAFETY: `i < 40 <= size_of::<pthread_mutex_t>()`; read volatile because other processes may
                // write the mapping (any u8 is valid).
                out[k] = unsafe { std::ptr::read_volatile(base.add(i)) };
                k += 1;
            }
        }
        out
    }

    /// Writes back the robust-list words saved at lock time, where they differ now.
    fn restore_links(&self, saved: &Links) {
        if self.links() == *saved {
            return;
        }
        let base = self.mutex.get().cast::<u8>();
        let mut k = 0;
        for (from, to) in LINK_RANGES {
            for i in from..to {
                // SAFETY: as in `links`; this thread holds the lock, so glibc itself does not write these words now.
                unsafe { std::ptr::write_volatile(base.add(i), saved[k]) };
                k += 1;
            }
        }
    }
}

const _: () = assert!(std::mem::size_of::<libc::pthread_mutex_t>() >= 40);

/// The index of glibc's `__kind` among the `int`s of a `pthread_mutex_t` (`__lock`, `__count`, `__owner`,
/// `__nusers`, `__kind`, on x86-64 and on the generic layout of aarch64).
const KIND_INDEX: usize = 4;

/// The `CLOCK_REALTIME` instant `after` from now, as `pthread_mutex_timedlock` takes it.
fn realtime_deadline(after: Duration) -> libc::timespec {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let nanos = now.tv_nsec as u64 + u64::from(after.subsec_nanos());
    libc::timespec {
        tv_sec: now.tv_sec + after.as_secs() as libc::time_t + (nanos / 1_000_000_000) as libc::time_t,
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    }
}

/// Sleeps while `*word == expected`, for at most `timeout` (FUTEX_WAIT, shared: no FUTEX_PRIVATE_FLAG, the word is in
/// a mapping shared between processes). Returns early on a wake-up, a signal, or when the word already differs.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the word is a live, aligned u32 for the duration of the call; the kernel only reads it. The timeout is
    // relative (FUTEX_WAIT), and the unused arguments are null/0 as FUTEX_WAIT requires. EAGAIN, EINTR and
    // ETIMEDOUT all mean "look again", so the result is not needed.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            0usize,
            0u32,
        );
    }
}

/// CLOCK_REALTIME in microseconds since the Unix epoch (a put's time stamp, W6).
pub(crate) fn realtime_micros() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `ts`, a valid local. CLOCK_REALTIME always exists, so it cannot
    // fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec.saturating_mul(1_000_000).saturating_add(ts.tv_nsec / 1_000)
}

/// Wakes every process and thread sleeping on `word`.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: the word is a live, aligned u32; FUTEX_WAKE does not touch memory beyond looking up its address.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX, 0usize, 0usize, 0u32);
    }
}

/// Proof that this thread holds the writer lock; unlocks when dropped (W9). Not `Send`: a pthread mutex must be
/// unlocked by the thread that locked it (so a [`crate::Loan`] cannot move to another thread either).
pub(crate) struct WriterGuard<'a> {
    lock: &'a RobustMutex,
    /// The mutex's robust-list words as glibc left them when it locked (see [`RobustMutex::links`]).
    links: Links,
    _same_thread: PhantomData<*const ()>,
}

impl WriterGuard<'_> {
    /// After `REC`: the state the lock protects is consistent again.
    pub(crate) fn mark_consistent(&self) {
        self.lock.consistent()
    }
}

impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        // glibc's unlock of a robust mutex writes through the list pointers stored in the mutex, in shared memory:
        // put back what it wrote there at lock time, in case another process scribbled over them meanwhile (a wild
        // write into this process otherwise).
        self.lock.restore_links(&self.links);
        self.lock.unlock()
    }
}

/// One entry of `futex_waitv`'s array (linux/futex.h `struct futex_waitv`).
#[repr(C)]
struct FutexWaitv {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

/// The most words one `futex_waitv` call takes (linux/futex.h `FUTEX_WAITV_MAX`).
pub(crate) const FUTEX_WAITV_MAX: usize = 128;

/// Sleeps until one of `words` no longer holds its expected value (checked atomically by the kernel), any of them is
/// woken, or `timeout` passes: `futex_waitv` (Linux 5.16), shared futexes of 32 bits. `Err` with `ENOSYS` on older
/// kernels; at most [`FUTEX_WAITV_MAX`] words.
pub(crate) fn futex_waitv(words: &[(&AtomicU32, u32)], timeout: Duration) -> io::Result<()> {
    const FUTEX2_SIZE_U32: u32 = 0x02;
    assert!(words.len() <= FUTEX_WAITV_MAX);
    let waiters: Vec<FutexWaitv> = words
        .iter()
        .map(|(word, expected)| FutexWaitv {
            val: u64::from(*expected),
            uaddr: word.as_ptr() as u64,
            flags: FUTEX2_SIZE_U32,
            reserved: 0,
        })
        .collect();
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `now`, which is valid for writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let nanos = now.tv_nsec as u64 + u64::from(timeout.subsec_nanos());
    let deadline = libc::timespec {
        tv_sec: now.tv_sec.saturating_add(
            timeout.as_secs().min(i32::MAX as u64) as libc::time_t + (nanos / 1_000_000_000) as libc::time_t,
        ),
        tv_nsec: (nanos % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `waiters` is a live array of `len` futex_waitv entries whose addresses are live, aligned u32 words (the
    // caller's borrows outlive the call); the kernel only reads them. The timeout is absolute on CLOCK_MONOTONIC, as
    // futex_waitv requires; flags are 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex_waitv,
            waiters.as_ptr(),
            waiters.len() as libc::c_uint,
            0u32,
            &deadline as *const libc::timespec,
            libc::CLOCK_MONOTONIC,
        )
    };
    if rc >= 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::ETIMEDOUT | libc::EINTR) => Ok(()),
        _ => Err(e),
    }
}

/// The MAP_SHARED mapping of a whole channel file, with its validated geometry.
pub(crate) struct Memory {
    base: NonNull<u8>,
    geometry: Geometry,
}

// SAFETY: the mapping is process-wide memory; every shared field is an atomic or behind the pthread mutex, and the
// data ring is accessed under the protocol's rules (see the module doc).
unsafe impl Send for Memory {}
// SAFETY: as for Send: concurrent use from several threads is what the protocol is for.
unsafe impl Sync for Memory {}

impl Memory {
    fn map(file: &File, geometry: Geometry) -> io::Result<Memory> {
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
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Memory { base, geometry })
    }

    /// Maps an existing channel file whose header prefix validated as `geometry` (and whose length is at least
    /// `geometry.file_size`).
    pub(crate) fn open(file: &File, geometry: Geometry) -> io::Result<Memory> {
        Memory::map(file, geometry)
    }

    /// Maps a new, zero-filled file of `geometry.file_size` bytes that no other process can see yet, and writes a
    /// fresh header: prefix, writer lock, `next_seq = 1`.
    pub(crate) fn initialise(file: &File, geometry: Geometry, created_utime: i64) -> io::Result<Memory> {
        let memory = Memory::map(file, geometry)?;
        let prefix = geometry.prefix(created_utime);
        let header = memory.base.as_ptr().cast::<Header>();
        // SAFETY: the mapping is at least a Header long, page-aligned (so aligned for Header), and nobody else can
        // reach it yet (the file has a temporary name). The prefix bytes are the header's first fields (magic to
        // file_size, repr(C)); the mutex is initialised in place before the file is published.
        unsafe {
            std::ptr::copy_nonoverlapping(prefix.as_ptr(), memory.base.as_ptr(), PREFIX_LEN);
            RobustMutex::init(&raw mut (*header).lock)?;
        }
        memory.header().next_seq.store(1, std::sync::atomic::Ordering::Release);
        Ok(memory)
    }

    /// The channel's sizes (validated once, never re-read from the file).
    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The header at offset 0.
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is at least `size_of::<Header>()` bytes (validated geometry), page-aligned, and lives
        // as long as `self`. Header is repr(C) atomics, plain integers and a pthread mutex: any bytes another
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

    /// Takes the writer lock (W1): the guard, and whether its previous owner died holding it. Errors are the
    /// pthread error's description.
    pub(crate) fn lock(&self) -> Result<(WriterGuard<'_>, bool), String> {
        let lock = &self.header().lock;
        match lock.lock() {
            Ok(state) => {
                let links = lock.links();
                Ok((WriterGuard { lock, links, _same_thread: PhantomData }, state == Locked::OwnerDied))
            }
            Err(libc::EDEADLK) => Err("this thread already holds it (an uncommitted loan on this channel?)".into()),
            Err(libc::ENOTRECOVERABLE) => Err("not recoverable (a recovery was abandoned)".into()),
            Err(libc::ETIMEDOUT) => Err(format!(
                "held for more than {:?} by another writer (an uncommitted loan, a stopped process) or damaged",
                crate::LOCK_PATIENCE
            )),
            Err(libc::EINVAL) => Err("the lock is damaged (its type word was overwritten)".into()),
            Err(e) => Err(io::Error::from_raw_os_error(e).to_string()),
        }
    }

    /// G-WAIT: sleeps on the `wake` futex word while it holds `expected`, for at most `timeout`.
    pub(crate) fn wait(&self, expected: u32, timeout: Duration) {
        futex_wait(&self.header().wake, expected, timeout)
    }

    /// W10: wakes every reader sleeping on the `wake` word.
    pub(crate) fn wake(&self) {
        futex_wake(&self.header().wake)
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
        // SAFETY: unmapping exactly the region mapped in `map`; no reference into it outlives `self` (every
        // accessor borrows `self`).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.geometry.file_size);
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
