//! `nerve export LOG --to mcap|jsonl|csv`: a log to MCAP (a JSON schema per LCM type and JSON messages, for
//! Foxglove), JSON lines, or a CSV file per channel with flattened field names. Types come from `--types DIR`
//! (or `NERVE_TYPES`); messages no type decodes are exported raw with the reason. A progress bar shows on a
//! terminal. A damaged log is exported up to and past the damage, which is reported (exit status 1). `--to lcm`
//! copies the matching events into a new log with Nerve's writer (lcm-logfilter's job, and a repaired copy of a
//! damaged log). Every format's files are synced to the disk before it exits.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use nerve_bus::Pattern;
use nerve_log::export::{CsvExport, Decoder, ExportStats, Feed, JsonlExport, McapExport};
use nerve_log::{EventRef, LogReader};

use super::damage;
use super::exit::{reject, rejected};
use super::types_arg::{load_registry, type_dirs, BrokenFiles};

/// Output formats.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// MCAP with a JSON schema per type and JSON messages (opens in Foxglove).
    Mcap,
    /// One JSON object per message.
    Jsonl,
    /// A CSV file per channel, columns named by field path (`pose.position[0]`).
    Csv,
    /// An LCM log again: the matching channels, renumbered from 0 (lcm-logfilter's job); damage is left behind.
    Lcm,
}

/// What `nerve export --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve export run.lcmlog.00 --to mcap --types examples/types    # run.lcmlog.00.mcap, opens in Foxglove
  nerve export run.lcmlog.00 --to csv -o csv/ --types examples/types
  nerve export run.lcmlog.00 --to jsonl -o - --channel POSE       # to stdout
  nerve export damaged.lcmlog --to lcm -o repaired.lcmlog          # every intact event, damage left behind";

/// Arguments of `nerve export`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The log file.
    log: PathBuf,
    /// The output format.
    #[arg(long, value_enum)]
    to: Format,
    /// Where to write: a file (mcap, jsonl, lcm; `-` is stdout for jsonl) or a directory (csv) [default: LOG.mcap,
    /// LOG.jsonl, LOG.filtered.lcmlog or the directory LOG.csv].
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// A directory of .lcm files to decode messages with (repeatable) [default: NERVE_TYPES].
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// Export only the channels this regular expression matches in full [default: every channel].
    #[arg(long, value_name = "REGEX")]
    channel: Option<String>,
    /// Replace OUTPUT if it exists (a file, or a CSV directory that is not empty).
    #[arg(long, short = 'f')]
    force: bool,
    /// No progress bar, no summary.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Refuses to replace an earlier export unless `--force`: a run without `--types` must not silently overwrite a
/// decoded export with an undecoded one.
fn check_output(output: &Path, to: Format, force: bool) -> anyhow::Result<()> {
    if force || output.as_os_str() == "-" {
        return Ok(());
    }
    let taken = match to {
        Format::Csv => std::fs::read_dir(output).is_ok_and(|mut d| d.next().is_some()),
        _ => output.exists(),
    };
    if taken {
        let what = if to == Format::Csv { "is a directory that is not empty" } else { "exists" };
        return Err(reject(format!("{} {what} (use --force to replace it)", output.display())));
    }
    Ok(())
}

