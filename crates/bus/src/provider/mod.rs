//! The [`Provider`] trait: LCM's provider vtable (create, publish, subscribe, handle, fileno) in Rust form, and the
//! providers this build has. A provider moves bytes; matching, queues and dispatch belong to the bus.

use std::sync::Arc;

use crate::error::BusError;
use crate::pattern::Pattern;

pub mod memq;
pub mod mpudpm;
mod thread;
pub mod udpm;

/// A message as a provider hands it to the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The channel.
    pub channel: String,
    /// The encoded message.
    pub data: Vec<u8>,
    /// When it arrived, microseconds since the epoch.
    pub recv_utime: i64,
}

/// Where a provider delivers what it receives (the bus).
pub trait Sink: Send + Sync {
    /// Takes one message into the subscriptions' queues. Must not block for long.
    fn deliver(&self, msg: Incoming);
    /// Called by a provider's receive thread each time it has handed over everything the transport had (and when
    /// it has been idle for a while). The bus may then run ONE callback on this thread, when the user asked for a
    /// dispatcher: so the thread alternates between draining the socket into the drop-oldest queues and running
    /// callbacks, and a backlog waits in those queues (newest wins), never in the kernel's FIFO buffer. Returns
    /// whether more callbacks are waiting, in which case the provider should come back without blocking.
    fn drained(&self) -> bool {
        false
    }
}

/// Transport counters a provider keeps, for `spy` and for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderStats {
    /// Messages published.
    pub published: u64,
    /// Messages received whole.
    pub received: u64,
    /// Datagrams or frames dropped as malformed.
    pub malformed: u64,
    /// Messages lost in the transport that it could detect (e.g. incomplete fragmented messages dropped).
    pub lost: u64,
}

/// One transport.
pub trait Provider: Send + Sync {
    /// The URL scheme, e.g. `udpm`.
    fn name(&self) -> &'static str;
    /// Sends one message.
    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError>;
    /// Starts receiving into `sink`. Called once, on the first subscription, `handle` or `fileno`.
    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError>;
    /// A subscription was added: a provider that receives selectively (multi-port udpm) joins what it needs.
    fn subscribed(&self, _pattern: &Pattern) -> Result<(), BusError> {
        Ok(())
    }
    /// Counters so far.
    fn stats(&self) -> ProviderStats;
    /// Whether messages arrive on a receive thread of the provider's own (so callbacks can run there).
    fn has_receive_thread(&self) -> bool {
        false
    }
}
