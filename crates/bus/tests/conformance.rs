//! One behavioural suite for the bus, run over every provider (inproc and memq in-process, udpm and mpudpm over real
//! loopback multicast, shm over channel files in a scratch directory): anchored patterns, per-subscription
//! drop-oldest queues, unsubscribe inside handlers, handle / handle_timeout / fileno, queue subscribers and async
//! streams, typed delivery with wrong-type detection. (A bus delivers its own publications in-process; what crosses
//! each transport between processes is tested in the provider's own suite.)

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::{Bus, BusError, Overflow, Received, SubscriptionStats, TypeError};
use nerve_codec::{Decode, DecodeError, Encode, EncodeError, Message, Reader, Writer};

static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// A fresh bus per test; udpm tests each get their own port so they never hear each other.
fn bus(provider: &str) -> Bus {
    let url = match provider {
        "memq" => "memq://".to_owned(),
        // inproc:// buses of one name are shared process-wide: a name per test.
        "inproc" => format!("inproc://conformance-{}", NEXT_PORT.fetch_add(1, Ordering::Relaxed)),
        "udpm" => {
            // Ten ports per test process, in a block chosen by the process id.
            let port = 20000 + (std::process::id() % 4000) as u16 * 10 + NEXT_PORT.fetch_add(1, Ordering::Relaxed) % 10;
            format!("udpm://239.255.76.68:{port}?ttl=0&recv_buf_size=2097152")
        }
        "mpudpm" => {
            // A block of 16 ports per test.
            let port =
                10000 + (std::process::id() % 500) as u16 * 100 + (NEXT_PORT.fetch_add(1, Ordering::Relaxed) % 6) * 16;
            format!("mpudpm://239.255.76.71:{port}?ttl=0&nports=16&recv_buf_size=2097152")
        }
        "shm" => {
            // A channel directory per test (cargo's scratch directory for integration tests), emptied first.
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
                "conformance-shm-{}-{}",
                std::process::id(),
                NEXT_PORT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            format!("shm://?dir={}&frames=64&frame_size=4096", dir.display())
        }
        _ => unreachable!(),
    };
    Bus::new(Some(&url)).unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Waits (bounded) until `f` holds: udpm delivers asynchronously.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn stats_of(bus: &Bus, sub: &nerve_bus::Subscription) -> SubscriptionStats {
    bus.stats(sub).unwrap()
}

/// A tiny LCM type written by hand (`struct point_t { int32_t x; int32_t y; }`), to test typed delivery without
/// depending on the generator.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    x: i32,
    y: i32,
}

impl Encode for Point {
    fn encoded_body_size(&self) -> usize {
        8
    }
    fn encode_body(&self, w: &mut Writer<'_>) -> Result<(), EncodeError> {
        w.put_i32(self.x)?;
        w.put_i32(self.y)
    }
}

impl Decode for Point {
    fn decode_body(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Point { x: r.get_i32()?, y: r.get_i32()? })
    }
}

impl Message for Point {
    const FINGERPRINT: u64 = 0x1234_5678_9abc_def0;
    const TYPE_NAME: &'static str = "test.point_t";
}

