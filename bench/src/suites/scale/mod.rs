//! `nerve-bench scale`: what Nerve costs as a robot grows - many channels, big frames, many readers, many udpm
//! processes - against iceoryx2, real LCM C and a memcpy in the same run. See bench/README.md, "scale".
//!
//! Four parts, every process under measurement started by this driver (pinned) and measured from /proc (`probe`):
//!
//! 1. `channels`: 1 to 1,000 shm channels read by one subscriber process, one channel active at 1 kHz: its threads,
//!    idle CPU (ms/s over an idle window with nothing published), resident memory, and the p50/p99 latency of the
//!    active channel. Nerve: one bus subscription of a pattern over all the channels (`shm://`, whatever receive
//!    path the provider has when this runs); iceoryx2: one subscriber and listener per service, the listeners in one
//!    WaitSet; LCM: one `lcm_subscribe` per channel on udpm.
//! 2. `size`: 64 B to 16 MiB messages over one channel to one reader process, read by copy and zero-copy, polling
//!    and waiting, on nerve-shm and iceoryx2, beside a memcpy of the same size in this process. The writers loan
//!    the frame, fill it, then stamp it and publish: the latency is the publish after the fill and the read.
//! 3. `readers`: 1 to 16 reader processes of one channel at 1 kHz: p50/p99 of the last reader to get each message;
//!    a plain futex broadcast (`futex`) is the control row, the host's floor for waking that many sleepers.
//! 4. `udpm`: 1,000 channels and 10 subscriber processes of 10 channels each, the traffic spread over all the
//!    channels: CPU per process for Nerve's udpm and mpudpm and real LCM C (whose design makes every process read
//!    every datagram). The publisher is this driver on Nerve's bus (udpm and LCM share the wire format).
//!
//! Tables are printed (or JSON lines with `--json`) and written with the SVG plots under `--out DIR`.

mod futex;
mod plot;
mod probe;
pub mod role;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nerve_shm::{Channel, ChannelConfig};
use serde_json::json;

use crate::harness::clock::{self, mono_ns, sleep_until_ns};
use crate::harness::proc::{Proc, Program, Role};
use crate::harness::{base_port, built_program, own_exe, round3, Latencies, GROUP};
use plot::{Axes, Series};
use role::{iox_event, iox_node, iox_pubsub, ReadHow, ROLE_READ, ROLE_SUB, SMALL};

pub use role::hidden_role;

const SUITE: &str = "scale";
const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

/// How big and how long each part is.
struct Plan {
    channels: Vec<usize>,
    idle: Duration,
    lat_count: usize,
    sizes: Vec<usize>,
    size_count: fn(usize) -> usize,
    readers: Vec<usize>,
    readers_count: usize,
    udpm_channels: usize,
    udpm_procs: usize,
    udpm_rate: u64,
    udpm_window: Duration,
    memcpy_reps: usize,
}

fn plan(quick: bool) -> Plan {
    if quick {
        Plan {
            channels: vec![1, 100],
            idle: Duration::from_millis(300),
            lat_count: 50,
            sizes: vec![64, 4 * MIB],
            size_count: |_| 20,
            readers: vec![1, 4],
            readers_count: 50,
            udpm_channels: 100,
            udpm_procs: 3,
            udpm_rate: 2_000,
            udpm_window: Duration::from_millis(300),
            memcpy_reps: 20,
        }
    } else {
        Plan {
            channels: vec![1, 10, 100, 1_000],
            idle: Duration::from_secs(5),
            lat_count: 2_000,
            sizes: vec![64, 4 * KIB, 64 * KIB, MIB, 4 * MIB, 16 * MIB],
            size_count: |size| match size {
                s if s <= 64 * KIB => 1_000,
                s if s <= MIB => 400,
                s if s <= 4 * MIB => 300,
                _ => 100,
            },
            readers: vec![1, 2, 4, 8, 16],
            readers_count: 2_000,
            udpm_channels: 1_000,
            udpm_procs: 10,
            udpm_rate: 10_000,
            udpm_window: Duration::from_secs(5),
            memcpy_reps: 200,
        }
    }
}

/// The send rate for a message size: 1 kHz up to 64 KiB, then what a camera sends (and a 2-core host can fill).
fn size_hz(size: usize) -> f64 {
    match size {
        s if s <= 64 * KIB => 1_000.0,
        s if s <= MIB => 200.0,
        s if s <= 4 * MIB => 100.0,
        _ => 25.0,
    }
}

/// The printed report: lines to stdout as they come (unless JSON), kept for `scale.txt`; JSON lines likewise.
struct Report {
    json: bool,
    text: String,
    lines: Vec<serde_json::Value>,
}

impl Report {
    fn line(&mut self, s: &str) {
        if !self.json {
            println!("{s}");
        }
        self.text.push_str(s);
        self.text.push('\n');
    }

    fn value(&mut self, case: &str, system: &str, metric: &str, value: Option<f64>, unit: &str) {
        let v = json!({"suite": SUITE, "case": case, "system": system, "metric": metric,
            "value": value.map(round3), "unit": unit});
        self.emit(v);
    }

