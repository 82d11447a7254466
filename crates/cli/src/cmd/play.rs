//! `nerve play FILE`: lcm-logplayer's job. Publishes a log's events (an LCM log, or an MCAP recording: the file's
//! first bytes tell) on a bus with the recorded timing scaled by
//! `--speed` (as fast as possible with `--speed 0`), optionally from `--start` seconds in, only the channels a
//! pattern matches, renamed with `--remap OLD=NEW`, over and over with `--loop`.
//!
//! Timing follows an absolute schedule: an event is due at the wall time the playback started plus its offset in
//! the log divided by the speed, so sleeping late never accumulates drift. A damaged log is played up to and past
//! the damage (the reader resynchronises); the damage is reported at the end and the exit status is 1.
//!
//! Events that are due together go to the bus in batches ([`Bus::publish_raw_batch`]: one `sendmmsg` for many
//! datagrams on udpm), in log order: at `--speed 0` every event is due at once, so batches are full (64 messages or
//! 256 KiB); at other speeds an event waits in the batch only while the next one read is due too (the player is
//! behind, or they share a time), and the batch goes out before any sleep and before an event is skipped, so the
//! schedule is the same as publishing one by one.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use nerve_bus::{Bus, Pattern};
use nerve_log::mcap::AnyLog;
use nerve_log::DamageTotals;

use super::damage;
use super::exit::reject;

/// What `nerve play --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve play run.lcmlog.00 --speed 2 --remap POSE=POSE_REPLAY --channel 'POSE|LASER'
  nerve play run.lcmlog.00 --speed 0 --start 30 --loop      # as fast as possible, from 30 s in
  nerve play run.lcmlog.00 --url shm://                     # onto shared-memory channels";

/// Arguments of `nerve play`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The log file.
    file: PathBuf,
    /// Playback speed: 2 is twice as fast, 0 as fast as possible.
    #[arg(long, short = 's', default_value_t = 1.0)]
    speed: f64,
    /// Start this many seconds after the log's first event.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    start: f64,
    /// Play only the channels this regular expression matches in full [default: every channel].
    #[arg(long, value_name = "REGEX")]
    channel: Option<String>,
    /// Publish channel OLD as NEW (repeatable).
    #[arg(long, value_name = "OLD=NEW")]
    remap: Vec<String>,
    /// Start again from the beginning at the end, until interrupted.
    #[arg(long = "loop")]
    repeat: bool,
    /// The bus URL [default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0].
    #[arg(long, short = 'l')]
    url: Option<String>,
    /// No progress bar, no summary.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// What one pass over the file did.
#[derive(Default)]
struct Pass {
    published: u64,
    skipped: u64,
    bytes: u64,
}

/// Runs `nerve play`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.speed.is_finite() || args.speed < 0.0 {
        return Err(reject("--speed must be 0 (as fast as possible) or more"));
    }
    if !args.start.is_finite() || args.start < 0.0 {
        return Err(reject("--start must be 0 or more seconds"));
    }
    let mut remap = HashMap::new();
    for r in &args.remap {
        let (old, new) = r.split_once('=').with_context(|| format!("--remap {r}: expected OLD=NEW"))?;
        if old.is_empty() || new.is_empty() {
            return Err(reject("--remap {r}: expected OLD=NEW with both names"));
        }
        remap.insert(old.to_owned(), new.to_owned());
    }
    let filter = match &args.channel {
        Some(re) => Some(Pattern::new(re).with_context(|| format!("--channel {re}"))?),
        None => None,
    };
    let bus = Bus::new(args.url.as_deref()).context("opening the bus")?;
    // Ctrl-C (or SIGTERM) stops the playback between two events, and the summary is still printed.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing a signal handler")?;
    }
    let started = Instant::now();
    let mut total = Pass::default();
    let mut damage_report = Vec::new();
    let mut damage_totals = DamageTotals::default();
    let mut names = Names::default();
    loop {
        let mut reader = AnyLog::open(&args.file)?;
        let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(reader.len());
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg} [{elapsed_precise}, eta {eta}]")
                    .expect("a valid template"),
            );
            // Redrawn while nothing is published too, so that a long wait for the next event shows as one.
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        let watch = Watch { bar: bar.as_ref(), stop: &stop };
        let pass = play_once(&args, &bus, &mut reader, filter.as_ref(), &remap, &mut names, watch)?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        total.published += pass.published;
        total.skipped += pass.skipped;
        total.bytes += pass.bytes;
        if damage_report.is_empty() {
            damage_report = reader.damage().to_vec();
            damage_totals = reader.damage_totals();
        }
        if !args.repeat || pass.published + pass.skipped == 0 || stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if !args.quiet {
        eprintln!(
            "nerve play: {}published {} messages ({} bytes) in {secs:.3} s ({:.0} msg/s){}",
            if stop.load(Ordering::Relaxed) { "interrupted; " } else { "" },
            total.published,
            total.bytes,
            total.published as f64 / secs.max(1e-9),
            if total.skipped > 0 {
                format!("; {} skipped (--channel or --start)", total.skipped)
            } else {
                String::new()
            },
        );
    }
    if let Some(code) = damage::report("nerve play", &args.file, &damage_report, damage_totals, "played") {
        return Ok(code);
    }
    Ok(ExitCode::SUCCESS)
}

/// Channel names as read -> the names to publish them as, looked up without allocating.
#[derive(Default)]
struct Names {
    /// Channel bytes -> index in `published` (None: filtered out).
    index: HashMap<Vec<u8>, Option<usize>>,
    published: Vec<String>,
}

