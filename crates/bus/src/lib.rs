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
//! [`Executor`]'s threads), with no encoding and no copy that ownership does not require (the copy tables of ROS 2's
//! intra-process communications article), under ROS 2's [`Qos`] ([`qos`] says what each policy means here). The
//! transport carries a publication only to other processes, and never back to its own (no duplicates). `inproc://` is a
//! bus with no transport at all.
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
//! wants the newest sample, not a backlog (LCM drops the newest, and shares one counter per subscription:
//! lcm-proj/lcm#345 and #611). Every drop is counted in [`SubscriptionStats`]. Handlers run with no lock held, so they
//! may publish and unsubscribe freely.
//!
//! The capacity is how far behind a handler may fall, in messages, before the oldest go; with a [`Dispatcher`] on
//! udpm the receive thread drains the socket into the queues, so a whole process stalled for a moment (a busy CPU's
//! time slice is milliseconds) meets that limit as soon as it runs again. A subscription that must see every message
//! (a relay, a logger) asks for capacity 0 (unbounded) or a depth of its rate times the longest stall it must ride
//! out. At a high rate the default of 30 covers a stall far shorter than a time slice, so the echo suite's relaying
//! client (`bench/`) loses requests from a default queue on a loaded machine and none with capacity 0; LCM's client,
//! with the same default of 30 but drop-newest and a receive thread separate from the handler's (whose wake-ups
//! interleave the two), loses fewer but still some.
//!
//! In-process delivery uses the same per-subscription queues (the design of ROS 2's intra-process communications
//! article: one buffer per subscription), so history, overflow and dispatch are the same whatever the publisher's
//! transport, and a publisher never waits for a subscription. Where each copy is made is decided once, at publish time,
//! from how many matching subscriptions own and how many share.

#![deny(missing_docs)]

mod bus;
#[cfg(feature = "test-support")]
pub mod conformance;
mod error;
mod executor;
mod hub;
mod pattern;
pub mod provider;
pub mod qos;
mod sys;
mod typed;
mod url;

pub use bus::{Bus, Dispatcher, MessageStream, Subscriber, Subscription};
pub use error::{BatchError, BusError, TypeError};
pub use executor::Executor;
pub use hub::dispatch::Health;
pub use hub::{Origin, Overflow, Received, SubscriptionStats, DEFAULT_CAPACITY};
pub use pattern::{Pattern, PatternError};
pub use qos::{Durability, History, Qos, Reliability};
pub use typed::{Publisher, PublisherStats, Take, TypedSubscriber};
pub use url::{Url, UrlError, DEFAULT_URL};
