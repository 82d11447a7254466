//! The [`Sink`] a provider delivers into: the hub, as long as the bus lives.

use std::borrow::Cow;
use std::sync::Weak;

use super::{Hub, Origin};
use crate::error::BusError;
use crate::provider::{Incoming, Sink};

/// Where the provider delivers: the hub, as long as the bus lives.
pub(super) struct HubSink(pub(super) Weak<Hub>);

impl Sink for HubSink {
    fn deliver(&self, msg: Incoming) {
        if let Some(hub) = self.0.upgrade() {
            hub.route_bytes(Cow::Owned(msg.channel), Cow::Owned(msg.data), msg.recv_utime, Origin::Transport);
        }
    }

    fn drained(&self) -> bool {
        self.0.upgrade().is_some_and(|hub| hub.dispatch_inline())
    }

    fn wants(&self, channel: &str) -> bool {
        self.0.upgrade().is_some_and(|hub| hub.lock().wants(channel))
    }

    fn report(&self, error: BusError) {
        if let Some(hub) = self.0.upgrade() {
            hub.report(error, false);
        }
    }

    fn receive_stopped(&self, error: BusError) {
        if let Some(hub) = self.0.upgrade() {
            hub.report(error, true);
        }
    }

    fn reader_free(&self) {
        if let Some(hub) = self.0.upgrade() {
            hub.wake_handle_waiters();
        }
    }

    fn waiting(&self) -> bool {
        self.0.upgrade().is_some_and(|hub| hub.lock().pending > 0)
    }
}
