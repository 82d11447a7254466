//! `nerve-bench log`: whether Nerve's log tools keep up, each next to its LCM peer in the same run.
//!
//! - **logger keep-up**: a source process publishes 800-byte messages over udpm at the echo suite's highest target
//!   rate (50 MB/s, 62,500 msg/s) and as fast as it can; `nerve log` and the real `lcm-logger` each record it (one
//!   at a time), and `nerve log` to MCAP (zstd, then lz4); the row counts the messages in the file against those
//!   sent, with the file's size and the logger's CPU time per message recorded.
//! - **player** (`player.rs`): a log of small messages (8-byte payloads) played at `--speed 0` by `nerve play` to
//!   `memq://` (no transport: the reader and the play loop alone), by `nerve play` to udpm, and by the real
//!   `lcm-logplayer -s 0` to udpm; messages per second of wall time, process start included; to udpm with nothing
//!   listening, then with the real `lcm-logger` recording (how many it received).
//! - **export**: a mixed log (seed types: image_t, laser_t, path_t, lidar_t) exported by `nerve export` to each
//!   format (MCAP with zstd, lz4 and no compression), in MB of log (input) per second, against copying the same file (page cache, and with fsync: "disk
//!   speed"); the text formats write more bytes than they read, and the row says how many (out MB). Then end to
//!   end, the process and an fsync of its output: MB of output per second against the disk's write rate for a
//!   file of that size measured right after (`out/disk`, the bar: at least 0.5, "disk speed within 2x").
//!
//! The programs measured are the `nerve` binary next to this one (`cargo build --release -p nerve-cli`) and the
//! venv's LCM tools; anything missing makes its row say so.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::data;

mod player;

/// The echo suite's message size and highest target rate (bench/src/suites/echo.rs: 50 MB/s of 800-byte messages).
const MSG_SIZE: usize = 800;
const TOP_RATE: u64 = 50_000_000 / MSG_SIZE as u64;
const GROUP: &str = "239.255.76.98";
const CHANNEL: &str = "LOGBENCH";

fn base_port() -> u16 {
    // Below the ephemeral range; apart from the echo suite's 10000-31999 blocks.
    32_000 - 200 + (std::process::id() % 100) as u16 * 2
}

/// The hidden role `nerve-bench log-source URL RATE COUNT`: publishes COUNT numbered 800-byte messages at RATE
/// messages per second (0: as fast as it can), then a few spaced tail messages (lcm-logger writes an event only
/// when a later one arrives), and prints `sent N SECONDS`.
///
/// And `nerve-bench log-mixed FILE CYCLES`: writes the export rows' input log (`CYCLES` cycles of seed types; the
/// suite uses 300, 40 with `--quick`), to profile an export on exactly what the suite measures.
pub fn hidden_role(args: &[String]) -> Option<ExitCode> {
    if args.get(1).map(String::as_str) == Some("log-mixed") {
        let written = match &args[2..] {
            [file, cycles] => cycles
                .parse()
                .map_err(|e| format!("cycles: {e}"))
                .and_then(|c| write_log(Path::new(file), mixed_events(c)).map_err(|e| format!("{file}: {e}"))),
            _ => Err("usage: log-mixed FILE CYCLES".into()),
        };
        return Some(match written {
            Ok(bytes) => {
                println!("{bytes}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("nerve-bench log-mixed: {e}");
                ExitCode::from(3)
            }
        });
    }
    if args.get(1).map(String::as_str) != Some("log-source") {
        return None;
    }
    Some(match source(&args[2..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nerve-bench log-source: {e}");
            ExitCode::from(3)
        }
    })
}

fn source(args: &[String]) -> Result<(), String> {
    let [url, rate, count] = args else { return Err("usage: log-source URL RATE COUNT".into()) };
    let rate: u64 = rate.parse().map_err(|e| format!("rate: {e}"))?;
    let count: u64 = count.parse().map_err(|e| format!("count: {e}"))?;
    let bus = nerve_bus::Bus::new(Some(url)).map_err(|e| e.to_string())?;
    let mut msg = vec![0u8; MSG_SIZE];
    let start = Instant::now();
    for i in 0..count {
        if rate > 0 {
            let due = Duration::from_secs_f64(i as f64 / rate as f64);
            let now = start.elapsed();
            if due > now + Duration::from_micros(200) {
                std::thread::sleep(due - now);
            }
        }
        msg[..8].copy_from_slice(&i.to_be_bytes());
        bus.publish_raw(CHANNEL, &msg).map_err(|e| e.to_string())?;
    }
    let secs = start.elapsed().as_secs_f64();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(200));
        bus.publish_raw("LOGBENCH_TAIL", b"x").map_err(|e| e.to_string())?;
    }
    println!("sent {count} {secs:.6}");
    Ok(())
}

