//! [`ReceiveThread`]: a provider's receive thread, stopped and joined when the provider is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::error::BusError;

/// A named thread running `body(stop)` until `stop` is set; dropping this sets it and joins the thread. The body
/// must look at `stop` at least every few hundred milliseconds (the providers poll with a timeout).
pub(crate) struct ReceiveThread {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ReceiveThread {
    /// Starts the thread.
    pub(crate) fn spawn(
        provider: &'static str,
        name: &str,
        body: impl FnOnce(&AtomicBool) + Send + 'static,
    ) -> Result<ReceiveThread, BusError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || body(&flag))
            .map_err(|e| BusError::Transport { provider, source: Box::new(e) })?;
        Ok(ReceiveThread { stop, thread: Some(thread) })
    }
}

impl Drop for ReceiveThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
