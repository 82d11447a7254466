//! `nerve`: one binary for every tool. This file only parses the command line, dispatches, and maps errors to
//! exit codes (0 success, 1 rejected input, 2 any other failure).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// Nerve: LCM-compatible types, transports and tools.
#[derive(Parser)]
#[command(name = "nerve", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate code from .lcm type definitions (lcm-gen's job).
    Gen(cmd::gen::Args),
    /// Publish a message (hex, a file, or a typed value as JSON).
    Pub(cmd::publish::Args),
    /// Print the messages on the channels a pattern matches.
    Sub(cmd::sub::Args),
    /// Watch live traffic: per channel the type, count, rate, jitter, bandwidth; decode a channel's messages.
    Spy(cmd::spy::Args),
    /// Record the bus to an LCM log file (lcm-logger's job).
    Log(cmd::log::Args),
    /// Play an LCM log file onto the bus (lcm-logplayer's job).
    Play(cmd::play::Args),
    /// Export an LCM log to MCAP, JSON lines or CSV.
    Export(cmd::export::Args),
    /// Run a benchmark suite and print its table.
    Bench(cmd::bench::Args),
    /// Make, remove, list, dump and chmod shared-memory channels (ach's job).
    Chan(cmd::chan::Args),
    /// Run a sensor, a controller and loggers over udpm and shm for ten seconds, live statistics, replay, summary.
    Demo(cmd::demo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(args) => cmd::gen::run(args),
        Command::Pub(args) => cmd::publish::run(args),
        Command::Sub(args) => cmd::sub::run(args),
        Command::Spy(args) => cmd::spy::run(args),
        Command::Log(args) => cmd::log::run(args),
        Command::Play(args) => cmd::play::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Chan(args) => cmd::chan::run(args),
        Command::Demo(args) => cmd::demo::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("nerve: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Whether the error is a closed stdout (`nerve ... | head`), which is not a failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
