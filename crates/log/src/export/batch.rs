//! Events gathered into batches and transcoded on several threads, in order.
//!
//! An exporter copies each event it is handed into a [`Batch`]; when the batch is full (or at `finish`), it calls
//! [`transcode`], which splits the batch into contiguous parts of about equal bytes, several per core, and runs the
//! exporter's per-event work on them on every core at once (the caller's thread too), each thread taking the next
//! part when it is done with one. Each part's output is
//! one buffer with each event's end in it, so the exporter then walks the events in their original order and
//! writes, numbers and indexes them exactly as it would one at a time. Only the text is made in parallel; every
//! decision that depends on order (MCAP ids, CSV file names, counts) stays on the caller's thread.
//! [`transcode_while`] lets the caller's thread do that for the batch before while the other threads start on
//! this one (it joins them when done), so that the serial work does not leave the other cores idle.

use std::ops::Range;
use std::sync::{Mutex, PoisonError};

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

fn fill<R, S>(part: &mut Part<R, S>, batch: &Batch, events: Range<usize>, work: &(dyn Fn(&EventRef<'_>, &mut Vec<u8>, &mut S) -> R + Sync)) {
    part.out.clear();
    part.results.clear();
    for i in events.clone() {
        let r = work(&batch.get(i), &mut part.out, &mut part.state);
        part.results.push((r, part.out.len()));
    }
    part.events = events;
}

/// How many threads transcode: the cores there are, at most 8.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8)
}

/// Parts per thread: a batch is cut finer than one part per thread, and each thread takes the next part when it is
/// done with one, so that threads whose parts were cheaper to transcode (a byte array costs far less per input
/// byte than floats do) do not sit idle while another finishes.
const PARTS_PER_THREAD: usize = 8;

/// Runs `work` on every event of `batch`, in parts on several threads; `parts` then holds the parts in order
/// (parts beyond the ones used are left empty).
#[cfg(test)]
pub(crate) fn transcode<R: Send, S: Default + Send>(
    batch: &Batch,
    parts: &mut Vec<Part<R, S>>,
    work: &(dyn Fn(&EventRef<'_>, &mut Vec<u8>, &mut S) -> R + Sync),
) {
    transcode_while(batch, parts, work, || ());
}

/// [`transcode`], with `meanwhile` run on the caller's thread while the other threads start on the parts (the
/// caller takes parts too once it is done): an exporter writes out the batch before this one there, so that its
/// serial work (ids, indexes, copies into the files' buffers) overlaps making the text instead of leaving the
/// other cores idle. Returns what `meanwhile` returns.
pub(crate) fn transcode_while<R: Send, S: Default + Send, T>(
    batch: &Batch,
    parts: &mut Vec<Part<R, S>>,
    work: &(dyn Fn(&EventRef<'_>, &mut Vec<u8>, &mut S) -> R + Sync),
    meanwhile: impl FnOnce() -> T,
) -> T {
    // Small batches are not worth a thread.
    let threads = if batch.bytes.len() < (1 << 16) { 1 } else { threads() };
    let ranges = batch.split(if threads == 1 { 1 } else { threads * PARTS_PER_THREAD });
    if parts.len() < ranges.len().max(1) {
        parts.resize_with(ranges.len().max(1), Part::default);
    }
    for p in parts.iter_mut() {
        p.out.clear();
        p.results.clear();
        p.events = 0..0;
    }
    // The parts still to do, in order; each thread takes the next one.
    let queue = Mutex::new(parts.iter_mut().zip(ranges));
    let run = || loop {
        let next = queue.lock().unwrap_or_else(PoisonError::into_inner).next();
        match next {
            Some((part, range)) => fill(part, batch, range, work),
            None => break,
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            // If no thread can be had, this thread does its parts.
            let _ = std::thread::Builder::new().name("nerve-export".into()).stack_size(WORKER_STACK).spawn_scoped(s, run);
        }
        let t = meanwhile();
        run();
        t
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_every_event_in_order() {
        let mut b = Batch::default();
        for i in 0..1000i64 {
            let data = vec![i as u8; (i as usize * 37) % 5000];
            b.push(&EventRef { number: i, utime: i, channel_bytes: b"CH", data: &data, offset: 0 });
        }
        for n in 1..6 {
            let ranges = b.split(n);
            assert!(ranges.len() <= n);
            assert_eq!(ranges.first().unwrap().start, 0);
            assert_eq!(ranges.last().unwrap().end, 1000);
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        }
        let mut parts: Vec<Part<i64, u64>> = Vec::new();
        transcode(&b, &mut parts, &|ev, out, calls| {
            *calls += 1;
            out.extend_from_slice(ev.number.to_string().as_bytes());
            ev.number
        });
        let mut seen = Vec::new();
        for part in &parts {
            let mut start = 0;
            for (i, (r, end)) in part.events.clone().zip(&part.results) {
                assert_eq!(i as i64, *r);
                assert_eq!(&part.out[start..*end], r.to_string().as_bytes());
                assert_eq!(b.get(i).data.len(), (i * 37) % 5000);
                seen.push(i);
                start = *end;
            }
        }
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        assert_eq!(parts.iter().map(|p| p.state).sum::<u64>(), 1000);
    }
}
