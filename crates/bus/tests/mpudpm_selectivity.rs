//! What multi-port mode is for: a process subscribed to one channel does not receive (or spend CPU on) the
//! datagrams of channels on other ports, whereas on plain udpm every process receives everything on the group; and
//! it stops receiving a port once no subscription needs it.

use std::time::{Duration, Instant};

use nerve_bus::{Bus, Overflow};

fn flood_and_count(url: &str) -> u64 {
    let subscriber = Bus::new(Some(url)).unwrap();
    let wanted = subscriber.subscriber("WANTED", 1000, Overflow::DropOldest).unwrap();
    let publisher = Bus::new(Some(url)).unwrap();
    for i in 0..200u32 {
        publisher.publish_raw("OTHER_TRAFFIC", &i.to_be_bytes()).unwrap();
    }
    publisher.publish_raw("WANTED", b"x").unwrap();
    assert!(wanted.recv_timeout(Duration::from_secs(5)).is_some(), "the wanted message arrives");
    // Let anything still in flight land before counting.
    let settle = Instant::now() + Duration::from_millis(200);
    while Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Messages read, whether handed to the bus or turned away unopened (plain udpm turns away what no subscription
    // matches, but still has to read it).
    let stats = subscriber.provider_stats();
    stats.received + stats.turned_away
}

#[test]
fn a_subscriber_receives_only_its_ports() {
    let base = 15000 + (std::process::id() % 400) as u16 * 40;
    // "WANTED" and "OTHER_TRAFFIC" hash to different ports of 16 (checked: the test would be void otherwise).
    use nerve_udpm::multiport::port_of;
    assert_ne!(port_of("WANTED", base, 16), port_of("OTHER_TRAFFIC", base, 16));

    let on_udpm = flood_and_count(&format!("udpm://239.255.76.72:{base}?ttl=0&recv_buf_size=2097152"));
    let on_mpudpm =
        flood_and_count(&format!("mpudpm://239.255.76.72:{}?ttl=0&nports=16&recv_buf_size=2097152", base + 20));
    assert!(on_udpm >= 201, "plain udpm reads every message on the group in every process ({on_udpm})");
    assert!(on_mpudpm < 10, "mpudpm hands over only the subscribed port's messages and announcements ({on_mpudpm})");
}

#[test]
fn unsubscribing_closes_the_ports_no_subscription_needs() {
    let start = 15000 + (std::process::id() % 400) as u16 * 40 + 30;
    use nerve_udpm::multiport::port_of;
    // A channel on a port of its own (the start port is always listened on: announcements come there).
    let ch = (0..).map(|i| format!("WANTED{i}")).find(|c| port_of(c, start, 8) != start).unwrap();
    let url = format!("mpudpm://239.255.76.72:{start}?ttl=0&nports=8&recv_buf_size=2097152");
    let (subscriber, publisher) = (Bus::new(Some(&url)).unwrap(), Bus::new(Some(&url)).unwrap());
    let wanted = subscriber.subscriber(&ch, 1000, Overflow::DropOldest).unwrap();
    publisher.publish_raw(&ch, b"1").unwrap();
    assert!(wanted.recv_timeout(Duration::from_secs(5)).is_some());

    // The receive thread closes the port's socket within a poll round (50 ms); nothing sent there arrives after.
    drop(wanted);
    std::thread::sleep(Duration::from_millis(300));
    let before = subscriber.provider_stats().received;
    assert!(before >= 1, "the closed socket's counts are kept");
    for i in 0..50u32 {
        publisher.publish_raw(&ch, &i.to_be_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(subscriber.provider_stats().received, before, "no datagram of the closed port is received");

    // Subscribing again opens it again.
    let again = subscriber.subscriber(&ch, 1000, Overflow::DropOldest).unwrap();
    publisher.publish_raw(&ch, b"2").unwrap();
    assert_eq!(again.recv_timeout(Duration::from_secs(5)).map(|m| m.data.clone()), Some(b"2".to_vec()));
}

#[test]
fn channels_sharing_a_wanted_port_and_own_messages_are_turned_away_unopened() {
    let start = 15000 + (std::process::id() % 400) as u16 * 40 + 36;
    // One port: every channel shares the subscribed channel's port, so only the filter can keep them out.
    let url = format!("mpudpm://239.255.76.72:{start}?ttl=0&nports=1&recv_buf_size=2097152");
    let (subscriber, publisher) = (Bus::new(Some(&url)).unwrap(), Bus::new(Some(&url)).unwrap());
    let wanted = subscriber.subscriber("WANTED", 1000, Overflow::DropOldest).unwrap();
    for i in 0..100u32 {
        publisher.publish_raw("OTHER_TRAFFIC", &i.to_be_bytes()).unwrap();
    }
    publisher.publish_raw("WANTED", b"x").unwrap();
    assert!(wanted.recv_timeout(Duration::from_secs(5)).is_some());
    // The subscriber's own message on its channel is delivered once, in-process; its looped-back datagram is
    // turned away.
    subscriber.publish_raw("WANTED", b"own").unwrap();
    assert_eq!(wanted.recv_timeout(Duration::from_secs(5)).map(|m| m.data.clone()), Some(b"own".to_vec()));
    std::thread::sleep(Duration::from_millis(300));
    assert!(wanted.try_recv().is_none(), "the own message is not delivered twice");
    let stats = subscriber.provider_stats();
    assert!(stats.received < 10, "only WANTED and the protocol's announcements are handed over: {stats:?}");
    assert!(stats.turned_away >= 101, "OTHER_TRAFFIC and the own datagram are turned away: {stats:?}");
    assert_eq!(subscriber.unmatched(), stats.turned_away - stats.own_dropped, "{stats:?}");
}
