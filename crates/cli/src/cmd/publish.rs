//! `nerve pub CHANNEL`: publishes bytes given as hex, read from a file, or a typed value given as JSON (members
//! left out take the zero values a fresh message has; `--template` prints the skeleton to fill).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use nerve_bus::Bus;

use super::exit::reject;
use super::message_json;
use super::types_arg::{load_registry, type_dirs, BrokenFiles};

/// What `nerve pub --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve pub EXLASER --types examples/types --type exlcm.laser_t \\
      --json '{\"utime\": 1, \"ranges\": [1.5, 2.0], \"rad0\": 0, \"radstep\": 0.01}'
  nerve pub --types examples/types --type laser_t --template      # the JSON to fill, every member zero
  nerve pub POSE --url 'shm://?frames=16' --hex 0011223344556677
  nerve pub CAMERA --url 'shm://?frame_size=1M' --file image.bin --count 100 --rate 30";

/// Arguments of `nerve pub`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The channel to publish on (not needed with --template).
    #[arg(required_unless_present = "template")]
    channel: Option<String>,
    /// The bus URL [default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0].
    #[arg(long, short = 'l')]
    url: Option<String>,
    /// The message as hex digits (whitespace allowed).
    #[arg(long, conflicts_with_all = ["file", "type_name"])]
    hex: Option<String>,
    /// The message is this file's bytes.
    #[arg(long, conflicts_with_all = ["hex", "type_name"])]
    file: Option<PathBuf>,
    /// The message's type, e.g. exlcm.laser_t, or laser_t when only one package has it (with --json or
    /// --template, and --types).
    #[arg(long = "type", value_name = "TYPE")]
    type_name: Option<String>,
    /// The message's value as a JSON object (with --type). Members left out take the values a fresh message has:
    /// 0, 0.0, false, "", empty variable-length arrays, and count members as long as the arrays given.
    #[arg(long, requires = "type_name", conflicts_with = "template")]
    json: Option<String>,
    /// Print the JSON of a fresh --type message (every member, zero) to edit and pass to --json; publish nothing.
    #[arg(long, requires = "type_name")]
    template: bool,
    /// A directory of .lcm files (repeatable) [default: NERVE_TYPES].
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// How many times to publish it.
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Messages per second [default: as fast as possible].
    #[arg(long)]
    rate: Option<f64>,
}

fn parse_hex(text: &str) -> anyhow::Result<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(reject("--hex: odd number of hex digits"));
    }
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            let s = std::str::from_utf8(pair).unwrap_or("??");
            u8::from_str_radix(s, 16).map_err(|_| reject(format!("--hex: '{s}' at digit {} is not hex", i * 2)))
        })
        .collect()
}

/// Runs `nerve pub`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let period = match args.rate {
        Some(hz) if hz > 0.0 && hz.is_finite() => Some(Duration::from_secs_f64(1.0 / hz)),
        Some(hz) => return Err(reject(format!("--rate {hz}: must be a positive number of messages per second"))),
        None => None,
    };
    let data = if let Some(h) = &args.hex {
        parse_hex(h)?
    } else if let Some(f) = &args.file {
        std::fs::read(f).with_context(|| format!("reading {}", f.display()))?
    } else if let Some(t) = &args.type_name {
        let Some(registry) = load_registry(&type_dirs(&args.types), BrokenFiles::Skip)? else {
            return Err(reject("--type needs --types DIR (or NERVE_TYPES) to find its definition"));
        };
        let st = message_json::resolve_type(&registry, t)?;
        if args.template {
            println!("{}", message_json::template(&registry, st));
            return Ok(ExitCode::SUCCESS);
        }
        let Some(json) = &args.json else {
            return Err(reject("--type needs --json VALUE (or --template to see one)"));
        };
        message_json::encode(&registry, st, json)?
    } else {
        return Err(reject("give the message with --hex, --file, or --type T --json VALUE --types DIR"));
    };
    let channel = args.channel.as_deref().expect("clap requires CHANNEL without --template");
    let bus = Bus::new(args.url.as_deref()).context("opening the bus")?;
    let start = Instant::now();
    for i in 0..args.count {
        if let Some(p) = period {
            // An absolute schedule, so the rate does not drift with the time publishing takes.
            let due = start + p.mul_f64(i as f64);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        bus.publish_raw(channel, &data).with_context(|| format!("publishing on {channel}"))?;
    }
    Ok(ExitCode::SUCCESS)
}
