//! Per-channel traffic statistics for `nerve spy`: what the receive side records for every message (in constant
//! time), and the rows the table and `--json` show (computed at the display's pace).
//!
//! # What each figure means
//!
//! - **count**, **bytes**: every message since the spy started, exact.
//! - **rate** (Hz): the number of inter-arrival intervals that ended in the last [`WINDOW_US`] divided by their
//!   total length, so a steady 10 Hz stream reads 10.0 however the window cuts it. Once the current silence is
//!   longer than twice the mean interval it counts as an (unfinished) interval too, so a channel that stops decays
//!   towards 0 instead of showing its old rate until the window empties.
//! - **jitter**: the standard deviation of those intervals (of the period), in microseconds.
//! - **bandwidth** (bytes/s): the rate times the mean size of the messages that arrived in the window.
//! - **decode errors**: messages whose fingerprint names a known type but that cannot be that type. Every message
//!   is checked in constant time against the least encoded size of its type; the messages the spy actually decodes
//!   (the latest of the channel on screen, and of every channel at the end of `--once`) are checked in full, and a
//!   failure is counted once per message ([`Table::report_decode_failure`]).
//!
//! Time is the receive time the transport stamped on each message (microseconds since the epoch), so the figures
//! do not depend on how promptly the spy's thread ran; tests inject their own.
//!
//! # Cost
//!
//! [`Table::record`] does constant work per message: a hash lookup by channel, a few additions into the current
//! time bucket of the channel's ring of [`BUCKETS`], and keeping the message itself (an `Arc` the bus already
//! allocated: no copy) as the channel's latest. Everything else happens in [`Table::rows`], a few times a second.

use std::collections::HashMap;
use std::sync::Arc;

use nerve_bus::Received;

use super::decode::{TypeInfo, Types};

/// Length of one time bucket, microseconds.
pub const BUCKET_US: i64 = 100_000;
/// Buckets in the sliding window.
pub const BUCKETS: usize = 40;
/// The sliding window the rate, jitter and bandwidth are computed over: 4 s.
pub const WINDOW_US: i64 = BUCKET_US * BUCKETS as i64;

/// What arrived on a channel during one [`BUCKET_US`].
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// Which bucket of time this is (`utime / BUCKET_US`); buckets outside the window are stale and ignored.
    id: i64,
    arrivals: u64,
    bytes: u64,
    /// Inter-arrival intervals that ended in this bucket, their sum and sum of squares (microseconds, exact).
    intervals: u64,
    sum_dt: u128,
    sum_dt2: u128,
}

/// Everything the spy keeps about one channel.
#[derive(Debug, Clone)]
pub struct ChannelStats {
    /// Messages received.
    pub count: u64,
    /// Bytes received (whole encoded messages, fingerprint included).
    pub bytes: u64,
    /// Messages of a known type that did not decode as it.
    pub decode_errors: u64,
    /// The newest message, with [`ChannelStats::count`] as its sequence number.
    pub latest: Arc<Received>,
    /// Whether the newest message already failed the constant-time size check.
    pub latest_too_short: bool,
    /// The newest message's fingerprint (`None` below 8 bytes).
    pub fingerprint: Option<u64>,
    /// The type that fingerprint names, if the loaded types have it.
    pub ty: Option<Arc<TypeInfo>>,
    last_utime: i64,
    /// The highest sequence number already counted as a decode error.
    last_error_seq: u64,
    buckets: [Bucket; BUCKETS],
}

impl ChannelStats {
    fn new(msg: Arc<Received>) -> ChannelStats {
        ChannelStats {
            count: 0,
            bytes: 0,
            decode_errors: 0,
            last_utime: msg.recv_utime,
            latest: msg,
            latest_too_short: false,
            fingerprint: None,
            ty: None,
            last_error_seq: 0,
            buckets: [Bucket::default(); BUCKETS],
        }
    }

