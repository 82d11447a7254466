//! The server against a real Foxglove protocol client (`@foxglove/ws-protocol`, run by Node): over udpm and over
//! shm, the client lists the channels a test publishes, subscribes, and every value it decodes is what was sent;
//! the same for a log played through the server (`file://LOG?speed=1`).

mod common;

use std::time::Duration;

use common::*;
use nerve_bus::Bus;
use nerve_foxglove::Server;

/// Runs `tests/node/client.mjs` against `server` (whose bus carries the test's poses on `POSE` and the
/// undecodable message on `MYSTERY`); asserts that the client saw every message exactly as sent.
fn client_sees_every_value(server: &Server, url: &str) {
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
    client_sees_every_value(&server, url);
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

#[test]
fn a_log_played_through_the_server_is_seen_as_live_traffic() {
    // 30 s of the traffic at 100 Hz, played at its own speed: the client has seen everything long before the end.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.lcmlog");
    let mut writer = nerve_log::LogWriter::create(&log, false).unwrap();
    let t0 = 1_700_000_000_000_000i64;
    for (i, (channel, data)) in traffic().iter().cycle().take(3000).enumerate() {
        writer.write_event(t0 + i as i64 * 10_000, channel, data).unwrap();
    }
    writer.flush().unwrap();
    drop(writer);
    let url = format!("file://{}?speed=1", log.display());
    let bus = Bus::new(Some(&url)).unwrap();
    let server = server(&bus, Some(registry()));
    client_sees_every_value(&server, &url);
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
