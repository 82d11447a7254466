//! Multicast sockets: [`Sender`] publishes messages as LCM datagrams, [`Receiver`] turns datagrams back into
//! messages, counting and dropping everything malformed.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use nerve_codec::now_utime;
use socket2::{Domain, Protocol, Socket, Type};

use crate::batch::{BatchError, Dest, Scratch};
use crate::config::{Config, Interface};
use crate::error::{io_err, on_send_error, Retry, UdpmError, SEND_PAUSE};
use crate::packet::{self, Datagram, Malformed, Plan};
use crate::reassembly::{Reassembler, ReassemblyStats};
use crate::sequence::Sequences;
use crate::sys;

/// The IPv4 address of the interface the config names (UNSPECIFIED for the kernel's choice).
fn interface_addr(iface: &Interface) -> Result<Ipv4Addr, UdpmError> {
    match iface {
        Interface::Default => Ok(Ipv4Addr::UNSPECIFIED),
        Interface::Addr(a) => Ok(*a),
        Interface::Name(name) => match sys::interface_by_name(name) {
            Ok(Some(addr)) => Ok(addr),
            Ok(None) => Err(UdpmError::UnknownInterface { name: name.clone() }),
            Err(source) => Err(UdpmError::Io { op: "listing network interfaces".into(), source }),
        },
    }
}

/// LCM's self-test channel.
pub const SELF_TEST_CHANNEL: &str = "LCM_SELF_TEST";
/// LCM's self-test payload (13 bytes, no NUL).
pub const SELF_TEST_PAYLOAD: &[u8] = b"lcm self test";

/// Publishes messages to a multicast group. All fragments of a message leave from this one socket (receivers key
/// reassembly on the source address), in order, fragment 0 first, never interleaved with another message.
#[derive(Debug)]
pub struct Sender {
    socket: UdpSocket,
    group: Ipv4Addr,
    port: u16,
    seq: u32,
    datagram: Vec<u8>,
    /// Scratch space of batched sends, kept between them.
    batch: Scratch,
}

impl Sender {
    /// Opens the send socket and checks that the group is routed.
    pub fn open(config: &Config) -> Result<Sender, UdpmError> {
        let socket =
            Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(io_err("creating a UDP socket"))?;
        socket.set_multicast_ttl_v4(config.ttl as u32).map_err(io_err("setting the multicast TTL"))?;
        socket.set_multicast_loop_v4(true).map_err(io_err("enabling multicast loopback"))?;
        let iface = interface_addr(&config.interface)?;
        if !iface.is_unspecified() {
            socket.set_multicast_if_v4(&iface).map_err(io_err(format!("choosing interface {iface} for multicast")))?;
        }
        // Like LCM: a throwaway connect() tells at once whether the group has a route, instead of every send failing.
        let probe = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(io_err("creating a probe socket"))?;
        if let Err(source) = probe.connect(SocketAddrV4::new(config.group, config.port)) {
            return Err(UdpmError::NoRoute { group: config.group, source });
        }
        let socket: UdpSocket = socket.into();
        Ok(Sender {
            batch: Scratch::for_socket(&socket, config.gso),
            socket,
            group: config.group,
            port: config.port,
            seq: 0,
            datagram: Vec::with_capacity(65536),
        })
    }

    /// The local address datagrams leave from.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Sends one message to the group's port.
    pub fn send(&mut self, channel: &str, payload: &[u8]) -> Result<(), UdpmError> {
        self.send_to_port(self.port, channel, payload)
    }

    /// Sends one message to `port` on the group (multi-port mode picks the port per channel).
    pub fn send_to_port(&mut self, port: u16, channel: &str, payload: &[u8]) -> Result<(), UdpmError> {
        let dest = SocketAddrV4::new(self.group, port);
        let plan = packet::plan(channel, payload.len()).map_err(UdpmError::Send)?;
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        match plan {
            Plan::Small => {
                packet::write_small(&mut self.datagram, seq, channel, payload);
                self.send_datagram(dest)
            }
            Plan::Fragmented { count } => {
                for n in 0..count {
                    packet::write_fragment(&mut self.datagram, seq, channel, payload, n, count);
                    self.send_datagram(dest)?;
                }
                Ok(())
            }
        }
    }

