//! `nerve sub PATTERN`: prints every message on the channels the pattern matches; with `--types`, decoded.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use nerve_bus::{Bus, Overflow, Received};
use nerve_types::dynamic::json_string;
use nerve_types::Registry;

use super::receive_args::ReceiveArgs;

/// Arguments of `nerve sub`.
#[derive(clap::Args)]
pub struct Args {
    /// A regular expression matched against whole channel names (`.*` for everything).
    pattern: String,
    /// The bus URL (default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0).
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    receive: ReceiveArgs,
}

/// Runs `nerve sub`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let registry = args.receive.registry()?;
    let bus = Bus::new(args.url.as_deref()).context("opening the bus")?;
    // A big queue: a terminal that scrolls slowly should still see a burst whole; if it falls further behind,
    // the oldest messages go and the count is reported at exit.
    let sub = bus.subscriber(&args.pattern, 100_000, Overflow::DropOldest).context("subscribing")?;
    let deadline = args.receive.deadline();
    let mut out = std::io::stdout().lock();
    let mut seen = 0u64;
    while args.receive.wants_more(seen) {
        let msg = match deadline {
            None => sub.recv(),
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) => match sub.recv_timeout(left) {
                    Some(m) => m,
                    None => break,
                },
                None => break,
            },
        };
        seen += 1;
        let line =
            if args.receive.json { json_line(&msg, registry.as_ref()) } else { text_line(&msg, registry.as_ref()) };
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    let dropped = sub.stats().dropped_overflow;
    if dropped > 0 {
        eprintln!("nerve sub: {dropped} messages dropped because output could not keep up");
    }
    Ok(args.receive.exit_status("nerve sub", seen))
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

/// What a text line says of a message's content, after its header: ` TYPE: {json}` when the registry decodes it,
/// else its fingerprint (and the decode error, if a registry was given).
pub(crate) fn decoded_text(data: &[u8], registry: Option<&Registry>) -> String {
    let fp = fingerprint(data).map_or("(no fingerprint)".to_owned(), |f| format!("0x{f:016x}"));
    match registry.map(|r| r.decode(data)) {
        Some(Ok((st, value))) => format!(" {}: {}", st.name, value.to_json()),
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

fn text_line(m: &Received, registry: Option<&Registry>) -> String {
    format!("{} {} bytes{}", m.channel, m.data.len(), decoded_text(&m.data, registry))
}
