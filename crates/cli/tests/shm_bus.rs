//! `--url shm://` across processes: `nerve sub` receives what `nerve pub` publishes (typed values decoded, names
//! with `/`, channels made after the subscription and channels that existed before it), and `nerve log` records
//! the channels' messages into an LCM log. Each test has a channel directory of its own.
//!
//! A subscriber is ready once its provider watches the directory: the test reads `/proc/PID/fdinfo` for the
//! process's inotify watch (set before the subscription scans the directory), then allows the scan a moment.

use std::process::Stdio;
use std::time::{Duration, Instant};

use nerve_log::LogReader;

mod common;
use common::{finish, nerve, text, types_dir, Guard, TestDir};

/// Waits (bounded) until process `pid` has an inotify watch, i.e. its shm:// provider watches the directory, then
/// a little longer for its subscription's scan.
fn wait_until_watching(g: &mut Guard) {
    let pid = g.pid();
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = g.0.as_mut().unwrap().try_wait().unwrap() {
            panic!("the subscriber exited early: {status}");
        }
        let watching = std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|info| info.contains("inotify wd:")));
        if watching {
            break;
        }
        assert!(Instant::now() < end, "process {pid} never watched the channel directory");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
}

fn publish(url: &str, channel: &str, args: &[&str]) {
    let out = nerve().args(["pub", channel, "--url", url]).args(args).output().unwrap();
    assert!(out.status.success(), "nerve pub {channel}: {}", text(&out.stderr));
}

const SCAN: &str = r#"{"utime": 7, "nranges": 3, "ranges": [1.5, 2.5, 3.5], "rad0": -1, "radstep": 0.5}"#;

#[test]
fn sub_receives_what_pub_publishes() {
    let dir = TestDir::new("shm-bus", "pubsub");
    let url = dir.url();
    let types = types_dir();
    // A channel that exists before the subscription, with a message the subscriber must not get.
    publish(&url, "OLD", &["--hex", "01"]);
    let mut sub = Guard(Some(
        nerve()
            .args([
                "sub",
                "OLD|SCAN/.*",
                "--url",
                &url,
                "--count",
                "7",
                "--timeout-ms",
                "20000",
                "--json",
                "--types",
                &types,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    wait_until_watching(&mut sub);
    // A channel made after the subscription, typed values; and more on the old one.
    publish(&url, "SCAN/front", &["--type", "exlcm.laser_t", "--json", SCAN, "--types", &types, "--count", "5"]);
    publish(&url, "OLD", &["--hex", "0203", "--count", "2"]);
    let out = finish(sub, Duration::from_secs(30));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert_eq!(lines.len(), 7, "{lines:?}");
    let scans: Vec<&serde_json::Value> = lines.iter().filter(|l| l["channel"] == "SCAN/front").collect();
    assert_eq!(scans.len(), 5, "every message on the channel made after the subscription");
    for s in scans {
        assert_eq!(s["type"], "exlcm.laser_t");
        assert_eq!(s["value"]["ranges"][2], 3.5);
    }
    let old: Vec<&str> =
        lines.iter().filter(|l| l["channel"] == "OLD").map(|l| l["data_hex"].as_str().unwrap()).collect();
    assert_eq!(old, ["0203", "0203"], "only what was published after the subscription");
}

#[test]
fn log_records_shm_traffic() {
    let dir = TestDir::new("shm-bus", "log");
    let url = dir.url();
    let file = dir.path().join("rec.lcm");
    publish(&url, "BEFORE", &["--hex", "ff"]);
    let mut log = Guard(Some(
        nerve()
            .args(["log", file.to_str().unwrap(), "--url", &url, "--duration", "4", "--quiet"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    wait_until_watching(&mut log);
    publish(&url, "POSE", &["--hex", "0102030405060708", "--count", "3"]);
    publish(&url, "robot/arm", &["--hex", "aabbcc", "--count", "2"]);
    publish(&url, "BEFORE", &["--hex", "ee"]);
    let out = finish(log, Duration::from_secs(30));
    assert!(out.status.success(), "{}", text(&out.stderr));

    let mut reader = LogReader::open(&file).unwrap();
    let mut events: Vec<(String, Vec<u8>)> = Vec::new();
    while let Some(ev) = reader.next_event().unwrap() {
        events.push((ev.channel().into_owned(), ev.data.to_vec()));
    }
    assert_eq!(reader.damage_totals().regions, 0);
    let of = |c: &str| events.iter().filter(|(ch, _)| ch == c).map(|(_, d)| d.clone()).collect::<Vec<_>>();
    assert_eq!(of("POSE"), vec![vec![1, 2, 3, 4, 5, 6, 7, 8]; 3]);
    assert_eq!(of("robot/arm"), vec![vec![0xaa, 0xbb, 0xcc]; 2]);
    assert_eq!(of("BEFORE"), vec![vec![0xee]], "what the channel held before recording began is not recorded");
    assert_eq!(events.len(), 6, "{events:?}");
}
