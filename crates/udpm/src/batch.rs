//! Batched sending: [`Sender::send_batch`] sends many messages in few `sendmmsg(2)` calls, each datagram
//! byte-identical to what [`Sender::send`] sends for the same message, with the same sequence numbers.
//!
//! A datagram is two slices: its header (written into scratch space kept by the sender) and the part of the
//! caller's payload it carries, so no payload byte is copied. Small messages are one datagram each; fragmented ones
//! are batched fragment by fragment, in order, fragment 0 first, never interleaved with another message.

use std::io::IoSlice;
use std::net::SocketAddrV4;
use std::ops::Range;
use std::os::fd::AsFd;

use crate::packet::{self, Plan};
use crate::socket::{on_send_error, Retry, Sender, UdpmError, SEND_PAUSE};
use crate::sys;

/// A batched send that stopped at one message.
#[derive(Debug)]
pub struct BatchError {
    /// How many messages, from the first, were sent whole: `messages[sent]` is the one that failed, and none after
    /// it was sent (some of its fragments may have been, as with [`Sender::send`]).
    pub sent: usize,
    /// Why it failed, as [`Sender::send`] reports it.
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

/// A sender's scratch space for batches (kept so that a batch allocates only its iovecs and system-call headers).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    headers: Vec<u8>,
    planned: Vec<Planned>,
}

impl Sender {
    /// Sends `messages` (channel, payload) in order to the group's port, exactly as [`Sender::send`] on each would
    /// (the same datagrams, the same sequence numbers), in as few system calls as the kernel allows.
    ///
    /// A message that cannot be sent (a channel too long, a message too large, a socket error other than a full
    /// queue, which is waited out) stops the batch there: what came before it is sent, nothing after it is, and the
    /// sequence number continues as if `send` had been called up to it.
    pub fn send_batch(&mut self, messages: &[(&str, &[u8])]) -> Result<(), BatchError> {
        let port = self.port;
        self.send_batch_to_ports(messages, |_| port)
    }

    /// Like [`Sender::send_batch`], each message to the port `port_of` gives for its channel (multi-port mode).
    pub fn send_batch_to_ports(
        &mut self,
        messages: &[(&str, &[u8])],
        mut port_of: impl FnMut(&str) -> u16,
    ) -> Result<(), BatchError> {
        let mut scratch = std::mem::take(&mut self.batch);
        let result = self.plan_and_send(messages, &mut port_of, &mut scratch);
        self.batch = scratch;
        result
    }

    fn plan_and_send(
        &mut self,
        messages: &[(&str, &[u8])],
        port_of: &mut impl FnMut(&str) -> u16,
        scratch: &mut Scratch,
    ) -> Result<(), BatchError> {
        let first_seq = self.seq;
        scratch.headers.clear();
        scratch.planned.clear();
        for (i, &(channel, payload)) in messages.iter().enumerate() {
            let plan = match packet::plan(channel, payload.len()) {
                Ok(p) => p,
                Err(e) => {
                    // As `send` would: the messages before it go out, it takes no sequence number.
                    self.flush(messages, scratch, first_seq)?;
                    return Err(BatchError { sent: i, error: UdpmError::Send(e) });
                }
            };
            let seq = self.seq;
            self.seq = self.seq.wrapping_add(1);
            let port = port_of(channel);
            match plan {
                Plan::Small => {
                    let start = scratch.headers.len();
                    packet::push_small_header(&mut scratch.headers, seq, channel);
                    let header = start..scratch.headers.len();
                    scratch.planned.push(Planned { header, payload: 0..payload.len(), message: i, port });
                    if scratch.planned.len() >= sys::MAX_MMSG {
                        self.flush(messages, scratch, first_seq)?;
                    }
                }
                Plan::Fragmented { count } => {
                    for n in 0..count {
                        let start = scratch.headers.len();
                        let data = packet::push_fragment_header(&mut scratch.headers, seq, channel, payload.len(), n, count);
                        let header = start..scratch.headers.len();
                        scratch.planned.push(Planned { header, payload: data, message: i, port });
                        if scratch.planned.len() >= sys::MAX_MMSG {
                            self.flush(messages, scratch, first_seq)?;
                        }
                    }
                }
            }
        }
        self.flush(messages, scratch, first_seq)
    }

    /// Sends every planned datagram, then forgets them. On failure, the sequence number is set as if `send` had been
    /// called on each message up to the failed one (which used one) and on none after it.
    fn flush(&mut self, messages: &[(&str, &[u8])], scratch: &mut Scratch, first_seq: u32) -> Result<(), BatchError> {
        if scratch.planned.is_empty() {
            return Ok(());
        }
        let iovs: Vec<[IoSlice<'_>; 2]> = scratch
            .planned
            .iter()
            .map(|d| [IoSlice::new(&scratch.headers[d.header.clone()]), IoSlice::new(&messages[d.message].1[d.payload.clone()])])
            .collect();
        let dests: Vec<_> =
            scratch.planned.iter().map(|d| sys::sockaddr_in(SocketAddrV4::new(self.group, d.port))).collect();
        let mut done = 0;
        let mut failed = None;
        while done < iovs.len() {
            match sys::sendmmsg(self.socket.as_fd(), &iovs[done..], &dests[done..]) {
                // The kernel takes at most UIO_MAXIOV at once, and stops early at an error it reports on the next
                // call (which starts at the first datagram not sent).
                Ok(n) if n > 0 => done += n,
                Ok(_) => std::thread::sleep(SEND_PAUSE),
                Err(e) => {
                    let d = &scratch.planned[done];
                    match on_send_error(e, self.group, SocketAddrV4::new(self.group, d.port)) {
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
        scratch.headers.clear();
        scratch.planned.clear();
        match failed {
            None => Ok(()),
            Some(e) => {
                self.seq = first_seq.wrapping_add(e.sent as u32).wrapping_add(1);
                Err(e)
            }
        }
    }
}
