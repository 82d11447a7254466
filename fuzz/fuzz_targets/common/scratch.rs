//! The scratch directory of one fuzzing process (under /dev/shm where there is one), for the targets that make
//! channel files: made on first use and removed when the process exits normally (libFuzzer ends every run, a
//! `-runs` or `-max_total_time` limit included, with `exit`), so soaks leave no directory per process behind. A crash
//! keeps it, with the files the crashing input made.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static DIR: OnceLock<PathBuf> = OnceLock::new();

/// `nerve-fuzz-TAG-PID` under /dev/shm (or the temporary directory).
pub fn scratch_dir(tag: &str) -> &'static PathBuf {
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        let d = base.join(format!("nerve-fuzz-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a fuzz directory");
        // SAFETY: registers a function without arguments that only removes a directory; `exit` runs it once.
        unsafe { libc::atexit(remove_scratch_dir) };
        d
    })
}

extern "C" fn remove_scratch_dir() {
    if let Some(d) = DIR.get() {
        let _ = std::fs::remove_dir_all(d);
    }
}
