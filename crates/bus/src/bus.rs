//! [`Bus`], [`Subscription`], [`Subscriber`], [`Dispatcher`]: the public front of the byte-level API, over
//! `crate::hub` (which owns the subscriptions, queues and dispatch; see its module doc for how a message travels).
//! Opening a bus looks its URL's scheme up in the provider registry (`crate::provider::registry`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use nerve_codec::Message;

use crate::error::{BatchError, BusError, TypeError};
use crate::hub::dispatch::Health;
use crate::hub::{Full, Handler, Hub, Item, Local, QueueHandle, Received, Runner, SubscriptionStats};
use crate::hub::{Overflow, DEFAULT_CAPACITY};
use crate::pattern::Pattern;
use crate::provider::{self, Provider, ProviderStats};
use crate::sys::{self, Handle, RawHandle};
use crate::url::Url;

/// The bus: publish and subscribe over the transport its URL names.
///
/// Cheap to clone (all clones share one transport and one set of subscriptions) and usable from any thread.
#[derive(Clone)]
pub struct Bus {
    pub(crate) hub: Arc<Hub>,
}

/// A callback subscription, for [`Bus::unsubscribe`] and its stats. Dropping it does not unsubscribe (as in LCM).
#[derive(Debug, Clone)]
pub struct Subscription {
    id: u64,
    bus: Weak<Hub>,
}

impl Subscription {
    pub(crate) fn new(id: u64, hub: &Arc<Hub>) -> Subscription {
        Subscription { id, bus: Arc::downgrade(hub) }
    }

    /// Removes this subscription (the same as [`Bus::unsubscribe`]).
    pub fn unsubscribe(&self) -> Result<(), BusError> {
        self.bus.upgrade().ok_or(BusError::NotSubscribed)?.remove(self.id)
    }
}

/// A queue subscription: messages wait in its queue until taken with [`Subscriber::recv`] (or as an async stream).
/// Dropping it unsubscribes.
pub struct Subscriber {
    id: u64,
    hub: Arc<Hub>,
    cond: Arc<Condvar>,
}

