//! The subscription table: every subscription and typed publisher of one bus, matching a channel against them
//! (cached per channel), and adding and removing them, with the type and QoS checks between publishers and
//! subscriptions.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::task::Waker;

use super::{
    dispatch, erased, Full, Handler, Health, Hub, Ops, PublisherStats, Queued, ReadyQueue, SubscriptionStats,
    TypedInfo, Wake,
};
use crate::error::BusError;
use crate::pattern::Pattern;
use crate::qos;

/// LCM's self-test channel: not application data, so only a subscription to exactly this name receives it.
const SELF_TEST_CHANNEL: &str = "LCM_SELF_TEST";

/// How a subscription is run, and what that needs.
pub(super) enum Kind {
    Callback {
        handler: Arc<Mutex<Handler>>,
        active: Arc<AtomicBool>,
    },
    Queue {
        cond: Arc<Condvar>,
        waker: Option<Waker>,
    },
    /// Run by an executor's threads; `scheduled` while it sits in the executor's ready queue or its handler runs,
    /// so that no two threads ever run it at once.
    Executor {
        handler: Arc<Mutex<Handler>>,
        active: Arc<AtomicBool>,
        exec: Weak<dyn ReadyQueue>,
        scheduled: bool,
    },
}

/// How a new subscription is run.
pub(crate) enum Runner {
    /// By `handle()` or a dispatcher.
    Callback(Handler),
    /// By an executor's threads.
    Executor(Handler, Weak<dyn ReadyQueue>),
    /// By its owner, taking from its queue.
    Queue(Arc<Condvar>),
}

pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) pattern: Pattern,
    pub(super) queue: VecDeque<Queued>,
    pub(super) capacity: usize,
    pub(super) full: Full,
    pub(super) stats: SubscriptionStats,
    pub(super) kind: Kind,
    /// Present for typed in-process subscriptions.
    pub(super) typed: Option<TypedInfo>,
}

/// A typed publisher, as the bus knows it: for matching, QoS checks and the transient-local store.
pub(super) struct PubEntry {
    pub(super) id: u64,
    pub(super) info: TypedInfo,
    /// The last `depth` messages of a transient-local publisher, with their place in the bus's publish order.
    pub(super) history: VecDeque<(u64, Arc<dyn Any + Send + Sync>)>,
    pub(super) stats: PublisherStats,
}

/// Channels whose matching subscriptions are remembered at most (then the memory starts over).
const MATCH_CACHE_MAX: usize = 4096;

#[derive(Default)]
pub(super) struct State {
    pub(super) subs: Vec<Entry>,
    pub(super) pubs: Vec<PubEntry>,
    /// channel -> indices into `subs` of the subscriptions it matches; cleared when `subs` changes.
    pub(super) cache: HashMap<String, Arc<[usize]>>,
    pub(super) next_id: u64,
    pub(super) arrivals: u64,
    /// Order of transient-local publications across publishers.
    pub(super) publish_seq: u64,
    /// Messages queued in callback subscriptions: the fd is readable while this is above 0.
    pub(super) pending: usize,
    /// Threads blocked in `handle()` waiting for `pending` to rise (so a publication wakes no one when none wait).
    pub(super) handle_waiters: usize,
    pub(super) unmatched: u64,
    /// What went wrong outside any call (see `dispatch::Health`).
    pub(super) health: Health,
    /// Transport errors waiting to be returned by `handle()`.
    pub(super) faults: dispatch::Faults,
}

impl State {
    /// The index of subscription `id`, trying `hint` first.
    pub(super) fn find(&self, hint: usize, id: u64) -> Option<usize> {
        if self.subs.get(hint).is_some_and(|s| s.id == id) {
            return Some(hint);
        }
        self.subs.iter().position(|s| s.id == id)
    }

    pub(super) fn entry(&mut self, id: u64) -> Option<&mut Entry> {
        self.subs.iter_mut().find(|s| s.id == id)
    }

    /// The indices into `subs` of the subscriptions `channel` matches (shared with the cache: no copy).
    pub(super) fn matching(&mut self, channel: &str) -> Arc<[usize]> {
        if let Some(m) = self.cache.get(channel) {
            return Arc::clone(m);
        }
        // Channel names come from the network: a sender that invents new ones must not grow this without limit.
        if self.cache.len() >= MATCH_CACHE_MAX {
            self.cache.clear();
        }
        let m: Arc<[usize]> = self
            .subs
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.pattern.matches(channel)
                    && (channel != SELF_TEST_CHANNEL || s.pattern.literal() == Some(SELF_TEST_CHANNEL))
            })
            .map(|(i, _)| i)
            .collect();
        self.cache.insert(channel.to_owned(), Arc::clone(&m));
        m
    }

    /// Whether any subscription matches `channel`; counts the message as unmatched if none does.
    pub(super) fn wants(&mut self, channel: &str) -> bool {
        let wanted = !self.matching(channel).is_empty();
        if !wanted {
            self.unmatched += 1;
        }
        wanted
    }
}

