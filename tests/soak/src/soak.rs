//! The soak test (`nerve-soak [--minutes N] [--quick] [--json]`, tests/soak/README.md): inproc, shm and
//! udpm traffic at once for minutes, while processes are killed and restarted, subscriptions made and dropped and
//! channels made and removed; it prints, per period (a minute; 10 s with `--quick`, which runs one minute), what was
//! delivered and lost (by reason), the resident memory (what each long-lived process holds, with its allocator's
//! in-use bytes and its code pages apart) and open descriptors of every long-lived process, the shm files in the
//! channel directory and the latency of the shm reader that keeps up, then checks its bars.
//!
//! Every process is this program in a hidden role (`soak-role ...`): publishers (`pub`), subscribers (`sub`, one
//! keeping up, one falling behind on purpose), and an in-process bus (`inproc`). Each writes one JSON line of
//! counters a second on stdout; the orchestrator reads them. A message carries its writer's id, its sequence number
//! on its channel and its publish time (CLOCK_MONOTONIC, shared by every process), so a subscriber counts a gap in a
//! writer's sequence as lost and measures latency.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nerve_bus::Bus;
use serde_json::json;

use crate::sys::{base_port, fix_mmap_threshold, heap_in_use_bytes, mono_ns, release_free_pages};

/// The sizes published, by channel index (the 1 MiB one on a channel of its own, at a low rate).
const SIZES: [usize; 5] = [64, 256, 1024, 4096, 16384];
const BIG: usize = 1 << 20;
const HEADER: usize = 24;

/// One soak run's shape.
struct Shape {
    periods: usize,
    period: Duration,
    /// Messages a second across all publishers.
    rate: u64,
    /// shm channels of the main publisher (the 1-to-200 mix: the others have fewer).
    shm_channels: usize,
    /// A killed process is restarted this often.
    kill_every: Duration,
    /// Whether the main publisher's channels are made with rings of 64 frames of their own message size, rather
    /// than the URL's 64 frames of 16 KiB. A ring's pages count in the resident memory of every process mapping it
    /// the first time that process touches them, so memory is flat only once every ring has wrapped; at the quick
    /// run's rate a 1 MiB ring of 64-byte messages wraps after more than two minutes, longer than the whole run,
    /// while a ring of its own message size wraps within its first second.
    rings_of_message_size: bool,
}

impl Shape {
    fn new(quick: bool, minutes: Option<u64>) -> Shape {
        if quick {
            Shape {
                periods: 6,
                period: Duration::from_secs(10),
                rate: 5_000,
                shm_channels: 20,
                kill_every: Duration::from_secs(5),
                rings_of_message_size: true,
            }
        } else {
            let periods = minutes.unwrap_or(60).max(2) as usize;
            Shape {
                periods,
                period: Duration::from_secs(60),
                rate: 100_000,
                shm_channels: 200,
                kill_every: Duration::from_secs(5),
                // 200 channels of 1 MiB wrap within the first of 60 periods.
                rings_of_message_size: false,
            }
        }
    }
}

/// `soak-role ...`: runs a role and never returns to the suite.
pub fn hidden_role(args: &[String]) -> Option<ExitCode> {
    if args.get(1).map(String::as_str) != Some("soak-role") {
        return None;
    }
    fix_mmap_threshold();
    let result = match args.get(2).map(String::as_str) {
        Some("pub") => publisher(&args[3..]),
        Some("sub") => subscriber(&args[3..]),
        Some("inproc") => inproc(&args[3..]),
        _ => Err("usage: soak-role pub|sub|inproc ...".into()),
    };
    Some(match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nerve-soak soak-role: {e}");
            ExitCode::from(3)
        }
    })
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, String> {
    args.get(i).and_then(|a| a.parse().ok()).ok_or_else(|| format!("{what}: missing or not a number"))
}

fn message(writer: u64, seq: u64, len: usize) -> Vec<u8> {
    let mut m = vec![(seq as u8) ^ 0x5a; len.max(HEADER)];
    m[..8].copy_from_slice(&writer.to_le_bytes());
    m[8..16].copy_from_slice(&seq.to_le_bytes());
    m[16..24].copy_from_slice(&mono_ns().to_le_bytes());
    m
}

