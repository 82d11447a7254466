//! `nerve foxglove`: the bus served over the Foxglove WebSocket protocol and as a page of our own, on one port
//! (nerve-foxglove does the serving). This file adds the spy's statistics table, as the server channel
//! `/nerve/spy` (the JSON `nerve spy --json` prints, twice a second, made only while someone subscribes), with
//! the server's own figures beside it (`server`: the clients connected and what each missed by not keeping up),
//! and says on stderr when slow clients lose messages.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use nerve_bus::Url;
use nerve_foxglove::{Mappings, Options, Server};
use nerve_types::dynamic::json_string;

use super::shm_access::check_readable;
use super::spy::decode::Types;
use super::spy::engine::{Engine, QUEUE_CAPACITY};
use super::spy::report;
use super::types_arg::{load_registry, type_dirs, BrokenFiles};

/// What `nerve foxglove --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve foxglove --types examples/types                # then open http://127.0.0.1:8765/, or ws://127.0.0.1:8765
  nerve foxglove --url shm:// --types examples/types --listen 0.0.0.0:8765
  nerve foxglove --url 'file://run.lcmlog.00?speed=1' --types examples/types
  nerve foxglove --types tests/corpus/bot_core --mappings cameras.toml   # see `nerve_foxglove::mapping::file`";

/// Arguments of `nerve foxglove`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The bus URL [default: NERVE_URL, LCM_DEFAULT_URL, then udpm://239.255.76.67:7667?ttl=0].
    #[arg(long, short = 'l')]
    url: Option<String>,
    /// A directory of .lcm files to decode messages with (repeatable) [default: NERVE_TYPES, colon-separated].
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// Where to serve the page and the protocol (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8765")]
    listen: SocketAddr,
    /// Let clients publish JSON into the bus, on channels whose type is known (--types).
    #[arg(long)]
    allow_publish: bool,
    /// A TOML file of mappings from LCM types to Foxglove's well-known schemas (RawImage, LaserScan, ...), added
    /// to the built-in ones (libbot's bot_core types, the examples'); a mapped channel is also served as
    /// CHANNEL/foxglove.SCHEMA.
    #[arg(long, value_name = "FILE")]
    mappings: Option<PathBuf>,
}

/// The server channel carrying the spy's statistics table.
pub const SPY_TOPIC: &str = "/nerve/spy";

/// How often the statistics table is sent.
const SPY_PERIOD: Duration = Duration::from_millis(500);

/// Runs `nerve foxglove` until SIGINT or SIGTERM.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let registry = load_registry(&type_dirs(&args.types), BrokenFiles::Skip)?;
    let mappings = match &args.mappings {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            Mappings::from_toml(&text).with_context(|| format!("{}: not a mapping file", path.display()))?
        }
        None => Mappings::builtin(),
    };
    let types = Arc::new(Types::new(registry.clone()));
    let url = match args.url.as_deref() {
        Some(u) if !u.is_empty() => u.to_owned(),
        _ => Url::from_env(),
    };
    check_readable(&url, ".*")?;
    // A log being played comes with its playback, whose clock the server follows (Foxglove's timeline shows the
    // log's time).
    let (bus, playback) = super::sub::open_bus(&url)?;
    let playback = playback.map(|(_, p)| p);
    let options =
        Options { listen: args.listen, allow_publish: args.allow_publish, playback, mappings, ..Options::default() };
    let server = Server::start(&bus, registry, options)?;
    let spy = server.json_channel(SPY_TOPIC, "nerve.spy_report", SPY_SCHEMA.to_owned())?;
    let engine = Engine::start(&bus, ".*", QUEUE_CAPACITY, Arc::clone(&types))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing a signal handler")?;
    }
    let addr = server.local_addr();
    println!("nerve foxglove: serving {url} at http://{addr}/ (Foxglove: ws://{addr})");
    let started = Instant::now();
    let (mut told_dropped, mut told_at) = (0, Instant::now());
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(SPY_PERIOD);
        if spy.has_subscribers() {
            // The table's times are the transport's receive stamps: microseconds since the epoch.
            let now = nerve_codec::now_utime();
            let json = report(engine.table(), &types, &url, started.elapsed().as_secs_f64(), now, true);
            spy.publish(&with_server(&json, &server));
        }
        let dropped = server.stats().client_dropped + server.stats().mapped_refused;
        if dropped > told_dropped && told_at.elapsed() >= TELL_DROPS_EVERY {
            eprintln!("nerve foxglove: {}", drops_line(&server));
            (told_dropped, told_at) = (dropped, Instant::now());
        }
    }
    eprintln!("nerve foxglove: stopped; {}", drops_line(&server));
    Ok(ExitCode::SUCCESS)
}

/// How often, at most, stderr is told that slow clients lost messages.
const TELL_DROPS_EVERY: Duration = Duration::from_secs(5);

