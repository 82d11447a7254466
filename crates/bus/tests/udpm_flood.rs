//! A receive thread that runs callbacks (`spawn_dispatcher` on udpm) keeps running them while a flood keeps its
//! socket full: it hands over at most `DRAIN_TURN` messages between two callbacks, instead of reading until the
//! socket is empty (which a flood never lets happen: the callbacks waited the whole flood out).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::eventually;
use nerve_bus::provider::DRAIN_TURN;
use nerve_bus::{Bus, Overflow};

#[test]
fn callbacks_run_between_turns_of_a_socket_that_stays_full() {
    let port = 24000 + (std::process::id() % 800) as u16 * 10 + 8;
    let url = format!("udpm://239.255.76.69:{port}?ttl=0&recv_buf_size=16777216");
    let rx_bus = Bus::new(Some(&url)).unwrap();
    let tx_bus = Bus::new(Some(&url)).unwrap();
    // Counts every message as the receive thread hands it over (a queue nobody takes from).
    let read = Arc::new(rx_bus.subscriber("W", 0, Overflow::DropOldest).unwrap());
    let release = Arc::new(AtomicBool::new(false));
    let read_at_callback = Arc::new(Mutex::new(Vec::new()));
    let (r, seen, counter) = (Arc::clone(&release), Arc::clone(&read_at_callback), Arc::clone(&read));
    rx_bus
        .subscribe_with("W", 0, Overflow::DropOldest, move |_| {
            // The first callback holds the receive thread until the flood sits in the socket.
            while !r.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            seen.lock().unwrap().push(counter.stats().received);
            Ok(())
        })
        .unwrap();
    let _dispatcher = rx_bus.spawn_dispatcher().unwrap();
    tx_bus.publish_raw("W", b"first").unwrap();
    eventually("the first message is in the handler", || read.stats().received >= 1);
    const FLOOD: u64 = 2000;
    for _ in 1..FLOOD {
        tx_bus.publish_raw("W", &[1u8; 64]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    release.store(true, Ordering::Release);
    eventually("every message handled", || read_at_callback.lock().unwrap().len() as u64 == FLOOD);
    let seen = read_at_callback.lock().unwrap();
    // The second callback ran after one turn of reading, not after the whole flood had been read.
    assert!(seen[1] <= 1 + DRAIN_TURN as u64 + 1, "read before the second callback: {}", seen[1]);
    assert_eq!(rx_bus.provider_stats().kernel_dropped, 0, "the 16 MB buffer held the flood");
}
