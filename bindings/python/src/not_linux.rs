//! What stands in for `channel` elsewhere (Windows, macOS, the BSDs): nerve-shm's channels are built on Linux's
//! futexes and /dev/shm. The same names exist (so `import nerve` and its `__all__` are the same everywhere) and every
//! way to make one raises `nerve.ChannelError` (an `OSError`) with the bus's own refusal of `shm://`, which names
//! the transports that work here; the bus, logs and the codec work.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::ChannelError;

pyo3::create_exception!(
    nerve,
    OverwrittenError,
    ChannelError,
    "A view's frame was reclaimed by the channel's writers (shared-memory channels are Linux only)."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Channel>()?;
    m.add_class::<Loan>()?;
    m.add_class::<View>()?;
    m.add_class::<ViewSubscription>()?;
    m.add_function(wrap_pyfunction!(subscribe_views, m)?)?;
    m.add("OverwrittenError", m.py().get_type::<OverwrittenError>())?;
    Ok(())
}

/// The error of every shm entry point here: the bus's own for `shm://` ("shm:// channels are only available on
/// Linux; on this system use udpm, ...").
fn unavailable() -> PyErr {
    let reason = match nerve_bus::Bus::new(Some("shm://")) {
        Err(e) => e.to_string(),
        Ok(_) => "shared-memory channels are only available on Linux".to_owned(),
    };
    ChannelError::new_err(reason)
}

/// A shared-memory channel: Linux only; here every constructor raises `ChannelError`.
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct Channel {}

#[pymethods]
impl Channel {
    #[staticmethod]
    #[pyo3(signature = (name, *, frames = 16, frame_size = 65536, mode = 0o600, dir = None))]
    fn create(name: &str, frames: u64, frame_size: u64, mode: u32, dir: Option<PathBuf>) -> PyResult<Self> {
        let _ = (name, frames, frame_size, mode, dir);
        Err(unavailable())
    }

    #[staticmethod]
    #[pyo3(signature = (name, *, dir = None))]
    fn open(name: &str, dir: Option<PathBuf>) -> PyResult<Self> {
        let _ = (name, dir);
        Err(unavailable())
    }

    #[staticmethod]
    #[pyo3(signature = (name, *, frames = 16, frame_size = 65536, mode = 0o600, dir = None))]
    fn open_or_create(name: &str, frames: u64, frame_size: u64, mode: u32, dir: Option<PathBuf>) -> PyResult<Self> {
        let _ = (name, frames, frame_size, mode, dir);
        Err(unavailable())
    }

    #[staticmethod]
    #[pyo3(signature = (name, *, dir = None))]
    fn remove(name: &str, dir: Option<PathBuf>) -> PyResult<()> {
        let _ = (name, dir);
        Err(unavailable())
    }

    #[staticmethod]
    #[pyo3(signature = (*, dir = None))]
    fn list(dir: Option<PathBuf>) -> PyResult<Vec<String>> {
        let _ = dir;
        Err(unavailable())
    }
}

/// A frame written in place: none can be made here.
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct Loan {}

/// A message kept in place: none can be made here.
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct View {}

/// A running `subscribe_views`: none can be made here.
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct ViewSubscription {}

/// `subscribe_views(pattern, handler, *, dir=None)`: raises `ChannelError` here.
#[pyfunction]
#[pyo3(signature = (pattern, handler, *, dir = None))]
fn subscribe_views(pattern: &str, handler: Bound<'_, PyAny>, dir: Option<PathBuf>) -> PyResult<ViewSubscription> {
    let _ = (pattern, handler, dir);
    Err(unavailable())
}
