//! A `handle()` loop on udpm reads the socket itself (`Provider::receive_here`): the receive thread is not woken per
//! message while a caller waits in `handle()`, the caller still hears its own process's publications at once, and a
//! program that stops calling `handle()` has its messages queued by the receive thread again (with its
//! subscriptions' capacity and overflow), as before.
//!
//! The tests run one at a time: the first counts the context switches of the process's one `nerve-udpm-rx` thread.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::eventually;
use nerve_bus::{Bus, Overflow};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn url(offset: u16) -> String {
    let port = 25000 + (std::process::id() % 800) as u16 * 10 + offset;
    format!("udpm://239.255.76.71:{port}?ttl=0&recv_buf_size=4194304")
}

/// The voluntary context switches of every thread of this process named `name` (each sleep that ended is one).
fn voluntary_switches(name: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let n: Option<u64> =
            status.lines().find_map(|l| l.strip_prefix("voluntary_ctxt_switches:")).map(|v| v.trim().parse().unwrap());
        out.extend(n);
    }
    out
}

#[test]
fn the_receive_thread_is_not_woken_per_message_while_a_caller_waits_in_handle() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let rx_bus = Bus::new(Some(&url(0))).unwrap();
    let tx_bus = Bus::new(Some(&url(0))).unwrap();
    let got = Arc::new(AtomicU64::new(0));
    let g = Arc::clone(&got);
    let _sub = rx_bus
        .subscribe_raw("H", move |_| {
            g.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    // Started: the receive thread exists from here on.
    assert!(!rx_bus.handle_timeout(Duration::from_millis(1)).unwrap());
    let before = voluntary_switches("nerve-udpm-rx");
    assert_eq!(before.len(), 1, "one udpm receive thread in this process");
    const SENT: u64 = 1000;
    let sender = std::thread::spawn(move || {
        let start = Instant::now();
        for i in 0..SENT {
            // One every 500 us: each one finds both threads asleep.
            while start.elapsed() < Duration::from_micros(500 * i) {
                std::thread::sleep(Duration::from_micros(100));
            }
            tx_bus.publish_raw("H", &i.to_le_bytes()).unwrap();
        }
    });
    let end = Instant::now() + Duration::from_secs(20);
    while got.load(Ordering::Relaxed) < SENT && Instant::now() < end {
        rx_bus.handle_timeout(Duration::from_millis(200)).unwrap();
    }
    sender.join().unwrap();
    let after = voluntary_switches("nerve-udpm-rx");
    assert_eq!(got.load(Ordering::Relaxed), SENT, "every message handled");
    // Woken per message, the thread would sleep and wake about SENT times; standing aside it wakes only to look
    // whether callers still come (every 10 ms: about 50 times in the half second the messages take).
    let woken = after[0] - before[0];
    assert!(woken < SENT / 4, "the receive thread was woken {woken} times for {SENT} messages");
}

#[test]
fn a_caller_reading_the_socket_hears_its_own_process_publish_at_once() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let bus = Bus::new(Some(&url(2))).unwrap();
    // When each publication was made, and how long after it its callback ran.
    let published = Arc::new(Mutex::new(Instant::now()));
    let delays = Arc::new(Mutex::new(Vec::new()));
    let (p, d) = (Arc::clone(&published), Arc::clone(&delays));
    let _sub = bus
        .subscribe_raw("OWN", move |_| {
            let since = p.lock().unwrap().elapsed();
            d.lock().unwrap().push(since);
        })
        .unwrap();
    for round in 0..20 {
        let (publisher, stamp) = (bus.clone(), Arc::clone(&published));
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(15));
            let mut at = stamp.lock().unwrap();
            *at = Instant::now();
            publisher.publish_raw("OWN", b"mine").unwrap();
        });
        assert!(bus.handle_timeout(Duration::from_secs(2)).unwrap(), "round {round}: nothing handled");
        t.join().unwrap();
    }
    let mut delays = std::mem::take(&mut *delays.lock().unwrap());
    assert_eq!(delays.len(), 20);
    delays.sort();
    // A caller that waited out its read (100 ms at a time) instead of looking at the queue would take most of 100 ms
    // after each publication; the median leaves room for a loaded machine's hiccups.
    let median = delays[delays.len() / 2];
    assert!(
        median < Duration::from_millis(40),
        "a local publication took {median:?} (median) to be handled: {delays:?}"
    );
}

#[test]
fn a_program_that_stops_calling_handle_has_its_messages_queued_again() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let rx_bus = Bus::new(Some(&url(4))).unwrap();
    let tx_bus = Bus::new(Some(&url(4))).unwrap();
    let got = Arc::new(AtomicU64::new(0));
    let g = Arc::clone(&got);
    let sub = rx_bus
        .subscribe_with("Q", 30, Overflow::DropOldest, move |_| {
            g.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    // A handle() loop, long enough for the receive thread to stand aside.
    for i in 0..50u64 {
        tx_bus.publish_raw("Q", &i.to_le_bytes()).unwrap();
        assert!(rx_bus.handle_timeout(Duration::from_secs(2)).unwrap());
        std::thread::sleep(Duration::from_millis(2));
    }
    // Now nobody calls handle(): the receive thread reads again, into the queue of 30 that drops the oldest.
    for i in 0..50u64 {
        tx_bus.publish_raw("Q", &i.to_le_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    eventually("the queue holds the newest 30", || {
        rx_bus.queue_len(&sub).unwrap() == 30 && rx_bus.stats(&sub).unwrap().dropped_overflow == 20
    });
    while rx_bus.handle_timeout(Duration::ZERO).unwrap() {}
    assert_eq!(got.load(Ordering::Relaxed), 80);
}
