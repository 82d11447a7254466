//! Windows: Winsock error codes and `WSAPoll`.

use std::io;
use std::net::{Ipv4Addr, UdpSocket};
use std::os::windows::io::AsRawSocket;

use windows_sys::Win32::Networking::WinSock as ws;

/// Winsock's send queue is momentarily full (a burst of fragments): worth waiting out.
pub(crate) fn is_queue_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(ws::WSAENOBUFS) | Some(ws::WSAEWOULDBLOCK))
}

/// No route to the destination.
pub(crate) fn is_unreachable(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(ws::WSAENETUNREACH) | Some(ws::WSAEHOSTUNREACH))
}

/// Joining a group failed because no interface routes it.
pub(crate) fn is_join_unroutable(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(ws::WSAENETUNREACH) | Some(ws::WSAEADDRNOTAVAIL))
}

/// Interfaces are named by address on Windows (its adapter names are GUIDs).
pub(crate) fn interface_by_name(name: &str) -> io::Result<Option<Ipv4Addr>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("interface names such as {name:?} are not supported on Windows: give the interface's IPv4 address"),
    ))
}

/// Waits up to `ms` milliseconds for `socket` to be readable; `false` when the time is up.
pub(crate) fn wait_readable(socket: &UdpSocket, ms: i32) -> io::Result<bool> {
    let mut fd = ws::WSAPOLLFD { fd: socket.as_raw_socket() as ws::SOCKET, events: ws::POLLRDNORM, revents: 0 };
    // SAFETY: `fd` is one valid, initialised WSAPOLLFD on the stack, and the count passed is 1; WSAPoll writes only
    // its `revents`.
    #[allow(unsafe_code)]
    let r = unsafe { ws::WSAPoll(&mut fd, 1, ms) };
    match r {
        0 => Ok(false),
        r if r > 0 => Ok(true),
        _ => Err(io::Error::last_os_error()),
    }
}