    fn unavailable(&mut self, case: &str, system: &str, reason: &str) {
        self.emit(json!({"suite": SUITE, "case": case, "system": system, "status": "unavailable", "reason": reason}));
    }

    fn emit(&mut self, v: serde_json::Value) {
        if self.json {
            println!("{v}");
        }
        self.lines.push(v);
    }
}

/// Where this run's endpoints live: a directory of its own under /dev/shm, ports from its block, iceoryx2 service
/// names with its process id.
struct Names {
    dir: PathBuf,
    pid: u32,
}

impl Names {
    fn new() -> Result<Names, String> {
        let pid = std::process::id();
        let shm = Path::new("/dev/shm");
        let root = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let dir = root.join(format!("nerve-bench-scale-{pid}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(Names { dir, pid })
    }

    fn sub_dir(&self, what: &str) -> Result<PathBuf, String> {
        let d = self.dir.join(what);
        std::fs::create_dir_all(&d).map_err(|e| format!("creating {}: {e}", d.display()))?;
        Ok(d)
    }

    fn iox(&self, what: &str) -> String {
        format!("nerve-bench/scale/{}/{what}", self.pid)
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the suite; the exit code.
pub fn run(quick: bool, json: bool, out: Option<PathBuf>) -> i32 {
    let out = out.unwrap_or_else(|| std::env::temp_dir().join(format!("nerve-bench-scale-{}", std::process::id())));
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("nerve-bench scale: creating {}: {e}", out.display());
        return 2;
    }
    let names = match Names::new() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("nerve-bench scale: {e}");
            return 2;
        }
    };
    let plan = plan(quick);
    let mut r = Report { json, text: String::new(), lines: Vec::new() };
    let cpus = clock::allowed_cpus();
    let cpu_a = cpus.first().copied();
    let cpu_b = cpus.get(1).copied().or(cpu_a);
    r.line(&format!(
        "nerve-bench scale{}: host {}, load {}, {} CPUs allowed; writers on cpu {}, the process measured on cpu {} \
         (readers of part 3 and udpm subscribers spread over the others)",
        if quick { " --quick (rough figures)" } else { "" },
        clock::host(),
        clock::loadavg(),
        cpus.len(),
        cpu_a.map_or("-".into(), |c| c.to_string()),
        cpu_b.map_or("-".into(), |c| c.to_string()),
    ));
    r.emit(json!({"suite": SUITE, "kind": "info", "host": clock::host(), "load": clock::loadavg(),
        "cpus": cpus.len(), "quick": quick}));
    let pin =
        Pins { writer: cpu_a, measured: cpu_b, others: cpus.iter().copied().filter(|c| Some(*c) != cpu_a).collect() };
    let mut failed = false;
    // NERVE_SCALE_PARTS=size,readers runs only those parts (to repeat one without the others' minutes).
    let only = std::env::var("NERVE_SCALE_PARTS").ok();
    for (name, part) in [
        ("channels", channels_part as PartFn),
        ("size", size_part as PartFn),
        ("readers", readers_part as PartFn),
        ("udpm", udpm_part as PartFn),
    ] {
        if only.as_deref().is_some_and(|o| !o.split(',').any(|p| p.trim() == name)) {
            continue;
        }
        if let Err(e) = part(&plan, &names, &pin, &out, &mut r) {
            eprintln!("nerve-bench scale: part {name}: {e}");
            failed = true;
        }
    }
    let mut jsonl = String::new();
    for v in &r.lines {
        let _ = writeln!(jsonl, "{v}");
    }
    for (file, body) in [("scale.txt", &r.text), ("scale.jsonl", &jsonl)] {
        if let Err(e) = std::fs::write(out.join(file), body) {
            eprintln!("nerve-bench scale: writing {}: {e}", out.join(file).display());
            failed = true;
        }
    }
    if !json {
        println!("tables and plots written to {}", out.display());
    }
    i32::from(failed)
}

type PartFn = fn(&Plan, &Names, &Pins, &Path, &mut Report) -> Result<(), String>;

/// Where the processes of a point run.
struct Pins {
    writer: Option<usize>,
    measured: Option<usize>,
    others: Vec<usize>,
}

impl Pins {
    /// The CPU of the `i`-th of several measured processes.
    fn spread(&self, i: usize) -> Option<usize> {
        if self.others.is_empty() {
            self.measured
        } else {
            Some(self.others[i % self.others.len()])
        }
    }
}

/// The calling thread pinned to a CPU (sched_setaffinity on thread id 0: this thread only) until dropped, when its
/// CPU set is put back.
struct Pinned(Option<libc::cpu_set_t>);

impl Pinned {
    #[allow(unsafe_code)]
    fn to(cpu: Option<usize>) -> Pinned {
        let Some(cpu) = cpu else { return Pinned(None) };
        // SAFETY: cpu_set_t is plain data; sched_getaffinity/sched_setaffinity read or write exactly size_of bytes
        // of the valid locals.
        unsafe {
            let mut old: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) != 0 {
                return Pinned(None);
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            Pinned(Some(old))
        }
    }
}

impl Drop for Pinned {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: as in `to`: the saved set, size_of bytes.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), old) };
        }
    }
}

