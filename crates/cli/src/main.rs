//! `nerve`: one binary for every tool. This file only parses the command line, dispatches, and maps errors to
//! exit codes (see [`cmd::exit`]: 0 success, 1 input rejected or incomplete, 2 any other failure).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// What `nerve --help` says after the list of commands.
const AFTER_HELP: &str = "\
EXIT STATUS:
  0  done
  1  input rejected or incomplete: a bad argument, URL, type or JSON value, a file that is not what it should be
     (not an LCM log, a damaged log, an output that exists without --force), a --count not reached in time,
     nothing decoded
  2  any other failure: the system refused (permissions, no such network), a transport or I/O error

EXAMPLES:
  nerve gen -c --c-cpath gen --c-hpath gen examples/types/*.lcm
  nerve sub 'EXLASER|EXIMAGE' --types examples/types --json
  nerve spy --types examples/types
  nerve log run.lcmlog --channel 'POSE.*' --split-mb 500
  nerve chan mk CAMERA/left --frames 8 --frame-size 2M --mode 660

Every command's --help has its own examples. The bus URL (--url, -l) defaults to NERVE_URL, then LCM_DEFAULT_URL,
then udpm://239.255.76.67:7667?ttl=0.";

/// Nerve: LCM-compatible types, transports and tools.
#[derive(Parser)]
#[command(name = "nerve", version, about, after_help = AFTER_HELP)]
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
    /// Export an LCM log to MCAP, JSON lines, CSV or a filtered LCM log.
    Export(cmd::export::Args),
    /// Serve the bus live to Foxglove (its WebSocket protocol) and to any browser (a page of our own).
    Foxglove(cmd::foxglove::Args),
    /// Run a benchmark suite and print its table.
    Bench(cmd::bench::Args),
    /// Make, remove, list, dump and chmod shared-memory channels (ach's job).
    Chan(cmd::chan::Args),
    /// Forward messages between two buses (shm, udpm, zenoh, ...), newest sample first, one way or both.
    Bridge(cmd::bridge::Args),
    /// Run a sensor, a controller and loggers over udpm and shm for ten seconds, live statistics, replay, summary.
    Demo(cmd::demo::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors; anything else clap refuses is rejected input.
            let code = if e.use_stderr() { cmd::exit::REJECTED } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // Providers that live in crates of their own join the bus's registry before any URL is opened.
    #[cfg(feature = "zenoh")]
    nerve_zenoh::register();
    let result = match cli.command {
        Command::Gen(args) => cmd::gen::run(args),
        Command::Pub(args) => cmd::publish::run(args),
        Command::Sub(args) => cmd::sub::run(args),
        Command::Spy(args) => cmd::spy::run(args),
        Command::Log(args) => cmd::log::run(args),
        Command::Play(args) => cmd::play::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Foxglove(args) => cmd::foxglove::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Chan(args) => cmd::chan::run(args),
        Command::Demo(args) => cmd::demo::run(args),
        Command::Bridge(args) => cmd::bridge::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if cmd::exit::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("nerve: {e:#}");
            ExitCode::from(cmd::exit::code_of(&e))
        }
    }
}
