//! Batched sending: [`Sender::send_batch`](crate::Sender::send_batch) sends many messages in few `sendmmsg(2)` calls, each datagram
//! byte-identical to what [`Sender::send`](crate::Sender::send) sends for the same message, with the same sequence numbers.
//!
//! A datagram is two slices: its header (written into scratch space kept by the sender) and the part of the
//! caller's payload it carries, so no payload byte is copied. Small messages are one datagram each; fragmented ones
//! are batched fragment by fragment, in order, fragment 0 first, never interleaved with another message.
//!
//! Where the kernel segments UDP (GSO, Linux 4.18+), a run of datagrams of one length (up to 1400 bytes) to one port
//! is handed over as one `sendmsg` with a UDP_SEGMENT control message: the kernel goes down the stack once and cuts
//! the run back into exactly those datagrams, each with its own UDP and IP header, so receivers (LCM's included) see
//! the same datagrams as from single sends. A kernel or device that refuses it turns it off for the sender, and so
//! does the URL option `gso=0`.

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::ops::Range;

use crate::error::{on_send_error, Retry, UdpmError, SEND_PAUSE};
use crate::packet::{self, Plan};
use crate::sys;

/// A batched send that stopped at one message.
#[derive(Debug)]
pub struct BatchError {
    /// How many messages, from the first, were sent whole: `messages[sent]` is the one that failed, and none after
    /// it was sent (some of its fragments may have been, as with [`Sender::send`](crate::Sender::send)).
    pub sent: usize,
    /// Why it failed, as [`Sender::send`](crate::Sender::send) reports it.
    pub error: UdpmError,
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "message {} of the batch: {}", self.sent, self.error)
    }
}

impl std::error::Error for BatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// One datagram of a batch: its header in the scratch buffer, the payload bytes it carries, whose message it is
/// and the port it goes to.
#[derive(Debug, Clone)]
struct Planned {
    header: Range<usize>,
    payload: Range<usize>,
    message: usize,
    port: u16,
}

impl Planned {
    /// The datagram's length.
    fn len(&self) -> usize {
        self.header.len() + self.payload.len()
    }
}

/// Where a batch goes: a sender's socket and group, and its sequence number, which the batch advances as one
/// `send` per message would.
pub(crate) struct Dest<'a> {
    pub(crate) socket: &'a UdpSocket,
    pub(crate) group: Ipv4Addr,
    pub(crate) seq: &'a mut u32,
}

/// A sender's scratch space for batches (kept so that a batch allocates only its iovecs and system-call headers).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    headers: Vec<u8>,
    planned: Vec<Planned>,
    /// Set when the kernel does not know UDP GSO (before Linux 4.18, where the control message would be ignored and
    /// a run of datagrams sent as one), or refused a segmented send: one datagram per `sendmsg` from then on.
    no_gso: bool,
}

impl Scratch {
    /// Scratch space for a sender's socket, with `gso` asking the kernel once whether it segments UDP (a kernel
    /// that does not has no UDP_SEGMENT socket option).
    pub(crate) fn for_socket(socket: &UdpSocket, gso: bool) -> Scratch {
        Scratch { no_gso: !gso || !sys::gso_supported(socket), ..Scratch::default() }
    }

    /// Sends `messages` (channel, payload) in order, each to the port `port_of` gives for its channel, exactly as
    /// one `send` each would, in as few system calls as the kernel allows; see
    /// [`Sender::send_batch`](crate::Sender::send_batch).
    pub(crate) fn send(
        &mut self,
        to: &mut Dest<'_>,
        messages: &[(&str, &[u8])],
        port_of: &mut impl FnMut(&str) -> u16,
    ) -> Result<(), BatchError> {
        let first_seq = *to.seq;
        self.headers.clear();
        self.planned.clear();
        for (i, &(channel, payload)) in messages.iter().enumerate() {
            let plan = match packet::plan(channel, payload.len()) {
                Ok(p) => p,
                Err(e) => {
                    // As `send` would: the messages before it go out, it takes no sequence number.
                    self.flush(to, messages, first_seq)?;
                    return Err(BatchError { sent: i, error: UdpmError::Send(e) });
                }
            };
            let seq = *to.seq;
            *to.seq = to.seq.wrapping_add(1);
            let port = port_of(channel);
            match plan {
                Plan::Small => {
                    let start = self.headers.len();
                    packet::push_small_header(&mut self.headers, seq, channel);
                    let header = start..self.headers.len();
                    self.planned.push(Planned { header, payload: 0..payload.len(), message: i, port });
                    if self.planned.len() >= sys::MAX_MMSG {
                        self.flush(to, messages, first_seq)?;
                    }
                }
                Plan::Fragmented { count } => {
                    for n in 0..count {
                        let start = self.headers.len();
                        let data =
                            packet::push_fragment_header(&mut self.headers, seq, channel, payload.len(), n, count);
                        let header = start..self.headers.len();
                        self.planned.push(Planned { header, payload: data, message: i, port });
                        if self.planned.len() >= sys::MAX_MMSG {
                            self.flush(to, messages, first_seq)?;
                        }
                    }
                }
            }
        }
        self.flush(to, messages, first_seq)
    }