/// nerve-bench's scale roles.
fn bench_program(word: &'static str, env: Vec<(String, PathBuf)>) -> Result<Program, String> {
    Ok(Program { exe: own_exe()?, lead: Vec::new(), words: [word; 4], env })
}

/// csrc/lcm_scale.c, built by build.rs against the real LCM.
fn lcm_scale_program() -> Result<Program, String> {
    built_program(env!("BENCH_LCM_SCALE"), ["sub"; 4])
}

/// A message of the sub roles: sequence number, stamp (now), filler to `SMALL` bytes.
fn small(seq: u64) -> [u8; SMALL] {
    let mut m = [0x5au8; SMALL];
    m[0..8].copy_from_slice(&seq.to_le_bytes());
    m[8..16].copy_from_slice(&mono_ns().to_le_bytes());
    m
}

/// Sends `count` messages at `hz` with `send(Some(seq))` from this thread, pinned to `cpu` meanwhile (the peers'
/// ports are not all `Send`), then three stop messages with `send(None)` 5 ms apart; the first error ends it.
fn paced(
    count: usize,
    hz: f64,
    cpu: Option<usize>,
    mut send: impl FnMut(Option<u64>) -> Result<(), String>,
) -> Result<(), String> {
    let _pinned = Pinned::to(cpu);
    clock::set_timer_slack();
    let period = (1e9 / hz) as u64;
    let t0 = mono_ns() + period;
    for i in 0..count as u64 {
        sleep_until_ns(t0 + i * period);
        send(Some(i))?;
    }
    for _ in 0..3 {
        sleep_until_ns(mono_ns() + 5_000_000);
        send(None)?;
    }
    Ok(())
}

/// A sub role's message for `send(Some(seq))`, or a stop message for `send(None)`.
fn small_or_stop(seq: Option<u64>) -> Vec<u8> {
    match seq {
        Some(s) => small(s).to_vec(),
        None => vec![0u8; 8],
    }
}

/// The "recv N" / "lat NS"... / "end" lines of a sub role.
fn sub_result(p: &mut Proc, timeout: Duration) -> Result<(u64, Vec<u64>), String> {
    let lines = p.collect("end", timeout)?;
    let mut total = None;
    let mut lat = Vec::new();
    for l in &lines {
        if let Some(v) = l.strip_prefix("recv ") {
            total = v.parse().ok();
        } else if let Some(v) = l.strip_prefix("lat ") {
            lat.push(v.parse().map_err(|_| format!("bad line {l:?}"))?);
        }
    }
    Ok((total.ok_or("no recv line")?, lat))
}

/// The "recv N" / "s SEQ NS"... / "end" lines of a read role, by sequence number.
fn read_result(p: &mut Proc, timeout: Duration) -> Result<BTreeMap<u64, u64>, String> {
    let mut seen = BTreeMap::new();
    for l in p.collect("end", timeout)? {
        if let Some(v) = l.strip_prefix("s ") {
            let mut w = v.split(' ').map(|x| x.parse::<u64>());
            match (w.next(), w.next()) {
                (Some(Ok(s)), Some(Ok(ns))) => {
                    seen.insert(s, ns);
                }
                _ => return Err(format!("bad line {l:?}")),
            }
        }
    }
    Ok(seen)
}

fn lat_cell(l: Option<Latencies>, f: impl Fn(Latencies) -> f64) -> String {
    l.map(|l| format!("{:.1}", f(l))).unwrap_or_else(|| "-".into())
}

// ---- part 1: channels ----

/// What one subscriber process cost over N channels.
struct ChannelPoint {
    threads: u64,
    idle_ms_s: f64,
    rss_kib: u64,
    lat: Option<Latencies>,
    received: u64,
}

const CH_SYSTEMS: [&str; 3] = ["nerve bus shm", "iceoryx2 WaitSet", "lcm-c udpm"];

