//! Dispatch of typed subscriptions: on an `Executor`, a slow subscription holds up neither the publisher nor the other
//! subscriptions; each subscription's messages run one at a time and in order; `handle()` runs them on the caller's
//! thread. "Slow" here is a handler blocked on a gate the test opens at the end: nothing is timed.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use common::{eventually, inproc_bus, Counted};
use nerve_bus::{Executor, Qos};

/// A gate handlers wait on until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cond: Condvar,
}

impl Gate {
    /// Waits until opened (at most 10 s, so a failing test cannot leave the executor's thread stuck forever).
    fn wait(&self) {
        let open = self.open.lock().unwrap();
        drop(self.cond.wait_timeout_while(open, Duration::from_secs(10), |open| !*open).unwrap());
    }
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cond.notify_all();
    }
}

#[test]
fn a_slow_subscription_blocks_neither_the_publisher_nor_the_others() {
    let bus = inproc_bus("exec-slow");
    let exec = Executor::new(2).unwrap();
    let gate = Arc::new(Gate::default());
    let slow_seen = Arc::new(Mutex::new(Vec::new()));
    let (g, s) = (Arc::clone(&gate), Arc::clone(&slow_seen));
    let slow = exec
        .subscribe_shared::<Counted>(&bus, "CAM", Qos::keep_last(4), move |m: Arc<Counted>| {
            s.lock().unwrap().push(m.data[0]);
            g.wait();
        })
        .unwrap();
    let fast_seen = Arc::new(Mutex::new(Vec::new()));
    let f = Arc::clone(&fast_seen);
    exec.subscribe_shared::<Counted>(&bus, "CAM", Qos::keep_last(100), move |m: Arc<Counted>| {
        f.lock().unwrap().push(m.data[0])
    })
    .unwrap();
    let publisher = bus.publisher::<Counted>("CAM", Qos::default()).unwrap();

    publisher.publish(Counted::new(0, 8)).unwrap();
    eventually("the slow handler is running (and stuck)", || slow_seen.lock().unwrap().len() == 1);
    // The slow handler holds one executor thread; these publishes return (the test would hang otherwise) and the
    // other subscription receives every one of them on the other thread.
    for i in 1..=20 {
        publisher.publish(Counted::new(i, 8)).unwrap();
    }
    eventually("the fast subscription got all 21", || fast_seen.lock().unwrap().len() == 21);
    assert_eq!(*fast_seen.lock().unwrap(), (0..=20).collect::<Vec<u8>>());
    // The slow one's keep-last(4) ring kept the newest and counted the rest.
    assert_eq!(bus.queue_len(&slow).unwrap(), 4);
    assert_eq!(bus.stats(&slow).unwrap().dropped_overflow, 16);
    gate.open();
    eventually("the slow subscription drained", || slow_seen.lock().unwrap().len() == 5);
    assert_eq!(*slow_seen.lock().unwrap(), [0, 17, 18, 19, 20]);
}

#[test]
fn one_subscription_runs_in_order_and_never_concurrently() {
    let bus = inproc_bus("exec-order");
    let exec = Executor::new(4).unwrap();
    let running = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (r, o, s) = (Arc::clone(&running), Arc::clone(&overlaps), Arc::clone(&seen));
    exec.subscribe_owned::<Counted>(&bus, "SEQ", Qos::keep_all(10_000), move |m: Counted| {
        if r.swap(true, Ordering::AcqRel) {
            o.fetch_add(1, Ordering::Relaxed);
        }
        s.lock().unwrap().push(u16::from_be_bytes([m.data[0], m.data[1]]));
        std::thread::yield_now();
        r.store(false, Ordering::Release);
    })
    .unwrap();
    // Other subscriptions keep the other threads busy meanwhile.
    for _ in 0..3 {
        exec.subscribe_shared::<Counted>(&bus, "SEQ", Qos::keep_all(10_000), |_m: Arc<Counted>| {
            std::thread::yield_now()
        })
        .unwrap();
    }
    let publisher = bus.publisher::<Counted>("SEQ", Qos::default()).unwrap();
    for i in 0..2000u16 {
        publisher.publish(Counted { data: i.to_be_bytes().to_vec() }).unwrap();
    }
    eventually("all 2000 handled", || seen.lock().unwrap().len() == 2000);
    assert_eq!(overlaps.load(Ordering::Relaxed), 0, "the handler never ran on two threads at once");
    assert_eq!(*seen.lock().unwrap(), (0..2000).collect::<Vec<u16>>());
}

#[test]
fn handle_runs_typed_callbacks_on_the_callers_thread() {
    let bus = inproc_bus("exec-handle");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    bus.subscribe_shared::<Counted>("H", Qos::default(), move |m: Arc<Counted>| {
        s.lock().unwrap().push((m.data[0], std::thread::current().id()))
    })
    .unwrap();
    let publisher = bus.publisher::<Counted>("H", Qos::default()).unwrap();
    publisher.publish(Counted::new(1, 1)).unwrap();
    publisher.publish(Counted::new(2, 1)).unwrap();
    assert!(seen.lock().unwrap().is_empty(), "nothing runs until handle()");
    while bus.handle_timeout(Duration::ZERO).unwrap() {}
    let me = std::thread::current().id();
    assert_eq!(*seen.lock().unwrap(), [(1, me), (2, me)]);
}
