//! `nerve bridge FROM TO`: forwards messages between two buses of any providers (shm, udpm, zenoh, ...), one way or
//! both, for one route or many from a config file.
//!
//! End to end the newest sample wins: each direction keeps, per channel, only the newest message not yet forwarded;
//! a message replaced before the sending side took it is counted as dropped (per channel), so a slow side never
//! queues stale data behind it. A direction forwards only what its source bus received from its transport
//! ([`Origin::Transport`]): what the bridge itself published there is `Local` on that bus, so both ways in one
//! process never loops. Each URL is opened once, whatever the number of routes that name it, for the same reason.
//! With `--types`, a message whose fingerprint is not a known type, or not the type its channel has carried, is
//! counted and dropped. The routes and what each must be are in `config`.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nerve_bus::{Bus, Origin, Pattern, Received, Subscription};
use nerve_codec::now_utime;
use nerve_types::Registry;

use super::types_arg::{load_registry, type_dirs, BrokenFiles};

mod config;

use config::{check_route, parse_config, Route, MAX_CONFIG_BYTES};

/// Arguments of `nerve bridge`.
#[derive(clap::Args)]
pub struct Args {
    /// The bus to forward from (with `--config`, leave out FROM and TO).
    from: Option<String>,
    /// The bus to forward to.
    to: Option<String>,
    /// Forward only channels this regular expression matches (whole names, on FROM's side).
    #[arg(long)]
    channel: Option<String>,
    /// Rename a channel on the way from FROM to TO (and back, with `--both-ways`). Repeatable.
    #[arg(long, value_name = "OLD=NEW")]
    rename: Vec<String>,
    /// Forward from TO to FROM as well.
    #[arg(long)]
    both_ways: bool,
    /// A JSON file of routes: `{"routes": [{"from": URL, "to": URL, "channel": REGEX, "rename": {"OLD": "NEW"},
    /// "both_ways": true}, ...]}` (only `from` and `to` are required).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["from", "channel", "rename", "both_ways"])]
    config: Option<PathBuf>,
    /// Directories of .lcm types: drop (and count) messages whose fingerprint is not their channel's known type.
    #[arg(long, value_name = "DIR")]
    types: Vec<PathBuf>,
    /// Print stats as one JSON object per line instead of a status line.
    #[arg(long)]
    json: bool,
    /// Seconds between two status reports.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Stop after this many seconds (default: run until SIGINT or SIGTERM).
    #[arg(long)]
    duration: Option<f64>,
}

/// Counters of one direction between two reports (and the totals).
#[derive(Default)]
struct Counters {
    forwarded: u64,
    forwarded_total: u64,
    /// Replaced by a newer message on the same channel before it was forwarded, per channel (totals).
    stale: BTreeMap<String, u64>,
    /// Fingerprint not the channel's known type (totals).
    mismatched: u64,
    /// Publications that failed on the destination (totals), and the last error.
    failed: u64,
    last_error: Option<String>,
    /// Receive-to-forwarded times since the last report, microseconds.
    latencies: Vec<i64>,
}

/// One direction of a route: a subscription on the source bus filling the newest-per-channel slots, and a thread
/// that empties them into the destination.
struct Direction {
    label: String,
    pending: Mutex<HashMap<String, Received>>,
    wake: Condvar,
    counters: Mutex<Counters>,
}

impl Direction {
    /// Takes a message from the source bus: only what came from its transport, filtered, type-checked, renamed, into
    /// its channel's pending slot (a message still pending there is replaced, and counted as a stale drop).
    fn offer(&self, msg: &Received, mapping: &Mapping, inverse: &HashMap<String, String>) {
        if msg.origin != Origin::Transport {
            return;
        }
        let home = inverse.get(&msg.channel).unwrap_or(&msg.channel);
        if mapping.filter.as_ref().is_some_and(|f| !f.matches(home)) {
            return;
        }
        if !mapping.type_ok(msg) {
            self.counters.lock().expect("counters").mismatched += 1;
            return;
        }
        let mut out = msg.clone();
        out.channel = mapping.renames.get(&msg.channel).cloned().unwrap_or_else(|| msg.channel.clone());
        let replaced = self.pending.lock().expect("pending").insert(out.channel.clone(), out);
        if let Some(old) = replaced {
            *self.counters.lock().expect("counters").stale.entry(old.channel).or_default() += 1;
        }
        self.wake.notify_one();
    }
}

/// The fingerprint each channel has carried.
type ChannelTypes = Mutex<HashMap<String, u64>>;

/// What a source-side message becomes: the destination channel, or nothing (filtered out).
struct Mapping {
    filter: Option<Pattern>,
    renames: HashMap<String, String>,
    /// Known types: the fingerprint each channel has carried.
    types: Option<(Arc<Registry>, ChannelTypes)>,
}

