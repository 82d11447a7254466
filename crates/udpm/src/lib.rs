//! LCM's UDP multicast transport (spec 4.2), on its own: no bus, no types.
//!
//! # Brief overview
//!
//! [`Config`] comes from a `udpm://GROUP:PORT?ttl=..&recv_buf_size=..&iface=..` URL. A [`Sender`] turns a channel and
//! payload into one `LC02` datagram or a run of `LC03` fragments (the [`packet`] module, byte-identical to LCM's C
//! sender). A [`Receiver`] reads datagrams, parses them, puts fragments together in a bounded [`Reassembler`] and
//! returns whole [`Message`]s; every malformed datagram is counted in [`RecvStats`] and dropped. [`Sender::send_batch`]
//! sends many messages in few `sendmmsg(2)` calls, the same datagrams as one `send` each.
//!
//! # Design
//!
//! Best effort, never stale: a lost fragment costs its whole message, and old incomplete messages are evicted before
//! new ones are refused, so a receiver never waits for or prefers old data. Reassembly remembers which fragments it
//! has (LCM's C receiver does not, and delivers garbage on a duplicate) and is bounded in bytes and in messages.

#![deny(missing_docs)]

mod batch;
pub mod config;
mod error;
pub mod multiport;
pub mod packet;
pub mod reassembly;
pub mod sequence;
mod socket;
mod sys;

pub use batch::BatchError;
pub use config::{Config, ConfigError, Interface};
pub use error::{UdpmError, LOOPBACK_ADVICE};
/// The clock of `recv_utime` (nerve-codec's), for callers that have this crate at hand.
pub use nerve_codec::now_utime;
pub use reassembly::{Limits, Reassembler, ReassemblyStats};
pub use socket::{
    Filter, KernelDrops, Message, Receiver, RecvStats, Sender, READ_TURN, SELF_TEST_CHANNEL, SELF_TEST_PAYLOAD,
};
