//! `Bus` and `Subscription`: nerve-bus from Python (every provider, chosen by URL as in the CLI).
//!
//! Handlers are Python callables called as LCM calls them, `handler(channel, data)`, from inside `handle()` /
//! `handle_timeout()` on the calling thread. Those calls wait with the GIL released (in slices of
//! [`SIGNAL_SLICE`], between which Python's signal handlers run) and take it back only to run a handler. An
//! exception a handler raises is kept and raised by the `handle` call that ran it, once the message's other
//! handlers have run (LCM's Python module raises it from `handle` too).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nerve_bus::{Bus as RustBus, BusError, Overflow, Received, Subscription as RustSubscription};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The longest a wait runs with the GIL released before Python's signal handlers get a chance to run.
const SIGNAL_SLICE: Duration = Duration::from_millis(100);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Bus>()?;
    m.add_class::<Subscription>()?;
    Ok(())
}

/// A bus error as the Python exception a user expects for it.
fn bus_err(e: BusError) -> PyErr {
    let msg = e.to_string();
    match e {
        BusError::Transport { .. } => PyOSError::new_err(msg),
        BusError::HandleInsideHandler | BusError::HandlerPanicked { .. } => PyRuntimeError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

/// The first exception a handler raised during the current `handle` call.
type Pending = Arc<Mutex<Option<PyErr>>>;

/// A publish/subscribe bus on the transport its URL names (`udpm://`, `mpudpm://`, `shm://`, `inproc://`,
/// `memq://`, `file://`); `None` takes `NERVE_URL`, then `LCM_DEFAULT_URL`, then LCM's default.
#[pyclass(module = "nerve._native", frozen, subclass)]
pub(crate) struct Bus {
    bus: Mutex<Option<RustBus>>,
    pending: Pending,
}

impl Bus {
    fn get(&self) -> PyResult<RustBus> {
        self.bus
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| PyValueError::new_err("the bus is closed"))
    }

    /// Raises the exception a handler raised during the last dispatch, if any.
    fn raise_pending(&self) -> PyResult<()> {
        match self.pending.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl Bus {
    #[new]
    #[pyo3(signature = (url = None))]
    fn new(py: Python<'_>, url: Option<String>) -> PyResult<Self> {
        let bus = py.detach(|| RustBus::new(url.as_deref())).map_err(bus_err)?;
        Ok(Bus { bus: Mutex::new(Some(bus)), pending: Arc::new(Mutex::new(None)) })
    }

    /// The transport's name, e.g. `udpm`.
    #[getter]
    fn provider(&self) -> PyResult<&'static str> {
        Ok(self.get()?.provider_name())
    }

    /// Publishes `data` (bytes, any bytes-like object, or a message with an `encode()` method) on `channel`.
    fn publish(&self, py: Python<'_>, channel: &str, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let bus = self.get()?;
        let owned;
        let bytes: &[u8] = if let Ok(b) = data.cast::<PyBytes>() {
            b.as_bytes()
        } else if let Ok(buf) = pyo3::buffer::PyBuffer::<u8>::get(data) {
            owned = buf.to_vec(py)?;
            &owned
        } else if data.hasattr("encode")? && !data.is_instance_of::<pyo3::types::PyString>() {
            let encoded = data.call_method0("encode")?;
            owned = encoded
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err("encode() did not return bytes"))?
                .as_bytes()
                .to_vec();
            &owned
        } else {
            return Err(PyTypeError::new_err(format!(
                "publish() needs bytes, a bytes-like object or a message with encode(), not {}",
                data.get_type().name()?
            )));
        };
        py.detach(|| bus.publish_raw(channel, bytes)).map_err(bus_err)
    }

    /// Calls `handler(channel, data)` for every message on a channel that `pattern` (a regular expression) matches
    /// in full, from `handle()`. `capacity` messages wait at most (0: unbounded); when the queue is full,
    /// `overflow="drop_oldest"` (the default) or `"drop_newest"` (LCM's) says which goes. With `type=` (a generated
    /// message class) the handler gets `type.decode(data)`; a message of another type (fingerprint) or one that does
    /// not decode is counted in `decode_errors` and never handed over.
    #[pyo3(signature = (pattern, handler, *, capacity = 30, overflow = "drop_oldest", r#type = None))]
    fn subscribe(
        &self,
        pattern: &str,
        handler: Bound<'_, PyAny>,
        capacity: usize,
        overflow: &str,
        r#type: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Subscription> {
        if !handler.is_callable() {
            return Err(PyTypeError::new_err("handler must be callable"));
        }
        let overflow = match overflow {
            "drop_oldest" => Overflow::DropOldest,
            "drop_newest" => Overflow::DropNewest,
            other => {
                return Err(PyValueError::new_err(format!(
                    "overflow must be \"drop_oldest\" or \"drop_newest\", not {other:?}"
                )))
            }
        };
        // The type's fingerprint and decoder, when a type is given.
        let typed: Option<([u8; 8], Py<PyAny>)> = match &r#type {
            None => None,
            Some(t) => {
                let fp = t.call_method0("_get_packed_fingerprint").map_err(|_| {
                    PyTypeError::new_err("type must be a generated LCM message class (with _get_packed_fingerprint)")
                })?;
                let fp: [u8; 8] = fp
                    .extract::<Vec<u8>>()
                    .ok()
                    .and_then(|v| v.try_into().ok())
                    .ok_or_else(|| PyTypeError::new_err("type's _get_packed_fingerprint() is not 8 bytes"))?;
                Some((fp, t.getattr("decode")?.unbind()))
            }
        };
        let bus = self.get()?;
        let handler = handler.unbind();
        let pending = Arc::clone(&self.pending);
        let decode_errors = Arc::new(AtomicU64::new(0));
        let errors = Arc::clone(&decode_errors);
        let sub = bus
            .subscribe_with(pattern, capacity, overflow, move |m: &Received| {
                if let Some((fp, _)) = &typed {
                    if m.data.get(..8) != Some(&fp[..]) {
                        errors.fetch_add(1, Ordering::Relaxed);
                        return Ok(());
                    }
                }
                Python::attach(|py| {
                    let data = PyBytes::new(py, &m.data);
                    let value = match &typed {
                        None => data.into_any(),
                        Some((_, decode)) => match decode.call1(py, (data,)) {
                            Ok(v) => v.into_bound(py),
                            Err(_) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                                return;
                            }
                        },
                    };
                    if let Err(e) = handler.call1(py, (m.channel.as_str(), value)) {
                        pending.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                    }
                });
                Ok(())
            })
            .map_err(bus_err)?;
        Ok(Subscription { sub, bus, decode_errors })
    }

    /// Removes a subscription.
    fn unsubscribe(&self, sub: &Subscription) -> PyResult<()> {
        self.get()?.unsubscribe(&sub.sub).map_err(bus_err)
    }

    /// Waits for a message and calls its handlers.
    fn handle(&self, py: Python<'_>) -> PyResult<()> {
        let bus = self.get()?;
        loop {
            let handled = py.detach(|| bus.handle_timeout(SIGNAL_SLICE)).map_err(bus_err);
            self.raise_pending()?;
            if handled? {
                return Ok(());
            }
            py.check_signals()?;
        }
    }

    /// Like `handle()`, waiting at most `timeout_ms` milliseconds; whether a message was handled.
    fn handle_timeout(&self, py: Python<'_>, timeout_ms: i64) -> PyResult<bool> {
        let ms = u64::try_from(timeout_ms).map_err(|_| PyValueError::new_err("invalid timeout"))?;
        let bus = self.get()?;
        let end = Instant::now() + Duration::from_millis(ms);
        loop {
            let slice = end.saturating_duration_since(Instant::now()).min(SIGNAL_SLICE);
            let handled = py.detach(|| bus.handle_timeout(slice)).map_err(bus_err);
            self.raise_pending()?;
            if handled? {
                return Ok(true);
            }
            if Instant::now() >= end {
                return Ok(false);
            }
            py.check_signals()?;
        }
    }

    /// A file descriptor that is readable while a message waits for `handle()` (for select / selectors); on
    /// Windows a socket's number, which select takes there (as `socket.fileno()` gives).
    fn fileno(&self) -> PyResult<i64> {
        // A file descriptor (i32) widens; a SOCKET (u64) is a small handle value, kept as it is.
        self.get()?.fileno().map(|fd| fd as i64).map_err(bus_err)
    }

    /// Closes the bus (its subscriptions end); closing again does nothing.
    fn close(&self, py: Python<'_>) {
        let bus = self.bus.lock().unwrap_or_else(|p| p.into_inner()).take();
        py.detach(move || drop(bus));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _e: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }
}

