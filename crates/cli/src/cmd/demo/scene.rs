//! The scene `nerve demo` runs: setup, the processes, the live spy, the replay, the summary and the clean-up. Every
//! figure it prints is measured in the run: by the roles themselves (their result lines), by this process's own
//! subscribers (receive time minus each message's `utime`), by the spy's engine, by the loggers' reports and by
//! reading the log back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use nerve_bus::{Bus, Dispatcher, Overflow, Url};
use nerve_log::{LogReader, LogWriter};
use nerve_shm::{Channel, ChannelConfig};

use super::procs::Procs;
use super::roles::{IMAGE_HZ, LASER_HZ, POSE_HZ, RESULT};
use super::stats::{self, micros, now_utime, parse_result, size, Monitor};
use super::types::{Types, IMAGE, LASER, POSE};
use crate::cmd::exit::reject;
use crate::cmd::spy::decode::Types as SpyTypes;
use crate::cmd::spy::engine::{Engine, QUEUE_CAPACITY};
use crate::cmd::spy::report;

/// What the user asked for.
pub struct Plan {
    /// Seconds the sensors run.
    pub duration: f64,
    /// The udpm URL of the live scene.
    pub url: String,
    /// The udpm URL the log is replayed on.
    pub replay_url: String,
    /// `nerve play --speed`.
    pub replay_speed: f64,
    /// Where to keep the log (else it goes with the temporary directory).
    pub keep_log: Option<PathBuf>,
    /// Redraw the spy's table in place (a terminal) rather than print snapshots.
    pub ui: bool,
}

/// The names the scene gives its children.
const SENSOR: &str = "sensor";
const LOCALIZER: &str = "localizer";
const CONTROLLER: &str = "controller";
const LOGGER_UDPM: &str = "logger-udpm";
const LOGGER_SHM: &str = "logger-shm";
const PLAYER: &str = "player";

/// How long a logger, if this process died without stopping it, would go on by itself past the scene.
const ORPHAN_LIMIT_S: f64 = 60.0;
/// Time given to the children to start before the streams begin.
const LEAD: Duration = Duration::from_millis(500);
/// How long to wait for one process to get ready.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// The temporary directory: the logs, and the shared-memory channels in `shm/`. Removed on drop.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn new() -> anyhow::Result<WorkDir> {
        let base = std::env::temp_dir();
        for attempt in 0..100u32 {
            let path = base.join(format!("nerve-demo-{}-{attempt}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    std::fs::create_dir(path.join("shm")).context("making the shm directory")?;
                    return Ok(WorkDir { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("making {}", path.display())),
            }
        }
        bail!("no free temporary directory name under {}", base.display())
    }

    fn shm(&self) -> PathBuf {
        self.path.join("shm")
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// SIGINT or SIGTERM seen by this process (Ctrl-C also reaches the children, which stop by themselves).
fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag)).context("installing a signal handler")?;
    }
    Ok(flag)
}

/// Sleeps up to `d`, returning early (false) when interrupted.
fn pause(d: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(20)));
    }
    !stop.load(Ordering::Relaxed)
}

/// The effective user id, from /proc (no unsafe call needed).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

fn run_cmd(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program).args(args).status().is_ok_and(|s| s.success())
}

/// Opens the udpm bus and proves multicast works on it (the bus's own self-test, as liblcm does), setting up
/// loopback multicast first if it does not and we are root. Returns the bus and a queue of the self-test messages
/// other processes send when they start listening (how the scene knows the logger is ready).
fn open_udpm(url: &str, notes: &mut Vec<String>) -> anyhow::Result<Option<(Bus, nerve_bus::Subscriber)>> {
    let try_open = || -> anyhow::Result<(Bus, nerve_bus::Subscriber)> {
        let bus = Bus::new(Some(url)).with_context(|| format!("opening {url}"))?;
        let sub = bus.subscriber("LCM_SELF_TEST", 64, Overflow::DropOldest).context("listening on the bus")?;
        Ok((bus, sub))
    };
    let first = match try_open() {
        Ok(b) => return Ok(Some(b)),
        Err(e) => e,
    };
    let cmds = "ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo";
    if !is_root() {
        eprintln!("nerve demo: multicast does not work here ({first:#}).");
        eprintln!("On a host with only loopback, route it as root, then run the demo again:\n    {cmds}");
        return Ok(None);
    }
    let up = run_cmd("ip", &["link", "set", "lo", "up"]) && run_cmd("ip", &["link", "set", "lo", "multicast", "on"]);
    let routed = run_cmd("ip", &["route", "replace", "224.0.0.0/4", "dev", "lo"]);
    if !(up && routed) {
        bail!("multicast does not work ({first:#}) and setting it up on loopback failed: {cmds}");
    }
    notes.push(format!(
        "multicast did not work ({first:#}); routed it on loopback: ip link set lo up; ip link set lo multicast on; \
         ip route replace 224.0.0.0/4 dev lo"
    ));
    try_open().map(Some).context("multicast still does not work after routing it on loopback")
}

