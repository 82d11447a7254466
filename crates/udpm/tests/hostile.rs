//! Hostile traffic on the group a receiver listens to, interleaved with good traffic: random datagrams, fragments of
//! messages that never complete, duplicate fragments (LCM's receiver completes a message early with garbage on
//! them), overlapping fragments whose sizes add up (LCM delivers them with a hole), and headers with sizes, offsets,
//! fragment numbers and counts at every 32-bit edge (LCM's fragment bounds check overflowed on them). The receiver
//! must not panic, must keep reassembly within its limits, must count every bad datagram by its reason, and must
//! deliver every good message intact (all of them, unless the kernel dropped datagrams for a full buffer, which it
//! counts). Bounded: about 2 s of traffic.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use nerve_udpm::packet::{Malformed, MAGIC_LONG, MAGIC_SHORT};
use nerve_udpm::{Config, Limits, Receiver, Sender};

const ROUNDS: u64 = 400;
const LIMITS: Limits = Limits { max_message: 1 << 20, max_bytes_in_flight: 4 << 20, max_messages_in_flight: 32 };

fn good_payload(i: u64) -> Vec<u8> {
    // Every 4th message is fragmented (100 kB), the others fit one datagram.
    let len = if i % 4 == 3 { 100_000 } else { 64 + (i as usize * 37) % 900 };
    let mut p: Vec<u8> = (0..len).map(|k| (k as u64 * 31 + i) as u8).collect();
    p[..8].copy_from_slice(&i.to_le_bytes());
    p
}

fn fragment(seq: u32, total: u32, offset: u32, number: u16, count: u16, channel: Option<&str>, data: &[u8]) -> Vec<u8> {
    let mut d = Vec::new();
    d.extend_from_slice(&MAGIC_LONG.to_be_bytes());
    d.extend_from_slice(&seq.to_be_bytes());
    d.extend_from_slice(&total.to_be_bytes());
    d.extend_from_slice(&offset.to_be_bytes());
    d.extend_from_slice(&number.to_be_bytes());
    d.extend_from_slice(&count.to_be_bytes());
    if let Some(c) = channel {
        d.extend_from_slice(c.as_bytes());
        d.push(0);
    }
    d.extend_from_slice(data);
    d
}

/// What the hostile sender sent, by the reason the receiver must count.
#[derive(Default, Debug)]
struct Sent {
    short: u64,
    bad_magic: u64,
    unterminated: u64,
    bad_number: u64,
    out_of_range: u64,
    too_large: u64,
    bad_offset: u64,
    duplicates: u64,
    overlapping: u64,
    never_complete: u64,
}

fn hostile(to: SocketAddrV4, seed: u64) -> Sent {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    socket.set_multicast_ttl_v4(0).unwrap();
    socket.set_multicast_loop_v4(true).unwrap();
    let send = |d: &[u8]| {
        socket.send_to(d, to).unwrap();
    };
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut sent = Sent::default();
    let edges32 = [0u32, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, 0xffff_ffff];
    for round in 0..ROUNDS {
        let seq = 1_000_000 + round as u32 * 8;
        // Random bytes (not starting with a magic), and datagrams cut short.
        let mut junk: Vec<u8> = (0..8 + next() % 1400).map(|_| next() as u8).collect();
        junk[0] = b'X';
        send(&junk);
        sent.bad_magic += 1;
        let header = [MAGIC_SHORT.to_be_bytes(), 1u32.to_be_bytes()].concat();
        send(&header[..(round % 8) as usize]);
        sent.short += 1;
        let mut unterminated = MAGIC_SHORT.to_be_bytes().to_vec();
        unterminated.extend_from_slice(&[0, 0, 0, 1]);
        unterminated.extend_from_slice(&[b'c'; 80]);
        send(&unterminated);
        sent.unterminated += 1;
        // Sizes at the 32-bit edges: totals above the cap, offsets and lengths that overflow a u32 sum.
        let edge = edges32[(round % 6) as usize];
        send(&fragment(seq, edge.max(1 << 21), 0, 0, 2, Some("EVIL"), b"abc"));
        sent.too_large += 1;
        send(&fragment(seq + 1, 1000, edge.max(998), 1, 2, None, b"abcdef"));
        sent.out_of_range += 1;
        send(&fragment(seq + 2, 1000, 10, 7, if round % 2 == 0 { 0 } else { 7 }, None, b"x"));
        sent.bad_number += 1;
        send(&fragment(seq + 3, 1000, edge.max(1), 0, 4, Some("EVIL"), b"xyz"));
        sent.bad_offset += 1;
        // A message that never completes: 1 of 2 fragments of up to the 1 MiB cap (evicted by the limits).
        send(&fragment(seq + 4, (next() % (1 << 20)) as u32 + 100, 0, 0, 2, Some("EVIL"), &[7; 64]));
        sent.never_complete += 1;
        // Duplicates: fragment 0 twice, then fragment 1: completes once, intact.
        let dup0 = fragment(seq + 5, 8, 0, 0, 2, Some("DUP"), b"dupl");
        send(&dup0);
        send(&dup0);
        send(&fragment(seq + 5, 8, 4, 1, 2, None, b"icat"));
        sent.duplicates += 1;
        // Overlapping fragments whose sizes add up to the total: dropped as inconsistent.
        send(&fragment(seq + 6, 8, 0, 0, 2, Some("EVIL"), b"abcd"));
        send(&fragment(seq + 6, 8, 2, 1, 2, None, b"wxyz"));
        sent.overlapping += 1;
        if round % 8 == 0 {
            thread::sleep(Duration::from_millis(2));
        }
    }
    sent
}

