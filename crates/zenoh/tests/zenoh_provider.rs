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

type Seen = Arc<Mutex<Vec<Received>>>;

fn collector(bus: &Bus, pattern: &str) -> (nerve_bus::Subscription, Seen) {
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

/// The thread a callback ran on, by name.
fn thread_name() -> String {
    std::thread::current().name().unwrap_or("?").to_owned()
}

#[test]
fn a_dispatcher_runs_callbacks_on_zenohs_thread_and_local_ones_on_its_own() {
    let p = prefix();
    let (a, b, _) = pair(&p);
    let seen: Arc<Mutex<Vec<(u8, Origin, String)>>> = Arc::default();
    let s = Arc::clone(&seen);
    let _sub = b.subscribe_raw("T", move |m| s.lock().unwrap().push((m.data[0], m.origin, thread_name()))).unwrap();
    let d = b.spawn_dispatcher().unwrap();
    assert!(d.is_inline());
    let has = |v: u8| seen.lock().unwrap().iter().any(|m| m.0 == v);
    let wait_for = |v: u8| {
        let end = Instant::now() + Duration::from_secs(10);
        while !has(v) {
            assert!(Instant::now() < end, "timed out waiting for {v}: {:?}", seen.lock().unwrap());
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    until("the first sample", || a.publish_raw("T", &[0]).unwrap(), || has(0));
    for i in 1..=50u8 {
        a.publish_raw("T", &[i]).unwrap();
    }
    wait_for(50);
    // An in-process publication: Zenoh never shows it to this session, so the dispatcher's own thread runs it
    // (a message waiting when either thread dispatches is run by that one: callbacks never run concurrently).
    b.publish_raw("T", &[200]).unwrap();
    wait_for(200);
    let seen = seen.lock().unwrap();
    // No hand-off: Zenoh's thread ran the remote samples' callbacks, in order.
    let remote: Vec<_> = seen.iter().filter(|m| m.0 > 0 && m.0 <= 50).collect();
    assert!(remote.iter().all(|m| m.1 == Origin::Transport && !m.2.starts_with("nerve-dispatch")), "{remote:?}");
    assert_eq!(remote.iter().map(|m| m.0).collect::<Vec<u8>>(), (1..=50).collect::<Vec<u8>>());
    let local = seen.last().unwrap();
    assert_eq!((local.0, local.1, local.2.as_str()), (200, Origin::Local, "nerve-dispatch-local"));
    drop(seen);
    // Once the dispatcher is dropped, nothing runs callbacks but handle().
    drop(d);
    let before = b.health();
    b.publish_raw("T", &[201]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!has(201));
    assert!(b.handle_timeout(Duration::from_secs(1)).unwrap(), "the message waited for handle()");
    assert!(has(201));
    assert_eq!(b.health(), before);
}

#[test]
fn handlers_on_zenohs_thread_may_unsubscribe_subscribe_and_panic() {
    let p = prefix();
    let (a, b, _) = pair(&p);
    let _d = b.spawn_dispatcher().unwrap();
    // A handler that unsubscribes itself, undeclaring the Zenoh subscriber whose callback it runs in.
    let own: Arc<Mutex<Option<nerve_bus::Subscription>>> = Arc::default();
    let calls = Arc::new(AtomicU32::new(0));
    let (o, c, bus) = (Arc::clone(&own), Arc::clone(&calls), b.clone());
    let later: Arc<Mutex<Option<(nerve_bus::Subscription, Seen)>>> = Arc::default();
    let l = Arc::clone(&later);
    *own.lock().unwrap() = Some(
        b.subscribe_raw("ONCE", move |_| {
            c.fetch_add(1, Ordering::SeqCst);
            if let Some(sub) = o.lock().unwrap().take() {
                bus.unsubscribe(&sub).unwrap();
                // ... and subscribes anew to another channel, declaring a Zenoh subscriber from inside a callback.
                *l.lock().unwrap() = Some(collector(&bus, "AFTER"));
            }
        })
        .unwrap(),
    );
    until("the first ONCE", || a.publish_raw("ONCE", b"x").unwrap(), || calls.load(Ordering::SeqCst) > 0);
    for _ in 0..20 {
        a.publish_raw("ONCE", b"x").unwrap();
    }
    let seen = later.lock().unwrap().as_ref().map(|(_, seen)| Arc::clone(seen)).expect("subscribed inside");
    until("AFTER", || a.publish_raw("AFTER", b"y").unwrap(), || !seen.lock().unwrap().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a handler ran after its own unsubscribe");

    // A handler that panics: counted, and the next sample's callbacks still run.
    let n = Arc::new(AtomicU32::new(0));
    let m = Arc::clone(&n);
    let _boom = b
        .subscribe_raw("BOOM", move |_| {
            if m.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("first sample");
            }
        })
        .unwrap();
    until("BOOM twice", || a.publish_raw("BOOM", b"z").unwrap(), || n.load(Ordering::SeqCst) >= 2);
    assert_eq!(b.health().handler_panics, 1);
}

#[test]
fn a_handler_that_blocks_on_zenohs_thread_holds_up_only_until_it_returns() {
    let p = prefix();
    let (a, b, _) = pair(&p);
    let _d = b.spawn_dispatcher().unwrap();
    let got = Arc::new(AtomicU32::new(0));
    let g = Arc::clone(&got);
    let _sub = b
        .subscribe_raw("SLOW", move |m| {
            g.fetch_add(1, Ordering::SeqCst);
            if m.data == b"block" {
                std::thread::sleep(Duration::from_millis(1500));
            }
        })
        .unwrap();
    until("the first SLOW", || a.publish_raw("SLOW", b"warm").unwrap(), || got.load(Ordering::SeqCst) > 0);
    a.publish_raw("SLOW", b"block").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..10 {
        a.publish_raw("SLOW", b"meanwhile").unwrap();
    }
    // After the handler returns, the session still carries samples (the link and its lease survived).
    let before = got.load(Ordering::SeqCst);
    until("after the block", || a.publish_raw("SLOW", b"after").unwrap(), || got.load(Ordering::SeqCst) > before + 10);
    assert_eq!(b.health().transport_errors, 0);
}
