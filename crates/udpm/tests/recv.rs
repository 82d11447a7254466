//! `Receiver::recv`'s waiting: after a read found the socket empty, a call that may wait goes straight to waiting
//! (a blocking read under a receive timeout when the wait is long, `poll` when it is short); a wait ends with the
//! datagram that arrives during it, or empty-handed no earlier than its timeout; a call whose time is already up by
//! then must still read what has arrived meanwhile. A burst is read in batches (`recvmmsg`) and comes out whole and
//! in order. `recv_queued` drains what is known to be there and makes no read that would find the socket empty.

use std::time::{Duration, Instant};

use nerve_udpm::{Config, Receiver, Sender};

fn config(offset: u16) -> Config {
    let port = 27000 + (std::process::id() % 1000) as u16 * 5 + offset;
    Config::from_url_parts(&format!("239.255.76.87:{port}"), &[]).unwrap().0
}

#[test]
fn a_call_whose_time_is_up_still_reads_what_arrived_since_the_socket_was_last_empty() {
    let port = 27000 + (std::process::id() % 1000) as u16 * 5 + 2;
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

#[test]
fn a_wait_with_nothing_to_read_ends_empty_handed_no_earlier_than_its_timeout() {
    let mut rx = Receiver::open(&config(0)).unwrap();
    while rx.recv(Some(Duration::ZERO)).unwrap().is_some() {}
    // 5 ms: a poll; 40 and 120 ms: blocking reads under SO_RCVTIMEO, the second 120 ms wait reusing the timeout the
    // first one set.
    for ms in [5, 40, 120, 120, 5] {
        let timeout = Duration::from_millis(ms);
        let t = Instant::now();
        assert!(rx.recv(Some(timeout)).unwrap().is_none(), "nothing was sent");
        let took = t.elapsed();
        assert!(took >= timeout, "a {ms} ms wait ended after {took:?}");
        // Not a speed bound: a wait that never ended would hang here instead.
        assert!(took < timeout + Duration::from_secs(2), "a {ms} ms wait ended after {took:?}");
    }
}

#[test]
fn a_wait_ends_with_the_datagram_that_arrives_during_it() {
    let cfg = config(1);
    let mut rx = Receiver::open(&cfg).unwrap();
    while rx.recv(Some(Duration::ZERO)).unwrap().is_some() {}
    // 20 s and forever: blocking reads; 19 ms: a poll (tried again if a loaded host sends after it has ended).
    for (i, timeout) in [Some(Duration::from_secs(20)), None, Some(Duration::from_millis(19))].into_iter().enumerate() {
        let mut tx = Sender::open(&cfg).unwrap();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(2));
            tx.send(&format!("DURING_{i}"), b"x").unwrap();
        });
        let t = Instant::now();
        let m = (0..500).find_map(|_| rx.recv(timeout).unwrap()).expect("the datagram sent during the wait");
        assert_eq!(m.channel, format!("DURING_{i}"));
        // Not a speed bound: a wait that went on after the datagram came would end only at its timeout or never.
        assert!(t.elapsed() < Duration::from_secs(10), "the wait went on after the datagram came");
        sender.join().unwrap();
    }
}

#[test]
fn a_burst_read_in_batches_comes_out_whole_and_in_order() {
    let port = 27000 + (std::process::id() % 1000) as u16 * 5 + 3;
    let options = [("recv_buf_size".to_string(), "8388608".to_string())];
    let cfg = Config::from_url_parts(&format!("239.255.76.87:{port}"), &options).unwrap().0;
    let mut rx = Receiver::open(&cfg).unwrap();
    while rx.recv(Some(Duration::ZERO)).unwrap().is_some() {}
    let mut tx = Sender::open(&cfg).unwrap();
    // Small messages around two fragmented ones (200 kB: four datagrams each), enough datagrams to fill batches of
    // every size several times over.
    let big: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut sent = Vec::new();
    for i in 0..300u32 {
        let payload = if i % 150 == 75 { big.clone() } else { i.to_le_bytes().repeat(1 + i as usize % 50) };
        tx.send(&format!("BURST_{i}"), &payload).unwrap();
        sent.push((format!("BURST_{i}"), payload));
    }
    let before = rx.stats().datagrams;
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < sent.len() && Instant::now() < deadline {
        if let Some(m) = rx.recv(Some(Duration::from_millis(100))).unwrap() {
            got.push((m.channel, m.payload));
        }
    }
    assert_eq!(got.len(), sent.len(), "every message of the burst arrived");
    for (i, (g, s)) in got.iter().zip(&sent).enumerate() {
        assert!(g == s, "message {i}: got {} ({} bytes), sent {} ({} bytes)", g.0, g.1.len(), s.0, s.1.len());
    }
    let stats = rx.stats();
    assert_eq!(stats.datagrams - before, 298 + 2 * 4, "one datagram per small message, four per big one");
    assert_eq!(stats.malformed_total() + stats.kernel_dropped, 0);
}

#[test]
fn recv_queued_takes_what_was_read_and_never_reads_a_socket_it_found_empty() {
    // A port of its own, not only a group: a socket bound to the port's wildcard address (Windows's way) hears every
    // group joined on that port, as under Wine.
    let port = 27000 + (std::process::id() % 1000) as u16 * 5 + 4;
    let options = [("recv_buf_size".to_string(), "8388608".to_string())];
    let cfg = Config::from_url_parts(&format!("239.255.76.85:{port}"), &options).unwrap().0;
    let mut rx = Receiver::open(&cfg).unwrap();
    while rx.recv(Some(Duration::ZERO)).unwrap().is_some() {}
    let mut tx = Sender::open(&cfg).unwrap();
    // A burst: batches fill, so recv_queued keeps reading until one comes back short.
    for i in 0..100u32 {
        tx.send(&format!("Q{i}"), &i.to_le_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    let first = rx.recv(Some(Duration::from_secs(5))).unwrap().expect("the burst");
    let mut channels = vec![first.channel];
    while let Some(m) = rx.recv_queued().unwrap() {
        channels.push(m.channel);
    }
    assert_eq!(channels, (0..100).map(|i| format!("Q{i}")).collect::<Vec<_>>());
    // The last read found the socket empty: what arrives after it waits for the next read that recv_queued skips.
    tx.send("LATER", b"x").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(rx.recv_queued().unwrap().is_none(), "recv_queued read the socket again");
    let later = rx.recv(Some(Duration::from_secs(5))).unwrap().expect("a wait reads what came");
    assert_eq!(later.channel, "LATER");
}
