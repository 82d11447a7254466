//! Linux's fast paths, and the crate's only unsafe code on Linux: `sendmmsg(2)` and `recvmmsg(2)`, which neither std
//! nor socket2 offers (nix's `sendmmsg` reads uninitialised addresses when asked how many datagrams went out;
//! `recvmmsg` is written the same way, over the receiver's own slots), UDP GSO, and the socket's drop counter
//! (`SO_MEMINFO`, which neither offers either).

use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};

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

/// One `sendmsg` of a `sendmmsg` call: the slices of one datagram, or with `segment` the slices of several datagrams
/// of `segment` bytes each (the last may be shorter) that the kernel cuts apart (UDP GSO: one trip down the stack).
pub(crate) struct Send<'a> {
    pub(crate) iov: &'a [IoSlice<'a>],
    pub(crate) dest: libc::sockaddr_in,
    pub(crate) segment: Option<u16>,
}

/// A control message carrying UDP_SEGMENT, laid out as CMSG_SPACE(2) bytes (the data right after the header).
#[repr(C)]
struct SegmentCmsg {
    header: libc::cmsghdr,
    size: u16,
}

/// Sends `sends`, for as many as the kernel takes in one call (at most [`MAX_MMSG`]); returns how many it took, from
/// the first. An error means the first one was not sent.
pub(crate) fn sendmmsg(socket: &UdpSocket, sends: &[Send<'_>]) -> io::Result<usize> {
    let fd = socket.as_fd();
    let n = sends.len().min(MAX_MMSG);
    // Made per call: they hold raw pointers into this call's arguments (and so could not live in a `Send` sender).
    // Both are filled before any pointer into them is taken, and never grow after.
    let mut cmsgs: Vec<SegmentCmsg> = Vec::with_capacity(n);
    for send in &sends[..n] {
        // SAFETY: cmsghdr is a plain C struct of integers, for which all zero bytes is a valid value.
        #[allow(unsafe_code)]
        let mut header: libc::cmsghdr = unsafe { std::mem::zeroed() };
        // SAFETY: CMSG_LEN is arithmetic on its argument.
        #[allow(unsafe_code)]
        let len = unsafe { libc::CMSG_LEN(2) };
        header.cmsg_len = len as _;
        header.cmsg_level = libc::SOL_UDP;
        header.cmsg_type = libc::UDP_SEGMENT;
        cmsgs.push(SegmentCmsg { header, size: send.segment.unwrap_or(0) });
    }
    // SAFETY: CMSG_SPACE is arithmetic on its argument.
    #[allow(unsafe_code)]
    let space = unsafe { libc::CMSG_SPACE(2) } as usize;
    debug_assert!(space <= std::mem::size_of::<SegmentCmsg>());
    let mut headers: Vec<libc::mmsghdr> = Vec::with_capacity(n);
    for (send, cmsg) in sends[..n].iter().zip(&mut cmsgs) {
        // SAFETY: msghdr and mmsghdr are plain C structs of integers and pointers, for which all zero bytes is a
        // valid value (null pointers, zero lengths); zeroing also covers padding fields some libcs declare.
        #[allow(unsafe_code)]
        let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
        h.msg_hdr.msg_name = (&send.dest as *const libc::sockaddr_in).cast_mut().cast();
        h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // IoSlice is guaranteed ABI-compatible with iovec on Unix.
        h.msg_hdr.msg_iov = send.iov.as_ptr().cast_mut().cast();
        h.msg_hdr.msg_iovlen = send.iov.len() as _;
        if send.segment.is_some() {
            h.msg_hdr.msg_control = (cmsg as *mut SegmentCmsg).cast();
            h.msg_hdr.msg_controllen = space as _;
        }
        headers.push(h);
    }
    // SAFETY: every header points at the sockaddr_in and the iovecs of one `Send` (whose buffers the IoSlices
    // borrow) and at most at one control message in `cmsgs`; all of them outlive this call, and the kernel only
    // reads them (it writes msg_len, inside `headers`). `n` is the length of `headers`.
    #[allow(unsafe_code)]
    let sent = unsafe { libc::sendmmsg(fd.as_raw_fd(), headers.as_mut_ptr(), n as libc::c_uint, 0) };
    if sent < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(sent as usize)
    }
}

/// Most datagrams one [`recvmmsg`] call reads: its headers live on the stack.
pub(crate) const MAX_RECV_BATCH: usize = 16;

