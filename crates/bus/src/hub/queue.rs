//! The per-subscription queues: what they hold ([`Item`]), what a full one does ([`Full`]), the one function that
//! pushes into them (`Hub::enqueue`), and the owner's side of a queue subscription ([`QueueHandle`]).

use std::any::Any;
use std::sync::{Arc, Condvar, PoisonError};
use std::task::Waker;
use std::time::Duration;

use super::{Entry, Hub, Kind, Overflow, Received, State, SubscriptionStats, Wake};
use crate::error::TypeError;

/// One queued message: encoded bytes, or a typed value for an in-process subscription.
pub(crate) enum Item {
    /// Encoded, shared by every byte-level subscription that matched.
    Bytes(Arc<Received>),
    /// A `T` this subscription owns.
    Owned(Box<dyn Any + Send>),
    /// An `Arc<T>` shared with other subscriptions (and maybe the publisher).
    Shared(Arc<dyn Any + Send + Sync>),
}

/// A callback, type-erased: it takes the queued item; an `Err` is counted as a decode error.
pub(crate) type Handler = Box<dyn FnMut(Item) -> Result<(), TypeError> + Send>;

/// One message in a subscription's queue.
pub(super) struct Queued {
    /// Its place in the bus's arrival order (shared by every queue it went to).
    pub(super) arrival: u64,
    pub(super) item: Item,
}

/// What a full queue does with the next message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    DropOldest,
    DropNewest,
    /// Keep-all at its resource limit: refuse the newest and report it.
    Refuse,
}

impl From<Overflow> for Full {
    fn from(o: Overflow) -> Full {
        match o {
            Overflow::DropOldest => Full::DropOldest,
            Overflow::DropNewest => Full::DropNewest,
        }
    }
}

impl Full {
    /// A typed subscription's history: keep-last (the ring drops the oldest) or keep-all (`refuse`: refuses and
    /// reports).
    pub(crate) fn history(refuse: bool) -> Full {
        if refuse {
            Full::Refuse
        } else {
            Full::DropOldest
        }
    }
}

/// What happened to one message offered to one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pushed {
    Queued,
    Refused,
}

impl Hub {
    /// Whether `s`'s queue keeps everything whatever its capacity: a byte-level callback subscription on a
    /// provider whose publications wait for `handle()` ([`Provider::holds_until_handled`], memq), as LCM's own
    /// callback subscriptions are (asked only once a queue is full, so other buses pay nothing for it).
    pub(super) fn holds_all(&self, s: &Entry) -> bool {
        matches!(s.kind, Kind::Callback { .. }) && s.typed.is_none() && self.provider.holds_until_handled()
    }

    /// Offers `item` to subscription `i`'s queue, applying its full-queue policy.
    pub(super) fn enqueue(&self, st: &mut State, i: usize, arrival: u64, item: Item, wake: &mut Wake) -> Pushed {
        let s = &mut st.subs[i];
        s.stats.received += 1;
        let mut pending_delta: isize = 0;
        if s.capacity > 0 && s.queue.len() >= s.capacity && !self.holds_all(s) {
            match s.full {
                Full::DropNewest => {
                    s.stats.dropped_overflow += 1;
                    return Pushed::Queued;
                }
                Full::Refuse => {
                    s.stats.dropped_limit += 1;
                    return Pushed::Refused;
                }
                Full::DropOldest => {
                    s.stats.dropped_overflow += 1;
                    s.queue.pop_front();
                    if matches!(s.kind, Kind::Callback { .. }) {
                        pending_delta -= 1;
                    }
                }
            }
        }
        s.queue.push_back(Queued { arrival, item });
        match &mut s.kind {
            Kind::Callback { .. } => pending_delta += 1,
            Kind::Queue { cond, waker } => {
                cond.notify_all();
                if let Some(w) = waker.take() {
                    w.wake();
                }
            }
            Kind::Executor { exec, scheduled, .. } => {
                if !*scheduled {
                    if let Some(e) = exec.upgrade() {
                        *scheduled = true;
                        wake.schedule.push((e, s.id));
                    }
                }
            }
        }
        let was_empty = st.pending == 0;
        st.pending = st.pending.checked_add_signed(pending_delta).unwrap_or(0);
        if was_empty && st.pending > 0 {
            self.set_readable(true);
            if st.handle_waiters > 0 {
                self.ready.notify_all();
            }
        }
        Pushed::Queued
    }
}

/// The queue side shared by `Subscriber` and the typed queue subscribers: take, wait, stats, waker.
pub(crate) struct QueueHandle<'a> {
    pub(crate) id: u64,
    pub(crate) hub: &'a Hub,
    pub(crate) cond: &'a Condvar,
}

impl QueueHandle<'_> {
    fn take(&self, st: &mut State) -> Option<Item> {
        let s = st.entry(self.id)?;
        let q = s.queue.pop_front()?;
        s.stats.delivered += 1;
        Some(q.item)
    }

    pub(crate) fn try_recv(&self) -> Option<Item> {
        self.take(&mut self.hub.lock())
    }

    /// Waits for the next item, up to `timeout` (forever with `None`).
    pub(crate) fn recv(&self, timeout: Option<Duration>) -> Option<Item> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        let mut st = self.hub.lock();
        loop {
            if let Some(m) = self.take(&mut st) {
                return Some(m);
            }
            st = match deadline {
                None => self.cond.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.checked_duration_since(std::time::Instant::now()).filter(|l| !l.is_zero())?;
                    self.cond.wait_timeout(st, left).unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
    }

    pub(crate) fn stats(&self) -> SubscriptionStats {
        self.hub.lock().entry(self.id).map(|s| s.stats).unwrap_or_default()
    }

    /// The next item, or registers `waker` (under the same lock `enqueue` takes, so nothing slips in between).
    pub(crate) fn poll(&self, waker: &Waker) -> Option<Item> {
        let mut st = self.hub.lock();
        if let Some(m) = self.take(&mut st) {
            return Some(m);
        }
        if let Some(s) = st.entry(self.id) {
            if let Kind::Queue { waker: w, .. } = &mut s.kind {
                *w = Some(waker.clone());
            }
        }
        None
    }

    pub(crate) fn remove(&self) {
        let _ = self.hub.remove(self.id);
    }
}
