//! [`Pool`]: the live objects a C library hands out, in a fixed table of slots, where C's handle is a slot number and
//! a generation: an entry point checks the handle and holds the object with one atomic add on the slot's own cache
//! line, with no lock, no map and no separate reference count.
//!
//! Why not [`crate::Registry`] for these: a control loop calls in after sleeping, when nothing is cached, and every
//! cache line an entry point touches beyond the object itself then is a miss all the way to memory. Ach's `ach_put` on
//! the registry (its lock, its table, the `Arc`'s count) stayed measurably behind nerve-shm's own put in a 1 kHz loop,
//! and with the handle check left out it matched it. The pool's check reads nothing but the slot, which the call reads
//! anyway.
//!
//! # A slot's life
//!
//! `state` holds the generation (high 32 bits), the number of calls inside (`USER` units) and four flags. `insert`
//! claims a free slot (`BUSY`), writes the object, then sets `LIVE`. A call adds a user, and goes on only if the slot
//! is `LIVE` with the handle's generation; it leaves by taking its user away. `remove` clears `LIVE` and sets
//! `CLOSING`; whoever then sees the slot `CLOSING` with no users (the remover, or the last call to leave) takes
//! `CLEANING`, drops the object, and frees the slot under the next generation, so an old handle never reaches a new
//! object. The object is written only while no call can reach it (before `LIVE`, and after `CLEANING` was won with
//! no users), which is what makes the shared reads sound.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{fence, AtomicU64, Ordering};

const LIVE: u64 = 1 << 0;
const BUSY: u64 = 1 << 1;
const CLOSING: u64 = 1 << 2;
const CLEANING: u64 = 1 << 3;
const FLAGS: u64 = LIVE | BUSY | CLOSING | CLEANING;
const USER: u64 = 1 << 4;
const USERS: u64 = ((1 << 32) - 1) & !FLAGS;

const _: () = assert!(usize::BITS == 64, "a handle packs a 32-bit generation and a slot number into a pointer");

fn generation(state: u64) -> u64 {
    state >> 32
}

/// One object's place: its state and the object, which is initialised from `LIVE` until it is taken in `clean`.
/// (`MaybeUninit` rather than `Option`: an empty table is then all zero bytes, in `.bss`, not half a megabyte of
/// `.data` in the library file.) `repr(C)`: the state comes first, so it shares its cache line with the head of the
/// object, where an object can keep what its hottest call needs (see `ShmHandle`): a call after a sleep, when nothing
/// is cached, then misses one line, not two.
#[repr(C, align(64))]
struct Slot<T> {
    state: AtomicU64,
    value: UnsafeCell<MaybeUninit<T>>,
}

/// Up to `N` live objects of type `T`, each named to C by a handle (a non-zero `usize`; see [`Pool::insert`]).
pub struct Pool<T, const N: usize> {
    slots: [Slot<T>; N],
}

// SAFETY: the objects are shared between the threads that call in (`with` gives `&T`: T must be Sync) and dropped by
// whichever thread cleans the slot (T must be Send); the state machine above keeps writes away from readers.
unsafe impl<T: Send + Sync, const N: usize> Sync for Pool<T, N> {}

/// Takes a call's user away from its slot when the call ends, also by a panic.
struct Inside<'a, T> {
    slot: &'a Slot<T>,
}

impl<T> Drop for Inside<'_, T> {
    fn drop(&mut self) {
        let before = self.slot.state.fetch_sub(USER, Ordering::Release);
        if before & USERS == USER && before & FLAGS == BUSY | CLOSING {
            // The last call out of a removed object cleans it; everything the calls did happens before.
            fence(Ordering::Acquire);
            clean(self.slot, generation(before));
        }
    }
}

