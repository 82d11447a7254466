//! The latency suite's local peers (bench/README.md, "latency"; the Ach paper Fig. 8): one sender, one or two receivers
//! and hop relays, each a separate process, over the Nerve shared-memory channel (and Ach's C API on it, and the bus on it from Rust and from nerve.h's C ABI), kernel IPC (pipe, POSIX message
//! queue, Unix stream and datagram sockets, UDP and TCP on loopback), iceoryx2, and two floors (a futex word and a
//! busy-spun cache line in a shared page).
//!
//! Every transport is an address `scheme:target[,target...]` and two small traits: [`Tx`] (the sender's side; with
//! several targets it sends to each in turn) and [`Rx`] (one receiver). The three hidden roles of `nerve-bench` are
//! written once over them:
//!
//! ```text
//! nerve-bench ipc-recv ADDR COUNT MAX_MS        creates its endpoint, prints "ready", receives until COUNT, a stop
//!                                               message, end of stream or MAX_MS; prints "recv N", "gaps G",
//!                                               "missed M", "lat NS" per message, "end"
//! nerve-bench ipc-send ADDR COUNT HZ SIZE       sends COUNT messages at HZ (absolute-time sleeps), then stops;
//!                                               prints "sent N"
//! nerve-bench ipc-hop IN OUT MAX_MS             a relay: creates IN, connects OUT, prints "ready", passes every
//!                                               message on unchanged until a stop message
//! ```
//!
//! A message is [`SIZE`] bytes: its sequence number (u64 LE), the sender's CLOCK_MONOTONIC stamp in ns (u64 LE), and
//! filler; sequence number [`STOP`] ends a run. `gaps` counts sequence numbers a receiver never saw; `missed` is what
//! the transport itself reported as overwritten (shared-memory rings), included in `gaps`.

mod ach;
mod bus;
mod floor;
mod iox;
mod kernel;
mod shm;
mod sys;

use std::fmt;
use std::io::Write;
use std::process::ExitCode;

use crate::harness::clock::{mono_ns, set_timer_slack, sleep_until_ns};

/// The message size of every peer.
pub const SIZE: usize = 64;
/// The sequence number of a stop message.
pub const STOP: u64 = u64::MAX;

/// The role words, for the driver.
pub const ROLE_RECV: &str = "ipc-recv";
/// The sender's role word.
pub const ROLE_SEND: &str = "ipc-send";
/// The relay's role word.
pub const ROLE_HOP: &str = "ipc-hop";

/// What went wrong in a peer, with what it was doing.
#[derive(Debug)]
pub struct IpcError {
    what: String,
    kind: IpcErrorKind,
}

/// The kind of an [`IpcError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum IpcErrorKind {
    /// A system call failed.
    Os(std::io::Error),
    /// Bad arguments or a malformed message.
    Bad,
    /// iceoryx2 refused (its error, printed with `Debug`: its `Display` names only the variant).
    Iceoryx(String),
    /// The Nerve shared-memory channel refused.
    Shm(nerve_shm::ShmError),
}

impl IpcError {
    fn os(what: impl Into<String>, e: std::io::Error) -> IpcError {
        IpcError { what: what.into(), kind: IpcErrorKind::Os(e) }
    }

    fn bad(what: impl Into<String>) -> IpcError {
        IpcError { what: what.into(), kind: IpcErrorKind::Bad }
    }

    fn iox(what: impl Into<String>, e: impl fmt::Debug) -> IpcError {
        IpcError { what: what.into(), kind: IpcErrorKind::Iceoryx(format!("{e:?}")) }
    }
}

impl fmt::Display for IpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            IpcErrorKind::Os(e) => write!(f, "{}: {e}", self.what),
            IpcErrorKind::Bad => write!(f, "{}", self.what),
            IpcErrorKind::Iceoryx(e) => write!(f, "{}: iceoryx2: {e}", self.what),
            IpcErrorKind::Shm(e) => write!(f, "{}: {e}", self.what),
        }
    }
}

impl std::error::Error for IpcError {}

/// What one [`Rx::recv`] call got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Got {
    /// A message is in the buffer.
    Msg,
    /// Nothing yet (a wait slice ended); the caller checks its deadline and calls again.
    Idle,
    /// The sender went away (end of stream).
    Closed,
}

/// A receiver's end of a transport.
pub trait Rx {
    /// Called after "ready": waits for the sender to connect where the transport has connections (accept, a FIFO's
    /// open), until `deadline_ns`.
    fn attach(&mut self, _deadline_ns: u64) -> Result<(), IpcError> {
        Ok(())
    }

