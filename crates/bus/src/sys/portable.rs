//! Every system but Linux: the readable level is a nonblocking UDP socket on 127.0.0.1 connected to itself. A
//! datagram sent to it makes it readable until it is read; std's sockets build on macOS, the BSDs and Windows alike,
//! and a socket is what Windows's `select` and `WSAPoll` wait on (a pipe is not).

use std::io;
use std::net::{Ipv4Addr, UdpSocket};

use super::{borrow, Handle};

/// A socket that polls readable from [`Notify::raise`] until [`Notify::lower`].
pub(crate) struct Notify(UdpSocket);

impl Notify {
    pub(crate) fn new() -> io::Result<Notify> {
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        socket.connect(socket.local_addr()?)?;
        socket.set_nonblocking(true)?;
        Ok(Notify(socket))
    }

    /// Makes it readable (a datagram waits; more may, `lower` reads them all).
    pub(crate) fn raise(&self) {
        // A full buffer means it is readable already.
        let _ = self.0.send(&[1]);
    }

    /// Makes it unreadable: reads every datagram waiting.
    pub(crate) fn lower(&self) {
        let mut byte = [0u8; 1];
        while self.0.recv(&mut byte).is_ok() {}
    }

    pub(crate) fn handle(&self) -> Handle<'_> {
        borrow(&self.0)
    }
}
