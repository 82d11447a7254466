//! `nerve bench SUITE`: runs a benchmark suite from `bench/` (the `nerve-bench` program) and prints its table, or the
//! soak test (`nerve bench soak`: the `nerve-soak` program, tests/soak/).

use std::process::{Command, ExitCode};

use anyhow::{bail, Context};

/// What `nerve bench --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve bench marshalling            # the table and ratios
  nerve bench marshalling --quick --json
  nerve bench soak --minutes 60
  nerve bench scale --out runs/scale # channels, sizes, readers, udpm processes: tables and SVG plots
  sudo nerve bench zenoh             # between two network namespaces, and a fleet through a Zenoh router
  sudo nerve bench zenoh --fleet     # the fleet only";

/// Arguments of `nerve bench`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The suite: marshalling, echo, latency, intraprocess, log, foxglove, zenoh, scale (`nerve-bench --help` lists them), or
    /// soak (the `nerve-soak` test).
    suite: String,
    /// A short run for CI.
    #[arg(long)]
    quick: bool,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// How long the soak suite runs, in minutes (at least 2; default 60).
    #[arg(long, value_name = "N")]
    minutes: Option<u64>,
    /// The zenoh suite's fleet part only (N robots through one Zenoh router).
    #[arg(long)]
    fleet: bool,
    /// Where the scale suite writes its tables and SVG plots (default: a directory in the temp dir).
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
}

/// Runs the `nerve-bench` program that sits next to this binary, or `nerve-soak` for the soak.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("finding the nerve binary")?;
    let soak = args.suite == "soak";
    let program = if soak { "nerve-soak" } else { "nerve-bench" };
    let bench = exe.with_file_name(program);
    if !bench.exists() {
        bail!("{} not found: build it with `cargo build --release -p {program}`", bench.display());
    }
    let mut cmd = Command::new(&bench);
    if !soak {
        cmd.arg(&args.suite);
    }
    if args.quick {
        cmd.arg("--quick");
    }
    if args.json {
        cmd.arg("--json");
    }
    if args.fleet {
        cmd.arg("--fleet");
    }
    if let Some(dir) = &args.out {
        cmd.arg("--out").arg(dir);
    }
    if let Some(m) = args.minutes {
        cmd.args(["--minutes", &m.to_string()]);
    }
    let status = cmd.status().with_context(|| format!("running {}", bench.display()))?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}