    /// Waits for the next message, returning [`Got::Idle`] at the latest about 50 ms after `deadline_ns` (most
    /// transports wait in slices and return Idle at each; the caller loops until its own deadline).
    fn recv(&mut self, buf: &mut [u8; SIZE], deadline_ns: u64) -> Result<Got, IpcError>;

    /// Messages the transport reported as overwritten before this reader got them.
    fn missed(&self) -> u64 {
        0
    }
}

/// A sender's end: one or more receivers' endpoints.
pub trait Tx {
    /// Sends one message to every receiver (in turn, for transports with one endpoint per receiver).
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError>;
}

/// Splits `scheme:t1,t2` into the scheme and its targets.
fn split(addr: &str) -> Result<(&str, Vec<&str>), IpcError> {
    let (scheme, rest) =
        addr.split_once(':').ok_or_else(|| IpcError::bad(format!("address {addr:?} has no scheme")))?;
    let targets: Vec<&str> = rest.split(',').collect();
    if targets.iter().any(|t| t.is_empty()) {
        return Err(IpcError::bad(format!("address {addr:?} has an empty target")));
    }
    Ok((scheme, targets))
}

fn one(addr: &str) -> Result<(&str, &str), IpcError> {
    match split(addr)? {
        (s, t) if t.len() == 1 => Ok((s, t[0])),
        _ => Err(IpcError::bad(format!("a receiver takes one target: {addr:?}"))),
    }
}

/// Creates a receiver's endpoint for `addr`.
pub fn open_rx(addr: &str) -> Result<Box<dyn Rx>, IpcError> {
    let (scheme, target) = one(addr)?;
    Ok(match scheme {
        "pipe" => Box::new(kernel::PipeRx::create(target)?),
        "mq" => Box::new(kernel::MqRx::create(target)?),
        "ustream" => Box::new(kernel::UnixStreamRx::create(target)?),
        "udgram" => Box::new(kernel::UnixDgramRx::create(target)?),
        "udp" => Box::new(kernel::UdpRx::create(target)?),
        "tcp" => Box::new(kernel::TcpRx::create(target)?),
        "shm-wait" => Box::new(shm::ShmRx::open(target, false, false)?),
        "shm-poll" => Box::new(shm::ShmRx::open(target, true, false)?),
        "shm-sum" => Box::new(shm::ShmRx::open(target, false, true)?),
        "ach-wait" => Box::new(ach::AchRx::open(target, false)?),
        "ach-poll" => Box::new(ach::AchRx::open(target, true)?),
        "bus-wait" => Box::new(bus::BusRx::open(target, false)?),
        "bus-poll" => Box::new(bus::BusRx::open(target, true)?),
        "cbus-wait" => Box::new(bus::CBusRx::open(target, false)?),
        "cbus-poll" => Box::new(bus::CBusRx::open(target, true)?),
        "futex" => Box::new(floor::FloorRx::open(target, true)?),
        "spin" => Box::new(floor::FloorRx::open(target, false)?),
        "iox-poll" => Box::new(iox::IoxRx::open(target, false)?),
        "iox-event" => Box::new(iox::IoxRx::open(target, true)?),
        other => return Err(IpcError::bad(format!("unknown transport {other:?} in {addr:?}"))),
    })
}

/// Connects a sender to every target of `addr`.
pub fn open_tx(addr: &str) -> Result<Box<dyn Tx>, IpcError> {
    let (scheme, targets) = split(addr)?;
    let single = || -> Result<&str, IpcError> {
        match targets.as_slice() {
            [t] => Ok(t),
            _ => {
                Err(IpcError::bad(format!("{scheme} is one publish read by every receiver: one target, not {addr:?}")))
            }
        }
    };
    Ok(match scheme {
        "pipe" => Box::new(kernel::PipeTx::open(&targets)?),
        "mq" => Box::new(kernel::MqTx::open(&targets)?),
        "ustream" => Box::new(kernel::UnixStreamTx::open(&targets)?),
        "udgram" => Box::new(kernel::UnixDgramTx::open(&targets)?),
        "udp" => Box::new(kernel::UdpTx::open(&targets)?),
        "tcp" => Box::new(kernel::TcpTx::open(&targets)?),
        "shm-wait" | "shm-poll" | "shm-sum" => Box::new(shm::ShmTx::open(single()?)?),
        "ach-wait" | "ach-poll" => Box::new(ach::AchTx::open(single()?)?),
        "bus-wait" | "bus-poll" => Box::new(bus::BusTx::open(single()?)?),
        "cbus-wait" | "cbus-poll" => Box::new(bus::CBusTx::open(single()?)?),
        "futex" => Box::new(floor::FloorTx::open(single()?, true)?),
        "spin" => Box::new(floor::FloorTx::open(single()?, false)?),
        "iox-poll" => Box::new(iox::IoxTx::open(single()?, false)?),
        "iox-event" => Box::new(iox::IoxTx::open(single()?, true)?),
        other => return Err(IpcError::bad(format!("unknown transport {other:?} in {addr:?}"))),
    })
}

