//! `nerve export LOG --to mcap|jsonl|csv`: a log to MCAP (a JSON schema per LCM type and JSON messages, for
//! Foxglove; chunks compressed with `--compression zstd|lz4|none`), JSON lines, or a CSV file per channel with
//! flattened field names. Types come from `--types DIR` (or `NERVE_TYPES`), or from the log itself when it is an
//! MCAP recording (which carries its types' `.lcm` definitions); messages no type decodes are exported raw with
//! the reason. A progress bar shows on a terminal. A damaged log is exported up to and past the damage, which is
//! reported (exit status 1). `--to lcm` copies the matching events into a new log with Nerve's writer
//! (lcm-logfilter's job, a repaired copy of a damaged log, or an MCAP recording back as an LCM log); `--to mcap
//! --encoding lcm` writes a recording as `nerve log run.mcap` does (LCM bytes, the types' definitions). LOG is an
//! LCM log or an MCAP recording, told apart by its first bytes. Every format's files are synced to the disk
//! before it exits.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use nerve_bus::Pattern;
use nerve_log::export::{
    registry_from_mcap, type_defs, CsvExport, Decoder, ExportStats, Feed, JsonlExport, McapExport,
};
use nerve_log::mcap::{AnyLog, Compression, McapWriter};
use nerve_log::EventRef;

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

/// MCAP chunk compression.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompressionArg {
    /// Zstandard.
    Zstd,
    /// LZ4: faster, larger.
    Lz4,
    /// None.
    None,
}

impl From<CompressionArg> for Compression {
    fn from(c: CompressionArg) -> Compression {
        match c {
            CompressionArg::Zstd => Compression::Zstd,
            CompressionArg::Lz4 => Compression::Lz4,
            CompressionArg::None => Compression::None,
        }
    }
}

/// What an MCAP export's messages are.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encoding {
    /// JSON with a JSON schema per type (what Foxglove shows).
    Json,
    /// The LCM bytes themselves with the types' `.lcm` definitions (a recording, as `nerve log run.mcap` writes).
    Lcm,
}

/// What `nerve export --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve export run.lcmlog.00 --to mcap --types examples/types    # run.lcmlog.00.mcap, opens in Foxglove
  nerve export run.mcap --to mcap -o view.mcap                    # a recording for Foxglove: no --types needed
  nerve export run.mcap --to lcm -o run.lcmlog                    # a recording back to an LCM log
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
    /// MCAP chunk compression.
    #[arg(long, value_enum, default_value = "zstd")]
    compression: CompressionArg,
    /// MCAP messages: JSON for viewing, or the LCM bytes as recorded.
    #[arg(long, value_enum, default_value = "json")]
    encoding: Encoding,
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
    let dirs = type_dirs(&args.types);
    let mut registry = load_registry(&dirs, BrokenFiles::Refuse)?;
    if registry.is_none() && nerve_log::mcap::is_mcap(&args.log)? {
        registry = registry_from_mcap(&args.log)?;
    }
    let decoder = Decoder::new(registry);
    let filter = match &args.channel {
        Some(re) => Some(Pattern::new(re).with_context(|| format!("--channel {re}"))?),
        None => None,
    };
    let output = args.output.clone().unwrap_or_else(|| default_output(&args.log, args.to));
    check_output(&output, args.to, args.force)?;
    let started = Instant::now();
    let mut reader = AnyLog::open(&args.log)?;
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
    let mut feed = |from: &mut AnyLog, base: u64, export: &mut Feed<'_>| -> anyhow::Result<()> {
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
        Format::Mcap if args.encoding == Encoding::Lcm => {
            let defs = type_defs(
                decoder.registry().cloned().unwrap_or_else(|| nerve_types::Registry::new(Default::default())),
            );
            let mut w = McapWriter::create(&output, true, args.compression.into(), defs)?;
            let mut stats = ExportStats::default();
            while let Some(ev) = reader.next_event()? {
                if wanted(&ev) {
                    w.write_event(ev.utime, &ev.channel(), ev.data)?;
                    stats.messages += 1;
                    if decoder.candidate(ev.data).is_some() {
                        stats.decoded += 1;
                    } else {
                        stats.undecoded += 1;
                    }
                }
                let pos = ev.offset + ev.encoded_len();
                tick(bar.as_ref(), pos);
            }
            w.finish()?;
            stats.bytes_out = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
            stats
        }
        Format::Mcap => McapExport::create_with(&output, &decoder, args.compression.into())?
            .run(|export: &mut Feed<'_>| feed(&mut reader, 0, export))?,
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
                    feed(&mut AnyLog::open(&args.log)?, len, export)
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
    let decodes = args.to != Format::Lcm && !(args.to == Format::Mcap && args.encoding == Encoding::Lcm);
    if decodes && stats.messages > 0 && stats.decoded == 0 {
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
