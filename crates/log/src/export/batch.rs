//! Events gathered into batches and transcoded on worker threads, in order, while the caller reads the next batch.
//!
//! An exporter copies each event it is handed into a [`Batch`]; when the batch is full, its [`Pipeline`] hands it
//! to the [`Workers`] as a job: the batch is split into contiguous parts of about equal bytes, several per core,
//! and each worker takes the next part when it is done with one, running the exporter's per-event work on it.
//! Each part's output is one buffer with each event's end in it, so the exporter then walks the events in their
//! original order and writes, numbers and indexes them exactly as it would one at a time. Only the text is made
//! in parallel; every decision that depends on order (MCAP ids, CSV file names, counts) stays on the caller's
//! thread.
//!
//! The workers live as long as the export ([`Workers::scope`]): the caller's thread reads and copies the next
//! batch while they transcode, and writes out each batch (its parts taken back, in order) once it is transcoded.
//! When more than [`AHEAD`] batches are out, the caller's thread takes parts no worker has started itself, so it
//! helps exactly when it is ahead of the workers; it waits for a part a worker is in the middle of only when no
//! part is left to take. There is one worker fewer than cores (the caller's thread is the last), none on one
//! core: then the caller's thread does every part itself.

use std::any::Any;
use std::collections::VecDeque;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::EventRef;

/// Input bytes (channels and data) a batch holds before it is transcoded.
pub(crate) const BATCH_BYTES: usize = 4 << 20;
/// Events a batch holds before it is transcoded (small messages).
const BATCH_EVENTS: usize = 1 << 16;
/// Stack for the worker threads: the transcoder recurses once per level of nesting (at most `MAX_DEPTH`).
const WORKER_STACK: usize = 64 << 20;

#[derive(Debug, Clone, Copy)]
struct Meta {
    number: i64,
    utime: i64,
    offset: u64,
    start: usize,
    channel_len: usize,
    data_len: usize,
}

/// Events copied out of the reader's buffer, back to back.
#[derive(Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    events: Vec<Meta>,
}

impl Batch {
    /// An empty batch with room for a full one (unless its last event is big), so that it is not grown (and
    /// copied) step by step.
    fn with_room() -> Batch {
        Batch { bytes: Vec::with_capacity(BATCH_BYTES + (1 << 16)), events: Vec::new() }
    }

    pub(crate) fn push(&mut self, ev: &EventRef<'_>) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(ev.channel_bytes);
        self.bytes.extend_from_slice(ev.data);
        self.events.push(Meta {
            number: ev.number,
            utime: ev.utime,
            offset: ev.offset,
            start,
            channel_len: ev.channel_bytes.len(),
            data_len: ev.data.len(),
        });
    }

    pub(crate) fn is_full(&self) -> bool {
        self.bytes.len() >= BATCH_BYTES || self.events.len() >= BATCH_EVENTS
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.events.clear();
    }

    /// The `i`th event.
    pub(crate) fn get(&self, i: usize) -> EventRef<'_> {
        let m = &self.events[i];
        let channel_end = m.start + m.channel_len;
        EventRef {
            number: m.number,
            utime: m.utime,
            channel_bytes: &self.bytes[m.start..channel_end],
            data: &self.bytes[channel_end..channel_end + m.data_len],
            offset: m.offset,
        }
    }

    /// Event ranges of about equal bytes, at most `n` of them (none for an empty batch).
    fn split(&self, n: usize) -> Vec<Range<usize>> {
        let total = self.bytes.len().max(1);
        let mut ranges = Vec::with_capacity(n);
        let mut start = 0;
        for k in 1..=n {
            let target = total * k / n;
            let mut end = start;
            while end < self.events.len() && (k == n || self.events[end].start < target) {
                end += 1;
            }
            if end > start {
                ranges.push(start..end);
            }
            start = end;
        }
        ranges
    }
}

