//! What serving a bus costs: a 1 kHz pose and a 30 Hz 640x480 image published on a `memq://` bus, one WebSocket
//! client subscribed to both; prints the server's CPU time per message sent (its threads only: the forwarder and
//! the runtime that runs the SDK and the front) and the publish-to-client latency p50 / p99 per channel.
//!
//! `cargo run --release -p nerve-foxglove --example cost -- [SECONDS]` (default 5). The latency is from the bus's
//! receive stamp (the publish, on memq) to the client's receipt of the frame, through the front's copy.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use nerve_bus::Bus;
use nerve_foxglove::{Options, Server};
use nerve_types::{Registry, TypeName};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// CPU time (user + system, in clock ticks of 10 ms) of this process's threads whose name starts with `prefix`.
fn cpu_ticks(prefix: &str) -> u64 {
    let mut ticks = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        ticks += fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    }
    ticks
}

fn percentile(v: &mut [u64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p) as usize] as f64 / 1e3
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).map_or(5.0, |s| s.parse().expect("SECONDS"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (reg, diags) = Registry::load_dirs(&[root.join("tests/data"), root.join("../../examples/types")]);
    assert!(!diags.has_errors(), "{}", diags.render());
    let pose_t = TypeName::parse("foxtest.pose_t");
    let image_t = TypeName::parse("exlcm.image_t");
    let pose_json = r#"{"utime":1,"position":[0.5,1.25,-2.0],"q":[1.0,0.0,0.0,0.0],"frame":"map","counts":[7,-8],
        "waypoints":[{"x":1.5,"y":-0.25},{"x":0.0,"y":3.0}],"ok":true,"raw":[1,2]}"#;
    let pose = reg.encode(&pose_t, &reg.from_json(&pose_t, pose_json).unwrap()).unwrap();
    let pixels = vec!["7"; 640 * 480].join(",");
    let image_json = format!(r#"{{"utime":1,"width":640,"height":480,"pixelformat":0,"data":[{pixels}]}}"#);
    let image = reg.encode(&image_t, &reg.from_json(&image_t, &image_json).unwrap()).unwrap();

    let bus = Bus::new(Some("memq://")).unwrap();
    let options = Options { listen: "127.0.0.1:0".parse().unwrap(), ..Options::default() };
    let server = Server::start(&bus, Some(reg), options).unwrap();
    bus.publish_raw("POSE", &pose).unwrap();
    bus.publish_raw("IMAGE", &image).unwrap();

    // The client: its own runtime (threads named apart from the server's), subscribes to both channels and
    // records, per message, now minus the frame's timestamp (the bus's receive stamp).
    let client = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let url = format!("ws://{}/", server.local_addr());
    let (lat_tx, lat_rx) = std::sync::mpsc::channel::<(u32, u64)>();
    let publish_for = Duration::from_secs_f64(seconds);
    let client_thread = std::thread::Builder::new()
        .name("client".into())
        .spawn(move || {
            client.block_on(async move {
                let mut req = url.into_client_request().unwrap();
                req.headers_mut().insert("sec-websocket-protocol", "foxglove.sdk.v1".parse().unwrap());
                let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
                let mut subscribed = 0;
                let deadline = tokio::time::Instant::now() + publish_for + Duration::from_secs(3);
                while let Ok(Some(Ok(msg))) = tokio::time::timeout_at(deadline, ws.next()).await {
                    match msg {
                        Message::Text(t) => {
                            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                            if v["op"] != "advertise" {
                                continue;
                            }
                            for ch in v["channels"].as_array().unwrap() {
                                let id = match ch["topic"].as_str() {
                                    Some("POSE") => 1,
                                    Some("IMAGE") => 2,
                                    _ => continue,
                                };
                                subscribed += 1;
                                let sub = serde_json::json!({"op": "subscribe",
                                    "subscriptions": [{"id": id, "channelId": ch["id"]}]});
                                ws.send(Message::Text(sub.to_string().into())).await.unwrap();
                            }
                        }
                        Message::Binary(b) if b.len() >= 13 && b[0] == 1 => {
                            let sub = u32::from_le_bytes(b[1..5].try_into().unwrap());
                            let stamp = u64::from_le_bytes(b[5..13].try_into().unwrap());
                            let _ = lat_tx.send((sub, now_ns().saturating_sub(stamp)));
                        }
                        _ => {}
                    }
                }
                subscribed
            })
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));

    // 1 kHz pose, an image every 33 ms, for `seconds`.
    let (cpu0, sent0, started) = (cpu_ticks("nerve-foxglove"), server.stats().sent, Instant::now());
    let mut k: u64 = 0;
    while started.elapsed() < publish_for {
        bus.publish_raw("POSE", &pose).unwrap();
        if k.is_multiple_of(33) {
            bus.publish_raw("IMAGE", &image).unwrap();
        }
        k += 1;
        let next = Duration::from_millis(k);
        if let Some(wait) = next.checked_sub(started.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let (cpu1, sent1) = (cpu_ticks("nerve-foxglove"), server.stats().sent);
    let subscribed = client_thread.join().unwrap();
    let (mut pose_lat, mut image_lat) = (Vec::new(), Vec::new());
    for (sub, ns) in lat_rx.try_iter() {
        if sub == 1 {
            pose_lat.push(ns)
        } else {
            image_lat.push(ns)
        }
    }
    let sent = sent1 - sent0;
    let cpu_us = (cpu1 - cpu0) as f64 * 10_000.0;
    let per_s = cpu_us / 1e3 / seconds;
    println!(
        "nerve foxglove, {seconds} s: 1 kHz pose ({} B) + 30 Hz image ({} B), one client on {subscribed} channels",
        pose.len(),
        image.len()
    );
    println!(
        "  server: {sent} messages sent, CPU {:.0} ms ({per_s:.0} ms per second) = {:.1} µs per message",
        cpu_us / 1e3,
        cpu_us / sent.max(1) as f64
    );
    println!("  {:?}", server.stats());
    println!("  client received: pose {}, image {}", pose_lat.len(), image_lat.len());
    for (name, lat) in [("pose", &mut pose_lat), ("image", &mut image_lat)] {
        let (p50, p99) = (percentile(lat, 0.5), percentile(lat, 0.99));
        println!("  latency publish -> client, {name}: p50 {p50:.0} µs  p99 {p99:.0} µs");
    }
}
