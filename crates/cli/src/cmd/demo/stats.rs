//! What the demo measures and how it prints it: per-stream counts, rates and latency percentiles from receive
//! times, the roles' `key=value` result lines, and the units.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Microseconds since the epoch: the clock every message's `utime` and every receive time is on.
pub use nerve_codec::now_utime;

/// The nearest-rank `p`-th percentile of sorted values (`None` when there are none).
pub fn percentile(sorted: &[i64], p: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// One stream as a subscriber saw it.
#[derive(Debug, Default, Clone)]
pub struct Stream {
    /// Messages received.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Messages that did not decode as the stream's type.
    pub decode_errors: u64,
    first_recv: Option<i64>,
    last_recv: i64,
    /// Receive time minus the message's `utime`, microseconds, in arrival order.
    latencies: Vec<i64>,
}

impl Stream {
    /// The rate the messages arrived at: intervals over the time between the first and the last.
    pub fn rate_hz(&self) -> Option<f64> {
        let first = self.first_recv?;
        (self.count > 1 && self.last_recv > first)
            .then(|| (self.count - 1) as f64 / ((self.last_recv - first) as f64 / 1e6))
    }

    /// Latency percentiles (p50, p99), microseconds.
    pub fn latency(&self) -> Option<(i64, i64)> {
        let mut l = self.latencies.clone();
        l.sort_unstable();
        Some((percentile(&l, 50.0)?, percentile(&l, 99.0)?))
    }
}

/// Streams by channel, filled from a subscription's callback.
#[derive(Debug, Default)]
pub struct Monitor {
    streams: Mutex<BTreeMap<String, Stream>>,
}

impl Monitor {
    /// Counts a message received at `recv_utime` whose `utime` decoded (`None`: it did not decode).
    pub fn record(&self, channel: &str, bytes: usize, recv_utime: i64, utime: Option<i64>) {
        let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        let s = match streams.get_mut(channel) {
            Some(s) => s,
            None => streams.entry(channel.to_owned()).or_default(),
        };
        s.count += 1;
        s.bytes += bytes as u64;
        s.first_recv.get_or_insert(recv_utime);
        s.last_recv = s.last_recv.max(recv_utime);
        match utime {
            Some(u) => s.latencies.push(recv_utime - u),
            None => s.decode_errors += 1,
        }
    }

    /// A copy of one stream's figures.
    pub fn stream(&self, channel: &str) -> Stream {
        self.streams.lock().unwrap_or_else(|p| p.into_inner()).get(channel).cloned().unwrap_or_default()
    }
}

/// A role's result line (`nerve-demo-result key=value ...`) as a map; `None` if `line` is not one.
pub fn parse_result(line: &str, tag: &str) -> Option<HashMap<String, String>> {
    let rest = line.strip_prefix(tag)?;
    Some(
        rest.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    )
}

/// A duration in microseconds, one token: `85µs`, `1.25ms`, `2.10s`. <!-- tidy:allow-figure -->
pub fn micros(us: i64) -> String {
    let a = us.unsigned_abs();
    if a < 1000 {
        format!("{us}µs")
    } else if a < 1_000_000 {
        format!("{:.2}ms", us as f64 / 1e3)
    } else {
        format!("{:.2}s", us as f64 / 1e6)
    }
}

/// A size in bytes: `512 B`, `1.5 KiB`, `93.8 MiB`.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// Width the summary's paragraphs are wrapped to, at most.
pub const WIDTH: usize = 116;
/// Column the paragraphs' text starts in (after the label).
const INDENT: usize = 13;

/// `text` wrapped at `width` columns after a `label` column, continuation lines indented; a word longer than a
/// line (a path, a URL) gets a line of its own.
pub fn para(label: &str, text: &str, width: usize) -> String {
    let mut out = format!("{label:<INDENT$}");
    let mut col = out.chars().count();
    let mut first = true;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if !first && col + 1 + n > width {
            out.push('\n');
            out.push_str(&" ".repeat(INDENT));
            col = INDENT;
            first = true;
        }
        if !first {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += n;
        first = false;
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&[7], 99.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn a_stream_has_its_rate_and_latency() {
        let m = Monitor::default();
        for i in 0..41 {
            // 40 Hz for one second, 100 µs of latency, one message that did not decode.
            let recv = 1_000_000 + i * 25_000;
            m.record("LASER", 10, recv, (i != 3).then_some(recv - 100));
        }
        let s = m.stream("LASER");
        assert_eq!((s.count, s.bytes, s.decode_errors), (41, 410, 1));
        assert!((s.rate_hz().unwrap() - 40.0).abs() < 1e-9);
        assert_eq!(s.latency(), Some((100, 100)));
        assert_eq!(m.stream("NONE").rate_hz(), None);
    }

    #[test]
    fn result_lines_and_units() {
        let r = parse_result("tag role=sensor LASER_sent=400 seconds=10.0", "tag").unwrap();
        assert_eq!((r["role"].as_str(), r["LASER_sent"].as_str()), ("sensor", "400"));
        assert!(parse_result("other line", "tag").is_none());
        assert_eq!((micros(85), micros(1250), micros(2_100_000)), ("85µs".into(), "1.25ms".into(), "2.10s".into()));
        assert_eq!((size(512), size(1536), size(98_304_000)), ("512 B".into(), "1.5 KiB".into(), "93.8 MiB".into()));
    }

    #[test]
    fn paragraphs_wrap_under_their_label() {
        let text = para("log", &"word ".repeat(30), WIDTH);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("log          word word"));
        assert!(lines[1].starts_with("             word"));
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH));
    }
}
