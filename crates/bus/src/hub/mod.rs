//! The bus's hub: the subscription table, matching, the per-subscription queues, and the one path every message
//! takes into them (`plan` → `commit` → `enqueue`, or `route_bytes` for encoded bytes), with
//! [`Hub::publish`], the one "deliver locally, then send out" function of raw and typed publishing alike.
//!
//! Every subscription has its own bounded queue. A message is matched against the subscriptions (results cached per
//! channel) and pushed into the queue of each that matches; when a queue is full the oldest message in it goes by
//! default (the newest sample wins), or the newest if the subscription asked for that, or (a keep-all typed
//! subscription at its resource limit) the newest is refused and that is reported; every drop is counted in the
//! subscription's [`SubscriptionStats`]. Encoded bytes carry their [`Origin`] into the queues (on [`Received`]):
//! published through this bus, or received from the transport.
//!
//! A queue holds [`Item`]s: encoded bytes shared by every byte-level subscription that matched (one allocation per
//! message, not per subscription), or a typed value, owned or shared, for typed in-process subscriptions
//! (`erased` holds their type-erased half). Every publication made through this bus, raw or typed, is delivered to
//! this bus's own subscriptions first, directly, and then sent through the transport if it can reach another
//! process; the transport never hands this bus's own messages back (see `crate::provider`), so no subscription
//! sees a message twice.
//!
//! `dispatch` runs the callbacks; `crate::bus`, `crate::typed` and `crate::executor` are the public front over
//! this module, which knows none of them (an executor reaches it through `dispatch::ReadyQueue`).

mod copies;
pub(crate) mod dispatch;
pub(crate) mod erased;

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::task::Waker;
use std::time::Duration;

use nerve_codec::Message;
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::error::{BusError, TypeError};
use crate::pattern::Pattern;
use crate::provider::{Incoming, Provider, Sink};
use crate::qos;

pub(crate) use copies::{distribute, Msg};
use dispatch::{Health, ReadyQueue};
pub(crate) use erased::{decode_as, Ops, TypedInfo};
pub use erased::{PublisherStats, Take};

/// LCM's default queue capacity per subscription.
pub const DEFAULT_CAPACITY: usize = qos::DEFAULT_DEPTH;

/// LCM's self-test channel: not application data, so only a subscription to exactly this name receives it.
const SELF_TEST_CHANNEL: &str = "LCM_SELF_TEST";

/// Where a message came from, as far as this bus can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Published through this bus (raw or typed, by this process).
    Local,
    /// Received from the transport: published by another process (or another bus of this one), or read from a log.
    /// A bridge between two buses forwards only these, so nothing it forwards comes back to be forwarded again.
    Transport,
}

/// A received message, shared by every subscription that matched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The channel it came on.
    pub channel: String,
    /// The encoded message (fingerprint first, for LCM types).
    pub data: Vec<u8>,
    /// When it arrived, microseconds since the epoch.
    pub recv_utime: i64,
    /// Whether it was published through this bus or came from the transport.
    pub origin: Origin,
}

impl Received {
    /// Decodes it as `M`, checking the fingerprint first.
    pub fn decode<M: Message>(&self) -> Result<M, TypeError> {
        decode_as(&self.data)
    }
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

/// A callback, type-erased: it takes the queued item; an `Err` is counted as a decode error.
pub(crate) type Handler = Box<dyn FnMut(Item) -> Result<(), TypeError> + Send>;

/// One message in a subscription's queue.
struct Queued {
    /// Its place in the bus's arrival order (shared by every queue it went to).
    arrival: u64,
    item: Item,
}

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
        exec: Weak<dyn ReadyQueue>,
        scheduled: bool,
    },
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

/// How a new subscription is run.
pub(crate) enum Runner {
    /// By `handle()` or a dispatcher.
    Callback(Handler),
    /// By an executor's threads.
    Executor(Handler, Weak<dyn ReadyQueue>),
    /// By its owner, taking from its queue.
    Queue(Arc<Condvar>),
}

struct Entry {
    id: u64,
    pattern: Pattern,
    queue: VecDeque<Queued>,
    capacity: usize,
    full: Full,
    stats: SubscriptionStats,
    kind: Kind,
    /// Present for typed in-process subscriptions.
    typed: Option<TypedInfo>,
}

