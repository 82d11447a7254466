//! The provider conformance suite (feature `test-support`): one behavioural test per function, each given a
//! constructor of fresh buses over the provider under test, and [`conformance_suite!`](crate::conformance_suite),
//! which makes them `#[test]`s. A provider crate runs it over its own provider, as nerve-bus does over every
//! built-in one (`tests/conformance.rs`):
//!
//! ```ignore
//! nerve_bus::conformance_suite!(zenoh, || nerve_bus::Bus::new(Some("zenoh://?mode=peer")).unwrap());
//! ```
//!
//! What it checks is the bus as a user sees it over that provider: anchored patterns, per-subscription drop-oldest
//! queues, unsubscribe inside handlers, handle / handle_timeout / fileno, queue subscribers and async streams, typed
//! delivery with wrong-type detection, dispatchers; and that the provider never hands the bus back its own
//! publications (the bus delivered them in-process already, as `Origin::Local`). Each constructor
//! call must give a bus that hears no other test's traffic (a port, directory or key of its own).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_codec::{Decode, DecodeError, Encode, EncodeError, Message, Reader, Writer};

use crate::{Bus, BusError, Overflow, Received, SubscriptionStats, TypeError};

/// Makes one `#[test]` per conformance test, in a module `$name`, each over buses from `$make` (an expression of a
/// type that implements `Fn() -> Bus`).
#[macro_export]
macro_rules! conformance_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn own_publications_are_local_and_come_once() {
                $crate::conformance::own_publications_are_local_and_come_once(&$make)
            }
            #[test]
            fn patterns_match_whole_names() {
                $crate::conformance::patterns_match_whole_names(&$make)
            }
            #[test]
            fn full_queue_drops_oldest() {
                $crate::conformance::full_queue_drops_oldest(&$make)
            }
            #[test]
            fn drop_newest_is_an_option() {
                $crate::conformance::drop_newest_is_an_option(&$make)
            }
            #[test]
            fn unsubscribe_inside_handler() {
                $crate::conformance::unsubscribe_inside_handler(&$make)
            }
            #[test]
            fn handle_inside_handler_is_an_error() {
                $crate::conformance::handle_inside_handler_is_an_error(&$make)
            }
            #[test]
            fn handle_timeout_and_fileno() {
                $crate::conformance::handle_timeout_and_fileno(&$make)
            }
            #[test]
            fn subscriber_queue_and_stream() {
                $crate::conformance::subscriber_queue_and_stream(&$make)
            }
            #[test]
            fn typed_delivery_rejects_other_types() {
                $crate::conformance::typed_delivery_rejects_other_types(&$make)
            }
            #[test]
            fn background_dispatcher() {
                $crate::conformance::background_dispatcher(&$make)
            }
            #[test]
            fn a_handler_may_drop_its_dispatcher() {
                $crate::conformance::a_handler_may_drop_its_dispatcher(&$make)
            }
            #[test]
            fn late_subscriber_sees_only_newer_messages() {
                $crate::conformance::late_subscriber_sees_only_newer_messages(&$make)
            }
            #[test]
            fn dispatcher_thread_and_queued_messages() {
                $crate::conformance::dispatcher_thread_and_queued_messages(&$make)
            }
            #[test]
            fn fd_asked_for_late_is_readable_at_once() {
                $crate::conformance::fd_asked_for_late_is_readable_at_once(&$make)
            }
        }
    };
}

/// Waits (bounded) until `f` holds: udpm delivers asynchronously.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn stats_of(bus: &Bus, sub: &crate::Subscription) -> SubscriptionStats {
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

