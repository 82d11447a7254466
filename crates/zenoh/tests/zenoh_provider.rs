//! `zenoh://` between buses (two Zenoh sessions joined over loopback TCP), and with plain Zenoh clients: what
//! crosses, under which keys, with which bytes; foreign keys that map to no channel are never handed over.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::{Bus, BusError, Origin, Received};
use zenoh::Wait;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A key prefix no other test uses.
fn prefix() -> String {
    format!("t/{}/{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Two buses, the second connected to the first, both under `prefix`.
fn pair(prefix: &str) -> (Bus, Bus, u16) {
    nerve_zenoh::register();
    let port = free_port();
    let a = format!("zenoh://?scouting=off&listen=tcp/127.0.0.1:{port}&prefix={prefix}");
    let b = format!("zenoh://tcp/127.0.0.1:{port}?scouting=off&prefix={prefix}");
    (Bus::new(Some(&a)).unwrap(), Bus::new(Some(&b)).unwrap(), port)
}

/// Publishes with `publish` every 20 ms until `got` holds (subscriptions reach the other session asynchronously).
fn until(what: &str, mut publish: impl FnMut(), got: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !got() {
        assert!(Instant::now() < end, "timed out: {what}");
        publish();
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn collector(bus: &Bus, pattern: &str) -> (nerve_bus::Subscription, Arc<Mutex<Vec<Received>>>) {
    let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
    let s = Arc::clone(&seen);
    let sub = bus.subscribe_raw(pattern, move |m| s.lock().unwrap().push(m.clone())).unwrap();
    (sub, seen)
}

#[test]
fn messages_cross_between_buses_unchanged_and_from_the_transport() {
    let p = prefix();
    let (a, b, _) = pair(&p);
    let (_sub, seen) = collector(&b, "POSE.*");
    let _d = b.spawn_dispatcher().unwrap();
    let payload: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    until("POSE_EST", || a.publish_raw("POSE_EST", &payload).unwrap(), || !seen.lock().unwrap().is_empty());
    let m = seen.lock().unwrap()[0].clone();
    assert_eq!((m.channel.as_str(), m.origin), ("POSE_EST", Origin::Transport));
    assert_eq!(m.data, payload);
    // A channel made after the subscription, with characters a key cannot hold, is picked up and named exactly.
    until(
        "odd name",
        || a.publish_raw("POSE a/b%//", b"x").unwrap(),
        || seen.lock().unwrap().iter().any(|m| m.channel == "POSE a/b%//"),
    );
    // What the pattern does not match is not delivered.
    a.publish_raw("OTHER", b"y").unwrap();
    a.publish_raw("XPOSE", b"y").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(seen.lock().unwrap().iter().all(|m| m.channel.starts_with("POSE")));
}

#[test]
fn plain_zenoh_clients_read_and_write_nerve_channels() {
    let p = prefix();
    let (bus, _other, port) = pair(&p);
    let mut config = zenoh::Config::default();
    config.insert_json5("connect/endpoints", &format!("[\"tcp/127.0.0.1:{port}\"]")).unwrap();
    config.insert_json5("scouting/multicast/enabled", "false").unwrap();
    let z = zenoh::open(config).wait().unwrap();

    // Nerve -> Zenoh: the key is PREFIX/CHANNEL and the payload the bytes published.
    type Samples = Arc<Mutex<Vec<(String, Vec<u8>)>>>;
    let got: Samples = Arc::default();
    let g = Arc::clone(&got);
    let _zsub = z
        .declare_subscriber(format!("{p}/**"))
        .callback(move |s| g.lock().unwrap().push((s.key_expr().to_string(), s.payload().to_bytes().into_owned())))
        .wait()
        .unwrap();
    until(
        "zenoh subscriber",
        || bus.publish_raw("robot/pose", b"\x01\x02").unwrap(),
        || !got.lock().unwrap().is_empty(),
    );
    assert_eq!(got.lock().unwrap()[0], (format!("{p}/robot/pose"), b"\x01\x02".to_vec()));

    // Zenoh -> Nerve, and a key under the prefix that no channel maps to is counted, never handed over.
    let (_sub, seen) = collector(&bus, ".*");
    let _d = bus.spawn_dispatcher().unwrap();
    until(
        "zenoh publisher",
        || {
            z.put(format!("{p}/%ZZ"), b"bad".to_vec()).wait().unwrap();
            z.put(format!("{p}/CMD"), b"go".to_vec()).wait().unwrap();
        },
        || !seen.lock().unwrap().is_empty(),
    );
    std::thread::sleep(Duration::from_millis(100));
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|m| m.channel == "CMD" && m.data == b"go" && m.origin == Origin::Transport), "{seen:?}");
    drop(seen);
    // The key that decodes to no channel name is counted, not silently dropped.
    until(
        "the malformed key counted",
        || z.put(format!("{p}/%ZZ"), b"bad".to_vec()).wait().unwrap(),
        || bus.provider_stats().malformed >= 1,
    );
}

#[test]
fn bad_urls_are_clear_errors() {
    nerve_zenoh::register();
    let e = Bus::new(Some("zenoh://?listn=tcp/127.0.0.1:0")).err().expect("accepted");
    assert!(matches!(e, BusError::UnknownOption { .. }), "{e}");
    assert!(e.to_string().contains("listn"), "{e}");
    let e = Bus::new(Some("zenoh://?scouting=off&listen=nonsense")).err().expect("accepted");
    assert!(matches!(e, BusError::Config { .. } | BusError::Transport { provider: "zenoh", .. }), "{e}");
}
