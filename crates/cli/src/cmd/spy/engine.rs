//! The spy's receive side: one thread drains a queue subscription to every channel into the statistics [`Table`],
//! in batches, so the bus lock and the table lock are each taken once per batch rather than per message. The
//! display (terminal or `--once`) only ever locks the table, briefly, and never waits on the bus.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use nerve_bus::{Bus, Overflow, Received};

use super::decode::Types;
use super::stats::{Drops, Table};

/// The spy's queue: enough for a fraction of a second of a very busy bus should the counting thread
/// be descheduled, and bounded so a burst of large messages cannot take the machine's memory.
pub const QUEUE_CAPACITY: usize = 8192;

/// Messages taken from the queue before the table is updated.
const BATCH: usize = 4096;

/// The counting thread and the table it fills.
pub struct Engine {
    table: Arc<Mutex<Table>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Engine {
    /// Subscribes to `pattern` on `bus` with a queue of `capacity` messages (drop-oldest, drops counted) and starts
    /// counting.
    pub fn start(bus: &Bus, pattern: &str, capacity: usize, types: Arc<Types>) -> anyhow::Result<Engine> {
        let sub = bus.subscriber(pattern, capacity, Overflow::DropOldest).context("subscribing")?;
        let table = Arc::new(Mutex::new(Table::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (bus, t, s) = (bus.clone(), Arc::clone(&table), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("nerve-spy".into())
            .spawn(move || {
                let mut batch: Vec<Arc<Received>> = Vec::with_capacity(BATCH);
                let flush = |batch: &mut Vec<Arc<Received>>| {
                    let (q, p) = (sub.stats(), bus.provider_stats());
                    let mut table = lock(&t);
                    for m in batch.drain(..) {
                        table.record(m, &types);
                    }
                    table.drops = Drops {
                        queue_overflow: q.dropped_overflow,
                        transport_lost: p.lost + p.unseen.unwrap_or(0),
                        malformed: p.malformed,
                        kernel_dropped: p.kernel_dropped,
                    };
                };
                loop {
                    let stopping = s.load(Ordering::Acquire);
                    // When stopping, take only what is already queued (at most `capacity`), then end.
                    let first = if stopping { sub.try_recv() } else { sub.recv_timeout(Duration::from_millis(50)) };
                    batch.extend(first);
                    while batch.len() < BATCH {
                        match sub.try_recv() {
                            Some(m) => batch.push(m),
                            None => break,
                        }
                    }
                    let drained = batch.len() < BATCH;
                    flush(&mut batch);
                    if stopping && drained {
                        break;
                    }
                }
            })
            .context("starting the counting thread")?;
        Ok(Engine { table, stop, thread: Some(thread) })
    }

    /// The table, shared with the counting thread.
    pub fn table(&self) -> &Arc<Mutex<Table>> {
        &self.table
    }

    /// Counts what is already queued, stops the thread and returns the table.
    pub fn finish(mut self) -> Arc<Mutex<Table>> {
        self.halt();
        Arc::clone(&self.table)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Locks the table (a panic elsewhere while holding it leaves counters that are still meaningful).
pub fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    table.lock().unwrap_or_else(|p| p.into_inner())
}
