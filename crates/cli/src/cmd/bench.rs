//! `nerve bench SUITE`: runs a benchmark suite from `bench/` (the `nerve-bench` program) and prints its table.

use std::process::{Command, ExitCode};

use anyhow::{bail, Context};

/// Arguments of `nerve bench`.
#[derive(clap::Args)]
pub struct Args {
    /// The suite: marshalling, echo, latency, intraprocess or log (`nerve-bench --help` lists them).
    suite: String,
    /// A short run for CI.
    #[arg(long)]
    quick: bool,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs the `nerve-bench` program that sits next to this binary.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("finding the nerve binary")?;
    let bench = exe.with_file_name("nerve-bench");
    if !bench.exists() {
        bail!("{} not found: build it with `cargo build --release -p nerve-bench`", bench.display());
    }
    let mut cmd = Command::new(&bench);
    cmd.arg(&args.suite);
    if args.quick {
        cmd.arg("--quick");
    }
    if args.json {
        cmd.arg("--json");
    }
    let status = cmd.status().with_context(|| format!("running {}", bench.display()))?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}
