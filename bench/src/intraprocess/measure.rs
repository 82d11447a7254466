//! What the intraprocess suite measures and how: the systems, CLOCK_MONOTONIC, process CPU time, VmRSS, `poll`, and a
//! fixed latency histogram (see `graph` for where each is taken).

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How messages travel between the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// One `inproc://` bus.
    Inproc,
    /// One `shm://` bus per node.
    Shm,
    /// One `udpm://` bus per node.
    Udpm,
}

impl System {
    /// The JSON `system`.
    pub fn name(self) -> &'static str {
        match self {
            System::Inproc => "nerve-inproc",
            System::Shm => "nerve-shm",
            System::Udpm => "nerve-udpm",
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (shared by all threads, so a stamp taken by the publisher is comparable).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid local it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// User + system CPU time of the whole process, ns.
pub fn cpu_ns() -> u64 {
    // SAFETY: rusage is plain data; getrusage fills the valid local it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Configures glibc's allocator as real-time processes do (ROS 2's real-time guidance: no trimming, no mmap for
/// large blocks), so that a freed 900 KB image buffer is reused by the next one instead of being returned to the
/// kernel and faulted in again, page by page, every frame. Process-wide: every system of the run gets it.
/// `NERVE_BENCH_DEFAULT_MALLOC=1` leaves the allocator as it is. Returns what was done, for the header.
pub fn realtime_malloc() -> String {
    if std::env::var_os("NERVE_BENCH_DEFAULT_MALLOC").is_some() {
        return "glibc malloc defaults (NERVE_BENCH_DEFAULT_MALLOC set)".into();
    }
    // SAFETY: mallopt takes two integers and only changes the allocator's tuning parameters.
    let ok = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, -1) == 1 && libc::mallopt(libc::M_MMAP_MAX, 0) == 1 };
    if ok {
        "mallopt(M_TRIM_THRESHOLD, -1) and mallopt(M_MMAP_MAX, 0), as real-time ROS 2 processes do \
         (NERVE_BENCH_DEFAULT_MALLOC=1 to skip)"
            .into()
    } else {
        "glibc malloc defaults (mallopt refused)".into()
    }
}

/// VmRSS of this process, bytes.
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Waits until one of `fds` is readable or `timeout_ns` passes.
pub fn wait_readable(fds: &mut [libc::pollfd], timeout_ns: u64) {
    if fds.is_empty() {
        std::thread::sleep(std::time::Duration::from_nanos(timeout_ns.min(1_000_000_000)));
        return;
    }
    let ms = timeout_ns.div_ceil(1_000_000).min(1000) as libc::c_int;
    // SAFETY: `fds` is a valid, exclusively borrowed slice of pollfd of the length given.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

/// Latencies in a fixed histogram: bucket i holds [1.01^i, 1.01^(i+1)) ns. Allocated (and touched) once, so
/// recording never allocates and never grows the process.
pub struct Hist {
    buckets: Vec<AtomicU64>,
    n: AtomicU64,
    sum: AtomicU64,
    max: AtomicU64,
}

const BUCKETS: usize = 3000;
const GROWTH: f64 = 1.01;

impl Hist {
    pub fn new() -> Hist {
        Hist {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            n: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }

    pub fn record(&self, ns: u64) {
        let i = ((ns.max(1) as f64).ln() / GROWTH.ln()) as usize;
        self.buckets[i.min(BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
        self.n.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(ns, Ordering::Relaxed);
        self.max.fetch_max(ns, Ordering::Relaxed);
    }

    /// Samples.
    pub fn n(&self) -> u64 {
        self.n.load(Ordering::Relaxed)
    }

    /// The value below which fraction `p` of the samples lie (nearest rank, the bucket's geometric middle), µs.
    fn quantile_us(&self, p: f64) -> f64 {
        let n = self.n();
        let rank = ((p * n as f64).ceil() as u64).clamp(1, n.max(1));
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                return GROWTH.powf(i as f64 + 0.5) / 1e3;
            }
        }
        self.max.load(Ordering::Relaxed) as f64 / 1e3
    }

    /// Mean, p50, p99 and max, µs; `None` without samples.
    pub fn latencies(&self) -> Option<crate::echo::Latencies> {
        let n = self.n();
        (n > 0).then(|| crate::echo::Latencies {
            n: n as usize,
            mean: self.sum.load(Ordering::Relaxed) as f64 / n as f64 / 1e3,
            p50: self.quantile_us(0.50),
            p99: self.quantile_us(0.99),
            max: self.max.load(Ordering::Relaxed) as f64 / 1e3,
        })
    }
}

/// What one run measured.
pub struct Measured {
    /// Publications after the warm-up (timer topics; forwarded ones are counted by their origin).
    pub published: u64,
    /// Deliveries to consuming subscriptions expected from those.
    pub expected: u64,
    /// End-to-end latencies.
    pub hist: Arc<Hist>,
    /// CPU %, 100 = one CPU.
    pub cpu_pct: f64,
    /// Mean VmRSS after the warm-up, MB.
    pub rss_mb: f64,
    /// Last third over first third of the VmRSS samples, %.
    pub rss_growth_pct: f64,
    /// VmRSS samples taken.
    pub rss_samples: usize,
    /// Deep copies per publication (all publications, forwarded ones included).
    pub copies_per_pub: f64,
    /// Decodes per publication.
    pub decodes_per_pub: f64,
}