fn seq_of(msg: &[u8; SIZE]) -> u64 {
    u64::from_le_bytes([msg[0], msg[1], msg[2], msg[3], msg[4], msg[5], msg[6], msg[7]])
}

fn stamp_of(msg: &[u8; SIZE]) -> u64 {
    u64::from_le_bytes([msg[8], msg[9], msg[10], msg[11], msg[12], msg[13], msg[14], msg[15]])
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, IpcError> {
    s.parse().map_err(|_| IpcError::bad(format!("bad {what}: {s:?}")))
}

fn say(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

/// The hidden roles: `Some(exit code)` when `args[1]` is one of them.
pub fn hidden_role(args: &[String]) -> Option<ExitCode> {
    let role = args.get(1)?;
    if ![ROLE_RECV, ROLE_SEND, ROLE_HOP].contains(&role.as_str()) {
        return None;
    }
    set_timer_slack();
    let a: Vec<&str> = args[2..].iter().map(String::as_str).collect();
    let r = match (role.as_str(), a.as_slice()) {
        (ROLE_RECV, [addr, count, max_ms]) => {
            num(count, "COUNT").and_then(|c| num(max_ms, "MAX_MS").and_then(|m| recv_role(addr, c, m)))
        }
        (ROLE_SEND, [addr, count, hz, size]) => num(count, "COUNT").and_then(|c| {
            num::<f64>(hz, "HZ").and_then(|h| num::<usize>(size, "SIZE").and_then(|s| send_role(addr, c, h, s)))
        }),
        (ROLE_HOP, [input, output, max_ms]) => num(max_ms, "MAX_MS").and_then(|m| hop_role(input, output, m)),
        _ => Err(IpcError::bad(format!("bad arguments for {role}: {:?} (see src/peers/ipc/mod.rs)", &args[2..]))),
    };
    Some(match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nerve-bench {role}: {e}");
            ExitCode::from(3)
        }
    })
}

fn recv_role(addr: &str, count: usize, max_ms: u64) -> Result<(), IpcError> {
    let mut rx = open_rx(addr)?;
    let mut lat: Vec<u64> = Vec::with_capacity(count);
    say("ready");
    let deadline = mono_ns() + max_ms * 1_000_000;
    rx.attach(deadline)?;
    let mut buf = [0u8; SIZE];
    let mut next: u64 = 0;
    let mut gaps: u64 = 0;
    while lat.len() < count && mono_ns() < deadline {
        match rx.recv(&mut buf, deadline)? {
            Got::Msg => {
                let now = mono_ns();
                let seq = seq_of(&buf);
                if seq == STOP {
                    break;
                }
                lat.push(now.wrapping_sub(stamp_of(&buf)));
                if seq >= next {
                    gaps += seq - next;
                    next = seq + 1;
                }
            }
            Got::Idle => {}
            Got::Closed => break,
        }
    }
    let mut o = std::io::BufWriter::new(std::io::stdout().lock());
    let w = |e: std::io::Error| IpcError::os("writing stdout", e);
    writeln!(o, "recv {}", lat.len()).map_err(w)?;
    writeln!(o, "gaps {gaps}").map_err(w)?;
    writeln!(o, "missed {}", rx.missed()).map_err(w)?;
    for x in &lat {
        writeln!(o, "lat {x}").map_err(w)?;
    }
    writeln!(o, "end").map_err(w)?;
    o.flush().map_err(w)
}