/// Raises `net.core.rmem_max` to what the URL's `recv_buf_size` asks, if we may; else says what the cap is.
fn receive_buffers(url: &Url, notes: &mut Vec<String>) {
    let Some(want) = url.options.iter().find(|(k, _)| k == "recv_buf_size").and_then(|(_, v)| v.parse::<u64>().ok())
    else {
        return;
    };
    let path = "/proc/sys/net/core/rmem_max";
    let Some(max) = std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse::<u64>().ok()) else { return };
    if max >= want {
        return;
    }
    if is_root() && std::fs::write(path, want.to_string()).is_ok() {
        notes.push(format!(
            "raised net.core.rmem_max from {max} to {want} so receive buffers can hold a burst of images"
        ));
    } else {
        notes.push(format!(
            "receive buffers are capped at {max} bytes by net.core.rmem_max (as root: sysctl -w net.core.rmem_max={want}); \
             images may be dropped"
        ));
    }
}

/// A subscription that feeds a [`Monitor`]: each message decoded as its channel's type, its latency measured.
fn monitor(
    bus: &Bus,
    pattern: &str,
    types: &Types,
    streams: &[(&'static str, &'static str)],
) -> anyhow::Result<(Arc<Monitor>, Dispatcher)> {
    let m = Arc::new(Monitor::default());
    let (mm, types, streams) = (Arc::clone(&m), types.clone(), streams.to_vec());
    bus.subscribe_with(pattern, 0, Overflow::DropOldest, move |msg| {
        let ty = streams.iter().find(|(c, _)| *c == msg.channel).map(|(_, t)| *t);
        let utime = ty.and_then(|ty| types.utime_of(ty, &msg.data).ok());
        mm.record(&msg.channel, msg.data.len(), msg.recv_utime, utime);
        Ok(())
    })
    .context("subscribing")?;
    let d = bus.spawn_dispatcher().context("starting dispatch")?;
    Ok((m, d))
}

/// Messages per channel.
type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

/// Counts arrivals per channel (the replay's subscriber): nothing but counting, so it keeps up.
fn counter(bus: &Bus) -> anyhow::Result<(Counts, Dispatcher)> {
    let c = Counts::default();
    let cc = Arc::clone(&c);
    bus.subscribe_with(".*", 0, Overflow::DropOldest, move |msg| {
        *cc.lock().unwrap_or_else(|p| p.into_inner()).entry(msg.channel.clone()).or_default() += 1;
        Ok(())
    })
    .context("subscribing")?;
    let d = bus.spawn_dispatcher().context("starting dispatch")?;
    Ok((c, d))
}

fn total(c: &Mutex<BTreeMap<String, u64>>) -> u64 {
    c.lock().unwrap_or_else(|p| p.into_inner()).values().sum()
}

/// Both loggers' files merged into one log by receive time; per-channel event counts.
struct Merged {
    path: PathBuf,
    bytes: u64,
    events: BTreeMap<String, u64>,
    span_us: i64,
}

