//! Runs one topology on one system, all nodes in this process, and measures it.
//!
//! **Executor model.** Every node's timers and callbacks run on ONE thread, as in ROS 2's intra-process design article's
//! `image_pipeline_all_in_one` (three nodes added to one single-threaded executor) and ros2-performance's
//! single-process runs: the thread fires each timer that is due (it makes a new message, stamps it with
//! CLOCK_MONOTONIC and publishes it) and after each one dispatches every callback that is ready with
//! `Bus::handle_timeout(0)`, then sleeps in `poll()` on the buses' file descriptors until the next timer or a
//! message. The same loop serves every system:
//!
//! - `nerve-inproc`: all nodes share one `inproc://` bus: a publication is pushed into the subscriptions' queues
//!   and dispatched by the same thread right after, with no encoding and no copy beyond ROS 2's intra-process design article's tables (the
//!   loop sleeps only until the next timer: every message comes from its own thread);
//! - `nerve-shm` / `nerve-udpm`: each node has its own bus on the transport (the same graph with inproc turned off):
//!   a publication is encoded, sent, received by the other nodes' buses' receive threads, decoded, queued, and
//!   dispatched by the loop thread when their descriptor wakes it.
//!
//! **Measured.** Latency: at every consuming subscription, now minus the stamp of the message's first publication
//! (for the image pipelines: camera to viewer, through the watermark node), into a fixed log-bucket histogram
//! (1 % resolution; mean and max exact), for messages published after the warm-up. CPU: `getrusage(RUSAGE_SELF)`
//! user + system time over the run divided by its wall time (100 % = one CPU), so it includes every thread of the
//! process (a transport's receive threads too). Memory: VmRSS sampled every 100 ms after the warm-up; "growth" is
//! the mean of the last third of the samples over the mean of the first third. Copies: the `Frame` counters (deep
//! clones, and decodes) divided by the publications, and each clone's duration (two clock reads around it, inside the
//! measured latency: tens of ns). Minor page faults: `getrusage(RUSAGE_SELF)` over the measured part, per
//! publication.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nerve_bus::{Bus, Publisher, Qos, Subscription, Take};

use super::frame::{Frame, CLONES, COPY_ALIAS, COPY_TIME, DECODES};
use super::measure::{cpu_ns, minor_faults, mono_ns, rss_bytes, wait_readable, Hist, Measured, System};
use super::topology::{Topology, IMAGE_BYTES};

/// The multicast group of the udpm runs (not LCM's default; every run gets its own port).
const GROUP: &str = "239.255.76.97";

/// Makes the buses: one shared for inproc, one per node otherwise.
fn buses(topo: &Topology, system: System, port: u16) -> Result<Vec<Bus>, String> {
    let url = match system {
        System::Inproc => format!("inproc://intraprocess-{}-{}", topo.case, std::process::id()),
        // A directory of the run's own, so no other run's channels of the same names mix in; frames of 1 MiB hold
        // the 900 KB images, 8 of them per channel.
        System::Shm => format!("shm://?dir={}&frames=8&frame_size=1M", shm_dir(topo).display()),
        // Large receive buffers: the image pipelines send 900 KB messages to every bus on the group.
        System::Udpm => format!("udpm://{GROUP}:{port}?ttl=0&recv_buf_size=16777216"),
    };
    let open = |u: &str| {
        Bus::new(Some(u)).map_err(|e| match e {
            nerve_bus::BusError::UnknownProvider { .. } if system == System::Shm => {
                "shm provider not built yet (no shm:// in this build of nerve-bus)".to_string()
            }
            e => format!("Bus::new({u}): {}", chain(&e)),
        })
    };
    match system {
        System::Inproc => {
            let bus = open(&url)?;
            Ok(topo.nodes.iter().map(|_| bus.clone()).collect())
        }
        _ => topo.nodes.iter().map(|_| open(&url)).collect(),
    }
}

/// The shm run's channel directory.
fn shm_dir(topo: &Topology) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/dev/shm/nerve-bench-intraprocess-{}-{}", std::process::id(), topo.case))
}

/// An error and its sources, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    // Bounded: error chains are a few links long.
    for _ in 0..8 {
        let Some(next) = cur else { break };
        s.push_str(": ");
        s.push_str(&next.to_string());
        cur = next.source();
    }
    s
}

/// Per-topic publication counters after the warm-up.
struct Counters {
    names: Vec<&'static str>,
    counts: Vec<AtomicU64>,
}

impl Counters {
    fn bump(&self, topic: &str) {
        if let Some(i) = self.names.iter().position(|n| *n == topic) {
            self.counts[i].fetch_add(1, Ordering::Relaxed);
        }
    }
    fn get(&self, topic: &str) -> u64 {
        self.names.iter().position(|n| *n == topic).map_or(0, |i| self.counts[i].load(Ordering::Relaxed))
    }
}

struct Timer {
    topic: &'static str,
    bytes: usize,
    period_ns: u64,
    next_ns: u64,
    publisher: Publisher<Frame>,
}

