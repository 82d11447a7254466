//! The `inproc://` and `memq://` providers: a transport that moves nothing, because nothing leaves the process.
//!
//! The bus delivers every publication to its own subscriptions itself (typed ones without encoding or copying, see
//! `crate::typed`), so a bus whose only peers are in its own process needs no transport at all: no socket, no
//! thread, no encoding. `inproc://NAME` buses are shared process-wide by name (every `Bus::new("inproc://NAME")`
//! returns the same bus, so components built apart find each other); `memq://` is LCM's name for an in-process bus
//! and gives a private bus per `Bus::new`, as LCM's memq gives one queue per `lcm_create`. Both honour every QoS
//! policy: all delivery is the bus's own queues. On `memq://` a byte-level callback subscription (what LCM's APIs
//! make) keeps every message until `handle()` takes it, whatever its capacity, as LCM's memq does (its provider
//! queue is unbounded); `inproc://` applies the capacity and overflow policy on arrival.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{Provider, ProviderStats, QosSupport, Sink};
use crate::error::BusError;
use crate::url::Url;

/// The transport of an in-process-only bus.
pub struct Inproc {
    name: &'static str,
    /// `inproc://NAME`'s name: buses of one name are one bus process-wide.
    domain: Option<String>,
    published: AtomicU64,
}

impl Inproc {
    /// The `inproc://` provider.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Inproc {
        Inproc { name: "inproc", domain: Some(String::new()), published: AtomicU64::new(0) }
    }

    /// The registry's constructor for `inproc://NAME` (no options).
    pub fn from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        url.check_options(&[])?;
        Ok(Box::new(Inproc { domain: Some(url.network.clone()), ..Inproc::new() }))
    }

    /// The registry's constructor for `memq://` (no options).
    pub fn memq_from_url(url: &Url) -> Result<Box<dyn Provider>, BusError> {
        url.check_options(&[])?;
        Ok(Box::new(Inproc::memq()))
    }

    /// The `memq://` provider (the same, under LCM's name).
    pub fn memq() -> Inproc {
        Inproc { name: "memq", domain: None, published: AtomicU64::new(0) }
    }
}

impl Provider for Inproc {
    fn name(&self) -> &'static str {
        self.name
    }

    /// Counts the message; there is no one outside the process to send it to (the bus calls this only for a
    /// provider that leaves the process, so only a direct caller gets here).
    fn publish(&self, _channel: &str, _data: &[u8]) -> Result<(), BusError> {
        self.published.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn start(&self, _sink: Arc<dyn Sink>) -> Result<(), BusError> {
        Ok(())
    }

    fn stats(&self) -> ProviderStats {
        ProviderStats { published: self.published.load(Ordering::Relaxed), ..ProviderStats::default() }
    }

    fn leaves_process(&self) -> bool {
        false
    }

    fn qos_support(&self) -> QosSupport {
        QosSupport::ALL
    }

    fn domain(&self) -> Option<&str> {
        self.domain.as_deref()
    }

    /// memq: yes, as LCM's memq (every publication is handled, however many wait); inproc: no (Nerve's
    /// drop-oldest queues).
    fn holds_until_handled(&self) -> bool {
        self.name == "memq"
    }
}
