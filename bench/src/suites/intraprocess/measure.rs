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

/// Minor page faults of the whole process so far (`getrusage(RUSAGE_SELF)`).
pub fn minor_faults() -> u64 {
    rusage(libc::RUSAGE_SELF).ru_minflt as u64
}

fn rusage(who: libc::c_int) -> libc::rusage {
    // SAFETY: rusage is plain data; getrusage fills the valid local it is given.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    }
}

/// What one deep copy of an image costs on this machine, with this run's allocator settings, outside any bus: the
/// floor under the latency of a graph that requires one.
pub struct CopyFloor {
    /// p50 of back-to-back copies (source and destination in cache), µs.
    pub warm_us: f64,
    /// p50 of copies made after 33 ms idle, as each frame of the pipelines is, µs.
    pub idle_us: f64,
    /// Minor page faults per copy (0: the allocator hands back memory already faulted in).
    pub faults_per_copy: f64,
    /// (copy's address - original's) % 4096, the most frequent value (a few bytes: 4 KiB aliasing is possible).
    pub alias: usize,
}

/// Measures [`CopyFloor`] the way the camera and the bus make an image and its copy: a fresh `vec![0x5a; bytes]`
/// (the camera), then its `clone()` (the copy), both freed before the next one. About 0.6 s.
pub fn copy_floor(bytes: usize) -> CopyFloor {
    let one = |idle: bool| {
        if idle {
            std::thread::sleep(std::time::Duration::from_millis(33));
        }
        let src = vec![0x5a_u8; bytes];
        let f0 = rusage(libc::RUSAGE_THREAD).ru_minflt;
        let t0 = mono_ns();
        let dst = src.clone();
        let ns = mono_ns() - t0;
        let faults = rusage(libc::RUSAGE_THREAD).ru_minflt - f0;
        std::hint::black_box(dst.get(bytes / 2));
        (ns as f64 / 1e3, faults as f64, (dst.as_ptr() as usize).wrapping_sub(src.as_ptr() as usize) % 4096)
    };
    let p50 = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    // The first copies fault the heap in; they are not what a running graph sees.
    for _ in 0..3 {
        one(false);
    }
    let warm: Vec<_> = (0..30).map(|_| one(false)).collect();
    let idle: Vec<_> = (0..15).map(|_| one(true)).collect();
    let mut aliases: Vec<usize> = warm.iter().chain(&idle).map(|x| x.2).collect();
    aliases.sort_unstable();
    let alias = aliases.chunk_by(|a, b| a == b).max_by_key(|c| c.len()).map_or(0, |c| c[0]);
    CopyFloor {
        faults_per_copy: warm.iter().chain(&idle).map(|x| x.1).sum::<f64>() / (warm.len() + idle.len()) as f64,
        warm_us: p50(warm.iter().map(|x| x.0).collect()),
        idle_us: p50(idle.iter().map(|x| x.0).collect()),
        alias,
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

    /// Forgets every sample (only while nothing records).
    pub fn reset(&self) {
        for b in &self.buckets {
            b.store(0, Ordering::Relaxed);
        }
        for a in [&self.n, &self.sum, &self.max] {
            a.store(0, Ordering::Relaxed);
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
    pub fn latencies(&self) -> Option<crate::harness::Latencies> {
        let n = self.n();
        (n > 0).then(|| crate::harness::Latencies {
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
    /// How long each of those deep copies took (`Frame::clone` timed), when there were any.
    pub copy: Option<crate::harness::Latencies>,
    /// (copy's address - original's) % 4096 of the last copy.
    pub copy_alias: u64,
    /// Minor page faults of the process per publication over the measured part.
    pub faults_per_pub: f64,
}