    /// Sends `messages` (channel, payload) in order to the group's port, exactly as [`Sender::send`] on each would
    /// (the same datagrams, the same sequence numbers), in as few system calls as the kernel allows.
    ///
    /// A message that cannot be sent (a channel too long, a message too large, a socket error other than a full
    /// queue, which is waited out) stops the batch there: what came before it is sent, nothing after it is, and the
    /// sequence number continues as if `send` had been called up to it.
    pub fn send_batch(&mut self, messages: &[(&str, &[u8])]) -> Result<(), BatchError> {
        let port = self.port;
        self.send_batch_to_ports(messages, |_| port)
    }

    /// Like [`Sender::send_batch`], each message to the port `port_of` gives for its channel (multi-port mode).
    pub fn send_batch_to_ports(
        &mut self,
        messages: &[(&str, &[u8])],
        mut port_of: impl FnMut(&str) -> u16,
    ) -> Result<(), BatchError> {
        let mut to = Dest { socket: &self.socket, group: self.group, seq: &mut self.seq };
        self.batch.send(&mut to, messages, &mut port_of)
    }

    fn send_datagram(&self, dest: SocketAddrV4) -> Result<(), UdpmError> {
        loop {
            match self.socket.send_to(&self.datagram, dest) {
                Ok(_) => return Ok(()),
                Err(e) => match on_send_error(e, self.group, dest) {
                    Retry::Now => {}
                    Retry::AfterPause => std::thread::sleep(SEND_PAUSE),
                    Retry::Fail(e) => return Err(e),
                },
            }
        }
    }
}

/// A message received whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Its channel.
    pub channel: String,
    /// Its bytes.
    pub payload: Vec<u8>,
    /// The sender's address.
    pub sender: SocketAddr,
    /// The sender's sequence number.
    pub seq: u32,
    /// When it was received (its last datagram), microseconds since the epoch.
    pub recv_utime: i64,
}

/// What a receiver has seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecvStats {
    /// Datagrams read.
    pub datagrams: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Messages delivered (small and reassembled).
    pub messages: u64,
    /// Malformed datagrams dropped, by reason (in the order of [`Malformed::ALL`]).
    pub malformed: [u64; 8],
    /// Reassembly counters.
    pub reassembly: ReassemblyStats,
    /// Datagrams for this socket that the kernel dropped because its receive buffer was full (`SO_MEMINFO`'s drop
    /// count, read by [`Receiver::stats`] and [`KernelDrops::total`]; [`Receiver::counters`] gives the last count
    /// read), since it opened: otherwise invisible to everything above (spy, nerve log). A dropped fragment also
    /// makes its message incomplete: such a message counts here once per dropped fragment and once in the
    /// reassembly's `dropped_incomplete`.
    pub kernel_dropped: u64,
    /// Messages that [`Receiver::set_filter`]'s filter turned away: read, never copied out of the read buffer nor
    /// reassembled (a fragmented one is turned away at its fragment 0, which carries the channel).
    pub unwanted: u64,
    /// Messages of which not one datagram arrived, from gaps in each sender's sequence numbers (see
    /// [`crate::sequence`]); never overlaps the reassembly's incomplete messages, and covers losses anywhere on
    /// the way (the network between hosts, the kernel). `None` where a receiver cannot tell: a receiver opened on
    /// one port of a multi-port group ([`Receiver::open_port`]) sees only part of each sender's sequence.
    pub unseen: Option<u64>,
}

impl RecvStats {
    /// All malformed datagrams, whatever the reason.
    pub fn malformed_total(&self) -> u64 {
        self.malformed.iter().sum()
    }

    /// Malformed datagrams for one reason.
    pub fn malformed(&self, reason: Malformed) -> u64 {
        self.malformed[Malformed::ALL.iter().position(|&r| r == reason).expect("every reason is listed")]
    }
}

static WARNED_RCVBUF: AtomicBool = AtomicBool::new(false);