struct Tools {
    nerve: Result<PathBuf, String>,
    lcm_logger: Result<PathBuf, String>,
    lcm_logplayer: Result<PathBuf, String>,
}

fn tools() -> Tools {
    let exe = std::env::current_exe().ok();
    let nerve = exe
        .map(|e| e.with_file_name("nerve"))
        .filter(|p| p.exists())
        .ok_or_else(|| "no nerve binary next to nerve-bench (cargo build --release -p nerve-cli)".to_string());
    let venv = crate::peers::marshalling::venv();
    // The wheel's C programs, not the Python wrappers of the same name in VENV/bin: a wrapper runs its program with
    // subprocess.call, so the SIGINT that stops lcm-logger would stop only the wrapper and leave the logger running,
    // its last events unflushed when the suite counts them (or be ignored outright when SIGINT is ignored).
    let find = |name: &str| {
        let lib = venv.join("lib");
        std::fs::read_dir(&lib)
            .into_iter()
            .flatten()
            .flatten()
            .map(|python| python.path().join("site-packages/bin").join(name))
            .find(|p| p.exists())
            .ok_or_else(|| format!("{name} missing under {}/python*/site-packages/bin (scripts/setup)", lib.display()))
    };
    Tools { nerve, lcm_logger: find("lcm-logger"), lcm_logplayer: find("lcm-logplayer") }
}

/// Counts the events on `channel` in a log (a plain walk over the headers; the file is ours and intact).
fn count_events(path: &Path, channel: &str) -> Result<u64, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut i, mut n) = (0usize, 0u64);
    while i + 28 <= b.len() {
        let ch = i32::from_be_bytes(b[i + 20..i + 24].try_into().expect("4")) as usize;
        let dl = i32::from_be_bytes(b[i + 24..i + 28].try_into().expect("4")) as usize;
        if b.get(i + 28..i + 28 + ch) == Some(channel.as_bytes()) {
            n += 1;
        }
        i += 28 + ch + dl;
    }
    Ok(n)
}

/// CPU seconds (user and system) a process has used so far, from /proc (0 where it cannot be read).
fn cpu_secs(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line: 11 and 12 after the state field.
    (ticks(11) + ticks(12)) / 100.0
}

fn sigint(pid: u32) {
    // lcm-logger from the wheel is a Python wrapper around the C program: the child gets the signal first.
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for c in children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
        // SAFETY: kill(2) with a PID this process started (or that one's child) and a valid signal number.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(c, libc::SIGINT);
        }
    }
    // SAFETY: as above, our own child.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid as i32, libc::SIGINT);
    }
}

