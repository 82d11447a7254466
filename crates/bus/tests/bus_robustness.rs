//! What bindings and bridges rely on: a message's origin reaches its subscriptions; a handler that panics leaves the
//! bus fully usable (on `handle()`, a `Dispatcher` on a thread or on the receive thread, an `Executor`) and is
//! reported as an error; errors a transport meets after start reach the user through `handle()` and
//! `Bus::health()`. A hand-made provider plays the transport, so each event happens exactly when the test says.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::provider::{Incoming, Provider, ProviderStats, Sink};
use nerve_bus::{Bus, BusError, Executor, Origin, Overflow, Received};

/// A transport the test drives: what it "receives" is whatever the test hands to the sink it kept.
#[derive(Clone, Default)]
struct Manual {
    sink: Arc<Mutex<Option<Arc<dyn Sink>>>>,
    receive_thread: bool,
    published: Arc<AtomicU64>,
}

impl Manual {
    fn sink(&self) -> Arc<dyn Sink> {
        self.sink.lock().unwrap().clone().expect("the bus started its provider")
    }

    /// A message from "another process".
    fn arrive(&self, channel: &str, data: &[u8]) {
        let sink = self.sink();
        sink.deliver(Incoming { channel: channel.into(), data: data.to_vec(), recv_utime: 1 });
        if self.receive_thread {
            // As a receive thread does after handing over what it had: a dispatcher's turn runs here.
            while sink.drained() {}
        }
    }
}

impl Provider for Manual {
    fn name(&self) -> &'static str {
        "manual"
    }
    fn publish(&self, _channel: &str, _data: &[u8]) -> Result<(), BusError> {
        self.published.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        *self.sink.lock().unwrap() = Some(sink);
        Ok(())
    }
    fn stats(&self) -> ProviderStats {
        ProviderStats { published: self.published.load(Ordering::Relaxed), ..ProviderStats::default() }
    }
    fn has_receive_thread(&self) -> bool {
        self.receive_thread
    }
}

fn manual_bus(receive_thread: bool) -> (Bus, Manual) {
    let m = Manual { receive_thread, ..Manual::default() };
    (Bus::with_provider(Box::new(m.clone())), m)
}

fn io_error(what: &str) -> BusError {
    BusError::Transport { provider: "manual", source: Box::new(std::io::Error::other(what.to_owned())) }
}

/// A message's bytes and origin, as a subscription saw them.
type Seen = (Vec<u8>, Origin);

#[test]
fn every_message_carries_its_origin() {
    let (bus, transport) = manual_bus(false);
    let got: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let g = Arc::clone(&got);
    bus.subscribe_raw("C", move |m: &Received| g.lock().unwrap().push((m.data.clone(), m.origin))).unwrap();
    let queue = bus.subscriber("C", 0, Overflow::DropOldest).unwrap();
    bus.publish_raw("C", b"mine").unwrap();
    transport.arrive("C", b"theirs");
    bus.publish_raw_batch(&[("C", b"batch")]).unwrap();
    while bus.handle_timeout(Duration::ZERO).unwrap() {}
    let expected = [
        (b"mine".to_vec(), Origin::Local),
        (b"theirs".to_vec(), Origin::Transport),
        (b"batch".to_vec(), Origin::Local),
    ];
    assert_eq!(*got.lock().unwrap(), expected);
    let queued: Vec<Seen> = std::iter::from_fn(|| queue.try_recv()).map(|m| (m.data.clone(), m.origin)).collect();
    assert_eq!(queued, expected);
    assert_eq!(transport.published.load(Ordering::Relaxed), 2, "what was published locally went out");
}

