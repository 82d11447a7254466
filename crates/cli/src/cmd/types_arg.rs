//! The `--types DIR` option shared by the commands that decode messages: where `.lcm` files are found, loaded into
//! a registry that identifies messages by fingerprint.

use std::path::PathBuf;

use nerve_types::Registry;

use super::exit::reject;

/// Directories given with `--types`, else those in `NERVE_TYPES` (colon-separated).
pub fn type_dirs(given: &[PathBuf]) -> Vec<PathBuf> {
    if !given.is_empty() {
        return given.to_vec();
    }
    std::env::var_os("NERVE_TYPES").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default()
}

/// What to do with a `.lcm` file that has errors.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum BrokenFiles {
    /// Refuse to start: an export built from a half-read set of types would silently leave messages undecoded.
    Refuse,
    /// Warn, leave that file's types out and go on: watching traffic must not depend on a file someone is
    /// editing (`sub`, `spy`, `pub`, `chan dump`, `foxglove`).
    Skip,
}

/// Loads every `.lcm` file under `dirs`; `None` when no directory was given.
pub fn load_registry(dirs: &[PathBuf], broken: BrokenFiles) -> anyhow::Result<Option<Registry>> {
    if dirs.is_empty() {
        return Ok(None);
    }
    for d in dirs {
        if !d.is_dir() {
            return Err(reject(format!("--types {}: not a directory", d.display())));
        }
    }
    // The registry leaves out every file with errors (and the files that need its types) and reads the rest.
    let (registry, diags) = Registry::load_dirs(dirs);
    if diags.has_errors() {
        match broken {
            BrokenFiles::Refuse => return Err(reject(format!("reading types:\n{}", diags.render()))),
            BrokenFiles::Skip => eprintln!(
                "nerve: warning: .lcm files with errors are skipped (messages of their types are shown undecoded):\n{}",
                diags.render()
            ),
        }
    }
    Ok(Some(registry))
}