/// A subscription made by `Bus.subscribe`.
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct Subscription {
    sub: RustSubscription,
    bus: RustBus,
    /// Messages of another type, or that did not decode, for a `type=` subscription.
    decode_errors: Arc<AtomicU64>,
}

#[pymethods]
impl Subscription {
    /// Removes the subscription.
    fn unsubscribe(&self) -> PyResult<()> {
        self.sub.unsubscribe().map_err(bus_err)
    }

    /// Sets how many messages may wait in the queue (0: unbounded).
    fn set_queue_capacity(&self, capacity: usize) -> PyResult<()> {
        self.bus.set_queue_capacity(&self.sub, capacity).map_err(bus_err)
    }

    /// Messages waiting in the queue.
    #[getter]
    fn queue_size(&self) -> PyResult<usize> {
        self.bus.queue_len(&self.sub).map_err(bus_err)
    }

    /// Messages not handed over because they were of another type or did not decode (`type=` subscriptions).
    #[getter]
    fn decode_errors(&self) -> u64 {
        self.decode_errors.load(Ordering::Relaxed)
    }

    /// Messages dropped because the queue was full.
    #[getter]
    fn dropped(&self) -> PyResult<u64> {
        Ok(self.bus.stats(&self.sub).map_err(bus_err)?.dropped_overflow)
    }
}
