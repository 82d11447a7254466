//! Every system but Linux: a batch is one `send_to` or `recv_from` per datagram (no `sendmmsg`, no GSO), and the
//! kernel's drop count is unknown.

use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};

/// Most datagrams one [`sendmmsg`] call takes (a bound on the batch's scratch space, not a system limit here).
pub(crate) const MAX_MMSG: usize = 1024;

/// Most datagrams one [`recvmmsg`] call reads.
pub(crate) const MAX_RECV_BATCH: usize = 16;

/// A datagram's destination.
pub(crate) fn sockaddr_in(addr: SocketAddrV4) -> SocketAddrV4 {
    addr
}

/// One datagram, as the slices of its bytes (`segment` is never set here: [`gso_supported`] is false).
pub(crate) struct Send<'a> {
    pub(crate) iov: &'a [IoSlice<'a>],
    pub(crate) dest: SocketAddrV4,
    pub(crate) segment: Option<u16>,
}

/// Sends `sends` one `send_to` each, gathered into one buffer; returns how many went out, from the first. An error
/// means the first one was not sent.
pub(crate) fn sendmmsg(socket: &UdpSocket, sends: &[Send<'_>]) -> io::Result<usize> {
    let mut datagram = Vec::with_capacity(65536);
    for (i, send) in sends.iter().take(MAX_MMSG).enumerate() {
        debug_assert!(send.segment.is_none(), "no segmented sends without GSO");
        datagram.clear();
        for slice in send.iov {
            datagram.extend_from_slice(slice);
        }
        if let Err(e) = socket.send_to(&datagram, send.dest) {
            return if i == 0 { Err(e) } else { Ok(i) };
        }
    }
    Ok(sends.len().min(MAX_MMSG))
}

/// Reads up to `slots.len()` datagrams (at most [`MAX_RECV_BATCH`]), datagram `i` into `slots[i]`, appending each
/// one's length and sender to `got`; returns how many it read. Without `wait` it never blocks (`WouldBlock` when the
/// socket is empty); with it, it waits for the first datagram as a blocking read would (the socket's receive timeout
/// applies, and its expiry is `WouldBlock` on every system) and then takes only what is already queued.
pub(crate) fn recvmmsg(
    socket: &UdpSocket,
    slots: &mut [Vec<u8>],
    wait: bool,
    got: &mut Vec<(usize, SocketAddrV4)>,
) -> io::Result<usize> {
    let n = slots.len().min(MAX_RECV_BATCH);
    let mut nonblocking = false;
    let mut read = 0;
    let result = loop {
        if read == n {
            break Ok(read);
        }
        if !nonblocking && (read > 0 || !wait) {
            if let Err(e) = socket.set_nonblocking(true) {
                break if read > 0 { Ok(read) } else { Err(e) };
            }
            nonblocking = true;
        }
        match socket.recv_from(&mut slots[read]) {
            Ok((len, SocketAddr::V4(from))) => {
                got.push((len, from));
                read += 1;
            }
            // An IPv4 socket hears only IPv4 senders.
            Ok((_, SocketAddr::V6(_))) => {}
            Err(_) if read > 0 => break Ok(read),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => break Err(io::ErrorKind::WouldBlock.into()),
            Err(e) => break Err(e),
        }
    };
    if nonblocking {
        socket.set_nonblocking(false)?;
    }
    result
}

/// The kernel's count of datagrams it dropped for this socket: not known here.
pub(crate) fn socket_drops(_socket: &UdpSocket) -> io::Result<u32> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "this system does not report a socket's dropped datagrams"))
}

/// No UDP segmentation offload outside Linux.
pub(crate) fn gso_supported(_socket: &UdpSocket) -> bool {
    false
}

/// Never asked: no segmented send is made.
pub(crate) fn gso_refused(_e: &io::Error) -> bool {
    false
}

/// The address a receive socket binds. Windows cannot bind a multicast address (the joined group filters instead);
/// the BSDs and macOS can, which keeps other groups' datagrams on the port out.
pub(crate) fn receive_bind_addr(group: Ipv4Addr) -> Ipv4Addr {
    if cfg!(windows) {
        Ipv4Addr::UNSPECIFIED
    } else {
        group
    }
}

/// Lets other processes bind the same group and port: the BSDs and macOS want SO_REUSEPORT for that as well.
pub(crate) fn share_port(socket: &socket2::Socket) -> io::Result<()> {
    socket.set_reuse_address(true)?;
    #[cfg(unix)]
    socket.set_reuse_port(true)?;
    Ok(())
}

/// The receive buffer granted, as `SO_RCVBUF` reports it.
pub(crate) fn granted_rcvbuf(reported: usize) -> usize {
    reported
}

/// How to raise the receive buffer's limit to `want` bytes.
pub(crate) fn rcvbuf_advice(want: usize) -> String {
    format!("raise the system's limit on socket receive buffers to at least {want} bytes")
}