fn wait_bounded(child: &mut std::process::Child, limit: Duration) -> Result<(), String> {
    let end = Instant::now() + limit;
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            return Ok(());
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            return Err("did not exit in time (killed)".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Out {
    json: bool,
}

impl Out {
    fn text(&self, s: &str) {
        if !self.json {
            println!("{s}");
        }
    }
    fn row(&self, text: String, value: serde_json::Value) {
        if self.json {
            println!("{value}");
        } else {
            println!("{text}");
        }
    }
}

/// Runs the suite; the exit code.
pub fn run(quick: bool, json: bool) -> i32 {
    let out = Out { json };
    let t = tools();
    let dir = std::env::temp_dir().join(format!("nerve-bench-log-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("nerve-bench log: {}: {e}", dir.display());
        return 2;
    }
    out.text("log: issue 6's figures; each row's peer measured in the same run (bench/README.md, \"log\")");
    out.text(&format!(
        "load average at start: {}",
        std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    ));
    logger_rows(&out, &t, &dir, quick);
    player::rows(&out, &t, &dir, quick);
    export_rows(&out, &t, &dir, quick);
    let _ = std::fs::remove_dir_all(&dir);
    0
}

fn logger_rows(out: &Out, t: &Tools, dir: &Path, quick: bool) {
    let secs = if quick { 1.0 } else { 4.0 };
    out.text("");
    out.text(&format!(
        "logger keep-up: {MSG_SIZE}-byte messages over udpm (recv_buf_size=2 MB, as the echo suite), {secs} s at the echo suite's \
         top target (50 MB/s = {TOP_RATE} msg/s) and as fast as the source publishes"
    ));
    out.text(&format!(
        "{:<14} {:>10} {:>10} {:>10} {:>10} {:>9} {:>8} {:>8}  {}",
        "logger",
        "target/s",
        "sent/s",
        "sent",
        "recorded",
        "missed%",
        "file MB",
        "cpu us/m",
        "where nerve log says it missed them (its exit report)"
    ));
    let me = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return out.text(&format!("  unavailable: {e}")),
    };
    let mut port = base_port();
    for rate in [TOP_RATE, 0] {
        let count = if rate > 0 { (rate as f64 * secs) as u64 } else { (150_000.0 * secs) as u64 };
        for system in ["nerve log", "nerve log mcap", "nerve log lz4", "lcm-logger"] {
            port += 1;
            let url = format!("udpm://{GROUP}:{port}?ttl=0&recv_buf_size=2097152");
            let mcap = system.starts_with("nerve log ");
            let file = dir.join(format!("keepup-{port}.{}", if mcap { "mcap" } else { "lcmlog" }));
            let mut cmd = match system {
                s if s.starts_with("nerve log") => match &t.nerve {
                    Ok(n) => {
                        let mut c = Command::new(n);
                        c.args(["log", "-q", "-f", "--url", &url]).arg(&file);
                        if s == "nerve log lz4" {
                            c.args(["--compression", "lz4"]);
                        }
                        c
                    }
                    Err(e) => {
                        out.text(&format!("{system:<14} unavailable: {e}"));
                        continue;
                    }
                },
                _ => match &t.lcm_logger {
                    Ok(l) => {
                        let mut c = Command::new(l);
                        c.args(["-q", "-f", &format!("--lcm-url={url}")]).arg(&file);
                        c
                    }
                    Err(e) => {
                        out.text(&format!("{system:<14} unavailable: {e}"));
                        continue;
                    }
                },
            };
            let point = (|| -> Result<(u64, f64, u64, String, f64, f64), String> {
                let mut logger =
                    cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("starting: {e}"))?;
                std::thread::sleep(Duration::from_millis(1000));
                let cpu0 = cpu_secs(logger.id());
                let src = Command::new(&me)
                    .args(["log-source", &url, &rate.to_string(), &count.to_string()])
                    .output()
                    .map_err(|e| format!("source: {e}"))?;
                std::thread::sleep(Duration::from_millis(300));
                let cpu = cpu_secs(logger.id()) - cpu0;
                sigint(logger.id());
                wait_bounded(&mut logger, Duration::from_secs(30))?;
                let mut said = String::new();
                if let Some(mut e) = logger.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut said);
                }
                let text = String::from_utf8_lossy(&src.stdout);
                let mut w = text.split_whitespace().skip(1);
                let sent: u64 = w.next().and_then(|s| s.parse().ok()).ok_or(format!("source said {text:?}"))?;
                let s: f64 = w.next().and_then(|s| s.parse().ok()).unwrap_or(1.0);
                let file_mb = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
                let recorded = if mcap {
                    // The recording as an LCM log again (nerve export), counted as the others are.
                    let back = file.with_extension("lcmlog");
                    let n = t.nerve.as_ref().map_err(Clone::clone)?;
                    timed(Command::new(n).args(["export", "-q", "-f", "--to", "lcm", "-o"]).arg(&back).arg(&file))?;
                    let r = count_events(&back, CHANNEL);
                    let _ = std::fs::remove_file(&back);
                    r?
                } else {
                    count_events(&file, CHANNEL)?
                };
                let _ = std::fs::remove_file(&file);
                Ok((sent, sent as f64 / s, recorded, own_report(&said), file_mb, cpu))
            })();
            let target = if rate > 0 { rate.to_string() } else { "max".into() };
            match point {
                Ok((sent, per_s, recorded, report, file_mb, cpu)) => {
                    let missed = 100.0 * (sent.saturating_sub(recorded)) as f64 / sent.max(1) as f64;
                    let cpu_us = cpu * 1e6 / recorded.max(1) as f64;
                    out.row(
                        format!(
                            "{system:<14} {target:>10} {per_s:>10.0} {sent:>10} {recorded:>10} {missed:>9.3} {file_mb:>8.1} {cpu_us:>8.2}  {report}"
                        ),
                        json!({"suite": "log", "figure": "logger", "system": system, "target_msgs_per_s": target,
                               "sent_msgs_per_s": per_s, "sent": sent, "recorded": recorded, "missed_pct": missed,
                               "file_mb": file_mb, "cpu_us_per_msg": cpu_us, "own_report": report}),
                    );
                }
                Err(e) => out.text(&format!("{system:<14} {target:>10} failed: {e}")),
            }
        }
    }
}

