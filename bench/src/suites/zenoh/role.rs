//! The zenoh suite's child processes: this program in a hidden role (`zenoh-role ...`), started by the suite in a
//! network namespace with `ip netns exec`. A role speaks one JSON line at a time on stdout: `{"ready":true}` once it
//! can receive, then its result. It stops when it is done (a publisher) or when its stdin closes (a subscriber, a
//! router), so no role outlives the suite.
//!
//! Two APIs, one configuration: `bus` is Nerve (`Bus::new(URL)`, any provider: zenoh, shm, udpm), `zenoh` is the
//! `zenoh` crate used directly, with the Zenoh configuration Nerve's provider builds from the same URL
//! ([`nerve_zenoh::config_from_url`]), the same key (`nerve/CHANNEL`) and the same publisher QoS (dropping congestion
//! control, express up to [`nerve_zenoh::EXPRESS_MAX`] bytes). The two differ only by Nerve's layer.
//!
//! A message is a header and padding: its sequence number, its publish time (CLOCK_MONOTONIC: one clock for every
//! namespace of the host, since network namespaces do not virtualise it) and its phase (warm-up or measured). Only
//! measured messages are counted.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nerve_bus::{Bus, Url};
use serde_json::json;
use zenoh::qos::CongestionControl;
use zenoh::sample::{Locality, Sample};
use zenoh::Wait;

use crate::harness::clock::{mono_ns, set_timer_slack, sleep_until_ns};

/// Header: sequence number, publish time (ns), phase.
pub const HEADER: usize = 17;
const MEASURED: u8 = 1;
const WARMUP: u8 = 0;

/// `zenoh-role ...`: runs a role and never returns to the suite.
pub fn hidden_role(args: &[String]) -> Option<ExitCode> {
    if args.get(1).map(String::as_str) != Some("zenoh-role") {
        return None;
    }
    nerve_zenoh::register();
    let rest = args.get(3..).unwrap_or_default();
    let result = match args.get(2).map(String::as_str) {
        Some("pub") => publisher(rest),
        Some("sub") => subscriber(rest),
        Some("router") => router(rest),
        _ => Err("usage: zenoh-role pub|sub|router ...".into()),
    };
    Some(match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nerve-bench zenoh-role: {e}");
            ExitCode::from(3)
        }
    })
}

/// The Zenoh configuration Nerve's provider would build from `url`.
fn zenoh_config(url: &str) -> Result<zenoh::Config, String> {
    let parsed = Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    nerve_zenoh::config_from_url(&parsed).map(|(c, _)| c).map_err(|e| format!("{url}: {e}"))
}

fn open_zenoh(url: &str) -> Result<zenoh::Session, String> {
    zenoh::open(zenoh_config(url)?).wait().map_err(|e| format!("opening a Zenoh session for {url}: {e}"))
}

/// Blocks until stdin reaches its end.
fn wait_for_stdin_end() {
    let mut sink = String::new();
    let stdin = std::io::stdin();
    while stdin.lock().read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
        sink.clear();
    }
}

/// This process's resident memory, KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// One stream a publisher sends: `CHANNEL:SIZE:RATE` (RATE 0: as fast as it can).
struct Stream {
    channel: String,
    size: usize,
    rate: u64,
    next_ns: u64,
    seq: u64,
    sent: u64,
}

fn parse_stream(s: &str) -> Result<Stream, String> {
    let mut it = s.rsplitn(3, ':');
    let (rate, size, channel) = (it.next(), it.next(), it.next());
    let num = |v: Option<&str>| v.and_then(|v| v.parse::<u64>().ok());
    match (channel, num(size), num(rate)) {
        (Some(c), Some(size), Some(rate)) if !c.is_empty() && size as usize >= HEADER => {
            Ok(Stream { channel: c.to_string(), size: size as usize, rate, next_ns: 0, seq: 0, sent: 0 })
        }
        _ => Err(format!("stream {s:?}: expected CHANNEL:SIZE:RATE with SIZE >= {HEADER}")),
    }
}

/// The publishing side of either API.
enum Sender {
    Bus(Bus),
    Zenoh {
        /// Kept open for as long as its publishers are used.
        _session: zenoh::Session,
        publishers: HashMap<String, zenoh::pubsub::Publisher<'static>>,
    },
}