/// Drops a removed object whose calls have all left, and frees its slot under the next generation. Does nothing if a
/// call is still inside (it will clean when it leaves) or another thread won the cleaning.
fn clean<T>(slot: &Slot<T>, gen: u64) {
    let removed = (gen << 32) | BUSY | CLOSING;
    if slot.state.compare_exchange(removed, removed | CLEANING, Ordering::Acquire, Ordering::Relaxed).is_err() {
        return;
    }
    // SAFETY: CLEANING was won with no user inside and LIVE clear: no call can read the object (a call that comes in
    // now sees the slot not LIVE and leaves without touching it), and no other thread writes it. It is initialised:
    // only a LIVE slot becomes CLOSING, and CLEANING is won once per CLOSING, so it is moved out exactly once.
    let value = unsafe { (*slot.value.get()).assume_init_read() };
    // Free the slot, keeping the users of calls passing through (they leave without cleaning: CLEANING is set until
    // this store, and after it the slot is not CLOSING).
    let next = ((gen + 1) & 0xffff_ffff) << 32;
    let mut s = slot.state.load(Ordering::Relaxed);
    while let Err(now) = slot.state.compare_exchange_weak(s, next | (s & USERS), Ordering::Release, Ordering::Relaxed) {
        s = now;
    }
    drop(value);
}

impl<T, const N: usize> Pool<T, N> {
    /// An empty pool (a `static`).
    #[allow(clippy::new_without_default)] // const, for statics
    pub const fn new() -> Pool<T, N> {
        Pool { slots: [const { Slot { state: AtomicU64::new(0), value: UnsafeCell::new(MaybeUninit::uninit()) } }; N] }
    }

    /// Keeps `value` and returns its handle, or gives it back if all `N` slots are taken.
    pub fn insert(&self, value: T) -> Result<usize, T> {
        for (i, slot) in self.slots.iter().enumerate() {
            let s = slot.state.load(Ordering::Relaxed);
            if s & (FLAGS | USERS) != 0 {
                continue;
            }
            if slot.state.compare_exchange(s, s | BUSY, Ordering::Acquire, Ordering::Relaxed).is_err() {
                continue;
            }
            // SAFETY: BUSY was won on a free slot: no call reaches the object before LIVE, no other insert or clean
            // touches a BUSY slot that is not CLOSING.
            unsafe { (*slot.value.get()).write(value) };
            slot.state.fetch_or(LIVE, Ordering::Release);
            return Ok(((generation(s) << 32) | (i as u64 + 1)) as usize);
        }
        Err(value)
    }

    /// The slot a handle names, and the generation it was made in (`None` for anything `insert` never returned).
    fn slot(&self, handle: usize) -> Option<(&Slot<T>, u64)> {
        let index = (handle as u64 & 0xffff_ffff).checked_sub(1)? as usize;
        Some((self.slots.get(index)?, handle as u64 >> 32))
    }

    /// Runs `f` on the object behind `handle` if it is live; the object is not dropped before `f` returns, even if
    /// another thread removes it meanwhile. Lock-free, so also for entry points that must be async-signal-safe (if
    /// the object's removal races with the call, the call may be the one that drops it).
    #[inline(always)]
    pub fn with<R>(&self, handle: usize, f: impl FnOnce(&T) -> R) -> Option<R> {
        let (slot, gen) = self.slot(handle)?;
        let before = slot.state.fetch_add(USER, Ordering::Acquire);
        let inside = Inside { slot };
        if before & LIVE == 0 || generation(before) != gen {
            return None;
        }
        // SAFETY: the slot is LIVE in the handle's generation and this call is counted inside it: the object was
        // written before LIVE was set (released, and acquired by the add above) and is not moved out until every
        // call has left.
        let value = unsafe { (*inside.slot.value.get()).assume_init_ref() };
        Some(f(value))
    }