/// One part's output: the text of its events back to back, each event's result and end in `out`, and the work's
/// own state (kept from batch to batch).
pub(crate) struct Part<R, S> {
    pub(crate) out: Vec<u8>,
    /// (result, end of the event's text in `out`), in event order.
    pub(crate) results: Vec<(R, usize)>,
    /// The events of the batch this part did.
    pub(crate) events: Range<usize>,
    pub(crate) state: S,
}

impl<R, S: Default> Default for Part<R, S> {
    fn default() -> Self {
        Part { out: Vec::new(), results: Vec::new(), events: 0..0, state: S::default() }
    }
}

/// An exporter's per-event work: appends the event's text to the buffer (using and updating the part's state) and
/// returns what the caller's thread needs to know about it.
pub(crate) type Work<'e, R, S> = Arc<dyn Fn(&EventRef<'_>, &mut Vec<u8>, &mut S) -> R + Send + Sync + 'e>;

fn fill<R, S>(part: &mut Part<R, S>, batch: &Batch, events: Range<usize>, work: &Work<'_, R, S>) {
    part.out.clear();
    part.results.clear();
    for i in events.clone() {
        let r = work(&batch.get(i), &mut part.out, &mut part.state);
        part.results.push((r, part.out.len()));
    }
    part.events = events;
}

/// Parts per thread: a batch is cut finer than one part per thread, and each thread takes the next part when it is
/// done with one, so that threads whose parts were cheaper to transcode (a byte array costs far less per input
/// byte than floats do) do not sit idle while another finishes.
const PARTS_PER_THREAD: usize = 8;

/// A job as the workers see it.
trait Run: Send + Sync {
    /// Does the next part no thread has taken; false when every part has been taken.
    fn run_next(&self) -> bool;
}

/// A batch handed to the workers, with its parts.
pub(crate) struct Job<'e, R, S> {
    batch: Batch,
    ranges: Vec<Range<usize>>,
    /// At least one per range; part `i` is taken by one thread only (the lock is never contended).
    parts: Vec<Mutex<Part<R, S>>>,
    work: Work<'e, R, S>,
    /// The next part to take.
    next: AtomicUsize,
    /// Parts done, and the caller's thread's wait for the last (the lock is taken only to wait and to wake).
    finished: AtomicUsize,
    waiting: Mutex<()>,
    all_done: Condvar,
    /// A panic on a worker, passed on to the caller's thread when it finishes the job.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl<R: Send, S: Send> Run for Job<'_, R, S> {
    fn run_next(&self) -> bool {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(range) = self.ranges.get(i) else { return false };
        let mut part = self.parts[i].lock().unwrap_or_else(PoisonError::into_inner);
        let r = catch_unwind(AssertUnwindSafe(|| fill(&mut part, &self.batch, range.clone(), &self.work)));
        drop(part);
        if let Err(p) = r {
            self.panic.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(p);
        }
        if self.finished.fetch_add(1, Ordering::AcqRel) + 1 == self.ranges.len() {
            // Under the lock: the caller's thread checks the count with it held before it waits.
            let _w = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            self.all_done.notify_all();
        }
        true
    }
}

impl<R, S> Job<'_, R, S> {
    fn is_done(&self) -> bool {
        self.finished.load(Ordering::Acquire) == self.ranges.len()
    }

    fn has_parts_left(&self) -> bool {
        self.next.load(Ordering::Relaxed) < self.ranges.len()
    }
}

/// A transcoded batch, back on the caller's thread: the parts in order (any beyond those used are empty).
pub(crate) struct Done<R, S> {
    pub(crate) batch: Batch,
    pub(crate) parts: Vec<Part<R, S>>,
}

/// The jobs handed over and not finished, oldest first; the workers take parts from the first with parts left.
struct Queue<'e> {
    jobs: VecDeque<Arc<dyn Run + 'e>>,
    stop: bool,
}

/// Worker threads that transcode the batches of one export (see the module docs).
pub(crate) struct Workers<'e> {
    queue: Mutex<Queue<'e>>,
    /// Wakes the workers: a job was handed over, or they are to stop.
    wake: Condvar,
    /// Threads that share the work, the caller's included: how finely batches are cut.
    threads: usize,
}