/// What `nerve log`'s exit report says it missed, and where (`missed N (queue full A, ..., datagrams dropped by
/// the kernel D)`); empty for a logger that says nothing (lcm-logger with `-q`).
fn own_report(said: &str) -> String {
    said.lines()
        .find_map(|l| {
            let at = l.find("missed ")?;
            let rest = &l[at..];
            Some(rest[..rest.find(')').map_or(rest.len(), |e| e + 1)].to_owned())
        })
        .unwrap_or_default()
}

fn timed(cmd: &mut Command) -> Result<f64, String> {
    let start = Instant::now();
    let o = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    if !o.status.success() {
        return Err(format!("exit {}: {}", o.status, String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(secs)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The bytes of a file, or of the files in a directory (CSV export).
fn output_bytes(path: &Path) -> u64 {
    match std::fs::read_dir(path) {
        Ok(entries) => entries.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum(),
        Err(_) => std::fs::metadata(path).map_or(0, |m| m.len()),
    }
}

fn write_log(path: &Path, events: impl Iterator<Item = (i64, String, Vec<u8>)>) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut bytes = 0u64;
    for (n, (t, ch, data)) in (0i64..).zip(events) {
        w.write_all(&0xEDA1_DA01u32.to_be_bytes())?;
        w.write_all(&n.to_be_bytes())?;
        w.write_all(&t.to_be_bytes())?;
        w.write_all(&(ch.len() as i32).to_be_bytes())?;
        w.write_all(&(data.len() as i32).to_be_bytes())?;
        w.write_all(ch.as_bytes())?;
        w.write_all(&data)?;
        bytes += (28 + ch.len() + data.len()) as u64;
    }
    w.flush()?;
    Ok(bytes)
}

/// The export rows' input: per cycle 1 image_t (300 KB), 40 laser_t, 10 path_t, 10 lidar_t of 1000 points and 10
/// of 100.
fn mixed_events(cycles: i64) -> impl Iterator<Item = (i64, String, Vec<u8>)> {
    let cases = data::cases();
    (0..cycles).flat_map(move |c| {
        let mut v = Vec::new();
        for (i, case) in cases.iter().enumerate() {
            let times = match case.name().as_str() {
                "image_t" => 1,
                "laser_t" => 40,
                "path_t" => 10,
                "lidar_1000" | "lidar_100" => 10,
                _ => 0,
            };
            for k in 0..times {
                v.push((
                    1_700_000_000_000_000 + c * 100_000 + (i * 100 + k) as i64,
                    case.name().to_uppercase(),
                    case.lcm_bytes(),
                ));
            }
        }
        v
    })
}

/// fsyncs a file, or every file in a directory and the directory itself (CSV export); the bytes synced.
fn sync_output(path: &Path) -> std::io::Result<u64> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_dir() {
        std::fs::File::open(path)?.sync_all()?;
        return Ok(meta.len());
    }
    let mut bytes = 0;
    for e in std::fs::read_dir(path)? {
        let p = e?.path();
        let f = std::fs::File::open(&p)?;
        f.sync_all()?;
        bytes += f.metadata()?.len();
    }
    std::fs::File::open(path)?.sync_all()?;
    Ok(bytes)
}

/// The disk's write rate at this size: `bytes` written from memory (1 MiB at a time, bytes that are not all alike)
/// to a new file and fsynced, in MB/s; the file is removed.
fn disk_write(path: &Path, bytes: u64) -> Result<f64, String> {
    let block: Vec<u8> = (0..1usize << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let start = Instant::now();
    let mut f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n]).map_err(|e| e.to_string())?;
        left -= n as u64;
    }
    f.sync_all().map_err(|e| e.to_string())?;
    let secs = start.elapsed().as_secs_f64();
    drop(f);
    let _ = std::fs::remove_file(path);
    Ok(bytes as f64 / 1e6 / secs)
}

