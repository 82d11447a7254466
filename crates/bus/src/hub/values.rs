//! The hub's public value types (the crate root re-exports them): where a message came from, a received message,
//! what a full queue gives up, and a subscription's counters.

use nerve_codec::Message;

use super::decode_as;
use crate::error::TypeError;
use crate::qos;

/// LCM's default queue capacity per subscription.
pub const DEFAULT_CAPACITY: usize = qos::DEFAULT_DEPTH;

/// Where a message came from, as far as this bus can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Published through this bus (raw or typed, by this process).
    Local,
    /// Received from the transport: published by another process (or another bus of this one), or read from a log.
    /// A bridge between two buses forwards only these, so nothing it forwards comes back to be forwarded again.
    Transport,
}

/// A received message, shared by every subscription that matched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The channel it came on.
    pub channel: String,
    /// The encoded message (fingerprint first, for LCM types).
    pub data: Vec<u8>,
    /// When it arrived, microseconds since the epoch.
    pub recv_utime: i64,
    /// Whether it was published through this bus or came from the transport.
    pub origin: Origin,
}

impl Received {
    /// Decodes it as `M`, checking the fingerprint first.
    pub fn decode<M: Message>(&self) -> Result<M, TypeError> {
        decode_as(&self.data)
    }
}

/// What a full queue gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The oldest queued message goes: the newest sample wins (the default; what control loops want).
    #[default]
    DropOldest,
    /// The arriving message goes (LCM's behaviour).
    DropNewest,
}

/// Counters of one subscription.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubscriptionStats {
    /// Messages that matched and were queued.
    pub received: u64,
    /// Messages handed to the handler or taken by the owner.
    pub delivered: u64,
    /// Messages dropped because the queue was full (the oldest, or the newest with `Overflow::DropNewest`; for a
    /// typed subscription: its keep-last ring overwriting the oldest).
    pub dropped_overflow: u64,
    /// Messages a typed subscription could not decode (wrong type or corrupt).
    pub decode_errors: u64,
    /// Messages a keep-all subscription refused because it already held its resource limit (an error from
    /// `publish` when the subscription is reliable).
    pub dropped_limit: u64,
    /// Publishers refused because their QoS could not serve this subscription (ROS 2's incompatible-QoS event).
    pub incompatible_qos: u64,
    /// Publishers refused because they publish another message type on this channel.
    pub incompatible_type: u64,
}