/// Stops the workers when the export ends, however it ends (they hold the scope open until they do).
struct StopOnDrop<'a, 'e>(&'a Workers<'e>);

impl Drop for StopOnDrop<'_, '_> {
    fn drop(&mut self) {
        self.0.lock().stop = true;
        self.0.wake.notify_all();
    }
}

impl<'e> Workers<'e> {
    /// Runs `f` with worker threads that live until it returns: one fewer than the cores there are (at most 7),
    /// none on one core.
    pub(crate) fn scope<T>(f: impl FnOnce(&Workers<'e>) -> T) -> T {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
        Workers::scope_with(threads - 1, f)
    }

    /// [`Workers::scope`] with `n` workers.
    pub(crate) fn scope_with<T>(n: usize, f: impl FnOnce(&Workers<'e>) -> T) -> T {
        let w = Workers {
            queue: Mutex::new(Queue { jobs: VecDeque::new(), stop: false }),
            wake: Condvar::new(),
            threads: n + 1,
        };
        std::thread::scope(|s| {
            for _ in 0..n {
                // If no thread can be had, the caller's thread does the parts when it finishes each job.
                let _ = std::thread::Builder::new()
                    .name("nerve-export".into())
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(s, || w.work());
            }
            let _stop = StopOnDrop(&w);
            f(&w)
        })
    }

    fn lock(&self) -> MutexGuard<'_, Queue<'e>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker: the next part of the oldest job with parts left, until told to stop.
    fn work(&self) {
        loop {
            let job = {
                let mut q = self.lock();
                loop {
                    if q.stop {
                        return;
                    }
                    if let Some(j) = q.jobs.front() {
                        break j.clone();
                    }
                    q = self.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
                }
            };
            if !job.run_next() {
                let mut q = self.lock();
                if q.jobs.front().is_some_and(|f| same(f, &job)) {
                    q.jobs.pop_front();
                }
            }
        }
    }

    /// Hands `batch` to the workers, to be transcoded by `work` into `parts` (reused: their buffers and states).
    fn submit<R: Send + 'e, S: Default + Send + 'e>(
        &self,
        batch: Batch,
        mut parts: Vec<Part<R, S>>,
        work: Work<'e, R, S>,
    ) -> Arc<Job<'e, R, S>> {
        // Small batches are not worth cutting up.
        let ranges = batch.split(if batch.bytes.len() < (1 << 16) { 1 } else { self.threads * PARTS_PER_THREAD });
        if parts.len() < ranges.len().max(1) {
            parts.resize_with(ranges.len().max(1), Part::default);
        }
        for p in &mut parts[ranges.len()..] {
            p.out.clear();
            p.results.clear();
            p.events = 0..0;
        }
        let job = Arc::new(Job {
            batch,
            ranges,
            parts: parts.into_iter().map(Mutex::new).collect(),
            work,
            next: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            waiting: Mutex::new(()),
            all_done: Condvar::new(),
            panic: Mutex::new(None),
        });
        if self.threads > 1 {
            self.lock().jobs.push_back(job.clone());
            self.wake.notify_all();
        }
        job
    }

    /// Waits for `job` to be transcoded, doing the parts no worker has taken yet on this thread, and takes back its
    /// batch and parts. (A panic while transcoding goes on here.)
    fn finish<R: Send + 'e, S: Send + 'e>(&self, mut job: Arc<Job<'e, R, S>>) -> Done<R, S> {
        while job.run_next() {}
        if self.threads > 1 {
            let mut q = self.lock();
            let dyn_job: Arc<dyn Run + 'e> = job.clone();
            q.jobs.retain(|j| !same(j, &dyn_job));
        }
        {
            let mut w = job.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            while !job.is_done() {
                w = job.all_done.wait(w).unwrap_or_else(PoisonError::into_inner);
            }
        }
        // A worker lets go of the job right after its last part.
        let job = loop {
            match Arc::try_unwrap(job) {
                Ok(j) => break j,
                Err(j) => {
                    job = j;
                    std::thread::yield_now();
                }
            }
        };
        if let Some(p) = job.panic.into_inner().unwrap_or_else(PoisonError::into_inner) {
            resume_unwind(p);
        }
        Done {
            batch: job.batch,
            parts: job.parts.into_iter().map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner)).collect(),
        }
    }
}

