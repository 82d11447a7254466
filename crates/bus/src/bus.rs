//! [`Bus`]: subscriptions, their queues, and dispatch.
//!
//! Every subscription has its own bounded queue. A message is matched against the subscriptions (results cached per
//! channel) and pushed into the queue of each that matches; when a queue is full the oldest message in it goes by
//! default (the newest sample wins), or the newest if the subscription asked for that, or (a keep-all typed
//! subscription at its resource limit) the newest is refused and that is reported; every drop is counted in the
//! subscription's [`SubscriptionStats`].
//!
//! A queue holds [`Item`]s: encoded bytes shared by every byte-level subscription that matched (one allocation per
//! message, not per subscription), or a typed value, owned or shared, for the typed in-process subscriptions of
//! `crate::inproc`. Every publication made through this bus, raw or typed, is delivered to this bus's own
//! subscriptions here, directly, and sent through the transport only if it can reach another process; the
//! transport never hands this bus's own messages back (see `crate::provider`), so no subscription sees a message
//! twice.
//!
//! Callback subscriptions are drained by `handle()`: one call dispatches the oldest waiting message to every callback
//! subscription that has it, in subscription order, as LCM does. Handlers run with no bus lock held, so they may
//! publish, subscribe and unsubscribe (themselves or others); a subscription removed during a dispatch is skipped
//! for the rest of it. Subscriptions made on an [`Executor`](crate::Executor) are drained by its threads instead, one
//! message at a time per subscription, so a slow one holds up only itself. Queue subscriptions ([`Subscriber`]) are
//! drained by their owner.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::task::Waker;
use std::time::{Duration, Instant};

use nerve_codec::Message;
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::error::{BatchError, BusError, TypeError};
use crate::executor::ExecShared;
use crate::inproc::{PublisherStats, Take, TypedInfo};
use crate::pattern::Pattern;
use crate::provider::{self, Incoming, Provider, ProviderStats, Sink};
use crate::qos;
use crate::url::Url;

/// LCM's default queue capacity per subscription.
pub const DEFAULT_CAPACITY: usize = 30;

/// LCM's self-test channel: not application data, so only a subscription to exactly this name receives it.
const SELF_TEST_CHANNEL: &str = "LCM_SELF_TEST";

/// A received message, shared by every subscription that matched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The channel it came on.
    pub channel: String,
    /// The encoded message (fingerprint first, for LCM types).
    pub data: Vec<u8>,
    /// When it arrived, microseconds since the epoch.
    pub recv_utime: i64,
}

impl Received {
    /// Decodes it as `M`, checking the fingerprint first.
    pub fn decode<M: Message>(&self) -> Result<M, TypeError> {
        decode_as(&self.data)
    }
}

/// Decodes `data` as `M`, checking the fingerprint first.
pub(crate) fn decode_as<M: Message>(data: &[u8]) -> Result<M, TypeError> {
    let found = nerve_codec::fingerprint_of(data);
    if found != Some(M::FINGERPRINT) {
        return Err(TypeError::WrongType { expected: M::TYPE_NAME, expected_fingerprint: M::FINGERPRINT, found });
    }
    M::decode(data).map_err(TypeError::Decode)
}

/// What a full queue gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The oldest queued message goes: the newest sample wins (the default; what control loops want).
    #[default]
    DropOldest,
    /// The arriving message goes (LCM's behaviour).
    DropNewest,
}

/// Counters of one subscription.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriptionStats {
    /// Messages that matched and were queued.
    pub received: u64,
    /// Messages handed to the handler or taken by the owner.
    pub delivered: u64,
    /// Messages dropped because the queue was full (the oldest, or the newest with `Overflow::DropNewest`; for a
    /// typed subscription: its keep-last ring overwriting the oldest).
    pub dropped_overflow: u64,
    /// Messages a typed subscription could not decode (wrong type or corrupt).
    pub decode_errors: u64,
    /// Messages a keep-all subscription refused because it already held its resource limit (an error from
    /// `publish` when the subscription is reliable).
    pub dropped_limit: u64,
    /// Publishers refused because their QoS could not serve this subscription (ROS 2's incompatible-QoS event).
    pub incompatible_qos: u64,
    /// Publishers refused because they publish another message type on this channel.
    pub incompatible_type: u64,
}

/// One queued message: encoded bytes, or a typed value for an in-process subscription.
pub(crate) enum Item {
    /// Encoded, shared by every byte-level subscription that matched.
    Bytes(Arc<Received>),
    /// A `T` this subscription owns.
    Owned(Box<dyn Any + Send>),
    /// An `Arc<T>` shared with other subscriptions (and maybe the publisher).
    Shared(Arc<dyn Any + Send + Sync>),
}

pub(crate) type Handler = Box<dyn FnMut(Item) -> Result<(), TypeError> + Send>;

enum Kind {
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
        exec: Weak<ExecShared>,
        scheduled: bool,
    },
}

/// What a full queue does with the next message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    DropOldest,
    DropNewest,
    /// Keep-all at its resource limit: refuse the newest and report it.
    Refuse,
}

struct Entry {
    id: u64,
    pattern: Pattern,
    queue: VecDeque<(u64, Item)>,
    capacity: usize,
    full: Full,
    stats: SubscriptionStats,
    kind: Kind,
    /// Present for typed in-process subscriptions.
    typed: Option<TypedInfo>,
}

/// A typed publisher, as the bus knows it: for matching, QoS checks and the transient-local store.
pub(crate) struct PubEntry {
    pub(crate) id: u64,
    pub(crate) info: TypedInfo,
    /// The last `depth` messages of a transient-local publisher, with their place in the bus's publish order.
    history: VecDeque<(u64, Arc<dyn Any + Send + Sync>)>,
    pub(crate) stats: PublisherStats,
}

