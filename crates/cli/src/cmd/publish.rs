//! `nerve pub CHANNEL`: publishes bytes given as hex, read from a file, or a typed value given as JSON.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nerve_bus::Bus;
use nerve_types::TypeName;

use super::types_arg::{load_registry, type_dirs};

/// Arguments of `nerve pub`.
#[derive(clap::Args)]
pub struct Args {
    /// The channel to publish on.
    channel: String,
    /// The bus URL (default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0).
    #[arg(long)]
    url: Option<String>,
    /// The message as hex digits (whitespace allowed).
    #[arg(long, conflicts_with_all = ["file", "type_name"])]
    hex: Option<String>,
    /// The message is this file's bytes.
    #[arg(long, conflicts_with_all = ["hex", "type_name"])]
    file: Option<PathBuf>,
    /// The message's type, e.g. exlcm.example_t (with --json and --types).
    #[arg(long = "type", requires = "json")]
    type_name: Option<String>,
    /// The message's value as JSON (with --type).
    #[arg(long, requires = "type_name")]
    json: Option<String>,
    /// A directory of .lcm files (repeatable; default NERVE_TYPES).
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// How many times to publish it.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Messages per second (default: as fast as possible).
    #[arg(long)]
    rate: Option<f64>,
}

fn parse_hex(text: &str) -> anyhow::Result<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        bail!("--hex: odd number of hex digits");
    }
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            let s = std::str::from_utf8(pair).unwrap_or("??");
            u8::from_str_radix(s, 16).with_context(|| format!("--hex: '{s}' at digit {} is not hex", i * 2))
        })
        .collect()
}

/// Runs `nerve pub`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let data = if let Some(h) = &args.hex {
        parse_hex(h)?
    } else if let Some(f) = &args.file {
        std::fs::read(f).with_context(|| format!("reading {}", f.display()))?
    } else if let (Some(t), Some(json)) = (&args.type_name, &args.json) {
        let Some(registry) = load_registry(&type_dirs(&args.types))? else {
            bail!("--type needs --types DIR (or NERVE_TYPES) to find its definition");
        };
        let name = TypeName::parse(t);
        if registry.by_name(&name).is_none() {
            bail!("type '{t}' not found in the --types directories");
        }
        let codec = nerve_types::dynamic::Codec::new(registry.schema());
        let value = codec.from_json(&name, json).map_err(|e| anyhow::anyhow!("--json: {e}"))?;
        codec.encode(&name, &value).map_err(|e| anyhow::anyhow!("encoding {t}: {e}"))?
    } else {
        bail!("give the message with --hex, --file, or --type T --json VALUE --types DIR");
    };
    let bus = Bus::new(args.url.as_deref()).context("opening the bus")?;
    let period = match args.rate {
        Some(hz) if hz > 0.0 && hz.is_finite() => Some(Duration::from_secs_f64(1.0 / hz)),
        Some(hz) => bail!("--rate {hz}: must be a positive number of messages per second"),
        None => None,
    };
    let start = Instant::now();
    for i in 0..args.count {
        if let Some(p) = period {
            // An absolute schedule, so the rate does not drift with the time publishing takes.
            let due = start + p.mul_f64(i as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        bus.publish_raw(&args.channel, &data).with_context(|| format!("publishing on {}", args.channel))?;
    }
    Ok(ExitCode::SUCCESS)
}
