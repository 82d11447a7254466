//! The publish/subscribe API every Nerve transport sits behind.
//!
//! # Brief overview
//!
//! A [`Bus`] is made from a URL ([`Url`]; `udpm://239.255.76.67:7667?ttl=0` by default, `NERVE_URL` then
//! `LCM_DEFAULT_URL` override it) and owns one [`provider::Provider`]: the transport, opened by the constructor
//! registered for the URL's scheme ([`provider::register`]; a provider crate registers its own the same way the
//! built-ins are, and runs `nerve_bus::conformance` (feature `test-support`) over it). Subscriptions take a channel
//! [`Pattern`] (a regular expression matched against the whole channel name) and either a callback, dispatched by
//! [`Bus::handle`] / [`Bus::handle_timeout`] / a background [`Dispatcher`] (with [`Bus::fileno`] for select/poll), or
//! a queue the caller drains ([`Subscriber`], also an async stream). Typed publish and subscribe use the generated
//! types' [`nerve_codec::Message`] impls; a message of the wrong type is a [`TypeError`], never a garbage value.
//!
//! Inside one process, typed values go directly from a [`Publisher<T>`](Publisher) ([`Bus::publisher`]) to
//! subscriptions that take them owned or shared ([`Bus::subscribe_owned`], [`Bus::subscribe_shared`], or on an
//! [`Executor`]'s threads), with no encoding and no copy that ownership does not require (seed 003's tables), under
//! ROS 2's [`Qos`] ([`qos`] says what each policy means here). The transport carries a publication only to other
//! processes, and never back to its own (no duplicates). `inproc://` is a bus with no transport at all.
//!
//! Every [`Received`] message says where it came from ([`Origin`]): published through this bus, or from the
//! transport, so a bridge between two buses forwards only what came from the other side. Nothing here prints:
//! a handler's panic is [`BusError::HandlerPanicked`] from the `handle()` that ran it (the bus stays usable), and
//! what goes wrong where no call could return it (a receive thread that stops) comes back from the next `handle()`
//! and in [`Bus::health`].
//!
//! ```no_run
//! let bus = nerve_bus::Bus::new(Some("udpm://239.255.76.67:7667?ttl=0"))?;
//! let sub = bus.subscribe_raw("POSE.*", |m| println!("{} {} bytes", m.channel, m.data.len()))?;
//! bus.publish_raw("POSE_EST", b"...")?;
//! bus.handle()?;
//! # Ok::<(), nerve_bus::BusError>(())
//! ```
//!
//! # Design
//!
//! Each subscription has its own bounded queue, and by default a full queue drops its OLDEST message: a control loop
//! wants the newest sample, not a backlog (LCM drops the newest, and shares one counter per subscription, issue
//! #345/#611). Every drop is counted in [`SubscriptionStats`]. Handlers run with no lock held, so they may publish and
//! unsubscribe freely.
//!
//! The capacity is how far behind a handler may fall, in messages, before the oldest go; with a [`Dispatcher`] on
//! udpm the receive thread drains the socket into the queues, so a whole process stalled for a moment (a busy CPU's
//! time slice is milliseconds) meets that limit as soon as it runs again. A subscription that must see every message
//! (a relay, a logger) asks for capacity 0 (unbounded) or a depth of its rate times the longest stall it must ride
//! out: at 25,000 messages/s the default 30 is 1.2 ms. Measured with the echo suite's client relaying 800-byte
//! messages at 20 MB/s on a 2-core VM while a build ran: 8-22 % of the requests dropped from the default queue, none
//! with capacity 0, and 0.3-0.6 % with LCM's client (its own default of 30, drop-newest, and a receive thread
//! separate from the handler's, whose wake-ups interleave the two).
//!
//! In-process delivery uses the same per-subscription queues (ROS 2's design in seed 003: one buffer per
//! subscription), so history, overflow and dispatch are the same whatever the publisher's transport, and a publisher
//! never waits for a subscription. Where each copy is made is decided once, at publish time, from how many matching
//! subscriptions own and how many share.

#![deny(missing_docs)]

mod bus;
#[cfg(feature = "test-support")]
pub mod conformance;
mod core;
mod error;
mod executor;
mod inproc;
mod pattern;
pub mod provider;
pub mod qos;
mod url;

pub use bus::{Bus, Dispatcher, MessageStream, Subscriber, Subscription};
pub use core::dispatch::Health;
pub use core::{Origin, Overflow, Received, SubscriptionStats, DEFAULT_CAPACITY};
pub use error::{BatchError, BusError, TypeError};
pub use executor::Executor;
pub use inproc::{Publisher, PublisherStats, Take, TypedSubscriber};
pub use pattern::{Pattern, PatternError};
pub use qos::{Durability, History, Qos, Reliability};
pub use url::{Url, UrlError, DEFAULT_URL};
