//! What stands in for the Linux-only commands elsewhere (Windows, macOS, the BSDs): `nerve chan` and `nerve demo`
//! are built on shared-memory channels (futexes, /dev/shm), which exist on Linux only. They stay in the command list
//! (the same `nerve --help` everywhere) and fail with a clear error naming what works here. `sub`, `spy` and
//! `foxglove` need no shm permission check: opening a `shm://` bus already fails with the bus's own clear error.

use std::process::ExitCode;

use super::exit::reject;

/// The error of a Linux-only command (status 1: the request cannot be met on this system).
fn linux_only(command: &str) -> anyhow::Error {
    reject(format!(
        "nerve {command} works on shared-memory channels, which are only available on Linux; on this system the \
         other commands work over udpm://, mpudpm://, file://, inproc:// and zenoh://"
    ))
}

/// Whatever was given after a Linux-only command's name (it is not parsed: the command cannot run here).
#[derive(clap::Args)]
pub struct Rest {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// `nerve chan`: Linux only.
pub mod chan {
    /// Arguments of `nerve chan` (not parsed here).
    pub type Args = super::Rest;

    /// Fails: shared-memory channels are Linux only.
    pub fn run(_: Args) -> anyhow::Result<super::ExitCode> {
        Err(super::linux_only("chan"))
    }
}

/// `nerve demo`: Linux only (its pipeline runs over shm channels).
pub mod demo {
    /// Arguments of `nerve demo` (not parsed here).
    pub type Args = super::Rest;

    /// Fails: the demo's pipeline runs over shared-memory channels, which are Linux only.
    pub fn run(_: Args) -> anyhow::Result<super::ExitCode> {
        Err(super::linux_only("demo"))
    }
}

/// The shm checks of `sub`, `spy`, `foxglove` and the exit status: nothing to check where there is no shm.
pub mod shm_access {
    /// Nothing to check: a `shm://` URL fails to open with the bus's own error.
    pub fn check_readable(_url: &str, _pattern: &str) -> anyhow::Result<()> {
        Ok(())
    }

    /// No shm provider error exists here.
    pub fn is_rejection(_: &(dyn std::error::Error + 'static)) -> Option<bool> {
        None
    }
}