/// Process-wide buses (`inproc://NAME`) by scheme and name: every `Bus::new` of the same name shares one bus, so
/// components built apart still find each other (ROS 2's process-wide context). See [`Provider::domain`].
static DOMAINS: Mutex<Vec<(&'static str, String, Weak<Hub>)>> = Mutex::new(Vec::new());

impl Bus {
    /// A bus on `url`; with `None`, on `NERVE_URL`, then `LCM_DEFAULT_URL`, then `udpm://239.255.76.67:7667?ttl=0`.
    ///
    /// The URL's scheme names a provider registered with [`provider::register`] (the built-ins are); an option the
    /// provider does not know is [`BusError::UnknownOption`].
    pub fn new(url: Option<&str>) -> Result<Bus, BusError> {
        let text = match url {
            Some(u) if !u.is_empty() => u.to_owned(),
            _ => Url::from_env(),
        };
        let url = Url::parse(&text).map_err(BusError::Url)?;
        let provider = provider::registry::open(&url)?;
        Ok(match provider.domain().map(str::to_owned) {
            Some(name) => Bus::domain(provider, &name),
            None => Bus::with_provider(provider),
        })
    }

    /// The process-wide bus of `provider`'s scheme called `name` (`inproc://NAME`): the one open already, or a new
    /// one over `provider`.
    fn domain(provider: Box<dyn Provider>, name: &str) -> Bus {
        let mut domains = DOMAINS.lock().unwrap_or_else(PoisonError::into_inner);
        domains.retain(|(_, _, w)| w.strong_count() > 0);
        let scheme = provider.name();
        if let Some(hub) = domains.iter().find(|(s, n, _)| *s == scheme && n == name).and_then(|(_, _, w)| w.upgrade())
        {
            return Bus { hub };
        }
        let bus = Bus::with_provider(provider);
        domains.push((scheme, name.to_owned(), Arc::downgrade(&bus.hub)));
        bus
    }

    /// A bus over a provider built elsewhere.
    pub fn with_provider(provider: Box<dyn Provider>) -> Bus {
        Bus { hub: Hub::new(provider) }
    }

    /// Whether `other` is this same bus (a clone of it, or the same `inproc://` name).
    pub fn same_bus(&self, other: &Bus) -> bool {
        Arc::ptr_eq(&self.hub, &other.hub)
    }

    /// The transport's name, e.g. `udpm`.
    pub fn provider_name(&self) -> &'static str {
        self.hub.provider.name()
    }

    /// The transport's counters.
    pub fn provider_stats(&self) -> ProviderStats {
        self.hub.provider.stats()
    }

    /// What went wrong outside any call: transport errors after start, whether receiving stopped for good, handler
    /// panics caught on dispatcher and executor threads. (Each transport error is also returned once by a later
    /// [`Bus::handle`] / [`Bus::handle_timeout`].)
    pub fn health(&self) -> Health {
        self.hub.health()
    }

    /// Writes out what the transport buffers (`file://` in mode w or a: the log's buffer), so that an error doing
    /// so is seen; dropping the bus flushes too, but can tell no one of a failure.
    pub fn flush(&self) -> Result<(), BusError> {
        self.hub.provider.flush()
    }

    /// Messages that arrived with no subscription to match them.
    pub fn unmatched(&self) -> u64 {
        self.hub.unmatched()
    }

    /// Publishes raw bytes: to this bus's own matching subscriptions directly (typed ones get the decoded value),
    /// then through the transport when it can reach another process. A transport error is returned after the
    /// in-process delivery happened.
    pub fn publish_raw(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        self.hub.publish(channel, Local::Bytes(data), Some(data)).map(|_| ())
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
        // The sends first, here only: which messages a loop of publish_raw would have delivered in-process (up to
        // and including the one whose send failed) is known only once the transport has had the batch. The
        // outcome is the loop's.
        let result = if self.hub.provider.leaves_process() { self.hub.provider.publish_batch(batch) } else { Ok(()) };
        let reached = match &result {
            Ok(()) => batch.len(),
            Err(e) => (e.sent + 1).min(batch.len()),
        };
        // One clock read for the batch: its messages are published at one instant.
        let now = nerve_codec::now_utime();
        for &(channel, data) in &batch[..reached] {
            self.hub.deliver_bytes(channel, data, now);
        }
        self.hub.wake_local_dispatch();
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
        let id = self.hub.add(pattern, Runner::Callback(handler), capacity, Full::from(overflow), None)?;
        Ok(Subscription::new(id, &self.hub))
    }

    /// Subscribes a queue that the caller drains with [`Subscriber::recv`] (or as an async stream).
    pub fn subscriber(&self, pattern: &str, capacity: usize, overflow: Overflow) -> Result<Subscriber, BusError> {
        let pattern = Pattern::new(pattern).map_err(BusError::Pattern)?;
        let cond = Arc::new(Condvar::new());
        let id = self.hub.add(pattern, Runner::Queue(Arc::clone(&cond)), capacity, Full::from(overflow), None)?;
        Ok(Subscriber { id, hub: Arc::clone(&self.hub), cond })
    }

    /// Removes a callback subscription; safe from inside any handler.
    pub fn unsubscribe(&self, sub: &Subscription) -> Result<(), BusError> {
        self.hub.remove(sub.id)
    }

    /// Waits for one message and dispatches it to every callback subscription it is queued for.
    ///
    /// On udpm a caller that finds nothing queued reads the socket itself while it waits, so the message's callbacks
    /// run without a hand-off from the receive thread (one wake-up per message instead of two); the receive thread
    /// reads again, into the queues, once no caller has waited here for a short grace period.
    ///
    /// Returns [`BusError::HandlerPanicked`] when a handler panicked (the message's other handlers still ran; the
    /// bus stays usable), and a transport error reported since the last call (e.g. the receive thread stopped; see
    /// [`Bus::health`]).
    pub fn handle(&self) -> Result<(), BusError> {
        self.hub.handle_until(None).map(|_| ())
    }

    /// Like [`Bus::handle`], waiting at most `timeout`; `Ok(false)` when nothing arrived in time.
    pub fn handle_timeout(&self, timeout: Duration) -> Result<bool, BusError> {
        self.hub.handle_until(Some(Instant::now() + timeout))
    }

    /// A file descriptor that is readable while a message waits for `handle()`: for select, poll, epoll or a GUI
    /// event loop. It stays open as long as the bus does. (The bus keeps it up to date only from the first call of
    /// this or [`Bus::as_fd`] on, so programs that never poll it pay no system call per message for it.) On Windows
    /// it is a socket (`RawSocket`), for select or `WSAPoll`, as LCM's `lcm_get_fileno` is there.
    pub fn fileno(&self) -> Result<RawHandle, BusError> {
        self.hub.start()?;
        Ok(sys::raw(self.as_fd()))
    }

    /// The same descriptor, borrowed (a `BorrowedFd` on Unix, a `BorrowedSocket` on Windows).
    pub fn as_fd(&self) -> Handle<'_> {
        self.hub.fd()
    }

    /// Dispatches callbacks in the background until the returned guard is dropped.
    ///
    /// On a transport with a receive thread of its own (udpm, mpudpm) the callbacks run ON that thread, as each
    /// message arrives: no hand-off to another thread, so no second wake-up per message (on a machine whose idle
    /// CPUs sleep, each wake-up costs tens of microseconds). Otherwise a dispatch thread runs `handle()`. Either
    /// way callbacks never run concurrently with each other or with `handle()` called elsewhere, and a slow
    /// callback delays reading the socket (the kernel buffer and the subscription queues absorb it). For callbacks
    /// that must not wait for each other, subscribe them on an [`Executor`](crate::Executor) instead. A handler's
    /// panic, or a transport error, has no caller to go to here: it is counted in [`Bus::health`].
    pub fn spawn_dispatcher(&self) -> Result<Dispatcher, BusError> {
        self.hub.start()?;
        if self.hub.provider.has_receive_thread() {
            let local = if self.hub.provider.drains_after_own_publications() {
                None
            } else {
                Some(LocalDispatch::spawn(&self.hub)?)
            };
            self.hub.add_inline_dispatcher();
            return Ok(Dispatcher { mode: DispatchMode::Inline { hub: Arc::clone(&self.hub), local } });
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (bus, flag) = (self.clone(), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("nerve-dispatch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    // Errors are in the bus's health (there is no caller to return them to).
                    let _ = bus.handle_timeout(Duration::from_millis(50));
                }
            })
            .map_err(|e| BusError::Transport { provider: "dispatch", source: Box::new(e) })?;
        Ok(Dispatcher { mode: DispatchMode::Thread { stop, thread: Some(thread) } })
    }

    /// Counters of a subscription.
    pub fn stats(&self, sub: &Subscription) -> Result<SubscriptionStats, BusError> {
        self.hub.stats(sub.id)
    }

    /// Messages waiting in a subscription's queue.
    pub fn queue_len(&self, sub: &Subscription) -> Result<usize, BusError> {
        self.hub.queue_len(sub.id)
    }

    /// Changes a subscription's queue capacity (0 = unbounded). Messages already queued beyond it are dropped
    /// oldest first and counted.
    pub fn set_queue_capacity(&self, sub: &Subscription, capacity: usize) -> Result<(), BusError> {
        self.hub.set_queue_capacity(sub.id, capacity)
    }
}

