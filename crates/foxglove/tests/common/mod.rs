//! What the protocol and browser tests share: the test types, the traffic a test publishes (and what clients must
//! see of it), a server on a fresh bus, a publishing thread, and running the Node programs in `tests/node`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nerve_bus::Bus;
use nerve_foxglove::{Options, Server};
use nerve_types::{Registry, TypeName};

/// `tests/data`: `foxtest.lcm`.
pub fn types_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

pub fn registry() -> Registry {
    let (reg, diags) = Registry::load_dirs(&[types_dir()]);
    assert!(!diags.has_errors(), "{}", diags.render());
    reg
}

/// One message the test publishes: its JSON as the dynamic codec reads it (byte arrays as numbers), and as
/// clients must receive it (the MCAP export's flat form: byte arrays in base64).
pub struct Sample {
    pub sent: &'static str,
    pub received: &'static str,
}

/// The poses the test publishes on `POSE`, in turn.
pub const POSES: [Sample; 3] = [
    Sample {
        sent: r#"{"utime":1,"position":[0.5,1.25,-2.0],"q":[1.0,0.0,0.0,0.0],"frame":"map","n":2,"counts":[7,-8],
                  "waypoints":[{"x":1.5,"y":-0.25},{"x":0.0,"y":3.0}],"ok":true,"raw":[1,2]}"#,
        received: r#"{"utime":1,"position":[0.5,1.25,-2.0],"q":[1.0,0.0,0.0,0.0],"frame":"map","n":2,"counts":[7,-8],
                  "waypoints":[{"x":1.5,"y":-0.25},{"x":0.0,"y":3.0}],"ok":true,"raw":"AQI="}"#,
    },
    Sample {
        sent: r#"{"utime":1700000000000000,"position":[-1e300,0.125,7.0],"q":[0.5,0.5,0.5,0.5],"frame":"odom/ü\"",
                  "n":0,"counts":[],"waypoints":[{"x":-3.5,"y":2.0},{"x":4.0,"y":-4.0}],"ok":false,"raw":[255,0]}"#,
        received: r#"{"utime":1700000000000000,"position":[-1e300,0.125,7.0],"q":[0.5,0.5,0.5,0.5],"frame":"odom/ü\"",
                  "n":0,"counts":[],"waypoints":[{"x":-3.5,"y":2.0},{"x":4.0,"y":-4.0}],"ok":false,"raw":"/wA="}"#,
    },
    Sample {
        sent: r#"{"utime":-9007199254740991,"position":[0.0,0.0,0.0],"q":[-1.0,0.25,0.0,0.0],"frame":"",
                  "n":3,"counts":[2147483647,-2147483648,0],"waypoints":[{"x":0.0,"y":0.0},{"x":0.0,"y":0.0}],
                  "ok":true,"raw":[0,0]}"#,
        received: r#"{"utime":-9007199254740991,"position":[0.0,0.0,0.0],"q":[-1.0,0.25,0.0,0.0],"frame":"",
                  "n":3,"counts":[2147483647,-2147483648,0],"waypoints":[{"x":0.0,"y":0.0},{"x":0.0,"y":0.0}],
                  "ok":true,"raw":"AAA="}"#,
    },
];

/// The bytes of a message of a type nobody knows, published on `MYSTERY`: fingerprint, then three bytes.
pub const MYSTERY: [u8; 11] = [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 9, 8, 7];

/// The encoded poses.
pub fn encoded_poses(reg: &Registry) -> Vec<Vec<u8>> {
    let name = TypeName::parse("foxtest.pose_t");
    POSES.iter().map(|p| reg.encode(&name, &reg.from_json(&name, p.sent).unwrap()).unwrap()).collect()
}

static NEXT: AtomicU16 = AtomicU16::new(0);

/// A udpm URL no other test process uses (a block of ten ports per process, on a group of these tests' own).
pub fn udpm_url() -> String {
    let port = 20000 + (std::process::id() % 4000) as u16 * 10 + NEXT.fetch_add(1, Ordering::Relaxed) % 10;
    format!("udpm://239.255.76.73:{port}?ttl=0&recv_buf_size=2097152")
}

/// An shm URL whose channels live in `dir`.
pub fn shm_url(dir: &Path) -> String {
    format!("shm://?dir={}", dir.display())
}

/// A server on loopback, any port.
pub fn server(bus: &Bus, registry: Option<Registry>) -> Server {
    let options = Options { listen: "127.0.0.1:0".parse().unwrap(), ..Options::default() };
    Server::start(bus, registry, options).expect("server starts")
}

/// Publishes `(channel, bytes)` in turn every `period` until dropped.
pub struct Traffic {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

impl Traffic {
    pub fn start(bus: Bus, messages: Vec<(String, Vec<u8>)>, period: Duration) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut sent = 0u64;
            while !s.load(Ordering::Acquire) {
                for (channel, data) in &messages {
                    bus.publish_raw(channel, data).unwrap();
                    sent += 1;
                }
                std::thread::sleep(period);
            }
            sent
        });
        Traffic { stop, thread: Some(thread) }
    }

    /// Stops and returns how many messages were published.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Traffic {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `tests/node`, with its packages installed (`scripts/setup` runs `npm ci` there).
pub fn node_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    assert!(
        dir.join("node_modules/@foxglove/ws-protocol").is_dir(),
        "{}/node_modules is missing: run scripts/setup (it runs `npm ci` there)",
        dir.display()
    );
    dir
}

/// Runs `node SCRIPT ARGS...` in `tests/node`, killed after `limit`; its output.
pub fn node(script: &str, args: &[&str], limit: Duration) -> Output {
    let dir = node_dir();
    let mut child = Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs (Debian package nodejs)");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
