//! What the `nerve` end-to-end tests share: the binary under test, the example types, a scratch channel directory,
//! and a guard for the child processes a test starts (killed by PID and reaped when dropped).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The `nerve` binary of this build.
pub fn nerve() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nerve"))
}

/// `examples/types`, absolute.
pub fn types_dir() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/types").canonicalize().unwrap().display().to_string()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory (for shm channels), removed when dropped.
pub struct TestDir(tempfile::TempDir);

impl TestDir {
    /// A new empty `$TMPDIR/nerve-{prefix}-{tag}-XXXXXX`, removed when dropped.
    pub fn new(prefix: &str, tag: &str) -> TestDir {
        TestDir(tempfile::Builder::new().prefix(&format!("nerve-{prefix}-{tag}-")).tempdir().unwrap())
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// The directory as text, for command lines.
    pub fn s(&self) -> String {
        self.path().display().to_string()
    }

    /// An `shm://` bus URL on this directory.
    pub fn url(&self) -> String {
        format!("shm://?dir={}", self.s())
    }
}

/// Whether this test runs as root (a file it makes in `dir` belongs to uid 0), which ignores permission bits:
/// permission tests then run the command as `nobody`.
pub fn running_as_root(dir: &TestDir) -> bool {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.path().join("uid-probe");
    std::fs::write(&probe, b"").unwrap();
    let root = std::fs::metadata(&probe).unwrap().uid() == 0;
    std::fs::remove_file(probe).unwrap();
    root
}

/// A child process this test started, killed (by its PID) and reaped when dropped.
pub struct Guard(pub Option<Child>);

impl Guard {
    pub fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits up to `limit` for the child to exit and returns its output (the guard kills it if the wait fails).
pub fn finish(mut g: Guard, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while g.0.as_mut().unwrap().try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "process still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    g.0.take().unwrap().wait_with_output().unwrap()
}