impl Mapping {
    /// Whether `msg`'s fingerprint fits its channel (always, without `--types`).
    fn type_ok(&self, msg: &Received) -> bool {
        let Some((registry, seen)) = &self.types else { return true };
        let Some(fp) = msg.data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes"))) else {
            return false;
        };
        if registry.candidates(fp).is_empty() {
            return false;
        }
        *seen.lock().expect("types lock").entry(msg.channel.clone()).or_insert(fp) == fp
    }
}

/// Runs `nerve bridge`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let routes = match &args.config {
        Some(path) => {
            let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_CONFIG_BYTES + 1), &mut text)
                .with_context(|| format!("reading {}", path.display()))?;
            if text.len() as u64 > MAX_CONFIG_BYTES {
                bail!("{}: larger than {MAX_CONFIG_BYTES} bytes", path.display());
            }
            parse_config(&text).with_context(|| format!("{}", path.display()))?
        }
        None => {
            let (Some(from), Some(to)) = (args.from.clone(), args.to.clone()) else {
                bail!("give FROM_URL and TO_URL, or --config FILE");
            };
            let mut renames = Vec::new();
            for r in &args.rename {
                let (old, new) = r.split_once('=').with_context(|| format!("--rename '{r}': expected OLD=NEW"))?;
                renames.push((old.to_owned(), new.to_owned()));
            }
            let route = Route { from, to, channel: args.channel.clone(), renames, both_ways: args.both_ways };
            check_route(&route)?;
            vec![route]
        }
    };
    // Refuse broken type files: a type left out would make the bridge drop every message of it as a mismatch.
    let registry = load_registry(&type_dirs(&args.types), BrokenFiles::Refuse)?.map(Arc::new);

    // Each URL once: two buses on one URL in this process would hear each other's publications as Transport.
    let mut buses: HashMap<String, Arc<Bus>> = HashMap::new();
    for r in &routes {
        for url in [&r.from, &r.to] {
            if !buses.contains_key(url) {
                let bus = Bus::new(Some(url)).with_context(|| format!("opening {url}"))?;
                buses.insert(url.clone(), Arc::new(bus));
            }
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing a signal handler")?;
    }
    let mut directions = Vec::new();
    let mut subscriptions: Vec<(Arc<Bus>, Subscription)> = Vec::new();
    let mut threads = Vec::new();
    for r in &routes {
        let forward: Vec<(String, String)> = r.renames.clone();
        let back: Vec<(String, String)> = r.renames.iter().map(|(o, n)| (n.clone(), o.clone())).collect();
        let mut legs = vec![(&r.from, &r.to, forward, false)];
        if r.both_ways {
            legs.push((&r.to, &r.from, back, true));
        }
        for (from, to, renames, reverse) in legs {
            let dir = Arc::new(Direction {
                label: format!("{from} -> {to}"),
                pending: Mutex::default(),
                wake: Condvar::new(),
                counters: Mutex::default(),
            });
            let filter = r.channel.as_deref().map(Pattern::new).transpose()?;
            // The filter names FROM's channels: on the way back, a channel is first renamed to its FROM name.
            let inverse: HashMap<String, String> =
                if reverse { renames.iter().cloned().collect() } else { HashMap::new() };
            let mapping = Arc::new(Mapping {
                filter,
                renames: renames.into_iter().collect(),
                types: registry.as_ref().map(|reg| (Arc::clone(reg), Mutex::default())),
            });
            let source = Arc::clone(&buses[from]);
            let pattern = match (&r.channel, r.renames.is_empty(), reverse) {
                (Some(c), true, _) => c.clone(),
                (Some(c), false, false) => c.clone(),
                _ => ".*".to_owned(),
            };
            let d = Arc::clone(&dir);
            let m = Arc::clone(&mapping);
            let sub = source
                .subscribe_raw(&pattern, move |msg| d.offer(msg, &m, &inverse))
                .with_context(|| format!("subscribing on {from}"))?;
            subscriptions.push((Arc::clone(&source), sub));
            let dest = Arc::clone(&buses[to]);
            let d = Arc::clone(&dir);
            let s = Arc::clone(&stop);
            threads.push(
                std::thread::Builder::new().name("nerve-bridge".into()).spawn(move || forward_loop(&d, &dest, &s))?,
            );
            directions.push(dir);
        }
    }
    let _dispatchers: Vec<_> =
        buses.values().map(|b| b.spawn_dispatcher()).collect::<Result<_, _>>().context("starting dispatchers")?;

    let started = Instant::now();
    let interval = Duration::from_secs_f64(args.interval.max(0.05));
    let mut last = Instant::now();
    let mut out = std::io::stdout().lock();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20).min(interval));
        if args.duration.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
            stop.store(true, Ordering::Relaxed);
        }
        if last.elapsed() >= interval || stop.load(Ordering::Relaxed) {
            let secs = last.elapsed().as_secs_f64();
            last = Instant::now();
            report(&mut out, &directions, secs, args.json)?;
        }
    }
    for d in &directions {
        d.wake.notify_all();
    }
    for t in threads {
        let _ = t.join();
    }
    drop(subscriptions);
    Ok(ExitCode::SUCCESS)
}