impl Names {
    /// The index of the name to publish `channel` as, or None when `--channel` filters it out.
    fn lookup(&mut self, channel: &[u8], filter: Option<&Pattern>, remap: &HashMap<String, String>) -> Option<usize> {
        if let Some(&i) = self.index.get(channel) {
            return i;
        }
        let ch = String::from_utf8_lossy(channel).into_owned();
        let i = filter.is_none_or(|f| f.matches(&ch)).then(|| {
            self.published.push(remap.get(&ch).cloned().unwrap_or(ch));
            self.published.len() - 1
        });
        self.index.insert(channel.to_vec(), i);
        i
    }
}

/// What a pass reports to and is stopped by: the progress bar (on a terminal) and the Ctrl-C flag.
#[derive(Clone, Copy)]
struct Watch<'a> {
    bar: Option<&'a ProgressBar>,
    stop: &'a AtomicBool,
}

/// Sleeps until `due` in short slices, saying on the progress bar that it waits for the next event's time (when the
/// wait is long enough to be seen); false when stopped first.
fn wait_until(due: Instant, stop: &AtomicBool, bar: Option<&ProgressBar>, published: u64) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        let Some(left) = due.checked_duration_since(now).filter(|l| !l.is_zero()) else { return true };
        if let Some(bar) = bar.filter(|_| left >= Duration::from_millis(500)) {
            bar.set_message(format!("{published} msgs, waiting {:.1} s for the next one", left.as_secs_f64()));
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Most events published in one batch.
const BATCH_MESSAGES: usize = 64;
/// Most bytes of events copied into one batch; a bigger event is published on its own, from the reader's buffer.
const BATCH_BYTES: usize = 256 * 1024;

/// Events read and due, waiting to be published together (copied: the reader lends an event only until the next).
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    events: Vec<(usize, Range<usize>)>,
}

impl Batch {
    fn push(&mut self, name: usize, data: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(data);
        self.events.push((name, start..self.data.len()));
    }

    fn is_full(&self) -> bool {
        self.events.len() >= BATCH_MESSAGES || self.data.len() >= BATCH_BYTES
    }

    /// Publishes everything waiting, in order.
    fn flush(&mut self, bus: &Bus, names: &Names, pass: &mut Pass) -> anyhow::Result<()> {
        if self.events.is_empty() {
            return Ok(());
        }
        let batch: Vec<(&str, &[u8])> =
            self.events.iter().map(|(n, r)| (names.published[*n].as_str(), &self.data[r.clone()])).collect();
        publish(bus, &batch, pass)?;
        self.events.clear();
        self.data.clear();
        Ok(())
    }
}

fn publish(bus: &Bus, batch: &[(&str, &[u8])], pass: &mut Pass) -> anyhow::Result<()> {
    if let Err(e) = bus.publish_raw_batch(batch) {
        let channel = batch[e.sent].0;
        pass.published += e.sent as u64;
        return Err(anyhow::Error::new(e.error).context(format!("publishing on {channel}")));
    }
    pass.published += batch.len() as u64;
    pass.bytes += batch.iter().map(|(_, d)| d.len() as u64).sum::<u64>();
    Ok(())
}

fn play_once(
    args: &Args,
    bus: &Bus,
    reader: &mut AnyLog,
    filter: Option<&Pattern>,
    remap: &HashMap<String, String>,
    names: &mut Names,
    watch: Watch<'_>,
) -> anyhow::Result<Pass> {
    let Watch { bar, stop } = watch;
    let mut pass = Pass::default();
    let mut first_utime: Option<i64> = None;
    // (wall time, log time) the schedule counts from: the first event played.
    let mut origin: Option<(Instant, i64)> = None;
    let start_us = (args.start * 1e6) as i64;
    let mut since_bar = 0u32;
    let mut batch = Batch::default();
    let timed = args.speed > 0.0;
    while let Some(ev) = reader.next_event()? {
        if stop.load(Ordering::Relaxed) {
            return Ok(pass);
        }
        let first = *first_utime.get_or_insert(ev.utime);
        let name = if ev.utime < first.saturating_add(start_us) {
            None
        } else {
            names.lookup(ev.channel_bytes, filter, remap)
        };
        let Some(name) = name else {
            pass.skipped += 1;
            if timed {
                // What waits is due: out before the time spent skipping.
                batch.flush(bus, names, &mut pass)?;
            }
            continue;
        };
        if timed {
            let (wall0, log0) = *origin.get_or_insert((Instant::now(), ev.utime));
            let offset_us = (ev.utime - log0).max(0) as f64 / args.speed;
            let due = wall0 + Duration::from_secs_f64(offset_us / 1e6);
            if due > Instant::now() {
                batch.flush(bus, names, &mut pass)?;
                if !wait_until(due, stop, bar, pass.published) {
                    return Ok(pass);
                }
            }
        }
        if ev.data.len() >= BATCH_BYTES {
            batch.flush(bus, names, &mut pass)?;
            publish(bus, &[(names.published[name].as_str(), ev.data)], &mut pass)?;
        } else {
            batch.push(name, ev.data);
            if batch.is_full() {
                batch.flush(bus, names, &mut pass)?;
            }
        }
        since_bar += 1;
        if since_bar >= 4096 || timed {
            since_bar = 0;
            if let Some(bar) = bar {
                bar.set_position(reader.offset());
                bar.set_message(format!("{} msgs", pass.published + batch.events.len() as u64));
            }
        }
    }
    batch.flush(bus, names, &mut pass)?;
    Ok(pass)
}
