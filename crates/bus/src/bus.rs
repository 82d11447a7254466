//! [`Bus`]: subscriptions, their queues, and dispatch.
//!
//! Every subscription has its own bounded queue. A message that arrives is matched against the subscriptions
//! (results cached per channel), shared by reference among the queues that match (no copy per subscription), and
//! when a queue is full the oldest message in it goes by default (the newest sample wins), or the newest if the
//! subscription asked for that; either way the drop is counted in its [`SubscriptionStats`].
//!
//! Callback subscriptions are drained by `handle()`: one call dispatches the oldest waiting message to every callback
//! subscription that has it, in subscription order, as LCM does. Handlers run with no bus lock held, so they may
//! publish, subscribe and unsubscribe (themselves or others); a subscription removed during a dispatch is skipped
//! for the rest of it. Queue subscriptions ([`Subscriber`]) are drained by their owner instead.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::task::Waker;
use std::time::{Duration, Instant};

use nerve_codec::Message;
use nix::sys::eventfd::{EfdFlags, EventFd};

use crate::error::{BusError, TypeError};
use crate::pattern::Pattern;
use crate::provider::{self, Incoming, Provider, ProviderStats, Sink};
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
        let found = nerve_codec::fingerprint_of(&self.data);
        if found != Some(M::FINGERPRINT) {
            return Err(TypeError::WrongType { expected: M::TYPE_NAME, expected_fingerprint: M::FINGERPRINT, found });
        }
        M::decode(&self.data).map_err(TypeError::Decode)
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
    /// Messages dropped because the queue was full.
    pub dropped_overflow: u64,
    /// Messages a typed subscription could not decode (wrong type or corrupt).
    pub decode_errors: u64,
}

type Handler = Box<dyn FnMut(&Received) -> Result<(), TypeError> + Send>;

enum Kind {
    Callback { handler: Arc<Mutex<Handler>>, active: Arc<AtomicBool> },
    Queue { cond: Arc<Condvar>, waker: Option<Waker> },
}

struct Entry {
    id: u64,
    pattern: Pattern,
    queue: VecDeque<(u64, Arc<Received>)>,
    capacity: usize,
    overflow: Overflow,
    stats: SubscriptionStats,
    kind: Kind,
}

#[derive(Default)]
struct State {
    subs: Vec<Entry>,
    /// channel -> indices into `subs` of the subscriptions it matches; cleared when `subs` changes.
    cache: HashMap<String, Vec<usize>>,
    next_id: u64,
    arrivals: u64,
    /// Messages queued in callback subscriptions: the fd is readable while this is above 0.
    pending: usize,
    unmatched: u64,
}

struct Core {
    provider: Box<dyn Provider>,
    started: Mutex<bool>,
    state: Mutex<State>,
    ready: Condvar,
    notify: EventFd,
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
    core: Arc<Core>,
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
}

struct CoreSink(Weak<Core>);

impl Sink for CoreSink {
    fn deliver(&self, msg: Incoming) {
        if let Some(core) = self.0.upgrade() {
            core.deliver(msg);
        }
    }

