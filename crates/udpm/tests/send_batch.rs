//! `Sender::send_batch` on loopback multicast: every datagram arrives, in order, with one sequence number per message
//! as single sends give them; fragmented messages inside a batch; batches bigger than one `sendmmsg` call takes;
//! a message that cannot be sent stops the batch there and is reported.

use std::thread;
use std::time::Duration;

use nerve_udpm::packet::SendError;
use nerve_udpm::{Config, Message, Receiver, Sender, UdpmError};

/// A group no other test uses, and a port block of this process's own (ports `base..base + 8`).
fn config(offset: u16) -> Config {
    let port = 26000 + (std::process::id() % 1000) as u16 * 8 + offset;
    let opts = [("recv_buf_size".to_string(), (16 << 20).to_string())];
    Config::from_url_parts(&format!("239.255.76.84:{port}"), &opts).unwrap().0
}

/// Receives on `cfg`'s port (or `port`) on a thread of its own until `n` messages arrived or nothing came for 5 s.
fn collect(cfg: &Config, port: u16, n: usize) -> thread::JoinHandle<Vec<Message>> {
    let mut rx = Receiver::open_port(cfg, port).unwrap();
    thread::spawn(move || {
        let mut got = Vec::new();
        while got.len() < n {
            match rx.recv(Some(Duration::from_secs(5))).unwrap() {
                Some(m) => got.push(m),
                None => break,
            }
        }
        got
    })
}

fn small(i: usize) -> Vec<u8> {
    (i as u64).to_be_bytes().to_vec()
}

#[test]
fn every_message_arrives_in_order_with_its_sequence_number() {
    let cfg = config(0);
    let rx = collect(&cfg, cfg.port, 302);
    let mut tx = Sender::open(&cfg).unwrap();
    tx.send("BEFORE", b"x").unwrap();
    let payloads: Vec<Vec<u8>> = (0..300).map(small).collect();
    let batch: Vec<(&str, &[u8])> = payloads.iter().map(|p| ("BATCH", p.as_slice())).collect();
    tx.send_batch(&batch).unwrap();
    tx.send("AFTER", b"y").unwrap();
    let got = rx.join().unwrap();
    assert_eq!(got.len(), 302, "every message arrives");
    let from = got[0].sender;
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m.seq, i as u32, "one sequence number per message, continuing from and into single sends");
        assert_eq!(m.sender, from, "one send socket");
    }
    assert_eq!((got[0].channel.as_str(), got[301].channel.as_str()), ("BEFORE", "AFTER"));
    for (i, m) in got[1..301].iter().enumerate() {
        assert_eq!((m.channel.as_str(), &m.payload), ("BATCH", &payloads[i]));
    }
}

#[test]
fn a_fragmented_message_inside_a_batch() {
    let cfg = config(1);
    let rx = collect(&cfg, cfg.port, 4);
    let mut tx = Sender::open(&cfg).unwrap();
    let big: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
    // Exactly the small/fragmented boundary (spec 4.2: "EDG" with 65495 bytes is one datagram, 65496 two).
    let edge = vec![7u8; 65496];
    let batch: [(&str, &[u8]); 4] = [("A", b"first"), ("BIG", &big), ("EDG", &edge), ("B", b"last")];
    tx.send_batch(&batch).unwrap();
    let got = rx.join().unwrap();
    let seen: Vec<(&str, &[u8], u32)> = got.iter().map(|m| (m.channel.as_str(), m.payload.as_slice(), m.seq)).collect();
    assert_eq!(seen, [("A", &b"first"[..], 0), ("BIG", &big[..], 1), ("EDG", &edge[..], 2), ("B", &b"last"[..], 3)]);
}

#[test]
fn a_batch_bigger_than_one_system_call_takes() {
    // The kernel takes at most 1024 datagrams per sendmmsg; 2500 messages and 20 fragments need three calls or more.
    let cfg = config(2);
    let rx = collect(&cfg, cfg.port, 2501);
    let mut tx = Sender::open(&cfg).unwrap();
    let payloads: Vec<Vec<u8>> = (0..2500).map(small).collect();
    let big = vec![3u8; 20 * 65_000];
    let mut batch: Vec<(&str, &[u8])> = payloads.iter().map(|p| ("MANY", p.as_slice())).collect();
    batch.insert(1500, ("HUGE", &big));
    tx.send_batch(&batch).unwrap();
    let got = rx.join().unwrap();
    assert_eq!(got.len(), 2501, "every message arrives");
    for (i, (m, (channel, payload))) in got.iter().zip(&batch).enumerate() {
        assert_eq!((m.seq, m.channel.as_str(), m.payload.as_slice()), (i as u32, *channel, *payload));
    }
}

#[test]
fn each_message_goes_to_the_port_of_its_channel() {
    let cfg = config(3);
    let (a, b) = (cfg.port, cfg.port + 1);
    let rx_a = collect(&cfg, a, 100);
    let rx_b = collect(&cfg, b, 100);
    let mut tx = Sender::open(&cfg).unwrap();
    let payloads: Vec<Vec<u8>> = (0..200).map(small).collect();
    let batch: Vec<(&str, &[u8])> =
        payloads.iter().enumerate().map(|(i, p)| (if i % 2 == 0 { "EVEN" } else { "ODD" }, p.as_slice())).collect();
    tx.send_batch_to_ports(&batch, |c| if c == "EVEN" { a } else { b }).unwrap();
    for (rx, channel, first) in [(rx_a, "EVEN", 0), (rx_b, "ODD", 1)] {
        let got = rx.join().unwrap();
        assert_eq!(got.len(), 100, "{channel}");
        for (k, m) in got.iter().enumerate() {
            let i = first + 2 * k;
            assert_eq!((m.channel.as_str(), m.seq, &m.payload), (channel, i as u32, &payloads[i]));
        }
    }
}

#[test]
fn a_message_that_cannot_be_sent_stops_the_batch_and_is_reported() {
    let cfg = config(4);
    let rx = collect(&cfg, cfg.port, 4);
    let mut tx = Sender::open(&cfg).unwrap();
    let long = "L".repeat(64);
    // A channel too long is refused before it takes a sequence number, as by `send`.
    let e = tx.send_batch(&[("A", b"0"), ("B", b"1"), (&long, b"2"), ("C", b"3")]).unwrap_err();
    assert_eq!(e.sent, 2);
    assert!(matches!(e.error, UdpmError::Send(SendError::ChannelTooLong { len: 64 })), "{e}");
    // A socket error (port 0: EINVAL, spec 4.2's quirk) after the message took its sequence number, as by `send`.
    let port = cfg.port;
    let e = tx
        .send_batch_to_ports(&[("D", b"4"), ("ZERO", b"5"), ("E", b"6")], |c| if c == "ZERO" { 0 } else { port })
        .unwrap_err();
    assert_eq!(e.sent, 1);
    assert!(matches!(e.error, UdpmError::Io { .. }), "{e}");
    tx.send("F", b"7").unwrap();
    let got = rx.join().unwrap();
    let seen: Vec<(&str, u32)> = got.iter().map(|m| (m.channel.as_str(), m.seq)).collect();
    // ZERO used 3; E, after it, was not sent and used none.
    assert_eq!(seen, [("A", 0), ("B", 1), ("D", 2), ("F", 4)], "nothing after a failed message is sent");
}
