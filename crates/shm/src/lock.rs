//! The writer lock that lives in a channel's header (spec/shm-protocol.md, "The writer lock"): one futex word
//! naming its holder. Safe code over an atomic; its sleeps are `futex`'s, the liveness question is the caller's
//! (`sys` answers it with the kernel's byte locks).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::futex::{futex_wait, futex_wake};

/// The writer lock in the header: one futex word that names its holder, and nothing else.
///
/// glibc's robust mutex, which this replaces, keeps its robust-list links (pointers into the locking process) in the
/// mutex itself, and its unlock writes through them: a process that scribbles over a shared mutex could make another
/// process write where it chose, and no check before the unlock closes that window. This lock keeps no pointer in the
/// shared file. Its word holds the holder's id (the low 30 bits; 0: free), [`ABANDONED`] and [`WAITERS`]. A holder
/// proves it is alive by holding an open-file-description byte lock at `LIVENESS_BASE + id` of the channel file
/// (taken when its handle first writes): the kernel drops that lock when the process dies, however it dies, so a
/// writer that finds the lock held for a while asks the kernel (`F_OFD_GETLK`) whether its holder is alive, and if it
/// is not, takes the lock over and runs `REC` (what `EOWNERDEAD` did). No other lock or library does this for a
/// process-shared lock without pointers in shared memory, hence the hand-written one.
///
/// What it cannot see: a thread that dies holding the lock while its process lives (a Rust thread unwinds and
/// drops its guard; one cancelled with `pthread_cancel` while it holds a loan does not), and a holder whose open
/// file description lives on in a child made by `fork` without `exec` (the child keeps the id alive). Both leave the
/// lock held: other writers get [`LockFailure::TimedOut`] after their patience, never a hang.
#[repr(C, align(8))] // 8 bytes, so the writer state after it is aligned with no hidden padding.
pub(crate) struct WriterLock {
    word: AtomicU32,
}

/// The holder's id in the lock word (ids are `1..=HOLDER_MASK`; 0 is "free").
pub(crate) const HOLDER_MASK: u32 = (1 << 30) - 1;
/// In a free lock word: the last holder left during `REC` without finishing it; the next writer runs `REC` again.
const ABANDONED: u32 = 1 << 30;
/// Set by a writer before it sleeps on the word: the unlocking writer must wake one.
const WAITERS: u32 = 1 << 31;
/// How long a waiting writer sees the same holder before it first asks whether that holder is alive; the interval
/// doubles after each answer of "alive", up to [`LIVENESS_CHECK_MAX`], and bounds each sleep on the word.
const LIVENESS_CHECK_FIRST: Duration = Duration::from_millis(1);
/// The longest interval between two liveness checks of one holder.
const LIVENESS_CHECK_MAX: Duration = Duration::from_millis(64);

/// What `WriterLock::lock` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Locked {
    /// The lock was free and released normally.
    Clean,
    /// Its holder died holding it (or left `REC` unfinished): the state it protects may be half-updated (run `REC`).
    OwnerDied,
}

/// Why `WriterLock::lock` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockFailure {
    /// A live holder kept it for longer than the patience (a loan not committed, a stopped process, or a lock word
    /// overwritten with a live writer's id).
    TimedOut,
}