    fn record(&mut self, msg: Arc<Received>, types: &Types) {
        let t = msg.recv_utime;
        let len = msg.data.len();
        let fingerprint = fingerprint_of(&msg.data);
        if fingerprint != self.fingerprint || self.count == 0 {
            self.fingerprint = fingerprint;
            self.ty = fingerprint.and_then(|fp| types.info(fp).cloned());
        }
        self.count += 1;
        self.bytes += len as u64;
        self.latest_too_short = self.ty.as_ref().is_some_and(|ty| len < ty.min_len);
        if self.latest_too_short {
            self.decode_errors += 1;
            self.last_error_seq = self.count;
        }
        // A clock that steps back (or two sources' clocks) never makes a negative interval or an earlier bucket.
        let interval = (self.count > 1).then(|| t.saturating_sub(self.last_utime).max(0) as u128);
        let t = t.max(self.last_utime);
        self.last_utime = t;
        let id = t.div_euclid(BUCKET_US);
        let b = &mut self.buckets[id.rem_euclid(BUCKETS as i64) as usize];
        if b.id != id {
            *b = Bucket { id, ..Bucket::default() };
        }
        b.arrivals += 1;
        b.bytes += len as u64;
        if let Some(dt) = interval {
            b.intervals += 1;
            b.sum_dt += dt;
            b.sum_dt2 += dt * dt;
        }
        self.latest = msg;
    }

    /// Rate, jitter and bandwidth over the window that ends at `now` (microseconds since the epoch).
    pub fn window(&self, now: i64) -> WindowFigures {
        let now = now.max(self.last_utime);
        let (oldest, newest) = ((now - WINDOW_US).div_euclid(BUCKET_US), now.div_euclid(BUCKET_US));
        let (mut arrivals, mut bytes, mut n, mut sum, mut sum2) = (0u64, 0u64, 0u64, 0u128, 0u128);
        for b in self.buckets.iter().filter(|b| b.id > oldest && b.id <= newest) {
            arrivals += b.arrivals;
            bytes += b.bytes;
            n += b.intervals;
            sum += b.sum_dt;
            sum2 += b.sum_dt2;
        }
        if n == 0 || sum == 0 {
            return WindowFigures::default();
        }
        let mean = sum as f64 / n as f64;
        // Integer variance (n * sum2 - sum^2) / n^2: exact until the final division.
        let var = (n as u128 * sum2).saturating_sub(sum * sum) as f64 / (n as f64 * n as f64);
        let silence = (now - self.last_utime) as f64;
        let (n_rate, sum_rate) =
            if silence > 2.0 * mean { (n as f64, sum as f64 + silence) } else { (n as f64, sum as f64) };
        let rate_hz = n_rate / (sum_rate / 1e6);
        let mean_size = if arrivals > 0 { bytes as f64 / arrivals as f64 } else { 0.0 };
        WindowFigures { rate_hz, jitter_us: var.sqrt(), bandwidth_bps: rate_hz * mean_size }
    }
}

/// The figures computed over the sliding window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowFigures {
    /// Messages per second.
    pub rate_hz: f64,
    /// Standard deviation of the inter-arrival interval, microseconds.
    pub jitter_us: f64,
    /// Bytes per second.
    pub bandwidth_bps: f64,
}

/// Messages lost before the spy could count them. None of these can be put down to one channel: the transport
/// does not know a lost message's channel, and the spy's queue is shared by all channels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    /// Dropped from the spy's own subscription queue because its counting thread fell behind.
    pub queue_overflow: u64,
    /// Lost in the transport where it can tell: a fragmented message missing a fragment, a message of which no
    /// datagram arrived (a gap in its sender's sequence numbers, udpm), a frame overwritten before it was read (shm).
    pub transport_lost: u64,
    /// Datagrams or frames the transport threw away as malformed.
    pub malformed: u64,
    /// Datagrams the kernel dropped before the spy read them (socket receive buffer full; udpm and mpudpm).
    pub kernel_dropped: u64,
}

/// One channel as the table shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The channel's name.
    pub channel: String,
    /// The type's full name (names joined with ` | ` when several types share the fingerprint), else `None`.
    pub type_name: Option<String>,
    /// The newest message's fingerprint.
    pub fingerprint: Option<u64>,
    /// Messages received.
    pub count: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Size of the newest message.
    pub last_size: usize,
    /// Decode errors.
    pub decode_errors: u64,
    /// Rate, jitter and bandwidth.
    pub figures: WindowFigures,
}