/// A typed publisher, as the bus knows it: for matching, QoS checks and the transient-local store.
struct PubEntry {
    id: u64,
    info: TypedInfo,
    /// The last `depth` messages of a transient-local publisher, with their place in the bus's publish order.
    history: VecDeque<(u64, Arc<dyn Any + Send + Sync>)>,
    stats: PublisherStats,
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
    /// What went wrong outside any call (see `dispatch::Health`).
    health: Health,
    /// Transport errors waiting to be returned by `handle()`.
    faults: dispatch::Faults,
}

impl State {
    /// The index of subscription `id`, trying `hint` first.
    fn find(&self, hint: usize, id: u64) -> Option<usize> {
        if self.subs.get(hint).is_some_and(|s| s.id == id) {
            return Some(hint);
        }
        self.subs.iter().position(|s| s.id == id)
    }

    fn entry(&mut self, id: u64) -> Option<&mut Entry> {
        self.subs.iter_mut().find(|s| s.id == id)
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
    id: u64,
    index: usize,
    pub(crate) take: Take,
    reliable: bool,
}

/// Typed subscriptions of one Rust type that need the encoded bytes (they are not of the publisher's type).
pub(crate) struct DecodeGroup {
    pub(crate) ops: Ops,
    pub(crate) members: Vec<Target>,
}

/// Who a publication on a channel goes to.
pub(crate) struct Plan {
    /// Typed subscriptions of the publisher's own type, in subscription order.
    pub(crate) own: Vec<Target>,
    /// Other typed subscriptions, by type.
    pub(crate) groups: Vec<DecodeGroup>,
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

/// A typed publication, prepared by its publisher from a [`Plan`]: what each subscription gets.
pub(crate) struct Prepared {
    /// Typed subscriptions and their items.
    pub(crate) items: Vec<(Target, Item)>,
    /// The encoded message for every matching byte-level subscription, if any matches.
    pub(crate) received: Option<Arc<Received>>,
    /// Typed subscriptions of other Rust types the bytes did not decode for.
    pub(crate) failed: Vec<Target>,
    /// The publisher, and the copies and encodings the publication took, for its stats.
    pub(crate) publisher: (u64, u64, bool),
}

/// What a publication delivers inside this process (see [`Hub::publish`]).
pub(crate) enum Local<'a> {
    /// Encoded bytes (a raw publish), routed as bytes from the transport are.
    Bytes(&'a [u8]),
    /// A typed publication.
    Typed(Prepared),
}

/// The hub of one bus: its transport, subscriptions, queues and dispatch state.
pub(crate) struct Hub {
    pub(crate) provider: Box<dyn Provider>,
    me: Weak<Hub>,
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
    /// How many of those keep a thread for in-process deliveries (the provider's receive threads never see this
    /// bus's own publications: [`Provider::drains_after_own_publications`]), and what those threads wait on.
    local_dispatchers: AtomicUsize,
    local_ready: Condvar,
    /// Whether `State::faults` is not empty (so `handle()` need not lock to look).
    has_faults: AtomicBool,
}

/// Where the provider delivers: the hub, as long as the bus lives.
struct HubSink(Weak<Hub>);

impl Sink for HubSink {
    fn deliver(&self, msg: Incoming) {
        if let Some(hub) = self.0.upgrade() {
            hub.route_bytes(Cow::Owned(msg.channel), Cow::Owned(msg.data), msg.recv_utime, Origin::Transport);
        }
    }

    fn drained(&self) -> bool {
        self.0.upgrade().is_some_and(|hub| hub.dispatch_inline())
    }

    fn wants(&self, channel: &str) -> bool {
        self.0.upgrade().is_some_and(|hub| hub.lock().wants(channel))
    }

    fn report(&self, error: BusError) {
        if let Some(hub) = self.0.upgrade() {
            hub.report(error, false);
        }
    }

    fn receive_stopped(&self, error: BusError) {
        if let Some(hub) = self.0.upgrade() {
            hub.report(error, true);
        }
    }

    fn reader_free(&self) {
        if let Some(hub) = self.0.upgrade() {
            hub.wake_handle_waiters();
        }
    }

