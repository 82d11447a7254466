//! `Receiver::set_filter` on loopback multicast: messages turned away are counted and never delivered, small or
//! fragmented, and a turned-away fragmented message is not held for reassembly; wanted ones still arrive whole.

use std::time::Duration;

use nerve_udpm::{Config, Receiver, Sender};

fn config() -> Config {
    let port = 27000 + (std::process::id() % 1000) as u16 * 4;
    let opts = [("recv_buf_size".to_string(), (16 << 20).to_string())];
    Config::from_url_parts(&format!("239.255.76.86:{port}"), &opts).unwrap().0
}

#[test]
fn unwanted_channels_are_counted_not_delivered_nor_reassembled() {
    let cfg = config();
    let mut rx = Receiver::open(&cfg).unwrap();
    rx.set_filter(Box::new(|channel, _| channel.starts_with("WANT")));
    let mut tx = Sender::open(&cfg).unwrap();
    let big = vec![7u8; 300_000]; // several fragments
    tx.send("SKIP_SMALL", b"a").unwrap();
    tx.send("SKIP_BIG", &big).unwrap();
    tx.send("WANT_SMALL", b"b").unwrap();
    tx.send("WANT_BIG", &big).unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        match rx.recv(Some(Duration::from_secs(5))).unwrap() {
            Some(m) => got.push((m.channel, m.payload.len())),
            None => break,
        }
    }
    assert_eq!(got, [("WANT_SMALL".to_string(), 1), ("WANT_BIG".to_string(), big.len())]);
    let stats = rx.stats();
    assert_eq!(stats.unwanted, 2, "{stats:?}");
    assert_eq!(stats.messages, 2);
    assert_eq!(stats.reassembly.completed, 1, "only the wanted big message was put together: {stats:?}");
    assert_eq!(stats.reassembly.dropped_incomplete, 0);
}

#[test]
fn a_call_that_may_not_wait_returns_after_a_turn_of_unwanted_datagrams() {
    let mut cfg = config();
    cfg.port += 1;
    let mut rx = Receiver::open(&cfg).unwrap();
    rx.set_filter(Box::new(|channel, _| channel == "WANT"));
    let mut tx = Sender::open(&cfg).unwrap();
    let unwanted = nerve_udpm::READ_TURN + 10;
    for _ in 0..unwanted {
        tx.send("NOISE", b"n").unwrap();
    }
    tx.send("WANT", b"w").unwrap();
    std::thread::sleep(Duration::from_millis(100)); // all of it in the socket
                                                    // The first call reads one turn of noise and gives control back although more is queued ...
    assert!(rx.recv(Some(Duration::ZERO)).unwrap().is_none());
    assert_eq!(rx.stats().unwanted, nerve_udpm::READ_TURN as u64);
    // ... and the next goes on where it stopped.
    let m = rx.recv(Some(Duration::ZERO)).unwrap().expect("the wanted message after the rest of the noise");
    assert_eq!(m.channel, "WANT");
    assert_eq!(rx.stats().unwanted, unwanted as u64);
    assert!(rx.recv(Some(Duration::ZERO)).unwrap().is_none());
}
