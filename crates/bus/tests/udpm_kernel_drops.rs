//! Datagrams the kernel drops on a full socket receive buffer are counted in `ProviderStats::kernel_dropped`, so
//! `nerve spy` and `nerve log` can show a loss that happens below the bus; and as gaps in the sender's sequence
//! numbers (`ProviderStats::unseen`).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::eventually;
use nerve_bus::Bus;

#[test]
fn a_receiver_that_stalls_sees_the_kernel_drops_counted() {
    let port = 24000 + (std::process::id() % 800) as u16 * 10 + 7;
    // The smallest receive buffer the kernel grants: a few datagrams.
    let rx_bus = Bus::new(Some(&format!("udpm://239.255.76.69:{port}?ttl=0&recv_buf_size=1"))).unwrap();
    let tx_bus = Bus::new(Some(&format!("udpm://239.255.76.69:{port}?ttl=0"))).unwrap();
    let release = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicU64::new(0));
    let (r, s) = (Arc::clone(&release), Arc::clone(&seen));
    let sub = rx_bus
        .subscribe_raw("FLOOD|LAST", move |_| {
            // The first message holds the receive thread (callbacks run on it) until the flood is over.
            while !r.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
            s.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    let _dispatcher = rx_bus.spawn_dispatcher().unwrap();
    tx_bus.publish_raw("FLOOD", b"first").unwrap();
    eventually("the first message is in the handler", || rx_bus.stats(&sub).map(|s| s.received).unwrap_or(0) >= 1);
    const FLOOD: u64 = 2000;
    for _ in 1..FLOOD {
        tx_bus.publish_raw("FLOOD", &[1u8; 200]).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    release.store(true, Ordering::Release);
    std::thread::sleep(Duration::from_millis(300));
    // The kernel tells the count with the next datagram read.
    tx_bus.publish_raw("LAST", b"x").unwrap();
    let sent = FLOOD + 1; // the flood and LAST
    eventually("LAST handled", || {
        rx_bus.stats(&sub).map(|s| s.received).unwrap_or(0) > 0 && {
            let st = rx_bus.stats(&sub).unwrap();
            seen.load(Ordering::Relaxed) + st.dropped_overflow + rx_bus.provider_stats().kernel_dropped >= sent
        }
    });
    let kernel = rx_bus.provider_stats().kernel_dropped;
    let handled = seen.load(Ordering::Relaxed);
    assert!(kernel > 0, "a stalled receiver with a tiny buffer lost datagrams in the kernel ({handled} handled)");
    assert!(handled < FLOOD, "{handled} handled of {FLOOD}");
    // Every message is small, from one sender: the ones the kernel dropped are exactly the gaps in its sequence.
    assert_eq!(rx_bus.provider_stats().unseen, Some(kernel));
}
