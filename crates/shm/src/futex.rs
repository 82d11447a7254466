//! The futex calls (`FUTEX_WAIT`, `FUTEX_WAKE`, `futex_waitv`) on 32-bit words in shared mappings: the sleeps of
//! waiting readers, wait sets and writers, and their wake-ups. Unsafe only because they are system calls that take
//! the words' addresses; the words themselves are ordinary atomics.

#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

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

/// Wakes up to `count` processes and threads sleeping on `word`.
pub(crate) fn futex_wake(word: &AtomicU32, count: i32) {
    // SAFETY: the word is a live, aligned u32; FUTEX_WAKE does not touch memory beyond looking up its address.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, count, 0usize, 0usize, 0u32);
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