fn channels_part(plan: &Plan, names: &Names, pin: &Pins, out: &Path, r: &mut Report) -> Result<(), String> {
    r.line("");
    r.line(&format!(
        "1. channels: one subscriber process over N channels, one active at 1 kHz ({} messages); idle CPU over {:?} \
         with nothing published",
        plan.lat_count, plan.idle
    ));
    r.line(&format!(
        "{:<18} {:>6} {:>8} {:>12} {:>10} {:>9} {:>9} {:>7}",
        "system", "chans", "threads", "idle ms/s", "RSS MiB", "p50 us", "p99 us", "recv"
    ));
    let mut curves: BTreeMap<&str, Vec<(usize, ChannelPoint)>> = BTreeMap::new();
    for &n in &plan.channels {
        for (k, system) in CH_SYSTEMS.into_iter().enumerate() {
            let case = format!("channels_{n}");
            let port = base_port() + 10 + (n.trailing_zeros() as u16) * 3 + k as u16;
            match channel_point(system, n, plan, names, pin, port) {
                Ok(p) => {
                    r.line(&format!(
                        "{:<18} {:>6} {:>8} {:>12.2} {:>10.1} {:>9} {:>9} {:>7}",
                        system,
                        n,
                        p.threads,
                        p.idle_ms_s,
                        p.rss_kib as f64 / 1024.0,
                        lat_cell(p.lat, |l| l.p50),
                        lat_cell(p.lat, |l| l.p99),
                        p.received
                    ));
                    r.value(&case, system, "threads", Some(p.threads as f64), "count");
                    r.value(&case, system, "idle_cpu", Some(p.idle_ms_s), "ms/s");
                    r.value(&case, system, "rss", Some(p.rss_kib as f64 / 1024.0), "MiB");
                    r.value(&case, system, "p50", p.lat.map(|l| l.p50), "us");
                    r.value(&case, system, "p99", p.lat.map(|l| l.p99), "us");
                    curves.entry(system).or_default().push((n, p));
                }
                Err(e) => {
                    r.line(&format!("{system:<18} {n:>6} unavailable: {e}"));
                    r.unavailable(&case, system, &e);
                }
            }
        }
    }
    let series = |f: &dyn Fn(&ChannelPoint) -> Option<f64>, suffix: &str| -> Vec<Series> {
        curves
            .iter()
            .map(|(s, pts)| Series {
                name: format!("{s}{suffix}"),
                points: pts.iter().filter_map(|(n, p)| f(p).map(|y| (*n as f64, y))).collect(),
            })
            .collect()
    };
    let ax = |title, y, log_y| Axes { title, x: "channels", y, log_x: true, log_y };
    plot::lines(
        &out.join("channels-threads.svg"),
        &ax("threads of the subscriber", "threads", true),
        &series(&|p| Some(p.threads as f64), ""),
    )?;
    plot::lines(
        &out.join("channels-idle-cpu.svg"),
        &ax("idle CPU of the subscriber", "ms of CPU per s", true),
        &series(&|p| Some(p.idle_ms_s), ""),
    )?;
    plot::lines(
        &out.join("channels-rss.svg"),
        &ax("resident memory of the subscriber", "MiB", false),
        &series(&|p| Some(p.rss_kib as f64 / 1024.0), ""),
    )?;
    let mut lat = series(&|p| p.lat.map(|l| l.p50), " p50");
    lat.extend(series(&|p| p.lat.map(|l| l.p99), " p99"));
    plot::lines(&out.join("channels-latency.svg"), &ax("latency of the active channel", "us", true), &lat)
}

fn channel_point(
    system: &str,
    n: usize,
    plan: &Plan,
    names: &Names,
    pin: &Pins,
    port: u16,
) -> Result<ChannelPoint, String> {
    let max_ms = (plan.idle.as_millis() as u64 + plan.lat_count as u64 + 30_000).to_string();
    let prefix = "sc";
    let args = |url: &str, system: &str| -> Vec<String> {
        let mut v = vec![system.to_string(), url.to_string()];
        v.extend([prefix.to_string(), "0".into(), n.to_string(), "0".into(), max_ms.clone()]);
        v
    };
    // The channel-making and the publisher differ by system; the measurement is the same code for all.
    match system {
        "nerve bus shm" => {
            let dir = names.sub_dir(&format!("ch{n}"))?;
            let config = ChannelConfig::new(64, 256).dir(&dir);
            let chans: Vec<Channel> = (0..n)
                .map(|i| {
                    Channel::open_or_create(&format!("{prefix}{i}"), &config)
                        .map_err(|e| format!("making channel {i}: {e}"))
                })
                .collect::<Result<_, _>>()?;
            let program = bench_program(ROLE_SUB, vec![(nerve_shm::DIR_ENV.to_string(), dir.clone())])?;
            let mut p = Proc::spawn(
                "nerve-bench scale-sub",
                &program,
                Role::LatRecv,
                &args("shm://", "bus-pattern"),
                pin.measured,
            )?;
            let mut w = chans[0].writer();
            p.expect_line("ready", Duration::from_secs(120))?;
            idle_then_send(&mut p, plan, pin, |seq| {
                w.put(&small_or_stop(seq)).map(|_| ()).map_err(|e| format!("put: {e}"))
            })
        }
        "iceoryx2 WaitSet" => {
            let base = names.iox(&format!("ch{n}/{prefix}"));
            let program = bench_program(ROLE_SUB, Vec::new())?;
            let mut argv = args("-", "iox");
            argv[2] = base.clone();
            let mut p = Proc::spawn("nerve-bench scale-sub", &program, Role::LatRecv, &argv, pin.measured)?;
            p.expect_line("ready", Duration::from_secs(120))?;
            let node = iox_node()?;
            let name = format!("{base}0");
            let publisher = iox_pubsub(&node, &name, 1)?
                .publisher_builder()
                .initial_max_slice_len(SMALL)
                .create()
                .map_err(|e| format!("iceoryx2 publisher: {e:?}"))?;
            let notifier = iox_event(&node, &name, 1)?
                .notifier_builder()
                .create()
                .map_err(|e| format!("iceoryx2 notifier: {e:?}"))?;
            idle_then_send(&mut p, plan, pin, |seq| {
                let m = small_or_stop(seq);
                let s = publisher.loan_slice_uninit(m.len()).map_err(|e| format!("loan: {e:?}"))?.write_from_slice(&m);
                s.send().map_err(|e| format!("send: {e:?}"))?;
                notifier.notify().map(|_| ()).map_err(|e| format!("notify: {e:?}"))
            })
        }
        _ => {
            let url = format!("udpm://{GROUP}:{port}?ttl=0");
            let program = lcm_scale_program()?;
            let mut p = Proc::spawn("lcm_scale sub", &program, Role::LatRecv, &args(&url, "")[1..], pin.measured)?;
            let bus = nerve_bus::Bus::new(Some(&url)).map_err(|e| format!("Bus::new({url}): {e}"))?;
            let chan = format!("{prefix}0");
            p.expect_line("ready", Duration::from_secs(60))?;
            idle_then_send(&mut p, plan, pin, |seq| {
                bus.publish_raw(&chan, &small_or_stop(seq)).map_err(|e| format!("publish: {e}"))
            })
        }
    }
}

