//! `nerve demo` end to end, with a short duration on a group and ports of this test's own (loopback multicast, TTL
//! 0): it exits 0, the summary has every stream with messages sent, received, logged and all replayed, the kept log
//! is there, and nothing is left behind (its child processes are gone, its temporary directory is removed). Also:
//! the refusals, and Ctrl-C (SIGINT to the demo alone) stopping every child and cleaning up.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn nerve() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nerve"))
}

/// A URL of this test process's own (group 239.255.76.91, ports from its PID); the replay takes the next port.
fn url(slot: u32) -> String {
    format!("udpm://239.255.76.91:{}?ttl=0&recv_buf_size=8388608", 52_000 + (std::process::id() % 500) * 8 + slot * 2)
}

/// A fresh directory for one test, removed at the end.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("nerve-demo-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("tmp")).unwrap();
        Dir(d)
    }

    /// What the demo sees as TMPDIR: its temporary directory goes there, so the test sees whether it is removed.
    fn tmp(&self) -> PathBuf {
        self.0.join("tmp")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `cmd`, killing it if it is still running after `limit`.
fn run_with_limit(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
    match rx.recv_timeout(limit) {
        Ok(out) => out,
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            panic!("nerve demo still running after {limit:?}");
        }
    }
}

/// Whether `pid` is a live process running this test's nerve binary.
fn alive_nerve(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let exe = Path::new(env!("CARGO_BIN_EXE_nerve")).file_name().unwrap().to_string_lossy().to_string();
    String::from_utf8_lossy(&cmdline).contains(&exe)
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect()
}

/// The summary row of `stream`: STREAM TYPE VIA TARGET SENT RECEIVED RATE P50 P99 LOST LOGGED REPLAYED.
fn row<'a>(text: &'a str, stream: &str) -> Vec<&'a str> {
    let r: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() == 12 && w[0] == stream)
        .unwrap_or_else(|| panic!("no summary row for {stream}:\n{text}"));
    r
}

#[test]
fn a_short_demo_measures_every_stream_replays_all_of_the_log_and_leaves_nothing_behind() {
    let dir = Dir::new("run");
    let kept = dir.0.join("kept.lcmlog");
    let mut cmd = nerve();
    cmd.args(["demo", "--duration", "2", "--no-ui", "--url", &url(0), "--keep-log"])
        .arg(&kept)
        .env("TMPDIR", dir.tmp());
    let out = run_with_limit(cmd, Duration::from_secs(120));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{:?}\n{text}\n{err}", out.status);
    // The summary's paragraphs are wrapped: phrases are looked for with the line breaks taken out.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");

    // Each stream: sent, received and logged, and every logged message replayed.
    for (stream, ty, via) in
        [("LASER", "exlcm.laser_t", "udpm"), ("IMAGE", "exlcm.image_t", "udpm"), ("POSE", "exlcm.pose_t", "shm")]
    {
        let r = row(&text, stream);
        assert_eq!((r[1], r[2]), (ty, via), "{text}");
        let n = |i: usize| r[i].parse::<u64>().unwrap_or_else(|_| panic!("column {i} of {stream}: {text}"));
        assert!(n(4) > 0 && n(5) > 0, "{stream} sent and received nothing:\n{text}");
        assert!(n(10) > 0, "{stream} logged nothing:\n{text}");
        assert_eq!(n(11), n(10), "{stream}: replayed != logged:\n{text}");
        assert!(r[6].parse::<f64>().unwrap() > 0.0, "{stream}: no rate:\n{text}");
        assert!(r[7].ends_with('s') && r[8].ends_with('s'), "{stream}: no latency:\n{text}");
    }
    // The rates are near their targets (generous: the machine is shared).
    let rate = |s: &str| row(&text, s)[6].parse::<f64>().unwrap();
    assert!((20.0..=60.0).contains(&rate("LASER")), "{text}");
    assert!((15.0..=45.0).contains(&rate("IMAGE")), "{text}");
    assert!((500.0..=1500.0).contains(&rate("POSE")), "{text}");
    assert!(flat.contains("controller ") && flat.contains("new poses read"), "{text}");
    assert!(flat.contains("(all of them; 0 lost in transport)"), "{text}");

    // The kept log: LCM's format (sync word first), the size the summary gives.
    let bytes = std::fs::read(&kept).unwrap();
    assert!(bytes.len() > 1_000_000, "an 2-second log with 640x480 images is bigger: {} bytes", bytes.len());
    assert_eq!(&bytes[..4], &[0xED, 0xA1, 0xDA, 0x01]);
    assert!(flat.contains("; kept"), "{text}");

    // Nothing left behind: every child's PID gone, the temporary directory (and its shm channel) removed.
    let pids: Vec<u32> = text
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter(|(name, _)| ["sensor", "localizer", "controller", "logger-udpm", "logger-shm", "player"].contains(name))
        .map(|(_, pid)| pid.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 6, "{text}");
    for pid in pids {
        assert!(!alive_nerve(pid), "child {pid} is still running");
    }
    assert!(flat.contains("(0 files left in its directory)") && flat.contains(" all exited;"), "{text}");
    assert!(!flat.contains("NOT all exited"), "{text}");
    assert!(entries(&dir.tmp()).is_empty(), "left in TMPDIR: {:?}", entries(&dir.tmp()));
}

#[test]
fn ctrl_c_stops_every_child_and_cleans_up() {
    let dir = Dir::new("int");
    let mut child = nerve()
        .args(["demo", "--duration", "30", "--no-ui", "--url", &url(1)])
        .env("TMPDIR", dir.tmp())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the scene is running (its temporary directory has the loggers' files), then SIGINT it alone.
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let running = std::fs::read_dir(dir.tmp())
            .unwrap()
            .flatten()
            .any(|d| d.path().join("shm.lcmlog").exists() && d.path().join("shm").join("nerve-POSE").exists());
        if running {
            break;
        }
        assert!(Instant::now() < until, "the demo did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || tx.send(std::io::read_to_string(stdout).unwrap()));
    let text = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        panic!("the demo did not stop on SIGINT");
    });
    let status = child.wait().unwrap();
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(130), "{text}\n{err}");
    assert!(err.contains("interrupted"), "{err}");
    // The processes it listed (`NAME pid N ...`) are gone, and so is its directory.
    let pids: Vec<u32> = text
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() > 2 && w[1] == "pid").then(|| w[2].parse().unwrap())
        })
        .collect();
    assert_eq!(pids.len(), 5, "{text}");
    for p in pids {
        assert!(!alive_nerve(p), "child {p} is still running");
    }
    assert!(entries(&dir.tmp()).is_empty(), "left in TMPDIR: {:?}", entries(&dir.tmp()));
}

#[test]
fn refusals() {
    for (args, says) in [
        (vec!["--duration", "0"], "--duration 0"),
        (vec!["--url", "shm://"], "give a udpm:// URL"),
        (vec!["--url", "udpm://239.255.76.91:9000", "--replay-url", "udpm://239.255.76.91:9000"], "must differ"),
        (vec!["--replay-speed=-1"], "--replay-speed"),
    ] {
        let out = nerve().arg("demo").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