impl WriterLock {
    /// Takes the lock for the writer handle whose liveness id is `me`, waiting at most `patience`; `alive(id)` says
    /// whether the handle holding id `id` still exists (only asked about ids other than `me`).
    pub(crate) fn lock(&self, me: u32, patience: Duration, alive: impl Fn(u32) -> bool) -> Result<Locked, LockFailure> {
        debug_assert!(me != 0 && me <= HOLDER_MASK);
        if self.word.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return Ok(Locked::Clean);
        }
        let deadline = Instant::now() + patience;
        // The holder being watched, since when, and how long to watch before asking whether it is alive.
        let mut watched = (0, deadline, LIVENESS_CHECK_FIRST);
        loop {
            let word = self.word.load(Ordering::Relaxed);
            let holder = word & HOLDER_MASK;
            if holder == 0 {
                // Free. Taken with WAITERS set, as other writers may be sleeping on it too (they set it on the
                // holder that just left, whose unlock woke only one of them).
                if self.word.compare_exchange(word, me | WAITERS, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                    return Ok(if word & ABANDONED != 0 { Locked::OwnerDied } else { Locked::Clean });
                }
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(LockFailure::TimedOut);
            }
            if holder != watched.0 {
                watched = (holder, now, LIVENESS_CHECK_FIRST);
            } else if now.duration_since(watched.1) >= watched.2 && holder != me {
                // `me` is never asked about: it is a thread of this handle, alive as long as this call runs.
                if !alive(holder) {
                    if self.word.compare_exchange(word, me | WAITERS, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                        return Ok(Locked::OwnerDied);
                    }
                    continue;
                }
                watched = (holder, now, (watched.2 * 2).min(LIVENESS_CHECK_MAX));
            }
            if word & WAITERS == 0
                && self.word.compare_exchange(word, word | WAITERS, Ordering::Relaxed, Ordering::Relaxed).is_err()
            {
                continue;
            }
            futex_wait(&self.word, word | WAITERS, watched.2.min(deadline - now));
        }
    }

    /// Releases the lock; `abandoned`: the holder was running `REC` and did not finish it.
    pub(crate) fn unlock(&self, abandoned: bool) {
        let released = if abandoned { ABANDONED } else { 0 };
        if self.word.swap(released, Ordering::Release) & WAITERS != 0 {
            futex_wake(&self.word, 1);
        }
    }

    /// The holder's id, 0 when free (for a handle that just claimed an id: is a dead holder's word still there?).
    pub(crate) fn holder(&self) -> u32 {
        self.word.load(Ordering::Relaxed) & HOLDER_MASK
    }
}

/// A lock word as another process may have left it, for tests.
#[cfg(test)]
pub(crate) fn held_by(id: u32) -> WriterLock {
    WriterLock { word: AtomicU32::new(id) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn a_dead_holders_lock_is_taken_over_after_one_liveness_check() {
        let lock = held_by(77 | WAITERS);
        let asked = AtomicUsize::new(0);
        let start = Instant::now();
        let got = lock.lock(5, Duration::from_secs(5), |id| {
            assert_eq!(id, 77, "only the holder is asked about");
            asked.fetch_add(1, Ordering::Relaxed);
            false
        });
        assert_eq!(got, Ok(Locked::OwnerDied));
        assert_eq!((asked.into_inner(), lock.holder()), (1, 5));
        assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    }

    #[test]
    fn a_live_holder_keeps_it_and_is_asked_about_with_growing_intervals() {
        let lock = held_by(77);
        let asked = AtomicUsize::new(0);
        let start = Instant::now();
        let got = lock.lock(5, Duration::from_millis(300), |_| {
            asked.fetch_add(1, Ordering::Relaxed);
            true
        });
        assert_eq!(got, Err(LockFailure::TimedOut));
        assert!(start.elapsed() >= Duration::from_millis(300));
        // 1, 2, 4, ... 64, 64 ms apart: about 8 questions in 300 ms, not one per wake-up.
        let asked = asked.into_inner();
        assert!((3..=12).contains(&asked), "asked {asked} times");
        assert_eq!(lock.holder(), 77, "a live holder's lock is never taken");
    }

    #[test]
    fn the_own_handles_id_is_never_asked_about() {
        // Another thread of this handle holds it: it is alive for as long as this handle is.
        let lock = held_by(5);
        let got = lock.lock(5, Duration::from_millis(50), |_| panic!("asked about its own id"));
        assert_eq!(got, Err(LockFailure::TimedOut));
    }

    #[test]
    fn an_abandoned_recovery_is_run_again_by_the_next_writer() {
        let lock = held_by(0);
        let patience = Duration::from_millis(50);
        assert_eq!(lock.lock(5, patience, |_| true), Ok(Locked::Clean));
        lock.unlock(true);
        assert_eq!(lock.lock(6, patience, |_| true), Ok(Locked::OwnerDied));
        lock.unlock(false);
        assert_eq!(lock.lock(7, patience, |_| true), Ok(Locked::Clean));
        lock.unlock(false);
        assert_eq!(lock.word.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_waiting_writer_gets_the_lock_when_its_holder_lets_go() {
        let lock = Arc::new(held_by(0));
        assert_eq!(lock.lock(5, Duration::from_secs(1), |_| true), Ok(Locked::Clean));
        let waiters: Vec<_> = (6..9)
            .map(|me| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    let got = lock.lock(me, Duration::from_secs(10), |_| true);
                    lock.unlock(false);
                    got
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(30));
        let start = Instant::now();
        lock.unlock(false);
        for waiter in waiters {
            assert_eq!(waiter.join().unwrap(), Ok(Locked::Clean));
        }
        assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
        assert_eq!(lock.word.load(Ordering::Relaxed), 0, "free, with no waiter left behind");
    }
}