/// After the role said "ready": the idle window (once the subscriber has settled), then the active channel at
/// 1 kHz through `send`, then the role's result.
fn idle_then_send(
    p: &mut Proc,
    plan: &Plan,
    pin: &Pins,
    send: impl FnMut(Option<u64>) -> Result<(), String>,
) -> Result<ChannelPoint, String> {
    // Let the subscriber finish starting (threads, first scans) before its idle cost is taken.
    std::thread::sleep(Duration::from_millis(300));
    let pid = p.pid();
    let idle = probe::cpu_rates(&[pid], plan.idle)?[0];
    let threads = probe::threads(pid)?;
    let rss_kib = probe::rss_kib(pid)?;
    paced(plan.lat_count, 1_000.0, pin.writer, send)?;
    let (received, mut lat) = sub_result(p, Duration::from_secs(60))?;
    Ok(ChannelPoint { threads, idle_ms_s: idle, rss_kib, lat: Latencies::from_ns(&mut lat), received })
}

// ---- parts 2 and 3: one channel, message sizes and readers ----

/// The two one-channel systems.
const FAN_SYSTEMS: [&str; 2] = ["nerve-shm", "iceoryx2"];

/// One writer (this thread) and `readers` reader processes of one channel of `size`-byte messages; each reader's
/// latencies by sequence number.
/// One point of parts 2 and 3: a system, its message size, how its readers read, how many, how many messages.
struct Fan<'a> {
    system: &'a str,
    size: usize,
    how: ReadHow,
    readers: usize,
    count: usize,
}

