//! [`Turn`]: who reads a provider's socket, its receive thread or a `handle()` caller
//! ([`Provider::receive_here`](super::Provider::receive_here)).
//!
//! A `handle()` loop (LCM's programming model: callbacks run on the thread that calls `handle()`) used to wait on a
//! condition variable while the receive thread read the socket, so every message woke two threads: the receive
//! thread, then the caller. On a machine whose idle CPUs sleep, the second wake-up is a CPU leaving its idle state, as
//! slow as the rest of a loopback round trip together. A caller that reads the socket itself is woken once,
//! by the datagram, and runs the callbacks right away. The receive thread stands aside while a caller reads, and
//! takes the socket back once no caller has come for [`GRACE`], so that a program that stops calling `handle()`
//! still has its messages queued (with each subscription's capacity and overflow policy) as before.
//!
//! A caller that finds the reader taken waits to be woken as before; whoever then lets the reader go wakes the
//! waiting callers ([`Sink::reader_free`](super::Sink::reader_free)), which look again: a caller must never wait on
//! a receive thread that has just stood aside for it (it would wait out the [`GRACE`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// How long the receive thread stands aside after the last caller left before it reads again. A `handle()` loop
/// comes back within microseconds; meanwhile the socket's buffer holds what arrives.
pub(crate) const GRACE: Duration = Duration::from_millis(10);

/// A reader (a socket with its reassembly state) and the hand-over between the receive thread and callers.
pub(crate) struct Turn<R> {
    reader: Mutex<R>,
    /// Whether anyone holds the reader (set after taking its lock, cleared after letting it go).
    held: AtomicBool,
    handover: Mutex<Handover>,
    parked: Condvar,
}

struct Handover {
    /// A caller asked for the reader since the receive thread last took it back.
    wanted: bool,
    /// Callers inside [`Turn::caller`]'s guard, and when the last one left.
    callers: usize,
    last_left: Instant,
}

/// The reader, lent until dropped (then it is free, and [`Turn::is_free`] says so).
pub(crate) struct Held<'a, R> {
    reader: Option<MutexGuard<'a, R>>,
    held: &'a AtomicBool,
}

/// A caller's turn: the reader, lent until dropped.
pub(crate) struct CallerTurn<'a, R> {
    reader: Held<'a, R>,
    _leave: Leave<'a, R>,
}

/// Counts a caller out when dropped.
struct Leave<'a, R>(&'a Turn<R>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while a guard was held (a reader's panic is caught at the bus's edge) leaves plain data behind.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R> Turn<R> {
    pub(crate) fn new(reader: R) -> Turn<R> {
        Turn {
            reader: Mutex::new(reader),
            held: AtomicBool::new(false),
            handover: Mutex::new(Handover { wanted: false, callers: 0, last_left: Instant::now() }),
            parked: Condvar::new(),
        }
    }

    /// For the receive thread, before each of its reads: waits while callers read the socket (and for [`GRACE`]
    /// after the last one left), then lends the reader. `None` once `stop` is set.
    pub(crate) fn thread(&self, stop: &AtomicBool) -> Option<Held<'_, R>> {
        let mut h = lock(&self.handover);
        while h.wanted {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            if h.callers == 0 && h.last_left.elapsed() >= GRACE {
                h.wanted = false;
                break;
            }
            h = self.parked.wait_timeout(h, GRACE).unwrap_or_else(PoisonError::into_inner).0;
        }
        drop(h);
        (!stop.load(Ordering::Relaxed)).then(|| self.hold(lock(&self.reader)))
    }

    fn hold<'a>(&'a self, reader: MutexGuard<'a, R>) -> Held<'a, R> {
        self.held.store(true, Ordering::SeqCst);
        Held { reader: Some(reader), held: &self.held }
    }

    /// Whether nobody holds the reader now: a caller that found it taken and waits may look again.
    pub(crate) fn is_free(&self) -> bool {
        !self.held.load(Ordering::SeqCst)
    }

    /// Whether callers have asked for the reader since the receive thread last took it back: then whoever lets it
    /// go must wake the callers that wait.
    pub(crate) fn is_wanted(&self) -> bool {
        lock(&self.handover).wanted
    }

    /// For a caller: the reader, unless the receive thread holds it (in a wait of its own); either way the receive
    /// thread stands aside once its current read is done, until callers have stopped coming for [`GRACE`].
    pub(crate) fn caller(&self) -> Option<CallerTurn<'_, R>> {
        {
            let mut h = lock(&self.handover);
            h.wanted = true;
            h.callers += 1;
        }
        let leave = Leave(self);
        let reader = match self.reader.try_lock() {
            Ok(r) => r,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(CallerTurn { reader: self.hold(reader), _leave: leave })
    }
}

