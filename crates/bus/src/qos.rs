//! [`Qos`]: the quality of service of a typed publisher or subscription (ROS 2's history, reliability and
//! durability), the rules for which publisher may serve which subscription, and what a transport can honour.
//!
//! # What each policy means here
//!
//! - **History** is the subscription's queue (one per subscription, as ROS 2's intra-process design article proposes).
//!   `KeepLast(depth)` is a ring: when it is full the oldest message goes, counted in `dropped_overflow`, as on every
//!   Nerve queue. `KeepAll` keeps every message up to `resource_limit`; a message that would exceed it is NOT queued,
//!   and that is reported, never silent: counted in the subscription's `dropped_limit` and the publisher's
//!   `limit_drops`, and when the subscription is reliable, `publish` returns
//!   [`BusError::LimitReached`](crate::BusError::LimitReached). ROS 2 blocks a reliable keep-all publisher instead;
//!   Nerve does not, because a slow subscription must never stall a publisher (and through it every other subscription
//!   of that publisher).
//! - **Reliability.** In-process delivery never loses a message on the way: it is pushed into every matching queue
//!   before `publish` returns, so `Reliable` and `BestEffort` differ only in compatibility (as in ROS 2's intra-process
//!   design) and in how a keep-all limit is reported. A transport that may lose messages (UDP multicast, or shared
//!   memory, where the newest sample wins and a writer never waits) cannot be reliable; asking for it there is refused
//!   when the publisher or subscription is created ([`BusError::QosUnsupported`](crate::BusError::QosUnsupported)), not
//!   silently degraded.
//! - **Durability.** `TransientLocal(depth)` on a publisher keeps its last `depth` messages (shared, never copied
//!   for the store); a transient-local subscription created later first receives the stored messages of every
//!   matching publisher, oldest first in publish order (at most its own `depth`), then live ones. `Volatile`
//!   subscriptions get only what is published after they exist. A transport that cannot hand a late joiner what was
//!   published before (udpm has no way to ask remote publishers) refuses transient-local subscriptions.
//!
//! # Compatibility (ROS 2's request-versus-offered rule)
//!
//! A publisher offers, a subscription requests; the offer must be at least as strong as the request:
//!
//! | publisher | subscription | |
//! |---|---|---|
//! | best effort | reliable | incompatible |
//! | volatile | transient local | incompatible |
//! | anything else | | compatible |
//!
//! History and depth never make a pair incompatible. An incompatible pair is refused when the second of the two is
//! created ([`BusError::IncompatibleQos`](crate::BusError::IncompatibleQos)), and counted in the first one's stats.
//! Byte-level subscriptions (`subscribe_raw` and friends) and messages from other processes carry no QoS: they
//! count as best-effort, volatile.

use std::fmt;

/// LCM's default queue depth, and the default `KeepLast` depth of a [`Qos`].
pub const DEFAULT_DEPTH: usize = 30;

/// The default bound of a `KeepAll` history, in messages.
pub const DEFAULT_RESOURCE_LIMIT: usize = 1000;

/// How many messages a subscription's queue keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// A ring of this many messages: the oldest goes when a new one arrives and it is full.
    KeepLast(usize),
    /// Every message, up to the [`Qos::resource_limit`]; hitting the limit is reported.
    KeepAll,
}

/// Whether every message must reach every matching subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    /// No message may be lost on the way (and a keep-all limit hit is an error from `publish`).
    Reliable,
    /// Messages may be lost (always the case over UDP multicast and shared memory).
    BestEffort,
}

/// Whether late-joining subscriptions receive messages published before they existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Only messages published after the subscription exists.
    Volatile,
    /// A publisher keeps its last `depth` messages; a transient-local subscription gets up to its `depth` of them.
    TransientLocal(usize),
}

/// The quality of service of a typed publisher or subscription. The default is LCM's behaviour: keep the last 30,
/// best effort, volatile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qos {
    /// The subscription's queue (ignored on a publisher).
    pub history: History,
    /// The bound of a `KeepAll` history, in messages.
    pub resource_limit: usize,
    /// Reliable or best effort.
    pub reliability: Reliability,
    /// Volatile or transient local.
    pub durability: Durability,
}

impl Default for Qos {
    fn default() -> Qos {
        Qos {
            history: History::KeepLast(DEFAULT_DEPTH),
            resource_limit: DEFAULT_RESOURCE_LIMIT,
            reliability: Reliability::BestEffort,
            durability: Durability::Volatile,
        }
    }
}

impl Qos {
    /// Keep the last `depth` messages, best effort, volatile.
    pub fn keep_last(depth: usize) -> Qos {
        Qos { history: History::KeepLast(depth), ..Qos::default() }
    }

    /// Keep every message up to `limit`, best effort, volatile.
    pub fn keep_all(limit: usize) -> Qos {
        Qos { history: History::KeepAll, resource_limit: limit, ..Qos::default() }
    }

    /// The same, reliable.
    pub fn reliable(self) -> Qos {
        Qos { reliability: Reliability::Reliable, ..self }
    }

    /// The same, best effort.
    pub fn best_effort(self) -> Qos {
        Qos { reliability: Reliability::BestEffort, ..self }
    }

    /// The same, transient local with `depth` stored messages.
    pub fn transient_local(self, depth: usize) -> Qos {
        Qos { durability: Durability::TransientLocal(depth), ..self }
    }

