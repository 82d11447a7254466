//! URL options that LCM lacks or handles quietly: choosing the multicast interface (LCM #323), and telling the user
//! when the kernel refuses the receive buffer asked for; and the messages a receiver never got, counted.

use std::time::Duration;

use nerve_udpm::{Config, Receiver, Sender, UdpmError};

fn config(port_offset: u16, options: &[(&str, &str)]) -> Config {
    let port = 25000 + (std::process::id() % 2000) as u16 * 10 + port_offset;
    let opts: Vec<(String, String)> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Config::from_url_parts(&format!("239.255.76.74:{port}"), &opts).unwrap().0
}

#[test]
fn interface_by_name_and_by_address() {
    for (i, iface) in ["lo", "127.0.0.1"].into_iter().enumerate() {
        let cfg = config(i as u16, &[("iface", iface)]);
        let mut rx = Receiver::open(&cfg).unwrap_or_else(|e| panic!("iface={iface}: {e}"));
        Sender::open(&cfg).unwrap().send("IFACE", iface.as_bytes()).unwrap();
        let m = rx.recv(Some(Duration::from_secs(5))).unwrap().expect("delivered on the chosen interface");
        assert_eq!(m.payload, iface.as_bytes());
    }
}

#[test]
fn unknown_interface_is_a_clear_error() {
    let cfg = config(3, &[("iface", "nosuchif0")]);
    match Sender::open(&cfg) {
        Err(e @ UdpmError::UnknownInterface { .. }) => assert!(e.to_string().contains("nosuchif0")),
        other => panic!("expected UnknownInterface, got {other:?}"),
    }
}

#[test]
fn a_refused_receive_buffer_is_reported() {
    // 2 GiB - 1 is more than net.core.rmem_max allows here, so the kernel grants less and the receiver says so.
    let cfg = config(4, &[("recv_buf_size", "2147483647")]);
    let rx = Receiver::open(&cfg).unwrap();
    let (asked, granted) = rx.rcvbuf().expect("a buffer was asked for");
    assert_eq!(asked, 2147483647);
    assert!(granted < asked, "granted {granted}");
}

#[test]
fn datagrams_the_kernel_drops_on_a_full_buffer_are_counted() {
    // The smallest receive buffer, flooded while nobody reads: the kernel keeps a few datagrams, drops the rest, and
    // tells the count with the datagrams read afterwards (one more is sent after the drain to carry the final count).
    let cfg = config(5, &[("recv_buf_size", "1")]);
    let mut rx = Receiver::open(&cfg).unwrap();
    let mut tx = Sender::open(&cfg).unwrap();
    const FLOOD: u64 = 2000;
    for _ in 0..FLOOD {
        tx.send("FLOOD", &[7u8; 200]).unwrap();
    }
    let mut read = 0u64;
    while rx.recv(Some(Duration::from_millis(300))).unwrap().is_some() {
        read += 1;
    }
    tx.send("LAST", b"x").unwrap();
    let last = rx.recv(Some(Duration::from_secs(5))).unwrap().expect("the last datagram fits the drained buffer");
    assert_eq!(last.channel, "LAST");
    read += 1;
    let stats = rx.stats();
    assert!(stats.kernel_dropped > 0, "{read} read of {FLOOD}: the small buffer must have overflowed");
    assert_eq!(read + stats.kernel_dropped, FLOOD + 1, "every datagram read or counted as dropped: {stats:?}");
    assert_eq!(stats.datagrams, read);
    // The sender numbered its messages: the ones never read are the gaps in its sequence, exactly.
    assert_eq!(stats.unseen, Some(stats.kernel_dropped), "{stats:?}");
}

#[test]
fn the_kernel_drop_count_is_read_from_another_thread_and_outlives_the_receiver() {
    let cfg = config(7, &[("recv_buf_size", "1")]);
    let rx = Receiver::open(&cfg).unwrap();
    let drops = rx.kernel_drops();
    let mut tx = Sender::open(&cfg).unwrap();
    const FLOOD: u64 = 2000;
    for _ in 0..FLOOD {
        tx.send("FLOOD", &[7u8; 200]).unwrap();
    }
    // Nobody reads: a few datagrams fit the buffer, the kernel dropped the rest.
    let counted = std::thread::spawn(move || (drops.total(), drops)).join().unwrap();
    let (total, drops) = counted;
    assert!(total > FLOOD / 2, "{total} of {FLOOD} counted as dropped by the kernel");
    // `counters` gives the count as last read, without asking the kernel; `stats` asks.
    assert_eq!(rx.counters().kernel_dropped, total);
    assert_eq!(rx.stats().kernel_dropped, total, "nothing sent since");
    drop(rx);
    assert_eq!(drops.total(), total, "a closed socket's count stays");
}

#[test]
fn messages_of_which_no_datagram_arrived_are_counted_from_sequence_gaps() {
    // A hand-made sender (a plain socket writing LCM datagrams) that skips sequence numbers, as if the network had
    // lost those messages; and one message of which only the first fragment arrives, which is the reassembler's to
    // count (incomplete), not a gap.
    use nerve_udpm::packet::{write_fragment, write_small};
    let cfg = config(6, &[]);
    let mut rx = Receiver::open(&cfg).unwrap();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.set_multicast_loop_v4(true).unwrap();
    let to = (cfg.group, cfg.port);
    let mut d = Vec::new();
    let send = |d: &[u8]| tx.send_to(d, to).unwrap();
    for seq in [10, 11, 14] {
        write_small(&mut d, seq, "GAPS", &[seq as u8]);
        send(&d);
    }
    write_fragment(&mut d, 15, "GAPS", &[0u8; 100_000], 0, 2);
    send(&d);
    for seq in [16, 20] {
        write_small(&mut d, seq, "GAPS", &[seq as u8]);
        send(&d);
    }
    let mut got = Vec::new();
    while let Some(m) = rx.recv(Some(Duration::from_millis(300))).unwrap() {
        got.push(m.seq);
    }
    assert_eq!(got, [10, 11, 14, 16, 20]);
    let stats = rx.stats();
    assert_eq!(stats.unseen, Some(2 + 3), "12, 13 and 17-19; 15 half arrived: {stats:?}");
    assert_eq!(stats.kernel_dropped, 0);
    // A receiver on one port of a multi-port group cannot tell: a multi-port sender numbers across all its ports.
    assert_eq!(Receiver::open_port(&cfg, cfg.port + 1).unwrap().stats().unseen, None);
}
