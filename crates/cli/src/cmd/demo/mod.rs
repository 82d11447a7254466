//! `nerve demo`: the whole stack at work on this host, in separate processes, for about ten seconds. A sensor
//! publishes the LCM paper's `laser_t` at 40 Hz and `image_t` at 30 Hz over udpm; a localizer writes a `pose_t` into a
//! shared-memory channel at 1 kHz and a controller reads the newest one every millisecond; a logger per bus records
//! everything; the spy's statistics are shown live; then the log is replayed on a fresh port and counted, and a
//! summary gives each stream's rate, latency percentiles, drops, the log's size and the replay's count.
//!
//! The parts: [`scene`] runs it (setup, processes, live table, replay, summary, clean-up), [`roles`] are the
//! processes it starts from this same binary (`nerve demo --role ...`, hidden), [`procs`] starts and stops them by
//! PID, [`types`] makes and reads the messages with the dynamic codec, [`stats`] measures and formats.

mod procs;
mod roles;
mod scene;
mod stats;
mod types;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::cmd::exit::reject;

/// The URL the demo uses unless told: LCM's default group and port (so `nerve spy` or `lcm-spy` in another
/// terminal sees the scene), with a receive buffer that holds a few 640x480 images.
const DEFAULT_URL: &str = "udpm://239.255.76.67:7667?ttl=0&recv_buf_size=8388608";

/// One process of the scene.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Role {
    Sensor,
    Localizer,
    Controller,
}

/// What `nerve demo --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve demo                        # ten seconds of a small robot, the log replayed, a summary
  nerve demo --duration 30 --keep-log demo.lcmlog";

/// Arguments of `nerve demo`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// How long the sensors run, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    duration: f64,
    /// The udpm URL of the scene [default: LCM's, udpm://239.255.76.67:7667?ttl=0, with an 8 MiB receive buffer].
    #[arg(long, short = 'l')]
    url: Option<String>,
    /// Where the log is replayed [default: the --url's group on the next port].
    #[arg(long, value_name = "URL")]
    replay_url: Option<String>,
    /// Replay speed: 1 is as recorded, 0 as fast as possible.
    #[arg(long, value_name = "X", default_value_t = 4.0)]
    replay_speed: f64,
    /// Keep the log (udpm and shm traffic merged, LCM's format) at PATH; otherwise it is removed with the rest.
    #[arg(long, value_name = "PATH")]
    keep_log: Option<PathBuf>,
    /// Print snapshots of the spy's table instead of redrawing it (the default when stdout is not a terminal).
    #[arg(long)]
    no_ui: bool,
    /// Run one process of the scene (internal).
    #[arg(long, hide = true, value_enum)]
    role: Option<Role>,
    /// The shared-memory channel directory (internal, for --role).
    #[arg(long, hide = true)]
    shm_dir: Option<PathBuf>,
    /// When the role starts, wall-clock microseconds (internal).
    #[arg(long, hide = true)]
    start_at: Option<i64>,
    /// When the role stops, wall-clock microseconds (internal).
    #[arg(long, hide = true)]
    until: Option<i64>,
}

/// Runs `nerve demo`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(role) = args.role {
        let (start_at, until) =
            (args.start_at.context("--role needs --start-at")?, args.until.context("--role needs --until")?);
        let dir = || args.shm_dir.clone().context("--role needs --shm-dir");
        match role {
            Role::Sensor => roles::sensor(args.url.as_deref().context("--role sensor needs --url")?, start_at, until)?,
            Role::Localizer => roles::localizer(&dir()?, start_at, until)?,
            Role::Controller => roles::controller(&dir()?, start_at, until)?,
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !(args.duration.is_finite() && args.duration >= 0.5 && args.duration <= 3600.0) {
        return Err(reject(format!("--duration {}: give a number of seconds from 0.5 to 3600", args.duration)));
    }
    if !(args.replay_speed.is_finite() && args.replay_speed >= 0.0) {
        return Err(reject("--replay-speed must be 0 (as fast as possible) or more"));
    }
    let url = args.url.unwrap_or_else(|| DEFAULT_URL.to_owned());
    let replay_url = match args.replay_url {
        Some(u) => u,
        None => scene::next_port(&url)?,
    };
    if replay_url == url {
        return Err(reject("--replay-url must differ from --url: the replay would mix with the live traffic"));
    }
    scene::run(scene::Plan {
        duration: args.duration,
        url,
        replay_url,
        replay_speed: args.replay_speed,
        keep_log: args.keep_log,
        ui: !args.no_ui && std::io::stdout().is_terminal(),
    })
}
