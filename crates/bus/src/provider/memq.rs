//! The `memq://` provider (LCM's in-process queue): what one bus publishes, the same bus receives. No IPC; handy
//! for tests and for single-process programs that want the bus API.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{Incoming, Provider, ProviderStats, Sink};
use crate::error::BusError;

/// The in-process queue.
#[derive(Default)]
pub struct Memq {
    sink: Mutex<Option<Arc<dyn Sink>>>,
    published: AtomicU64,
    received: AtomicU64,
}

impl Provider for Memq {
    fn name(&self) -> &'static str {
        "memq"
    }

    fn publish(&self, channel: &str, data: &[u8]) -> Result<(), BusError> {
        self.published.fetch_add(1, Ordering::Relaxed);
        // Clone the sink out so delivery runs without this lock (a handler may publish again).
        let sink = self.sink.lock().expect("memq lock").clone();
        if let Some(sink) = sink {
            self.received.fetch_add(1, Ordering::Relaxed);
            sink.deliver(Incoming { channel: channel.to_owned(), data: data.to_vec(), recv_utime: nerve_udpm::now_utime() });
        }
        Ok(())
    }

    fn start(&self, sink: Arc<dyn Sink>) -> Result<(), BusError> {
        *self.sink.lock().expect("memq lock") = Some(sink);
        Ok(())
    }

    fn stats(&self) -> ProviderStats {
        ProviderStats {
            published: self.published.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            ..ProviderStats::default()
        }
    }
}