fn merge_logs(inputs: &[PathBuf], out: &Path) -> anyhow::Result<Merged> {
    let mut readers = Vec::new();
    for p in inputs {
        readers.push(LogReader::open(p).with_context(|| format!("reading {}", p.display()))?);
    }
    let mut heads: Vec<Option<nerve_log::Event>> = Vec::new();
    for r in &mut readers {
        heads.push(r.next().transpose()?);
    }
    let mut w = LogWriter::create(out, false).with_context(|| format!("writing {}", out.display()))?;
    let mut events = BTreeMap::new();
    let (mut first, mut last) = (None, 0i64);
    loop {
        let next = heads.iter().enumerate().filter_map(|(i, h)| h.as_ref().map(|e| (e.utime, i))).min();
        let Some((_, i)) = next else { break };
        let e = heads[i].take().expect("a head");
        w.write_event(e.utime, &e.channel, &e.data)?;
        *events.entry(e.channel).or_insert(0u64) += 1;
        first.get_or_insert(e.utime);
        last = last.max(e.utime);
        heads[i] = readers[i].next().transpose()?;
    }
    w.flush()?;
    w.sync()?;
    for (p, r) in inputs.iter().zip(&readers) {
        if r.damage_totals().regions > 0 {
            bail!("{} is damaged: {:?}", p.display(), r.damage());
        }
    }
    let bytes = std::fs::metadata(out).with_context(|| format!("reading {}", out.display()))?.len();
    Ok(Merged { path: out.to_path_buf(), bytes, events, span_us: first.map_or(0, |f| last - f) })
}

/// `nerve log`'s closing line: recorded N messages ..., missed M (...).
fn logger_figures(stderr: &str) -> Option<(u64, u64)> {
    let line = stderr.lines().find(|l| l.starts_with("nerve log: recorded"))?;
    let recorded = line.strip_prefix("nerve log: recorded ")?.split_whitespace().next()?.parse().ok()?;
    let missed = line.split("; missed ").nth(1)?.split_whitespace().next()?.parse().ok()?;
    Some((recorded, missed))
}

/// `nerve play`'s closing line: published N messages (B bytes) in T s.
fn player_figures(stderr: &str) -> Option<(u64, String)> {
    let line = stderr.lines().find(|l| l.starts_with("nerve play: published"))?;
    let n = line.strip_prefix("nerve play: published ")?.split_whitespace().next()?.parse().ok()?;
    let secs = line.split(" in ").nth(1)?.split(" s").next()?.to_owned();
    Some((n, secs))
}

