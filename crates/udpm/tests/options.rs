//! URL options that LCM lacks or handles quietly: choosing the multicast interface (LCM #323), and telling the user
//! when the kernel refuses the receive buffer asked for.

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
}