impl Row {
    /// What the type column shows: the name, or the fingerprint of a type the spy was not given.
    pub fn type_label(&self) -> String {
        match (&self.type_name, self.fingerprint) {
            (Some(n), _) => n.clone(),
            (None, Some(fp)) => format!("? 0x{fp:016x}"),
            (None, None) => "? (under 8 bytes)".to_owned(),
        }
    }
}

/// Every channel seen, with the counters of what was lost.
#[derive(Debug, Default)]
pub struct Table {
    channels: HashMap<String, ChannelStats>,
    /// Messages lost before they were counted.
    pub drops: Drops,
    /// Messages counted on all channels.
    pub total: u64,
}

impl Table {
    /// Counts one message (constant time; see the module docs).
    pub fn record(&mut self, msg: Arc<Received>, types: &Types) {
        self.total += 1;
        match self.channels.get_mut(msg.channel.as_str()) {
            Some(ch) => ch.record(msg, types),
            None => {
                let mut ch = ChannelStats::new(Arc::clone(&msg));
                ch.record(Arc::clone(&msg), types);
                self.channels.insert(msg.channel.clone(), ch);
            }
        }
    }

    /// The channel called `name`.
    pub fn channel(&self, name: &str) -> Option<&ChannelStats> {
        self.channels.get(name)
    }

    /// Counts a failed full decode of message number `seq` of `channel`, once per message.
    pub fn report_decode_failure(&mut self, channel: &str, seq: u64) {
        if let Some(ch) = self.channels.get_mut(channel) {
            if seq > ch.last_error_seq {
                ch.decode_errors += 1;
                ch.last_error_seq = seq;
            }
        }
    }

    /// Every channel's row at time `now` (microseconds since the epoch), in no particular order.
    pub fn rows(&self, now: i64) -> Vec<Row> {
        self.channels
            .iter()
            .map(|(name, ch)| Row {
                channel: name.clone(),
                type_name: ch.ty.as_ref().map(|t| t.label.clone()),
                fingerprint: ch.fingerprint,
                count: ch.count,
                bytes: ch.bytes,
                last_size: ch.latest.data.len(),
                decode_errors: ch.decode_errors,
                figures: ch.window(now),
            })
            .collect()
    }

    /// Channel names, in no particular order.
    pub fn channel_names(&self) -> impl Iterator<Item = &str> {
        self.channels.keys().map(String::as_str)
    }
}

/// The fingerprint in a message's first 8 bytes.
pub fn fingerprint_of(data: &[u8]) -> Option<u64> {
    data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}

/// Microseconds since the epoch, the clock transports stamp messages with.
pub use nerve_codec::now_utime;

#[cfg(test)]
mod tests {
    use super::*;
    use nerve_bus::Origin;

    fn msg(channel: &str, t: i64, len: usize) -> Arc<Received> {
        Arc::new(Received { channel: channel.into(), data: vec![0xAB; len], recv_utime: t, origin: Origin::Transport })
    }

    const T0: i64 = 1_700_000_000_000_000;

    fn table_with(channel: &str, times: &[i64], len: usize) -> Table {
        let types = Types::new(None);
        let mut t = Table::default();
        for &at in times {
            t.record(msg(channel, at, len), &types);
        }
        t
    }

    fn row(t: &Table, now: i64) -> Row {
        t.rows(now).into_iter().next().unwrap()
    }

    #[test]
    fn steady_stream_rate_bandwidth_and_zero_jitter() {
        // 10 Hz for 3 s, 100-byte messages, evaluated 50 ms after the last one.
        let times: Vec<i64> = (0..30).map(|i| T0 + i * 100_000).collect();
        let t = table_with("POSE", &times, 100);
        let r = row(&t, T0 + 29 * 100_000 + 50_000);
        assert_eq!(r.count, 30);
        assert_eq!(r.bytes, 3000);
        assert!((r.figures.rate_hz - 10.0).abs() < 1e-9, "{:?}", r.figures);
        assert_eq!(r.figures.jitter_us, 0.0);
        assert!((r.figures.bandwidth_bps - 1000.0).abs() < 1e-6, "{:?}", r.figures);
    }

