//! Seed 003, "Problems when both inter and intra-process communication are needed": a process whose udpm bus has
//! subscriptions inside it (typed owned, typed shared, byte-level) and a subscriber in another process delivers each
//! publication inside directly and outside through the network, once each. Multicast loops the datagrams back to
//! the publishing process; the provider recognises them as its own and drops them (counted), so no subscription of
//! the process gets a second copy.
//!
//! The other process is this test binary again, running the ignored test `child_subscriber`.

mod common;

use std::time::Duration;

use common::{eventually, udpm_url, Counted};
use nerve_bus::{Bus, Overflow, Qos};

const COUNT: usize = 20;
const CHILD_ENV: &str = "NERVE_NODUP_CHILD_URL";

/// The other process: a typed subscription (remote messages arrive decoded) that reports what it got.
#[test]
#[ignore = "run by inside_once_outside_once as another process"]
fn child_subscriber() {
    let Ok(url) = std::env::var(CHILD_ENV) else { return };
    let bus = Bus::new(Some(&url)).unwrap();
    let sub = bus.subscriber_shared::<Counted>("DUP", Qos::keep_last(1000)).unwrap();
    println!("CHILD ready");
    let mut got = Vec::new();
    // Until all have come, then a while longer for any duplicate; bounded either way.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while got.len() < COUNT && std::time::Instant::now() < end {
        if let Some(m) = sub.recv_timeout(Duration::from_millis(100)) {
            got.push(m.data[0]);
        }
    }
    while let Some(m) = sub.recv_timeout(Duration::from_millis(300)) {
        got.push(m.data[0]);
    }
    println!("CHILD got {}", got.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(","));
}

#[test]
fn inside_once_outside_once() {
    let url = udpm_url(5);
    let (mut child, rx) = common::spawn_child_test("child_subscriber", CHILD_ENV, &url);
    let line = rx.recv_timeout(Duration::from_secs(20)).expect("the child is ready");
    assert_eq!(line, "ready");

    let bus = Bus::new(Some(&url)).unwrap();
    let owned = bus.subscriber_owned::<Counted>("DUP", Qos::keep_last(1000)).unwrap();
    let shared = bus.subscriber_shared::<Counted>("DUP", Qos::keep_last(1000)).unwrap();
    let raw = bus.subscriber("DUP", 1000, Overflow::DropOldest).unwrap();
    let publisher = bus.publisher::<Counted>("DUP", Qos::default()).unwrap();
    for i in 0..COUNT {
        publisher.publish(Counted::new(i as u8, 64)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    // Every message came back over multicast loopback and was recognised as ours.
    eventually("our own datagrams came back and were dropped", || bus.provider_stats().own_dropped >= COUNT as u64);
    std::thread::sleep(Duration::from_millis(200));

    let expected: Vec<u8> = (0..COUNT as u8).collect();
    let owned: Vec<u8> = std::iter::from_fn(|| owned.try_recv()).map(|m| m.data[0]).collect();
    let shared: Vec<u8> = std::iter::from_fn(|| shared.try_recv()).map(|m| m.data[0]).collect();
    let raw: Vec<u8> = std::iter::from_fn(|| raw.try_recv()).map(|m| Counted::decode_tag(&m.data)).collect();
    assert_eq!(owned, expected, "typed owned, inside: once each");
    assert_eq!(shared, expected, "typed shared, inside: once each");
    assert_eq!(raw, expected, "byte-level, inside: once each");
    assert_eq!(bus.provider_stats().published, COUNT as u64, "one send per publication");

    let line = rx.recv_timeout(Duration::from_secs(20)).expect("the child reports");
    let _ = child.wait();
    let child_got: Vec<u8> =
        line.strip_prefix("got ").unwrap().split(',').filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    assert_eq!(child_got, expected, "outside: once each, through the network");
}

trait Tag {
    fn decode_tag(data: &[u8]) -> u8;
}

impl Tag for Counted {
    fn decode_tag(data: &[u8]) -> u8 {
        use nerve_codec::Message;
        Counted::decode(data).expect("our own bytes decode").data[0]
    }
}