impl Sender {
    fn open(api: &str, url: &str, streams: &[Stream]) -> Result<Sender, String> {
        match api {
            "bus" => Bus::new(Some(url)).map(Sender::Bus).map_err(|e| format!("{url}: {e}")),
            "zenoh" => {
                let session = open_zenoh(url)?;
                let mut publishers = HashMap::new();
                for s in streams {
                    // What the provider declares for this channel and size (crates/zenoh/src/lib.rs, publish).
                    let publisher = session
                        .declare_publisher(format!("{}/{}", nerve_zenoh::DEFAULT_PREFIX, s.channel))
                        .congestion_control(CongestionControl::Drop)
                        .express(s.size <= nerve_zenoh::EXPRESS_MAX)
                        .allowed_destination(Locality::Remote)
                        .wait()
                        .map_err(|e| format!("declaring a Zenoh publisher: {e}"))?;
                    publishers.insert(s.channel.clone(), publisher);
                }
                Ok(Sender::Zenoh { _session: session, publishers })
            }
            other => Err(format!("api {other:?}: expected bus or zenoh")),
        }
    }

    fn send(&self, channel: &str, data: &[u8]) -> bool {
        match self {
            Sender::Bus(bus) => bus.publish_raw(channel, data).is_ok(),
            Sender::Zenoh { publishers, .. } => publishers[channel].put(data).wait().is_ok(),
        }
    }
}

/// `pub API URL WARMUP_MS RUN_MS STREAM...`: sends each stream at its rate (absolute schedule; a stream more than
/// 10 ms behind skips ahead rather than bursting) for WARMUP_MS marked warm-up, then RUN_MS measured, and prints
/// what it sent in the measured phase.
fn publisher(args: &[String]) -> Result<(), String> {
    let [api, url, warm, run, streams @ ..] = args else {
        return Err("usage: pub API URL WARMUP_MS RUN_MS CHANNEL:SIZE:RATE...".into());
    };
    let ms = |s: &String| s.parse::<u64>().map_err(|_| format!("{s:?}: not milliseconds"));
    let (warm_ns, run_ns) = (ms(warm)? * 1_000_000, ms(run)? * 1_000_000);
    let mut streams = streams.iter().map(|s| parse_stream(s)).collect::<Result<Vec<_>, _>>()?;
    if streams.is_empty() {
        return Err("no stream".into());
    }
    set_timer_slack();
    let sender = Sender::open(api, url, &streams)?;
    let mut bufs: Vec<Vec<u8>> = streams.iter().map(|s| vec![0x5a; s.size]).collect();
    let start = mono_ns();
    let (measure_from, end) = (start + warm_ns, start + warm_ns + run_ns);
    for s in &mut streams {
        s.next_ns = start;
    }
    let (mut errors, mut skipped) = (0u64, 0u64);
    loop {
        let now = mono_ns();
        if now >= end {
            break;
        }
        let due = streams.iter().map(|s| s.next_ns).min().unwrap_or(now);
        if due > now {
            sleep_until_ns(due.min(end));
            continue;
        }
        for (s, buf) in streams.iter_mut().zip(&mut bufs) {
            if s.next_ns > now {
                continue;
            }
            if let Some(period) = 1_000_000_000u64.checked_div(s.rate) {
                s.next_ns += period;
                if now.saturating_sub(s.next_ns) > 10_000_000 {
                    let behind = (now - s.next_ns) / period;
                    skipped += behind;
                    s.next_ns += behind * period;
                }
            }
            s.seq += 1;
            let t = mono_ns();
            let phase = if t >= measure_from { MEASURED } else { WARMUP };
            buf[..8].copy_from_slice(&s.seq.to_le_bytes());
            buf[8..16].copy_from_slice(&t.to_le_bytes());
            buf[16] = phase;
            if !sender.send(&s.channel, buf) {
                errors += 1;
            } else if phase == MEASURED {
                s.sent += 1;
            }
        }
    }
    let sent: BTreeMap<&str, u64> = streams.iter().map(|s| (s.channel.as_str(), s.sent)).collect();
    println!(
        "{}",
        json!({"sent": sent, "errors": errors, "skipped": skipped, "seconds": run_ns as f64 / 1e9,
               "rss_kib": rss_kib()})
    );
    // Let the transport flush what it holds before the session closes.
    std::thread::sleep(Duration::from_millis(200));
    drop(sender);
    Ok(())
}