/// Whether two jobs are the same (by address).
fn same(a: &Arc<dyn Run + '_>, b: &Arc<dyn Run + '_>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// An exporter's batches on their way through the [`Workers`]: the one being filled, and those handed over.
pub(crate) struct Pipeline<'e, R, S> {
    batch: Batch,
    /// Handed to the workers and not written out yet, oldest first (at most [`AHEAD`] once the caller's thread has
    /// written out those done).
    jobs: VecDeque<Arc<Job<'e, R, S>>>,
    /// Batches and parts back from the workers, to be reused.
    spare_batches: Vec<Batch>,
    spare_parts: Vec<Vec<Part<R, S>>>,
}

impl<R, S> Default for Pipeline<'_, R, S> {
    fn default() -> Self {
        Pipeline {
            batch: Batch::with_room(),
            jobs: VecDeque::new(),
            spare_batches: Vec::new(),
            spare_parts: Vec::new(),
        }
    }
}

/// Batches handed to the workers and not written out, at most, before the caller's thread stops reading and
/// transcodes parts of them itself: it reads ahead while the workers keep up, and helps when they do not, without
/// waiting for a part a worker is in the middle of. (One: the workers take a batch far longer to transcode than
/// this thread takes to read the next, and each batch out holds its input and text: with two, an export touched a
/// quarter more memory, 44,000 page faults for a CSV export instead of 33,000.)
const AHEAD: usize = 1;

impl<'e, R: Send + 'e, S: Default + Send + 'e> Pipeline<'e, R, S> {
    /// Adds `ev` to the batch; when that fills it, hands it to the workers (with the work `work` makes) and returns
    /// true: then take the batches ready to be written out with [`Pipeline::ready`].
    pub(crate) fn push(
        &mut self,
        ev: &EventRef<'_>,
        workers: &Workers<'e>,
        work: impl FnOnce() -> Work<'e, R, S>,
    ) -> bool {
        if !self.fill(ev) {
            return false;
        }
        self.submit(workers, work());
        true
    }

    /// Adds `ev` to the batch without handing it over: whether the batch is full (then hand it over with
    /// [`Pipeline::flush`]).
    pub(crate) fn fill(&mut self, ev: &EventRef<'_>) -> bool {
        self.batch.push(ev);
        self.batch.is_full()
    }

    /// The oldest batch handed over, if it is transcoded, to be written out (then given back with
    /// [`Pipeline::recycle`]). While more than [`AHEAD`] batches are out, this thread transcodes parts no worker
    /// has taken (of the oldest batch with any) until the oldest is done, and waits for it only when every part of
    /// every batch has been taken. `None`: no batch to write out yet; go on reading.
    pub(crate) fn ready(&mut self, workers: &Workers<'e>) -> Option<Done<R, S>> {
        loop {
            let oldest = self.jobs.front()?;
            if oldest.is_done() {
                return self.next_done(workers);
            }
            if self.jobs.len() <= AHEAD {
                return None;
            }
            match self.jobs.iter().find(|j| j.has_parts_left()) {
                Some(j) => {
                    j.run_next();
                }
                None => return self.next_done(workers),
            }
        }
    }

    /// Hands the batch being filled (if it has events) to the workers.
    pub(crate) fn flush(&mut self, workers: &Workers<'e>, work: impl FnOnce() -> Work<'e, R, S>) {
        if !self.batch.is_empty() {
            self.submit(workers, work());
        }
    }

    fn submit(&mut self, workers: &Workers<'e>, work: Work<'e, R, S>) {
        let batch = std::mem::replace(&mut self.batch, self.spare_batches.pop().unwrap_or_else(Batch::with_room));
        let parts = self.spare_parts.pop().unwrap_or_default();
        self.jobs.push_back(workers.submit(batch, parts, work));
    }