impl Hub {
    /// Removes subscription `id`, and tells the provider.
    pub(crate) fn remove(&self, id: u64) -> Result<(), BusError> {
        let entry = self.take(id)?;
        // Outside the bus's lock: a provider's receive thread takes that lock to deliver while holding its own.
        self.provider.unsubscribed(&entry.pattern);
        Ok(())
    }

    /// Removes a subscription without telling the provider (which has not heard of it if adding it failed).
    fn take(&self, id: u64) -> Result<Entry, BusError> {
        let mut st = self.lock();
        let i = st.subs.iter().position(|s| s.id == id).ok_or(BusError::NotSubscribed)?;
        let entry = st.subs.remove(i);
        st.cache.clear();
        match &entry.kind {
            Kind::Callback { active, .. } => {
                active.store(false, Ordering::Release);
                st.pending -= entry.queue.len();
                if st.pending == 0 {
                    self.set_readable(false);
                }
            }
            Kind::Executor { active, .. } => active.store(false, Ordering::Release),
            Kind::Queue { .. } => {}
        }
        Ok(entry)
    }

    /// Adds a subscription; returns its id.
    pub(crate) fn add(
        self: &Arc<Self>,
        pattern: Pattern,
        runner: Runner,
        capacity: usize,
        full: Full,
        typed: Option<TypedInfo>,
    ) -> Result<u64, BusError> {
        let kind = match runner {
            Runner::Callback(h) => Kind::Callback { handler: Arc::new(Mutex::new(h)), active: Arc::default() },
            Runner::Executor(h, exec) => {
                Kind::Executor { handler: Arc::new(Mutex::new(h)), active: Arc::default(), exec, scheduled: false }
            }
            Runner::Queue(cond) => Kind::Queue { cond, waker: None },
        };
        if let Kind::Callback { active, .. } | Kind::Executor { active, .. } = &kind {
            active.store(true, Ordering::Release);
        }
        let pattern_for_provider = pattern.clone();
        let mut wake = Wake::default();
        let id = {
            let mut st = self.lock();
            if let Some(t) = &typed {
                check_new_subscription(&mut st, t)?;
            }
            st.next_id += 1;
            let id = st.next_id;
            st.subs.push(Entry {
                id,
                pattern,
                queue: VecDeque::new(),
                capacity,
                full,
                stats: SubscriptionStats::default(),
                kind,
                typed,
            });
            st.cache.clear();
            self.serve_late_joiner(&mut st, &mut wake);
            id
        };
        self.finish(wake);
        // The provider starts, and hears of the pattern, only once the subscription is in place: a fast source (a
        // log played at speed 0) would otherwise hand over its first messages before anyone could match them.
        if let Err(e) = self.start().and_then(|()| self.provider.subscribed(&pattern_for_provider)) {
            let _ = self.take(id);
            return Err(e);
        }
        Ok(id)
    }

    /// A transient-local subscription just added (the last entry) first receives the stored messages of every
    /// transient-local publisher on its channel, oldest first in publish order, at most its own depth.
    fn serve_late_joiner(&self, st: &mut State, wake: &mut Wake) {
        let i = st.subs.len() - 1;
        let Some(t) = &st.subs[i].typed else { return };
        let Some(depth) = t.qos.transient_depth() else { return };
        let (channel, take, ops) = (t.channel.clone(), t.take, t.ops);
        let mut stored: Vec<(u64, Arc<dyn Any + Send + Sync>, Ops)> = Vec::new();
        for p in st.pubs.iter().filter(|p| p.info.channel == channel) {
            stored.extend(p.history.iter().map(|(seq, m)| (*seq, Arc::clone(m), p.info.ops)));
        }
        stored.sort_by_key(|(seq, _, _)| *seq);
        let skip = stored.len().saturating_sub(depth);
        for (_, msg, pub_ops) in stored.into_iter().skip(skip) {
            let Some(item) = erased::stored_item(&msg, pub_ops, ops, take) else {
                st.subs[i].stats.decode_errors += 1;
                continue;
            };
            st.arrivals += 1;
            let arrival = st.arrivals;
            self.enqueue(st, i, arrival, item, wake);
        }
    }

