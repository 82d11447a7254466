//! The in-process timing loop (the marshalling suite's): warm up, batch small operations so that one sample lasts at least [`Config::min_sample`], take many
//! samples, report the median time per operation. Also the aligned buffers every system writes into.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Warm-up time per measurement (after calibration).
    pub warmup: Duration,
    /// A sample is a batch of operations that lasts at least this long.
    pub min_sample: Duration,
    /// Samples to take at most.
    pub max_samples: usize,
    /// Samples to take at least, even past `budget`.
    pub min_samples: usize,
    /// Stop taking samples after this long (once `min_samples` are in).
    pub budget: Duration,
}

impl Config {
    /// The full run: short measurements, many rounds (the suite's). This host's speed flips between states about
    /// 2x apart every few hundred milliseconds (other guests on the same cores), so two systems compared must be
    /// timed close together, and many times.
    pub fn full() -> Config {
        Config {
            warmup: Duration::from_millis(10),
            min_sample: Duration::from_micros(20),
            max_samples: 301,
            min_samples: 21,
            budget: Duration::from_millis(60),
        }
    }

    /// `--quick`: a few repetitions, for CI (figures are rough).
    pub fn quick() -> Config {
        Config {
            warmup: Duration::from_micros(500),
            min_sample: Duration::from_micros(20),
            max_samples: 7,
            min_samples: 3,
            budget: Duration::from_millis(3),
        }
    }
}

/// Measures `op` and returns the median time of one call, in nanoseconds.
pub fn measure<R>(cfg: &Config, mut op: impl FnMut() -> R) -> f64 {
    // Calibrate the batch size: double until one batch takes min_sample.
    let mut batch: u64 = 1;
    loop {
        let t = time_batch(&mut op, batch);
        if t >= cfg.min_sample || batch >= 1 << 30 {
            break;
        }
        batch *= 2;
    }
    let start = Instant::now();
    while start.elapsed() < cfg.warmup {
        time_batch(&mut op, batch);
    }
    let mut samples = Vec::with_capacity(cfg.max_samples);
    let start = Instant::now();
    while samples.len() < cfg.max_samples && (samples.len() < cfg.min_samples || start.elapsed() < cfg.budget) {
        let t = time_batch(&mut op, batch);
        samples.push(t.as_nanos() as f64 / batch as f64);
    }
    median(&mut samples)
}

fn time_batch<R>(op: &mut impl FnMut() -> R, n: u64) -> Duration {
    let t0 = Instant::now();
    for _ in 0..n {
        black_box(op());
    }
    t0.elapsed()
}

/// The median of a non-empty sample.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Where in a 4 KiB page encoded inputs start (address mod 4096).
pub const INPUT_PHASE: usize = 0;
/// Where in a 4 KiB page output buffers start: half a page away from the inputs, so a store never lands a few bytes
/// before a later load modulo 4096 (4 KiB aliasing, BASELINES.md).
pub const OUTPUT_PHASE: usize = 2048;

/// A zeroed byte buffer whose start sits at a chosen offset modulo 4096 (so it is also 64-byte aligned).
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` bytes starting at `phase` (a multiple of 64) modulo 4096.
    pub fn new(len: usize, phase: usize) -> AlignedBuf {
        assert!(phase.is_multiple_of(64) && phase < 4096);
        let raw = vec![0u8; len + 8192];
        let addr = raw.as_ptr() as usize;
        let start = (phase + 4096 - addr % 4096) % 4096;
        AlignedBuf { raw, start, len }
    }

    /// A buffer holding a copy of `bytes`.
    pub fn from_bytes(bytes: &[u8], phase: usize) -> AlignedBuf {
        let mut b = AlignedBuf::new(bytes.len(), phase);
        b.as_mut_slice().copy_from_slice(bytes);
        b
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }
}