    fn waiting(&self) -> bool {
        self.0.upgrade().is_some_and(|hub| hub.lock().pending > 0)
    }
}

/// Work to do once the state lock is released.
#[derive(Default)]
struct Wake {
    /// Executor subscriptions that became ready.
    schedule: Vec<(Arc<dyn ReadyQueue>, u64)>,
}

/// What happened to one message offered to one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pushed {
    Queued,
    Refused,
}

impl Hub {
    /// A hub over `provider`; nothing starts until the first subscription, `handle` or `fileno`.
    pub(crate) fn new(provider: Box<dyn Provider>) -> Arc<Hub> {
        let notify = EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
            .expect("creating an eventfd (needs Linux 2.6.30+)");
        Arc::new_cyclic(|me| Hub {
            provider,
            me: me.clone(),
            started: Mutex::new(false),
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
            notify,
            fd_in_use: AtomicBool::new(false),
            dispatching: Mutex::new(()),
            inline_dispatchers: AtomicUsize::new(0),
            local_dispatchers: AtomicUsize::new(0),
            local_ready: Condvar::new(),
            has_faults: AtomicBool::new(false),
        })
    }

    /// The state. No user code runs while it is held, so a poisoned lock (a panic inside the bus itself) still
    /// holds a consistent state; it is taken as it is rather than making every later call fail.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the provider receiving into this hub, once.
    pub(crate) fn start(self: &Arc<Self>) -> Result<(), BusError> {
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        if !*started {
            self.provider.start(Arc::new(HubSink(Arc::downgrade(self))))?;
            *started = true;
        }
        Ok(())
    }

    /// Whether `s`'s queue keeps everything whatever its capacity: a byte-level callback subscription on a
    /// provider whose publications wait for `handle()` ([`Provider::holds_until_handled`], memq), as LCM's own
    /// callback subscriptions are (asked only once a queue is full, so other buses pay nothing for it).
    fn holds_all(&self, s: &Entry) -> bool {
        matches!(s.kind, Kind::Callback { .. }) && s.typed.is_none() && self.provider.holds_until_handled()
    }

    /// Offers `item` to subscription `i`'s queue, applying its full-queue policy.
    fn enqueue(&self, st: &mut State, i: usize, arrival: u64, item: Item, wake: &mut Wake) -> Pushed {
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
                plan.groups.push(DecodeGroup { ops: t.ops, members: vec![target] });
            }
        }
        plan
    }

    /// Pushes the planned items (and, to every matching byte-level subscription, `received`) into the queues, as
    /// one arrival. `decode_failed` are typed subscriptions the bytes did not decode for. `publisher` is the typed
    /// publisher's id and the copies it took, for its stats.
    fn commit(
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
    pub(crate) fn route_bytes(&self, channel: Cow<'_, str>, data: Cow<'_, [u8]>, recv_utime: i64, origin: Origin) {
        {
            let mut st = self.lock();
            let matching = st.matching(&channel);
            if matching.is_empty() {
                st.unmatched += 1;
                return;
            }
            if matching.iter().all(|&i| st.subs[i].typed.is_none()) {
                let received =
                    Arc::new(Received { channel: channel.into_owned(), data: data.into_owned(), recv_utime, origin });
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
            erased::decode_group(g, &data, &mut items, &mut failed);
        }
        if items.is_empty() && failed.is_empty() && !plan.byte_subs {
            return;
        }
        let received = plan
            .byte_subs
            .then(|| Arc::new(Received { channel: channel.to_string(), data: data.into_owned(), recv_utime, origin }));
        self.commit(&channel, items, received, &failed, None);
    }

    /// Publishes one message: delivers it to this bus's own subscriptions first, then hands `wire` (its encoding)
    /// to the transport if the transport can reach anyone outside this bus. Raw and typed publishing both come
    /// here, so they agree on that order. A transport error is returned after the in-process delivery happened.
    pub(crate) fn publish(&self, channel: &str, local: Local<'_>, wire: Option<&[u8]>) -> Result<Committed, BusError> {
        let done = match local {
            Local::Bytes(data) => {
                self.deliver_bytes(channel, data, nerve_codec::now_utime());
                Committed::default()
            }
            Local::Typed(p) => self.commit(channel, p.items, p.received, &p.failed, Some(p.publisher)),
        };
        self.wake_local_dispatch();
        if let Some(bytes) = wire {
            if self.provider.leaves_process() {
                self.provider.publish(channel, bytes)?;
            }
        }
        Ok(done)
    }

    /// Delivers bytes published through this bus to its own subscriptions only (the in-process half of
    /// [`Hub::publish`], for a batch whose sends the caller makes at once).
    pub(crate) fn deliver_bytes(&self, channel: &str, data: &[u8], recv_utime: i64) {
        self.route_bytes(Cow::Borrowed(channel), Cow::Borrowed(data), recv_utime, Origin::Local);
    }

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