/// Forwards the newest pending message of each channel until `stop`.
fn forward_loop(dir: &Direction, dest: &Bus, stop: &AtomicBool) {
    loop {
        let batch: Vec<Received> = {
            let mut pending = dir.pending.lock().expect("pending");
            while pending.is_empty() {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                pending = dir.wake.wait_timeout(pending, Duration::from_millis(100)).expect("pending").0;
            }
            std::mem::take(&mut *pending).into_values().collect()
        };
        for msg in batch {
            let result = dest.publish_raw(&msg.channel, &msg.data);
            let mut c = dir.counters.lock().expect("counters");
            match result {
                Ok(()) => {
                    c.forwarded += 1;
                    c.forwarded_total += 1;
                    c.latencies.push(now_utime() - msg.recv_utime);
                }
                Err(e) => {
                    c.failed += 1;
                    c.last_error = Some(e.to_string());
                }
            }
        }
    }
}

/// Prints one report per direction: rate since the last one, totals, drops, latency through the bridge.
fn report(out: &mut impl Write, directions: &[Arc<Direction>], secs: f64, json: bool) -> anyhow::Result<()> {
    for d in directions {
        let mut c = d.counters.lock().expect("counters");
        let rate = c.forwarded as f64 / secs.max(1e-9);
        c.forwarded = 0;
        let mut lat = std::mem::take(&mut c.latencies);
        lat.sort_unstable();
        let p50 = lat.get(lat.len() / 2).copied();
        let max = lat.last().copied();
        let stale_total: u64 = c.stale.values().sum();
        if json {
            let v = serde_json::json!({
                "route": d.label,
                "rate": (rate * 10.0).round() / 10.0,
                "forwarded": c.forwarded_total,
                "dropped_stale": c.stale,
                "dropped_stale_total": stale_total,
                "mismatched": c.mismatched,
                "failed": c.failed,
                "last_error": c.last_error,
                "latency_us": { "p50": p50, "max": max },
            });
            writeln!(out, "{v}")?;
        } else {
            let lat = match (p50, max) {
                (Some(p), Some(m)) => format!("latency p50 {p} us max {m} us"),
                _ => "latency -".to_owned(),
            };
            writeln!(
                out,
                "{}: {rate:.1} msg/s, {} forwarded, {stale_total} stale dropped, {} type mismatches, {} failed, {lat}",
                d.label, c.forwarded_total, c.mismatched, c.failed
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direction() -> Direction {
        Direction { label: "t".into(), pending: Mutex::default(), wake: Condvar::new(), counters: Mutex::default() }
    }

    fn msg(channel: &str, data: &[u8], origin: Origin) -> Received {
        Received { channel: channel.into(), data: data.to_vec(), recv_utime: 0, origin }
    }

    #[test]
    fn newest_pending_message_wins_and_stale_ones_are_counted_per_channel() {
        let d = direction();
        let m = Mapping { filter: None, renames: [("A".to_owned(), "B".to_owned())].into(), types: None };
        let none = HashMap::new();
        for i in 0..5u8 {
            d.offer(&msg("A", &[i], Origin::Transport), &m, &none);
        }
        d.offer(&msg("C", b"c", Origin::Transport), &m, &none);
        d.offer(&msg("C", b"local", Origin::Local), &m, &none);
        let pending = d.pending.lock().unwrap();
        assert_eq!(pending["B"].data, [4], "the newest, renamed");
        assert_eq!(pending["C"].data, b"c", "a Local message is never forwarded");
        assert_eq!(d.counters.lock().unwrap().stale, [("B".to_owned(), 4)].into());
    }

    #[test]
    fn with_types_a_fingerprint_that_is_not_the_channels_type_is_dropped() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/types");
        let registry = load_registry(&[dir], BrokenFiles::Refuse).unwrap().unwrap();
        let known: Vec<u64> = registry.schema().structs.iter().map(|s| s.fingerprint).take(2).collect();
        assert_ne!(known[0], known[1]);
        let d = direction();
        let m = Mapping { filter: None, renames: HashMap::new(), types: Some((Arc::new(registry), Mutex::default())) };
        let none = HashMap::new();
        d.offer(&msg("P", &known[0].to_be_bytes(), Origin::Transport), &m, &none);
        d.offer(&msg("P", &known[1].to_be_bytes(), Origin::Transport), &m, &none); // another type on P
        d.offer(&msg("Q", &[0xAB; 8], Origin::Transport), &m, &none); // an unknown fingerprint
        d.offer(&msg("R", &[1, 2, 3], Origin::Transport), &m, &none); // too short for one
        assert_eq!(d.counters.lock().unwrap().mismatched, 3);
        assert_eq!(d.pending.lock().unwrap().len(), 1);
    }
}
