//! `nerve bridge` as a process between two udpm buses (each its own port) and between udpm and zenoh: messages
//! cross both ways, renamed, without looping back, and `--json` reports what it forwarded.

mod common;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{finish, nerve, text, Guard};
use nerve_bus::{Bus, Origin, Received};

/// Two udpm ports of this test process's own (a block chosen by the process id).
fn ports() -> (u16, u16) {
    let base = 40000 + (std::process::id() % 2000) as u16 * 10;
    (base, base + 1)
}

fn collector(bus: &Bus, pattern: &str) -> (nerve_bus::Subscription, Arc<Mutex<Vec<Received>>>) {
    let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
    let s = Arc::clone(&seen);
    let sub = bus.subscribe_raw(pattern, move |m| s.lock().unwrap().push(m.clone())).unwrap();
    (sub, seen)
}

fn until(what: &str, mut publish: impl FnMut(), got: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !got() {
        assert!(Instant::now() < end, "timed out: {what}");
        publish();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a bridge between `a` and `b` (their URLs), while `body` publishes and checks; returns its --json lines.
fn with_bridge(a: &str, b: &str, extra: &[&str], body: impl FnOnce()) -> Vec<serde_json::Value> {
    let child = nerve()
        .args(["bridge", a, b, "--json", "--interval", "0.2", "--duration", "6"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = Guard(Some(child));
    body();
    let out = finish(guard, Duration::from_secs(20));
    assert!(out.status.success(), "bridge failed: {}", text(&out.stderr));
    text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn bridge_both_ways_renames_and_never_loops() {
    let (pa, pb) = ports();
    let ua = format!("udpm://239.255.76.70:{pa}?ttl=0");
    let ub = format!("udpm://239.255.76.70:{pb}?ttl=0");
    let a = Bus::new(Some(&ua)).unwrap();
    let b = Bus::new(Some(&ub)).unwrap();
    let (_sa, on_a) = collector(&a, ".*");
    let (_sb, on_b) = collector(&b, ".*");
    let _da = a.spawn_dispatcher().unwrap();
    let _db = b.spawn_dispatcher().unwrap();
    let lines = with_bridge(&ua, &ub, &["--both-ways", "--rename", "CMD=ROBOT_CMD", "--channel", "POSE|CMD"], || {
        until(
            "POSE a->b",
            || a.publish_raw("POSE", b"p").unwrap(),
            || on_b.lock().unwrap().iter().any(|m| m.channel == "POSE"),
        );
        until(
            "ROBOT_CMD b->a as CMD",
            || b.publish_raw("ROBOT_CMD", b"c").unwrap(),
            || on_a.lock().unwrap().iter().any(|m| m.channel == "CMD" && m.origin == Origin::Transport),
        );
        // Filtered out: not forwarded.
        for _ in 0..20 {
            a.publish_raw("OTHER", b"o").unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
    });
    let on_a = on_a.lock().unwrap();
    let on_b = on_b.lock().unwrap();
    // Nothing A published came back to A, nothing B published came back to B.
    assert!(on_a.iter().all(|m| m.channel == "CMD" || m.origin == Origin::Local), "loop on A");
    assert!(on_b.iter().all(|m| m.channel == "POSE" || m.origin == Origin::Local), "loop on B");
    assert!(!on_b.iter().any(|m| m.channel == "OTHER"), "filtered channel crossed");
    assert!(!on_a.iter().any(|m| m.channel == "ROBOT_CMD" && m.origin == Origin::Transport), "not renamed");
    for route in [format!("{ua} -> {ub}"), format!("{ub} -> {ua}")] {
        let last = lines.iter().rev().find(|l| l["route"] == route.as_str()).unwrap_or_else(|| panic!("{route}"));
        assert!(last["forwarded"].as_u64().unwrap() >= 1, "{last}");
    }
}

#[test]
fn bridge_udpm_to_zenoh() {
    nerve_zenoh::register();
    let (pa, _) = ports();
    let ua = format!("udpm://239.255.76.71:{}?ttl=0", pa + 5);
    let zport = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let prefix = format!("bridge{}", std::process::id());
    let uz = format!("zenoh://?scouting=off&listen=tcp/127.0.0.1:{zport}&prefix={prefix}");
    let a = Bus::new(Some(&ua)).unwrap();
    let lines = with_bridge(&ua, &uz, &[], || {
        // The operator side: a Zenoh bus connected to the bridge's.
        std::thread::sleep(Duration::from_millis(500));
        let z = Bus::new(Some(&format!("zenoh://tcp/127.0.0.1:{zport}?scouting=off&prefix={prefix}"))).unwrap();
        let (_s, on_z) = collector(&z, "CAM.*");
        let _d = z.spawn_dispatcher().unwrap();
        until(
            "CAMERA udpm->zenoh",
            || a.publish_raw("CAMERA", &[7; 5000]).unwrap(),
            || !on_z.lock().unwrap().is_empty(),
        );
        assert_eq!(on_z.lock().unwrap()[0].data, vec![7; 5000]);
    });
    assert!(lines.iter().any(|l| l["forwarded"].as_u64().unwrap() > 0), "{lines:?}");
}

#[test]
fn pub_and_sub_take_zenoh_urls() {
    let zport = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let prefix = format!("cli{}", std::process::id());
    let sub = nerve()
        .args(["sub", "HELLO", "--count", "1", "--timeout-ms", "15000"])
        .args(["--url", &format!("zenoh://?scouting=off&listen=tcp/127.0.0.1:{zport}&prefix={prefix}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = Guard(Some(sub));
    // Each `nerve pub` is a new Zenoh session; repeat until the subscriber has its message.
    let end = Instant::now() + Duration::from_secs(15);
    let mut g = guard;
    loop {
        let out = nerve()
            .args(["pub", "HELLO", "--hex", "0102"])
            .args(["--url", &format!("zenoh://tcp/127.0.0.1:{zport}?scouting=off&prefix={prefix}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        if g.0.as_mut().unwrap().try_wait().unwrap().is_some() || Instant::now() > end {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = finish(g, Duration::from_secs(5));
    assert!(out.status.success(), "sub: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("HELLO"), "{}", text(&out.stdout));
}