fn number(r: &BTreeMap<String, String>, key: &str) -> u64 {
    r.get(key).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn word(r: &BTreeMap<String, String>, key: &str) -> String {
    r.get(key).cloned().unwrap_or_else(|| "?".into())
}

/// The replay goes to the live URL's group on the next port unless told otherwise.
pub fn next_port(url: &str) -> anyhow::Result<String> {
    let u = Url::parse(url)?;
    if u.provider != "udpm" {
        return Err(reject(format!("--url {url}: the demo's sensors publish over udpm; give a udpm:// URL")));
    }
    let network = if u.network.is_empty() { "239.255.76.67:7667" } else { u.network.as_str() };
    let (group, port) = network.rsplit_once(':').ok_or_else(|| anyhow!("--url {url}: expected udpm://GROUP:PORT"))?;
    let port: u16 = port.parse().with_context(|| format!("--url {url}: port"))?;
    let next = port.checked_add(1).ok_or_else(|| anyhow!("--url {url}: no port after {port} for the replay"))?;
    let query: Vec<String> =
        u.options.iter().map(|(k, v)| if v.is_empty() { k.clone() } else { format!("{k}={v}") }).collect();
    Ok(format!("udpm://{group}:{next}{}{}", if query.is_empty() { "" } else { "?" }, query.join("&")))
}

/// Runs the whole scene.
pub fn run(plan: Plan) -> anyhow::Result<ExitCode> {
    let stop = interrupt_flag()?;
    let types = Types::load()?;
    let spy_types = Arc::new(SpyTypes::new(Some(types.registry().clone())));
    if let Some(k) = &plan.keep_log {
        if k.exists() {
            return Err(reject(format!("--keep-log {}: already exists", k.display())));
        }
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "nerve demo: a sensor, a localizer, a controller and two loggers as separate processes, for {} s; \
         the spy's statistics live; then the log replayed and a summary.\n",
        plan.duration
    )?;

    // Setup: multicast (and receive buffers) for udpm; a private directory for the shared-memory channel.
    let mut notes = Vec::new();
    receive_buffers(&Url::parse(&plan.url)?, &mut notes);
    let Some((live, self_tests)) = open_udpm(&plan.url, &mut notes)? else { return Ok(ExitCode::from(2)) };
    let work = WorkDir::new()?;
    let shm_dir = work.shm();
    let shm_url = format!("shm://?dir={}", shm_dir.display());
    let pose_channel = Channel::create(POSE.0, &ChannelConfig::new(64, 1024).dir(&shm_dir))
        .with_context(|| format!("making shm channel {} in {}", POSE.0, shm_dir.display()))?;
    for n in &notes {
        writeln!(out, "setup: {n}")?;
    }
    writeln!(out, "setup: multicast works on {} (self-test passed)", plan.url)?;
    writeln!(out, "setup: shm channel {} (64 frames of 1 KiB) in {}", POSE.0, shm_dir.display())?;

    // This process listens too: the spy's engine on each bus, and a subscriber that measures latency.
    let shm = Bus::new(Some(&shm_url)).with_context(|| format!("opening {shm_url}"))?;
    let spy_udpm = Engine::start(&live, ".*", QUEUE_CAPACITY, Arc::clone(&spy_types))?;
    let spy_shm = Engine::start(&shm, ".*", QUEUE_CAPACITY, Arc::clone(&spy_types))?;
    let (seen_udpm, dispatch_udpm) = monitor(&live, "LASER|IMAGE", &types, &[LASER, IMAGE])?;
    let (seen_shm, dispatch_shm) = monitor(&shm, "POSE", &types, &[POSE])?;

    // The loggers first, and each ready before anything is published, so they miss nothing.
    let mut procs = Procs::default();
    let (log_udpm, log_shm) = (work.path.join("udpm.lcmlog"), work.path.join("shm.lcmlog"));
    let safety = format!("{:.1}", plan.duration + ORPHAN_LIMIT_S);
    let logger = |file: &Path, url: &str| -> Vec<String> {
        ["log", &file.display().to_string(), "--url", url, "--quiet", "--duration", &safety].map(String::from).to_vec()
    };
    procs.spawn(LOGGER_UDPM, &logger(&log_udpm, &plan.url))?;
    // Its bus's self-test message tells us it is listening.
    let ready_by = Instant::now() + READY_WITHIN;
    while self_tests.recv_timeout(Duration::from_millis(20)).is_none() {
        if stop.load(Ordering::Relaxed) || Instant::now() > ready_by || !procs.running(LOGGER_UDPM) {
            return finish_early(&mut procs, &stop, "the udpm logger did not start listening");
        }
    }
    procs.spawn(LOGGER_SHM, &logger(&log_shm, &shm_url))?;
    // The channel counts the readers made on it: ours and the logger's.
    let ready_by = Instant::now() + READY_WITHIN;
    while pose_channel.stats().reader_opens < 2 {
        if stop.load(Ordering::Relaxed) || Instant::now() > ready_by || !procs.running(LOGGER_SHM) {
            return finish_early(&mut procs, &stop, "the shm logger did not start reading");
        }
        std::thread::sleep(Duration::from_millis(10));
    }

    // The roles, all on one schedule.
    let start_at = now_utime() + LEAD.as_micros() as i64;
    let until = start_at + (plan.duration * 1e6) as i64;
    let window = ["--start-at".to_owned(), start_at.to_string(), "--until".to_owned(), until.to_string()];
    let role = |name: &str, place: [&str; 2]| -> Vec<String> {
        let mut a: Vec<String> = ["demo", "--role", name, place[0], place[1]].map(String::from).to_vec();
        a.extend(window.iter().cloned());
        a
    };
    let shm_arg = shm_dir.display().to_string();
    procs.spawn(CONTROLLER, &role(CONTROLLER, ["--shm-dir", &shm_arg]))?;
    procs.spawn(LOCALIZER, &role(LOCALIZER, ["--shm-dir", &shm_arg]))?;
    procs.spawn(SENSOR, &role(SENSOR, ["--url", &plan.url]))?;
    writeln!(out, "\nprocesses (this one is {}, the spy and a latency subscriber on both buses):", std::process::id())?;
    let says = [
        (
            SENSOR,
            format!("exlcm.laser_t on LASER at {LASER_HZ} Hz, exlcm.image_t 640x480 on IMAGE at {IMAGE_HZ} Hz, udpm"),
        ),
        (LOCALIZER, format!("exlcm.pose_t into shm channel POSE at {POSE_HZ} Hz")),
        (CONTROLLER, format!("the newest POSE from shm every {:.0} ms", 1000.0 / POSE_HZ)),
        (LOGGER_UDPM, format!("nerve log {} --url {}", log_udpm.display(), plan.url)),
        (LOGGER_SHM, format!("nerve log {} --url {shm_url}", log_shm.display())),
    ];
    for p in procs.all() {
        let what = says.iter().find(|(n, _)| *n == p.name).map_or(String::new(), |(_, s)| s.clone());
        writeln!(out, "  {:<12} pid {:<8} {what}", p.name, p.pid)?;
    }
    writeln!(out)?;
    out.flush()?;

    // Live: the spy's table, redrawn every second on a terminal, else a few snapshots. Times are the scene's: from
    // the moment the streams start. The final table is taken at the end of the window, so its rates (over the
    // spy's last 4 s) are those of the streams running, not decaying after they stopped.
    let spy_began = now_utime();
    let every = if plan.ui { 1.0 } else { (plan.duration / 4.0).max(1.0) };
    let mut drawn = 0usize;
    let snapshot = |final_one: bool| -> String {
        let now = now_utime().min(until);
        let mut s = format!(
            "nerve spy{} at {:.1} s of {:.1}:\n",
            if final_one { " (final)" } else { "" },
            (now - start_at).max(0) as f64 / 1e6,
            plan.duration
        );
        let listened = (now - spy_began) as f64 / 1e6;
        s += &report(spy_udpm.table(), &spy_types, &plan.url, listened, now, false);
        s += &report(spy_shm.table(), &spy_types, &shm_url, listened, now, false);
        s
    };
    let mut next = start_at + (every * 1e6) as i64;
    while next < until {
        if !pause(Duration::from_micros((next - now_utime()).max(0) as u64), &stop) {
            return finish_early(&mut procs, &stop, "interrupted");
        }
        next += (every * 1e6) as i64;
        let mut text = snapshot(false);
        if plan.ui {
            // Lines folded to the terminal's width, so the count of rows to redraw is exact.
            let width = ratatui::crossterm::terminal::size().map_or(100, |(w, _)| usize::from(w).max(20));
            text = fold(&text, width - 1);
        }
        if plan.ui && drawn > 0 {
            write!(out, "\x1b[{drawn}A\x1b[J")?;
        }
        write!(out, "{text}")?;
        if !plan.ui {
            writeln!(out)?;
        }
        out.flush()?;
        drawn = text.lines().count();
    }

    // The roles stop by themselves at the end of the window; then the loggers, once what is in flight has landed.
    let deadline = Instant::now() + Duration::from_secs(10);
    for r in [SENSOR, LOCALIZER, CONTROLLER] {
        procs.wait(r, deadline, || stop.load(Ordering::Relaxed));
    }
    pause(Duration::from_millis(300), &stop);
    for l in [LOGGER_UDPM, LOGGER_SHM] {
        procs.stop(l);
    }
    if stop.load(Ordering::Relaxed) {
        return finish_early(&mut procs, &stop, "interrupted");
    }
    let final_text = snapshot(true);
    drop((dispatch_udpm, dispatch_shm));
    let spy_udpm = spy_udpm.finish();
    let spy_shm = spy_shm.finish();
    if plan.ui && drawn > 0 {
        write!(out, "\x1b[{drawn}A\x1b[J")?;
    }
    writeln!(out, "{final_text}")?;

    // What each process measured.
    let mut results: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    let mut loggers: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for name in [SENSOR, LOCALIZER, CONTROLLER, LOGGER_UDPM, LOGGER_SHM] {
        let p = procs.get(name).expect("started");
        let (status, killed) = (p.status(), p.killed);
        let (stdout, stderr) = p.output();
        if !status.is_some_and(|s| s.success()) || killed {
            bail!("{name} failed ({status:?}{}):\n{stdout}{stderr}", if killed { ", killed" } else { "" });
        }
        if let Some(r) = stdout.lines().find_map(|l| parse_result(l, RESULT)) {
            results.insert(name, r.into_iter().collect());
        }
        if let Some(f) = logger_figures(&stderr) {
            loggers.insert(name, f);
        }
        for l in stderr.lines().filter(|l| !l.starts_with("nerve log: recorded")) {
            writeln!(out, "{name}: {l}")?;
        }
    }
    let empty = BTreeMap::new();
    let (sensor, localizer, controller) = (
        results.get(SENSOR).unwrap_or(&empty),
        results.get(LOCALIZER).unwrap_or(&empty),
        results.get(CONTROLLER).unwrap_or(&empty),
    );

    // The log: both loggers' files merged into one, read back.
    let merged_path = plan.keep_log.clone().unwrap_or_else(|| work.path.join("demo.lcmlog"));
    let merged = merge_logs(&[log_udpm.clone(), log_shm.clone()], &merged_path)?;

    // The replay: `nerve play` onto a fresh udpm port, a subscriber here counting what arrives.
    let Some((replay_bus, _)) = open_udpm(&plan.replay_url, &mut Vec::new())? else { return Ok(ExitCode::from(2)) };
    let (arrived, replay_dispatch) = counter(&replay_bus)?;
    let play_args: Vec<String> = [
        "play",
        &merged.path.display().to_string(),
        "--speed",
        &plan.replay_speed.to_string(),
        "--url",
        &plan.replay_url,
    ]
    .map(String::from)
    .to_vec();
    procs.spawn(PLAYER, &play_args)?;
    let replay_secs = if plan.replay_speed > 0.0 { merged.span_us as f64 / 1e6 / plan.replay_speed } else { 0.0 };
    procs.wait(PLAYER, Instant::now() + Duration::from_secs_f64(replay_secs + 30.0), || stop.load(Ordering::Relaxed));
    let player = procs.get(PLAYER).expect("started");
    let (player_status, (_, player_err)) = (player.status(), player.output());
    if stop.load(Ordering::Relaxed) {
        return finish_early(&mut procs, &stop, "interrupted");
    }
    if !player_status.is_some_and(|s| s.success()) {
        bail!("nerve play failed ({player_status:?}):\n{player_err}");
    }
    let (published, play_secs) = player_figures(&player_err).unwrap_or((0, "?".into()));
    // Let what is in flight arrive: until everything did, or nothing more came for half a second.
    let settle_by = Instant::now() + Duration::from_secs(10);
    let (mut last, mut quiet_since) = (total(&arrived), Instant::now());
    while total(&arrived) < published
        && Instant::now() < settle_by
        && quiet_since.elapsed() < Duration::from_millis(500)
    {
        std::thread::sleep(Duration::from_millis(20));
        let now = total(&arrived);
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        }
    }
    drop(replay_dispatch);
    let arrived = arrived.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let replay_stats = replay_bus.provider_stats();

    // The summary, its paragraphs as wide as the terminal (up to stats::WIDTH).
    let width = if plan.ui {
        ratatui::crossterm::terminal::size().map_or(stats::WIDTH, |(w, _)| usize::from(w).clamp(60, stats::WIDTH))
    } else {
        stats::WIDTH
    };
    let para = |label: &str, text: &str| stats::para(label, text, width);
    writeln!(out, "summary (every figure measured in this run)\n")?;
    let header = [
        "STREAM",
        "TYPE",
        "VIA",
        "TARGET_Hz",
        "SENT",
        "RECEIVED",
        "RATE_Hz",
        "LAT_p50",
        "LAT_p99",
        "LOST",
        "LOGGED",
        "REPLAYED",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.map(String::from).to_vec()];
    for ((channel, ty), via, target, sent, seen) in [
        (LASER, "udpm", LASER_HZ, number(sensor, "LASER_sent"), seen_udpm.stream(LASER.0)),
        (IMAGE, "udpm", IMAGE_HZ, number(sensor, "IMAGE_sent"), seen_udpm.stream(IMAGE.0)),
        (POSE, "shm", POSE_HZ, number(localizer, "POSE_sent"), seen_shm.stream(POSE.0)),
    ] {
        let (p50, p99) = seen.latency().map_or(("-".into(), "-".into()), |(a, b)| (micros(a), micros(b)));
        rows.push(vec![
            channel.into(),
            ty.into(),
            via.into(),
            format!("{target:.0}"),
            sent.to_string(),
            seen.count.to_string(),
            seen.rate_hz().map_or("-".into(), |r| format!("{r:.1}")),
            p50,
            p99,
            sent.saturating_sub(seen.count).to_string(),
            merged.events.get(channel).copied().unwrap_or(0).to_string(),
            arrived.get(channel).copied().unwrap_or(0).to_string(),
        ]);
    }
    let widths: Vec<usize> =
        (0..header.len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| if c < 3 { format!("{s:<w$}", w = widths[c]) } else { format!("{s:>w$}", w = widths[c]) })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    let decode_errors: u64 = [seen_udpm.stream(LASER.0), seen_udpm.stream(IMAGE.0), seen_shm.stream(POSE.0)]
        .iter()
        .map(|s| s.decode_errors)
        .sum();
    let mut note = "SENT: counted by the publishing process. RECEIVED, RATE and LAT (receive time minus the utime the \
                    publisher stamped in the message): a subscriber in this process. LOST = SENT - RECEIVED. LOGGED: \
                    events in the log. REPLAYED: received again from nerve play."
        .to_owned();
    if decode_errors > 0 {
        note += &format!(" {decode_errors} messages did not decode as their type.");
    }
    write!(out, "{}", para("", &note))?;
    writeln!(out)?;
    let ticks = number(controller, "ticks");
    let secs: f64 = word(controller, "seconds").parse().unwrap_or(f64::NAN);
    write!(
        out,
        "{}",
        para(
            "controller",
            &format!(
                "{ticks} ticks in {secs:.1} s ({:.1} Hz); {} new poses read, {} skipped (two came between ticks: the \
                 newest wins), {} ticks found nothing newer; pose age when read p50 {} p99 {} max {}; last position \
                 ({}, {}) m",
                ticks as f64 / secs,
                word(controller, "read"),
                word(controller, "skipped"),
                word(controller, "nothing_new"),
                micros(number(controller, "age_p50_us") as i64),
                micros(number(controller, "age_p99_us") as i64),
                micros(number(controller, "age_max_us") as i64),
                word(controller, "last_x"),
                word(controller, "last_y"),
            )
        )
    )?;
    write!(
        out,
        "{}",
        para(
            "schedules",
            &format!(
                "ticks skipped because a loop ran more than a period late: laser {}, image {}, pose {}, controller {}",
                word(sensor, "LASER_skipped_ticks"),
                word(sensor, "IMAGE_skipped_ticks"),
                word(localizer, "POSE_skipped_ticks"),
                word(controller, "skipped_ticks")
            )
        )
    )?;
    for (name, table) in [("spy udpm", &spy_udpm), ("spy shm", &spy_shm)] {
        let t = crate::cmd::spy::engine::lock(table);
        let d = t.drops;
        let text = format!(
            "{} messages counted; dropped: {} queue overflow, {} lost in transport, {} malformed, {} by the kernel",
            t.total, d.queue_overflow, d.transport_lost, d.malformed, d.kernel_dropped
        );
        write!(out, "{}", para(name, &text))?;
    }
    for (name, (recorded, missed)) in &loggers {
        write!(out, "{}", para(name, &format!("recorded {recorded}, missed {missed}")))?;
    }
    let logged: u64 = merged.events.values().sum();
    let per_channel: Vec<String> = merged.events.iter().map(|(c, n)| format!("{c} {n}")).collect();
    let log_text = format!(
        "{}: {}, {logged} events ({}), the two loggers' files merged by receive time{}",
        merged.path.display(),
        size(merged.bytes),
        per_channel.join(", "),
        if plan.keep_log.is_some() { "; kept" } else { "; removed with the temporary directory" }
    );
    write!(out, "{}", para("log", &log_text))?;
    let replayed: u64 = arrived.values().sum();
    let replay_text = format!(
        "nerve play --speed {} published {published} events in {play_secs} s on {}; a subscriber here received \
         {replayed} of the {logged} logged ({}; {} lost in transport)",
        plan.replay_speed,
        plan.replay_url,
        if replayed == logged {
            "all of them".to_owned()
        } else {
            format!("{} missing", logged.saturating_sub(replayed))
        },
        replay_stats.lost
    );
    write!(out, "{}", para("replay", &replay_text))?;

    // Clean-up, checked: every process gone, the channel file removed, nothing left in the directory.
    drop(replay_bus);
    drop(shm);
    drop(pose_channel);
    Channel::remove(POSE.0, Some(&shm_dir)).context("removing the POSE channel")?;
    // The directory's doorbell file (wait sets') belongs to the directory, not to a channel: it goes with it.
    let leftover = std::fs::read_dir(&shm_dir)
        .map(|d| d.flatten().filter(|e| e.file_name() != nerve_shm::BELL_FILE).count())
        .unwrap_or(0);
    let pids: Vec<String> = procs
        .all()
        .iter()
        .map(|p| format!("{}={}{}", p.name, p.pid, if p.status().is_some() { "" } else { "(running!)" }))
        .collect();
    let all_exited = procs.all().iter().all(|p| p.status().is_some());
    let work_path = work.path.clone();
    drop(work);
    let cleanup = format!(
        "processes {} {}; shm channel POSE removed ({leftover} files left in its directory); {} removed: {}",
        pids.join(" "),
        if all_exited { "all exited" } else { "NOT all exited" },
        work_path.display(),
        if work_path.exists() { "no" } else { "yes" }
    );
    write!(out, "{}", para("cleanup", &cleanup))?;
    let replay_said = if replayed == logged {
        "replayed it on another port, where every logged message arrived again"
    } else {
        "replayed it on another port, where not every logged message arrived (see replay)"
    };
    writeln!(out)?;
    write!(
        out,
        "{}",
        para(
            "what it did",
            &format!(
                "The sensor published laser scans and camera images over UDP multicast (LCM's wire format, TTL 0: \
                 this host only); the localizer wrote poses into a shared-memory channel, whose newest pose the \
                 controller took every millisecond; nerve log recorded each bus and the two files became one LCM \
                 log; nerve spy's engine counted the live traffic on both; nerve play {replay_said}. Each part is a \
                 tool you can run yourself: nerve spy --types examples/types, nerve log, nerve play, nerve chan ls."
            )
        )
    )?;
    out.flush()?;
    let ok = all_exited && leftover == 0 && replayed == logged;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Every line of `text` cut into pieces of at most `width` characters.
fn fold(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            out.push('\n');
        }
        for piece in chars.chunks(width.max(1)) {
            out.extend(piece);
            out.push('\n');
        }
    }
    out
}