#[test]
fn hostile_datagrams_are_counted_and_good_traffic_arrives_intact() {
    let port = 29000 + (std::process::id() % 1000) as u16;
    let (mut cfg, _) =
        Config::from_url_parts(&format!("239.255.76.88:{port}"), &[("recv_buf_size".into(), "8388608".into())])
            .unwrap();
    cfg.limits = LIMITS;
    let mut rx = Receiver::open(&cfg).unwrap();
    let to = SocketAddrV4::new(cfg.group, cfg.port);
    let good_cfg = cfg.clone();
    let good = thread::spawn(move || {
        let mut tx = Sender::open(&good_cfg).unwrap();
        for i in 0..ROUNDS {
            tx.send("GOOD", &good_payload(i)).unwrap();
            thread::sleep(Duration::from_micros(500));
        }
    });
    let evil = thread::spawn(move || hostile(to, 0x0bad_5eed));
    let mut delivered = 0u64;
    let mut dups = 0u64;
    let mut peak = (0, 0);
    let mut quiet_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        match rx.recv(Some(Duration::from_millis(20))).unwrap() {
            Some(m) => {
                quiet_since = Instant::now();
                match m.channel.as_str() {
                    "GOOD" => {
                        let i = u64::from_le_bytes(m.payload[..8].try_into().unwrap());
                        assert_eq!(m.payload, good_payload(i), "good message {i} arrived damaged");
                        delivered += 1;
                    }
                    "DUP" => {
                        assert_eq!(m.payload, b"duplicat", "duplicate fragments corrupted a message");
                        dups += 1;
                    }
                    other => panic!(
                        "a hostile message was delivered on {other}: {:?}",
                        &m.payload[..16.min(m.payload.len())]
                    ),
                }
            }
            None if good.is_finished() && evil.is_finished() && quiet_since.elapsed() > Duration::from_millis(300) => {
                break
            }
            None => {}
        }
        let now = rx.reassembly_in_flight();
        peak = (peak.0.max(now.0), peak.1.max(now.1));
    }
    good.join().unwrap();
    let sent = evil.join().unwrap();
    let s = rx.stats();
    eprintln!("sent {sent:?}\nreceived {s:?}\ngood {delivered}/{ROUNDS}, dup {dups}, peak in flight {peak:?}");
    assert!(peak.0 <= LIMITS.max_messages_in_flight && peak.1 <= LIMITS.max_bytes_in_flight, "{peak:?}");
    let lost = s.kernel_dropped;
    assert!(delivered + lost >= ROUNDS, "good messages lost beyond the kernel's drops: {delivered} + {lost}");
    let expect = [
        (Malformed::Short, sent.short),
        (Malformed::BadMagic, sent.bad_magic),
        (Malformed::ChannelUnterminated, sent.unterminated),
        (Malformed::BadFragmentNumber, sent.bad_number),
        (Malformed::FragmentOutOfRange, sent.out_of_range),
        (Malformed::TooLarge, sent.too_large),
        (Malformed::BadOffset, sent.bad_offset),
    ];
    for (reason, n) in expect {
        let counted = s.malformed(reason);
        // Exactly, unless the kernel dropped datagrams (then at most that many fewer).
        assert!(counted <= n && counted + lost >= n, "{reason}: counted {counted}, sent {n}");
    }
    let r = s.reassembly;
    assert!(r.duplicate_fragments <= sent.duplicates && r.duplicate_fragments + lost >= sent.duplicates, "{r:?}");
    assert!(dups + lost >= sent.duplicates && dups <= sent.duplicates);
    assert!(r.dropped_inconsistent <= sent.overlapping && r.dropped_inconsistent + lost >= sent.overlapping, "{r:?}");
    // The ones that never complete are dropped to make room, except the few still held at the end.
    assert!(r.dropped_incomplete + peak.0 as u64 + lost >= sent.never_complete, "{r:?}");
}
