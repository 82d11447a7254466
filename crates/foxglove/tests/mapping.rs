//! Mapped channels against a real Foxglove protocol client (`@foxglove/ws-protocol` under Node, decoding with
//! protobufjs and the schema the server advertised): libbot's camera image, planar laser scan and rigid transform
//! arrive as `foxglove.RawImage`, `LaserScan` and `FrameTransform` with every field as published; an inconsistent
//! camera (its data one byte short) is counted and never sent mapped; the raw view of each channel stays.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use nerve_bus::Bus;
use nerve_types::{Registry, TypeName};

const UTIME: i64 = 1_700_000_000_123_456;

fn bot_core() -> Registry {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/bot_core");
    let (reg, diags) = Registry::load_dirs(&[dir]);
    assert!(!diags.has_errors(), "{}", diags.render());
    reg
}

fn encode(reg: &Registry, ty: &str, json: &serde_json::Value) -> Vec<u8> {
    let name = TypeName::parse(ty);
    reg.encode(&name, &reg.from_json(&name, &json.to_string()).unwrap()).unwrap()
}

fn image(width: usize, height: usize, data: &[u8]) -> serde_json::Value {
    serde_json::json!({
        "utime": UTIME, "width": width, "height": height, "row_stride": width * 3,
        "pixelformat": 859981650, // PIXEL_FORMAT_RGB
        "size": data.len(), "data": data, "nmetadata": 0, "metadata": [],
    })
}

fn timestamp() -> serde_json::Value {
    serde_json::json!({"seconds": 1_700_000_000, "nanos": 123_456_000})
}

#[test]
fn a_foxglove_client_decodes_mapped_camera_scan_and_transform_field_for_field() {
    let reg = bot_core();
    let (w, h) = (64, 48);
    let pixels: Vec<u8> = (0..w * h * 3).map(|i| (i * 7 % 251) as u8).collect();
    let ranges = [1.5, 2.25, 0.0, 40.0, 3.125];
    let intensities = [100.0, 0.5, 0.0, 7.0, 255.0];
    let scan = serde_json::json!({
        "utime": UTIME, "nranges": 5, "ranges": ranges, "nintensities": 5, "intensities": intensities,
        "rad0": -1.5, "radstep": 0.75,
    });
    let transform = serde_json::json!({"utime": UTIME, "trans": [1.25, -2.5, 0.125], "quat": [0.5, 0.5, -0.5, 0.5]});
    let traffic = vec![
        ("CAMERA".to_owned(), encode(&reg, "bot_core.image_t", &image(w, h, &pixels))),
        ("CAMERA_BAD".to_owned(), encode(&reg, "bot_core.image_t", &image(w, h, &pixels[1..]))),
        ("LIDAR".to_owned(), encode(&reg, "bot_core.planar_lidar_t", &scan)),
        ("BODY_TO_LOCAL".to_owned(), encode(&reg, "bot_core.rigid_transform_t", &transform)),
    ];
    let identity = serde_json::json!({
        "position": {"x": 0.0, "y": 0.0, "z": 0.0}, "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
    });
    let spec = serde_json::json!({
        "topics": {
            "CAMERA/foxglove.RawImage": {"schemaName": "foxglove.RawImage", "expect": {
                "timestamp": timestamp(), "frame_id": "CAMERA", "width": w, "height": h, "encoding": "rgb8",
                "step": w * 3, "data": pixels,
            }},
            "CAMERA_BAD/foxglove.RawImage": {"schemaName": "foxglove.RawImage", "expect": null},
            "LIDAR/foxglove.LaserScan": {"schemaName": "foxglove.LaserScan", "expect": {
                "timestamp": timestamp(), "frame_id": "LIDAR", "pose": identity,
                "start_angle": -1.5, "end_angle": 1.5, "ranges": ranges, "intensities": intensities,
            }},
            "BODY_TO_LOCAL/foxglove.FrameTransform": {"schemaName": "foxglove.FrameTransform", "expect": {
                "timestamp": timestamp(), "parent_frame_id": "local", "child_frame_id": "BODY_TO_LOCAL",
                "translation": {"x": 1.25, "y": -2.5, "z": 0.125},
                "rotation": {"x": 0.5, "y": -0.5, "z": 0.5, "w": 0.5},
            }},
        },
        "raw": ["CAMERA", "CAMERA_BAD", "LIDAR", "BODY_TO_LOCAL"],
        "timeoutMs": 20000,
    });
    let dir = tempfile::tempdir().unwrap();
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();

    let bus = Bus::new(Some("memq://")).unwrap();
    let server = server(&bus, Some(reg));
    let publisher = Traffic::start(bus.clone(), traffic, Duration::from_millis(20));
    let ws = format!("ws://{}", server.local_addr());
    let out = node("mapped.mjs", &[&ws, spec_path.to_str().unwrap()], Duration::from_secs(30));
    publisher.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));

    let mapped = server.mapped();
    let by_channel = |c: &str| mapped.iter().find(|m| m.channel == c).unwrap_or_else(|| panic!("{c}: {mapped:?}"));
    for c in ["CAMERA", "LIDAR", "BODY_TO_LOCAL"] {
        assert!(by_channel(c).sent > 0 && by_channel(c).refused == 0, "{:?}", by_channel(c));
    }
    let bad = by_channel("CAMERA_BAD");
    assert_eq!(bad.sent, 0, "{bad:?}");
    assert!(bad.refused > 0, "{bad:?}");
    let why = bad.last_refusal.as_deref().unwrap();
    assert!(why.contains("is 9216 bytes, but the data has 9215"), "{why}");
    let stats = server.stats();
    assert!(stats.mapped_sent >= 3 && stats.mapped_refused == bad.refused, "{stats:?}");
}
