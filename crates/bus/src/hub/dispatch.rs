//! Dispatch: running callbacks off the hub's queues. `handle_until` (behind `Bus::handle` / `handle_timeout`), the
//! in-handler guard, the descriptor that is readable while callbacks wait, the turns of callbacks a dispatcher runs on
//! a provider's receive thread (`dispatch_inline`), the executor's scheduled runs, and [`Health`]: what went wrong
//! outside any call (a transport error after start, a receive thread that stopped, a handler that panicked).
//!
//! Callback subscriptions are drained by `handle()`: one call dispatches the oldest waiting message to every callback
//! subscription that has it, in subscription order, as LCM does. Handlers run with no bus lock held, so they may
//! publish, subscribe and unsubscribe (themselves or others); a subscription removed during a dispatch is skipped
//! for the rest of it. Subscriptions made on an executor are run by its threads instead, one message at a time per
//! subscription, so a slow one holds up only itself.
//!
//! **Panics.** A handler that panics is caught here (`catch_unwind`) on every path: the rest of that message's
//! handlers still run, the in-handler flag is restored by a guard, no lock is held across the handler (so none is
//! poisoned), and the panic comes back as [`BusError::HandlerPanicked`] from the `handle()` that ran it (on a
//! dispatcher or executor thread, where no caller waits, it is counted in [`Health`]). A C or Python binding can
//! therefore raise it as an ordinary error, and the bus stays usable from every thread.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::{Handler, Hub, Item, Kind, Queued, State};
use crate::error::{BusError, TypeError};
use crate::sys::Handle;

/// How many transport errors wait for the next `handle()` at most (more are counted in [`Health`] only).
const FAULTS_KEPT: usize = 16;

/// What went wrong with a bus outside any call that could return it: [`crate::Bus::health`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    /// Whether the transport stopped receiving for good (its receive thread ended on an error): nothing more will
    /// arrive. The error was also returned by the next `handle()`.
    pub receive_stopped: bool,
    /// Errors the transport reported after it started (each also returned once by a later `handle()` or
    /// `handle_timeout()`, up to 16 waiting).
    pub transport_errors: u64,
    /// Handlers that panicked (caught; the bus went on).
    pub handler_panics: u64,
    /// The most recent of those errors and panics, as text.
    pub last_error: Option<String>,
}

/// Runs scheduled subscriptions: what an executor's thread calls on a hub.
pub(crate) trait RunScheduled: Send + Sync {
    /// Runs one waiting message of subscription `id`, then reschedules it if more wait.
    fn run_scheduled(&self, id: u64);
}

/// An executor's ready queue, as the hub sees it: where a subscription goes when a message arrives for it.
pub(crate) trait ReadyQueue: Send + Sync {
    /// Puts subscription `id` of `hub` on the ready queue (the caller has marked it scheduled).
    fn schedule(&self, hub: Weak<dyn RunScheduled>, id: u64);
}

thread_local! {
    static IN_HANDLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// When this (receive) thread last came back from running callbacks in `Sink::drained`: the time since is what
    /// it spent on its transport, and the callbacks' next turn may be as long.
    static INLINE_TURN_ENDED: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Marks this thread as running handlers until dropped, even by a panic's unwinding.
struct InHandler(bool);

impl InHandler {
    fn enter() -> InHandler {
        InHandler(IN_HANDLER.with(|f| f.replace(true)))
    }
}

impl Drop for InHandler {
    fn drop(&mut self) {
        IN_HANDLER.with(|f| f.set(self.0));
    }
}

/// One callback to run in a dispatch: the subscription's id, its handler, whether it is still subscribed, the message.
type PendingCall = (u64, Arc<Mutex<Handler>>, Arc<AtomicBool>, Item);

/// Runs `handler` on `item`, catching a panic. The handler's lock is taken outside the catch, so a panic does not
/// poison it (and a lock poisoned anyway is taken as it is: the handler's state is the user's).
fn run_handler(handler: &Mutex<Handler>, item: Item) -> std::thread::Result<Result<(), TypeError>> {
    let mut h = handler.lock().unwrap_or_else(PoisonError::into_inner);
    catch_unwind(AssertUnwindSafe(|| (h)(item)))
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "(a panic without a message)".to_owned(),
    }
}