fn fan_out(fan: &Fan, names: &Names, pin: &Pins, tag: &str) -> Result<Vec<BTreeMap<u64, u64>>, String> {
    let &Fan { system, size, how, readers, count } = fan;
    let hz = size_hz(size);
    let max_ms = ((count as f64 / hz * 1e3) as u64 + 30_000).to_string();
    let spawn = |target: &str| -> Result<Vec<Proc>, String> {
        let program = bench_program(ROLE_READ, Vec::new())?;
        let sys = match system {
            "nerve-shm" => "shm",
            FUTEX => "futex",
            _ => "iox",
        };
        let argv: Vec<String> =
            [sys, target, &size.to_string(), how.word(), &count.to_string(), &max_ms, &readers.to_string()]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let mut procs = Vec::new();
        for i in 0..readers {
            procs.push(Proc::spawn("nerve-bench scale-read", &program, Role::LatRecv, &argv, pin.spread(i))?);
        }
        for p in &mut procs {
            p.expect_line("ready", Duration::from_secs(60))?;
        }
        // The readers are in their first get (or spin) by now.
        std::thread::sleep(Duration::from_millis(100));
        Ok(procs)
    };
    let mut fill = vec![0u8; size];
    let mut procs = if system == "nerve-shm" {
        let dir = names.sub_dir(tag)?;
        let frames = if size >= MIB { 8 } else { 64 };
        let config = ChannelConfig::new(frames, size as u64).dir(&dir);
        let channel = Channel::open_or_create("f", &config).map_err(|e| format!("making the channel: {e}"))?;
        let mut w = channel.writer();
        let procs = spawn(&dir.join("f").display().to_string())?;
        paced(count, hz, pin.writer, |seq| match seq {
            Some(seq) => {
                let mut loan = w.loan(size).map_err(|e| format!("loan: {e}"))?;
                let b = loan.bytes_mut();
                fill[0] = fill[0].wrapping_add(1);
                b.copy_from_slice(&fill);
                b[0..8].copy_from_slice(&seq.to_le_bytes());
                b[8..16].copy_from_slice(&mono_ns().to_le_bytes());
                loan.commit();
                Ok(())
            }
            None => w.put(&[0u8; 8]).map(|_| ()).map_err(|e| format!("put: {e}")),
        })?;
        procs
    } else if system == FUTEX {
        let path = names.sub_dir(tag)?.join("page");
        let page = futex::Broadcast::map(&path, true)?;
        let procs = spawn(&path.display().to_string())?;
        paced(count, hz, pin.writer, |seq| {
            page.publish(seq, mono_ns());
            Ok(())
        })?;
        procs
    } else {
        let name = names.iox(tag);
        let node = iox_node()?;
        let publisher = iox_pubsub(&node, &name, readers)?
            .publisher_builder()
            .initial_max_slice_len(size)
            .create()
            .map_err(|e| format!("iceoryx2 publisher: {e:?}"))?;
        let notifier = iox_event(&node, &name, readers)?
            .notifier_builder()
            .create()
            .map_err(|e| format!("iceoryx2 notifier: {e:?}"))?;
        let procs = spawn(&name)?;
        paced(count, hz, pin.writer, |seq| {
            let s = match seq {
                Some(seq) => {
                    fill[0] = fill[0].wrapping_add(1);
                    let mut s =
                        publisher.loan_slice_uninit(size).map_err(|e| format!("loan: {e:?}"))?.write_from_slice(&fill);
                    let b = s.payload_mut();
                    b[0..8].copy_from_slice(&seq.to_le_bytes());
                    b[8..16].copy_from_slice(&mono_ns().to_le_bytes());
                    s
                }
                None => publisher.loan_slice_uninit(8).map_err(|e| format!("loan: {e:?}"))?.write_from_slice(&[0u8; 8]),
            };
            s.send().map_err(|e| format!("send: {e:?}"))?;
            if !how.poll {
                notifier.notify().map_err(|e| format!("notify: {e:?}"))?;
            }
            Ok(())
        })?;
        procs
    };
    procs.iter_mut().map(|p| read_result(p, Duration::from_secs(60))).collect()
}

/// The median and 99th percentile of a memcpy of `size` bytes between two buffers of this process, in ns.
fn memcpy_ns(size: usize, reps: usize) -> Option<Latencies> {
    let src: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut dst = vec![0u8; size];
    let mut ns: Vec<u64> = (0..reps)
        .map(|_| {
            let t = mono_ns();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
            mono_ns() - t
        })
        .collect();
    Latencies::from_ns(&mut ns)
}

fn size_label(size: usize) -> String {
    match size {
        s if s >= MIB => format!("{} MiB", s / MIB),
        s if s >= KIB => format!("{} KiB", s / KIB),
        s => format!("{s} B"),
    }
}

fn size_part(plan: &Plan, names: &Names, pin: &Pins, out: &Path, r: &mut Report) -> Result<(), String> {
    r.line("");
    r.line(
        "2. size: one reader process of one channel, p50/p99 us from the writer's stamp (taken after it filled the \
            frame) to the end of the read; memcpy: this process copying that many bytes",
    );
    r.line(&format!(
        "{:<12} {:<10} {:>8} {:>7} {:>10} {:>10} {:>6}",
        "system", "read", "size", "rate", "p50 us", "p99 us", "n"
    ));
    let mut curves: BTreeMap<String, Vec<(f64, Latencies)>> = BTreeMap::new();
    for &size in &plan.sizes {
        let case = format!("size_{size}");
        if let Some(l) = memcpy_ns(size, plan.memcpy_reps) {
            r.line(&format!(
                "{:<12} {:<10} {:>8} {:>7} {:>10.2} {:>10.2} {:>6}",
                "memcpy",
                "-",
                size_label(size),
                "-",
                l.p50,
                l.p99,
                l.n
            ));
            r.value(&case, "memcpy", "p50", Some(l.p50), "us");
            r.value(&case, "memcpy", "p99", Some(l.p99), "us");
            curves.entry("memcpy".into()).or_default().push((size as f64, l));
        }
        for system in FAN_SYSTEMS {
            for how in ReadHow::ALL {
                let sys = format!("{system} {}", how.word());
                let count = (plan.size_count)(size);
                let got = fan_out(
                    &Fan { system, size, how, readers: 1, count },
                    names,
                    pin,
                    &format!("size{size}-{}", how.word()),
                );
                match got.map(|g| g.into_iter().next().unwrap_or_default()) {
                    Ok(seen) => {
                        let mut ns: Vec<u64> = seen.into_values().collect();
                        let l = Latencies::from_ns(&mut ns);
                        r.line(&format!(
                            "{:<12} {:<10} {:>8} {:>7} {:>10} {:>10} {:>6}",
                            system,
                            how.word(),
                            size_label(size),
                            size_hz(size),
                            lat_cell(l, |l| l.p50),
                            lat_cell(l, |l| l.p99),
                            l.map_or(0, |l| l.n)
                        ));
                        r.value(&case, &sys, "p50", l.map(|l| l.p50), "us");
                        r.value(&case, &sys, "p99", l.map(|l| l.p99), "us");
                        if let Some(l) = l {
                            curves.entry(sys).or_default().push((size as f64, l));
                        }
                    }
                    Err(e) => {
                        r.line(&format!("{system:<12} {:<10} {:>8} unavailable: {e}", how.word(), size_label(size)));
                        r.unavailable(&case, &sys, &e);
                    }
                }
            }
        }
    }
    for (file, title, f) in [
        ("size-p50.svg", "p50 latency by message size", (|l: &Latencies| l.p50) as fn(&Latencies) -> f64),
        ("size-p99.svg", "p99 latency by message size", |l: &Latencies| l.p99),
    ] {
        let series: Vec<Series> = curves
            .iter()
            .map(|(name, pts)| Series { name: name.clone(), points: pts.iter().map(|(x, l)| (*x, f(l))).collect() })
            .collect();
        plot::lines(&out.join(file), &Axes { title, x: "message bytes", y: "us", log_x: true, log_y: true }, &series)?;
    }
    Ok(())
}