    fn drained(&self) -> bool {
        self.0.upgrade().is_some_and(|core| core.dispatch_inline())
    }
}

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

    fn set_readable(&self, readable: bool) {
        // The eventfd is a level: written once when the first message waits, drained when none is left.
        if readable {
            let _ = self.notify.write(1);
        } else {
            let _ = self.notify.read();
        }
    }

    fn deliver(&self, msg: Incoming) {
        let mut st = self.lock();
        st.arrivals += 1;
        let arrival = st.arrivals;
        let matching = match st.cache.get(&msg.channel) {
            Some(m) => m.clone(),
            None => {
                let m: Vec<usize> = st
                    .subs
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| {
                        s.pattern.matches(&msg.channel)
                            && (msg.channel != SELF_TEST_CHANNEL || s.pattern.literal() == Some(SELF_TEST_CHANNEL))
                    })
                    .map(|(i, _)| i)
                    .collect();
                st.cache.insert(msg.channel.clone(), m.clone());
                m
            }
        };
        if matching.is_empty() {
            st.unmatched += 1;
            return;
        }
        let received = Arc::new(Received { channel: msg.channel, data: msg.data, recv_utime: msg.recv_utime });
        let mut added_callback = 0usize;
        let mut removed_callback = 0usize;
        for i in matching {
            let s = &mut st.subs[i];
            s.stats.received += 1;
            let full = s.capacity > 0 && s.queue.len() >= s.capacity;
            if full {
                s.stats.dropped_overflow += 1;
                if s.overflow == Overflow::DropNewest {
                    continue;
                }
                s.queue.pop_front();
                if matches!(s.kind, Kind::Callback { .. }) {
                    removed_callback += 1;
                }
            }
            s.queue.push_back((arrival, Arc::clone(&received)));
            match &mut s.kind {
                Kind::Callback { .. } => added_callback += 1,
                Kind::Queue { cond, waker } => {
                    cond.notify_all();
                    if let Some(w) = waker.take() {
                        w.wake();
                    }
                }
            }
        }
        let was_empty = st.pending == 0;
        st.pending = st.pending + added_callback - removed_callback;
        if was_empty && st.pending > 0 {
            self.set_readable(true);
            self.ready.notify_all();
        }
    }

    /// Takes the oldest waiting message from every callback subscription that has it at the front.
    fn pop_next(&self, st: &mut State) -> Option<(Arc<Received>, Vec<(u64, Arc<Mutex<Handler>>, Arc<AtomicBool>)>)> {
        let oldest = st
            .subs
            .iter()
            .filter(|s| matches!(s.kind, Kind::Callback { .. }))
            .filter_map(|s| s.queue.front().map(|(a, _)| *a))
            .min()?;
        let mut msg = None;
        let mut targets = Vec::new();
        for s in st.subs.iter_mut() {
            let Kind::Callback { handler, active } = &s.kind else { continue };
            if s.queue.front().map(|(a, _)| *a) == Some(oldest) {
                let (_, m) = s.queue.pop_front().expect("front exists");
                s.stats.delivered += 1;
                targets.push((s.id, Arc::clone(handler), Arc::clone(active)));
                msg = Some(m);
            }
        }
        st.pending -= targets.len();
        if st.pending == 0 {
            self.set_readable(false);
        }
        msg.map(|m| (m, targets))
    }

    /// Runs the oldest waiting message's callbacks on this (the receive) thread, if a dispatcher asked for that;
    /// returns whether more are waiting.
    fn dispatch_inline(&self) -> bool {
        if self.inline_dispatchers.load(Ordering::Acquire) == 0 || IN_HANDLER.with(|f| f.get()) {
            return false;
        }
        self.dispatch_one() && self.lock().pending > 0
    }

    /// Dispatches the oldest waiting message, if there is one.
    fn dispatch_one(&self) -> bool {
        let _turn = self.dispatching.lock().expect("dispatch lock");
        let next = self.pop_next(&mut self.lock());
        match next {
            Some((msg, targets)) => {
                self.dispatch(&msg, targets);
                true
            }
            None => false,
        }
    }

    fn dispatch(&self, msg: &Received, targets: Vec<(u64, Arc<Mutex<Handler>>, Arc<AtomicBool>)>) {
        IN_HANDLER.with(|f| f.set(true));
        for (id, handler, active) in targets {
            // A subscription removed by an earlier handler of this same message is skipped, as in LCM 1.5.3.
            if !active.load(Ordering::Acquire) {
                continue;
            }
            let outcome = (handler.lock().expect("handler lock"))(msg);
            if outcome.is_err() {
                if let Some(s) = self.lock().subs.iter_mut().find(|s| s.id == id) {
                    s.stats.decode_errors += 1;
                }
            }
        }
        IN_HANDLER.with(|f| f.set(false));
    }

    fn remove(&self, id: u64) -> Result<(), BusError> {
        let mut st = self.lock();
        let i = st.subs.iter().position(|s| s.id == id).ok_or(BusError::NotSubscribed)?;
        let entry = st.subs.remove(i);
        st.cache.clear();
        if let Kind::Callback { active, .. } = &entry.kind {
            active.store(false, Ordering::Release);
            st.pending -= entry.queue.len();
            if st.pending == 0 {
                self.set_readable(false);
            }
        }
        Ok(())
    }

    fn add(
        self: &Arc<Self>,
        pattern: &str,
        kind: Kind,
        capacity: usize,
        overflow: Overflow,
    ) -> Result<u64, BusError> {
        let pattern = Pattern::new(pattern).map_err(BusError::Pattern)?;
        self.start()?;
        self.provider.subscribed(&pattern)?;
        let mut st = self.lock();
        st.next_id += 1;
        let id = st.next_id;
        st.subs.push(Entry {
            id,
            pattern,
            queue: VecDeque::new(),
            capacity,
            overflow,
            stats: SubscriptionStats::default(),
            kind,
        });
        st.cache.clear();
        Ok(id)
    }
}

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
            "memq" => Box::new(provider::memq::Memq::default()),
            other => return Err(BusError::UnknownProvider { provider: other.to_owned() }),
        };
        Ok(Bus::with_provider(provider))
    }

    /// A bus over a provider built elsewhere.
    pub fn with_provider(provider: Box<dyn Provider>) -> Bus {
        let notify = EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
            .expect("creating an eventfd (needs Linux 2.6.30+)");
        Bus {
            core: Arc::new(Core {
                provider,
                started: Mutex::new(false),
                state: Mutex::new(State::default()),
                ready: Condvar::new(),
                notify,
                dispatching: Mutex::new(()),
                inline_dispatchers: AtomicUsize::new(0),
            }),
        }
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

    /// Publishes raw bytes.
    pub fn publish_raw(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        self.core.provider.publish(channel, data)
    }

    /// Publishes a typed message.
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
        handler: impl FnMut(&Received) -> Result<(), TypeError> + Send + 'static,
    ) -> Result<Subscription, BusError> {
        let kind = Kind::Callback {
            handler: Arc::new(Mutex::new(Box::new(handler))),
            active: Arc::new(AtomicBool::new(true)),
        };
        let id = self.core.add(pattern, kind, capacity, overflow)?;
        Ok(Subscription { id, bus: Arc::downgrade(&self.core) })
    }

    /// Subscribes a queue that the caller drains with [`Subscriber::recv`] (or as an async stream).
    pub fn subscriber(&self, pattern: &str, capacity: usize, overflow: Overflow) -> Result<Subscriber, BusError> {
        let cond = Arc::new(Condvar::new());
        let kind = Kind::Queue { cond: Arc::clone(&cond), waker: None };
        let id = self.core.add(pattern, kind, capacity, overflow)?;
        Ok(Subscriber { id, core: Arc::clone(&self.core), cond })
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
            let st = self.core.lock();
            if st.pending > 0 {
                continue;
            }
            match deadline {
                None => drop(self.core.ready.wait(st).expect("bus state lock")),
                Some(d) => {
                    let Some(left) = d.checked_duration_since(Instant::now()).filter(|l| !l.is_zero()) else {
                        return Ok(false);
                    };
                    drop(self.core.ready.wait_timeout(st, left).expect("bus state lock"));
                }
            }
        }
    }

    /// A file descriptor that is readable while a message waits for `handle()`: for select, poll, epoll or a GUI
    /// event loop. It stays open as long as the bus does.
    pub fn fileno(&self) -> Result<RawFd, BusError> {
        self.core.start()?;
        Ok(self.core.notify.as_fd().as_raw_fd())
    }

    /// The same descriptor, borrowed.
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.core.notify.as_fd()
    }

    /// Dispatches callbacks in the background until the returned guard is dropped.
    ///
    /// On a transport with a receive thread of its own (udpm, mpudpm) the callbacks run ON that thread, as each
    /// message arrives: no hand-off to another thread, so no second wake-up per message (on a machine whose idle
    /// CPUs sleep, each wake-up costs tens of microseconds). Otherwise a dispatch thread runs `handle()`. Either
    /// way callbacks never run concurrently with each other or with `handle()` called elsewhere, and a slow
    /// callback delays reading the socket (the kernel buffer and the subscription queues absorb it).
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
        st.pending -= dropped;
        if st.pending == 0 {
            self.core.set_readable(false);
        }
        Ok(())
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