/// Channels whose matching subscriptions are remembered at most (then the memory starts over).
const MATCH_CACHE_MAX: usize = 4096;

#[derive(Default)]
struct State {
    subs: Vec<Entry>,
    pubs: Vec<PubEntry>,
    /// channel -> indices into `subs` of the subscriptions it matches; cleared when `subs` changes.
    cache: HashMap<String, Arc<[usize]>>,
    next_id: u64,
    arrivals: u64,
    /// Order of transient-local publications across publishers.
    publish_seq: u64,
    /// Messages queued in callback subscriptions: the fd is readable while this is above 0.
    pending: usize,
    /// Threads blocked in `handle()` waiting for `pending` to rise (so a publication wakes no one when none wait).
    handle_waiters: usize,
    unmatched: u64,
}

impl State {
    /// The index of subscription `id`, trying `hint` first.
    fn find(&self, hint: usize, id: u64) -> Option<usize> {
        if self.subs.get(hint).is_some_and(|s| s.id == id) {
            return Some(hint);
        }
        self.subs.iter().position(|s| s.id == id)
    }

    /// The indices into `subs` of the subscriptions `channel` matches (shared with the cache: no copy).
    fn matching(&mut self, channel: &str) -> Arc<[usize]> {
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
    fn wants(&mut self, channel: &str) -> bool {
        let wanted = !self.matching(channel).is_empty();
        if !wanted {
            self.unmatched += 1;
        }
        wanted
    }
}

/// A subscription a publication is for, as found when it was planned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    pub(crate) id: u64,
    index: usize,
    pub(crate) take: Take,
    reliable: bool,
}

/// Typed subscriptions of one Rust type that need the encoded bytes (they are not of the publisher's type).
pub(crate) struct Group {
    pub(crate) ops: crate::inproc::Ops,
    pub(crate) members: Vec<Target>,
}

/// Who a publication on a channel goes to.
pub(crate) struct Plan {
    /// Typed subscriptions of the publisher's own type, in subscription order.
    pub(crate) own: Vec<Target>,
    /// Other typed subscriptions, by type.
    pub(crate) groups: Vec<Group>,
    /// Whether any byte-level subscription matches.
    pub(crate) byte_subs: bool,
}

/// What `commit` reports back to a publisher.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Committed {
    /// Keep-all subscriptions that refused the message at their limit.
    pub(crate) refused: usize,
    /// Of those, the reliable ones.
    pub(crate) refused_reliable: usize,
    /// The smallest limit among the reliable refusals.
    pub(crate) limit: usize,
}

pub(crate) struct Core {
    pub(crate) provider: Box<dyn Provider>,
    me: Weak<Core>,
    started: Mutex<bool>,
    state: Mutex<State>,
    ready: Condvar,
    notify: EventFd,
    /// Whether the eventfd has been handed out (`fileno`, `as_fd`). Until it is, nobody can poll it, so it is not
    /// kept up to date: that saves two system calls per message for programs that only call `handle()`.
    fd_in_use: AtomicBool,
    /// Held while callbacks run, by `handle()` or by the receive thread, so that callbacks never run concurrently
    /// and messages are dispatched in arrival order. Always taken before `state`, never while holding it.
    dispatching: Mutex<()>,
    /// How many dispatchers run callbacks on the provider's receive thread.
    inline_dispatchers: AtomicUsize,
}

/// The bus: publish and subscribe over the transport its URL names.
///
/// Cheap to clone (all clones share one transport and one set of subscriptions) and usable from any thread.
#[derive(Clone)]
pub struct Bus {
    pub(crate) core: Arc<Core>,
}

/// A callback subscription, for [`Bus::unsubscribe`] and its stats. Dropping it does not unsubscribe (as in LCM).
#[derive(Debug, Clone)]
pub struct Subscription {
    id: u64,
    bus: Weak<Core>,
}

/// A queue subscription: messages wait in its queue until taken with [`Subscriber::recv`] (or as an async stream).
/// Dropping it unsubscribes.
pub struct Subscriber {
    id: u64,
    core: Arc<Core>,
    cond: Arc<Condvar>,
}

thread_local! {
    static IN_HANDLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// When this (receive) thread last came back from running callbacks in [`Sink::drained`]: the time since is
    /// what it spent on its transport, and the callbacks' next turn may be as long.
    static INLINE_TURN_ENDED: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

struct CoreSink(Weak<Core>);

impl Sink for CoreSink {
    fn deliver(&self, msg: Incoming) {
        if let Some(core) = self.0.upgrade() {
            core.route_bytes(Cow::Owned(msg.channel), Cow::Owned(msg.data), msg.recv_utime);
        }
    }

    fn drained(&self) -> bool {
        self.0.upgrade().is_some_and(|core| core.dispatch_inline())
    }

    fn wants(&self, channel: &str) -> bool {
        self.0.upgrade().is_some_and(|core| core.lock().wants(channel))
    }
}

/// Work to do once the state lock is released.
#[derive(Default)]
struct Wake {
    /// Executor subscriptions that became ready.
    schedule: Vec<(Arc<ExecShared>, u64)>,
}

/// What happened to one message offered to one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pushed {
    Queued,
    Refused,
}

/// An executor subscription taken out of its queue to run.
type ExecTurn = (u64, Item, Arc<Mutex<Handler>>, Arc<AtomicBool>);

/// A callback subscription's turn in a dispatch: its id, handler, whether it is still subscribed, its message.
type Turn = (u64, Arc<Mutex<Handler>>, Arc<AtomicBool>, Item);