/// Runs `topo` on `system` for `seconds` (the first tenth, at least 0.2 s, is warm-up) and measures it.
pub fn run(topo: &Topology, system: System, seconds: f64, port: u16) -> Result<Measured, String> {
    if system == System::Shm {
        let dir = shm_dir(topo);
        std::fs::create_dir_all(&dir).map_err(|e| format!("making {}: {e}", dir.display()))?;
        let r = run_on(topo, system, seconds, port);
        let _ = std::fs::remove_dir_all(&dir);
        return r;
    }
    run_on(topo, system, seconds, port)
}

fn run_on(topo: &Topology, system: System, seconds: f64, port: u16) -> Result<Measured, String> {
    let buses = buses(topo, system, port)?;
    let qos = Qos::default();
    let hist = Arc::new(Hist::new());
    let warm_ns = Arc::new(AtomicU64::new(u64::MAX));
    let counters = Arc::new(Counters {
        names: topo.topics.iter().map(|t| t.name).collect(),
        counts: topo.topics.iter().map(|_| AtomicU64::new(0)).collect(),
    });
    let err = |what: &str, e: nerve_bus::BusError| format!("{what}: {}", chain(&e));

    // Forwarded topics' publishers first: the forwarding callbacks hold them.
    let mut forward: Vec<(&'static str, Arc<Publisher<Frame>>)> = Vec::new();
    for (node, bus) in topo.nodes.iter().zip(&buses) {
        for t in node.publishes.iter().filter(|t| topo.topic(t).period_ms.is_none()) {
            forward.push((t, Arc::new(bus.publisher::<Frame>(t, qos).map_err(|e| err(t, e))?)));
        }
    }
    let mut subs: Vec<Subscription> = Vec::new();
    for (node, bus) in topo.nodes.iter().zip(&buses) {
        for s in &node.subscribes {
            let sub = match (s.forward_to, s.take) {
                (Some(to), _) => {
                    let out = Arc::clone(
                        &forward.iter().find(|(t, _)| *t == to).expect("forwarded topics have a publisher").1,
                    );
                    bus.subscribe_owned::<Frame>(s.topic, qos, move |mut f: Frame| {
                        // The watermark: draw on the first row (the message is ours to change), then pass it on.
                        let row = f.0.data.len().min(640 * 3);
                        f.0.data[..row].fill(0xff);
                        let _ = out.publish(f);
                    })
                }
                (None, Take::Owned) => {
                    let (h, w) = (Arc::clone(&hist), Arc::clone(&warm_ns));
                    bus.subscribe_owned::<Frame>(s.topic, qos, move |f: Frame| consume(&f, &h, &w))
                }
                (None, Take::Shared) => {
                    let (h, w) = (Arc::clone(&hist), Arc::clone(&warm_ns));
                    bus.subscribe_shared::<Frame>(s.topic, qos, move |f: Arc<Frame>| consume(&f, &h, &w))
                }
            };
            subs.push(sub.map_err(|e| err(&format!("{} subscribing to {}", node.name, s.topic), e))?);
        }
    }
    let mut timers = Vec::new();
    for (node, bus) in topo.nodes.iter().zip(&buses) {
        for t in node.publishes.iter().map(|t| topo.topic(t)).filter(|t| t.period_ms.is_some()) {
            let period_ns = t.period_ms.unwrap_or(1) * 1_000_000;
            let publisher = bus.publisher::<Frame>(t.name, qos).map_err(|e| err(t.name, e))?;
            timers.push(Timer { topic: t.name, bytes: t.bytes, period_ns, next_ns: 0, publisher });
        }
    }
    // The loop sleeps on the descriptors of buses whose messages come from other threads (a transport's receive
    // threads). On the inproc bus every message comes from this thread (a timer or a forwarding callback) and is
    // dispatched right after it is published, so nothing can become ready while the loop sleeps: it sleeps until
    // the next timer only, and the bus, whose descriptor nobody asked for, spends no system call on it.
    let mut fds: Vec<libc::pollfd> = Vec::new();
    let mut loop_buses: Vec<&Bus> = Vec::new();
    for b in &buses {
        if loop_buses.iter().any(|l| l.same_bus(b)) {
            continue;
        }
        if system != System::Inproc {
            let fd = b.fileno().map_err(|e| err("fileno", e))?;
            fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        }
        loop_buses.push(b);
    }

    let start = mono_ns();
    let total_ns = (seconds * 1e9) as u64;
    let warm = start + (total_ns / 10).max(200_000_000);
    let end = start + total_ns;
    warm_ns.store(warm, Ordering::Relaxed);
    for t in &mut timers {
        t.next_ns = start + t.period_ns;
    }
    // Memory sampler.
    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::with_capacity(((seconds * 10.0) as usize).max(16) + 16)));
    let sampler = {
        let (stop, samples) = (Arc::clone(&stop), Arc::clone(&samples));
        std::thread::Builder::new()
            .name("rss-sampler".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if mono_ns() >= warm {
                        if let Some(r) = rss_bytes() {
                            samples.lock().expect("samples").push(r);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
            .map_err(|e| format!("starting the memory sampler: {e}"))?
    };
    let forwarded = || forward.iter().map(|(_, p)| p.stats().published).sum::<u64>();
    let (mut cpu_warm, mut clones_warm, mut decodes_warm, mut pubs_all) = (None, 0, 0, 0u64);
    let (mut pubs_warm, mut fwd_warm, mut publish_errors, mut faults_warm) = (0u64, 0u64, 0u64, 0u64);
    // Drain for a moment after the last publication, so messages in flight arrive.
    let drain_end = end + 300_000_000;
    loop {
        let now = mono_ns();
        if now >= drain_end {
            break;
        }
        if cpu_warm.is_none() && now >= warm {
            cpu_warm = Some((cpu_ns(), now));
            clones_warm = CLONES.load(Ordering::Relaxed);
            decodes_warm = DECODES.load(Ordering::Relaxed);
            pubs_warm = pubs_all;
            fwd_warm = forwarded();
            faults_warm = minor_faults();
            // Copies happen on this thread only (in callbacks it dispatches), so nothing records meanwhile.
            COPY_TIME.reset();
        }
        if now < end {
            for t in timers.iter_mut().filter(|t| t.next_ns <= now) {
                // The message is made (a fresh allocation, as a driver makes one) before the clock is read: the
                // latency is the delivery's, not the producer's.
                let (w, h) = if t.bytes == IMAGE_BYTES { (640, 480) } else { (t.bytes as i32, 1) };
                let mut frame = Frame::new(0, t.bytes, w, h);
                let stamp = mono_ns();
                frame.0.utime = stamp as i64;
                if let Err(e) = t.publisher.publish(frame) {
                    if publish_errors == 0 {
                        eprintln!(
                            "nerve-bench intraprocess: {} publishing on {}: {} (further errors counted)",
                            system.name(),
                            t.topic,
                            chain(&e)
                        );
                    }
                    publish_errors += 1;
                }
                pubs_all += 1;
                if stamp >= warm {
                    counters.bump(t.topic);
                }
                // A late timer fires once, not once per missed period.
                t.next_ns = (t.next_ns + t.period_ns).max(now + t.period_ns / 2);
                // Callbacks that became ready run before the next timer, as soon as they can.
                dispatch(&loop_buses);
            }
        }
        dispatch(&loop_buses);
        let next_timer = if now < end { timers.iter().map(|t| t.next_ns).min().unwrap_or(end) } else { drain_end };
        let now = mono_ns();
        if next_timer > now {
            wait_readable(&mut fds, next_timer - now);
        }
    }
    let (cpu0, t0) = cpu_warm.unwrap_or((cpu_ns(), mono_ns()));
    let cpu_pct = 100.0 * (cpu_ns() - cpu0) as f64 / (mono_ns() - t0).max(1) as f64;
    // Forwarded publications happened in callbacks: their publishers counted them.
    let pubs_total = (pubs_all - pubs_warm) + (forwarded() - fwd_warm);
    let clones = CLONES.load(Ordering::Relaxed) - clones_warm;
    let decodes = DECODES.load(Ordering::Relaxed) - decodes_warm;
    let faults = minor_faults().saturating_sub(faults_warm);
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    if publish_errors > 0 {
        return Err(format!("{publish_errors} publications failed (the first is on stderr)"));
    }
    for s in &subs {
        let _ = s.unsubscribe();
    }
    let samples = samples.lock().expect("samples").clone();
    let third = samples.len() / 3;
    let mean = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len().max(1) as f64;
    let rss_growth_pct =
        if third > 0 { 100.0 * (mean(&samples[samples.len() - third..]) / mean(&samples[..third]) - 1.0) } else { 0.0 };
    let expected = topo
        .nodes
        .iter()
        .flat_map(|n| &n.subscribes)
        .filter(|s| s.forward_to.is_none())
        .map(|s| counters.get(topo.origin(s.topic)))
        .sum();
    Ok(Measured {
        published: topo.topics.iter().map(|t| counters.get(t.name)).sum(),
        expected,
        hist,
        cpu_pct,
        rss_mb: mean(&samples) / 1e6,
        rss_growth_pct,
        rss_samples: samples.len(),
        copies_per_pub: clones as f64 / pubs_total.max(1) as f64,
        decodes_per_pub: decodes as f64 / pubs_total.max(1) as f64,
        copy: COPY_TIME.latencies(),
        copy_alias: COPY_ALIAS.load(Ordering::Relaxed),
        faults_per_pub: faults as f64 / pubs_total.max(1) as f64,
    })
}

/// Runs every callback that is ready on every bus (bounded per call).
fn dispatch(buses: &[&Bus]) {
    for b in buses {
        for _ in 0..10_000 {
            match b.handle_timeout(Duration::ZERO) {
                Ok(true) => {}
                _ => break,
            }
        }
    }
}

/// A consuming callback: reads the message (as a viewer or a control loop would) and records its latency if it was
/// published after the warm-up.
fn consume(f: &Frame, hist: &Hist, warm: &AtomicU64) {
    let now = mono_ns();
    std::hint::black_box(f.0.data.get(f.0.data.len() / 2));
    if f.stamp_ns() >= warm.load(Ordering::Relaxed) {
        hist.record(now.saturating_sub(f.stamp_ns()));
    }
}