#[test]
fn a_bridge_forwards_only_what_came_from_the_other_side() {
    // Two transports joined by a bridge in this process: each side's foreign messages go to the other bus, which
    // sends them out; what the bridge publishes is Local there, so it is never forwarded back.
    let (left, left_net) = manual_bus(false);
    let (right, right_net) = manual_bus(false);
    for (from, to) in [(&left, &right), (&right, &left)] {
        let to = to.clone();
        from.subscribe_raw(".*", move |m| {
            if m.origin == Origin::Transport {
                to.publish_raw(&m.channel, &m.data).unwrap();
            }
        })
        .unwrap();
    }
    left_net.arrive("X", b"1");
    right_net.arrive("Y", b"2");
    for _ in 0..4 {
        left.handle_timeout(Duration::ZERO).unwrap();
        right.handle_timeout(Duration::ZERO).unwrap();
    }
    assert_eq!(right_net.published.load(Ordering::Relaxed), 1, "X crossed once");
    assert_eq!(left_net.published.load(Ordering::Relaxed), 1, "Y crossed once");
}

/// A subscription whose handler panics on the message "boom"; it counts what it handled.
fn panicky(bus: &Bus) -> Arc<AtomicU64> {
    let handled = Arc::new(AtomicU64::new(0));
    let h = Arc::clone(&handled);
    bus.subscribe_raw("P", move |m| {
        if m.data == b"boom" {
            panic!("handler exploded");
        }
        h.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    handled
}

fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_panicking_handler_leaves_handle_usable_on_every_thread() {
    let bus = Bus::new(Some("memq://")).unwrap();
    let handled = panicky(&bus);
    let other = Arc::new(AtomicU64::new(0));
    let o = Arc::clone(&other);
    bus.subscribe_raw("P", move |_| {
        o.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    bus.publish_raw("P", b"boom").unwrap();
    // As a C or Python binding calls it: under catch_unwind. Nothing unwinds out; the panic is an error.
    let outcome = catch_unwind(AssertUnwindSafe(|| bus.handle_timeout(Duration::from_secs(1))));
    match outcome {
        Ok(Err(BusError::HandlerPanicked { subscription, message })) => {
            assert_eq!(subscription, "P");
            assert!(message.contains("handler exploded"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(other.load(Ordering::Relaxed), 1, "the message's other handler still ran");
    assert_eq!(bus.health().handler_panics, 1);
    // The same thread: handle() works and is not "inside a handler".
    bus.publish_raw("P", b"ok").unwrap();
    assert!(bus.handle_timeout(Duration::from_secs(1)).unwrap());
    assert_eq!(handled.load(Ordering::Relaxed), 1);
    // Another thread, and the panicking subscription again, then more.
    let b = bus.clone();
    std::thread::spawn(move || {
        b.publish_raw("P", b"boom").unwrap();
        assert!(matches!(b.handle_timeout(Duration::from_secs(1)), Err(BusError::HandlerPanicked { .. })));
        b.publish_raw("P", b"ok").unwrap();
        assert!(b.handle_timeout(Duration::from_secs(1)).unwrap());
    })
    .join()
    .unwrap();
    assert_eq!(handled.load(Ordering::Relaxed), 2);
    // A dispatcher thread (memq has no receive thread) keeps going past a panic; the panic is in the health.
    let dispatcher = bus.spawn_dispatcher().unwrap();
    assert!(!dispatcher.is_inline());
    bus.publish_raw("P", b"boom").unwrap();
    bus.publish_raw("P", b"ok").unwrap();
    eventually("the dispatcher handled the message after the panic", || handled.load(Ordering::Relaxed) == 3);
    assert_eq!(bus.health().handler_panics, 3);
    drop(dispatcher);
    bus.publish_raw("P", b"ok").unwrap();
    assert!(bus.handle_timeout(Duration::from_secs(1)).unwrap());
    assert_eq!(handled.load(Ordering::Relaxed), 4);
}

#[test]
fn a_panicking_handler_on_the_receive_thread_does_not_stop_it() {
    let (bus, transport) = manual_bus(true);
    let handled = panicky(&bus);
    let dispatcher = bus.spawn_dispatcher().unwrap();
    assert!(dispatcher.is_inline());
    // The "receive thread" is this one: the dispatcher's turns run inside `arrive`, and must come back.
    transport.arrive("P", b"boom");
    transport.arrive("P", b"ok");
    assert_eq!(handled.load(Ordering::Relaxed), 1);
    let health = bus.health();
    assert_eq!(health.handler_panics, 1);
    assert!(health.last_error.unwrap().contains("handler exploded"));
    drop(dispatcher);
    transport.arrive("P", b"ok");
    assert!(bus.handle_timeout(Duration::from_secs(1)).unwrap(), "handle() works after the inline panic");
    assert_eq!(handled.load(Ordering::Relaxed), 2);
}

#[test]
fn a_panicking_handler_on_an_executor_does_not_stop_it() {
    let bus = Bus::new(Some("memq://")).unwrap();
    let exec = Executor::new(2).unwrap();
    let handled = Arc::new(AtomicU64::new(0));
    let h = Arc::clone(&handled);
    let qos = nerve_bus::Qos::keep_all(100);
    exec.subscribe_owned::<Num>(&bus, "N", qos, move |n| {
        if n.0 == 0 {
            panic!("zero");
        }
        h.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    let publisher = bus.publisher::<Num>("N", qos).unwrap();
    for n in [0, 1, 0, 2] {
        publisher.publish(Num(n)).unwrap();
    }
    eventually("both good messages handled", || handled.load(Ordering::Relaxed) == 2);
    eventually("both panics counted", || bus.health().handler_panics == 2);
}

#[test]
fn transport_errors_after_start_reach_handle_and_health() {
    let (bus, transport) = manual_bus(false);
    bus.subscribe_raw("C", |_| {}).unwrap();
    assert_eq!(bus.health(), nerve_bus::Health::default());
    transport.sink().report(io_error("a channel could not be read"));
    let e = bus.handle_timeout(Duration::from_secs(1)).unwrap_err();
    assert!(matches!(e, BusError::Transport { provider: "manual", .. }), "{e:?}");
    assert!(!bus.handle_timeout(Duration::from_millis(10)).unwrap(), "each error is returned once");
    let health = bus.health();
    assert_eq!(health.transport_errors, 1);
    assert!(!health.receive_stopped);
    assert!(health.last_error.as_deref().unwrap().contains("a channel could not be read"), "{health:?}");

    // A receive thread that dies wakes a handle() that waits with no timeout, and says so in the health.
    let b = bus.clone();
    let waiter = std::thread::spawn(move || b.handle());
    std::thread::sleep(Duration::from_millis(50));
    transport.sink().receive_stopped(io_error("socket gone"));
    let e = waiter.join().unwrap().unwrap_err();
    assert!(std::error::Error::source(&e).unwrap().to_string().contains("socket gone"), "{e:?}");
    assert!(bus.health().receive_stopped);
    assert_eq!(bus.health().transport_errors, 2);
    // Messages still queued before the error are still handled.
    transport.arrive("C", b"late");
    assert!(bus.handle_timeout(Duration::from_secs(1)).unwrap());
}

/// `struct num_t { int32_t n; }`, by hand.
#[derive(Debug, Clone, PartialEq)]
struct Num(i32);

impl nerve_codec::Encode for Num {
    fn encoded_body_size(&self) -> usize {
        4
    }
    fn encode_body(&self, w: &mut nerve_codec::Writer<'_>) -> Result<(), nerve_codec::EncodeError> {
        w.put_i32(self.0)
    }
}

impl nerve_codec::Decode for Num {
    fn decode_body(r: &mut nerve_codec::Reader<'_>) -> Result<Self, nerve_codec::DecodeError> {
        Ok(Num(r.get_i32()?))
    }
}

impl nerve_codec::Message for Num {
    const FINGERPRINT: u64 = 0x0123_4567_89ab_cdef;
    const TYPE_NAME: &'static str = "test.num_t";
}
