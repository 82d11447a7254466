//! `nerve sub PATTERN`: prints every message on the channels the pattern matches; with `--types`, decoded (long
//! byte arrays summarised in text lines unless `--full`). On a log (`--url file://LOG`) it ends at the end of the
//! log and reports the log's damage as `nerve play` does.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use nerve_bus::provider::check_options;
use nerve_bus::provider::file::{self, FileProvider, Playback};
use nerve_bus::{Bus, Overflow, Received, Url};
use nerve_log::LogReader;
use nerve_types::dynamic::{json_string, Value};
use nerve_types::Registry;

use super::damage;
use super::receive_args::ReceiveArgs;
use super::shm_access::check_readable;

/// What `nerve sub --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve sub 'EXLASER|EXIMAGE' --types examples/types --json
  nerve sub 'CAMERA/.*' --url shm://
  nerve sub '.*' --url 'file://run.lcmlog.00?speed=0'      # a log as a bus; ends at the end of the log
  nerve sub POSE --count 1 --timeout-ms 2000               # status 1 if nothing comes within 2 s";

/// Arguments of `nerve sub`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// A regular expression matched against whole channel names (`.*` for everything).
    pattern: String,
    /// The bus URL [default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0].
    #[arg(long, short = 'l')]
    url: Option<String>,
    #[command(flatten)]
    receive: ReceiveArgs,
}

/// How long one wait for a message lasts at most, so the end of a log is noticed.
const SLICE: Duration = Duration::from_millis(100);

/// Runs `nerve sub`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let registry = args.receive.registry()?;
    let url = match args.url.as_deref() {
        Some(u) if !u.is_empty() => u.to_owned(),
        _ => Url::from_env(),
    };
    check_readable(&url, &args.pattern)?;
    let (bus, log) = open_bus(&url)?;
    // A big queue: a terminal that scrolls slowly should still see a burst whole; if it falls further behind,
    // the oldest messages go and the count is reported at exit.
    let sub = bus.subscriber(&args.pattern, 100_000, Overflow::DropOldest).context("subscribing")?;
    let deadline = args.receive.deadline();
    let mut out = std::io::stdout().lock();
    let mut seen = 0u64;
    let mut log_ended = false;
    while args.receive.wants_more(seen) {
        // The playback sets `finished` after its last delivery: once seen, an empty queue means the log is done.
        let finished = log.as_ref().is_some_and(|(_, p)| p.finished());
        let wait = match deadline {
            None => SLICE,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) => left.min(SLICE),
                None => break,
            },
        };
        let Some(msg) = sub.recv_timeout(wait) else {
            if finished {
                log_ended = true;
                break;
            }
            continue;
        };
        seen += 1;
        let line = if args.receive.json {
            json_line(&msg, registry.as_ref())
        } else {
            text_line(&msg, registry.as_ref(), args.receive.full)
        };
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    let dropped = sub.stats().dropped_overflow;
    if dropped > 0 {
        eprintln!("nerve sub: {dropped} messages dropped because output could not keep up");
    }
    if let Some((path, playback)) = &log {
        if playback.damaged() > 0 {
            if let Some(code) = report_damage(path)? {
                return Ok(code);
            }
        }
    }
    let why = if log_ended { "the log ended" } else { "timed out" };
    Ok(args.receive.exit_status_because("nerve sub", seen, why))
}

/// The bus on `url`; for a log being read (`file://LOG`), also the log's path and its playback, to end with it.
pub(crate) fn open_bus(url: &str) -> anyhow::Result<(Bus, Option<(String, Playback)>)> {
    let parsed = Url::parse(url)?;
    let writes = parsed.options.iter().any(|(k, v)| k == "mode" && v != "r");
    if parsed.provider != "file" || writes {
        return Ok((Bus::new(Some(url)).context("opening the bus")?, None));
    }
    // Opened here rather than through `Bus::new` for the playback handle; the options are checked as the bus does.
    check_options(&parsed, file::OPTIONS).context("opening the bus")?;
    let (file, _) = FileProvider::open(url, &parsed.network, &parsed.options).context("opening the bus")?;
    let playback = file.playback();
    Ok((Bus::with_provider(Box::new(file)), Some((parsed.network, playback))))
}