    #[test]
    fn jitter_is_the_standard_deviation_of_the_period() {
        // Intervals alternate 90 ms and 110 ms: mean 100 ms, standard deviation exactly 10 ms.
        let mut times = vec![T0];
        for i in 0..20 {
            let last = *times.last().unwrap();
            times.push(last + if i % 2 == 0 { 90_000 } else { 110_000 });
        }
        let t = table_with("SCAN", &times, 8);
        let r = row(&t, *times.last().unwrap());
        assert!((r.figures.jitter_us - 10_000.0).abs() < 1e-6, "{:?}", r.figures);
        assert!((r.figures.rate_hz - 10.0).abs() < 1e-9, "{:?}", r.figures);
    }

    #[test]
    fn only_the_window_counts() {
        // 1 kHz for the first second, then 10 Hz for 5 s: the window (4 s) sees only the 10 Hz part.
        let mut times: Vec<i64> = (0..1000).map(|i| T0 + i * 1000).collect();
        times.extend((1..=50).map(|i| T0 + 999_000 + i * 100_000));
        let t = table_with("X", &times, 10);
        let r = row(&t, *times.last().unwrap());
        assert_eq!(r.count, 1050);
        assert!((r.figures.rate_hz - 10.0).abs() < 1e-9, "{:?}", r.figures);
        assert_eq!(r.figures.jitter_us, 0.0);
    }

    #[test]
    fn a_channel_that_stops_decays_then_reads_zero() {
        let times: Vec<i64> = (0..20).map(|i| T0 + i * 100_000).collect();
        let t = table_with("X", &times, 10);
        let last = *times.last().unwrap();
        // 150 ms of silence is within twice the period: still 10 Hz.
        assert!((row(&t, last + 150_000).figures.rate_hz - 10.0).abs() < 1e-9);
        // 1.9 s of silence: 19 intervals over 1.9 s + 1.9 s.
        let decayed = row(&t, last + 1_900_000).figures.rate_hz;
        assert!((decayed - 19.0 / 3.8).abs() < 1e-9, "{decayed}");
        // Past the window nothing is left.
        assert_eq!(row(&t, last + WINDOW_US + BUCKET_US).figures, WindowFigures::default());
    }

    #[test]
    fn one_message_has_no_rate() {
        let t = table_with("X", &[T0], 10);
        assert_eq!(row(&t, T0 + 10).figures, WindowFigures::default());
        assert_eq!(row(&t, T0).count, 1);
    }

    #[test]
    fn a_clock_step_back_makes_no_negative_interval() {
        let t = table_with("X", &[T0, T0 + 100_000, T0 + 50_000, T0 + 200_000], 10);
        let f = row(&t, T0 + 200_000).figures;
        // Intervals 100 ms, 0 (clamped), 100 ms (from the clamped time): 3 over 200 ms.
        assert!((f.rate_hz - 15.0).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn decode_failures_count_once_per_message() {
        let mut t = table_with("X", &[T0, T0 + 1], 10);
        t.report_decode_failure("X", 2);
        t.report_decode_failure("X", 2);
        t.report_decode_failure("X", 1);
        t.report_decode_failure("NOPE", 1);
        assert_eq!(t.channel("X").unwrap().decode_errors, 1);
    }

    #[test]
    fn unknown_fingerprints_are_labelled_in_hex() {
        let types = Types::new(None);
        let mut t = Table::default();
        let mut data = 0x18f4_8ab4_4e6f_d954u64.to_be_bytes().to_vec();
        data.extend([1, 2, 3]);
        t.record(Arc::new(Received { channel: "A".into(), data, recv_utime: T0, origin: Origin::Transport }), &types);
        t.record(msg("B", T0, 3), &types);
        let mut rows = t.rows(T0);
        rows.sort_by(|a, b| a.channel.cmp(&b.channel));
        assert_eq!(rows[0].type_label(), "? 0x18f48ab44e6fd954");
        assert_eq!(rows[1].type_label(), "? (under 8 bytes)");
        assert_eq!(t.total, 2);
    }
}