macro_rules! conformance {
    ($($provider:ident),*) => {$(
        mod $provider {
            #[test] fn patterns_match_whole_names() { super::patterns_match_whole_names(stringify!($provider)) }
            #[test] fn full_queue_drops_oldest() { super::full_queue_drops_oldest(stringify!($provider)) }
            #[test] fn drop_newest_is_an_option() { super::drop_newest_is_an_option(stringify!($provider)) }
            #[test] fn unsubscribe_inside_handler() { super::unsubscribe_inside_handler(stringify!($provider)) }
            #[test] fn handle_inside_handler_is_an_error() { super::handle_inside_handler_is_an_error(stringify!($provider)) }
            #[test] fn handle_timeout_and_fileno() { super::handle_timeout_and_fileno(stringify!($provider)) }
            #[test] fn subscriber_queue_and_stream() { super::subscriber_queue_and_stream(stringify!($provider)) }
            #[test] fn typed_delivery_rejects_other_types() { super::typed_delivery_rejects_other_types(stringify!($provider)) }
            #[test] fn background_dispatcher() { super::background_dispatcher(stringify!($provider)) }
            #[test] fn late_subscriber_sees_only_newer_messages() { super::late_subscriber_sees_only_newer_messages(stringify!($provider)) }
            #[test] fn dispatcher_thread_and_queued_messages() { super::dispatcher_thread_and_queued_messages(stringify!($provider)) }
            #[test] fn fd_asked_for_late_is_readable_at_once() { super::fd_asked_for_late_is_readable_at_once(stringify!($provider)) }
        }
    )*};
}

conformance!(inproc, memq, udpm, mpudpm, shm);

fn patterns_match_whole_names(p: &str) {
    let bus = bus(p);
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    let sub = bus.subscribe_raw("FOO|BAR", move |m| g.lock().unwrap().push(m.channel.clone())).unwrap();
    for ch in ["FOO", "FOOX", "XBAR", "BAR", "FOO|BAR"] {
        bus.publish_raw(ch, b"x").unwrap();
    }
    bus.publish_raw("END", b"").unwrap();
    eventually("two matches queued", || stats_of(&bus, &sub).received == 2);
    while bus.handle_timeout(Duration::from_millis(200)).unwrap() {}
    // Sorted: on mpudpm, messages on different channels arrive on different sockets, so only the order within one
    // channel is kept.
    let mut got = got.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, ["BAR", "FOO"]);
    assert!(matches!(bus.subscribe_raw("(", |_| {}), Err(BusError::Pattern(_))));
}

fn full_queue_drops_oldest(p: &str) {
    let bus = bus(p);
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    let sub = bus.subscribe_raw("Q", move |m| g.lock().unwrap().push(m.data[0])).unwrap();
    for i in 0..40u8 {
        bus.publish_raw("Q", &[i]).unwrap();
    }
    eventually("40 received", || stats_of(&bus, &sub).received == 40);
    while bus.handle_timeout(Duration::from_millis(100)).unwrap() {}
    assert_eq!(*got.lock().unwrap(), (10..40).collect::<Vec<u8>>(), "the newest 30 survive");
    let s = stats_of(&bus, &sub);
    assert_eq!((s.received, s.delivered, s.dropped_overflow), (40, 30, 10));
}