/// Test-only: a publisher started with this set leaks this many KiB a second (see [`LEAKING_ROLE`]), so that a
/// test can show the memory bar fails on a leak.
const LEAK_ENV: &str = "NERVE_SOAK_INJECT_LEAK_KIB_PER_S";
/// The one role given [`LEAK_ENV`]: the others stay healthy, so one run shows the bar failing on the leak and
/// holding for every process that does not leak.
const LEAKING_ROLE: &str = "udpm pub";

/// `pub URL PREFIX CHANNELS RATE`: publishes RATE messages a second round-robin on PREFIX/0..CHANNELS (sizes from
/// [`SIZES`]; PREFIX/big gets 1 MiB messages at 5 Hz), until killed or its stdin closes.
fn publisher(args: &[String]) -> Result<(), String> {
    let url = args.first().ok_or("URL")?;
    let prefix = args.get(1).ok_or("PREFIX")?;
    let channels: usize = arg(args, 2, "CHANNELS")?;
    let rate: u64 = arg(args, 3, "RATE")?;
    let bus = Bus::new(Some(url)).map_err(|e| format!("{url}: {e}"))?;
    let writer = u64::from(std::process::id()) << 20 | (mono_ns() & 0xfffff);
    let names: Vec<String> = (0..channels).map(|i| format!("{prefix}/{i}")).collect();
    let big = format!("{prefix}/big");
    let mut seqs = vec![0u64; channels + 1];
    let stop = stdin_closed();
    let mut clock = Ticker::new(rate);
    let (mut published, mut errors, mut last_report) = (0u64, 0u64, Instant::now());
    let leak_kib: usize = std::env::var(LEAK_ENV).ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    while !stop.load(Ordering::Relaxed) {
        for tick in clock.due() {
            let i = (tick % channels as u64) as usize;
            seqs[i] += 1;
            if bus.publish_raw(&names[i], &message(writer, seqs[i], SIZES[i % SIZES.len()])).is_err() {
                errors += 1;
            }
            published += 1;
            if (tick + 1) % (rate / 5).max(1) == 0 {
                seqs[channels] += 1;
                if bus.publish_raw(&big, &message(writer, seqs[channels], BIG)).is_err() {
                    errors += 1;
                }
            }
        }
        if last_report.elapsed() >= Duration::from_secs(1) {
            if leak_kib > 0 {
                // Written, so that its pages are resident; never freed.
                // black_box: an allocation nothing reads may be left out by the optimiser.
                std::hint::black_box(Box::leak(vec![0xa5u8; leak_kib * 1024].into_boxed_slice()));
            }
            println!(
                "{}",
                json!({"published": published, "skipped": clock.skipped, "publish_errors": errors, "heap_kib": heap_kib()})
            );
            last_report = Instant::now();
        }
        thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// What the allocator counts as in use, KiB (see [`heap_in_use_bytes`]). Called once a second by every role as it
/// reports (and by the orchestrator as it samples), it first hands free pages back (see [`release_free_pages`]),
/// so that the resident memory sampled is what the process uses.
fn heap_kib() -> u64 {
    release_free_pages();
    heap_in_use_bytes() / 1024
}

/// A publisher's clock: ticks at `rate` a second since it started. Behind by more than 10 ms of ticks (the host
/// stalled the process), it skips the ticks it missed, as a timer-driven robot publisher does (rclcpp's timers skip
/// missed periods; a controller sends no stale commands): publishing a long stall's backlog at once would overrun
/// every 64-frame ring, however fast its readers are. What it skips is counted and printed.
struct Ticker {
    start: Instant,
    rate: u64,
    next: u64,
    skipped: u64,
}

impl Ticker {
    fn new(rate: u64) -> Ticker {
        Ticker { start: Instant::now(), rate, next: 0, skipped: 0 }
    }

    /// The ticks due now, oldest first (none skipped within the last 10 ms).
    fn due(&mut self) -> std::ops::Range<u64> {
        let due = (self.start.elapsed().as_secs_f64() * self.rate as f64) as u64;
        let late_limit = (self.rate / 100).max(1);
        if due > self.next + late_limit {
            self.skipped += due - self.next - late_limit;
            self.next = due - late_limit;
        }
        let ticks = self.next..due.max(self.next);
        self.next = ticks.end;
        ticks
    }
}

/// A flag set when stdin reaches its end: the orchestrator closes it to stop a role (and the kernel does when the
/// orchestrator dies, so no role outlives it).
fn stdin_closed() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    thread::spawn(move || {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
        f.store(true, Ordering::Relaxed);
    });
    flag
}

/// What a subscriber has counted.
#[derive(Default)]
struct Tally {
    delivered: u64,
    lost_gap: u64,
    corrupt: u64,
    latencies_us: Vec<u64>,
    max_us: u64,
    last: HashMap<(String, u64), u64>,
}

impl Tally {
    fn take(&mut self, channel: &str, data: &[u8]) {
        if data.len() < HEADER {
            self.corrupt += 1;
            return;
        }
        let word = |i: usize| u64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let (writer, seq, sent) = (word(0), word(1), word(2));
        if data[HEADER..].iter().any(|&b| b != (seq as u8) ^ 0x5a) {
            self.corrupt += 1;
            return;
        }
        self.delivered += 1;
        let last = self.last.entry((channel.to_owned(), writer)).or_insert(seq - 1);
        self.lost_gap += seq.saturating_sub(*last + 1);
        *last = (*last).max(seq);
        let us = mono_ns().saturating_sub(sent) / 1000;
        self.max_us = self.max_us.max(us);
        if self.latencies_us.len() < 2000 {
            self.latencies_us.push(us);
        }
    }
}

/// `sub URL PATTERN SLOW_US`: subscribes to PATTERN and counts what arrives (sleeping SLOW_US per message, to fall
/// behind, with LCM's queue of 30 that drops the oldest; without SLOW_US its queue is unbounded, so what it loses
/// was lost before it); every 2 s it also makes a second subscription and drops it a second later.
fn subscriber(args: &[String]) -> Result<(), String> {
    let url = args.first().ok_or("URL")?;
    let pattern = args.get(1).ok_or("PATTERN")?;
    let slow_us: u64 = arg(args, 2, "SLOW_US")?;
    let bus = Bus::new(Some(url)).map_err(|e| format!("{url}: {e}"))?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let t = tally.clone();
    let capacity = if slow_us > 0 { nerve_bus::DEFAULT_CAPACITY } else { 0 };
    let sub = bus
        .subscribe_with(pattern, capacity, nerve_bus::Overflow::DropOldest, move |m| {
            t.lock().expect("tally").take(&m.channel, &m.data);
            if slow_us > 0 {
                thread::sleep(Duration::from_micros(slow_us));
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    let dispatcher = bus.spawn_dispatcher().map_err(|e| e.to_string())?;
    report_loop(&bus, &tally, Some(&sub), pattern);
    drop(dispatcher);
    Ok(())
}

/// Prints the counters once a second until stdin closes, making and dropping an extra subscription as it goes.
fn report_loop(bus: &Bus, tally: &Mutex<Tally>, sub: Option<&nerve_bus::Subscription>, pattern: &str) {
    let stop = stdin_closed();
    let churned = Arc::new(AtomicU64::new(0));
    let mut extra = None;
    let mut tick = 0u64;
    while !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_secs(1));
        tick += 1;
        // Subscriptions made and dropped: one every 2 s, dropped the second after.
        if tick.is_multiple_of(2) {
            let c = churned.clone();
            extra = bus
                .subscribe_raw(pattern, move |_| {
                    c.fetch_add(1, Ordering::Relaxed);
                })
                .ok();
        } else if let Some(s) = extra.take() {
            let _ = bus.unsubscribe(&s);
        }
        let queue_lost = sub.and_then(|s| bus.stats(s).ok()).map_or(0, |s| s.dropped_overflow);
        let mut t = tally.lock().expect("tally");
        let mut lat = std::mem::take(&mut t.latencies_us);
        lat.sort_unstable();
        println!(
            "{}",
            json!({"delivered": t.delivered, "lost_gap": t.lost_gap, "lost_queue": queue_lost, "corrupt": t.corrupt,
                   "lat_us": lat, "max_us": std::mem::take(&mut t.max_us), "heap_kib": heap_kib()})
        );
    }
}

/// `inproc RATE CHANNELS`: an in-process bus with a publisher thread and a subscriber on it.
fn inproc(args: &[String]) -> Result<(), String> {
    let rate: u64 = arg(args, 0, "RATE")?;
    let channels: usize = arg(args, 1, "CHANNELS")?;
    let bus = Arc::new(Bus::new(Some("inproc://soak")).map_err(|e| e.to_string())?);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let t = tally.clone();
    let sub = bus
        .subscribe_with("soak/.*", 0, nerve_bus::Overflow::DropOldest, move |m| {
            t.lock().expect("tally").take(&m.channel, &m.data);
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    let dispatcher = bus.spawn_dispatcher().map_err(|e| e.to_string())?;
    let publishing = bus.clone();
    thread::spawn(move || {
        let names: Vec<String> = (0..channels).map(|i| format!("soak/{i}")).collect();
        let mut seqs = vec![0u64; channels];
        let mut clock = Ticker::new(rate);
        loop {
            for tick in clock.due() {
                let i = (tick % channels as u64) as usize;
                seqs[i] += 1;
                let _ = publishing.publish_raw(&names[i], &message(1, seqs[i], SIZES[i % SIZES.len()]));
            }
            thread::sleep(Duration::from_millis(1));
        }
    });
    report_loop(&bus, &tally, Some(&sub), "soak/.*");
    drop(dispatcher);
    Ok(())
}

/// A role process and the latest counters it reported.
struct Role {
    name: String,
    args: Vec<String>,
    keep_latencies: bool,
    reports: bool,
    child: Child,
    latest: Arc<Mutex<serde_json::Value>>,
    latencies: Arc<Mutex<(Vec<u64>, u64)>>,
    restarts: u64,
}

impl Role {
    /// Starts a role; only a role started with `keep_latencies` has its latency samples kept (for the period's
    /// figures): every subscriber reports up to 2000 a second, and nobody takes the others', so keeping them would
    /// grow the orchestrator by megabytes a minute.
    fn start(name: &str, args: &[String], keep_latencies: bool) -> Result<Role, String> {
        Role::start_with(name, args, keep_latencies, true)
    }

    /// [`Role::start`]; a role started with `reports` false has its counters thrown away: the victim, restarted
    /// every few seconds, would otherwise need a new reading thread in this process each time, whose stack pages
    /// (fresh or reused from glibc's cache, more or fewer of them touched) move this process's resident memory by
    /// hundreds of KiB.
    fn start_with(name: &str, args: &[String], keep_latencies: bool, reports: bool) -> Result<Role, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut command = Command::new(exe);
        if name != LEAKING_ROLE {
            command.env_remove(LEAK_ENV);
        }
        let child = command
            .arg("soak-role")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(if reports { Stdio::piped() } else { Stdio::null() })
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        let latest = Arc::new(Mutex::new(json!({})));
        let latencies = Arc::new(Mutex::new((Vec::new(), 0)));
        let (l, lat) = (latest.clone(), latencies.clone());
        let mut role = Role {
            name: name.into(),
            args: args.to_vec(),
            keep_latencies,
            reports,
            child,
            latest,
            latencies,
            restarts: 0,
        };
        let Some(out) = role.child.stdout.take() else { return Ok(role) };
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
                if let Some(samples) = v["lat_us"].as_array().filter(|_| keep_latencies) {
                    let mut g = lat.lock().expect("latencies");
                    g.0.extend(samples.iter().filter_map(|s| s.as_u64()));
                    g.1 = g.1.max(v["max_us"].as_u64().unwrap_or(0));
                }
                *l.lock().expect("latest") = v;
            }
        });
        Ok(role)
    }

    fn counter(&self, key: &str) -> u64 {
        self.latest.lock().expect("latest")[key].as_u64().unwrap_or(0)
    }

    fn kill_and_restart(&mut self) -> Result<(), String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let restarts = self.restarts + 1;
        *self = Role::start_with(&self.name, &self.args.clone(), self.keep_latencies, self.reports)?;
        self.restarts = restarts;
        Ok(())
    }

    fn stop(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `file` is a channel's temporary file (`.nerve-NAME.PID.N.tmp`, made before the channel is linked under
/// its name) whose process is gone: what a process killed while making a channel leaves behind.
fn left_by_dead_process(file: &str) -> bool {
    let Some(rest) = file.strip_suffix(".tmp") else { return false };
    let mut parts = rest.rsplit('.');
    let (_, pid) = (parts.next(), parts.next());
    pid.and_then(|p| p.parse::<u32>().ok()).is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
}

/// A process's resident memory, KiB: what it holds (anonymous and shared memory: its heap, stacks, mapped channels)
/// and its code (`RssFile`: pages of the executable and libraries it has run, shared with every process running
/// them, faulted in the first time a path runs and dropped by the kernel when it likes; no leak can grow it).
struct Resident {
    held: u64,
    code: u64,
}

fn resident_kib(pid: u32) -> Resident {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let (total, code) = (field("VmRSS:"), field("RssFile:"));
    Resident { held: total.saturating_sub(code), code }
}

fn open_fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count() as u64).unwrap_or(0)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// One period's figures; per-process figures are in the order of the suite's process names.
struct Period {
    delivered: u64,
    lost: [(&'static str, u64); 3],
    /// What the shm reader that keeps up lost in the period (gaps, its queue, corrupt).
    shm_keepup_lost: u64,
    /// Ticks the shm and udpm publishers skipped in the period because the host stalled them (see [`Ticker`]; the
    /// victim's are not counted: each restart starts its count again).
    skipped: u64,
    /// Per process: the least the allocator counted as in use in the period (see [`heap_in_use_bytes`]).
    heap_kib: Vec<u64>,
    /// Per process: the lowest resident memory it held (see [`Resident`]) sampled in the period.
    held_kib: Vec<u64>,
    /// Per process: the highest.
    held_peak_kib: Vec<u64>,
    /// Per process: the lowest `VmRSS` (held memory and code pages together) sampled in the period (what the bar
    /// judges).
    vmrss_kib: Vec<u64>,
    /// Per process: its code pages' resident memory at the end of the period.
    code_kib: Vec<u64>,
    /// Per process: the fewest open descriptors sampled in the period.
    fds: Vec<u64>,
    shm_files: usize,
    leftovers: usize,
    p50: u64,
    p99: u64,
    max: u64,
}

/// Runs the suite; 0 when every bar passes, 1 otherwise, 2 when it could not run.
pub fn run(quick: bool, json_out: bool, minutes: Option<u64>) -> i32 {
    match soak(&Shape::new(quick, minutes), json_out) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("nerve-soak: {e}");
            2
        }
    }
}

