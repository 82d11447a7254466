//! The server against a real Foxglove protocol client (`@foxglove/ws-protocol`, run by Node): over udpm and over
//! shm, the client lists the channels a test publishes, subscribes, and every value it decodes is what was sent;
//! the same for a log played through the server (`file://LOG?speed=1`), whose clock the server then follows (the
//! protocol's `time` capability: the times broadcast and the messages' timestamps are the log's).

mod common;

use std::time::Duration;

use common::*;
use nerve_bus::provider::file::FileProvider;
use nerve_bus::Bus;
use nerve_foxglove::{Options, Server};

/// Runs `tests/node/client.mjs` against `server` (whose bus carries the test's poses on `POSE` and the
/// undecodable message on `MYSTERY`); asserts that the client saw every message exactly as sent. Returns the
/// client's results.
fn client_sees_every_value(server: &Server, url: &str) -> serde_json::Value {
    let poses: Vec<serde_json::Value> = POSES.iter().map(|p| serde_json::from_str(p.received).unwrap()).collect();
    let spec = serde_json::json!({
        "channels": {
            "POSE": {"schemaName": "foxtest.pose_t", "messages": poses},
            // A type nobody gave: its fingerprint and its bytes (all of them) in base64 (the reason text is not
            // compared).
            "MYSTERY": {"schemaName": "nerve.undecoded", "ignore": ["error"],
                        "messages": [{"fingerprint": "0xdeadbeef00000001", "data": "3q2+7wAAAAEJCAc="}]},
        },
        "timeoutMs": 20000,
    });
    let dir = tempfile::tempdir().unwrap();
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let ws = format!("ws://{}", server.local_addr());
    let out = node("client.mjs", &[&ws, spec_path.to_str().unwrap()], Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed on {url}: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(result["ok"], true);
    let advertised: Vec<&str> = result["advertised"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(advertised.contains(&"POSE") && advertised.contains(&"MYSTERY"), "{advertised:?}");
    let stats = server.stats();
    assert!(stats.sent > 0 && stats.undecoded > 0, "{stats:?}");
    result
}

/// A number of nanoseconds the client gave as a string.
fn ns(v: &serde_json::Value) -> u64 {
    v.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not nanoseconds: {v}"))
}

/// The test's traffic: the poses in turn on `POSE`, and `MYSTERY`.
fn traffic() -> Vec<(String, Vec<u8>)> {
    let mut messages: Vec<(String, Vec<u8>)> =
        encoded_poses(&registry()).into_iter().map(|b| ("POSE".to_owned(), b)).collect();
    messages.push(("MYSTERY".into(), MYSTERY.to_vec()));
    messages
}

/// A server on `url` while a second bus on it publishes the traffic every 10 ms.
fn live(url: &str) {
    let server_bus = Bus::new(Some(url)).unwrap();
    let server = server(&server_bus, Some(registry()));
    let publisher = Traffic::start(Bus::new(Some(url)).unwrap(), traffic(), Duration::from_millis(10));
    let result = client_sees_every_value(&server, url);
    // A live bus keeps the wall clock: no `time` capability, no time messages.
    assert!(!result["capabilities"].as_array().unwrap().iter().any(|c| c == "time"), "{result}");
    assert_eq!(result["times"]["count"], 0, "{result}");
    let published = publisher.stop();
    assert!(server.stats().received <= published);
}

#[test]
fn a_foxglove_client_sees_every_value_published_over_udpm() {
    live(&udpm_url());
}

#[test]
fn a_foxglove_client_sees_every_value_published_over_shm() {
    let dir = tempfile::tempdir().unwrap();
    live(&shm_url(dir.path()));
}

/// The first event's time in the test's logs: 30 s of the traffic at 100 Hz from there.
const T0: i64 = 1_700_000_000_000_000;

/// The test's traffic in turn every 10 ms from [`T0`], 3000 events: (log time, channel, bytes).
fn logged() -> impl Iterator<Item = (i64, String, Vec<u8>)> {
    traffic().into_iter().cycle().take(3000).enumerate().map(|(i, (c, d))| (T0 + i as i64 * 10_000, c, d))
}

/// Plays `log` at its own speed through a server that follows its clock; the client sees every value (long
/// before the end), the time capability, times broadcast inside the log's span that never go back, and messages
/// stamped with their exact log times.
fn played(log: &std::path::Path) {
    let url = format!("file://{}?speed=1", log.display());
    let (file, _) = FileProvider::open(&url, log.to_str().unwrap(), &[("speed".into(), "1".into())]).unwrap();
    let playback = file.playback();
    let bus = Bus::with_provider(Box::new(file));
    let options = Options { listen: "127.0.0.1:0".parse().unwrap(), playback: Some(playback), ..Options::default() };
    let server = Server::start(&bus, Some(registry()), options).unwrap();
    let result = client_sees_every_value(&server, &url);

    assert!(result["capabilities"].as_array().unwrap().iter().any(|c| c == "time"), "{result}");
    // The wall clock is years after the log's span.
    let log_span = (T0 as u64 * 1000)..=((T0 + 30_000_000) as u64 * 1000);
    let times = &result["times"];
    assert!(times["count"].as_u64().unwrap() >= 1, "{result}");
    assert_eq!(times["backwards"], 0, "{result}");
    let (first, last) = (ns(&times["first"]), ns(&times["last"]));
    assert!(log_span.contains(&first) && log_span.contains(&last) && first <= last, "{result}");
    for (topic, range) in result["stamps"].as_object().unwrap() {
        for stamp in [ns(&range[0]), ns(&range[1])] {
            assert!(log_span.contains(&stamp), "{topic}: {stamp} is not in the log's time");
            // Exact log times: whole multiples of the log's 10 ms step from its start.
            assert_eq!((stamp - T0 as u64 * 1000) % 10_000_000, 0, "{topic}: {stamp}");
        }
    }
}

#[test]
fn a_log_played_through_the_server_is_seen_as_live_traffic_on_the_logs_clock() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.lcmlog");
    let mut writer = nerve_log::LogWriter::create(&log, false).unwrap();
    for (utime, channel, data) in logged() {
        writer.write_event(utime, &channel, &data).unwrap();
    }
    writer.flush().unwrap();
    drop(writer);
    played(&log);
}

#[test]
fn an_mcap_recording_played_through_the_server_follows_its_clock_too() {
    use nerve_log::mcap::{Compression, McapWriter};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.mcap");
    let mut writer = McapWriter::create(&log, false, Compression::Zstd, std::sync::Arc::new(|_| None)).unwrap();
    for (utime, channel, data) in logged() {
        writer.write_event(utime, &channel, &data).unwrap();
    }
    writer.finish().unwrap();
    played(&log);
}

#[test]
fn nothing_is_transcoded_while_no_client_subscribes() {
    let reg = registry();
    let bus = Bus::new(Some("memq://")).unwrap();
    let server = server(&bus, Some(reg.clone()));
    for data in encoded_poses(&reg) {
        bus.publish_raw("POSE", &data).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.stats().received < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = server.stats();
    assert_eq!((stats.received, stats.unsubscribed, stats.sent, stats.advertised), (3, 3, 0, 1), "{stats:?}");
}
