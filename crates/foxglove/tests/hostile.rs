//! Clients that misbehave: malformed HTTP, malformed and hostile WebSocket frames, and a client that stops
//! reading. None crashes the server or slows the bus; a well-behaved client served afterwards (or meanwhile) still
//! gets its messages, and the messages a slow client misses are counted.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use nerve_bus::{Bus, Overflow};
use nerve_foxglove::{Options, Server};

/// A client frame: FIN, `opcode`, masked with a fixed key (as clients must), or unmasked when `masked` is false.
fn frame(opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut f = vec![0x80 | opcode];
    let mask_bit = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => f.push(mask_bit | n as u8),
        n if n < 65536 => {
            f.push(mask_bit | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(mask_bit | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        let key = [0x12, 0x34, 0x56, 0x78];
        f.extend_from_slice(&key);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        f.extend_from_slice(payload);
    }
    f
}

/// Opens a WebSocket with the SDK's subprotocol; returns the stream after the 101 response.
fn handshake(addr: SocketAddr) -> TcpStream {
    handshake_on(TcpStream::connect(addr).unwrap(), addr)
}

/// [`handshake`] on a stream already connected to `addr`.
fn handshake_on(mut s: TcpStream, addr: SocketAddr) -> TcpStream {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: foxglove.sdk.v1\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    s
}

/// Reads one server frame: (opcode, payload).
fn read_frame(s: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut h = [0u8; 2];
    s.read_exact(&mut h)?;
    let len = match h[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b)?;
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b)?;
            u64::from_be_bytes(b) as usize
        }
        n => n as usize,
    };
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload)?;
    Ok((h[0] & 0x0f, payload))
}

/// Reads text frames until the advertisement of `topic`; its channel id.
fn channel_id(s: &mut TcpStream, topic: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let (op, payload) = read_frame(s).unwrap();
        if op != 1 {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        if v["op"] == "advertise" {
            if let Some(ch) = v["channels"].as_array().unwrap().iter().find(|c| c["topic"] == topic) {
                return ch["id"].as_u64().unwrap();
            }
        }
    }
    panic!("{topic} never advertised");
}

/// Subscribes a fresh client to `topic` and waits for one message on it.
fn a_client_still_gets_messages(addr: SocketAddr, topic: &str) {
    let mut s = handshake(addr);
    let id = channel_id(&mut s, topic);
    let sub = format!(r#"{{"op":"subscribe","subscriptions":[{{"id":7,"channelId":{id}}}]}}"#);
    s.write_all(&frame(1, sub.as_bytes(), true)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        // A read that times out on a loaded host is retried until the deadline; any other error is the server's.
        let (op, payload) = match read_frame(&mut s) {
            Ok(frame) => frame,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) => panic!("reading {topic} from the server: {e}"),
        };
        if op == 2 && payload.first() == Some(&1) && payload[1..5] == 7u32.to_le_bytes() {
            return;
        }
    }
    panic!("no message on {topic}");
}

fn memq_server() -> (Bus, Server, Traffic) {
    let reg = registry();
    let bus = Bus::new(Some("memq://")).unwrap();
    let server = server(&bus, Some(reg.clone()));
    let poses = encoded_poses(&reg).into_iter().map(|b| ("POSE".to_owned(), b)).collect();
    let traffic = Traffic::start(bus.clone(), poses, Duration::from_millis(5));
    (bus, server, traffic)
}

