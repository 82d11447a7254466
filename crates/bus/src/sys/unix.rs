//! Unix (Linux included): handles are file descriptors, and waiting is `poll(2)`.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// What `Bus::as_fd` lends: a file descriptor.
pub type Handle<'a> = BorrowedFd<'a>;
/// What `Bus::fileno` returns: a file descriptor's number.
pub type RawHandle = RawFd;

/// The handle of a socket.
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub(crate) fn borrow(socket: &UdpSocket) -> Handle<'_> {
    socket.as_fd()
}

/// The number of a handle.
pub(crate) fn raw(handle: Handle<'_>) -> RawHandle {
    std::os::fd::AsRawFd::as_raw_fd(&handle)
}

/// Waits up to `wait` for any of `sockets` to be readable, and calls `ready` with the index of each that is.
/// Returns how many are (0 when the time is up, or a signal came first).
pub(crate) fn poll_readable<'a>(
    sockets: impl IntoIterator<Item = &'a UdpSocket>,
    wait: Duration,
    mut ready: impl FnMut(usize),
) -> io::Result<usize> {
    let mut fds: Vec<PollFd<'_>> = sockets.into_iter().map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN)).collect();
    let timeout = PollTimeout::try_from(wait.as_millis().min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX);
    match poll(&mut fds, timeout) {
        Ok(0) | Err(nix::errno::Errno::EINTR) => Ok(0),
        Ok(n) => {
            for (i, f) in fds.iter().enumerate() {
                if f.revents().is_some_and(|r| !r.is_empty()) {
                    ready(i);
                }
            }
            Ok(n as usize)
        }
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Whether `handle` polls readable now.
#[cfg_attr(not(feature = "test-support"), allow(dead_code))]
pub(crate) fn is_readable(handle: Handle<'_>) -> io::Result<bool> {
    let mut fds = [PollFd::new(handle, PollFlags::POLLIN)];
    Ok(poll(&mut fds, PollTimeout::ZERO).map_err(io::Error::from)? == 1)
}