/// Background dispatch; dropping it stops it (and joins its thread, if it has one).
pub struct Dispatcher {
    mode: DispatchMode,
}

enum DispatchMode {
    /// Callbacks run on the provider's receive threads (and those of in-process deliveries on `local`, when the
    /// receive threads never see them).
    Inline { hub: Arc<Hub>, local: Option<LocalDispatch> },
    /// Callbacks run on a thread of their own that calls `handle()`.
    Thread { stop: Arc<AtomicBool>, thread: Option<std::thread::JoinHandle<()>> },
}

impl Dispatcher {
    /// Whether callbacks run on the transport's receive thread (rather than on a dispatch thread).
    pub fn is_inline(&self) -> bool {
        matches!(self.mode, DispatchMode::Inline { .. })
    }
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        match &mut self.mode {
            DispatchMode::Inline { hub, local } => {
                hub.remove_inline_dispatcher();
                if let Some(local) = local.take() {
                    local.stop(hub);
                }
            }
            DispatchMode::Thread { stop, thread } => {
                stop.store(true, Ordering::Relaxed);
                if let Some(t) = thread.take() {
                    join_unless_current(t);
                }
            }
        }
    }
}

/// The thread of an inline dispatcher on a provider whose receive threads never see this bus's own publications
/// (zenoh): it runs the callbacks of in-process deliveries, woken by [`Hub::wake_local_dispatch`]. What arrives
/// from the transport is still run on the transport's threads, as it arrives.
struct LocalDispatch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl LocalDispatch {
    fn spawn(hub: &Arc<Hub>) -> Result<LocalDispatch, BusError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (hub, flag) = (Arc::clone(hub), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("nerve-dispatch-local".into())
            .spawn(move || hub.run_local_dispatch(&flag))
            .map_err(|e| BusError::Transport { provider: "dispatch", source: Box::new(e) })?;
        Ok(LocalDispatch { stop, thread })
    }

    fn stop(self, hub: &Hub) {
        hub.stop_local_dispatch(&self.stop);
        join_unless_current(self.thread);
    }
}

/// Joins a dispatcher's thread, unless this is that thread: a handler it runs may drop the `Dispatcher`, and a thread
/// joining itself fails (EDEADLK, which std turns into a panic). It stops on its own once its handler returns.
fn join_unless_current(thread: std::thread::JoinHandle<()>) {
    if thread.thread().id() != std::thread::current().id() {
        let _ = thread.join();
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
        QueueHandle { id: self.id, hub: &self.hub, cond: &self.cond }
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
