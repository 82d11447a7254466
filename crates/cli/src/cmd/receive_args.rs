//! The options of the commands that print messages as they arrive (`nerve sub`, `nerve chan dump`): when to stop,
//! how to decode, how to print, and the exit status that says whether the count was reached.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nerve_types::Registry;

use super::types_arg::{load_registry, type_dirs};

/// `--count`, `--timeout-ms`, `--types`, `--json`.
#[derive(clap::Args)]
pub struct ReceiveArgs {
    /// Stop after this many messages.
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this many milliseconds (exit status 1 if --count was not reached).
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// A directory of .lcm files to decode messages with (repeatable; default NERVE_TYPES).
    #[arg(long = "types", value_name = "DIR")]
    types: Vec<PathBuf>,
    /// One JSON object per message.
    #[arg(long)]
    pub json: bool,
}

impl ReceiveArgs {
    /// The types to decode with, if any were given.
    pub fn registry(&self) -> anyhow::Result<Option<Registry>> {
        load_registry(&type_dirs(&self.types))
    }

    /// When `--timeout-ms` runs out, counted from now.
    pub fn deadline(&self) -> Option<Instant> {
        self.timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms))
    }

    /// Whether another message is wanted after `seen`.
    pub fn wants_more(&self, seen: u64) -> bool {
        self.count.is_none_or(|c| seen < c)
    }

    /// Success, or status 1 (said on stderr as `command`) when the deadline came before `--count` messages.
    pub fn exit_status(&self, command: &str, seen: u64) -> ExitCode {
        match self.count {
            Some(c) if seen < c => {
                eprintln!("{command}: timed out after {seen} of {c} messages");
                ExitCode::from(1)
            }
            _ => ExitCode::SUCCESS,
        }
    }
}
