//! Child processes of a measurement: started pinned, their stdout read line by line on a thread, waited for with
//! bounded timeouts, and killed (by their own PID, via `Child::kill`) if they overstay.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A role a program plays in a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Echo client.
    Client,
    /// Echo source.
    Source,
    /// One-way latency receiver.
    LatRecv,
    /// One-way latency sender.
    LatSend,
}

/// What runs one system's roles: an executable and the subcommand word of each role.
#[derive(Debug, Clone)]
pub struct Program {
    /// The executable.
    pub exe: PathBuf,
    /// Arguments before the role word (an interpreter's script).
    pub lead: Vec<PathBuf>,
    /// The subcommand words for Client, Source, LatRecv, LatSend.
    pub words: [&'static str; 4],
    /// Environment variables it runs with (e.g. `LD_LIBRARY_PATH` to run lcm_echo on Nerve's liblcm).
    pub env: Vec<(String, PathBuf)>,
}

impl Program {
    fn word(&self, r: Role) -> &'static str {
        self.words[r as usize]
    }
}

/// One running role.
pub struct Proc {
    name: String,
    child: std::process::Child,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Proc {
    /// Starts `program` with `args`, on `cpu` if given.
    pub fn spawn(
        name: &str,
        program: &Program,
        role: Role,
        args: &[String],
        cpu: Option<usize>,
    ) -> Result<Proc, String> {
        let mut cmd = Command::new(&program.exe);
        cmd.args(&program.lead)
            .arg(program.word(role))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.envs(program.env.iter().map(|(k, v)| (k, v)));
        if let Some(c) = cpu {
            super::clock::pin_command(&mut cmd, c);
        }
        let mut child = cmd.spawn().map_err(|e| format!("starting {}: {e}", program.exe.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::with_capacity(1 << 16, stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let err = Arc::new(Mutex::new(String::new()));
        let e2 = Arc::clone(&err);
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            e2.lock().expect("stderr").push_str(&s);
        });
        Ok(Proc { name: name.to_string(), child, lines, stderr: err })
    }

    /// The process id (for its /proc entries).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn failure(&mut self, what: &str) -> String {
        // Give the stderr reader a moment to collect what the process said before it died.
        let deadline = Instant::now() + Duration::from_millis(200);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(20));
        let e = self.stderr.lock().expect("stderr").trim().replace('\n', " | ");
        if e.is_empty() {
            format!("{} {what}", self.name)
        } else {
            format!("{} {what}: {e}", self.name)
        }
    }

    /// Waits up to `timeout` for the line `want` (e.g. "ready").
    pub fn expect_line(&mut self, want: &str, timeout: Duration) -> Result<(), String> {
        match self.lines.recv_timeout(timeout) {
            Ok(l) if l == want => Ok(()),
            Ok(l) => Err(self.failure(&format!("printed {l:?} instead of {want:?}"))),
            Err(RecvTimeoutError::Timeout) => Err(self.failure(&format!("did not print {want:?} within {timeout:?}"))),
            Err(RecvTimeoutError::Disconnected) => Err(self.failure(&format!("exited before printing {want:?}"))),
        }
    }

    /// Collects lines up to and including "end" (or the line starting with `last`), waiting at most `timeout`.
    pub fn collect(&mut self, last: &str, timeout: Duration) -> Result<Vec<String>, String> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let done = l.starts_with(last);
                    out.push(l);
                    if done {
                        return Ok(out);
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Err(self.failure(&format!("no {last:?} within {timeout:?}"))),
                Err(RecvTimeoutError::Disconnected) => return Err(self.failure(&format!("exited before {last:?}"))),
            }
        }
    }

    /// Waits up to `timeout` for the process to exit, then kills it (this PID only).
    pub fn finish(mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => return st.success(),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return false;
                }
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
