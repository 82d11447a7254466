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
            // The thread itself may hold the last reference to the bus (its sink), and so be the one dropping its
            // provider when it returns: joining itself would fail (EDEADLK, which std turns into a panic). It is
            // ending anyway, so let it go.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_thread_that_drops_its_own_handle_ends_without_panicking() {
        // The thread holds the only handle to itself (as a playback thread holding the last Arc of its bus does)
        // and drops it on its way out.
        let slot: Arc<Mutex<Option<ReceiveThread>>> = Arc::new(Mutex::new(None));
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<bool>();
        let inner = Arc::clone(&slot);
        let handle = ReceiveThread::spawn("test", "self-drop", move |_stop| {
            go_rx.recv().unwrap();
            let own = inner.lock().unwrap().take();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(own)));
            done_tx.send(result.is_ok()).unwrap();
        })
        .unwrap();
        *slot.lock().unwrap() = Some(handle);
        go_tx.send(()).unwrap();
        assert!(done_rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(), "dropping its own handle panicked");
    }
}