#[test]
fn malformed_http_is_refused_and_the_server_goes_on() {
    let (_bus, server, _traffic) = memq_server();
    let addr = server.local_addr();
    let answer = |request: &[u8]| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(request);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    assert!(answer(b"\x00\xff\xfe garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
    assert!(answer(b"DELETE / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    assert!(answer(&vec![b'A'; 40_000]).starts_with("HTTP/1.1 431"));
    assert!(answer(b"GET /../../etc/passwd HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
    // A WebSocket upgrade without Foxglove's subprotocol: the SDK refuses it.
    let refused = answer(
        b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
          Sec-WebSocket-Version: 13\r\n\r\n",
    );
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    // A client that connects and says nothing, and one that closes at once, tie up nothing.
    let _silent = TcpStream::connect(addr).unwrap();
    drop(TcpStream::connect(addr).unwrap());
    assert!(answer(b"GET / HTTP/1.1\r\n\r\n").contains("<title>nerve</title>"));
    a_client_still_gets_messages(addr, "POSE");
}

#[test]
fn hostile_websocket_frames_are_refused_without_a_crash() {
    let (_bus, server, _traffic) = memq_server();
    let addr = server.local_addr();
    let hostile: Vec<Vec<u8>> = vec![
        frame(1, b"{not json", true),
        frame(1, br#"{"op":"subscribe","subscriptions":[{"id":1,"channelId":999999}]}"#, true),
        frame(1, br#"{"op":"subscribe","subscriptions":[{"id":-1,"channelId":"x"}]}"#, true),
        frame(1, br#"{"op":"unsubscribe","subscriptionIds":[424242]}"#, true),
        frame(1, br#"{"op":"advertise","channels":[{"id":1,"topic":"POSE","encoding":"json","schemaName":"foxtest.pose_t"}]}"#, true),
        frame(2, &[1, 1, 0, 0, 0, b'{'], true), // message data on a channel the client never advertised
        frame(2, &[0xff; 3], true),             // an unknown binary opcode, truncated
        frame(2, &[], true),
        frame(1, &[0xc3, 0x28], true),                           // text that is not UTF-8
        frame(1, b"{\"op\":\"subscribe\"}", false),              // unmasked: a protocol error
        frame(0x3, b"reserved opcode", true),                    // a reserved opcode
        frame(1, "[".repeat(100_000).as_bytes(), true),          // deep nesting
        vec![0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // a length of 2^63
    ];
    for (i, f) in hostile.iter().enumerate() {
        let mut s = handshake(addr);
        let _ = s.write_all(f);
        // Whatever the server answers (an error status, a close, nothing), it must stay up.
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut sink = [0u8; 65536];
        let _ = s.read(&mut sink);
        drop(s);
        assert!(TcpStream::connect(addr).is_ok(), "server gone after hostile frame {i}");
    }
    a_client_still_gets_messages(addr, "POSE");
}

/// Reads until every topic of `topics` was advertised; their channel ids, in the same order.
fn channel_ids(s: &mut TcpStream, topics: &[&str]) -> Vec<u64> {
    let mut ids = vec![None; topics.len()];
    let deadline = Instant::now() + Duration::from_secs(10);
    while ids.iter().any(Option::is_none) && Instant::now() < deadline {
        let (op, payload) = read_frame(s).unwrap();
        let v: serde_json::Value = if op == 1 { serde_json::from_slice(&payload).unwrap() } else { continue };
        for ch in v["channels"].as_array().into_iter().flatten().filter(|_| v["op"] == "advertise") {
            if let Some(i) = topics.iter().position(|t| ch["topic"] == *t) {
                ids[i] = ch["id"].as_u64();
            }
        }
    }
    ids.into_iter().map(|id| id.expect("every topic advertised")).collect()
}

/// Subscription ids the test's clients use.
const SUB_WARM: u32 = 1;
const SUB_BIG: u32 = 2;

/// Subscribes to BIG, then to WARM (in that order, so a WARM message proves the BIG subscription took effect).
fn subscribe_big_then_warm(s: &mut TcpStream) {
    let ids = channel_ids(s, &["BIG", "WARM"]);
    for (sub, channel) in [(SUB_BIG, ids[0]), (SUB_WARM, ids[1])] {
        let op = format!(r#"{{"op":"subscribe","subscriptions":[{{"id":{sub},"channelId":{channel}}}]}}"#);
        s.write_all(&frame(1, op.as_bytes(), true)).unwrap();
    }
}

/// A message-data frame's subscription id and log time.
fn message_data(op: u8, payload: &[u8]) -> Option<(u32, u64)> {
    (op == 2 && payload.len() >= 13 && payload[0] == 1).then(|| {
        (u32::from_le_bytes(payload[1..5].try_into().unwrap()), u64::from_le_bytes(payload[5..13].try_into().unwrap()))
    })
}

/// The BIG messages a client read until nothing came for a second (or `until` of them): how many, and the log time
/// of the last.
fn read_big(s: &mut TcpStream, until: usize) -> (usize, u64) {
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let (mut count, mut last) = (0, 0);
    while count < until {
        let Ok((op, payload)) = read_frame(s) else { break };
        if let Some((SUB_BIG, log_time)) = message_data(op, &payload) {
            count += 1;
            last = log_time;
        }
    }
    (count, last)
}

#[test]
fn a_slow_client_loses_its_oldest_messages_counted_and_stalls_neither_the_bus_nor_other_clients() {
    // Big messages (64 KiB each, undecoded: about 87 KiB of JSON; 600 of them, 52 MB) overflow a stalled client's
    // socket buffers (its receive buffer pinned at 64 KiB, the server's send buffer at most 4 MiB) and its queue
    // (32 messages, 2.8 MB) within a hundred or so.
    let bus = Bus::new(Some("memq://")).unwrap();
    let options = Options { listen: "127.0.0.1:0".parse().unwrap(), client_backlog: 32, ..Options::default() };
    let server = Server::start(&bus, None, options).unwrap();
    let addr = server.local_addr();
    let big = |i: u32| {
        let mut m = vec![0u8; 65536];
        m[..8].copy_from_slice(&0x0123_4567_89ab_cdefu64.to_be_bytes());
        m[8..12].copy_from_slice(&i.to_be_bytes());
        m
    };
    let warm = [0xfe; 12];
    bus.publish_raw("BIG", &big(0)).unwrap();
    bus.publish_raw("WARM", &warm).unwrap();
    while server.stats().advertised < 2 {
        std::thread::sleep(Duration::from_millis(10));
    }

    // A client that reads everything, in a thread of its own; it says when it saw WARM (subscribed to both).
    let (warmed_tx, warmed) = std::sync::mpsc::channel();
    let n = 600;
    let reader = std::thread::spawn(move || {
        let mut s = handshake(addr);
        subscribe_big_then_warm(&mut s);
        while !matches!(read_frame(&mut s).map(|(op, p)| message_data(op, &p)), Ok(Some((SUB_WARM, _)))) {}
        warmed_tx.send(()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        read_big(&mut s, n)
    });

    // The stalled client: a small receive buffer, subscribed; it reads until it sees WARM, then stops reading.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut stalled = handshake_on(socket.into(), addr);
    subscribe_big_then_warm(&mut stalled);
    let deadline = Instant::now() + Duration::from_secs(10);
    stalled.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut stalled_warm = false;
    let mut reader_warm = false;
    let mut published = 2;
    while !(stalled_warm && reader_warm) {
        assert!(Instant::now() < deadline, "the clients never saw WARM");
        bus.publish_raw("WARM", &warm).unwrap();
        published += 1;
        reader_warm |= warmed.try_recv().is_ok();
        while let Ok((op, payload)) = read_frame(&mut stalled) {
            stalled_warm |= matches!(message_data(op, &payload), Some((SUB_WARM, _)));
        }
    }
    // (A read that timed out mid-frame would leave the stream out of step: it cannot, frames here are small.)

    let other = bus.subscriber("BIG", 0, Overflow::DropOldest).unwrap();
    let me = stalled.local_addr().unwrap();
    let dropped = || server.clients().iter().find(|c| c.peer == me).expect("the stalled client is listed").dropped;
    // The stalled client's drop count, looked at as the burst goes and until the server has sent it all.
    let mut seen = Vec::new();
    for i in 1..=n as u32 {
        bus.publish_raw("BIG", &big(i)).unwrap();
        std::thread::sleep(Duration::from_millis(1));
        if i % 25 == 0 {
            seen.push(dropped());
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = |s: nerve_foxglove::ServerStats| s.sent + s.unsubscribed == published + n as u64;
    while !done(server.stats()) && Instant::now() < deadline {
        seen.push(dropped());
        std::thread::sleep(Duration::from_millis(20));
    }
    // The bus subscriber got every message.
    let mut got = 0;
    while got < n && other.recv_timeout(Duration::from_secs(5)).is_some() {
        got += 1;
    }
    assert_eq!(got, n, "the other bus subscriber lost messages");
    // The reading client got every one, the last one last.
    let (reader_got, reader_last) = reader.join().unwrap();
    assert_eq!(reader_got, n, "the reading client lost messages");
    // The server took every message off the bus (it never waited for the stalled client).
    let stats = server.stats();
    assert_eq!(stats.received, published + n as u64, "{stats:?}");
    assert_eq!(stats.bus_queue_dropped, 0, "{stats:?}");
    // The stalled client's drops grew while it did not read...
    let dropped_at_end = dropped();
    seen.push(dropped_at_end);
    seen.dedup();
    assert!(seen.iter().filter(|&&d| d > 0).count() >= 2, "drops seen: {seen:?}");
    // ... and are exactly what it misses when it reads again, the newest kept.
    let (stalled_got, stalled_last) = read_big(&mut stalled, n);
    assert_eq!(stalled_got as u64 + dropped_at_end, n as u64, "read {stalled_got}, dropped {dropped_at_end}");
    assert_eq!(stalled_last, reader_last, "the stalled client's last message is the newest");
    assert_eq!(dropped(), dropped_at_end);
    let stats = server.stats();
    assert_eq!((stats.clients, stats.client_dropped), (1, dropped_at_end), "{stats:?}");
    drop(stalled);
    eprintln!("{n} x 64 KiB: the stalled client read {stalled_got}, {dropped_at_end} dropped; {stats:?}");
}
