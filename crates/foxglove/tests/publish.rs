//! Clients publishing into the bus (`--allow-publish`), through Foxglove's own client under Node: JSON of a known
//! type arrives on the bus as that type's LCM bytes; bad JSON, unknown types and publishing when it is off are
//! refused with an error status to that client, and nothing reaches the bus.

mod common;

use std::time::Duration;

use common::*;
use nerve_bus::{Bus, Overflow};
use nerve_foxglove::{Options, Server};
use nerve_types::TypeName;

/// Runs `publish.mjs` against a server on a fresh memq bus; returns what reached the bus on `topic` and the
/// client's report (capabilities, statuses).
fn publish(allow: bool, topic: &str, schema: &str, messages: &[&str]) -> (Vec<Vec<u8>>, serde_json::Value) {
    let bus = Bus::new(Some("memq://")).unwrap();
    let options = Options { listen: "127.0.0.1:0".parse().unwrap(), allow_publish: allow, ..Options::default() };
    let server = Server::start(&bus, Some(registry()), options).unwrap();
    let sub = bus.subscriber(topic, 0, Overflow::DropOldest).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("messages.json");
    std::fs::write(&path, serde_json::to_string(messages).unwrap()).unwrap();
    let ws = format!("ws://{}", server.local_addr());
    let out = node("publish.mjs", &[&ws, topic, schema, path.to_str().unwrap()], Duration::from_secs(30));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got = Vec::new();
    while let Some(m) = sub.recv_timeout(Duration::from_millis(300)) {
        got.push(m.data.clone());
    }
    (got, report)
}

#[test]
fn json_of_a_known_type_is_published_as_its_lcm_bytes() {
    let reg = registry();
    let (got, report) = publish(true, "CMD", "foxtest.pose_t", &[POSES[0].sent, POSES[1].sent]);
    assert_eq!(got, encoded_poses(&reg)[..2].to_vec(), "{report}");
    assert!(report["capabilities"].as_array().unwrap().iter().any(|c| c == "clientPublish"), "{report}");
    assert_eq!(report["statuses"], serde_json::json!([]));
    // The bytes are LCM's for that type: the registry decodes them.
    let name = TypeName::parse("foxtest.pose_t");
    assert_eq!(reg.decode_as(&name, &got[0]).unwrap(), reg.from_json(&name, POSES[0].sent).unwrap());
}

#[test]
fn bad_client_messages_are_refused_with_a_status_and_never_published() {
    let (got, report) =
        publish(true, "CMD", "foxtest.pose_t", &["{not json", r#"{"utime": "x"}"#, "\u{fffd}", POSES[2].sent]);
    assert_eq!(got.len(), 1, "only the good message is published: {report}");
    let statuses = report["statuses"].as_array().unwrap();
    assert_eq!(statuses.len(), 3, "{report}");
    assert!(statuses.iter().all(|s| s.as_str().unwrap().starts_with("not published: foxtest.pose_t")), "{report}");

    let (got, report) = publish(true, "CMD", "foxtest.nope_t", &[POSES[0].sent]);
    assert!(got.is_empty());
    assert!(report["statuses"][0].as_str().unwrap().contains("no LCM type named \"foxtest.nope_t\""), "{report}");
}

#[test]
fn publishing_is_off_unless_allowed() {
    let (got, report) = publish(false, "CMD", "foxtest.pose_t", &[POSES[0].sent]);
    assert!(got.is_empty(), "{report}");
    assert!(!report["capabilities"].as_array().unwrap().iter().any(|c| c == "clientPublish"), "{report}");
}