    /// The same, volatile.
    pub fn volatile(self) -> Qos {
        Qos { durability: Durability::Volatile, ..self }
    }

    /// Checks the numbers: a depth or limit of 0 would make a queue that can hold nothing.
    pub fn validate(&self) -> Result<(), String> {
        if self.history == History::KeepLast(0) {
            return Err("history keep_last(0) can hold no message; use a depth of 1 or more".into());
        }
        if self.history == History::KeepAll && self.resource_limit == 0 {
            return Err("history keep_all needs a resource_limit of 1 or more".into());
        }
        if self.durability == Durability::TransientLocal(0) {
            return Err("durability transient_local(0) stores nothing; use a depth of 1 or more, or volatile".into());
        }
        Ok(())
    }

    /// The queue this history makes: (capacity, whether a full queue rejects the newest and reports it).
    pub(crate) fn queue(&self) -> (usize, bool) {
        match self.history {
            History::KeepLast(depth) => (depth, false),
            History::KeepAll => (self.resource_limit, true),
        }
    }

    pub(crate) fn is_reliable(&self) -> bool {
        self.reliability == Reliability::Reliable
    }

    pub(crate) fn transient_depth(&self) -> Option<usize> {
        match self.durability {
            Durability::TransientLocal(d) => Some(d),
            Durability::Volatile => None,
        }
    }
}

/// Why a publisher cannot serve a subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incompatibility {
    /// The publisher is best effort and the subscription asks for reliable.
    Reliability,
    /// The publisher is volatile and the subscription asks for transient local.
    Durability,
}

impl Incompatibility {
    /// The policy's name.
    pub fn policy(self) -> &'static str {
        match self {
            Incompatibility::Reliability => "reliability",
            Incompatibility::Durability => "durability",
        }
    }
}

impl fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Incompatibility::Reliability => {
                f.write_str("the publisher is best_effort and the subscription asks for reliable")
            }
            Incompatibility::Durability => {
                f.write_str("the publisher is volatile and the subscription asks for transient_local")
            }
        }
    }
}

/// ROS 2's rule: whether a publisher offering `offered` may serve a subscription requesting `requested`.
pub fn check_compatible(offered: &Qos, requested: &Qos) -> Result<(), Incompatibility> {
    if offered.reliability == Reliability::BestEffort && requested.reliability == Reliability::Reliable {
        return Err(Incompatibility::Reliability);
    }
    if offered.durability == Durability::Volatile && matches!(requested.durability, Durability::TransientLocal(_)) {
        return Err(Incompatibility::Durability);
    }
    Ok(())
}

/// What a transport can honour beyond best effort, volatile (see [`crate::provider::Provider::qos_support`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QosSupport {
    /// Every message reaches every reader: nothing is lost in the transport.
    pub reliable: bool,
    /// A subscription created late can get messages published before it, from every publisher it can hear.
    pub transient_local: bool,
}

impl QosSupport {
    /// Everything: a transport that never leaves the process (all delivery is the bus's own queues).
    pub const ALL: QosSupport = QosSupport { reliable: true, transient_local: true };

    /// The first policy of `qos` this transport cannot honour, with why, if any.
    pub(crate) fn refuses(&self, qos: &Qos, subscription: bool) -> Option<&'static str> {
        if qos.is_reliable() && !self.reliable {
            return Some("reliable");
        }
        if subscription && qos.transient_depth().is_some() && !self.transient_local {
            return Some("transient_local");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros2_compatibility_table() {
        let be = Qos::default();
        let rel = Qos::default().reliable();
        let tl = Qos::default().transient_local(5);
        assert_eq!(check_compatible(&be, &rel), Err(Incompatibility::Reliability));
        assert_eq!(check_compatible(&rel, &be), Ok(()));
        assert_eq!(check_compatible(&rel, &rel), Ok(()));
        assert_eq!(check_compatible(&be, &be), Ok(()));
        assert_eq!(check_compatible(&be, &tl), Err(Incompatibility::Durability));
        assert_eq!(check_compatible(&tl, &be), Ok(()));
        assert_eq!(check_compatible(&tl.reliable(), &tl.reliable()), Ok(()));
        // History never matters.
        assert_eq!(check_compatible(&Qos::keep_all(3), &Qos::keep_last(1)), Ok(()));
    }

    #[test]
    fn zero_sizes_are_refused() {
        assert!(Qos::keep_last(0).validate().is_err());
        assert!(Qos::keep_all(0).validate().is_err());
        assert!(Qos::default().transient_local(0).validate().is_err());
        assert!(Qos::keep_all(1).validate().is_ok());
        assert_eq!(Qos::keep_last(4).queue(), (4, false));
        assert_eq!(Qos::keep_all(9).queue(), (9, true));
    }

    #[test]
    fn support_refusals() {
        let none = QosSupport::default();
        assert_eq!(none.refuses(&Qos::default().reliable(), false), Some("reliable"));
        assert_eq!(none.refuses(&Qos::default().transient_local(2), true), Some("transient_local"));
        // A transient-local publisher still serves in-process late joiners from its own store.
        assert_eq!(none.refuses(&Qos::default().transient_local(2), false), None);
        assert_eq!(QosSupport::ALL.refuses(&Qos::default().reliable().transient_local(1), true), None);
    }
}