impl Core {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("bus state lock poisoned by a panicking thread")
    }

    fn start(self: &Arc<Self>) -> Result<(), BusError> {
        let mut started = self.started.lock().expect("start lock");
        if !*started {
            self.provider.start(Arc::new(CoreSink(Arc::downgrade(self))))?;
            *started = true;
        }
        Ok(())
    }

    /// Called with the state lock held, so it is ordered with `expose_fd`.
    fn set_readable(&self, readable: bool) {
        // The eventfd is a level: written once when the first message waits, drained when none is left.
        if !self.fd_in_use.load(Ordering::Relaxed) {
            return;
        }
        if readable {
            let _ = self.notify.write(1);
        } else {
            let _ = self.notify.read();
        }
    }

    /// From now on, keeps the eventfd readable exactly while callbacks wait (it was not kept before anyone asked).
    fn expose_fd(&self) {
        if self.fd_in_use.load(Ordering::Relaxed) {
            return;
        }
        let st = self.lock();
        self.fd_in_use.store(true, Ordering::Relaxed);
        if st.pending > 0 {
            self.set_readable(true);
        }
    }

    /// Offers `item` to subscription `i`'s queue, applying its full-queue policy.
    fn enqueue(&self, st: &mut State, i: usize, arrival: u64, item: Item, wake: &mut Wake) -> Pushed {
        let s = &mut st.subs[i];
        s.stats.received += 1;
        let mut pending_delta: isize = 0;
        if s.capacity > 0 && s.queue.len() >= s.capacity {
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
        s.queue.push_back((arrival, item));
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

    fn finish(&self, wake: Wake) {
        for (exec, id) in wake.schedule {
            exec.schedule(self.me.clone(), id);
        }
    }

    /// Finds who a publication on `channel` goes to. `own_type` is the typed publisher's type (its subscriptions are
    /// served the value itself); `history` is stored in that publisher's transient-local store in the same critical
    /// section, so that a subscription joining concurrently gets the message exactly once: from the store or live.
    pub(crate) fn plan(
        &self,
        channel: &str,
        own_type: Option<TypeId>,
        history: Option<(u64, Arc<dyn Any + Send + Sync>)>,
    ) -> Plan {
        let mut st = self.lock();
        if let Some((pub_id, msg)) = history {
            st.publish_seq += 1;
            let seq = st.publish_seq;
            if let Some(p) = st.pubs.iter_mut().find(|p| p.id == pub_id) {
                let depth = p.info.qos.transient_depth().unwrap_or(0);
                if p.history.len() >= depth {
                    p.history.pop_front();
                }
                p.history.push_back((seq, msg));
            }
        }
        let matching = st.matching(channel);
        if matching.is_empty() && own_type.is_none() {
            st.unmatched += 1;
        }
        let mut plan = Plan { own: Vec::new(), groups: Vec::new(), byte_subs: false };
        for &i in matching.iter() {
            let s = &st.subs[i];
            let Some(t) = &s.typed else {
                plan.byte_subs = true;
                continue;
            };
            let target = Target { id: s.id, index: i, take: t.take, reliable: t.qos.is_reliable() };
            if Some(t.type_id) == own_type {
                plan.own.push(target);
            } else if let Some(g) = plan.groups.iter_mut().find(|g| g.ops.type_id == t.type_id) {
                g.members.push(target);
            } else {
                plan.groups.push(Group { ops: t.ops, members: vec![target] });
            }
        }
        plan
    }

    /// Pushes the planned items (and, to every matching byte-level subscription, `received`) into the queues, as
    /// one arrival. `decode_failed` are typed subscriptions the bytes did not decode for. `publisher` is the typed
    /// publisher's id and the copies it took, for its stats.
    pub(crate) fn commit(
        &self,
        channel: &str,
        items: Vec<(Target, Item)>,
        received: Option<Arc<Received>>,
        decode_failed: &[Target],
        publisher: Option<(u64, u64, bool)>,
    ) -> Committed {
        let mut wake = Wake::default();
        let mut done = Committed { limit: usize::MAX, ..Committed::default() };
        {
            let mut st = self.lock();
            st.arrivals += 1;
            let arrival = st.arrivals;
            for (t, item) in items {
                let Some(i) = st.find(t.index, t.id) else { continue };
                if self.enqueue(&mut st, i, arrival, item, &mut wake) == Pushed::Refused {
                    done.refused += 1;
                    if t.reliable {
                        done.refused_reliable += 1;
                        done.limit = done.limit.min(st.subs[i].capacity);
                    }
                }
            }
            for t in decode_failed {
                if let Some(i) = st.find(t.index, t.id) {
                    st.subs[i].stats.received += 1;
                    st.subs[i].stats.decode_errors += 1;
                }
            }
            if let Some(r) = received {
                for &i in st.matching(channel).iter() {
                    if st.subs[i].typed.is_none() {
                        self.enqueue(&mut st, i, arrival, Item::Bytes(Arc::clone(&r)), &mut wake);
                    }
                }
            }
            if let Some((id, copies, encoded)) = publisher {
                if let Some(p) = st.pubs.iter_mut().find(|p| p.id == id) {
                    p.stats.published += 1;
                    p.stats.copies += copies;
                    p.stats.encoded += encoded as u64;
                    p.stats.limit_drops += done.refused as u64;
                }
            }
        }
        self.finish(wake);
        done
    }

    /// Delivers encoded bytes (from the transport, or a raw publish of this bus) to this bus's subscriptions:
    /// byte-level ones get them shared, typed ones a decoded value (decoded once per Rust type).
    ///
    /// When only byte-level subscriptions match (every message the transport brings to a process that subscribes
    /// bytes), matching and queueing are one critical section, and the channel and bytes move into the shared
    /// [`Received`] uncopied: this is the path between a datagram's arrival and its callback.
    pub(crate) fn route_bytes(&self, channel: Cow<'_, str>, data: Cow<'_, [u8]>, recv_utime: i64) {
        {
            let mut st = self.lock();
            let matching = st.matching(&channel);
            if matching.is_empty() {
                st.unmatched += 1;
                return;
            }
            if matching.iter().all(|&i| st.subs[i].typed.is_none()) {
                let received =
                    Arc::new(Received { channel: channel.into_owned(), data: data.into_owned(), recv_utime });
                let mut wake = Wake::default();
                st.arrivals += 1;
                let arrival = st.arrivals;
                for &i in matching.iter() {
                    self.enqueue(&mut st, i, arrival, Item::Bytes(Arc::clone(&received)), &mut wake);
                }
                drop(st);
                self.finish(wake);
                return;
            }
        }
        // Typed subscriptions match: decode outside the lock, then queue everything as one arrival.
        let plan = self.plan(&channel, None, None);
        let mut items = Vec::new();
        let mut failed = Vec::new();
        for g in &plan.groups {
            crate::inproc::decode_group(g, &data, &mut items, &mut failed);
        }
        if items.is_empty() && failed.is_empty() && !plan.byte_subs {
            return;
        }
        let received = plan
            .byte_subs
            .then(|| Arc::new(Received { channel: channel.to_string(), data: data.into_owned(), recv_utime }));
        self.commit(&channel, items, received, &failed, None);
    }

    /// Takes the oldest waiting message from every callback subscription that has it at the front.
    fn pop_next(&self, st: &mut State) -> Option<Vec<Turn>> {
        let oldest = st
            .subs
            .iter()
            .filter(|s| matches!(s.kind, Kind::Callback { .. }))
            .filter_map(|s| s.queue.front().map(|(a, _)| *a))
            .min()?;
        let mut targets = Vec::new();
        for s in st.subs.iter_mut() {
            let Kind::Callback { handler, active } = &s.kind else { continue };
            if s.queue.front().map(|(a, _)| *a) == Some(oldest) {
                let (_, item) = s.queue.pop_front().expect("front exists");
                s.stats.delivered += 1;
                targets.push((s.id, Arc::clone(handler), Arc::clone(active), item));
            }
        }
        st.pending -= targets.len();
        if st.pending == 0 {
            self.set_readable(false);
        }
        Some(targets)
    }

    /// Runs waiting messages' callbacks on this (the receive) thread, oldest first, if a dispatcher asked for that:
    /// at least one message's, and more for as long as the thread spent on its transport since its last such turn
    /// (so that under load it splits its time evenly between reading and callbacks). Returns whether more wait.
    fn dispatch_inline(&self) -> bool {
        if self.inline_dispatchers.load(Ordering::Acquire) == 0 || IN_HANDLER.with(|f| f.get()) {
            return false;
        }
        let start = Instant::now();
        let reading = INLINE_TURN_ENDED.with(|t| t.get()).map_or(Duration::ZERO, |ended| start - ended);
        let mut more = self.dispatch_one() && self.lock().pending > 0;
        while more && start.elapsed() < reading {
            more = self.dispatch_one() && self.lock().pending > 0;
        }
        INLINE_TURN_ENDED.with(|t| t.set(Some(Instant::now())));
        more
    }

    /// Dispatches the oldest waiting message, if there is one.
    fn dispatch_one(&self) -> bool {
        let _turn = self.dispatching.lock().expect("dispatch lock");
        let next = self.pop_next(&mut self.lock());
        match next {
            Some(targets) => {
                self.dispatch(targets);
                true
            }
            None => false,
        }
    }

    fn dispatch(&self, targets: Vec<Turn>) {
        IN_HANDLER.with(|f| f.set(true));
        for (id, handler, active, item) in targets {
            // A subscription removed by an earlier handler of this same message is skipped, as in LCM 1.5.3.
            if !active.load(Ordering::Acquire) {
                continue;
            }
            let outcome = (handler.lock().expect("handler lock"))(item);
            if outcome.is_err() {
                self.count_decode_error(id);
            }
        }
        IN_HANDLER.with(|f| f.set(false));
    }

    fn count_decode_error(&self, id: u64) {
        if let Some(s) = self.lock().subs.iter_mut().find(|s| s.id == id) {
            s.stats.decode_errors += 1;
        }
    }

    /// Takes the next message of executor subscription `id` (which must be scheduled).
    fn exec_take(&self, id: u64) -> Option<ExecTurn> {
        let mut st = self.lock();
        let s = st.subs.iter_mut().find(|s| s.id == id)?;
        let Kind::Executor { handler, active, scheduled, .. } = &mut s.kind else { return None };
        match s.queue.pop_front() {
            Some((_, item)) => {
                s.stats.delivered += 1;
                Some((id, item, Arc::clone(handler), Arc::clone(active)))
            }
            None => {
                *scheduled = false;
                None
            }
        }
    }

    /// Runs one message of executor subscription `id` on this (an executor's) thread, then puts the subscription
    /// back in the executor's ready queue if more are waiting.
    pub(crate) fn run_scheduled(&self, id: u64) {
        let Some((id, item, handler, active)) = self.exec_take(id) else { return };
        if active.load(Ordering::Acquire) && (handler.lock().expect("handler lock"))(item).is_err() {
            self.count_decode_error(id);
        }
        let again = {
            let mut st = self.lock();
            match st.subs.iter_mut().find(|s| s.id == id) {
                Some(Entry { kind: Kind::Executor { exec, scheduled, .. }, queue, .. }) => {
                    if queue.is_empty() {
                        *scheduled = false;
                        None
                    } else {
                        exec.upgrade()
                    }
                }
                _ => None,
            }
        };
        if let Some(exec) = again {
            exec.schedule(self.me.clone(), id);
        }
    }

    fn remove(&self, id: u64) -> Result<(), BusError> {
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

    fn add(
        self: &Arc<Self>,
        pattern: Pattern,
        kind: Kind,
        capacity: usize,
        full: Full,
        typed: Option<TypedInfo>,
    ) -> Result<u64, BusError> {
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
        let mut stored: Vec<(u64, Arc<dyn Any + Send + Sync>, crate::inproc::Ops)> = Vec::new();
        for p in st.pubs.iter().filter(|p| p.info.channel == channel) {
            stored.extend(p.history.iter().map(|(seq, m)| (*seq, Arc::clone(m), p.info.ops)));
        }
        stored.sort_by_key(|(seq, _, _)| *seq);
        let skip = stored.len().saturating_sub(depth);
        for (_, msg, pub_ops) in stored.into_iter().skip(skip) {
            let Some(item) = crate::inproc::stored_item(&msg, pub_ops, ops, take) else {
                st.subs[i].stats.decode_errors += 1;
                continue;
            };
            st.arrivals += 1;
            let arrival = st.arrivals;
            self.enqueue(st, i, arrival, item, wake);
        }
    }

    /// Registers a typed publisher, after checking it against the subscriptions already on its channel.
    pub(crate) fn add_publisher(self: &Arc<Self>, info: TypedInfo) -> Result<u64, BusError> {
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
}

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

/// `inproc://NAME` buses of this process, by name: every `Bus::new` of the same name shares one bus, so components
/// built apart still find each other (ROS 2's process-wide context).
static INPROC_DOMAINS: Mutex<Vec<(String, Weak<Core>)>> = Mutex::new(Vec::new());

impl Bus {
    /// A bus on `url`; with `None`, on `NERVE_URL`, then `LCM_DEFAULT_URL`, then `udpm://239.255.76.67:7667?ttl=0`.
    pub fn new(url: Option<&str>) -> Result<Bus, BusError> {
        let text = match url {
            Some(u) if !u.is_empty() => u.to_owned(),
            _ => Url::from_env(),
        };
        let url = Url::parse(&text).map_err(BusError::Url)?;
        let provider: Box<dyn Provider> = match url.provider.as_str() {
            "udpm" | "mpudpm" => {
                let (config, unknown) = nerve_udpm::Config::from_url_parts(&url.network, &url.options)
                    .map_err(|e| BusError::Config { url: text.clone(), reason: e.to_string() })?;
                for key in unknown {
                    eprintln!("nerve: {text}: unknown option '{key}' ignored");
                }
                if url.provider == "udpm" {
                    if config.ports.is_some() {
                        eprintln!("nerve: {text}: nports applies to mpudpm:// only; ignored");
                    }
                    Box::new(provider::udpm::Udpm::open(config)?)
                } else {
                    Box::new(provider::mpudpm::Mpudpm::open(config)?)
                }
            }
            "memq" => Box::new(provider::inproc::Inproc::memq()),
            "inproc" => return Ok(Bus::inproc_domain(&url.network)),
            "file" => {
                let (file, unknown) = provider::file::FileProvider::open(&text, &url.network, &url.options)?;
                for key in unknown {
                    eprintln!("nerve: {text}: unknown option '{key}' ignored");
                }
                Box::new(file)
            }
            "shm" => {
                let (config, unknown) = provider::shm::ShmConfig::from_url(&text, &url.network, &url.options)?;
                for key in unknown {
                    eprintln!("nerve: {text}: unknown option '{key}' ignored");
                }
                Box::new(provider::shm::Shm::open(config)?)
            }
            other => return Err(BusError::UnknownProvider { provider: other.to_owned() }),
        };
        Ok(Bus::with_provider(provider))
    }

    /// The process-wide `inproc://` bus called `name`, made on first use.
    fn inproc_domain(name: &str) -> Bus {
        let mut domains = INPROC_DOMAINS.lock().expect("inproc domains lock");
        domains.retain(|(_, w)| w.strong_count() > 0);
        if let Some(core) = domains.iter().find(|(n, _)| n == name).and_then(|(_, w)| w.upgrade()) {
            return Bus { core };
        }
        let bus = Bus::with_provider(Box::new(provider::inproc::Inproc::new()));
        domains.push((name.to_owned(), Arc::downgrade(&bus.core)));
        bus
    }

    /// A bus over a provider built elsewhere.
    pub fn with_provider(provider: Box<dyn Provider>) -> Bus {
        let notify = EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
            .expect("creating an eventfd (needs Linux 2.6.30+)");
        Bus {
            core: Arc::new_cyclic(|me| Core {
                provider,
                me: me.clone(),
                started: Mutex::new(false),
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
                notify,
                fd_in_use: AtomicBool::new(false),
                dispatching: Mutex::new(()),
                inline_dispatchers: AtomicUsize::new(0),
            }),
        }
    }

    /// Whether `other` is this same bus (a clone of it, or the same `inproc://` name).
    pub fn same_bus(&self, other: &Bus) -> bool {
        Arc::ptr_eq(&self.core, &other.core)
    }

    /// The transport's name, e.g. `udpm`.
    pub fn provider_name(&self) -> &'static str {
        self.core.provider.name()
    }

    /// The transport's counters.
    pub fn provider_stats(&self) -> ProviderStats {
        self.core.provider.stats()
    }

    /// Messages that arrived with no subscription to match them.
    pub fn unmatched(&self) -> u64 {
        self.core.lock().unmatched
    }

    /// Publishes raw bytes: to this bus's own matching subscriptions directly (typed ones get the decoded value),
    /// and through the transport when it can reach another process.
    pub fn publish_raw(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        // The transport first: a reply another process waits for leaves before this bus's own queues are served.
        // In-process delivery happens whatever the transport did, as in a batch.
        let sent = if self.core.provider.leaves_process() { self.core.provider.publish(channel, data) } else { Ok(()) };
        self.core.route_bytes(Cow::Borrowed(channel), Cow::Borrowed(data), nerve_udpm::now_utime());
        sent
    }

    /// Publishes raw messages (channel, bytes) in order, as [`Bus::publish_raw`] on each would, but hands them to
    /// the transport all at once, so it can send them in few system calls (udpm and mpudpm: `sendmmsg`; other
    /// transports publish them one by one). Each message is delivered to this bus's own matching subscriptions once,
    /// directly, and never comes back through the transport.
    ///
    /// If the transport fails on a message, the batch stops there, with the same outcome as a loop of `publish_raw`
    /// stopping at its first error: the messages before it were published, it was delivered in-process only, and
    /// none after it was published ([`BatchError::sent`] says which).
    pub fn publish_raw_batch(&self, batch: &[(&str, &[u8])]) -> Result<(), BatchError> {
        let result = if self.core.provider.leaves_process() { self.core.provider.publish_batch(batch) } else { Ok(()) };
        // In-process delivery after the sends, as in publish_raw: the same deliveries whatever the transport did,
        // since a transport never hands the bus back its own messages.
        let reached = match &result {
            Ok(()) => batch.len(),
            Err(e) => (e.sent + 1).min(batch.len()),
        };
        // One clock read for the batch: its messages are published at one instant.
        let now = nerve_udpm::now_utime();
        for &(channel, data) in &batch[..reached] {
            self.core.route_bytes(Cow::Borrowed(channel), Cow::Borrowed(data), now);
        }
        result
    }

    /// Publishes a typed message (encoded; see [`Bus::publisher`] for in-process delivery without encoding).
    pub fn publish<M: Message>(&self, channel: &str, msg: &M) -> Result<(), BusError> {
        let bytes = msg.encode().map_err(BusError::Encode)?;
        self.publish_raw(channel, &bytes)
    }

    /// Subscribes a callback to every channel that `pattern` matches in full, with LCM's default queue of 30 and
    /// drop-oldest overflow.
    pub fn subscribe_raw(
        &self,
        pattern: &str,
        mut handler: impl FnMut(&Received) + Send + 'static,
    ) -> Result<Subscription, BusError> {
        self.subscribe_with(pattern, DEFAULT_CAPACITY, Overflow::DropOldest, move |m| {
            handler(m);
            Ok(())
        })
    }

    /// Subscribes a typed callback. A message of another type (or corrupt) reaches the handler as a `TypeError`,
    /// never as a garbage value, and is counted in the subscription's `decode_errors`.
    pub fn subscribe<M: Message + 'static>(
        &self,
        pattern: &str,
        mut handler: impl FnMut(&Received, Result<M, TypeError>) + Send + 'static,
    ) -> Result<Subscription, BusError> {
        self.subscribe_with(pattern, DEFAULT_CAPACITY, Overflow::DropOldest, move |m| {
            let decoded = m.decode::<M>();
            let err = decoded.as_ref().err().cloned();
            handler(m, decoded);
            err.map_or(Ok(()), Err)
        })
    }

    /// Subscribes a callback with a chosen queue capacity (0 = unbounded) and overflow policy.
    pub fn subscribe_with(
        &self,
        pattern: &str,
        capacity: usize,
        overflow: Overflow,
        mut handler: impl FnMut(&Received) -> Result<(), TypeError> + Send + 'static,
    ) -> Result<Subscription, BusError> {
        let pattern = Pattern::new(pattern).map_err(BusError::Pattern)?;
        let handler: Handler = Box::new(move |item| match item {
            Item::Bytes(m) => handler(&m),
            // Byte-level subscriptions only ever queue bytes.
            Item::Owned(_) | Item::Shared(_) => Ok(()),
        });
        let full = match overflow {
            Overflow::DropOldest => Full::DropOldest,
            Overflow::DropNewest => Full::DropNewest,
        };
        self.add_callback(pattern, handler, capacity, FullPolicy(full), None, None)
    }

    /// Adds a callback subscription run by `handle()`, or by `exec`'s threads.
    pub(crate) fn add_callback(
        &self,
        pattern: Pattern,
        handler: Handler,
        capacity: usize,
        full: FullPolicy,
        typed: Option<TypedInfo>,
        exec: Option<&Arc<ExecShared>>,
    ) -> Result<Subscription, BusError> {
        let handler = Arc::new(Mutex::new(handler));
        let active = Arc::new(AtomicBool::new(true));
        let kind = match exec {
            None => Kind::Callback { handler, active },
            Some(e) => Kind::Executor { handler, active, exec: Arc::downgrade(e), scheduled: false },
        };
        let id = self.core.add(pattern, kind, capacity, full.0, typed)?;
        Ok(Subscription { id, bus: Arc::downgrade(&self.core) })
    }

    /// Subscribes a queue that the caller drains with [`Subscriber::recv`] (or as an async stream).
    pub fn subscriber(&self, pattern: &str, capacity: usize, overflow: Overflow) -> Result<Subscriber, BusError> {
        let pattern = Pattern::new(pattern).map_err(BusError::Pattern)?;
        let full = match overflow {
            Overflow::DropOldest => Full::DropOldest,
            Overflow::DropNewest => Full::DropNewest,
        };
        let (id, cond) = self.add_queue(pattern, capacity, FullPolicy(full), None)?;
        Ok(Subscriber { id, core: Arc::clone(&self.core), cond })
    }

    pub(crate) fn add_queue(
        &self,
        pattern: Pattern,
        capacity: usize,
        full: FullPolicy,
        typed: Option<TypedInfo>,
    ) -> Result<(u64, Arc<Condvar>), BusError> {
        let cond = Arc::new(Condvar::new());
        let kind = Kind::Queue { cond: Arc::clone(&cond), waker: None };
        let id = self.core.add(pattern, kind, capacity, full.0, typed)?;
        Ok((id, cond))
    }

    /// Removes a callback subscription; safe from inside any handler.
    pub fn unsubscribe(&self, sub: &Subscription) -> Result<(), BusError> {
        self.core.remove(sub.id)
    }

    /// Waits for one message and dispatches it to every callback subscription it is queued for.
    pub fn handle(&self) -> Result<(), BusError> {
        self.handle_until(None).map(|_| ())
    }

    /// Like [`Bus::handle`], waiting at most `timeout`; `Ok(false)` when nothing arrived in time.
    pub fn handle_timeout(&self, timeout: Duration) -> Result<bool, BusError> {
        self.handle_until(Some(Instant::now() + timeout))
    }

    fn handle_until(&self, deadline: Option<Instant>) -> Result<bool, BusError> {
        if IN_HANDLER.with(|f| f.get()) {
            return Err(BusError::HandleInsideHandler);
        }
        self.core.start()?;
        loop {
            if self.core.dispatch_one() {
                return Ok(true);
            }
            let mut st = self.core.lock();
            if st.pending > 0 {
                continue;
            }
            st.handle_waiters += 1;
            st = match deadline {
                None => self.core.ready.wait(st).expect("bus state lock"),
                Some(d) => match d.checked_duration_since(Instant::now()).filter(|l| !l.is_zero()) {
                    Some(left) => self.core.ready.wait_timeout(st, left).expect("bus state lock").0,
                    None => {
                        st.handle_waiters -= 1;
                        return Ok(false);
                    }
                },
            };
            st.handle_waiters -= 1;
        }
    }

    /// A file descriptor that is readable while a message waits for `handle()`: for select, poll, epoll or a GUI
    /// event loop. It stays open as long as the bus does. (The bus keeps it up to date only from the first call of
    /// this or [`Bus::as_fd`] on, so programs that never poll it pay no system call per message for it.)
    pub fn fileno(&self) -> Result<RawFd, BusError> {
        self.core.start()?;
        Ok(self.as_fd().as_raw_fd())
    }

    /// The same descriptor, borrowed.
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.core.expose_fd();
        self.core.notify.as_fd()
    }

    /// Dispatches callbacks in the background until the returned guard is dropped.
    ///
    /// On a transport with a receive thread of its own (udpm, mpudpm) the callbacks run ON that thread, as each
    /// message arrives: no hand-off to another thread, so no second wake-up per message (on a machine whose idle
    /// CPUs sleep, each wake-up costs tens of microseconds). Otherwise a dispatch thread runs `handle()`. Either
    /// way callbacks never run concurrently with each other or with `handle()` called elsewhere, and a slow
    /// callback delays reading the socket (the kernel buffer and the subscription queues absorb it). For callbacks
    /// that must not wait for each other, subscribe them on an [`Executor`](crate::Executor) instead.
    pub fn spawn_dispatcher(&self) -> Result<Dispatcher, BusError> {
        self.core.start()?;
        if self.core.provider.has_receive_thread() {
            self.core.inline_dispatchers.fetch_add(1, Ordering::AcqRel);
            return Ok(Dispatcher { mode: DispatchMode::Inline(Arc::clone(&self.core)) });
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (bus, flag) = (self.clone(), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("nerve-dispatch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    let _ = bus.handle_timeout(Duration::from_millis(50));
                }
            })
            .map_err(|e| BusError::Transport { provider: "dispatch", source: Box::new(e) })?;
        Ok(Dispatcher { mode: DispatchMode::Thread { stop, thread: Some(thread) } })
    }

    /// Counters of a subscription.
    pub fn stats(&self, sub: &Subscription) -> Result<SubscriptionStats, BusError> {
        self.core.lock().subs.iter().find(|s| s.id == sub.id).map(|s| s.stats).ok_or(BusError::NotSubscribed)
    }

    /// Messages waiting in a subscription's queue.
    pub fn queue_len(&self, sub: &Subscription) -> Result<usize, BusError> {
        self.core.lock().subs.iter().find(|s| s.id == sub.id).map(|s| s.queue.len()).ok_or(BusError::NotSubscribed)
    }

    /// Changes a subscription's queue capacity (0 = unbounded). Messages already queued beyond it are dropped
    /// oldest first and counted.
    pub fn set_queue_capacity(&self, sub: &Subscription, capacity: usize) -> Result<(), BusError> {
        let mut st = self.core.lock();
        let s = st.subs.iter_mut().find(|s| s.id == sub.id).ok_or(BusError::NotSubscribed)?;
        s.capacity = capacity;
        let mut dropped = 0;
        while capacity > 0 && s.queue.len() > capacity {
            s.queue.pop_front();
            s.stats.dropped_overflow += 1;
            dropped += 1;
        }
        if matches!(s.kind, Kind::Callback { .. }) {
            st.pending -= dropped;
            if st.pending == 0 {
                self.core.set_readable(false);
            }
        }
        Ok(())
    }
}

