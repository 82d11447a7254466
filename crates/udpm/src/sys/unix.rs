//! What every Unix shares (Linux included): errno codes, `poll(2)` and `getifaddrs(3)`.

use std::io;
use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::AsFd;

use nix::libc;

/// The kernel's send queue is momentarily full (a burst of fragments): worth waiting out.
pub(crate) fn is_queue_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::EAGAIN))
}

/// No route to the destination.
pub(crate) fn is_unreachable(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENETUNREACH)
}

/// Joining a group failed because no interface routes it.
pub(crate) fn is_join_unroutable(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENODEV) | Some(libc::ENETUNREACH))
}

/// The IPv4 address of the interface called `name`, `None` if there is no such interface (or it has none).
pub(crate) fn interface_by_name(name: &str) -> io::Result<Option<Ipv4Addr>> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| io::Error::from_raw_os_error(e as i32))?;
    for a in addrs {
        if a.interface_name == name {
            if let Some(sin) = a.address.as_ref().and_then(|s| s.as_sockaddr_in()) {
                return Ok(Some(sin.ip()));
            }
        }
    }
    Ok(None)
}

/// Waits up to `ms` milliseconds for `socket` to be readable; `false` when the time is up or a signal came first.
pub(crate) fn wait_readable(socket: &UdpSocket, ms: i32) -> io::Result<bool> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(socket.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)) {
        Ok(0) | Err(nix::errno::Errno::EINTR) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) => Err(io::Error::from(e)),
    }
}