/// One repetition of an export row: its figures and the disk's write rate measured right after it.
#[derive(Clone, Copy)]
struct ExportRun {
    /// MB of input per second of the process alone: the old column.
    in_rate: f64,
    /// MB of input per second, the process and then an fsync of its output.
    in_rate_synced: f64,
    out_mb: f64,
    /// MB of output per second, the process and then an fsync of its output.
    out_rate_synced: f64,
    /// The disk's write rate for a file of the output's size.
    disk_rate: f64,
    /// [`cpu_probe`] just before it: the host's speed at the time.
    probe_ns: f64,
}

/// The host's CPU speed now, as the text exports feel it: ns per float of sensor-like `f32`s (metres, four
/// per lidar point) written as text the way the exporters write them (`zmij`, into a buffer in cache), best of
/// three passes over 200,000. The text exports are CPU-bound on this project's 2-vCPU VM, float text the largest
/// part, and the same export's CPU time moves by a third with the host's state (other tenants); this is printed
/// next to each row.
fn cpu_probe() -> f64 {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let floats: Vec<f32> = (0..200_000)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 100.0 - 50.0) as f32
        })
        .collect();
    let mut out = Vec::with_capacity(floats.len() * 16);
    (0..3)
        .map(|_| {
            out.clear();
            let start = Instant::now();
            for &x in &floats {
                out.push(b',');
                zmij::push_finite(&mut out, std::hint::black_box(x));
            }
            std::hint::black_box(&out);
            start.elapsed().as_secs_f64() * 1e9 / floats.len() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn export_rows(out: &Out, t: &Tools, dir: &Path, quick: bool) {
    let reps = if quick { 1 } else { 3 };
    let cycles = if quick { 40 } else { 300 };
    let file = dir.join("mixed.lcmlog");
    let bytes = match write_log(&file, mixed_events(cycles)) {
        Ok(b) => b,
        Err(e) => return out.text(&format!("export: unavailable: writing the log: {e}")),
    };
    let mb = bytes as f64 / 1e6;
    out.text("");
    out.text(&format!(
        "export: a {mb:.0} MB log of seed types (image_t, laser_t, path_t, lidar_t) from the page cache; median of {reps}.\n\
         \x20 MB/s: MB of log (input) per second of the process, start included (nerve export syncs its output before it exits); vs copy, \
         vs copy+sync: that over a copy of the log (std::fs::copy) without, with fsync; out MB: what it wrote.\n\
         \x20 End to end (+sync): the process, then an fsync of everything it wrote. in+sync: MB of input per second, \
         vs c+s: over copy+fsync (input-based). out+sync: MB of output per second; disk: the disk's write rate \
         measured right after, by writing as many bytes from memory to a new file with fsync.\n\
         \x20 The bar is out/disk >= 0.50 (\"export runs at disk speed within 2x\": what export must write reaches the \
         disk at no less than half the rate the disk takes bytes). The input-based ratios are not the bar: a text \
         format writes 2-4x its input, so it could not reach 1x of a copy of its input even if the disk were its \
         only limit.\n\
         \x20 probe: ns per float written as text (as the exporters do, one thread) just before each repetition \
         (median): the host's CPU speed then. The text exports are CPU-bound on 2 vCPUs and move with it (bench/README.md, \"log\")."
    ));
    out.text(&format!(
        "{:<26} {:>8} {:>8} {:>8} {:>7} | {:>8} {:>6} {:>8} {:>8} {:>8} {:>5} {:>6}",
        "what", "MB/s", "vs copy", "vs c+s", "out MB", "in+sync", "vs c+s", "out+sync", "disk", "out/disk", "", "probe"
    ));
    let copy_to = dir.join("copy.lcmlog");
    let disk_file = dir.join("disk.bin");
    let copy = |sync: bool| -> Result<ExportRun, String> {
        let probe_ns = cpu_probe();
        let start = Instant::now();
        std::fs::copy(&file, &copy_to).map_err(|e| e.to_string())?;
        if sync {
            std::fs::File::open(&copy_to).and_then(|f| f.sync_all()).map_err(|e| e.to_string())?;
        }
        let s = start.elapsed().as_secs_f64();
        let _ = std::fs::remove_file(&copy_to);
        let disk_rate = if sync { disk_write(&disk_file, bytes)? } else { f64::NAN };
        let synced = if sync { mb / s } else { f64::NAN };
        Ok(ExportRun {
            in_rate: mb / s,
            in_rate_synced: synced,
            out_mb: mb,
            out_rate_synced: synced,
            disk_rate,
            probe_ns,
        })
    };
    let copy_runs = (0..reps).map(|_| copy(false)).collect::<Result<Vec<_>, _>>();
    let sync_runs = (0..reps).map(|_| copy(true)).collect::<Result<Vec<_>, _>>();
    let copy_rate = copy_runs.as_ref().map(|v| median(v.iter().map(|r| r.in_rate).collect())).map_err(Clone::clone);
    let sync_rate = sync_runs.as_ref().map(|v| median(v.iter().map(|r| r.in_rate).collect())).map_err(Clone::clone);
    let types = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("types");
    let mut rows: Vec<(String, Result<Vec<ExportRun>, String>)> =
        vec![("copy (std::fs::copy)".into(), copy_runs), ("copy + fsync (disk speed)".into(), sync_runs)];
    let formats: [(&str, &[&str], bool); 6] = [
        ("lcm", &[], false),
        ("mcap", &[], true),
        ("mcap", &["--compression", "lz4"], true),
        ("mcap", &["--compression", "none"], true),
        ("jsonl", &[], true),
        ("csv", &[], true),
    ];
    for (to, flags, extra) in formats {
        let target = dir.join(format!("out.{to}"));
        let r = match &t.nerve {
            Ok(nv) => (0..reps)
                .map(|_| {
                    let mut c = Command::new(nv);
                    c.args(["export", "-q", "--to", to, "-o"]).arg(&target).arg(&file).args(flags);
                    if extra {
                        c.arg("--types").arg(&types);
                    }
                    let probe_ns = cpu_probe();
                    let start = Instant::now();
                    let process = timed(&mut c);
                    let synced = sync_output(&target).map_err(|e| format!("fsync {}: {e}", target.display()));
                    let total = start.elapsed().as_secs_f64();
                    let out_bytes = output_bytes(&target);
                    let _ = std::fs::remove_file(&target);
                    let _ = std::fs::remove_dir_all(&target);
                    let (process, _) = (process?, synced?);
                    let out_mb = out_bytes as f64 / 1e6;
                    Ok(ExportRun {
                        in_rate: mb / process,
                        in_rate_synced: mb / total,
                        out_mb,
                        out_rate_synced: out_mb / total,
                        disk_rate: disk_write(&disk_file, out_bytes)?,
                        probe_ns,
                    })
                })
                .collect(),
            Err(e) => Err(e.clone()),
        };
        let how = flags.last().map_or(String::new(), |c| format!(" {c}"));
        rows.push((format!("nerve export --to {to}{how}"), r));
    }
    for (name, r) in rows {
        let runs = match r {
            Ok(runs) => runs,
            Err(e) => {
                out.text(&format!("{name:<26} unavailable: {e}"));
                continue;
            }
        };
        let med = |f: &dyn Fn(&ExportRun) -> f64| median(runs.iter().map(f).collect());
        let rate = med(&|r| r.in_rate);
        let in_synced = med(&|r| r.in_rate_synced);
        let out_synced = med(&|r| r.out_rate_synced);
        let disk = med(&|r| r.disk_rate);
        // Each repetition's ratio against the disk measured right after it, then the median.
        let out_vs_disk = med(&|r| r.out_rate_synced / r.disk_rate);
        let out_mb = med(&|r| r.out_mb);
        let probe = med(&|r| r.probe_ns);
        let vs = |base: &Result<f64, String>| base.as_ref().map(|b| rate / b).ok();
        let in_vs_sync = sync_rate.as_ref().map(|b| in_synced / b).ok();
        let x = |v: Option<f64>| v.filter(|v| v.is_finite()).map_or("-".into(), |v| format!("{v:.2}x"));
        let n = |v: f64| if v.is_finite() { format!("{v:.1}") } else { "-".into() };
        let bar = if !out_vs_disk.is_finite() {
            ""
        } else if out_vs_disk >= 0.5 {
            "pass"
        } else {
            "FAIL"
        };
        out.row(
            format!(
                "{name:<26} {rate:>8.1} {:>8} {:>8} {out_mb:>7.1} | {:>8} {:>6} {:>8} {:>8} {:>8} {bar:>5} {probe:>6.2}",
                x(vs(&copy_rate)),
                x(vs(&sync_rate)),
                n(in_synced),
                x(in_vs_sync),
                n(out_synced),
                n(disk),
                x(Some(out_vs_disk)),
            ),
            json!({"suite": "log", "figure": "export", "what": name, "mb_per_s": rate, "log_mb": mb,
                   "out_mb": out_mb, "vs_copy": vs(&copy_rate), "vs_copy_sync": vs(&sync_rate),
                   "in_mb_per_s_synced": in_synced.is_finite().then_some(in_synced),
                   "in_vs_copy_sync_synced": in_vs_sync.filter(|v| v.is_finite()),
                   "out_mb_per_s_synced": out_synced.is_finite().then_some(out_synced),
                   "disk_write_mb_per_s": disk.is_finite().then_some(disk),
                   "out_vs_disk": out_vs_disk.is_finite().then_some(out_vs_disk),
                   "bar_out_vs_disk_at_least": 0.5, "cpu_probe_ns": probe}),
        );
    }
    let _ = std::fs::remove_file(&file);
}