fn drop_newest_is_an_option(p: &str) {
    let bus = bus(p);
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    let sub = bus
        .subscribe_with("Q", 5, Overflow::DropNewest, move |m| {
            g.lock().unwrap().push(m.data[0]);
            Ok(())
        })
        .unwrap();
    for i in 0..20u8 {
        bus.publish_raw("Q", &[i]).unwrap();
    }
    eventually("20 received", || stats_of(&bus, &sub).received == 20);
    while bus.handle_timeout(Duration::from_millis(100)).unwrap() {}
    assert_eq!(*got.lock().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(stats_of(&bus, &sub).dropped_overflow, 15);
}

fn unsubscribe_inside_handler(p: &str) {
    let bus = bus(p);
    let calls = Arc::new(Mutex::new(Vec::new()));
    let other: Arc<Mutex<Option<nerve_bus::Subscription>>> = Arc::new(Mutex::new(None));
    let me: Arc<Mutex<Option<nerve_bus::Subscription>>> = Arc::new(Mutex::new(None));
    let (c1, o1, m1) = (Arc::clone(&calls), Arc::clone(&other), Arc::clone(&me));
    let first = bus
        .subscribe_raw("U", move |_| {
            c1.lock().unwrap().push("first");
            // Remove the later subscription and then this one, from inside this handler.
            o1.lock().unwrap().as_ref().unwrap().unsubscribe().unwrap();
            m1.lock().unwrap().as_ref().unwrap().unsubscribe().unwrap();
        })
        .unwrap();
    *me.lock().unwrap() = Some(first.clone());
    let c2 = Arc::clone(&calls);
    let second = bus.subscribe_raw("U", move |_| c2.lock().unwrap().push("second")).unwrap();
    *other.lock().unwrap() = Some(second.clone());
    bus.publish_raw("U", b"1").unwrap();
    bus.publish_raw("U", b"2").unwrap();
    eventually("queued", || bus.queue_len(&first).map_or(true, |n| n == 2));
    while bus.handle_timeout(Duration::from_millis(200)).unwrap() {}
    assert_eq!(*calls.lock().unwrap(), ["first"], "the removed subscription is skipped for the same message");
    assert!(matches!(bus.unsubscribe(&second), Err(BusError::NotSubscribed)));
}

fn handle_inside_handler_is_an_error(p: &str) {
    let bus = bus(p);
    let result = Arc::new(Mutex::new(None));
    let (b, r) = (bus.clone(), Arc::clone(&result));
    bus.subscribe_raw("H", move |_| *r.lock().unwrap() = Some(b.handle_timeout(Duration::ZERO).map(|_| ()))).unwrap();
    bus.publish_raw("H", b"").unwrap();
    assert!(bus.handle_timeout(Duration::from_secs(5)).unwrap());
    assert!(matches!(result.lock().unwrap().take(), Some(Err(BusError::HandleInsideHandler))));
}

fn readable(bus: &Bus) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let fd = bus.as_fd();
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).unwrap() == 1
}

fn handle_timeout_and_fileno(p: &str) {
    let bus = bus(p);
    let sub = bus.subscribe_raw("F", |_| {}).unwrap();
    assert!(bus.fileno().unwrap() >= 0);
    assert!(!bus.handle_timeout(Duration::from_millis(20)).unwrap(), "nothing to handle");
    assert!(!readable(&bus));
    bus.publish_raw("F", b"a").unwrap();
    bus.publish_raw("F", b"b").unwrap();
    eventually("fd readable", || readable(&bus));
    eventually("both queued", || stats_of(&bus, &sub).received == 2);
    assert!(bus.handle_timeout(Duration::ZERO).unwrap());
    assert!(readable(&bus), "still one waiting");
    assert!(bus.handle_timeout(Duration::ZERO).unwrap());
    assert!(!readable(&bus), "drained");
}

fn subscriber_queue_and_stream(p: &str) {
    let bus = bus(p);
    let s = bus.subscriber("S.*", 10, Overflow::DropOldest).unwrap();
    bus.publish_raw("S1", b"one").unwrap();
    let m = s.recv_timeout(Duration::from_secs(5)).expect("a message");
    assert_eq!((m.channel.as_str(), m.data.as_slice()), ("S1", &b"one"[..]));
    assert!(s.recv_timeout(Duration::from_millis(20)).is_none());
    let stream = s.into_stream();
    let b = bus.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        b.publish_raw("S2", b"two").unwrap();
    });
    let got = futures_executor::block_on(async {
        let mut stream = std::pin::pin!(stream);
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(stream.as_mut(), cx)).await
    });
    t.join().unwrap();
    assert_eq!(got.unwrap().channel, "S2");
}

fn typed_delivery_rejects_other_types(p: &str) {
    let bus = bus(p);
    let got: Arc<Mutex<Vec<Result<Point, TypeError>>>> = Arc::new(Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    let sub = bus.subscribe::<Point>("PT", move |_, m| g.lock().unwrap().push(m)).unwrap();
    bus.publish("PT", &Point { x: 3, y: -4 }).unwrap();
    bus.publish_raw("PT", &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2]).unwrap();
    bus.publish_raw("PT", &Point::FINGERPRINT.to_be_bytes()).unwrap();
    eventually("3 received", || stats_of(&bus, &sub).received == 3);
    while bus.handle_timeout(Duration::from_millis(100)).unwrap() {}
    let got = got.lock().unwrap();
    assert_eq!(got[0], Ok(Point { x: 3, y: -4 }));
    assert!(matches!(got[1], Err(TypeError::WrongType { found: Some(0xdead_beef_0000_0000), .. })));
    assert!(matches!(got[2], Err(TypeError::Decode(_))));
    assert_eq!(stats_of(&bus, &sub).decode_errors, 2);
}