impl Hub {
    /// Called with the state lock held, so it is ordered with `expose_fd`.
    pub(super) fn set_readable(&self, readable: bool) {
        // The descriptor is a level: raised once when the first message waits, lowered when none is left.
        if !self.fd_in_use.load(Ordering::Relaxed) {
            return;
        }
        if readable {
            self.notify.raise();
        } else {
            self.notify.lower();
        }
    }

    /// The descriptor, kept readable exactly while callbacks wait from now on (it was not kept before anyone asked).
    pub(crate) fn fd(&self) -> Handle<'_> {
        if !self.fd_in_use.load(Ordering::Relaxed) {
            let st = self.lock();
            self.fd_in_use.store(true, Ordering::Relaxed);
            if st.pending > 0 {
                self.set_readable(true);
            }
        }
        self.notify.handle()
    }

    /// Dispatches one message, waiting until `deadline` (forever with `None`) for one; `Ok(false)` if none came.
    /// A transport error reported since the last call, or a panic of a handler it ran, is returned as the error.
    pub(crate) fn handle_until(self: &Arc<Self>, deadline: Option<Instant>) -> Result<bool, BusError> {
        if IN_HANDLER.with(|f| f.get()) {
            return Err(BusError::HandleInsideHandler);
        }
        self.start()?;
        loop {
            if let Some(fault) = self.take_fault() {
                return Err(fault);
            }
            if let Some(outcome) = self.dispatch_one() {
                return outcome.map(|()| true);
            }
            let mut st = self.lock();
            if st.pending > 0 || !st.faults.is_empty() {
                continue;
            }
            if self.may_receive_here() {
                drop(st);
                // Read the transport on this thread rather than wait for the receive thread to wake it.
                if self.provider.receive_here(deadline, &|| self.has_work()) {
                    if !self.has_work() && deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(false);
                    }
                    continue;
                }
                st = self.lock();
                if st.pending > 0 || !st.faults.is_empty() {
                    continue;
                }
                // Taken by the receive thread (or another caller): wait for what it delivers, or for it to let go
                // (`Sink::reader_free` wakes us under this lock), whichever comes first.
                if self.provider.receive_here_free() {
                    continue;
                }
            }
            st.handle_waiters += 1;
            st = match deadline {
                None => self.ready.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some(d) => match d.checked_duration_since(Instant::now()).filter(|l| !l.is_zero()) {
                    Some(left) => self.ready.wait_timeout(st, left).unwrap_or_else(PoisonError::into_inner).0,
                    None => {
                        st.handle_waiters -= 1;
                        return Ok(false);
                    }
                },
            };
            st.handle_waiters -= 1;
        }
    }

    /// Whether a `handle()` caller may read the transport itself (`Provider::receive_here`): not while callbacks
    /// run on the receive thread (an inline dispatcher), and not once the descriptor is handed out, whose users
    /// wait on it rather than in `handle()` and need the receive thread to keep it up to date.
    fn may_receive_here(&self) -> bool {
        !self.fd_in_use.load(Ordering::Relaxed) && self.inline_dispatchers.load(Ordering::Relaxed) == 0
    }

    /// Wakes the `handle()` callers that wait, so that they look again (the transport they read themselves is free).
    pub(super) fn wake_handle_waiters(&self) {
        let st = self.lock();
        if st.handle_waiters > 0 {
            self.ready.notify_all();
        }
    }

    /// Whether a message or an error waits for `handle()`.
    fn has_work(&self) -> bool {
        let st = self.lock();
        st.pending > 0 || !st.faults.is_empty()
    }

    /// The oldest transport error waiting for a `handle()`, if any (cheap when there is none).
    fn take_fault(&self) -> Option<BusError> {
        if !self.has_faults.load(Ordering::Acquire) {
            return None;
        }
        let mut st = self.lock();
        let fault = st.faults.pop_front();
        self.has_faults.store(!st.faults.is_empty(), Ordering::Release);
        fault
    }

    /// Records an error the transport reported after start (`receive_stopped`: its receive thread ended), for
    /// `health()` and the next `handle()`, and wakes whoever waits in `handle()`.
    pub(super) fn report(&self, error: BusError, receive_stopped: bool) {
        let mut st = self.lock();
        st.health.transport_errors += 1;
        st.health.receive_stopped |= receive_stopped;
        st.health.last_error = Some(error_chain(&error));
        if st.faults.len() >= FAULTS_KEPT {
            st.faults.pop_front();
        }
        st.faults.push_back(error);
        self.has_faults.store(true, Ordering::Release);
        self.ready.notify_all();
    }

    /// What went wrong so far.
    pub(crate) fn health(&self) -> Health {
        self.lock().health.clone()
    }

    /// Records a handler's panic in the health and makes the error that reports it.
    fn handler_panicked(&self, id: u64, payload: &(dyn std::any::Any + Send)) -> BusError {
        let mut st = self.lock();
        let subscription = st
            .entry(id)
            .map(|s| s.typed.as_ref().map_or_else(|| s.pattern.as_str().to_owned(), |t| t.channel.clone()))
            .unwrap_or_default();
        let error = BusError::HandlerPanicked { subscription, message: panic_message(payload) };
        st.health.handler_panics += 1;
        st.health.last_error = Some(error.to_string());
        error
    }

    /// Takes the oldest waiting message from every callback subscription that has it at the front.
    fn pop_next(&self, st: &mut State) -> Option<Vec<PendingCall>> {
        let oldest = st
            .subs
            .iter()
            .filter(|s| matches!(s.kind, Kind::Callback { .. }))
            .filter_map(|s| s.queue.front().map(|q| q.arrival))
            .min()?;
        let mut targets = Vec::new();
        for s in st.subs.iter_mut() {
            let Kind::Callback { handler, active } = &s.kind else { continue };
            if s.queue.front().map(|q| q.arrival) == Some(oldest) {
                let Queued { item, .. } = s.queue.pop_front().expect("front exists");
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

    /// A dispatcher now runs callbacks on the provider's receive thread.
    pub(crate) fn add_inline_dispatcher(&self) {
        self.inline_dispatchers.fetch_add(1, Ordering::AcqRel);
    }

    /// A dispatcher on the receive thread stopped.
    pub(crate) fn remove_inline_dispatcher(&self) {
        self.inline_dispatchers.fetch_sub(1, Ordering::AcqRel);
    }

    /// Wakes the threads of inline dispatchers that run in-process deliveries (see `bus::LocalDispatch`) after this
    /// bus delivered a publication of its own, if a callback now waits. Costs one atomic load on every other bus.
    pub(crate) fn wake_local_dispatch(&self) {
        if self.local_dispatchers.load(Ordering::Acquire) == 0 {
            return;
        }
        let st = self.lock();
        if st.pending > 0 {
            self.local_ready.notify_all();
        }
    }

    /// The loop of an inline dispatcher's thread for in-process deliveries: runs every waiting message's callbacks
    /// (one waiting from before it started too), then sleeps until [`Hub::wake_local_dispatch`] or
    /// [`Hub::stop_local_dispatch`]. Handlers' panics are counted in the health.
    pub(crate) fn run_local_dispatch(&self, stop: &AtomicBool) {
        // Counted from here: a publication made before this thread ran needs no wake, as the loop below starts by
        // running what waits.
        self.local_dispatchers.fetch_add(1, Ordering::AcqRel);
        loop {
            while self.dispatch_one().is_some() {}
            let st = self.lock();
            if stop.load(Ordering::Acquire) {
                self.local_dispatchers.fetch_sub(1, Ordering::AcqRel);
                return;
            }
            if st.pending == 0 {
                drop(self.local_ready.wait(st).unwrap_or_else(PoisonError::into_inner));
            }
        }
    }

    /// Stops the thread running [`Hub::run_local_dispatch`] with `stop` (the caller then joins it).
    pub(crate) fn stop_local_dispatch(&self, stop: &AtomicBool) {
        // Set and signalled under the state lock, which the thread holds from its check of `stop` to its wait.
        let _st = self.lock();
        stop.store(true, Ordering::Release);
        self.local_ready.notify_all();
    }

    /// Runs waiting messages' callbacks on this (the receive) thread, oldest first, if a dispatcher asked for that:
    /// at least one message's, and more for as long as the thread spent on its transport since its last such turn
    /// (so that under load it splits its time evenly between reading and callbacks). Returns whether more wait.
    /// A handler's panic is counted in the health (no caller waits here for an error).
    pub(super) fn dispatch_inline(&self) -> bool {
        if self.inline_dispatchers.load(Ordering::Acquire) == 0 || IN_HANDLER.with(|f| f.get()) {
            return false;
        }
        let start = Instant::now();
        let reading = INLINE_TURN_ENDED.with(|t| t.get()).map_or(Duration::ZERO, |ended| start - ended);
        let mut more = self.dispatch_one().is_some() && self.lock().pending > 0;
        while more && start.elapsed() < reading {
            more = self.dispatch_one().is_some() && self.lock().pending > 0;
        }
        INLINE_TURN_ENDED.with(|t| t.set(Some(Instant::now())));
        more
    }

    /// Dispatches the oldest waiting message, if there is one: `None` when none waits, else whether every handler
    /// returned (the first panic is the error).
    fn dispatch_one(&self) -> Option<Result<(), BusError>> {
        // Nothing runs user code under this lock's poisoning scope (handlers' panics are caught), but take it as it
        // is if it was poisoned anyway: it guards no data.
        let _turn = self.dispatching.lock().unwrap_or_else(PoisonError::into_inner);
        let targets = self.pop_next(&mut self.lock())?;
        Some(self.dispatch(targets))
    }

    fn dispatch(&self, targets: Vec<PendingCall>) -> Result<(), BusError> {
        let _in_handler = InHandler::enter();
        let mut panicked = None;
        for (id, handler, active, item) in targets {
            // A subscription removed by an earlier handler of this same message is skipped, as in LCM 1.5.3.
            if !active.load(Ordering::Acquire) {
                continue;
            }
            match run_handler(&handler, item) {
                Ok(Ok(())) => {}
                Ok(Err(_)) => self.count_decode_error(id),
                Err(payload) => {
                    let e = self.handler_panicked(id, payload.as_ref());
                    panicked.get_or_insert(e);
                }
            }
        }
        panicked.map_or(Ok(()), Err)
    }

    fn count_decode_error(&self, id: u64) {
        if let Some(s) = self.lock().entry(id) {
            s.stats.decode_errors += 1;
        }
    }

    /// Takes the next message of executor subscription `id` (which must be scheduled).
    fn exec_take(&self, id: u64) -> Option<(Item, Arc<Mutex<Handler>>, Arc<AtomicBool>)> {
        let mut st = self.lock();
        let s = st.entry(id)?;
        let Kind::Executor { handler, active, scheduled, .. } = &mut s.kind else { return None };
        match s.queue.pop_front() {
            Some(q) => {
                s.stats.delivered += 1;
                Some((q.item, Arc::clone(handler), Arc::clone(active)))
            }
            None => {
                *scheduled = false;
                None
            }
        }
    }
}

impl RunScheduled for Hub {
    /// Runs one message of executor subscription `id` on this (an executor's) thread, then puts the subscription
    /// back in the executor's ready queue if more are waiting. A panic is counted in the health.
    fn run_scheduled(&self, id: u64) {
        let Some((item, handler, active)) = self.exec_take(id) else { return };
        if active.load(Ordering::Acquire) {
            match run_handler(&handler, item) {
                Ok(Ok(())) => {}
                Ok(Err(_)) => self.count_decode_error(id),
                Err(payload) => drop(self.handler_panicked(id, payload.as_ref())),
            }
        }
        let again = {
            let mut st = self.lock();
            match st.entry(id) {
                Some(super::Entry { kind: Kind::Executor { exec, scheduled, .. }, queue, .. }) => {
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
}

/// An error with its sources, as one line.
fn error_chain(e: &BusError) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Faults waiting for `handle()`.
pub(super) type Faults = VecDeque<BusError>;
