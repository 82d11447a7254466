//! `nerve log FILE`: lcm-logger's job. Subscribes to every channel (or those a pattern matches, or does not with
//! `--invert`) on any bus URL, and writes each message with its receive time, in LCM's log format, or as an MCAP
//! recording (`FILE.mcap`, or `--format mcap`): the LCM bytes as received, with the `.lcm` definitions of the
//! types `--types` (or `NERVE_TYPES`) gives, so that the file plays back and opens without them.
//!
//! Receiving never waits for the disk: the subscription's callback (run on the transport's receive thread) only
//! appends the message to a queue bounded in bytes (`--max-unwritten-mb`, 100 MiB by default as in lcm-logger), and
//! a writer thread of its own drains that queue into a buffered file. A message that finds the queue full is
//! dropped and counted, never hidden. On SIGINT or SIGTERM the logger stops receiving, writes everything queued,
//! syncs the file and reports what it recorded and what it missed (queue full, the subscription's overflow, and
//! messages the transport saw lost or the kernel dropped from a full socket receive buffer).

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use nerve_bus::{Bus, Overflow, Pattern};
use nerve_log::export::type_defs;
use nerve_log::mcap::{has_mcap_extension, SplitMcap, TypeDefs};
use nerve_log::{LogError, SplitLog};

use super::exit::reject;
use super::export::CompressionArg;
use super::types_arg::{load_registry, type_dirs, BrokenFiles};

/// What `nerve log --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve log run.lcmlog --channel 'POSE.*' --split-mb 500    # run.lcmlog.00, .01, ...; Ctrl-C to stop
  nerve log shm.lcmlog --url shm:// --duration 60
  nerve log rest.lcmlog --channel 'CAMERA.*' --invert       # everything but the cameras
  nerve log run.mcap --types examples/types --split-secs 600 # MCAP: run.00.mcap, .01, ... every ten minutes";

/// The file format.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// LCM's event log (lcm-logger's).
    Lcm,
    /// MCAP with LCM messages and the types' definitions (plays back with nerve play, opens in Foxglove after
    /// nerve export --to mcap).
    Mcap,
}

/// Where events go: an LCM log or an MCAP recording, either split.
enum Recorder {
    Lcm(SplitLog),
    Mcap(Box<SplitMcap>),
}

impl Recorder {
    fn write_event(&mut self, utime: i64, channel: &str, data: &[u8]) -> Result<(), LogError> {
        match self {
            Recorder::Lcm(l) => l.write_event(utime, channel, data),
            Recorder::Mcap(m) => m.write_event(utime, channel, data),
        }
    }
    fn flush(&mut self) -> Result<(), LogError> {
        match self {
            Recorder::Lcm(l) => l.flush(),
            Recorder::Mcap(m) => m.flush(),
        }
    }
    /// Syncs an LCM log; writes an MCAP file's summary and footer, and syncs it.
    fn finish(&mut self) -> Result<(), LogError> {
        match self {
            Recorder::Lcm(l) => l.sync(),
            Recorder::Mcap(m) => m.finish(),
        }
    }
    fn files(&self) -> &[PathBuf] {
        match self {
            Recorder::Lcm(l) => l.files(),
            Recorder::Mcap(m) => m.files(),
        }
    }
}

/// Arguments of `nerve log`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The log file. With --split-mb or --split-secs, files are FILE.00, FILE.01, ... as lcm-logger --increment
    /// names them (an MCAP recording's are run.00.mcap, run.01.mcap, ...).
    file: PathBuf,
    /// The format [default: mcap if FILE ends in .mcap, else lcm].
    #[arg(long, value_enum)]
    format: Option<LogFormat>,
    /// MCAP chunk compression.
    #[arg(long, value_enum, default_value = "zstd")]
    compression: CompressionArg,
    /// A directory of .lcm files whose definitions an MCAP recording carries (repeatable) [default: NERVE_TYPES].
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// Record only the channels this regular expression matches in full [default: every channel].
    #[arg(long, value_name = "REGEX")]
    channel: Option<String>,
    /// Record the channels --channel does NOT match.
    #[arg(long, short = 'v', requires = "channel")]
    invert: bool,
    /// Start a new file once the current one passes N MiB (may be fractional).
    #[arg(long, value_name = "N")]
    split_mb: Option<f64>,
    /// Start a new file for the first message N seconds or more after the current file's first.
    #[arg(long, value_name = "N")]
    split_secs: Option<f64>,
    /// The bus URL, any provider [default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0].
    #[arg(long, short = 'l')]
    url: Option<String>,
    /// Overwrite FILE if it exists.
    #[arg(long, short = 'f')]
    force: bool,
    /// Most bytes of received messages waiting to be written; past it new messages are dropped and counted.
    #[arg(long, short = 'm', value_name = "MB", default_value_t = 100.0)]
    max_unwritten_mb: f64,
    /// Flush written events to the file at least this often (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 100)]
    flush_interval: u64,
    /// Stop by itself after this many seconds [default: on Ctrl-C (SIGINT) or SIGTERM].
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// No once-a-second status line on a terminal.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// What the receive side hands the writer.
struct Queued {
    utime: i64,
    channel: String,
    data: Vec<u8>,
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<Queued>,
    bytes: usize,
    closed: bool,
    received: u64,
    dropped_full: u64,
    filtered: u64,
}

