//! View subscriptions ([`Shm::subscribe_views`]): the shm provider's receive path handing each message to a handler
//! as a [`View`] of its frame in shared memory, with no copy, instead of to the bus's queues as a copy.
//!
//! Everything else is the provider's: one receive thread on a wait set for all the channels the pattern matches,
//! the directory watcher for channels made later, messages read in order with losses counted, a shrunk file
//! reported. The handler runs on the receive thread as each message is taken (no queue: a queued view would only
//! age towards being overwritten), and may keep the view.
//!
//! The newest-sample rule is kept by reporting, as nerve-shm's views do: a writer never waits for a view, so a
//! handler (or a kept view) slower than the writers' lap of the ring finds [`View::check`] failing with
//! [`Overwritten`](nerve_shm::Overwritten); and messages the writers overwrote before the receive thread came to
//! them are counted in [`ProviderStats::lost`] (and in the next view's `info().missed`).

use std::sync::{Arc, Mutex};

use nerve_shm::View;

use super::receive::Start;
use super::{Shm, ShmConfig};
use crate::error::BusError;
use crate::pattern::Pattern;
use crate::provider::{Incoming, Provider, ProviderStats, Sink};

/// Where a view subscription's provider reports what went wrong after it started (a channel that cannot be read, a
/// shrunk file): kept for [`ViewSubscription::take_errors`]. Nothing is delivered through it.
#[derive(Default)]
struct Errors(Mutex<Vec<BusError>>);

impl Errors {
    fn push(&self, e: BusError) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(e);
    }
}

impl Sink for Errors {
    fn deliver(&self, _: Incoming) {
        // A view subscription's receive threads hand views to its handler, never copies to a sink.
    }

    fn report(&self, error: BusError) {
        self.push(error);
    }

    fn receive_stopped(&self, error: BusError) {
        self.push(error);
    }
}

/// A subscription whose handler gets each message as a view of its shm frame; made by [`Shm::subscribe_views`].
/// Dropping it stops its threads (a handler running then finishes first).
pub struct ViewSubscription {
    shm: Shm,
    errors: Arc<Errors>,
}

impl ViewSubscription {
    /// Counters: messages received (handed to the handler) and lost (overwritten before they were read), entries
    /// that could not be read (malformed).
    pub fn stats(&self) -> ProviderStats {
        self.shm.stats()
    }

    /// The errors reported since the last call: channels that cannot be read, files that shrank (receiving goes
    /// on).
    pub fn take_errors(&self) -> Vec<BusError> {
        std::mem::take(&mut *self.errors.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Shm {
    /// Calls `handler(channel, view)` for every message on the shm channels of `config`'s directory whose bus name
    /// `pattern` (a regular expression) matches in full: channels that exist now from their next message, channels
    /// made later from their oldest. `view` is the message in place ([`View::bytes`]), no copy whatever its size;
    /// read it, then [`View::check`] it (or use [`View::read`]): a writer never waits for a view, so a frame the
    /// writers reclaimed while the handler read it (a handler slower than their lap of the ring) fails the check
    /// with [`Overwritten`](nerve_shm::Overwritten), and what was read must be discarded. The handler runs on the
    /// receive thread; it may keep views (each keeps its channel mapped) and check them later.
    ///
    /// A bad pattern is [`BusError::Pattern`]; a directory that does not exist, [`BusError::Config`].
    pub fn subscribe_views(
        config: ShmConfig,
        pattern: &str,
        handler: impl FnMut(&str, View) + Send + 'static,
    ) -> Result<ViewSubscription, BusError> {
        let pattern = Pattern::new(pattern).map_err(BusError::Pattern)?;
        let shm = Shm::open_with(config, Some(Box::new(handler)))?;
        let errors = Arc::new(Errors::default());
        shm.start_watcher(Arc::clone(&errors) as Arc<dyn Sink>)?;
        {
            let mut st = shm.recv.lock();
            st.patterns.push(pattern);
            shm.recv.scan(&mut st, Start::AfterNewest);
        }
        Ok(ViewSubscription { shm, errors })
    }
}