/// The readers part's control: a plain futex broadcast (`futex`), the floor of waking R sleepers on this host.
const FUTEX: &str = "futex";

/// The readers part's systems and how they read.
const READERS_ROWS: [(&str, ReadHow); 4] = [
    ("nerve-shm", ReadHow { zero_copy: false, poll: false }),
    ("nerve-shm", ReadHow { zero_copy: true, poll: false }),
    ("iceoryx2", ReadHow { zero_copy: true, poll: false }),
    (FUTEX, ReadHow { zero_copy: true, poll: false }),
];

fn readers_part(plan: &Plan, names: &Names, pin: &Pins, out: &Path, r: &mut Report) -> Result<(), String> {
    r.line("");
    r.line(&format!(
        "3. readers: R waiting reader processes of one channel, 64-byte messages at 1 kHz ({} messages): latency of \
         the last reader to get each message (messages every reader got)",
        plan.readers_count
    ));
    r.line(&format!("{:<12} {:<10} {:>8} {:>10} {:>10} {:>8}", "system", "read", "readers", "p50 us", "p99 us", "n"));
    let mut curves: BTreeMap<String, Vec<(f64, Latencies)>> = BTreeMap::new();
    for &readers in &plan.readers {
        let case = format!("readers_{readers}");
        for (system, how) in READERS_ROWS {
            let sys = format!("{system} {}", how.word());
            let tag = format!("readers{readers}-{}", how.word());
            match fan_out(&Fan { system, size: SMALL, how, readers, count: plan.readers_count }, names, pin, &tag) {
                Ok(all) => {
                    let mut last: Vec<u64> = all[0]
                        .keys()
                        .filter_map(|seq| all.iter().map(|m| m.get(seq).copied()).collect::<Option<Vec<u64>>>())
                        .map(|v| v.into_iter().max().unwrap_or(0))
                        .collect();
                    let l = Latencies::from_ns(&mut last);
                    r.line(&format!(
                        "{:<12} {:<10} {:>8} {:>10} {:>10} {:>8}",
                        system,
                        how.word(),
                        readers,
                        lat_cell(l, |l| l.p50),
                        lat_cell(l, |l| l.p99),
                        l.map_or(0, |l| l.n)
                    ));
                    r.value(&case, &sys, "last_p50", l.map(|l| l.p50), "us");
                    r.value(&case, &sys, "last_p99", l.map(|l| l.p99), "us");
                    if let Some(l) = l {
                        curves.entry(sys).or_default().push((readers as f64, l));
                    }
                }
                Err(e) => {
                    r.line(&format!("{system:<12} {:<10} {readers:>8} unavailable: {e}", how.word()));
                    r.unavailable(&case, &sys, &e);
                }
            }
        }
    }
    let mut series = Vec::new();
    for (name, pts) in &curves {
        series.push(Series { name: format!("{name} p50"), points: pts.iter().map(|(x, l)| (*x, l.p50)).collect() });
        series.push(Series { name: format!("{name} p99"), points: pts.iter().map(|(x, l)| (*x, l.p99)).collect() });
    }
    let axes = Axes { title: "latency of the last reader woken", x: "readers", y: "us", log_x: true, log_y: true };
    plot::lines(&out.join("readers.svg"), &axes, &series)
}

// ---- part 4: udpm ----