/// Stops every child and says why the scene ended early; 130 after Ctrl-C, else an error.
fn finish_early(procs: &mut Procs, stop: &AtomicBool, why: &str) -> anyhow::Result<ExitCode> {
    procs.stop_all();
    if stop.load(Ordering::Relaxed) {
        eprintln!(
            "\nnerve demo: interrupted; every process it started has stopped and its temporary files are removed"
        );
        return Ok(ExitCode::from(130));
    }
    let mut detail = String::new();
    let names: Vec<String> = procs.all().iter().map(|p| p.name.clone()).collect();
    for n in names {
        if let Some(p) = procs.get(&n) {
            let (o, e) = p.output();
            if !(o.is_empty() && e.is_empty()) {
                detail += &format!("\n{n}: {o}{e}");
            }
        }
    }
    bail!("{why}{detail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_goes_to_the_next_port_with_the_same_options() {
        assert_eq!(
            next_port("udpm://239.255.76.67:7667?ttl=0&recv_buf_size=8388608").unwrap(),
            "udpm://239.255.76.67:7668?ttl=0&recv_buf_size=8388608"
        );
        assert_eq!(next_port("udpm://").unwrap(), "udpm://239.255.76.67:7668");
        assert!(next_port("shm://").is_err());
        assert!(next_port("udpm://239.255.76.67:65535").is_err());
    }

    #[test]
    fn folding_keeps_every_character_and_counts_rows() {
        let f = fold("abcdef\n\nxy\n", 4);
        assert_eq!(f, "abcd\nef\n\nxy\n");
        assert_eq!(fold("µµµµµ", 2).lines().count(), 3);
    }

    #[test]
    fn the_tools_closing_lines_are_read() {
        let log = "nerve log: recorded 700 messages (9000 bytes) to /t/u.lcmlog; missed 2 (queue full 0, subscription \
                   overflow 0, lost in transport 2)\n";
        assert_eq!(logger_figures(log), Some((700, 2)));
        let play = "nerve play: published 10700 messages (95000000 bytes) in 2.512 s (4259 msg/s)\n";
        assert_eq!(player_figures(play), Some((10700, "2.512".into())));
        assert_eq!(logger_figures("other"), None);
    }
}