/// What a subscriber saw of one class of channels (`R7_POSE` and `POSE` are class `POSE`).
#[derive(Default)]
struct Class {
    received: u64,
    bytes: u64,
    first_ns: u64,
    last_ns: u64,
    latencies_ns: Vec<u64>,
    short: u64,
}

type Classes = Arc<Mutex<BTreeMap<String, Class>>>;

fn class_of(channel: &str) -> &str {
    match channel.split_once('_') {
        Some((robot, rest)) if robot.starts_with('R') && robot[1..].bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => channel,
    }
}

fn record(classes: &Classes, channel: &str, data: &[u8]) {
    let now = mono_ns();
    let mut classes = classes.lock().unwrap_or_else(|e| e.into_inner());
    let c = classes.entry(class_of(channel).to_string()).or_default();
    if data.len() < HEADER {
        c.short += 1;
        return;
    }
    if data[16] != MEASURED {
        return;
    }
    let stamp = u64::from_le_bytes(data[8..16].try_into().unwrap_or_default());
    if c.received == 0 {
        c.first_ns = now;
    }
    c.received += 1;
    c.bytes += data.len() as u64;
    c.last_ns = now;
    c.latencies_ns.push(now.saturating_sub(stamp));
}

/// The value at quantile `q` of sorted `v`, µs.
pub fn quantile_us(v: &[u64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    Some(v[i.min(v.len() - 1)] as f64 / 1e3)
}

/// `sub API URL`: receives every channel (bus: `.*`; zenoh: `nerve/**`), says ready, and when stdin closes prints
/// per class the measured messages, bytes, first and last arrival and the one-way latency percentiles.
fn subscriber(args: &[String]) -> Result<(), String> {
    let [api, url] = args else { return Err("usage: sub API URL".into()) };
    let classes: Classes = Arc::default();
    let mut overflow = None;
    match api.as_str() {
        "bus" => {
            let bus = Bus::new(Some(url)).map_err(|e| format!("{url}: {e}"))?;
            let c = Arc::clone(&classes);
            let sub = bus.subscribe_raw(".*", move |m| record(&c, &m.channel, &m.data)).map_err(|e| e.to_string())?;
            let _dispatch = bus.spawn_dispatcher().map_err(|e| e.to_string())?;
            println!("{}", json!({"ready": true}));
            wait_for_stdin_end();
            overflow = bus.stats(&sub).ok().map(|s| s.dropped_overflow);
        }
        "zenoh" => {
            let session = open_zenoh(url)?;
            let c = Arc::clone(&classes);
            let prefix = format!("{}/", nerve_zenoh::DEFAULT_PREFIX);
            let _sub = session
                .declare_subscriber(format!("{}/**", nerve_zenoh::DEFAULT_PREFIX))
                .allowed_origin(Locality::Remote)
                .callback(move |s: Sample| {
                    let channel = s.key_expr().as_str().strip_prefix(prefix.as_str()).unwrap_or_default();
                    record(&c, channel, &s.payload().to_bytes());
                })
                .wait()
                .map_err(|e| format!("declaring a Zenoh subscriber: {e}"))?;
            println!("{}", json!({"ready": true}));
            wait_for_stdin_end();
        }
        other => return Err(format!("api {other:?}: expected bus or zenoh")),
    }
    let mut classes = classes.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = serde_json::Map::new();
    for (name, c) in classes.iter_mut() {
        c.latencies_ns.sort_unstable();
        out.insert(
            name.clone(),
            json!({"received": c.received, "bytes": c.bytes, "first_ns": c.first_ns, "last_ns": c.last_ns,
                   "short": c.short, "p50_us": quantile_us(&c.latencies_ns, 0.5),
                   "p99_us": quantile_us(&c.latencies_ns, 0.99), "max_us": quantile_us(&c.latencies_ns, 1.0)}),
        );
    }
    println!("{}", json!({"classes": out, "queue_overflow": overflow, "rss_kib": rss_kib()}));
    Ok(())
}

/// `router URL`: a Zenoh router (the session Nerve's provider opens for `mode=router`), until stdin closes.
fn router(args: &[String]) -> Result<(), String> {
    let [url] = args else { return Err("usage: router URL".into()) };
    let session = open_zenoh(url)?;
    println!("{}", json!({"ready": true}));
    wait_for_stdin_end();
    drop(session);
    Ok(())
}