fn send_role(addr: &str, count: u64, hz: f64, size: usize) -> Result<(), IpcError> {
    if size != SIZE {
        return Err(IpcError::bad(format!("the IPC peers send {SIZE}-byte messages, not {size}")));
    }
    if !(hz.is_finite() && hz > 0.0 && hz <= 1e7) {
        return Err(IpcError::bad(format!("HZ must be in (0, 1e7], not {hz}")));
    }
    let mut tx = open_tx(addr)?;
    let mut msg = [0u8; SIZE];
    for (i, b) in msg.iter_mut().enumerate().skip(16) {
        *b = (i * 7) as u8;
    }
    let period = (1e9 / hz) as u64;
    let t0 = mono_ns() + period;
    for i in 0..count {
        sleep_until_ns(t0 + i * period);
        msg[0..8].copy_from_slice(&i.to_le_bytes());
        msg[8..16].copy_from_slice(&mono_ns().to_le_bytes());
        tx.send(&msg)?;
    }
    msg[0..8].copy_from_slice(&STOP.to_le_bytes());
    for _ in 0..3 {
        sleep_until_ns(mono_ns() + 5_000_000);
        // A receiver that got all its messages has gone already: a failed stop message is expected then.
        let _ = tx.send(&msg);
    }
    say(&format!("sent {count}"));
    Ok(())
}

fn hop_role(input: &str, output: &str, max_ms: u64) -> Result<(), IpcError> {
    let mut rx = open_rx(input)?;
    let mut tx = open_tx(output)?;
    say("ready");
    let mut deadline = mono_ns() + max_ms * 1_000_000;
    rx.attach(deadline)?;
    let mut buf = [0u8; SIZE];
    let mut stops = 0;
    while stops < 3 && mono_ns() < deadline {
        match rx.recv(&mut buf, deadline)? {
            Got::Msg => {
                let stop = seq_of(&buf) == STOP;
                let r = tx.send(&buf);
                if stop {
                    stops += 1;
                    deadline = deadline.min(mono_ns() + 100_000_000);
                } else {
                    r?;
                }
            }
            Got::Idle => {}
            Got::Closed => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_split_into_scheme_and_targets() {
        let (s, t) = split("pipe:/a,/b").unwrap();
        assert_eq!((s, t), ("pipe", vec!["/a", "/b"]));
        assert!(split("nothing").is_err());
        assert!(split("pipe:/a,").is_err());
        assert!(one("pipe:/a,/b").is_err());
        assert!(open_rx("warp:/x").is_err());
        assert!(open_tx("futex:/a,/b").is_err());
    }

    /// Every transport carries messages in order between two threads of this process (the benchmark runs them in
    /// separate processes; the code is the same).
    #[test]
    fn every_transport_delivers_in_order() {
        let dir = std::env::temp_dir().join(format!("nerve-bench-ipc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let pid = std::process::id();
        let port = 20_000 + (pid % 5_000) as u16 * 2;
        let addrs = [
            format!("pipe:{d}/fifo"),
            format!("mq:/nerve-bench-test-{pid}"),
            format!("ustream:{d}/stream.sock"),
            format!("udgram:{d}/dgram.sock"),
            format!("udp:127.0.0.1:{port}"),
            format!("tcp:127.0.0.1:{}", port + 1),
            format!("shm-wait:{d}/wait"),
            format!("shm-poll:{d}/poll"),
            format!("shm-sum:{d}/sum"),
            format!("ach-wait:{d}/achwait"),
            format!("ach-poll:{d}/achpoll"),
            format!("futex:{d}/futex.page"),
            format!("spin:{d}/spin.page"),
            format!("iox-poll:nerve-bench/test/{pid}/poll"),
            format!("iox-event:nerve-bench/test/{pid}/event"),
        ];
        for addr in addrs {
            let mut rx = open_rx(&addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
            let a2 = addr.clone();
            let sender = std::thread::spawn(move || {
                let mut tx = open_tx(&a2).unwrap_or_else(|e| panic!("{a2}: {e}"));
                let mut m = [0u8; SIZE];
                for i in 0..20u64 {
                    m[0..8].copy_from_slice(&i.to_le_bytes());
                    m[8..16].copy_from_slice(&mono_ns().to_le_bytes());
                    tx.send(&m).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                // Keep the sender's end open until the receiver has read (streams close on drop).
                std::thread::sleep(std::time::Duration::from_millis(200));
            });
            let deadline = mono_ns() + 5_000_000_000;
            rx.attach(deadline).unwrap_or_else(|e| panic!("{addr}: {e}"));
            let mut got = Vec::new();
            let mut buf = [0u8; SIZE];
            while got.len() < 20 && mono_ns() < deadline {
                if rx.recv(&mut buf, deadline).unwrap() == Got::Msg {
                    got.push(seq_of(&buf));
                }
            }
            assert_eq!(got, (0..20).collect::<Vec<u64>>(), "{addr}");
            sender.join().unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