fn default_output(log: &Path, to: Format) -> PathBuf {
    let ext = match to {
        Format::Mcap => "mcap",
        Format::Jsonl => "jsonl",
        Format::Csv => "csv",
        Format::Lcm => "filtered.lcmlog",
    };
    let mut s = log.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Runs `nerve export`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let registry = load_registry(&type_dirs(&args.types), BrokenFiles::Refuse)?;
    let decoder = Decoder::new(registry);
    let filter = match &args.channel {
        Some(re) => Some(Pattern::new(re).with_context(|| format!("--channel {re}"))?),
        None => None,
    };
    let output = args.output.clone().unwrap_or_else(|| default_output(&args.log, args.to));
    check_output(&output, args.to, args.force)?;
    let started = Instant::now();
    let mut reader = LogReader::open(&args.log)?;
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(reader.len());
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} [{elapsed_precise}, eta {eta}]",
            )
            .expect("a valid template"),
        );
        bar
    });
    let mut cache: std::collections::HashMap<Vec<u8>, bool> = std::collections::HashMap::new();
    let mut wanted = |ev: &EventRef<'_>| -> bool {
        let Some(f) = &filter else { return true };
        if let Some(&w) = cache.get(ev.channel_bytes) {
            return w;
        }
        let w = f.matches(&ev.channel());
        cache.insert(ev.channel_bytes.to_vec(), w);
        w
    };
    let mut count = 0u64;
    let mut tick = |bar: Option<&ProgressBar>, pos: u64| {
        count += 1;
        if count.is_multiple_of(4096) {
            if let Some(b) = bar {
                b.set_position(pos);
            }
        }
    };
    // Hands the wanted events of `from` to an exporter (`base`: where this pass starts on the progress bar).
    let mut feed = |from: &mut LogReader<std::fs::File>, base: u64, export: &mut Feed<'_>| -> anyhow::Result<()> {
        while let Some(ev) = from.next_event()? {
            if wanted(&ev) {
                export(&ev)?;
            }
            let pos = base + ev.offset + ev.encoded_len();
            tick(bar.as_ref(), pos);
        }
        Ok(())
    };
    let stats: ExportStats = match args.to {
        Format::Mcap => {
            McapExport::create(&output, &decoder)?.run(|export: &mut Feed<'_>| feed(&mut reader, 0, export))?
        }
        Format::Jsonl => {
            let x = if output.as_os_str() == "-" {
                JsonlExport::to_writer(Path::new("stdout"), Box::new(std::io::stdout().lock()), &decoder)
            } else {
                JsonlExport::create(&output, &decoder)?
            };
            x.run(|export: &mut Feed<'_>| feed(&mut reader, 0, export))?
        }
        Format::Lcm => {
            let mut w = nerve_log::LogWriter::create(&output, true)?;
            let mut stats = ExportStats::default();
            while let Some(ev) = reader.next_event()? {
                if wanted(&ev) {
                    w.write_numbered(w.next_number(), ev.utime, ev.channel_bytes, ev.data)?;
                    stats.messages += 1;
                }
                let pos = ev.offset + ev.encoded_len();
                tick(bar.as_ref(), pos);
            }
            w.sync()?;
            stats.bytes_out = w.bytes_written();
            stats
        }
        Format::Csv => {
            // A second pass over the log only for tables whose columns grew after their rows were written: it
            // reads the file again (the progress bar then goes on to twice its length), and its damage was
            // reported by the first.
            let mut pass = 0;
            let len = reader.len();
            CsvExport::create(&output, &decoder)?.run(|export: &mut Feed<'_>| -> anyhow::Result<()> {
                pass += 1;
                if pass == 1 {
                    feed(&mut reader, 0, export)
                } else {
                    if let Some(b) = &bar {
                        b.set_length(2 * len);
                    }
                    feed(&mut LogReader::open(&args.log)?, len, export)
                }
            })?
        }
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64();
    if !args.quiet {
        eprintln!(
            "nerve export: {} messages ({} decoded, {} undecoded) to {} ({} bytes) in {secs:.3} s, {:.1} MB/s of log",
            stats.messages,
            stats.decoded,
            stats.undecoded,
            output.display(),
            stats.bytes_out,
            reader.len() as f64 / 1e6 / secs.max(1e-9)
        );
    }
    if reader.is_not_a_log() && output.as_os_str() != "-" {
        // Nothing was exported: leave no empty output behind to be mistaken for a result.
        let _ = if args.to == Format::Csv { std::fs::remove_dir(&output) } else { std::fs::remove_file(&output) };
    }
    if args.to != Format::Lcm && stats.messages > 0 && stats.decoded == 0 {
        eprintln!(
            "nerve export: 0 of {} messages decoded: pass --types DIR (or set NERVE_TYPES) with the .lcm files of \
             their types",
            stats.messages
        );
        damage::report("nerve export", &args.log, reader.damage(), reader.damage_totals(), "exported");
        return Ok(rejected());
    }
    if let Some(code) = damage::report("nerve export", &args.log, reader.damage(), reader.damage_totals(), "exported") {
        return Ok(code);
    }
    Ok(ExitCode::SUCCESS)
}