    /// Registers a typed publisher, after checking it against the subscriptions already on its channel.
    pub(crate) fn add_publisher(&self, info: TypedInfo) -> Result<u64, BusError> {
        if let Some(policy) = self.provider.qos_support().refuses(&info.qos, false) {
            return Err(unsupported(self.provider.name(), &info.channel, policy));
        }
        let mut st = self.lock();
        for s in st.subs.iter_mut() {
            let Some(t) = &s.typed else { continue };
            if t.channel != info.channel {
                continue;
            }
            if t.fingerprint != info.fingerprint {
                s.stats.incompatible_type += 1;
                return Err(type_mismatch(&info, t));
            }
            if let Err(why) = qos::check_compatible(&info.qos, &t.qos) {
                s.stats.incompatible_qos += 1;
                return Err(BusError::IncompatibleQos {
                    channel: info.channel.clone(),
                    policy: why.policy(),
                    reason: why.to_string(),
                });
            }
        }
        st.next_id += 1;
        let id = st.next_id;
        st.pubs.push(PubEntry { id, info, history: VecDeque::new(), stats: PublisherStats::default() });
        Ok(id)
    }

    pub(crate) fn remove_publisher(&self, id: u64) {
        self.lock().pubs.retain(|p| p.id != id);
    }

    pub(crate) fn publisher_stats(&self, id: u64) -> PublisherStats {
        let st = self.lock();
        let Some(p) = st.pubs.iter().find(|p| p.id == id) else { return PublisherStats::default() };
        let mut s = p.stats;
        s.matched = st.subs.iter().filter(|e| e.typed.as_ref().is_some_and(|t| t.channel == p.info.channel)).count();
        s.stored = p.history.len();
        s
    }

    /// Counters of subscription `id`.
    pub(crate) fn stats(&self, id: u64) -> Result<SubscriptionStats, BusError> {
        self.lock().entry(id).map(|s| s.stats).ok_or(BusError::NotSubscribed)
    }

    /// Messages waiting in subscription `id`'s queue.
    pub(crate) fn queue_len(&self, id: u64) -> Result<usize, BusError> {
        self.lock().entry(id).map(|s| s.queue.len()).ok_or(BusError::NotSubscribed)
    }

    /// Changes subscription `id`'s capacity, dropping (and counting) the oldest messages beyond it.
    pub(crate) fn set_queue_capacity(&self, id: u64, capacity: usize) -> Result<(), BusError> {
        let mut st = self.lock();
        let s = st.entry(id).ok_or(BusError::NotSubscribed)?;
        s.capacity = capacity;
        let mut dropped = 0;
        while capacity > 0 && s.queue.len() > capacity && !self.holds_all(s) {
            s.queue.pop_front();
            s.stats.dropped_overflow += 1;
            dropped += 1;
        }
        if matches!(s.kind, Kind::Callback { .. }) {
            st.pending -= dropped;
            if st.pending == 0 {
                self.set_readable(false);
            }
        }
        Ok(())
    }

    /// Messages that arrived with no subscription to match them.
    pub(crate) fn unmatched(&self) -> u64 {
        self.lock().unmatched
    }
}

/// The refusal of a QoS `policy` the transport cannot honour.
pub(crate) fn unsupported(provider: &'static str, channel: &str, policy: &'static str) -> BusError {
    let reason = match policy {
        "reliable" => {
            "the transport may lose messages (UDP multicast is best effort; shared memory lets the newest \
                       sample win over a slow reader): use best_effort, or an inproc:// bus for reliable delivery \
                       inside one process"
        }
        _ => {
            "the transport cannot hand a late subscription what other processes published before it: use volatile, \
              or an inproc:// bus"
        }
    };
    BusError::QosUnsupported { provider, channel: channel.to_owned(), policy, reason }
}

fn type_mismatch(new: &TypedInfo, old: &TypedInfo) -> BusError {
    BusError::TypeMismatch {
        channel: new.channel.clone(),
        wanted: new.type_name,
        wanted_fingerprint: new.fingerprint,
        found: old.type_name,
        found_fingerprint: old.fingerprint,
    }
}

/// Checks a typed subscription against the publishers already on its channel; counts a refusal in theirs.
fn check_new_subscription(st: &mut State, t: &TypedInfo) -> Result<(), BusError> {
    for p in st.pubs.iter_mut().filter(|p| p.info.channel == t.channel) {
        if p.info.fingerprint != t.fingerprint {
            p.stats.incompatible_type += 1;
            return Err(type_mismatch(t, &p.info));
        }
        if let Err(why) = qos::check_compatible(&p.info.qos, &t.qos) {
            p.stats.incompatible_qos += 1;
            return Err(BusError::IncompatibleQos {
                channel: t.channel.clone(),
                policy: why.policy(),
                reason: why.to_string(),
            });
        }
    }
    Ok(())
}