/// Reads the log once more for the details of the damage the playback skipped (regions only are counted while
/// playing), and reports them as `nerve play` does.
fn report_damage(path: &str) -> anyhow::Result<Option<ExitCode>> {
    let mut reader = LogReader::open(path)?;
    while reader.next_event()?.is_some() {}
    Ok(damage::report("nerve sub", Path::new(path), reader.damage(), reader.damage_totals(), "delivered"))
}

fn fingerprint(data: &[u8]) -> Option<u64> {
    data.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}

/// The message's fingerprint as a JSON value: a hex string, or null when it is shorter than 8 bytes.
pub(crate) fn fingerprint_json(data: &[u8]) -> String {
    fingerprint(data).map_or("null".to_owned(), |f| format!("\"0x{f:016x}\""))
}

pub(crate) fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// Byte arrays longer than this are summarised in text lines (unless `--full`).
const SUMMARY_BYTES: usize = 32;
/// Bytes shown in hex of a summarised byte array (as many as the spy shows).
const SUMMARY_HEX: usize = 16;

/// `value` with every byte array longer than [`SUMMARY_BYTES`] replaced by a string saying its length and first
/// bytes: a camera image is a line of a hundred characters, not of hundreds of thousands.
fn summarise(value: &mut Value) {
    match value {
        Value::Bytes(b) if b.len() > SUMMARY_BYTES => {
            let head: Vec<String> = b.iter().take(SUMMARY_HEX).map(|x| format!("{x:02x}")).collect();
            *value = Value::String(format!("<{} bytes: {} …>", b.len(), head.join(" ")));
        }
        Value::Array(items) => items.iter_mut().for_each(summarise),
        Value::Struct(s) => s.fields.iter_mut().for_each(|(_, v)| summarise(v)),
        _ => {}
    }
}

/// What a text line says of a message's content, after its header: ` TYPE: {json}` when the registry decodes it
/// (long byte arrays summarised unless `full`), else its fingerprint (and the decode error, if a registry was
/// given).
pub(crate) fn decoded_text(data: &[u8], registry: Option<&Registry>, full: bool) -> String {
    let fp = fingerprint(data).map_or("(no fingerprint)".to_owned(), |f| format!("0x{f:016x}"));
    match registry.map(|r| r.decode(data)) {
        Some(Ok((st, mut value))) => {
            if !full {
                summarise(&mut value);
            }
            format!(" {}: {}", st.name, value.to_json())
        }
        Some(Err(e)) => format!(" {fp}: {e}"),
        None => format!(" {fp}"),
    }
}

/// Appends to a JSON object being written the decoded `type` and `value`, or the decode `error` (nothing without a
/// registry).
pub(crate) fn push_decoded_json(line: &mut String, data: &[u8], registry: Option<&Registry>) {
    if let Some(reg) = registry {
        match reg.decode(data) {
            Ok((st, value)) => {
                line.push_str(&format!(", \"type\": {}, \"value\": {}", json_string(&st.name.full()), value.to_json()))
            }
            Err(e) => line.push_str(&format!(", \"error\": {}", json_string(&e.to_string()))),
        }
    }
}

fn json_line(m: &Received, registry: Option<&Registry>) -> String {
    let mut line = format!(
        "{{\"channel\": {}, \"size\": {}, \"fingerprint\": {}, \"recv_utime\": {}, \"data_hex\": \"{}\"",
        json_string(&m.channel),
        m.data.len(),
        fingerprint_json(&m.data),
        m.recv_utime,
        hex(&m.data)
    );
    push_decoded_json(&mut line, &m.data, registry);
    line.push('}');
    line
}

fn text_line(m: &Received, registry: Option<&Registry>, full: bool) -> String {
    format!("{} {} bytes{}", m.channel, m.data.len(), decoded_text(&m.data, registry, full))
}
