//! Exit statuses, one meaning each for every subcommand: 0 done, [`REJECTED`] (1) when the input was refused or
//! the work is incomplete (a bad argument, URL, type, JSON value or file, a damaged log, nothing decoded, a
//! `--count` not reached), [`FAILED`] (2) for any other failure (the system refused, a transport or I/O error).
//!
//! Commands return `Ok(ExitCode)` for outcomes they report themselves, and errors otherwise; [`code_of`] tells
//! from an error's chain which of the two it is, so a library's typed error needs no wrapping to be classified.

use std::process::ExitCode;

use nerve_bus::BusError;
use nerve_log::LogError;

/// Input rejected or incomplete.
pub const REJECTED: u8 = 1;
/// Any other failure.
pub const FAILED: u8 = 2;

/// The user's input refused, said in words (exit status 1).
#[derive(Debug)]
pub struct Rejected(pub String);

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Rejected {}

/// An error that exits with status 1: `return Err(reject(format!(...)))`.
pub fn reject(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Rejected(message.into()))
}

/// `ExitCode` 1.
pub fn rejected() -> ExitCode {
    ExitCode::from(REJECTED)
}

/// The exit status for an error: 1 when anything in its chain is the input's fault, else 2.
pub fn code_of(e: &anyhow::Error) -> u8 {
    if e.chain().any(is_rejection) {
        REJECTED
    } else {
        FAILED
    }
}

fn is_rejection(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.is::<Rejected>()
        || e.is::<nerve_bus::UrlError>()
        || e.is::<nerve_bus::PatternError>()
        || e.is::<nerve_types::dynamic::DynError>()
    {
        return true;
    }
    if let Some(b) = e.downcast_ref::<BusError>() {
        // What the bus refuses of what it was given (a URL, an option, a pattern, a value) is the input's fault;
        // a transport that fails is not. Listed by the failures, so that a refusal the bus learns to make (an
        // unknown URL option) is status 1 without a change here.
        return !matches!(
            b,
            BusError::Transport { .. }
                | BusError::HandleInsideHandler
                | BusError::NotSubscribed
                | BusError::LimitReached { .. }
        );
    }
    if let Some(rejected) = super::shm_access::is_rejection(e) {
        return rejected;
    }
    if let Some(l) = e.downcast_ref::<LogError>() {
        return matches!(l, LogError::Exists { .. });
    }
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return io.kind() == std::io::ErrorKind::NotFound;
    }
    false
}

/// Whether the error is a closed stdout (`nerve ... | head`), which is not a failure.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