fn udpm_part(plan: &Plan, _names: &Names, pin: &Pins, out: &Path, r: &mut Report) -> Result<(), String> {
    let (chans, procs, per) = (plan.udpm_channels, plan.udpm_procs, 10usize);
    r.line("");
    r.line(&format!(
        "4. udpm: {chans} channels, {} messages/s spread over all of them for {:?}; {procs} subscriber processes of \
         {per} channels each: CPU per process (ms/s), messages each got",
        plan.udpm_rate, plan.udpm_window
    ));
    r.line(&format!("{:<14} {:>12} {:>12} {:>12} {:>12}", "system", "mean ms/s", "max ms/s", "recv/proc", "expected"));
    let base = base_port() + 1_000;
    let systems = [
        ("nerve udpm", format!("udpm://{GROUP}:{}?ttl=0&recv_buf_size=2097152", base + 900)),
        ("nerve mpudpm", format!("mpudpm://{GROUP}:{base}?ttl=0&recv_buf_size=2097152")),
        ("lcm-c udpm", format!("udpm://{GROUP}:{}?ttl=0&recv_buf_size=2097152", base + 901)),
    ];
    let mut series = Vec::new();
    for (system, url) in systems {
        let case = format!("udpm_{chans}ch_{procs}proc");
        match udpm_point(system, &url, plan, pin) {
            Ok((cpu, recv, expected)) => {
                let mean = cpu.iter().sum::<f64>() / cpu.len().max(1) as f64;
                let max = cpu.iter().copied().fold(0.0, f64::max);
                let recv_mean = recv.iter().sum::<u64>() as f64 / recv.len().max(1) as f64;
                r.line(&format!("{system:<14} {mean:>12.2} {max:>12.2} {recv_mean:>12.0} {expected:>12}"));
                r.value(&case, system, "cpu_mean", Some(mean), "ms/s");
                r.value(&case, system, "cpu_max", Some(max), "ms/s");
                r.value(&case, system, "recv_per_proc", Some(recv_mean), "msgs");
                series.push(Series {
                    name: system.to_string(),
                    points: cpu.iter().enumerate().map(|(i, c)| ((i + 1) as f64, *c)).collect(),
                });
            }
            Err(e) => {
                r.line(&format!("{system:<14} unavailable: {e}"));
                r.unavailable(&case, system, &e);
            }
        }
    }
    let axes = Axes {
        title: "CPU of each udpm subscriber process",
        x: "process",
        y: "ms of CPU per s",
        log_x: false,
        log_y: true,
    };
    plot::lines(&out.join("udpm-cpu.svg"), &axes, &series)
}

/// CPU (ms/s) and messages received of each subscriber process, and the messages each should get.
fn udpm_point(system: &str, url: &str, plan: &Plan, pin: &Pins) -> Result<(Vec<f64>, Vec<u64>, u64), String> {
    let (chans, nprocs, per) = (plan.udpm_channels, plan.udpm_procs, 10usize);
    let max_ms = (plan.udpm_window.as_millis() as u64 + 60_000).to_string();
    let program = if system == "lcm-c udpm" { lcm_scale_program()? } else { bench_program(ROLE_SUB, Vec::new())? };
    let mut procs = Vec::new();
    for k in 0..nprocs {
        let mut argv = Vec::new();
        if system != "lcm-c udpm" {
            argv.push("bus-each".to_string());
        }
        argv.extend([
            url.to_string(),
            "uc".into(),
            (k * per).to_string(),
            per.to_string(),
            "-1".into(),
            max_ms.clone(),
        ]);
        procs.push(Proc::spawn(system, &program, Role::LatRecv, &argv, pin.spread(k))?);
    }
    for p in &mut procs {
        p.expect_line("ready", Duration::from_secs(60))?;
    }
    let bus = nerve_bus::Bus::new(Some(url)).map_err(|e| format!("Bus::new({url}): {e}"))?;
    let names: Vec<String> = (0..chans).map(|i| format!("uc{i}")).collect();
    // mpudpm subscribers join their ports as they subscribe; give every process a moment to settle all the same.
    std::thread::sleep(Duration::from_millis(500));
    let pids: Vec<u32> = procs.iter().map(Proc::pid).collect();
    let per_ms = (plan.udpm_rate / 1_000).max(1) as usize;
    let ticks = plan.udpm_window.as_millis() as u64;
    let c0 = pids.iter().map(|&p| probe::cpu_ns(p)).collect::<Result<Vec<_>, _>>()?;
    let t0 = mono_ns();
    let mut sent = 0usize;
    {
        let _pinned = Pinned::to(pin.writer);
        for t in 0..ticks {
            sleep_until_ns(t0 + (t + 1) * 1_000_000);
            for _ in 0..per_ms {
                bus.publish_raw(&names[sent % chans], &small(sent as u64)).map_err(|e| format!("publish: {e}"))?;
                sent += 1;
            }
        }
    }
    let c1 = pids.iter().map(|&p| probe::cpu_ns(p)).collect::<Result<Vec<_>, _>>()?;
    let secs = (mono_ns() - t0) as f64 / 1e9;
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..3 {
        for k in 0..nprocs {
            bus.publish_raw(&names[k * per], &[0u8; 8]).map_err(|e| format!("publish: {e}"))?;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let cpu = c0.iter().zip(&c1).map(|(a, b)| b.saturating_sub(*a) as f64 / 1e6 / secs).collect();
    let recv = procs
        .iter_mut()
        .map(|p| sub_result(p, Duration::from_secs(60)).map(|(n, _)| n))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((cpu, recv, (sent * per / chans) as u64))
}
