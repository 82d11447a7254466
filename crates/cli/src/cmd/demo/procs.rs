//! The scene's child processes: started from this same binary, their output collected by a thread per pipe (so a
//! chatty child never blocks on a full pipe), waited for with a deadline, and stopped by PID: SIGTERM first (every
//! child writes its results on SIGTERM), SIGKILL if it is still there after a grace period. Dropping [`Procs`] stops
//! whatever is still running, so an error anywhere in the scene leaves no process behind.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;

/// How long a child gets to finish after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// One child process.
pub struct Proc {
    /// What it is in the scene (`sensor`, `logger (udpm)`, ...).
    pub name: String,
    /// Its process id.
    pub pid: u32,
    child: Child,
    status: Option<ExitStatus>,
    out: Option<JoinHandle<String>>,
    err: Option<JoinHandle<String>>,
    /// Whether it had to be stopped with SIGKILL.
    pub killed: bool,
}

impl Proc {
    /// Its exit status, once it has exited.
    pub fn status(&self) -> Option<ExitStatus> {
        self.status
    }

    fn poll(&mut self) -> bool {
        if self.status.is_none() {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.status = Some(s);
            }
        }
        self.status.is_some()
    }

    /// Its stdout and stderr, once it has exited (each taken once).
    pub fn output(&mut self) -> (String, String) {
        let join = |h: Option<JoinHandle<String>>| h.and_then(|h| h.join().ok()).unwrap_or_default();
        (join(self.out.take()), join(self.err.take()))
    }
}

fn reader(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<String>> {
    let mut pipe = pipe?;
    std::thread::Builder::new()
        .name("nerve-demo-pipe".into())
        .spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .ok()
}

/// Every child the scene started.
#[derive(Default)]
pub struct Procs {
    list: Vec<Proc>,
}

impl Procs {
    /// Starts `nerve ARGS...` (this binary) as `name`, capturing its stdout and stderr.
    pub fn spawn(&mut self, name: &str, args: &[String]) -> anyhow::Result<u32> {
        let exe = std::env::current_exe().context("finding the nerve binary")?;
        let mut child = Command::new(&exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {name}: {} {}", exe.display(), args.join(" ")))?;
        let pid = child.id();
        let (out, err) = (reader(child.stdout.take()), reader(child.stderr.take()));
        self.list.push(Proc { name: name.to_owned(), pid, child, status: None, out, err, killed: false });
        Ok(pid)
    }

    /// The child called `name`.
    pub fn get(&mut self, name: &str) -> Option<&mut Proc> {
        self.list.iter_mut().find(|p| p.name == name)
    }

    /// Every child, in the order started.
    pub fn all(&self) -> &[Proc] {
        &self.list
    }

    /// Whether `name` is still running.
    pub fn running(&mut self, name: &str) -> bool {
        self.get(name).is_some_and(|p| !p.poll())
    }

    /// Waits until `name` exits or `deadline` passes (or `give_up` says so); then stops it if it is still running.
    pub fn wait(&mut self, name: &str, deadline: Instant, give_up: impl Fn() -> bool) {
        while self.running(name) && Instant::now() < deadline && !give_up() {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stop(name);
    }

    /// Stops `name` if it is running: SIGTERM by its PID, then SIGKILL after [`GRACE`].
    pub fn stop(&mut self, name: &str) {
        let Some(p) = self.get(name) else { return };
        if p.poll() {
            return;
        }
        // `kill` the command: the standard way to send SIGTERM by PID without unsafe code.
        let _ = Command::new("kill")
            .args(["-TERM", &p.pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let until = Instant::now() + GRACE;
        while !p.poll() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if !p.poll() {
            let _ = p.child.kill();
            p.killed = true;
            p.status = p.child.wait().ok();
        }
    }

    /// Stops every child still running, the last started first.
    pub fn stop_all(&mut self) {
        let names: Vec<String> = self.list.iter().rev().map(|p| p.name.clone()).collect();
        for n in names {
            self.stop(&n);
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        self.stop_all();
    }
}
