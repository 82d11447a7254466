//! The crate's only unsafe code: `sendmmsg(2)`, which neither std nor socket2 offers (nix's wrapper reads
//! uninitialised addresses when asked how many datagrams went out).

use std::io::{self, IoSlice};
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::libc;

/// Most datagrams one `sendmmsg` call takes: the kernel caps its `vlen` at `UIO_MAXIOV`.
pub(crate) const MAX_MMSG: usize = 1024;

/// The `sockaddr_in` of an IPv4 address and port.
pub(crate) fn sockaddr_in(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

/// Sends `datagrams[i]` (its slices back to back) to `dests[i]`, for as many as the kernel takes in one call (at most
/// [`MAX_MMSG`]); returns how many it took, from the first. An error means the first one was not sent.
pub(crate) fn sendmmsg(
    fd: BorrowedFd<'_>,
    datagrams: &[[IoSlice<'_>; 2]],
    dests: &[libc::sockaddr_in],
) -> io::Result<usize> {
    assert_eq!(datagrams.len(), dests.len(), "one destination per datagram");
    let n = datagrams.len().min(MAX_MMSG);
    // Made per call: it holds raw pointers into this call's arguments (and so could not live in a `Send` sender).
    let mut headers: Vec<libc::mmsghdr> = Vec::with_capacity(n);
    for (iov, dest) in datagrams[..n].iter().zip(dests) {
        // SAFETY: msghdr and mmsghdr are plain C structs of integers and pointers, for which all zero bytes is a
        // valid value (null pointers, zero lengths); zeroing also covers padding fields some libcs declare.
        #[allow(unsafe_code)]
        let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
        h.msg_hdr.msg_name = (dest as *const libc::sockaddr_in).cast_mut().cast();
        h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // IoSlice is guaranteed ABI-compatible with iovec on Unix.
        h.msg_hdr.msg_iov = iov.as_ptr().cast_mut().cast();
        h.msg_hdr.msg_iovlen = iov.len() as _;
        headers.push(h);
    }
    // SAFETY: every header points at a sockaddr_in in `dests` and at two iovecs in `datagrams`, whose buffers the
    // IoSlices borrow; all of them outlive this call, and the kernel only reads them (it writes msg_len, inside
    // `headers`). `n` is the length of `headers`.
    #[allow(unsafe_code)]
    let sent = unsafe { libc::sendmmsg(fd.as_raw_fd(), headers.as_mut_ptr(), n as libc::c_uint, 0) };
    if sent < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(sent as usize)
    }
}