/// A queue's full policy, as the typed layer chooses it (a keep-all history refuses and reports).
pub(crate) struct FullPolicy(Full);

impl FullPolicy {
    /// Keep-last (`refuse == false`: the ring drops the oldest) or keep-all (`refuse == true`).
    pub(crate) fn history(refuse: bool) -> FullPolicy {
        FullPolicy(if refuse { Full::Refuse } else { Full::DropOldest })
    }
}

impl Subscription {
    /// Removes this subscription (the same as [`Bus::unsubscribe`]).
    pub fn unsubscribe(&self) -> Result<(), BusError> {
        self.bus.upgrade().ok_or(BusError::NotSubscribed)?.remove(self.id)
    }
}

/// Background dispatch; dropping it stops it (and joins its thread, if it has one).
pub struct Dispatcher {
    mode: DispatchMode,
}

enum DispatchMode {
    /// Callbacks run on the provider's receive thread.
    Inline(Arc<Core>),
    /// Callbacks run on a thread of their own that calls `handle()`.
    Thread { stop: Arc<AtomicBool>, thread: Option<std::thread::JoinHandle<()>> },
}

impl Dispatcher {
    /// Whether callbacks run on the transport's receive thread (rather than on a dispatch thread).
    pub fn is_inline(&self) -> bool {
        matches!(self.mode, DispatchMode::Inline(_))
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        match &mut self.mode {
            DispatchMode::Inline(core) => {
                core.inline_dispatchers.fetch_sub(1, Ordering::AcqRel);
            }
            DispatchMode::Thread { stop, thread } => {
                stop.store(true, Ordering::Relaxed);
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
        }
    }
}

/// The queue side shared by [`Subscriber`] and the typed queue subscribers: take, wait, stats, waker.
pub(crate) struct QueueHandle<'a> {
    pub(crate) id: u64,
    pub(crate) core: &'a Core,
    pub(crate) cond: &'a Condvar,
}

