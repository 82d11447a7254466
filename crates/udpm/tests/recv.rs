//! `Receiver::recv`'s waiting: after a read found the socket empty, a call that may wait goes straight to `poll`;
//! a call whose time is already up by then must still read what has arrived meanwhile.

use std::time::Duration;

use nerve_udpm::{Config, Receiver, Sender};

#[test]
fn a_call_whose_time_is_up_still_reads_what_arrived_since_the_socket_was_last_empty() {
    let port = 27000 + (std::process::id() % 1000) as u16 * 4 + 2;
    let cfg = Config::from_url_parts(&format!("239.255.76.86:{port}"), &[]).unwrap().0;
    let mut rx = Receiver::open(&cfg).unwrap();
    // Drain: the socket is found empty.
    while rx.recv(Some(Duration::ZERO)).unwrap().is_some() {}
    let mut tx = Sender::open(&cfg).unwrap();
    tx.send("LATE", b"x").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // A timeout that is over before any poll: the message is read all the same.
    let m = rx.recv(Some(Duration::from_nanos(1))).unwrap().expect("the queued message");
    assert_eq!(m.channel, "LATE");
    assert!(rx.recv(Some(Duration::from_nanos(1))).unwrap().is_none());
}