/// Receives datagrams for a group and port and turns them into messages.
pub struct Receiver {
    /// Shared only with `kernel_drops`, which holds it weakly.
    socket: Arc<UdpSocket>,
    reassembler: Reassembler,
    reads: Reads,
    stats: RecvStats,
    rcvbuf: Option<(usize, usize)>,
    kernel_drops: Arc<KernelDrops>,
    /// Each sender's sequence, when this receiver hears all of it (udpm).
    sequences: Option<Sequences>,
    /// The last read found the socket empty (failed, or took fewer datagrams than it had room for) and nothing has
    /// waited on it since: the next [`Receiver::recv`] that may wait goes straight to waiting (another non-blocking
    /// read would most likely fail, and a wait returns at once if something came), and [`Receiver::recv_queued`]
    /// reads no more.
    found_empty: bool,
    /// The socket's `SO_RCVTIMEO` as last set (`None`: never set; `Some(None)`: no timeout).
    read_timeout: Option<Option<Duration>>,
    /// Which messages to take (by channel and sender); `None` takes all.
    filter: Option<Filter>,
}

/// The kernel's count of the datagrams it dropped for one [`Receiver`]'s socket because its receive buffer was full
/// (`SO_MEMINFO`'s drop count, 32 bits, carried past its wrap), readable from any thread while the receiver reads:
/// so a receive thread need not ask the kernel each time it publishes its counters, only whoever reads them does.
/// Once the receiver is dropped (its socket closed) it keeps the last count read.
pub struct KernelDrops {
    socket: Weak<UdpSocket>,
    /// The kernel's counter as last seen (it wraps), and the drops counted so far (they do not).
    seen: Mutex<(u32, u64)>,
}

impl KernelDrops {
    /// The drops so far, asking the kernel (one system call). A kernel that cannot tell (before Linux 4.18), or a
    /// closed socket, leaves the count where it was.
    pub fn total(&self) -> u64 {
        let mut seen = self.seen.lock().expect("kernel drops lock");
        let Some(socket) = self.socket.upgrade() else { return seen.1 };
        if let Ok(now) = sys::socket_drops(&socket) {
            *seen = (now, seen.1 + u64::from(now.wrapping_sub(seen.0)));
        }
        seen.1
    }

    /// The drops as last read by [`KernelDrops::total`], without asking the kernel.
    pub fn last(&self) -> u64 {
        self.seen.lock().expect("kernel drops lock").1
    }
}

/// See [`Receiver::set_filter`].
pub type Filter = Box<dyn FnMut(&str, SocketAddr) -> bool + Send>;

/// Datagrams read from the socket, in `recvmmsg` batches, and not yet absorbed.
///
/// A batch has room for as many datagrams as the last one that filled every slot, doubled, up to [`MAX_BATCH`]: a
/// socket that never holds more than one datagram when it is read keeps one 64 KiB slot, and slots are allocated
/// only when a burst needs them.
#[derive(Default)]
struct Reads {
    /// One buffer per datagram of a batch, each big enough for any UDP datagram.
    slots: Vec<Vec<u8>>,
    /// How many slots the next batch may fill.
    room: usize,
    /// Length and sender of each datagram of the current batch, in the order read.
    got: Vec<(usize, SocketAddrV4)>,
    /// The next of them to absorb.
    next: usize,
    /// The last batch took as many datagrams as it had room for, so the socket may hold more (a batch that took
    /// fewer found it empty).
    full: bool,
}

/// Most datagrams one read of the socket takes: a burst of this many costs one system call instead of one each
/// (about a quarter of the kernel's time per datagram on loopback). Each slot is 64 KiB, allocated when first used.
const MAX_BATCH: usize = sys::MAX_RECV_BATCH;

/// A slot's size: the largest UDP payload over IPv4 is 65507 bytes.
const SLOT: usize = 65536;

/// When [`Receiver::recv_with`] returns without a message (besides its time being up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// Only then (`recv`).
    Message,
    /// Also once the datagrams read made none (`recv_until_activity`).
    Activity,
    /// Also once the socket was found empty (`recv_queued`).
    Queued,
}

impl Reads {
    /// Whether every datagram read has been taken.
    fn is_empty(&self) -> bool {
        self.next >= self.got.len()
    }

    /// The next datagram read and not yet absorbed: its slot, length and sender.
    fn take(&mut self) -> Option<(usize, usize, SocketAddrV4)> {
        let &(n, from) = self.got.get(self.next)?;
        let slot = self.next;
        self.next += 1;
        Some((slot, n, from))
    }

