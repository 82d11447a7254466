//! The options of the commands that print messages as they arrive (`nerve sub`, `nerve chan dump`): when to stop,
//! how to decode, how to print (`--json`, `--full`), and the exit status that says whether the count was reached.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nerve_types::Registry;

use super::types_arg::{load_registry, type_dirs, BrokenFiles};

/// `--count`, `--timeout-ms`, `--types`, `--json`, `--full`.
#[derive(clap::Args)]
pub struct ReceiveArgs {
    /// Stop after this many messages [default: no limit].
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this many milliseconds (exit status 1 if --count was not reached) [default: no limit].
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,
    /// A directory of .lcm files to decode messages with (repeatable) [default: NERVE_TYPES].
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// One JSON object per message (values in full, and the raw bytes as `data_hex`).
    #[arg(long)]
    pub json: bool,
    /// Print byte arrays whole in text lines (by default one longer than 32 bytes shows as its length and first
    /// bytes, as the spy shows it).
    #[arg(long)]
    pub full: bool,
}

impl ReceiveArgs {
    /// The types to decode with, if any were given.
    pub fn registry(&self) -> anyhow::Result<Option<Registry>> {
        load_registry(&type_dirs(&self.types), BrokenFiles::Skip)
    }

    /// When `--timeout-ms` runs out, counted from now.
    pub fn deadline(&self) -> Option<Instant> {
        self.timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms))
    }

    /// Whether another message is wanted after `seen`.
    pub fn wants_more(&self, seen: u64) -> bool {
        self.count.is_none_or(|c| seen < c)
    }

    /// Success, or status 1 when fewer than `--count` messages came; `why` says what ended the wait ("timed out",
    /// "the log ended").
    pub fn exit_status_because(&self, command: &str, seen: u64, why: &str) -> ExitCode {
        match self.count {
            Some(c) if seen < c => {
                eprintln!("{command}: {why} after {seen} of {c} messages");
                ExitCode::from(super::exit::REJECTED)
            }
            _ => ExitCode::SUCCESS,
        }
    }
}
