//! How `play`, `export` and `sub --url file://` report a log's damage after reading it: one wording, exit status 1.

use std::path::Path;
use std::process::ExitCode;

use nerve_log::{Damage, DamageKind, DamageTotals};

/// Prints what was wrong with the log `path` (as `command`, e.g. "nerve play") and returns status 1, or `None`
/// when it was intact. `done` says what happened to the intact events ("played", "exported").
pub fn report(command: &str, path: &Path, damage: &[Damage], totals: DamageTotals, done: &str) -> Option<ExitCode> {
    if totals.regions == 0 {
        return None;
    }
    match damage {
        [only] if only.kind == DamageKind::NotALog => {
            eprintln!(
                "{command}: {}: not an LCM event log (no sync word in its {} bytes)",
                path.display(),
                only.skipped
            );
        }
        _ => {
            eprintln!(
                "{command}: {}: damaged in {} place(s) ({} bytes skipped); every intact event was {done}:",
                path.display(),
                totals.regions,
                totals.bytes
            );
            for d in damage {
                eprintln!("  {d}");
            }
        }
    }
    Some(ExitCode::from(super::exit::REJECTED))
}
