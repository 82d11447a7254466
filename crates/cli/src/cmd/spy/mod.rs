//! `nerve spy`: lcm-spy's job in a terminal. Every channel's type (by fingerprint, from `.lcm` files: no compile
//! step), count, rate, period jitter, bandwidth and decode errors, live; pick a channel to see its newest message
//! decoded. `--once` / `--json` print the same statistics once, for scripts.
//!
//! The parts: [`engine`] counts on a thread of its own into [`stats`] (constant work per message), [`decode`] knows
//! the types and draws value trees, [`ui`] is the terminal (model, view, input) and [`json`] the `--once` output.

// `nerve demo` shows the same statistics, from the same engine.
pub(crate) mod decode;
pub(crate) mod engine;
mod json;
mod plot;
mod stats;
mod ui;

#[cfg(test)]
mod tests;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use nerve_bus::{Bus, Url};

use super::exit::reject;
use super::shm_access::check_readable;
use super::types_arg::{load_registry, type_dirs, BrokenFiles};
use decode::{Decoded, Types};
use engine::{lock, Engine, QUEUE_CAPACITY};
use stats::{now_utime, Table};

/// What `nerve spy --help` ends with.
const EXAMPLES: &str = "\
KEYS:
  ↑/↓ or j/k select, Enter opens the channel's newest message, f there picks fields to plot, Esc/q go back;
  q quits the table (Esc does not); n, c, r, b sort by name, count, rate, bandwidth (again: reverse)

EXAMPLES:
  nerve spy --types examples/types                 # live table; NERVE_TYPES=dir1:dir2 works too
  nerve spy --types examples/types --once --json --duration 5 --channel 'EX.*'
  nerve spy --url shm://";

/// Arguments of `nerve spy`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The bus URL [default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0].
    #[arg(long, short = 'l')]
    url: Option<String>,
    /// A directory of .lcm files to identify and decode messages with (repeatable) [default: NERVE_TYPES,
    /// colon-separated].
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// Only channels this regular expression matches in full.
    #[arg(long, value_name = "REGEX", default_value = ".*")]
    channel: String,
    /// Listen for --duration seconds, print the statistics once and exit (no terminal needed).
    #[arg(long)]
    once: bool,
    /// How long --once listens, in seconds [default: 2].
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Print the --once statistics as one JSON object (implies --once).
    #[arg(long)]
    json: bool,
}

/// How long `--once` listens unless told.
const DEFAULT_DURATION_S: f64 = 2.0;

/// Runs `nerve spy`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let once = args.once || args.json;
    if args.duration.is_some() && !once {
        return Err(reject("--duration applies to --once or --json"));
    }
    let duration_s = args.duration.unwrap_or(DEFAULT_DURATION_S);
    if !(duration_s.is_finite() && duration_s > 0.0 && duration_s <= 86_400.0) {
        return Err(reject(format!("--duration {duration_s}: give a number of seconds above 0, up to a day")));
    }
    if !once && !std::io::stdout().is_terminal() {
        return Err(reject("the live table needs a terminal; use --once (or --json) for a one-off report"));
    }
    let types = Arc::new(Types::new(load_registry(&type_dirs(&args.types), BrokenFiles::Skip)?));
    let url = match args.url.as_deref() {
        Some(u) if !u.is_empty() => u.to_owned(),
        _ => Url::from_env(),
    };
    check_readable(&url, &args.channel)?;
    let bus = Bus::new(Some(&url)).context("opening the bus")?;
    let engine = Engine::start(&bus, &args.channel, QUEUE_CAPACITY, Arc::clone(&types))?;
    if !once {
        let title = format!("{url}  {} types", types.len());
        ui::run(engine.table(), &types, title)?;
        return Ok(ExitCode::SUCCESS);
    }
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(duration_s));
    let now = now_utime();
    let table = engine.finish();
    let out = report(&table, &types, &url, started.elapsed().as_secs_f64(), now, args.json);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Decodes each channel's newest message in full (a failure is a decode error) and renders the report.
pub(crate) fn report(
    table: &std::sync::Mutex<Table>,
    types: &Types,
    url: &str,
    duration_s: f64,
    now: i64,
    json: bool,
) -> String {
    let mut t = lock(table);
    let names: Vec<String> = t.channel_names().map(str::to_owned).collect();
    for name in names {
        let Some(ch) = t.channel(&name) else { continue };
        if ch.latest_too_short {
            continue;
        }
        let (latest, seq) = (Arc::clone(&ch.latest), ch.count);
        if let Decoded::Error(..) = types.decode(&latest.data) {
            t.report_decode_failure(&name, seq);
        }
    }
    let mut rows = t.rows(now);
    rows.sort_by(|a, b| a.channel.cmp(&b.channel));
    let r = json::Report { url, duration_s, rows: &rows, total: t.total, drops: t.drops };
    if json {
        r.to_json() + "\n"
    } else {
        r.to_text()
    }
}