/// Reads up to `slots.len()` datagrams (at most [`MAX_RECV_BATCH`]) in one `recvmmsg` call, datagram `i` into
/// `slots[i]`, and appends each one's length and sender to `got`; returns how many it read. Without `wait` the call
/// never blocks (`WouldBlock` when the socket is empty); with it, the call waits for the first datagram as a blocking
/// `recvmsg` would (the socket's receive timeout applies) and then takes only what is already queued
/// (`MSG_WAITFORONE`). A datagram longer than its slot is cut short: slots of 65536 bytes hold any UDP datagram over
/// IPv4.
pub(crate) fn recvmmsg(
    socket: &UdpSocket,
    slots: &mut [Vec<u8>],
    wait: bool,
    got: &mut Vec<(usize, SocketAddrV4)>,
) -> io::Result<usize> {
    let fd = socket.as_fd();
    let n = slots.len().min(MAX_RECV_BATCH);
    type Headers =
        ([libc::sockaddr_in; MAX_RECV_BATCH], [libc::iovec; MAX_RECV_BATCH], [libc::mmsghdr; MAX_RECV_BATCH]);
    // SAFETY: sockaddr_in, iovec and mmsghdr are plain C structs of integers and pointers, for which all zero bytes
    // is a valid value (null pointers, zero lengths); zeroing also covers padding fields some libcs declare.
    #[allow(unsafe_code)]
    let (mut addrs, mut iovs, mut headers): Headers = unsafe { std::mem::zeroed() };
    for i in 0..n {
        iovs[i] = libc::iovec { iov_base: slots[i].as_mut_ptr().cast(), iov_len: slots[i].len() };
        let h = &mut headers[i].msg_hdr;
        h.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
        h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = 1;
    }
    let flags = if wait { libc::MSG_WAITFORONE } else { libc::MSG_DONTWAIT };
    // A null timeout means none (the socket's own receive timeout still applies to the first datagram).
    let (fd, vlen, timeout) = (fd.as_raw_fd(), n as libc::c_uint, std::ptr::null_mut());
    // SAFETY: for each i < n, header i points at `addrs[i]` (with its size as msg_namelen) and at `iovs[i]`, which
    // points at the `slots[i].len()` bytes of `slots[i]`; all are locals or borrowed for this call and none moves
    // during it. The kernel writes at most msg_namelen bytes of address, at most iov_len bytes into each slot, and
    // msg_len, msg_namelen and msg_flags inside `headers`; it reads only the first `n` headers.
    #[allow(unsafe_code)]
    let read = unsafe { libc::recvmmsg(fd, headers.as_mut_ptr(), vlen, flags, timeout) };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    let read = read as usize;
    for i in 0..read {
        let addr = &addrs[i];
        let from = SocketAddrV4::new(u32::from_be(addr.sin_addr.s_addr).into(), u16::from_be(addr.sin_port));
        got.push(((headers[i].msg_len as usize).min(slots[i].len()), from));
    }
    Ok(read)
}

/// The kernel's count of datagrams it dropped for this socket (a full receive buffer), `SK_MEMINFO_DROPS` of
/// `SO_MEMINFO`: cumulative since the socket was made, 32 bits, wrapping. Asked when wanted, it costs the receive
/// path nothing (`SO_RXQ_OVFL` gives the same count as a control message with every datagram: a visible share of a
/// receive thread's time under load, kernel and parsing together).
pub(crate) fn socket_drops(socket: &UdpSocket) -> io::Result<u32> {
    let fd = socket.as_fd();
    // Linux 4.18 and later report SK_MEMINFO_VARS = 9 values; older ones fewer, and the length says how many.
    let mut info = [0u32; 9];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes (the size of `info`, a local array of plain integers) into
    // `info`, and the length it wrote into `len`, a valid local.
    #[allow(unsafe_code)]
    let r = unsafe {
        libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_MEMINFO, info.as_mut_ptr().cast(), &mut len)
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let at = libc::SK_MEMINFO_DROPS as usize;
    if (len as usize) < (at + 1) * std::mem::size_of::<u32>() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "SO_MEMINFO has no SK_MEMINFO_DROPS on this kernel"));
    }
    Ok(info[at])
}

/// Whether the kernel segments UDP (GSO, Linux 4.18+): a kernel that does not has no UDP_SEGMENT socket option.
pub(crate) fn gso_supported(socket: &UdpSocket) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::UdpGsoSegment};
    getsockopt(socket, UdpGsoSegment).is_ok()
}

/// Whether a failed segmented send means the kernel or the device cannot segment (EIO: no checksum offload;
/// EINVAL: a segment over the path's MTU), so the sender should send one datagram per `sendmsg` from then on.
pub(crate) fn gso_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP))
}

/// The address a receive socket binds: the group itself, so that the socket gets only that group's datagrams.
pub(crate) fn receive_bind_addr(group: Ipv4Addr) -> Ipv4Addr {
    group
}

/// Lets other processes bind the same group and port (SO_REUSEADDR is enough for multicast on Linux).
pub(crate) fn share_port(socket: &socket2::Socket) -> io::Result<()> {
    socket.set_reuse_address(true)
}

/// The receive buffer granted, from what `SO_RCVBUF` reports: Linux reports twice what it keeps for data.
pub(crate) fn granted_rcvbuf(reported: usize) -> usize {
    reported / 2
}

/// How to raise the receive buffer's limit to `want` bytes.
pub(crate) fn rcvbuf_advice(want: usize) -> String {
    format!("Raise the limit with: sysctl -w net.core.rmem_max={want}")
}
