//! The `--types DIR` option shared by the commands that decode messages: where `.lcm` files are found, loaded into
//! a registry that identifies messages by fingerprint.

use std::path::PathBuf;

use anyhow::bail;
use nerve_types::Registry;

/// Directories given with `--types`, else those in `NERVE_TYPES` (colon-separated).
pub fn type_dirs(given: &[PathBuf]) -> Vec<PathBuf> {
    if !given.is_empty() {
        return given.to_vec();
    }
    std::env::var_os("NERVE_TYPES").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default()
}

/// Loads every `.lcm` file under `dirs`; `None` when no directory was given. Errors in the files are fatal: a
/// decoder built from a half-read set of types would mislabel messages.
pub fn load_registry(dirs: &[PathBuf]) -> anyhow::Result<Option<Registry>> {
    if dirs.is_empty() {
        return Ok(None);
    }
    for d in dirs {
        if !d.is_dir() {
            bail!("--types {}: not a directory", d.display());
        }
    }
    let (registry, diags) = Registry::load_dirs(dirs);
    if diags.has_errors() {
        bail!("reading types:\n{}", diags.render());
    }
    Ok(Some(registry))
}