fn background_dispatcher(p: &str) {
    let bus = bus(p);
    let got = Arc::new(Mutex::new(0));
    let g = Arc::clone(&got);
    bus.subscribe_raw("D", move |_: &Received| *g.lock().unwrap() += 1).unwrap();
    let dispatcher = bus.spawn_dispatcher().unwrap();
    for _ in 0..5 {
        bus.publish_raw("D", b"").unwrap();
    }
    eventually("5 handled by the background thread", || *got.lock().unwrap() == 5);
    drop(dispatcher);
}

fn late_subscriber_sees_only_newer_messages(p: &str) {
    let bus = bus(p);
    let early = bus.subscriber("L", 0, Overflow::DropOldest).unwrap();
    bus.publish_raw("L", b"old").unwrap();
    early.recv_timeout(Duration::from_secs(5)).expect("old arrives");
    let late = bus.subscriber("L", 0, Overflow::DropOldest).unwrap();
    bus.publish_raw("L", b"new").unwrap();
    assert_eq!(late.recv_timeout(Duration::from_secs(5)).unwrap().data, b"new");
    assert!(late.try_recv().is_none());
}

fn dispatcher_thread_and_queued_messages(p: &str) {
    let bus = bus(p);
    let seen: Arc<Mutex<Vec<(u8, String)>>> = Arc::default();
    let s = Arc::clone(&seen);
    let sub = bus
        .subscribe_raw("T", move |m| {
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            s.lock().unwrap().push((m.data[0], name));
        })
        .unwrap();
    // One message waits in the queue before any dispatcher exists: it must not be stranded.
    bus.publish_raw("T", &[0]).unwrap();
    eventually("queued", || stats_of(&bus, &sub).received == 1);
    let dispatcher = bus.spawn_dispatcher().unwrap();
    bus.publish_raw("T", &[1]).unwrap();
    eventually("both handled", || seen.lock().unwrap().len() == 2);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.iter().map(|(b, _)| *b).collect::<Vec<_>>(), [0, 1], "in arrival order");
    // On transports with a receive thread, callbacks run on it (no hand-off); elsewhere on the dispatch thread.
    let expected = match p {
        "udpm" => "nerve-udpm-rx",
        "mpudpm" => "nerve-mpudpm-rx",
        // shm: a channel's receive thread, or the thread that watches the directory for new channels.
        "shm" => "nerve-shm-",
        _ => "nerve-dispatch",
    };
    assert_eq!(dispatcher.is_inline(), matches!(p, "udpm" | "mpudpm" | "shm"));
    assert!(seen.iter().all(|(_, t)| t.starts_with(expected)), "{seen:?}");
    drop(dispatcher);
}

fn fd_asked_for_late_is_readable_at_once(p: &str) {
    // The bus keeps the descriptor up to date only once someone has asked for it; asking while a message waits
    // must make it readable at once.
    let bus = bus(p);
    let sub = bus.subscribe_raw("L", |_| {}).unwrap();
    bus.publish_raw("L", b"x").unwrap();
    eventually("queued", || stats_of(&bus, &sub).received == 1);
    assert!(readable(&bus), "readable as soon as it is asked for");
    assert!(bus.handle_timeout(Duration::ZERO).unwrap());
    assert!(!readable(&bus));
    bus.publish_raw("L", b"y").unwrap();
    eventually("readable again", || readable(&bus));
}
