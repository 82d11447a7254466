//! What goes wrong in udpm ([`UdpmError`]), and what a sender does after a failed send: the socket's senders, one
//! datagram at a time or batched, share it.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use crate::packet::SendError;

/// What the user runs when multicast is not routed on a Linux host with only loopback.
pub const LOOPBACK_ADVICE: &str = "is multicast routed? On a host with only loopback run, as root: \
     ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo";

/// A udpm failure, with the operation that failed.
#[derive(Debug)]
pub enum UdpmError {
    /// A socket call failed.
    Io {
        /// What was being done, e.g. "joining 239.255.76.67 on 127.0.0.1".
        op: String,
        /// The OS error.
        source: io::Error,
    },
    /// There is no route for the multicast group.
    NoRoute {
        /// The group.
        group: Ipv4Addr,
        /// The OS error.
        source: io::Error,
    },
    /// The interface named in the URL has no IPv4 address.
    UnknownInterface {
        /// The name.
        name: String,
    },
    /// The message cannot be sent (channel too long, message too large).
    Send(SendError),
    /// Our own self-test message never came back: multicast is routed but not looped back (a firewall, or
    /// multicast loopback disabled).
    SelfTestFailed {
        /// How long it waited.
        waited: Duration,
    },
}

impl std::fmt::Display for UdpmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Sources are not repeated here: they are the next link of the chain (`source()`).
            UdpmError::Io { op, .. } => f.write_str(op),
            UdpmError::NoRoute { group, .. } => write!(f, "no route to multicast group {group} ({LOOPBACK_ADVICE})"),
            UdpmError::UnknownInterface { name } => write!(f, "interface '{name}' not found or has no IPv4 address"),
            UdpmError::Send(e) => e.fmt(f),
            UdpmError::SelfTestFailed { waited } => write!(
                f,
                "LCM self test failed: our own multicast did not come back within {waited:?}; check the routing \
                 table and the firewall ({LOOPBACK_ADVICE})"
            ),
        }
    }
}

impl std::error::Error for UdpmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UdpmError::Io { source, .. } | UdpmError::NoRoute { source, .. } => Some(source),
            UdpmError::Send(_) | UdpmError::UnknownInterface { .. } | UdpmError::SelfTestFailed { .. } => None,
        }
    }
}

pub(crate) fn io_err(op: impl Into<String>) -> impl FnOnce(io::Error) -> UdpmError {
    let op = op.into();
    move |source| UdpmError::Io { op, source }
}

/// How long a sender waits for the kernel's queue to drain before trying again.
pub(crate) const SEND_PAUSE: Duration = Duration::from_micros(50);

/// What a sender does after a failed send of a datagram to `dest`.
pub(crate) enum Retry {
    /// Interrupted: try again at once.
    Now,
    /// The kernel's queue is momentarily full (a burst of fragments): wait for it rather than lose a datagram and
    /// with it a whole message.
    AfterPause,
    /// Give up with this error.
    Fail(UdpmError),
}

pub(crate) fn on_send_error(e: io::Error, group: Ipv4Addr, dest: SocketAddrV4) -> Retry {
    match e.raw_os_error() {
        _ if e.kind() == io::ErrorKind::Interrupted => Retry::Now,
        _ if crate::sys::is_queue_full(&e) => Retry::AfterPause,
        _ if crate::sys::is_unreachable(&e) => Retry::Fail(UdpmError::NoRoute { group, source: e }),
        _ => Retry::Fail(UdpmError::Io { op: format!("sending to {dest}"), source: e }),
    }
}