/// Conformance: what a bus publishes reaches its own subscriptions once, as `Origin::Local`: the provider never
/// hands it back (which would be a second copy, and to a bridge a message from the other side).
pub fn own_publications_are_local_and_come_once(make: &dyn Fn() -> Bus) {
    let bus = make();
    let queue = bus.subscriber("O", 0, Overflow::DropOldest).unwrap();
    for i in 0..5u8 {
        bus.publish_raw("O", &[i]).unwrap();
    }
    let mut got = Vec::new();
    // Long enough for a transport's loopback to bring any copy back.
    while let Some(m) = queue.recv_timeout(Duration::from_millis(300)) {
        got.push((m.data[0], m.origin));
    }
    let expected: Vec<(u8, crate::Origin)> = (0..5).map(|i| (i, crate::Origin::Local)).collect();
    assert_eq!(got, expected);
}

/// Conformance: see the test's name.
pub fn patterns_match_whole_names(make: &dyn Fn() -> Bus) {
    let bus = make();
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

/// Conformance: see the test's name.
pub fn full_queue_drops_oldest(make: &dyn Fn() -> Bus) {
    let bus = make();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = Arc::clone(&got);
    let sub = bus.subscribe_raw("Q", move |m| g.lock().unwrap().push(m.data[0])).unwrap();
    for i in 0..40u8 {
        bus.publish_raw("Q", &[i]).unwrap();
    }
    eventually("40 received", || stats_of(&bus, &sub).received == 40);
    while bus.handle_timeout(Duration::from_millis(100)).unwrap() {}
    let s = stats_of(&bus, &sub);
    if holds_until_handled(&bus) {
        assert_eq!(*got.lock().unwrap(), (0..40).collect::<Vec<u8>>(), "memq, as LCM's: every message is handled");
        assert_eq!((s.received, s.delivered, s.dropped_overflow), (40, 40, 0));
        return;
    }
    assert_eq!(*got.lock().unwrap(), (10..40).collect::<Vec<u8>>(), "the newest 30 survive");
    assert_eq!((s.received, s.delivered, s.dropped_overflow), (40, 30, 10));
}

/// `memq://` keeps every publication for `handle()` whatever the capacity of a byte-level callback subscription,
/// as LCM's memq does (`Provider::holds_until_handled`); the other providers apply the capacity on arrival.
fn holds_until_handled(bus: &Bus) -> bool {
    bus.provider_name() == "memq"
}

/// Conformance: see the test's name.
pub fn drop_newest_is_an_option(make: &dyn Fn() -> Bus) {
    let bus = make();
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
    if holds_until_handled(&bus) {
        assert_eq!(*got.lock().unwrap(), (0..20).collect::<Vec<u8>>(), "memq, as LCM's: every message is handled");
        assert_eq!(stats_of(&bus, &sub).dropped_overflow, 0);
        return;
    }
    assert_eq!(*got.lock().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(stats_of(&bus, &sub).dropped_overflow, 15);
}

/// Conformance: see the test's name.
pub fn unsubscribe_inside_handler(make: &dyn Fn() -> Bus) {
    let bus = make();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let other: Arc<Mutex<Option<crate::Subscription>>> = Arc::new(Mutex::new(None));
    let me: Arc<Mutex<Option<crate::Subscription>>> = Arc::new(Mutex::new(None));
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

/// Conformance: see the test's name.
pub fn handle_inside_handler_is_an_error(make: &dyn Fn() -> Bus) {
    let bus = make();
    let result = Arc::new(Mutex::new(None));
    let (b, r) = (bus.clone(), Arc::clone(&result));
    bus.subscribe_raw("H", move |_| *r.lock().unwrap() = Some(b.handle_timeout(Duration::ZERO).map(|_| ()))).unwrap();
    bus.publish_raw("H", b"").unwrap();
    assert!(bus.handle_timeout(Duration::from_secs(5)).unwrap());
    assert!(matches!(result.lock().unwrap().take(), Some(Err(BusError::HandleInsideHandler))));
}

/// Whether the bus's descriptor polls readable now.
fn readable(bus: &Bus) -> bool {
    crate::sys::is_readable(bus.as_fd()).expect("polling the bus's descriptor")
}

/// Conformance: see the test's name.
pub fn handle_timeout_and_fileno(make: &dyn Fn() -> Bus) {
    let bus = make();
    let sub = bus.subscribe_raw("F", |_| {}).unwrap();
    bus.fileno().unwrap();
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

/// Conformance: see the test's name.
pub fn subscriber_queue_and_stream(make: &dyn Fn() -> Bus) {
    let bus = make();
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

/// Conformance: see the test's name.
pub fn typed_delivery_rejects_other_types(make: &dyn Fn() -> Bus) {
    let bus = make();
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

/// Conformance: see the test's name.
pub fn background_dispatcher(make: &dyn Fn() -> Bus) {
    let bus = make();
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

/// Conformance: see the test's name. The dispatcher's thread (or the transport's, for an inline one) runs the handler
/// that drops it: it must not try to join itself, and the bus must go on with `handle()`.
pub fn a_handler_may_drop_its_dispatcher(make: &dyn Fn() -> Bus) {
    let bus = make();
    let slot: Arc<Mutex<Option<crate::Dispatcher>>> = Arc::default();
    let got = Arc::new(Mutex::new(0));
    let (s, g) = (Arc::clone(&slot), Arc::clone(&got));
    bus.subscribe_raw("DROP", move |_: &Received| {
        *g.lock().unwrap() += 1;
        drop(s.lock().unwrap().take());
    })
    .unwrap();
    *slot.lock().unwrap() = Some(bus.spawn_dispatcher().unwrap());
    bus.publish_raw("DROP", b"").unwrap();
    eventually("handled by the dispatcher", || *got.lock().unwrap() == 1);
    assert!(slot.lock().unwrap().is_none());
    assert_eq!(bus.health().handler_panics, 0, "{:?}", bus.health().last_error);
    // No dispatcher now: the next message waits for handle().
    bus.publish_raw("DROP", b"").unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while *got.lock().unwrap() < 2 && Instant::now() < end {
        bus.handle_timeout(Duration::from_millis(100)).unwrap();
    }
    assert_eq!(*got.lock().unwrap(), 2);
}

/// Conformance: see the test's name.
pub fn late_subscriber_sees_only_newer_messages(make: &dyn Fn() -> Bus) {
    let bus = make();
    let early = bus.subscriber("L", 0, Overflow::DropOldest).unwrap();
    bus.publish_raw("L", b"old").unwrap();
    early.recv_timeout(Duration::from_secs(5)).expect("old arrives");
    let late = bus.subscriber("L", 0, Overflow::DropOldest).unwrap();
    bus.publish_raw("L", b"new").unwrap();
    assert_eq!(late.recv_timeout(Duration::from_secs(5)).unwrap().data, b"new");
    assert!(late.try_recv().is_none());
}

/// Conformance: see the test's name.
pub fn dispatcher_thread_and_queued_messages(make: &dyn Fn() -> Bus) {
    let bus = make();
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
    // On a transport with a receive thread, callbacks run on it (no hand-off); elsewhere on the dispatch thread.
    let on_dispatch_thread = seen.iter().all(|(_, t)| t == "nerve-dispatch");
    assert_eq!(on_dispatch_thread, !dispatcher.is_inline(), "{seen:?}");
    let here = std::thread::current().name().map(str::to_owned).unwrap_or_default();
    assert!(seen.iter().all(|(_, t)| *t != here), "callbacks ran on the test's thread: {seen:?}");
    drop(dispatcher);
}

/// Conformance: see the test's name.
pub fn fd_asked_for_late_is_readable_at_once(make: &dyn Fn() -> Bus) {
    // The bus keeps the descriptor up to date only once someone has asked for it; asking while a message waits
    // must make it readable at once.
    let bus = make();
    let sub = bus.subscribe_raw("L", |_| {}).unwrap();
    bus.publish_raw("L", b"x").unwrap();
    eventually("queued", || stats_of(&bus, &sub).received == 1);
    assert!(readable(&bus), "readable as soon as it is asked for");
    assert!(bus.handle_timeout(Duration::ZERO).unwrap());
    assert!(!readable(&bus));
    bus.publish_raw("L", b"y").unwrap();
    eventually("readable again", || readable(&bus));
}
