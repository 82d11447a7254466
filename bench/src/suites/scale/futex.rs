//! The readers part's control row: a plain futex broadcast, the least any shared-memory transport can do to wake R
//! sleeping readers of one message. One page of a file in shared memory holds a futex word and the message (its
//! sequence number and stamp); the writer stores the message, bumps the word and wakes every waiter
//! (`FUTEX_WAKE`, `INT_MAX`); a reader sleeps on the word (`FUTEX_WAIT`) and reads the message when it changes.
//! No ring, no loss accounting, no crash recovery: what is left of the readers' latency here is the kernel waking R
//! threads on the host's CPUs, which no transport beats.
#![allow(unsafe_code)]

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// The page's layout: the futex word, then the message's words.
#[repr(C)]
struct Page {
    /// Bumped once per message (the futex word).
    word: AtomicU32,
    _pad: u32,
    seq: AtomicU64,
    stamp: AtomicU64,
    /// 1 on the stop message.
    stop: AtomicU64,
}

const LEN: usize = 4096;

/// A mapping of the broadcast page.
pub struct Broadcast {
    page: *mut Page,
}

// SAFETY: the page is only accessed through atomics, from any thread.
unsafe impl Send for Broadcast {}

impl Broadcast {
    /// Makes (`create`) or opens the page file at `path` and maps it.
    pub fn map(path: &Path, create: bool) -> Result<Broadcast, String> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("opening {}: {e}", path.display()))?;
        if create {
            f.set_len(LEN as u64).map_err(|e| format!("sizing {}: {e}", path.display()))?;
        }
        // SAFETY: a shared mapping of LEN bytes of a file at least that long (set above, or by the driver before it
        // started the readers); the descriptor may close after mmap returns.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mapping {}: {}", path.display(), std::io::Error::last_os_error()));
        }
        Ok(Broadcast { page: p.cast() })
    }

    fn page(&self) -> &Page {
        // SAFETY: the mapping is page-aligned, LEN >= size_of::<Page>(), lives until drop, and every field is an
        // atomic (other processes write it concurrently).
        unsafe { &*self.page }
    }

    /// The writer: stores the message, bumps the word and wakes every reader.
    pub fn publish(&self, seq: Option<u64>, stamp: u64) {
        let p = self.page();
        p.seq.store(seq.unwrap_or(0), Ordering::Relaxed);
        p.stamp.store(stamp, Ordering::Relaxed);
        p.stop.store(u64::from(seq.is_none()), Ordering::Relaxed);
        p.word.fetch_add(1, Ordering::Release);
        // SAFETY: FUTEX_WAKE on a valid u32 in a shared mapping; no other memory is touched.
        unsafe {
            libc::syscall(libc::SYS_futex, p.word.as_ptr(), libc::FUTEX_WAKE, i32::MAX, 0, 0, 0);
        }
    }

    /// The futex word now (a reader's starting point).
    pub fn word(&self) -> u32 {
        self.page().word.load(Ordering::Acquire)
    }

    /// A reader: sleeps until the word is no longer `*last` (or `slice` passes: `None`), then returns the message
    /// (`Some(None)` for the stop message) and remembers the word.
    pub fn next(&self, last: &mut u32, slice: Duration) -> Option<Option<(u64, u64)>> {
        let p = self.page();
        let mut w = p.word.load(Ordering::Acquire);
        if w == *last {
            let ts = libc::timespec { tv_sec: slice.as_secs() as libc::time_t, tv_nsec: slice.subsec_nanos() as _ };
            // SAFETY: FUTEX_WAIT on a valid u32 in a shared mapping with a valid relative timeout; it only reads the
            // word.
            unsafe {
                libc::syscall(libc::SYS_futex, p.word.as_ptr(), libc::FUTEX_WAIT, *last, &ts as *const _, 0, 0);
            }
            w = p.word.load(Ordering::Acquire);
            if w == *last {
                return None;
            }
        }
        *last = w;
        if p.stop.load(Ordering::Relaxed) == 1 {
            return Some(None);
        }
        Some(Some((p.seq.load(Ordering::Relaxed), p.stamp.load(Ordering::Relaxed))))
    }
}

impl Drop for Broadcast {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; nothing borrows it past `self`.
        unsafe {
            libc::munmap(self.page.cast(), LEN);
        }
    }
}