fn soak(shape: &Shape, json_out: bool) -> Result<bool, String> {
    // This process's memory is judged too.
    fix_mmap_threshold();
    let dir = PathBuf::from(if Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" })
        .join(format!("nerve-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let shm = format!("shm://?dir={}&frames=64&frame_size=16K", dir.display());
    let port = base_port() + 2_150;
    let udpm = format!("udpm://239.255.76.89:{port}?ttl=0&recv_buf_size=8388608");
    // The 1 MiB channels are made first with room for their messages; the bus uses a channel as its creator made it.
    for prefix in ["soak", "victim"] {
        let config = nerve_shm::ChannelConfig::new(8, BIG as u64).dir(&dir);
        nerve_shm::Channel::open_or_create(
            &nerve_bus::provider::shm::encode_channel(&format!("{prefix}/big")),
            &config,
        )
        .map_err(|e| e.to_string())?;
    }
    if shape.rings_of_message_size {
        for i in 0..shape.shm_channels {
            let config = nerve_shm::ChannelConfig::new(64, SIZES[i % SIZES.len()] as u64).dir(&dir);
            nerve_shm::Channel::open_or_create(
                &nerve_bus::provider::shm::encode_channel(&format!("soak/{i}")),
                &config,
            )
            .map_err(|e| e.to_string())?;
        }
    }
    let s = |x: &str| x.to_string();
    let r = shape.rate;
    let mut roles = vec![
        Role::start(
            "shm pub",
            &[s("pub"), shm.clone(), s("soak"), shape.shm_channels.to_string(), (r * 5 / 10).to_string()],
            false,
        )?,
        Role::start("udpm pub", &[s("pub"), udpm.clone(), s("soak"), s("8"), (r / 10).to_string()], false)?,
        Role::start("shm sub (keeps up)", &[s("sub"), shm.clone(), s("soak/.*"), s("0")], true)?,
        Role::start("shm sub (falls behind)", &[s("sub"), shm.clone(), s("soak/.*"), s("200")], false)?,
        Role::start("udpm sub", &[s("sub"), udpm.clone(), s("soak/.*"), s("0")], false)?,
        Role::start("inproc", &[s("inproc"), (r * 3 / 10).to_string(), s("50")], false)?,
    ];
    let victim_args = [s("pub"), shm.clone(), s("victim"), s("4"), (r / 10).to_string()];
    // Nothing reads the victim's counters (its subscriber's are read).
    let mut victim = Role::start_with("victim pub", &victim_args, false, false)?;
    let victim_sub = Role::start("victim sub", &[s("sub"), shm.clone(), s("victim/.*"), s("0")], false)?;
    let mut periods: Vec<Period> = Vec::new();
    let mut churn = 0u64;
    let mut last_kill = Instant::now();
    // The counters' totals at the end of the last period (delivered, lost by reason, lost by the shm reader that
    // keeps up, ticks skipped): roles report totals, periods print differences.
    let mut seen = (0u64, [0u64; 3], 0u64, 0u64);
    let start = Instant::now();
    if !json_out {
        println!(
            "soak: {} periods of {:?}, about {} msg/s; channels in {}",
            shape.periods,
            shape.period,
            r,
            dir.display()
        );
    }
    // The long-lived processes whose memory and descriptors are sampled: the roles (never restarted) and this one.
    let pids: Vec<u32> = roles.iter().map(|r| r.child.id()).chain([std::process::id()]).collect();
    let names: Vec<String> = roles.iter().map(|r| r.name.clone()).chain(["orchestrator".into()]).collect();
    for index in 0..shape.periods {
        let end = start + shape.period * (index as u32 + 1);
        // Memory and descriptors are sampled at every turn: a process's queue holds a moment's backlog (megabytes
        // when the scheduler stalls a reader), and a descriptor may be on its way out (the reader of a killed
        // victim's pipe closes it a moment after the restart), so one sample a minute says more about that moment
        // than about growth. The period's lowest sample is what a leak raises; the highest memory is printed beside.
        let mut held = vec![(u64::MAX, 0u64); pids.len()];
        let mut vmrss = vec![u64::MAX; pids.len()];
        let mut code = vec![0u64; pids.len()];
        let mut fds = vec![u64::MAX; pids.len()];
        let mut heap = vec![u64::MAX; pids.len()];
        while Instant::now() < end {
            thread::sleep(Duration::from_millis(250));
            for (i, ((pid, (low, high)), fd_low)) in pids.iter().zip(&mut held).zip(&mut fds).enumerate() {
                let now = resident_kib(*pid);
                (*low, *high) = ((*low).min(now.held), (*high).max(now.held));
                vmrss[i] = vmrss[i].min(now.held + now.code);
                code[i] = now.code;
                *fd_low = (*fd_low).min(open_fds(*pid));
                // 0 until the role's first report.
                let live = roles.get(i).map_or_else(heap_kib, |r| r.counter("heap_kib"));
                if live > 0 {
                    heap[i] = heap[i].min(live);
                }
            }
            // A process killed and restarted every few seconds; its channels are removed while it is dead (a later
            // incarnation makes them again): no file of it may stay behind.
            if last_kill.elapsed() >= shape.kill_every {
                let _ = victim.child.kill();
                let _ = victim.child.wait();
                for i in 0..4 {
                    let _ = nerve_shm::Channel::remove(
                        &nerve_bus::provider::shm::encode_channel(&format!("victim/{i}")),
                        Some(&dir),
                    );
                }
                victim.kill_and_restart()?;
                last_kill = Instant::now();
            }
            // Channels made and removed.
            churn += 1;
            let name = format!("churn-{}", churn % 4);
            if churn.is_multiple_of(2) {
                let _ = nerve_shm::Channel::create(&name, &nerve_shm::ChannelConfig::new(4, 64).dir(&dir));
            } else {
                let _ = nerve_shm::Channel::remove(&format!("churn-{}", (churn - 1) % 4), Some(&dir));
            }
        }
        let delivered: u64 =
            roles[2..].iter().map(|r| r.counter("delivered")).sum::<u64>() + victim_sub.counter("delivered");
        let lost = [
            // A gap the subscription's own queue did not cause: lost on the way (transport, ring overwritten).
            (
                "transport",
                roles[2..].iter().map(|r| r.counter("lost_gap").saturating_sub(r.counter("lost_queue"))).sum::<u64>(),
            ),
            ("queue overflow", roles[2..].iter().map(|r| r.counter("lost_queue")).sum::<u64>()),
            ("corrupt", roles[2..].iter().map(|r| r.counter("corrupt")).sum::<u64>()),
        ];
        let keepup = &roles[2];
        let shm_keepup_lost = keepup.counter("lost_gap") + keepup.counter("lost_queue") + keepup.counter("corrupt");
        let (mut lat, max) = std::mem::take(&mut *keepup.latencies.lock().expect("latencies"));
        lat.sort_unstable();
        let files: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        let leftovers = files.iter().filter(|f| left_by_dead_process(f)).count();
        let skipped = roles[..2].iter().map(|r| r.counter("skipped")).sum::<u64>();
        let p = Period {
            delivered: delivered - seen.0,
            // Saturating: "transport" is gaps less queue overflows, read from two counters at slightly different
            // moments, so its running total can step back when a burst of overflows is counted before its gaps.
            lost: [0, 1, 2].map(|i| (lost[i].0, lost[i].1.saturating_sub(seen.1[i]))),
            shm_keepup_lost: shm_keepup_lost - seen.2,
            skipped: skipped - seen.3,
            heap_kib: heap,
            held_kib: held.iter().map(|(low, _)| *low).collect(),
            held_peak_kib: held.iter().map(|(_, high)| *high).collect(),
            vmrss_kib: vmrss,
            code_kib: code,
            fds,
            shm_files: files.len(),
            leftovers,
            p50: percentile(&lat, 0.5),
            p99: percentile(&lat, 0.99),
            max,
        };
        seen = (delivered, [lost[0].1, lost[1].1, lost[2].1], shm_keepup_lost, skipped);
        print_period(index, &p, &names, json_out);
        periods.push(p);
    }
    let all_roles: Vec<Role> = roles.drain(..).chain([victim, victim_sub]).collect();
    for role in all_roles {
        role.stop();
    }
    let passed = bars(&periods, &names, json_out);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(passed)
}

fn print_period(index: usize, p: &Period, names: &[String], json_out: bool) {
    if json_out {
        let per_process = |values: &[u64]| -> serde_json::Map<_, _> {
            names.iter().zip(values).map(|(n, v)| (n.clone(), json!(v))).collect()
        };
        let lost: serde_json::Map<_, _> = p.lost.iter().map(|(n, v)| (n.to_string(), json!(v))).collect();
        println!(
            "{}",
            json!({"suite": "soak", "kind": "period", "period": index + 1, "delivered": p.delivered, "lost": lost,
                   "shm_keepup_lost": p.shm_keepup_lost, "skipped_ticks": p.skipped,
                   "held_kib": per_process(&p.held_kib), "held_peak_kib": per_process(&p.held_peak_kib),
                   "vmrss_kib": per_process(&p.vmrss_kib), "code_kib": per_process(&p.code_kib),
                   "heap_kib": per_process(&p.heap_kib), "fds": per_process(&p.fds),
                   "shm_files": p.shm_files, "leftover_files": p.leftovers,
                   "latency_p50_us": p.p50, "latency_p99_us": p.p99, "latency_max_us": p.max})
        );
        return;
    }
    let lost: Vec<String> = p.lost.iter().map(|(n, v)| format!("{n} {v}")).collect();
    println!(
        "period {:>3}: delivered {}, lost: {} (shm reader keeping up: {}); ticks skipped {}; shm files {} ({} left \
         over); latency p50 {} us, p99 {} us, max {} us",
        index + 1,
        p.delivered,
        lost.join(", "),
        p.shm_keepup_lost,
        p.skipped,
        p.shm_files,
        p.leftovers,
        p.p50,
        p.p99,
        p.max
    );
    // Two decimals (10 KiB): the bar is 1 % of a process that may be resident at only a few MiB.
    let mib = |kib: u64| kib as f64 / 1024.0;
    let procs: Vec<String> = (0..names.len())
        .map(|i| {
            format!(
                "{}: {:.2} MiB (held {:.2}, up to {:.2}; malloc in use {:.2}; code {:.2}), {} fds",
                names[i],
                mib(p.vmrss_kib[i]),
                mib(p.held_kib[i]),
                mib(p.held_peak_kib[i]),
                mib(p.heap_kib[i]),
                mib(p.code_kib[i]),
                p.fds[i]
            )
        })
        .collect();
    println!("            {}", procs.join("; "));
}

/// How far the highest of `values` rises above their median, as a fraction of it (0 when nothing does), and the
/// median: the flatness bars' measure of growth.
fn rise_above_median(values: &[f64]) -> (f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let highest = sorted.last().copied().unwrap_or(0.0);
    ((highest - median).max(0.0) / median.max(1.0), median)
}

/// Checks the bars over the periods; prints PASS/FAIL for each and returns whether all passed.
fn bars(periods: &[Period], names: &[String], json_out: bool) -> bool {
    let half = &periods[periods.len() / 2..];
    // Also returns each process's deviation, %, in the order of `names`.
    let flat = |series: &dyn Fn(&Period) -> &[u64]| -> (bool, String, Vec<f64>) {
        let mut worst = (0.0f64, String::new());
        let mut each = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let values: Vec<f64> = half.iter().map(|p| series(p)[i] as f64).collect();
            // Growth is what a leak makes, so the bar is one-sided: how far any period rises above the last half's
            // median. A period whose lowest sample dips (a churned subscription's queue freed and the heap trimmed
            // at that moment: 130 KiB of a 5 MiB process in the 2026-12-02 hour) is memory given back, not a leak,
            // and against a mean it failed a process that ended where it stood at half time.
            let (rise, median) = rise_above_median(&values);
            each.push(rise * 100.0);
            if rise >= worst.0 {
                let (lo, hi) = values.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                worst = (rise, format!("{name}: {lo} to {hi}, median {median:.0}"));
            }
        }
        (
            worst.0 <= 0.01,
            format!("largest rise above the last half's median: {:.2} % ({})", worst.0 * 100.0, worst.1),
            each,
        )
    };
    let (rss_ok, rss_why, rss_each) = flat(&|p: &Period| &p.vmrss_kib);
    // Not a bar: the memory held, without the code pages (which shrinks the base that 1 % is taken of).
    let (_, held_why, _) = flat(&|p: &Period| &p.held_kib);
    let (fds_ok, fds_why, fds_each) = flat(&|p: &Period| &p.fds);
    let leftovers: usize = periods.iter().map(|p| p.leftovers).sum();
    let keepup_lost: u64 = periods.iter().map(|p| p.shm_keepup_lost).sum();
    let (first, last) = (periods[0].p99.max(1), periods[periods.len() - 1].p99);
    let results = [
        (
            "resident memory flat (each period's lowest VmRSS; last half at most 1 % above its median)",
            rss_ok,
            rss_why,
            Some(rss_each),
        ),
        ("open descriptors flat (last half at most 1 % above its median)", fds_ok, fds_why, Some(fds_each)),
        ("no shm file left by a dead process", leftovers == 0, format!("{leftovers} temporary files seen"), None),
        ("no loss on shm for the reader that keeps up", keepup_lost == 0, format!("{keepup_lost} lost"), None),
        (
            "p99 in the last period within 1.5x of the first",
            last as f64 <= 1.5 * first as f64,
            format!("{first} us, then {last} us"),
            None,
        ),
    ];
    let mut all = true;
    for (bar, pass, why, each) in results {
        all &= pass;
        if json_out {
            let mut line = json!({"suite": "soak", "kind": "bar", "bar": bar, "pass": pass, "detail": why});
            if let Some(each) = each {
                let per: serde_json::Map<_, _> = names.iter().zip(each).map(|(n, d)| (n.clone(), json!(d))).collect();
                line["deviation_pct"] = per.into();
            }
            println!("{line}");
        } else {
            println!("{} {bar}: {why}", if pass { "PASS" } else { "FAIL" });
        }
    }
    let note = "memory held, VmRSS less code pages (not a bar)";
    if json_out {
        println!("{}", json!({"suite": "soak", "kind": "note", "note": note, "detail": held_why}));
    } else {
        println!("NOTE {note}: {held_why}");
    }
    all
}

#[cfg(test)]
mod tests {
    use super::rise_above_median;

    #[test]
    fn a_period_that_dips_is_not_growth_but_a_rise_is() {
        // The inproc role of the 2026-12-02 hour (KiB): flat at about 5230 with two dips of 130 KiB.
        let dips = [5230.0, 5240.0, 5100.0, 5235.0, 5245.0, 5100.0, 5250.0, 5240.0];
        assert!(rise_above_median(&dips).0 < 0.01, "{:?}", rise_above_median(&dips));
        // A steady leak of 3 % over the half: the last period stands 1.5 % above the median (as far as above the
        // mean, which the two-sided bar measured).
        let leak: Vec<f64> = (0..30).map(|i| 5000.0 * (1.0 + 0.03 * i as f64 / 29.0)).collect();
        let (rise, _) = rise_above_median(&leak);
        assert!((0.014..0.016).contains(&rise), "{rise}");
        assert_eq!(rise_above_median(&[]).0, 0.0);
    }
}
