//! [`Executor`]: threads that run subscription callbacks, each subscription one message at a time, different
//! subscriptions in parallel.
//!
//! `handle()` runs every callback of a bus on one thread, in arrival order: simple, and a slow callback delays all
//! the others. Subscriptions made through an executor are run by its threads instead (ROS 2's multi-threaded
//! executor with a mutually exclusive callback group per subscription): when a message is queued for such a
//! subscription, the subscription (not the message) is put on the executor's ready queue, unless it is there or
//! running already; a thread takes it, runs its handler on ONE message, and puts it back at the end of the ready
//! queue if more wait. So a subscription's messages are handled in order and never concurrently, every ready
//! subscription gets a turn in round-robin, and a slow handler occupies one thread while the others keep serving
//! the other subscriptions. The publisher only pushes into the subscription's queue and never waits for any of
//! this: a slow subscription's queue overflows by its own history policy.
//!
//! Dropping the executor stops and joins its threads; its subscriptions' messages then wait in their queues (drop
//! the subscriptions first, or keep the executor as long as they live).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::BusError;
use crate::hub::dispatch::{ReadyQueue, RunScheduled};

/// How often an idle executor thread looks up to see whether it should stop.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// A subscription ready to run: the hub it belongs to (reached through the hub's [`RunScheduled`]), and its id.
type Task = (Weak<dyn RunScheduled>, u64);

/// The ready queue the threads serve.
struct ExecShared {
    ready: Mutex<VecDeque<Task>>,
    cond: Condvar,
    stop: AtomicBool,
}

impl ReadyQueue for ExecShared {
    fn schedule(&self, hub: Weak<dyn RunScheduled>, id: u64) {
        // No user code runs under this lock (handlers run after `next` returns): a poisoned one is taken as it is.
        self.ready.lock().unwrap_or_else(PoisonError::into_inner).push_back((hub, id));
        self.cond.notify_one();
    }
}

impl ExecShared {
    fn next(&self) -> Option<Task> {
        let mut q = self.ready.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.stop.load(Ordering::Acquire) {
                return None;
            }
            if let Some(task) = q.pop_front() {
                return Some(task);
            }
            q = self.cond.wait_timeout(q, IDLE_POLL).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

/// A pool of threads running the callbacks of the subscriptions made through it (see the module doc).
pub struct Executor {
    shared: Arc<ExecShared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("threads", &self.threads.len()).finish()
    }
}

impl Executor {
    /// Starts `threads` threads (at least one), named `nerve-exec-N`.
    pub fn new(threads: usize) -> Result<Executor, BusError> {
        let shared = Arc::new(ExecShared {
            ready: Mutex::new(VecDeque::new()),
            cond: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let mut exec = Executor { shared, threads: Vec::new() };
        for n in 0..threads.max(1) {
            let shared = Arc::clone(&exec.shared);
            let t = std::thread::Builder::new()
                .name(format!("nerve-exec-{n}"))
                .spawn(move || {
                    while let Some((hub, id)) = shared.next() {
                        if let Some(hub) = hub.upgrade() {
                            hub.run_scheduled(id);
                        }
                    }
                })
                .map_err(|e| BusError::Transport { provider: "executor", source: Box::new(e) })?;
            exec.threads.push(t);
        }
        Ok(exec)
    }

    /// How many threads it runs.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Its ready queue, for subscriptions made through it.
    pub(crate) fn ready_queue(&self) -> Weak<dyn ReadyQueue> {
        let shared: Arc<dyn ReadyQueue> = self.shared.clone();
        Arc::downgrade(&shared)
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.cond.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