impl QueueHandle<'_> {
    fn take(&self, st: &mut State) -> Option<Item> {
        let s = st.subs.iter_mut().find(|s| s.id == self.id)?;
        let (_, m) = s.queue.pop_front()?;
        s.stats.delivered += 1;
        Some(m)
    }

    pub(crate) fn try_recv(&self) -> Option<Item> {
        self.take(&mut self.core.lock())
    }

    /// Waits for the next item, up to `timeout` (forever with `None`).
    pub(crate) fn recv(&self, timeout: Option<Duration>) -> Option<Item> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = self.core.lock();
        loop {
            if let Some(m) = self.take(&mut st) {
                return Some(m);
            }
            st = match deadline {
                None => self.cond.wait(st).expect("bus state lock"),
                Some(d) => {
                    let left = d.checked_duration_since(Instant::now()).filter(|l| !l.is_zero())?;
                    self.cond.wait_timeout(st, left).expect("bus state lock").0
                }
            };
        }
    }

    pub(crate) fn stats(&self) -> SubscriptionStats {
        self.core.lock().subs.iter().find(|s| s.id == self.id).map(|s| s.stats).unwrap_or_default()
    }

    /// The next item, or registers `waker` (under the same lock `enqueue` takes, so nothing slips in between).
    pub(crate) fn poll(&self, waker: &Waker) -> Option<Item> {
        let mut st = self.core.lock();
        if let Some(m) = self.take(&mut st) {
            return Some(m);
        }
        if let Some(s) = st.subs.iter_mut().find(|s| s.id == self.id) {
            if let Kind::Queue { waker: w, .. } = &mut s.kind {
                *w = Some(waker.clone());
            }
        }
        None
    }

    pub(crate) fn remove(&self) {
        let _ = self.core.remove(self.id);
    }
}