    /// Reads a batch, waiting for its first datagram if `wait` (every earlier datagram must have been taken). A read
    /// that may not wait and finds the socket empty fails with `WouldBlock`, as a single read would.
    fn fill(&mut self, socket: &UdpSocket, wait: bool) -> io::Result<()> {
        debug_assert!(self.next >= self.got.len(), "a batch read over datagrams not yet absorbed");
        self.room = self.room.clamp(1, MAX_BATCH);
        while self.slots.len() < self.room {
            self.slots.push(vec![0; SLOT]);
        }
        self.got.clear();
        self.next = 0;
        let read = sys::recvmmsg(socket, &mut self.slots[..self.room], wait, &mut self.got)?;
        self.full = read == self.room;
        if self.full {
            self.room *= 2;
        }
        Ok(())
    }
}

/// How far short of a wait's end a blocking read's timeout stays: the kernel rounds `SO_RCVTIMEO` up to a whole
/// clock tick, and at the slowest kernel clock (HZ=100) a tick is this long.
const TICK_MARGIN: Duration = Duration::from_millis(10);

/// How many datagrams that make no message a [`Receiver::recv`] that may not wait reads before it returns.
pub const READ_TURN: usize = 64;

impl Receiver {
    /// Binds `group:port` (shared with other processes), joins the group, and sets the receive buffer. Senders'
    /// sequence numbers are followed, so whole messages that never arrived are counted ([`RecvStats::unseen`]).
    pub fn open(config: &Config) -> Result<Receiver, UdpmError> {
        let mut rx = Receiver::open_port(config, config.port)?;
        rx.sequences = Some(Sequences::default());
        Ok(rx)
    }

