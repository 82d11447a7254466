//! Windows: handles are sockets, and waiting is `WSAPoll`.

use std::io;
use std::net::UdpSocket;
use std::os::windows::io::{AsRawSocket, AsSocket, BorrowedSocket, RawSocket};
use std::time::Duration;

use windows_sys::Win32::Networking::WinSock as ws;

/// What `Bus::as_fd` lends: a socket (select and `WSAPoll` wait on it).
pub type Handle<'a> = BorrowedSocket<'a>;
/// What `Bus::fileno` returns: a socket's number (LCM's `lcm_get_fileno` gives the same on Windows).
pub type RawHandle = RawSocket;

/// The handle of a socket.
pub(crate) fn borrow(socket: &UdpSocket) -> Handle<'_> {
    socket.as_socket()
}

/// The number of a handle.
pub(crate) fn raw(handle: Handle<'_>) -> RawHandle {
    handle.as_raw_socket()
}

/// `WSAPoll` over `fds`, waiting up to `ms` milliseconds; how many are ready.
fn wsa_poll(fds: &mut [ws::WSAPOLLFD], ms: i32) -> io::Result<usize> {
    // SAFETY: `fds` is a valid, initialised slice of WSAPOLLFD and its length is the count passed; WSAPoll writes
    // only their `revents`.
    #[allow(unsafe_code)]
    let r = unsafe { ws::WSAPoll(fds.as_mut_ptr(), fds.len() as u32, ms) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Waits up to `wait` for any of `sockets` to be readable, and calls `ready` with the index of each that is.
/// Returns how many are (0 when the time is up).
pub(crate) fn poll_readable<'a>(
    sockets: impl IntoIterator<Item = &'a UdpSocket>,
    wait: Duration,
    mut ready: impl FnMut(usize),
) -> io::Result<usize> {
    let mut fds: Vec<ws::WSAPOLLFD> = sockets
        .into_iter()
        .map(|s| ws::WSAPOLLFD { fd: s.as_raw_socket() as ws::SOCKET, events: ws::POLLRDNORM, revents: 0 })
        .collect();
    if fds.is_empty() {
        // WSAPoll fails with WSAEINVAL on an empty set rather than sleeping.
        std::thread::sleep(wait);
        return Ok(0);
    }
    let n = wsa_poll(&mut fds, wait.as_millis().min(i32::MAX as u128) as i32)?;
    for (i, f) in fds.iter().enumerate() {
        if f.revents != 0 {
            ready(i);
        }
    }
    Ok(n)
}

/// Whether `handle` polls readable now.
#[cfg_attr(not(feature = "test-support"), allow(dead_code))]
pub(crate) fn is_readable(handle: Handle<'_>) -> io::Result<bool> {
    let mut fds = [ws::WSAPOLLFD { fd: handle.as_raw_socket() as ws::SOCKET, events: ws::POLLRDNORM, revents: 0 }];
    Ok(wsa_poll(&mut fds, 0)? == 1)
}