    /// Sends every planned datagram, then forgets them. On failure, the sequence number is set as if `send` had been
    /// called on each message up to the failed one (which used one) and on none after it.
    fn flush(&mut self, to: &mut Dest<'_>, messages: &[(&str, &[u8])], first_seq: u32) -> Result<(), BatchError> {
        if self.planned.is_empty() {
            return Ok(());
        }
        let iovs: Vec<IoSlice<'_>> = self
            .planned
            .iter()
            .flat_map(|d| {
                [IoSlice::new(&self.headers[d.header.clone()]), IoSlice::new(&messages[d.message].1[d.payload.clone()])]
            })
            .collect();
        let mut done = 0;
        let mut failed = None;
        while done < self.planned.len() {
            // (first datagram, how many) of each send, from the first not sent yet.
            let groups = group(&self.planned[done..], !self.no_gso);
            let mut sends = Vec::with_capacity(groups.len());
            let mut at = done;
            for &(count, gso) in &groups {
                let d = &self.planned[at];
                sends.push(sys::Send {
                    iov: &iovs[2 * at..2 * (at + count)],
                    dest: sys::sockaddr_in(SocketAddrV4::new(to.group, d.port)),
                    segment: gso.then(|| d.len() as u16),
                });
                at += count;
            }
            match sys::sendmmsg(to.socket, &sends) {
                // The kernel takes at most UIO_MAXIOV at once, and stops early at an error it reports on the next
                // call (which starts at the first datagram not sent).
                Ok(n) if n > 0 => done += groups[..n].iter().map(|(count, _)| count).sum::<usize>(),
                Ok(_) => std::thread::sleep(SEND_PAUSE),
                // A kernel or a device that cannot segment (EIO: no checksum offload; EINVAL: a segment over the
                // path's MTU): send one datagram per message from now on.
                Err(e) if sends[0].segment.is_some() && sys::gso_refused(&e) => {
                    self.no_gso = true;
                }
                Err(e) => {
                    let d = &self.planned[done];
                    match on_send_error(e, to.group, SocketAddrV4::new(to.group, d.port)) {
                        Retry::Now => {}
                        Retry::AfterPause => std::thread::sleep(SEND_PAUSE),
                        Retry::Fail(error) => {
                            failed = Some(BatchError { sent: d.message, error });
                            break;
                        }
                    }
                }
            }
        }
        drop(iovs);
        self.headers.clear();
        self.planned.clear();
        match failed {
            None => Ok(()),
            Some(e) => {
                *to.seq = first_seq.wrapping_add(e.sent as u32).wrapping_add(1);
                Err(e)
            }
        }
    }
}

/// Most datagrams one segmented send carries (the kernel's UDP_MAX_SEGMENTS on older kernels).
const GSO_SEGMENTS: usize = 64;
/// Largest datagram sent segmented: within any usual MTU, since a segment may not be IP-fragmented (bigger ones are
/// sent one by one, fragmented by IP as always).
const GSO_MAX_DATAGRAM: usize = 1400;
/// Most bytes one segmented send carries (one UDP datagram's limit).
const GSO_MAX_TOTAL: usize = 65507;

/// Cuts `planned` into sends of up to [`sys::MAX_MMSG`]: (datagrams, segmented?) each. With `gso`, a run of datagrams
/// of one length to one port is one segmented send (the kernel cuts it back into exactly those datagrams).
fn group(planned: &[Planned], gso: bool) -> Vec<(usize, bool)> {
    let mut groups = Vec::new();
    let mut i = 0;
    while i < planned.len() && groups.len() < sys::MAX_MMSG {
        let (len, port) = (planned[i].len(), planned[i].port);
        let mut count = 1;
        if gso && len <= GSO_MAX_DATAGRAM {
            while i + count < planned.len()
                && count < GSO_SEGMENTS
                && (count + 1) * len <= GSO_MAX_TOTAL
                && planned[i + count].len() == len
                && planned[i + count].port == port
            {
                count += 1;
            }
        }
        groups.push((count, count > 1));
        i += count;
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(lens: &[(usize, u16)]) -> Vec<Planned> {
        lens.iter()
            .enumerate()
            .map(|(i, &(len, port))| Planned { header: 0..8, payload: 0..len - 8, message: i, port })
            .collect()
    }

    #[test]
    fn runs_of_one_length_to_one_port_are_grouped() {
        let p = planned(&[(21, 1), (21, 1), (21, 1), (30, 1), (30, 2), (30, 2), (2000, 2), (2000, 2), (21, 1)]);
        assert_eq!(group(&p, true), [(3, true), (1, false), (2, true), (1, false), (1, false), (1, false)]);
        assert_eq!(group(&p, false), vec![(1, false); 9]);
        let many = planned(&vec![(21, 1); 150]);
        assert_eq!(group(&many, true), [(64, true), (64, true), (22, true)]);
        let big = planned(&vec![(1400, 1); 100]);
        assert!(group(&big, true).iter().all(|&(n, _)| n * 1400 <= GSO_MAX_TOTAL));
    }
}