/// The server's figures on clients, for stderr.
fn drops_line(server: &Server) -> String {
    let stats = server.stats();
    let mut line = format!(
        "{} messages sent to clients, {} dropped for slow clients ({} clients connected)",
        stats.sent, stats.client_dropped, stats.clients
    );
    for c in server.clients().iter().filter(|c| c.dropped > 0) {
        line += &format!("; {} dropped {} of {}", c.peer, c.dropped, c.sent + c.dropped + c.queued);
    }
    // Messages that did not fit their Foxglove mapping went out raw only: say so with the last reason.
    for m in server.mapped().iter().filter(|m| m.refused > 0) {
        let why = m.last_refusal.as_deref().unwrap_or("");
        line +=
            &format!("; {}: {} of {} not sent as {} (last: {why})", m.channel, m.refused, m.sent + m.refused, m.schema);
    }
    line
}

/// `nerve spy --json`'s object with the server's figures added as `server`. (Written out like the spy's own JSON:
/// every value is a number, and a socket address needs no escaping.)
fn with_server(spy_json: &str, server: &Server) -> String {
    let spy_json = spy_json.trim_end();
    let Some(body) = spy_json.strip_suffix('}') else { return spy_json.to_owned() };
    let stats = server.stats();
    let clients: Vec<String> = server
        .clients()
        .iter()
        .map(|c| {
            format!(
                r#"{{"id":{},"peer":"{}","sent":{},"dropped":{},"queued":{}}}"#,
                c.id, c.peer, c.sent, c.dropped, c.queued
            )
        })
        .collect();
    let mapped: Vec<String> = server
        .mapped()
        .iter()
        .map(|m| {
            format!(
                r#"{{"channel":{},"topic":{},"schema":"{}","sent":{},"refused":{},"last_refusal":{}}}"#,
                json_string(&m.channel),
                json_string(&m.topic),
                m.schema,
                m.sent,
                m.refused,
                m.last_refusal.as_deref().map_or("null".into(), json_string)
            )
        })
        .collect();
    format!(
        r#"{body},"server":{{"received":{},"sent":{},"bus_queue_dropped":{},"client_dropped":{},"clients":[{}],"mapped":[{}]}}}}"#,
        stats.received,
        stats.sent,
        stats.bus_queue_dropped,
        stats.client_dropped,
        clients.join(","),
        mapped.join(",")
    )
}

/// The JSON Schema of `/nerve/spy` messages: `nerve spy --json`'s object.
const SPY_SCHEMA: &str = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"nerve.spy_report",
"type":"object","properties":{"url":{"type":"string"},"duration_s":{"type":"number"},"total":{"type":"integer"},
"dropped":{"type":"object","properties":{"queue_overflow":{"type":"integer"},"transport_lost":{"type":"integer"},
"malformed":{"type":"integer"},"kernel_dropped":{"type":"integer"}}},
"channels":{"type":"array","items":{"type":"object","properties":{"channel":{"type":"string"},
"type":{"type":["string","null"]},"fingerprint":{"type":["string","null"]},"count":{"type":"integer"},
"bytes":{"type":"integer"},"last_size":{"type":"integer"},"rate_hz":{"type":["number","null"]},
"jitter_us":{"type":["number","null"]},"bandwidth_bps":{"type":["number","null"]},
"decode_errors":{"type":"integer"}}}},
"server":{"type":"object","properties":{"received":{"type":"integer"},"sent":{"type":"integer"},
"bus_queue_dropped":{"type":"integer"},"client_dropped":{"type":"integer"},
"clients":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"peer":{"type":"string"},
"sent":{"type":"integer"},"dropped":{"type":"integer"},"queued":{"type":"integer"}}}},
"mapped":{"type":"array","items":{"type":"object","properties":{"channel":{"type":"string"},
"topic":{"type":"string"},"schema":{"type":"string"},"sent":{"type":"integer"},"refused":{"type":"integer"},
"last_refusal":{"type":["string","null"]}}}}}}}}"#;

#[cfg(test)]
mod tests {
    use super::*;
    use nerve_bus::Bus;

    #[test]
    fn the_server_figures_join_the_spy_report_as_valid_json() {
        let bus = Bus::new(Some("memq://")).unwrap();
        let options = Options { listen: "127.0.0.1:0".parse().unwrap(), ..Options::default() };
        let server = Server::start(&bus, None, options).unwrap();
        let json = with_server("{\"url\":\"memq://\",\"total\":3}\n", &server);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["total"], 3);
        assert_eq!(v["server"]["client_dropped"], 0);
        assert_eq!(v["server"]["clients"], serde_json::json!([]));
        assert_eq!(v["server"]["mapped"], serde_json::json!([]));
        let schema: serde_json::Value = serde_json::from_str(SPY_SCHEMA).unwrap();
        assert_eq!(schema["properties"]["server"]["properties"]["mapped"]["type"], "array");
    }
}
