//! `nerve spy` end to end, as separate processes over loopback multicast (TTL 0, a group and port block of its
//! own): `--once --json` while `nerve pub` processes publish known messages, the text report, the refusals, and
//! (where tmux is installed) the live screen driven through tmux and read back with capture-pane.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nerve_types::{Registry, TypeName};

mod common;
use common::{finish, nerve, types_dir, Guard};

/// A URL of this test process's own: group 239.255.76.90, a port from its PID; `slot` keeps the tests in this
/// file (threads of one process) apart.
fn url(slot: u32) -> String {
    format!("udpm://239.255.76.90:{}?ttl=0", 48_000 + (std::process::id() % 500) * 4 + slot)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn publisher(channel: &str, url: &str, message: &[&str], count: u32, rate: u32) -> Guard {
    let mut cmd = nerve();
    cmd.args(["pub", channel, "--url", url, "--count", &count.to_string(), "--rate", &rate.to_string()]);
    cmd.args(message).stdout(Stdio::null()).stderr(Stdio::null());
    Guard(Some(cmd.spawn().unwrap()))
}

const SCAN: &str = r#"{"utime": 7, "nranges": 3, "ranges": [1.5, 2.5, 3.5], "rad0": -1, "radstep": 0.5}"#;

#[test]
fn once_json_reports_each_channel_with_its_type_count_and_rate() {
    let url = url(0);
    let types = types_dir();
    let (reg, _) = Registry::load_dirs(&[PathBuf::from(&types)]);
    let laser = TypeName::parse("exlcm.laser_t");
    let fp = reg.by_name(&laser).unwrap().fingerprint;
    let full = reg.encode(&laser, &reg.from_json(&laser, SCAN).unwrap()).unwrap();
    // Shorter than any laser_t (caught on arrival), and long enough but cut inside `ranges` (caught when decoded).
    let too_short = hex(&full[..20]);
    let cut = hex(&full[..30]);

    let spy = nerve()
        .args(["spy", "--once", "--json", "--duration", "4.5", "--types", &types, "--url", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let spy = Guard(Some(spy));
    // Give the spy time to join the group before anything is sent.
    std::thread::sleep(Duration::from_secs(1));
    let t = types.as_str();
    let pubs = [
        publisher("SCAN", &url, &["--type", "exlcm.laser_t", "--json", SCAN, "--types", t], 60, 10),
        publisher("RAW", &url, &["--hex", "0011223344556677aabbcc"], 5, 10),
        publisher("SHORT", &url, &["--hex", &too_short], 3, 10),
        publisher("CUT", &url, &["--hex", &cut], 2, 10),
    ];
    let out = finish(spy, Duration::from_secs(30));
    drop(pubs);
    assert!(out.status.success(), "spy failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(report["url"], url.as_str());
    assert_eq!(report["dropped"]["queue_overflow"], 0);
    let channels = report["channels"].as_array().unwrap();
    let ch = |name: &str| {
        channels.iter().find(|c| c["channel"] == name).unwrap_or_else(|| panic!("no {name} in {text}")).clone()
    };

    let scan = ch("SCAN");
    assert_eq!(scan["type"], "exlcm.laser_t");
    assert_eq!(scan["fingerprint"], format!("0x{fp:016x}").as_str());
    let count = scan["count"].as_u64().unwrap();
    assert!((10..=60).contains(&count), "SCAN count {count}");
    let rate = scan["rate_hz"].as_f64().unwrap();
    assert!((5.0..=20.0).contains(&rate), "SCAN rate {rate}");
    assert_eq!(scan["bytes"].as_u64().unwrap(), count * full.len() as u64);
    assert_eq!(scan["last_size"].as_u64().unwrap(), full.len() as u64);
    assert_eq!(scan["decode_errors"], 0);
    let bw = scan["bandwidth_bps"].as_f64().unwrap();
    assert!((rate * full.len() as f64 - bw).abs() < 1.0, "bandwidth {bw} is not rate {rate} x {} bytes", full.len());

    let raw = ch("RAW");
    assert_eq!(raw["type"], serde_json::Value::Null);
    assert_eq!(raw["fingerprint"], "0x0011223344556677");
    assert_eq!(raw["count"], 5);
    assert_eq!(raw["decode_errors"], 0);

    let short = ch("SHORT");
    assert_eq!(short["type"], "exlcm.laser_t");
    assert_eq!(short["count"], 3);
    assert_eq!(short["decode_errors"], 3, "every one is shorter than any laser_t");

    let cut = ch("CUT");
    assert_eq!(cut["count"], 2);
    assert_eq!(cut["decode_errors"], 1, "only the newest is decoded in full");
}

#[test]
fn once_prints_a_text_table() {
    let out = nerve().args(["spy", "--once", "--duration", "0.3", "--url", "memq://"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "CHANNEL  TYPE  COUNT  RATE Hz  JITTER  BANDWIDTH  ERRORS");
    assert!(lines[1].starts_with("0 channels, 0 messages in 0."), "{text}");
    assert!(
        lines[1].ends_with(
            "on memq://; dropped: 0 queue overflow, 0 lost in transport, 0 malformed, 0 dropped by the kernel"
        ),
        "{text}"
    );
}

#[test]
fn refusals_are_errors_with_a_reason() {
    let cases: [(&[&str], &str); 4] = [
        (&["spy", "--url", "memq://"], "needs a terminal"),
        (&["spy", "--duration", "1", "--url", "memq://"], "--duration applies to --once"),
        (&["spy", "--once", "--duration", "0", "--url", "memq://"], "above 0"),
        (&["spy", "--once", "--types", "/nonexistent/types", "--url", "memq://"], "not a directory"),
    ];
    for (args, why) in cases {
        let out = nerve().args(args).stdout(Stdio::piped()).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{args:?}: {err}");
    }
}

/// The live screen as a person sees it, in a tmux of this test's own (its own server socket, killed at the end).
#[test]
fn live_screen_in_tmux() {
    // A missing tmux fails the test (scripts/setup installs it): a test that skipped would pass unchecked.
    if let Err(e) = Command::new("tmux").arg("-V").output() {
        panic!("tmux is not installed (`tmux -V`: {e}); scripts/setup installs it");
    }
    struct Tmux(String);
    impl Tmux {
        fn run(&self, args: &[&str]) -> Output {
            Command::new("tmux").args(["-L", &self.0]).args(args).output().unwrap()
        }
        fn screen(&self) -> String {
            String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "spy"]).stdout).into_owned()
        }
        fn wait_for(&self, what: &str) -> String {
            self.wait_for_all(&[what])
        }
        /// Waits until the screen shows every one of `what` at once: a capture can catch a frame half drawn.
        fn wait_for_all(&self, what: &[&str]) -> String {
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                let s = self.screen();
                if what.iter().all(|w| s.contains(w)) {
                    return s;
                }
                assert!(Instant::now() < deadline, "never saw all of {what:?}; the screen:\n{s}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    impl Drop for Tmux {
        fn drop(&mut self) {
            self.run(&["kill-server"]);
        }
    }
    let url = url(1);
    let types = types_dir();
    let tmux = Tmux(format!("nerve-spy-test-{}", std::process::id()));
    let cmd = format!("{} spy --types {types} --url '{url}'", env!("CARGO_BIN_EXE_nerve"));
    let started = tmux.run(&["new-session", "-d", "-s", "spy", "-x", "120", "-y", "24", &cmd]);
    assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
    tmux.wait_for("no messages yet");
    let _scan = publisher("SCAN", &url, &["--type", "exlcm.laser_t", "--json", SCAN, "--types", &types], 300, 20);

    let s = tmux.wait_for_all(&["exlcm.laser_t", "Channel ▲", "Rate Hz", "Bandwidth", "Enter open"]);
    let row = s.lines().find(|l| l.contains("SCAN")).unwrap();
    assert!(row.starts_with("> SCAN"), "{s}");
    assert!(s.lines().last().unwrap().contains("Enter open"), "{s}");

    tmux.run(&["send-keys", "-t", "spy", "Enter"]);
    tmux.wait_for_all(&["ranges: float[3] [1.5, 2.5, 3.5]", "utime: 7", "radstep: 0.5", "Esc/q back"]);

    tmux.run(&["send-keys", "-t", "spy", "q"]);
    tmux.wait_for("Enter open");
    tmux.run(&["send-keys", "-t", "spy", "q"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.run(&["has-session", "-t", "spy"]).status.success() {
        assert!(Instant::now() < deadline, "spy did not quit on q:\n{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(100));
    }
}