/// The bounded queue between the receive thread and the writer thread.
struct Queue {
    state: Mutex<QueueState>,
    ready: Condvar,
    max_bytes: usize,
}

impl Queue {
    fn push(&self, utime: i64, channel: &str, data: &[u8]) {
        let mut st = self.state.lock().expect("queue lock");
        st.received += 1;
        let cost = data.len() + channel.len() + std::mem::size_of::<Queued>();
        if st.bytes + cost > self.max_bytes && !st.items.is_empty() {
            st.dropped_full += 1;
            return;
        }
        st.bytes += cost;
        st.items.push_back(Queued { utime, channel: channel.to_owned(), data: data.to_vec() });
        if st.items.len() == 1 {
            self.ready.notify_one();
        }
    }
}

#[derive(Default, Clone, Copy)]
struct WriterTotals {
    written: u64,
    bytes: u64,
}

/// Runs `nerve log`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let split_bytes = match args.split_mb {
        Some(mb) if mb.is_nan() || mb <= 0.0 => return Err(reject("--split-mb must be more than 0")),
        Some(mb) => Some((mb * 1024.0 * 1024.0) as u64),
        None => None,
    };
    let split_micros = match args.split_secs {
        Some(s) if s.is_nan() || s <= 0.0 => return Err(reject("--split-secs must be more than 0")),
        Some(s) => Some((s * 1e6) as i64),
        None => None,
    };
    let format = args.format.unwrap_or(if has_mcap_extension(&args.file) { LogFormat::Mcap } else { LogFormat::Lcm });
    let defs: Option<TypeDefs> = match format {
        LogFormat::Mcap => {
            let reg = load_registry(&type_dirs(&args.types), BrokenFiles::Refuse)?;
            Some(type_defs(reg.unwrap_or_else(|| nerve_types::Registry::new(Default::default()))))
        }
        LogFormat::Lcm => None,
    };
    if args.max_unwritten_mb.is_nan() || args.max_unwritten_mb <= 0.0 {
        return Err(reject("--max-unwritten-mb must be more than 0"));
    }
    let filter = match (&args.channel, args.invert) {
        (Some(re), true) => Some(Pattern::new(re).with_context(|| format!("--channel {re}"))?),
        _ => None,
    };
    let pattern = if args.invert { ".*".to_owned() } else { args.channel.clone().unwrap_or_else(|| ".*".to_owned()) };
    Pattern::new(&pattern).with_context(|| format!("--channel {pattern}"))?;
    // The bus first: a URL that does not work must not leave an empty FILE behind that the next try refuses.
    let bus = Bus::new(args.url.as_deref()).context("opening the bus")?;
    let mut log = match defs {
        Some(defs) => Recorder::Mcap(Box::new(SplitMcap::create(
            &args.file,
            split_bytes,
            split_micros,
            args.force,
            args.compression.into(),
            defs,
        )?)),
        None => Recorder::Lcm(SplitLog::create_split(&args.file, split_bytes, split_micros, args.force)?),
    };

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing a signal handler")?;
    }

    let queue = Arc::new(Queue {
        state: Mutex::new(QueueState::default()),
        ready: Condvar::new(),
        max_bytes: (args.max_unwritten_mb * 1024.0 * 1024.0) as usize,
    });

    // The writer thread: drains the queue in batches into the file, flushing at least every flush interval.
    let flush_every = Duration::from_millis(args.flush_interval.max(1));
    let wq = Arc::clone(&queue);
    let totals = Arc::new(Mutex::new(WriterTotals::default()));
    let wtotals = Arc::clone(&totals);
    let writer =
        std::thread::Builder::new().name("nerve-log-writer".into()).spawn(move || -> anyhow::Result<Recorder> {
            let mut last_flush = Instant::now();
            let mut dirty = false;
            loop {
                let (batch, closed) = {
                    let mut st = wq.state.lock().expect("queue lock");
                    if st.items.is_empty() && !st.closed {
                        st = wq.ready.wait_timeout(st, flush_every).expect("queue lock").0;
                    }
                    st.bytes = 0;
                    (std::mem::take(&mut st.items), st.closed)
                };
                let mut t = WriterTotals::default();
                for m in &batch {
                    log.write_event(m.utime, &m.channel, &m.data)?;
                    t.written += 1;
                    t.bytes += m.data.len() as u64;
                }
                if !batch.is_empty() {
                    dirty = true;
                    let mut tot = wtotals.lock().expect("totals lock");
                    tot.written += t.written;
                    tot.bytes += t.bytes;
                }
                if dirty && last_flush.elapsed() >= flush_every {
                    log.flush()?;
                    last_flush = Instant::now();
                    dirty = false;
                }
                if closed && batch.is_empty() {
                    log.finish()?;
                    return Ok(log);
                }
            }
        })?;

    let rq = Arc::clone(&queue);
    let sub = bus
        .subscribe_with(&pattern, 0, Overflow::DropNewest, move |m| {
            if let Some(f) = &filter {
                if f.matches(&m.channel) {
                    rq.state.lock().expect("queue lock").filtered += 1;
                    return Ok(());
                }
            }
            rq.push(m.recv_utime, &m.channel, &m.data);
            Ok(())
        })
        .with_context(|| format!("subscribing to '{pattern}'"))?;
    let dispatcher = bus.spawn_dispatcher().context("starting dispatch")?;

    let started = Instant::now();
    let deadline = args.duration.map(|s| started + Duration::from_secs_f64(s.max(0.0)));
    let status = !args.quiet && std::io::stderr().is_terminal();
    let mut last_status = Instant::now();
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        std::thread::sleep(Duration::from_millis(20));
        if writer.is_finished() {
            break;
        }
        if status && last_status.elapsed() >= Duration::from_secs(1) {
            last_status = Instant::now();
            let t = *totals.lock().expect("totals lock");
            let st = queue.state.lock().expect("queue lock");
            eprint!(
                "\rnerve log: {} recorded, {} MB, {} dropped (queue full), {:.0} s   ",
                t.written,
                t.bytes / 1_000_000,
                st.dropped_full,
                started.elapsed().as_secs_f64()
            );
        }
    }
    if status {
        eprintln!();
    }
    // Stop receiving, then let the writer finish what is queued.
    drop(dispatcher);
    let sub_stats = bus.stats(&sub).unwrap_or_default();
    let _ = bus.unsubscribe(&sub);
    {
        let mut st = queue.state.lock().expect("queue lock");
        st.closed = true;
        queue.ready.notify_one();
    }
    let log = writer.join().map_err(|_| anyhow::anyhow!("the writer thread panicked"))??;
    let t = *totals.lock().expect("totals lock");
    let st = queue.state.lock().expect("queue lock");
    let transport = bus.provider_stats();
    // udpm tells every message it lost, whatever dropped it (the kernel too): incomplete ones in `lost`, those of
    // which no datagram arrived in `unseen`. Elsewhere a datagram the kernel dropped is a message missed, or a
    // fragment of one that `lost` counts too: the total then errs high rather than hide a loss.
    let lost = transport.lost + transport.unseen.unwrap_or(0);
    let missed =
        st.dropped_full + sub_stats.dropped_overflow + lost + transport.unseen.map_or(transport.kernel_dropped, |_| 0);
    let files: Vec<String> = log.files().iter().map(|p| p.display().to_string()).collect();
    eprintln!(
        "nerve log: recorded {} messages ({} bytes) to {}; missed {missed} (queue full {}, subscription overflow {}, lost in transport {}, \
         datagrams dropped by the kernel {}){}",
        t.written,
        t.bytes,
        files.join(", "),
        st.dropped_full,
        sub_stats.dropped_overflow,
        lost,
        transport.kernel_dropped,
        if st.filtered > 0 { format!("; {} not recorded by --invert", st.filtered) } else { String::new() },
    );
    debug_assert_eq!(st.received, t.written + st.dropped_full);
    Ok(ExitCode::SUCCESS)
}