fn bytes_of(item: Item) -> Option<Arc<Received>> {
    match item {
        Item::Bytes(m) => Some(m),
        Item::Owned(_) | Item::Shared(_) => None,
    }
}

impl Subscriber {
    fn handle(&self) -> QueueHandle<'_> {
        QueueHandle { id: self.id, core: &self.core, cond: &self.cond }
    }

    /// The next message, if one is waiting.
    pub fn try_recv(&self) -> Option<Arc<Received>> {
        self.handle().try_recv().and_then(bytes_of)
    }

    /// Waits for the next message.
    pub fn recv(&self) -> Arc<Received> {
        loop {
            if let Some(m) = self.handle().recv(None).and_then(bytes_of) {
                return m;
            }
        }
    }

    /// Waits up to `timeout` for the next message.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Arc<Received>> {
        self.handle().recv(Some(timeout)).and_then(bytes_of)
    }

    /// Counters of this subscription.
    pub fn stats(&self) -> SubscriptionStats {
        self.handle().stats()
    }

    /// The messages as an async stream (it never ends while the bus lives).
    pub fn into_stream(self) -> MessageStream {
        MessageStream { sub: self }
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.handle().remove();
    }
}

/// A [`Subscriber`] as a `futures_core::Stream` of messages, for async code.
pub struct MessageStream {
    sub: Subscriber,
}

impl futures_core::Stream for MessageStream {
    type Item = Arc<Received>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match self.sub.handle().poll(cx.waker()).and_then(bytes_of) {
            Some(m) => std::task::Poll::Ready(Some(m)),
            None => std::task::Poll::Pending,
        }
    }
}
