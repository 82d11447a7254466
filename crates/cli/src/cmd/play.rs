//! `nerve play FILE`: lcm-logplayer's job. Publishes a log's events on a bus with the recorded timing scaled by
//! `--speed` (as fast as possible with `--speed 0`), optionally from `--start` seconds in, only the channels a
//! pattern matches, renamed with `--remap OLD=NEW`, over and over with `--loop`.
//!
//! Timing follows an absolute schedule: an event is due at the wall time the playback started plus its offset in
//! the log divided by the speed, so sleeping late never accumulates drift. A damaged log is played up to and past
//! the damage (the reader resynchronises); the damage is reported at the end and the exit status is 1.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use nerve_bus::{Bus, Pattern};
use nerve_log::LogReader;

/// Arguments of `nerve play`.
#[derive(clap::Args)]
pub struct Args {
    /// The log file.
    file: PathBuf,
    /// Playback speed: 2 is twice as fast, 0 as fast as possible.
    #[arg(long, short = 's', default_value_t = 1.0)]
    speed: f64,
    /// Start this many seconds after the log's first event.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    start: f64,
    /// Play only the channels this regular expression matches in full.
    #[arg(long, short = 'c', value_name = "REGEX")]
    channel: Option<String>,
    /// Publish channel OLD as NEW (repeatable).
    #[arg(long, value_name = "OLD=NEW")]
    remap: Vec<String>,
    /// Start again from the beginning at the end, until interrupted.
    #[arg(long = "loop")]
    repeat: bool,
    /// The bus URL (default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0).
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
        bail!("--speed must be 0 (as fast as possible) or more");
    }
    if !args.start.is_finite() || args.start < 0.0 {
        bail!("--start must be 0 or more seconds");
    }
    let mut remap = HashMap::new();
    for r in &args.remap {
        let (old, new) = r.split_once('=').with_context(|| format!("--remap {r}: expected OLD=NEW"))?;
        if old.is_empty() || new.is_empty() {
            bail!("--remap {r}: expected OLD=NEW with both names");
        }
        remap.insert(old.to_owned(), new.to_owned());
    }
    let filter = match &args.channel {
        Some(re) => Some(Pattern::new(re).with_context(|| format!("--channel {re}"))?),
        None => None,
    };
    let bus = Bus::new(args.url.as_deref()).context("opening the bus")?;
    let started = Instant::now();
    let mut total = Pass::default();
    let mut damage_report = Vec::new();
    let mut damage_regions = 0;
    // channel bytes -> the name to publish as (None: filtered out); looked up without allocating.
    let mut names: HashMap<Vec<u8>, Option<String>> = HashMap::new();
    loop {
        let mut reader = LogReader::open(&args.file)?;
        let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(reader.len());
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg} [{elapsed_precise}, eta {eta}]")
                    .expect("a valid template"),
            );
            bar
        });
        let pass = play_once(&args, &bus, &mut reader, filter.as_ref(), &remap, &mut names, bar.as_ref())?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        total.published += pass.published;
        total.skipped += pass.skipped;
        total.bytes += pass.bytes;
        if damage_report.is_empty() {
            damage_report = reader.damage().to_vec();
            damage_regions = reader.damage_totals().regions;
        }
        if !args.repeat || pass.published + pass.skipped == 0 {
            break;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if !args.quiet {
        eprintln!(
            "nerve play: published {} messages ({} bytes) in {secs:.3} s ({:.0} msg/s){}",
            total.published,
            total.bytes,
            total.published as f64 / secs.max(1e-9),
            if total.skipped > 0 { format!("; {} skipped (--channel or --start)", total.skipped) } else { String::new() },
        );
    }
    if damage_regions > 0 {
        eprintln!("nerve play: {}: damaged in {damage_regions} place(s); every intact event was played:", args.file.display());
        for d in &damage_report {
            eprintln!("  {d}");
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn play_once(
    args: &Args,
    bus: &Bus,
    reader: &mut LogReader<std::fs::File>,
    filter: Option<&Pattern>,
    remap: &HashMap<String, String>,
    names: &mut HashMap<Vec<u8>, Option<String>>,
    bar: Option<&ProgressBar>,
) -> anyhow::Result<Pass> {
    let mut pass = Pass::default();
    let mut first_utime: Option<i64> = None;
    // (wall time, log time) the schedule counts from: the first event played.
    let mut origin: Option<(Instant, i64)> = None;
    let start_us = (args.start * 1e6) as i64;
    let mut since_bar = 0u32;
    while let Some(ev) = reader.next_event()? {
        let first = *first_utime.get_or_insert(ev.utime);
        if ev.utime < first.saturating_add(start_us) {
            pass.skipped += 1;
            continue;
        }
        if !names.contains_key(ev.channel_bytes) {
            let ch = ev.channel().into_owned();
            let n = filter.is_none_or(|f| f.matches(&ch)).then(|| remap.get(&ch).cloned().unwrap_or(ch));
            names.insert(ev.channel_bytes.to_vec(), n);
        }
        let name = names[ev.channel_bytes].as_deref();
        let Some(name) = name else {
            pass.skipped += 1;
            continue;
        };
        if args.speed > 0.0 {
            let (wall0, log0) = *origin.get_or_insert((Instant::now(), ev.utime));
            let offset_us = (ev.utime - log0).max(0) as f64 / args.speed;
            let due = wall0 + Duration::from_secs_f64(offset_us / 1e6);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        bus.publish_raw(name, ev.data).with_context(|| format!("publishing on {name}"))?;
        pass.published += 1;
        pass.bytes += ev.data.len() as u64;
        since_bar += 1;
        if since_bar >= 4096 || args.speed > 0.0 {
            since_bar = 0;
            if let Some(bar) = bar {
                bar.set_position(reader.offset());
                bar.set_message(format!("{} msgs", pass.published));
            }
        }
    }
    Ok(pass)
}