impl Subscriber {
    fn take(&self, st: &mut State) -> Option<Arc<Received>> {
        let s = st.subs.iter_mut().find(|s| s.id == self.id)?;
        let (_, m) = s.queue.pop_front()?;
        s.stats.delivered += 1;
        Some(m)
    }

    /// The next message, if one is waiting.
    pub fn try_recv(&self) -> Option<Arc<Received>> {
        self.take(&mut self.core.lock())
    }

    /// Waits for the next message.
    pub fn recv(&self) -> Arc<Received> {
        let mut st = self.core.lock();
        loop {
            if let Some(m) = self.take(&mut st) {
                return m;
            }
            st = self.cond.wait(st).expect("bus state lock");
        }
    }

    /// Waits up to `timeout` for the next message.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Arc<Received>> {
        let deadline = Instant::now() + timeout;
        let mut st = self.core.lock();
        loop {
            if let Some(m) = self.take(&mut st) {
                return Some(m);
            }
            let left = deadline.checked_duration_since(Instant::now()).filter(|l| !l.is_zero())?;
            st = self.cond.wait_timeout(st, left).expect("bus state lock").0;
        }
    }

    /// Counters of this subscription.
    pub fn stats(&self) -> SubscriptionStats {
        self.core.lock().subs.iter().find(|s| s.id == self.id).map(|s| s.stats).unwrap_or_default()
    }

    /// The messages as an async stream (it never ends while the bus lives).
    pub fn into_stream(self) -> MessageStream {
        MessageStream { sub: self }
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let _ = self.core.remove(self.id);
    }
}

/// A [`Subscriber`] as a `futures_core::Stream` of messages, for async code.
pub struct MessageStream {
    sub: Subscriber,
}

impl futures_core::Stream for MessageStream {
    type Item = Arc<Received>;

    fn poll_next(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Self::Item>> {
        let mut st = self.sub.core.lock();
        if let Some(m) = self.sub.take(&mut st) {
            return std::task::Poll::Ready(Some(m));
        }
        // Register the waker under the same lock `deliver` takes, so no message can slip in between.
        if let Some(s) = st.subs.iter_mut().find(|s| s.id == self.sub.id) {
            if let Kind::Queue { waker, .. } = &mut s.kind {
                *waker = Some(cx.waker().clone());
            }
        }
        std::task::Poll::Pending
    }
}
