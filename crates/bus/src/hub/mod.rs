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
//! Its files follow those seams: `values` (the public value types), `table` (the subscription table), `queue` (the
//! queues), `route` (the way into them), `sink` (where the provider delivers). `dispatch` runs the callbacks;
//! `crate::bus`, `crate::typed` and `crate::executor` are the public front over this module, which knows none of
//! them (an executor reaches it through `dispatch::ReadyQueue`).

mod copies;
pub(crate) mod dispatch;
pub(crate) mod erased;
mod queue;
mod route;
mod sink;
mod table;
mod values;

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

use crate::error::BusError;
use crate::provider::Provider;
use crate::sys::Notify;

pub(crate) use copies::{distribute, Msg};
use dispatch::{Health, ReadyQueue};
pub(crate) use erased::{decode_as, Ops, TypedInfo};
pub use erased::{PublisherStats, Take};
pub(crate) use queue::{Full, Handler, Item, QueueHandle};
use queue::{Pushed, Queued};
pub(crate) use route::{DecodeGroup, Local, Prepared, Target};
use sink::HubSink;
pub(crate) use table::{unsupported, Runner};
use table::{Entry, Kind, State};
pub use values::{Origin, Overflow, Received, SubscriptionStats, DEFAULT_CAPACITY};

/// The hub of one bus: its transport, subscriptions, queues and dispatch state.
pub(crate) struct Hub {
    pub(crate) provider: Box<dyn Provider>,
    me: Weak<Hub>,
    started: Mutex<bool>,
    state: Mutex<State>,
    ready: Condvar,
    notify: Notify,
    /// Whether the descriptor has been handed out (`fileno`, `as_fd`). Until it is, nobody can poll it, so it is not
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

/// Work to do once the state lock is released.
#[derive(Default)]
struct Wake {
    /// Executor subscriptions that became ready.
    schedule: Vec<(Arc<dyn ReadyQueue>, u64)>,
}

impl Hub {
    /// A hub over `provider`; nothing starts until the first subscription, `handle` or `fileno`.
    pub(crate) fn new(provider: Box<dyn Provider>) -> Arc<Hub> {
        let notify = Notify::new().expect("creating the bus's notification descriptor (an eventfd on Linux)");
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

    fn finish(&self, wake: Wake) {
        for (exec, id) in wake.schedule {
            exec.schedule(self.me.clone(), id);
        }
    }
}