    /// The oldest batch handed over, transcoded (`None`: none left).
    pub(crate) fn next_done(&mut self, workers: &Workers<'e>) -> Option<Done<R, S>> {
        let job = self.jobs.pop_front()?;
        Some(workers.finish(job))
    }

    /// Takes back a batch written out, to reuse its buffers (the parts keep their states).
    pub(crate) fn recycle(&mut self, mut done: Done<R, S>) {
        done.batch.clear();
        self.spare_batches.push(done.batch);
        self.spare_parts.push(done.parts);
    }

    /// Every part not with the workers (all of them once every batch is done and recycled): their states.
    #[cfg(test)]
    pub(crate) fn parts_mut(&mut self) -> impl Iterator<Item = &mut Part<R, S>> {
        self.spare_parts.iter_mut().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_batch(n: usize) -> Batch {
        let mut b = Batch::default();
        for i in 0..n {
            let data = vec![i as u8; (i * 37) % 5000];
            b.push(&EventRef { number: i as i64, utime: i as i64, channel_bytes: b"CH", data: &data, offset: 0 });
        }
        b
    }

    #[test]
    fn parts_cover_every_event_in_order() {
        let b = test_batch(1000);
        for n in 1..6 {
            let ranges = b.split(n);
            assert!(ranges.len() <= n);
            assert_eq!(ranges.first().unwrap().start, 0);
            assert_eq!(ranges.last().unwrap().end, 1000);
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        }
        // With no workers, one, and more than there are cores; batches handed over two at a time and one at a time.
        for workers in [0, 1, 3] {
            Workers::scope_with(workers, |w| {
                let work: Work<'_, i64, u64> = Arc::new(|ev: &EventRef<'_>, out: &mut Vec<u8>, calls: &mut u64| {
                    *calls += 1;
                    out.extend_from_slice(ev.number.to_string().as_bytes());
                    ev.number
                });
                let mut p: Pipeline<'_, i64, u64> = Pipeline::default();
                let mut seen = Vec::new();
                let mut check = |done: Done<i64, u64>, p: &mut Pipeline<'_, i64, u64>| {
                    for part in &done.parts {
                        let mut start = 0;
                        for (i, (r, end)) in part.events.clone().zip(&part.results) {
                            let ev = done.batch.get(i);
                            assert_eq!(ev.number, *r);
                            assert_eq!(&part.out[start..*end], r.to_string().as_bytes());
                            assert_eq!(ev.data.len(), (*r as usize * 37) % 5000);
                            seen.push(*r);
                            start = *end;
                        }
                    }
                    p.recycle(done);
                };
                let b = test_batch(20_000);
                for i in 0..20_000 {
                    if p.push(&b.get(i), w, || work.clone()) {
                        while let Some(done) = p.ready(w) {
                            check(done, &mut p);
                        }
                    }
                }
                p.flush(w, || work.clone());
                while let Some(done) = p.next_done(w) {
                    check(done, &mut p);
                }
                assert_eq!(seen, (0..20_000).collect::<Vec<_>>());
                assert_eq!(p.parts_mut().map(|p| p.state).sum::<u64>(), 20_000);
            });
        }
    }

    #[test]
    fn a_panic_while_transcoding_reaches_the_caller() {
        let r = catch_unwind(|| {
            Workers::scope_with(1, |w| {
                let work: Work<'_, (), ()> = Arc::new(|ev: &EventRef<'_>, _: &mut Vec<u8>, _: &mut ()| {
                    assert!(ev.number != 3000, "event 3000");
                });
                let mut p: Pipeline<'_, (), ()> = Pipeline::default();
                let b = test_batch(20_000);
                for i in 0..20_000 {
                    if p.push(&b.get(i), w, || work.clone()) {
                        while let Some(done) = p.ready(w) {
                            p.recycle(done);
                        }
                    }
                }
                p.flush(w, || work.clone());
                while let Some(done) = p.next_done(w) {
                    p.recycle(done);
                }
            })
        });
        assert!(r.is_err());
    }
}