    /// Forgets the object behind `handle`: later calls with it find nothing, and the object is dropped once the calls
    /// inside it now have returned. False if it was not live.
    pub fn remove(&self, handle: usize) -> bool {
        let Some((slot, gen)) = self.slot(handle) else {
            return false;
        };
        let mut s = slot.state.load(Ordering::Acquire);
        loop {
            if s & LIVE == 0 || generation(s) != gen {
                return false;
            }
            match slot.state.compare_exchange_weak(s, (s & !LIVE) | CLOSING, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        clean(slot, gen);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// Counts its drops.
    struct Counted(Arc<AtomicUsize>, u32);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn handles_find_their_own_object_and_nothing_after_removal() {
        static P: Pool<Counted, 2> = Pool::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let a = P.insert(Counted(drops.clone(), 1)).ok().unwrap();
        let b = P.insert(Counted(drops.clone(), 2)).ok().unwrap();
        assert!(P.insert(Counted(drops.clone(), 3)).is_err(), "a full pool gives the object back");
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!((P.with(a, |c| c.1), P.with(b, |c| c.1)), (Some(1), Some(2)));
        for bad in [0, usize::MAX, 3, a ^ (1 << 32), a + 2] {
            assert_eq!(P.with(bad, |c| c.1), None, "handle {bad:#x}");
            assert!(!P.remove(bad));
        }
        assert!(P.remove(a));
        assert_eq!(drops.load(Ordering::SeqCst), 2, "removed with no call inside: dropped at once");
        assert!(!P.remove(a) && P.with(a, |c| c.1).is_none());
        // The slot is reused under a new generation: the old handle does not reach the new object.
        let c = P.insert(Counted(drops.clone(), 4)).ok().unwrap();
        assert_ne!(c, a);
        assert_eq!((P.with(a, |c| c.1), P.with(c, |c| c.1)), (None, Some(4)));
    }

    #[test]
    fn an_object_removed_during_a_call_is_dropped_when_the_call_returns() {
        static P: Pool<Counted, 1> = Pool::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let h = P.insert(Counted(drops.clone(), 7)).ok().unwrap();
        let seen = P.with(h, |c| {
            assert!(P.remove(h));
            assert!(P.with(h, |_| ()).is_none(), "removed: no new call gets in");
            assert_eq!(drops.load(Ordering::SeqCst), 0, "still in use");
            assert!(P.insert(Counted(drops.clone(), 8)).is_err(), "the slot is not free yet");
            c.1
        });
        assert_eq!((seen, drops.load(Ordering::SeqCst)), (Some(7), 2), "7 when the call returned, 8 given back");
        // A panic inside a call leaves it too.
        let h = P.insert(Counted(drops.clone(), 9)).ok().unwrap();
        let r = std::panic::catch_unwind(|| P.with(h, |_| panic!("in the call")));
        assert!(r.is_err());
        assert!(P.remove(h));
        assert_eq!(drops.load(Ordering::SeqCst), 3, "dropped: the rejected insert's object and both removed ones");
    }

    #[test]
    fn a_call_racing_a_removal_sees_the_object_whole_or_not_at_all() {
        static P: Pool<Counted, 1> = Pool::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let rounds = if cfg!(miri) { 10 } else { 1_000 };
        for round in 0..rounds {
            let h = P.insert(Counted(drops.clone(), round)).ok().unwrap();
            let caller = std::thread::spawn(move || {
                let mut seen = 0;
                while let Some(v) = P.with(h, |c| c.1) {
                    assert_eq!(v, round);
                    seen += 1;
                }
                seen
            });
            std::thread::yield_now();
            assert!(P.remove(h));
            caller.join().unwrap();
            assert_eq!(drops.load(Ordering::SeqCst), round as usize + 1, "dropped once, after the last call");
        }
    }

    #[test]
    fn threads_calling_inserting_and_removing_drop_every_object_once() {
        static P: Pool<Counted, 4> = Pool::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let made = Arc::new(AtomicUsize::new(0));
        let rounds = if cfg!(miri) { 20 } else { 2_000 };
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let (drops, made) = (drops.clone(), made.clone());
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..rounds {
                        if let Ok(h) = P.insert(Counted(drops.clone(), t)) {
                            made.fetch_add(1, Ordering::SeqCst);
                            mine.push(h);
                        } else {
                            made.fetch_add(1, Ordering::SeqCst); // given back and dropped here
                        }
                        // Call every handle this thread holds, and remove the oldest now and then.
                        for &h in &mine {
                            assert_eq!(P.with(h, |c| c.1), Some(t));
                        }
                        if i % 3 == 0 && !mine.is_empty() {
                            assert!(P.remove(mine.remove(0)));
                        }
                    }
                    for h in mine {
                        assert!(P.remove(h));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(drops.load(Ordering::SeqCst), made.load(Ordering::SeqCst));
    }
}
