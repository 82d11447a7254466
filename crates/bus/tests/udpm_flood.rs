//! A receive thread that runs callbacks (`spawn_dispatcher` on udpm) shares its time between reading and callbacks
//! while a flood keeps its socket full: it hands over at most `DRAIN_TURN` messages between two turns of callbacks,
//! instead of reading until the socket is empty (which a flood never lets happen: the callbacks waited the whole
//! flood out), and a turn of callbacks lasts as long as the reading before it, so cheap callbacks keep up.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::eventually;
use nerve_bus::provider::DRAIN_TURN;
use nerve_bus::{Bus, Overflow};

/// Sends `flood` messages on "W" to a bus whose one callback first holds its receive thread until the flood sits in
/// the socket (16 MB, so that it all fits), and then notes, for each message, how many messages the receive thread
/// had read by then. Returns those counts, in order, once every message has had its callback, and the receiving bus.
fn read_before_each_callback(port_offset: u16, flood: u64) -> (Vec<u64>, Bus) {
    let port = 24000 + (std::process::id() % 800) as u16 * 10 + port_offset;
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
            while !r.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            seen.lock().unwrap().push(counter.stats().received);
            Ok(())
        })
        .unwrap();
    let dispatcher = rx_bus.spawn_dispatcher().unwrap();
    tx_bus.publish_raw("W", b"first").unwrap();
    eventually("the first message is in the handler", || read.stats().received >= 1);
    for _ in 1..flood {
        tx_bus.publish_raw("W", &[1u8; 64]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    release.store(true, Ordering::Release);
    eventually("every message handled", || read_at_callback.lock().unwrap().len() as u64 == flood);
    drop(dispatcher);
    let seen = std::mem::take(&mut *read_at_callback.lock().unwrap());
    assert_eq!(rx_bus.provider_stats().kernel_dropped, 0, "the 16 MB buffer held the flood");
    (seen, rx_bus)
}

#[test]
fn callbacks_run_between_turns_of_a_socket_that_stays_full() {
    let (seen, _bus) = read_before_each_callback(8, 2000);
    // The second callback ran after one turn of reading, not after the whole flood had been read.
    assert!(seen[1] <= 1 + DRAIN_TURN as u64 + 1, "read before the second callback: {}", seen[1]);
}

/// The other half of the split: callbacks that cost less than reading run as long as the reading took, so they keep
/// up with it. With one callback per turn of reading, an unbounded queue fell behind by every turn's messages but
/// one (the echo suite's source, whose callback only notes a time, ran half a millisecond behind its socket).
#[test]
fn cheap_callbacks_keep_up_with_the_reading_of_a_flood() {
    const FLOOD: u64 = 4000;
    let (seen, _bus) = read_before_each_callback(9, FLOOD);
    let most = seen.iter().enumerate().map(|(handled, &read)| read - handled as u64).max().unwrap();
    // One callback per turn would end the flood's reading about FLOOD * 63/64 messages behind; a preempted turn of
    // callbacks ends early, so allow many of those.
    assert!(most < FLOOD / 4, "callbacks fell {most} messages behind the reading");
}