    /// Like [`Receiver::open`] on another port of the group (multi-port mode), without following sequence numbers:
    /// a multi-port sender numbers its messages across all its ports.
    pub fn open_port(config: &Config, port: u16) -> Result<Receiver, UdpmError> {
        let socket =
            Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(io_err("creating a UDP socket"))?;
        sys::share_port(&socket).map_err(io_err("sharing the port with other processes"))?;
        let mut rcvbuf = None;
        if let Some(want) = config.recv_buf_size {
            socket.set_recv_buffer_size(want).map_err(io_err("setting SO_RCVBUF"))?;
            let granted = sys::granted_rcvbuf(socket.recv_buffer_size().map_err(io_err("reading SO_RCVBUF"))?);
            rcvbuf = Some((want, granted));
            if granted < want && !WARNED_RCVBUF.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "nerve: udpm: asked for a {want}-byte receive buffer, the kernel granted {granted}; \
                     large messages may be lost. {}",
                    sys::rcvbuf_advice(want)
                );
            }
        }
        let bind = SocketAddrV4::new(sys::receive_bind_addr(config.group), port);
        socket.bind(&bind.into()).map_err(io_err(format!("binding {bind}")))?;
        let iface = interface_addr(&config.interface)?;
        socket.join_multicast_v4(&config.group, &iface).map_err(|source| {
            if sys::is_join_unroutable(&source) {
                UdpmError::NoRoute { group: config.group, source }
            } else {
                UdpmError::Io { op: format!("joining {} on {iface}", config.group), source }
            }
        })?;
        let socket = Arc::new(UdpSocket::from(socket));
        let kernel_drops = Arc::new(KernelDrops { socket: Arc::downgrade(&socket), seen: Mutex::new((0, 0)) });
        Ok(Receiver {
            socket,
            reassembler: Reassembler::new(config.limits),
            reads: Reads::default(),
            stats: RecvStats::default(),
            rcvbuf,
            kernel_drops,
            sequences: None,
            found_empty: false,
            read_timeout: None,
            filter: None,
        })
    }

    /// Takes only the messages for which `wanted(channel, sender)` is true. The others cost a read and a parse of
    /// their header, nothing more: no copy, and a fragmented one is not reassembled. On a multicast group every
    /// process gets every datagram, and most are usually for someone else.
    pub fn set_filter(&mut self, wanted: Filter) {
        self.filter = Some(wanted);
    }

    /// The receive buffer asked for and granted, if one was asked for.
    pub fn rcvbuf(&self) -> Option<(usize, usize)> {
        self.rcvbuf
    }

    /// What reassembly holds now: incomplete messages and the bytes reserved for them (at most the configured
    /// [`crate::Limits`]' `max_messages_in_flight` and `max_bytes_in_flight`).
    pub fn reassembly_in_flight(&self) -> (usize, usize) {
        (self.reassembler.in_flight(), self.reassembler.bytes_in_flight())
    }

    /// Counters so far, the kernel's drops included (one system call asks for them).
    pub fn stats(&self) -> RecvStats {
        let mut s = self.counters();
        s.kernel_dropped = self.kernel_drops.total();
        s
    }

    /// Counters so far without asking the kernel: `kernel_dropped` is the count as last read (by
    /// [`Receiver::stats`] or through [`Receiver::kernel_drops`]). No system call.
    pub fn counters(&self) -> RecvStats {
        let mut s = self.stats;
        s.reassembly = self.reassembler.stats();
        s.unseen = self.sequences.as_ref().map(Sequences::unseen);
        s.kernel_dropped = self.kernel_drops.last();
        s
    }

    /// The kernel's drop count of this receiver's socket, for another thread to read when it wants it.
    pub fn kernel_drops(&self) -> Arc<KernelDrops> {
        Arc::clone(&self.kernel_drops)
    }

    /// The socket, e.g. to poll it (then read with `recv(Some(Duration::ZERO))`). It is in blocking mode, under a
    /// receive timeout that [`Receiver::recv`] manages.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// Waits up to `timeout` (forever with `None`) for the next whole message. Malformed datagrams and fragments of
    /// messages not yet complete are absorbed on the way.
    ///
    /// Datagrams already queued are read in batches, up to 16 in one non-blocking `recvmmsg`, and absorbed one by
    /// one from there. When the socket is empty, the wait is itself a read: a blocking `recvmmsg` that returns with
    /// the first datagram (and whatever came with it) under a receive timeout (`SO_RCVTIMEO`, kept a clock tick
    /// short of the deadline; a wait under two [`TICK_MARGIN`]s is a `poll`), so the datagram that ends a wait is in
    /// hand when the thread wakes, with no `poll` to return from and no second call to make. A call that may not wait
    /// (`Some(Duration::ZERO)`) always reads, and returns `None` when the socket is empty, or after [`READ_TURN`]
    /// datagrams that made no message (fragments, malformed or filtered ones): a caller draining a flood of traffic it
    /// does not want gets control back, to run its callbacks.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Option<Message>, UdpmError> {
        self.recv_with(timeout, Until::Message)
    }

    /// Like [`Receiver::recv`], but also returns `None` once the datagrams it read made no message (filtered ones,
    /// such as the caller's own, or fragments of a message not yet whole): for a caller that waits on the socket for
    /// other work too, and must look at it whenever the socket stirs (a `handle()` caller reading the socket itself
    /// learns of its own process's publications, queued in-process, when their datagrams come back).
    pub fn recv_until_activity(&mut self, timeout: Option<Duration>) -> Result<Option<Message>, UdpmError> {
        self.recv_with(timeout, Until::Activity)
    }

    /// [`Receiver::recv`], [`Receiver::recv_until_activity`] or [`Receiver::recv_queued`].
    fn recv_with(&mut self, timeout: Option<Duration>, until: Until) -> Result<Option<Message>, UdpmError> {
        let queued_only = until == Until::Queued;
        let deadline = timeout.map(|t| Instant::now() + t);
        // A call that may not wait always reads: it is how a caller drains the socket.
        let may_wait = timeout.is_none_or(|t| !t.is_zero());
        let mut absorbed = 0;
        // Whether this call has read the socket: one whose time is up before it could wait must still read once.
        let mut has_read = false;
        loop {
            if let Some((slot, n, from)) = self.reads.take() {
                if let Some(m) = self.absorb_slot(slot, n, from) {
                    return Ok(Some(m));
                }
                absorbed += 1;
                if (!may_wait && absorbed == READ_TURN) || (until == Until::Activity && self.reads.is_empty()) {
                    return Ok(None);
                }
                continue;
            }
            if queued_only && self.found_empty {
                return Ok(None);
            }
            let read = if self.found_empty && may_wait {
                let left = match deadline {
                    None => None,
                    Some(d) => match d.checked_duration_since(Instant::now()) {
                        Some(left) if !left.is_zero() => Some(left),
                        _ if !has_read => {
                            self.found_empty = false;
                            continue;
                        }
                        _ => return Ok(None),
                    },
                };
                self.found_empty = false;
                match self.wait_read(left) {
                    Ok(true) => Ok(()),
                    // The wait ended without a datagram: the deadline decides whether to wait more.
                    Ok(false) => {
                        self.found_empty = true;
                        continue;
                    }
                    Err(e) => Err(e),
                }
            } else {
                self.reads.fill(&self.socket, false)
            };
            has_read = true;
            match read {
                Ok(()) => self.found_empty = !self.reads.full,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.found_empty = true;
                    if !may_wait {
                        return Ok(None);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(UdpmError::Io { op: "receiving".into(), source: e }),
            }
        }
    }

    /// The next message that is already here: one from the datagrams read and not yet absorbed, or, when the last
    /// read filled its batch (so more may be queued), from a read without waiting. `None` once a read has found the
    /// socket empty, without another read to confirm it. For draining after [`Receiver::recv`] returned a message:
    /// it saves the read that would find the socket empty (a wait that follows returns at once if something came
    /// meanwhile). Not for a caller woken by `poll` on [`Receiver::socket`]: that one must read, with
    /// `recv(Some(Duration::ZERO))`.
    pub fn recv_queued(&mut self) -> Result<Option<Message>, UdpmError> {
        self.recv_with(Some(Duration::ZERO), Until::Queued)
    }

    /// Waits up to `left` (forever with `None`) for a datagram on the empty socket and reads it, with whatever
    /// followed it; `Ok(false)` when the wait ended without one (time up, or interrupted).
    ///
    /// A long wait is a blocking read under `SO_RCVTIMEO`, which the kernel rounds up to whole clock ticks (up to
    /// [`TICK_MARGIN`]): the read's timeout is kept at least [`TICK_MARGIN`] short of `left`, and is set again only
    /// when the one the socket has falls out of that range, so a caller that waits the same time each turn (a receive
    /// thread looking up at its fixed interval) sets it once. A short wait is a `poll` (millisecond precision) and the
    /// read after it.
    fn wait_read(&mut self, left: Option<Duration>) -> io::Result<bool> {
        let timeout = match left {
            None => None,
            Some(left) if left >= 2 * TICK_MARGIN => {
                let longest = left - TICK_MARGIN;
                match self.read_timeout {
                    Some(Some(t)) if t <= longest && t + TICK_MARGIN >= longest => Some(t),
                    _ => Some(longest - TICK_MARGIN / 2),
                }
            }
            Some(left) => {
                // Round up, so a sub-millisecond remainder still waits instead of spinning.
                let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
                return match sys::wait_readable(&self.socket, ms) {
                    Ok(false) => Ok(false),
                    Ok(true) => match self.reads.fill(&self.socket, false) {
                        Ok(()) => Ok(true),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                };
            }
        };
        if self.read_timeout != Some(timeout) {
            self.socket.set_read_timeout(timeout)?;
            self.read_timeout = Some(timeout);
        }
        match self.reads.fill(&self.socket, true) {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Processes datagram `slot` of the current batch.
    fn absorb_slot(&mut self, slot: usize, n: usize, from: SocketAddrV4) -> Option<Message> {
        // Lent out of the batch for the call, so that absorbing may borrow the rest of the receiver.
        let buf = std::mem::take(&mut self.reads.slots[slot]);
        let message = self.absorb(SocketAddr::V4(from), &buf[..n]);
        self.reads.slots[slot] = buf;
        message
    }

    /// Processes one datagram.
    fn absorb(&mut self, from: SocketAddr, datagram: &[u8]) -> Option<Message> {
        self.stats.datagrams += 1;
        self.stats.bytes += datagram.len() as u64;
        let max_message = self.reassembler.limits().max_message;
        let message = match packet::parse(datagram, max_message) {
            Err(reason) => {
                let i = Malformed::ALL.iter().position(|&r| r == reason).expect("every reason is listed");
                self.stats.malformed[i] += 1;
                None
            }
            Ok(Datagram::Small { seq, channel, payload }) => {
                if let Some(seqs) = &mut self.sequences {
                    seqs.note(from, seq, Some(channel));
                }
                if let Some(wanted) = &mut self.filter {
                    if !wanted(channel, from) {
                        self.stats.unwanted += 1;
                        return None;
                    }
                }
                Some(Message {
                    channel: channel.to_owned(),
                    payload: payload.to_vec(),
                    sender: from,
                    seq,
                    recv_utime: now_utime(),
                })
            }
            Ok(Datagram::Fragment(f)) => {
                if let Some(seqs) = &mut self.sequences {
                    seqs.note(from, f.seq, f.channel);
                }
                if let (Some(wanted), Some(channel)) = (&mut self.filter, f.channel) {
                    if !wanted(channel, from) {
                        self.stats.unwanted += 1;
                        self.reassembler.skip(from, f.seq);
                        return None;
                    }
                }
                self.reassembler.add(from, &f).map(|m| Message {
                    channel: m.channel,
                    payload: m.payload,
                    sender: from,
                    seq: m.seq,
                    recv_utime: now_utime(),
                })
            }
        };
        if message.is_some() {
            self.stats.messages += 1;
        }
        message
    }

    /// LCM's self-test: sends `lcm self test` on `LCM_SELF_TEST` from `sender` (again every tenth of a second) until it
    /// comes back to this receiver, proving that multicast sent here is received here. Messages that arrive meanwhile
    /// are handed to `deliver`, not lost. Other LCM processes see the self-test message too, exactly as they see
    /// liblcm's.
    pub fn self_test(
        &mut self,
        sender: &mut Sender,
        within: Duration,
        mut deliver: impl FnMut(Message),
    ) -> Result<(), UdpmError> {
        let start = Instant::now();
        while start.elapsed() < within {
            sender.send(SELF_TEST_CHANNEL, SELF_TEST_PAYLOAD)?;
            // Read after sending: an unbound UDP socket gets its port from its first send.
            let port = sender.local_addr().map_err(io_err("reading the send socket's address"))?.port();
            let resend = Instant::now() + Duration::from_millis(100);
            while let Some(left) = resend.checked_duration_since(Instant::now()) {
                match self.recv(Some(left))? {
                    Some(m)
                        if m.channel == SELF_TEST_CHANNEL
                            && m.sender.port() == port
                            && m.payload == SELF_TEST_PAYLOAD =>
                    {
                        return Ok(());
                    }
                    Some(m) => deliver(m),
                    None => break,
                }
            }
        }
        Err(UdpmError::SelfTestFailed { waited: within })
    }

    /// Feeds one datagram as if it had been received (for tests and fuzzing of the whole receive path).
    pub fn inject(&mut self, from: SocketAddr, datagram: &[u8]) -> Option<Message> {
        self.absorb(from, &datagram[..datagram.len().min(SLOT)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segmented_and_one_by_one_sends_deliver_the_same_datagrams() {
        let port = 26000 + (std::process::id() % 1000) as u16 * 8 + 6;
        let opts = [("recv_buf_size".to_string(), (16 << 20).to_string())];
        let cfg = Config::from_url_parts(&format!("239.255.76.84:{port}"), &opts).unwrap().0;
        let mut rx = Receiver::open(&cfg).unwrap();
        let payloads: Vec<Vec<u8>> =
            (0..500usize).map(|i| vec![i as u8; [8, 8, 8, 100, 8, 1500, 70_000][i % 7]]).collect();
        let batch: Vec<(&str, &[u8])> =
            payloads.iter().enumerate().map(|(i, p)| (["A", "B"][i / 50 % 2], p.as_slice())).collect();
        let mut got = Vec::new();
        for gso in [true, false] {
            let mut tx = Sender::open(&cfg).unwrap();
            tx.batch = Scratch::for_socket(&tx.socket, gso);
            tx.send_batch(&batch).unwrap();
            let mut seen = Vec::new();
            while seen.len() < batch.len() {
                let Some(m) = rx.recv(Some(Duration::from_secs(5))).unwrap() else { break };
                seen.push((m.seq, m.channel, m.payload));
            }
            got.push(seen);
        }
        let expected: Vec<_> =
            batch.iter().enumerate().map(|(i, (c, p))| (i as u32, c.to_string(), p.to_vec())).collect();
        assert!(got[0] == expected, "segmented: every datagram, in order");
        assert!(got[1] == expected, "one by one: every datagram, in order");
    }
}