impl<R> Drop for Leave<'_, R> {
    fn drop(&mut self) {
        let mut h = lock(&self.0.handover);
        h.callers -= 1;
        h.last_left = Instant::now();
    }
}

impl<R> Drop for Held<'_, R> {
    fn drop(&mut self) {
        // The lock first, then the flag: whoever sees the flag clear finds the lock free.
        drop(self.reader.take());
        self.held.store(false, Ordering::SeqCst);
    }
}

impl<R> std::ops::Deref for Held<'_, R> {
    type Target = R;
    fn deref(&self) -> &R {
        self.reader.as_ref().expect("held until dropped")
    }
}

impl<R> std::ops::DerefMut for Held<'_, R> {
    fn deref_mut(&mut self) -> &mut R {
        self.reader.as_mut().expect("held until dropped")
    }
}

impl<R> std::ops::Deref for CallerTurn<'_, R> {
    type Target = R;
    fn deref(&self) -> &R {
        &self.reader
    }
}

impl<R> std::ops::DerefMut for CallerTurn<'_, R> {
    fn deref_mut(&mut self) -> &mut R {
        &mut self.reader
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_caller_gets_the_reader_only_when_the_thread_does_not_hold_it() {
        let turn = Turn::new(0u32);
        let stop = AtomicBool::new(false);
        assert!(turn.is_free());
        let held = turn.thread(&stop).expect("not stopped");
        assert!(turn.caller().is_none(), "the thread holds the reader");
        assert!(!turn.is_free() && turn.is_wanted());
        drop(held);
        assert!(turn.is_free());
        let mut mine = turn.caller().expect("free now");
        assert!(!turn.is_free());
        *mine += 1;
        drop(mine);
        assert!(turn.is_free());
        assert_eq!(*turn.thread(&stop).expect("takes it back after the grace"), 1);
    }

    #[test]
    fn the_thread_stands_aside_while_callers_come_and_takes_the_reader_back_after_the_grace() {
        let turn = Arc::new(Turn::new(()));
        let stop = Arc::new(AtomicBool::new(false));
        // A caller asks once: the thread must not read again for GRACE after it left.
        drop(turn.caller());
        let asked = Instant::now();
        let (t, s) = (Arc::clone(&turn), Arc::clone(&stop));
        let waiter = std::thread::spawn(move || {
            let got = t.thread(&s).is_some();
            (got, asked.elapsed())
        });
        let (got, waited) = waiter.join().unwrap();
        assert!(got && waited >= GRACE, "took the reader back after {waited:?}");

        // A caller inside its turn keeps the thread aside however long it stays.
        let inside = turn.caller().expect("free");
        let (t, s) = (Arc::clone(&turn), Arc::clone(&stop));
        let waiter = std::thread::spawn(move || t.thread(&s).is_some());
        std::thread::sleep(GRACE * 5);
        assert!(!waiter.is_finished(), "the thread read while a caller held the reader");
        drop(inside);
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_stopped_thread_leaves_even_while_standing_aside() {
        let turn = Arc::new(Turn::new(()));
        let stop = Arc::new(AtomicBool::new(false));
        let inside = turn.caller().expect("free");
        let (t, s) = (Arc::clone(&turn), Arc::clone(&stop));
        let waiter = std::thread::spawn(move || t.thread(&s).is_none());
        stop.store(true, Ordering::Relaxed);
        assert!(waiter.join().unwrap(), "a stopped thread gets no reader");
        drop(inside);
    }
}
