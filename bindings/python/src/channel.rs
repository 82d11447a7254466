//! `Channel`, `Loan`, `LoanBuffer` and `View`: nerve-shm's shared-memory channels from Python.
//!
//! A `Channel` holds the mapped channel, one reader (its position is the Python object's) and one writer. `get`
//! and `put` run with the GIL released: waiting sleeps on the channel's futex in slices of [`SIGNAL_SLICE`], between
//! which Python's signal handlers run (Ctrl-C interrupts a wait). A `Loan` is a frame written in place: its
//! `buffer` is a writable memoryview of the frame in shared memory (numpy's `frombuffer` works on it), exported by
//! a `LoanBuffer` that counts its exports; `commit` publishes the frame only when every export is released, so no
//! Python object can write into a frame that belongs to the channel again.
//!
//! A `View` is a received message kept in place (nerve-shm's `View`): it exports the frame in shared memory as a
//! read-only buffer (`memoryview(view)`, `numpy.frombuffer(view, ...)`) and says whether the channel's writers have
//! reclaimed the frame since (`valid()`, `check()`); `release()` ends it, and the mapping is let go once the last
//! buffer exported from it is released too.
//!
//! Locks: a `Channel`'s reader and writer are behind `Mutex`es that are only ever taken with the GIL released
//! (taking one while holding the GIL could wait for a thread that waits for the GIL). A `View`'s own mutex is held
//! for a few instructions and never across a wait or a call into Python, so it is taken with the GIL held.

use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use nerve_shm::{
    Channel as ShmChannel, ChannelConfig, GetOutcome, MessageInfo, ReadMode, Reader, ShmError, Wait, Writer,
};
use pyo3::exceptions::{
    PyBufferError, PyFileExistsError, PyFileNotFoundError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::ChannelError;

/// The longest a wait sleeps with the GIL released before Python's signal handlers get a chance to run.
const SIGNAL_SLICE: Duration = Duration::from_millis(100);

pyo3::create_exception!(
    nerve,
    OverwrittenError,
    ChannelError,
    "A view's frame was reclaimed by the channel's writers, who never wait for views: its bytes are no longer the \
     message's (copy what must be kept, or read it sooner)."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Channel>()?;
    m.add_class::<Loan>()?;
    m.add_class::<LoanBuffer>()?;
    m.add_class::<View>()?;
    m.add_class::<ViewSubscription>()?;
    m.add_function(wrap_pyfunction!(subscribe_views, m)?)?;
    m.add("OverwrittenError", m.py().get_type::<OverwrittenError>())?;
    Ok(())
}

/// A channel error as the Python exception a user expects for it.
fn shm_err(e: ShmError) -> PyErr {
    let msg = e.to_string();
    match e {
        ShmError::InvalidName { .. } | ShmError::InvalidConfig { .. } | ShmError::MessageTooLarge { .. } => {
            PyValueError::new_err(msg)
        }
        ShmError::NotFound { .. } => PyFileNotFoundError::new_err(msg),
        ShmError::AlreadyExists { .. } => PyFileExistsError::new_err(msg),
        ShmError::PermissionDenied { .. } => PyPermissionError::new_err(msg),
        _ => ChannelError::new_err(msg),
    }
}

/// A mutex's guard; a poisoned one (a panic while it was held, which the libraries do not do) is taken as is: the
/// reader and writer hold no invariant a panic could break halfway.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The channel files (device, inode) on which a thread of this process holds a loan, and that thread: a put or a
/// loan on the same file from the same thread would wait for ever on the writer lock the loan holds, so it raises.
static LOANS: Mutex<Vec<((u64, u64), ThreadId)>> = Mutex::new(Vec::new());

fn loaned_here(key: (u64, u64)) -> bool {
    let me = std::thread::current().id();
    lock(&LOANS).iter().any(|&(k, t)| k == key && t == me)
}

/// A shared-memory channel (Nerve's `shm`: the newest message always wins, a writer never waits for a reader).
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct Channel {
    channel: ShmChannel,
    /// The channel file's (device, inode), which identifies it however its directory is spelled.
    key: (u64, u64),
    reader: Mutex<Reader>,
    /// `None` while a `Loan` has it: the loan holds the channel's writer lock, so a `put` now would wait for itself.
    writer: Mutex<Option<Box<Writer>>>,
}

impl Channel {
    fn wrap(channel: ShmChannel) -> Result<Channel, ShmError> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(channel.path()).map_err(|e| ShmError::Io {
            path: channel.path().to_path_buf(),
            op: "reading the metadata of",
            source: e,
        })?;
        let reader = Mutex::new(channel.reader());
        let writer = Mutex::new(Some(Box::new(channel.writer())));
        Ok(Channel { key: (meta.dev(), meta.ino()), channel, reader, writer })
    }

    fn take_writer(&self, py: Python<'_>) -> PyResult<Box<Writer>> {
        if loaned_here(self.key) {
            return Err(PyRuntimeError::new_err(format!(
                "channel {:?}: this thread holds a loan on it; commit or abort the loan first",
                self.channel.name()
            )));
        }
        py.detach(|| lock(&self.writer).take()).ok_or_else(|| {
            PyRuntimeError::new_err(format!(
                "channel {:?}: a loan is open on this Channel object; commit or abort it first",
                self.channel.name()
            ))
        })
    }

    fn give_writer(&self, py: Python<'_>, w: Box<Writer>) {
        py.detach(|| *lock(&self.writer) = Some(w));
    }
}

fn config(frames: u64, frame_size: u64, mode: u32, dir: Option<PathBuf>) -> ChannelConfig {
    let c = ChannelConfig::new(frames, frame_size).mode(mode);
    match dir {
        Some(d) => c.dir(d),
        None => c,
    }
}

/// `wait` / `timeout` of `get` as a deadline: `None` polls, `Some(None)` waits forever.
fn deadline(wait: bool, timeout: Option<f64>) -> PyResult<Option<Option<Instant>>> {
    match timeout {
        None if !wait => Ok(None),
        None => Ok(Some(None)),
        Some(t) if t.is_nan() || t < 0.0 || !t.is_finite() => {
            Err(PyValueError::new_err(format!("timeout must be a finite number of seconds >= 0, not {t}")))
        }
        Some(t) => Ok(Some(Instant::now().checked_add(Duration::from_secs_f64(t)))),
    }
}

#[pymethods]
impl Channel {
    /// Creates a channel (an error if it exists).
    #[staticmethod]
    #[pyo3(signature = (name, *, frames = 16, frame_size = 65536, mode = 0o600, dir = None))]
    fn create(
        py: Python<'_>,
        name: &str,
        frames: u64,
        frame_size: u64,
        mode: u32,
        dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        let cfg = config(frames, frame_size, mode, dir);
        py.detach(|| ShmChannel::create(name, &cfg)).and_then(Channel::wrap).map_err(shm_err)
    }

    /// Opens an existing channel.
    #[staticmethod]
    #[pyo3(signature = (name, *, dir = None))]
    fn open(py: Python<'_>, name: &str, dir: Option<PathBuf>) -> PyResult<Self> {
        py.detach(|| ShmChannel::open(name, dir.as_deref())).and_then(Channel::wrap).map_err(shm_err)
    }

    /// Opens a channel, creating it if it does not exist (an error if it exists with other sizes).
    #[staticmethod]
    #[pyo3(signature = (name, *, frames = 16, frame_size = 65536, mode = 0o600, dir = None))]
    fn open_or_create(
        py: Python<'_>,
        name: &str,
        frames: u64,
        frame_size: u64,
        mode: u32,
        dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        let cfg = config(frames, frame_size, mode, dir);
        py.detach(|| ShmChannel::open_or_create(name, &cfg)).and_then(Channel::wrap).map_err(shm_err)
    }

    /// Removes a channel's file (processes that have it open keep using it).
    #[staticmethod]
    #[pyo3(signature = (name, *, dir = None))]
    fn remove(py: Python<'_>, name: &str, dir: Option<PathBuf>) -> PyResult<()> {
        py.detach(|| ShmChannel::remove(name, dir.as_deref())).map_err(shm_err)
    }

    /// The channels in a directory, each a dict: `name`, `path`, and its statistics (`frames`, `frame_size`,
    /// `messages`, `mode`, ...) or `error` (why it could not be opened).
    #[staticmethod]
    #[pyo3(signature = (*, dir = None))]
    fn list<'py>(py: Python<'py>, dir: Option<PathBuf>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let found = py.detach(|| ShmChannel::list(dir.as_deref())).map_err(shm_err)?;
        found
            .into_iter()
            .map(|c| {
                let d = PyDict::new(py);
                d.set_item("name", &c.name)?;
                d.set_item("path", &c.path)?;
                match c.stats {
                    Ok(s) => stats_into(&d, &s)?,
                    Err(e) => d.set_item("error", e.to_string())?,
                }
                Ok(d)
            })
            .collect()
    }

    /// The channel's name.
    #[getter]
    fn name(&self) -> &str {
        self.channel.name()
    }

    /// The channel's file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.channel.path().to_path_buf()
    }

    /// How many messages the channel keeps at most.
    #[getter]
    fn frames(&self) -> u64 {
        self.channel.frames()
    }

    /// The largest message, in bytes.
    #[getter]
    fn frame_size(&self) -> u64 {
        self.channel.frame_size()
    }

    /// The channel's sizes and counters as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        stats_into(&d, &self.channel.stats())?;
        Ok(d)
    }

    /// Puts a message (bytes or any bytes-like object): the newest message now; the oldest goes when the channel
    /// is full. Returns its sequence number.
    fn put(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        let mut w = self.take_writer(py)?;
        let r = if let Ok(b) = data.cast::<PyBytes>() {
            let bytes = b.as_bytes();
            py.detach(|| w.put(bytes))
        } else {
            let buf = pyo3::buffer::PyBuffer::<u8>::get(data).map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "put() needs bytes or a bytes-like object, not {}",
                    data.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            });
            match buf.and_then(|b| b.to_vec(py)) {
                Ok(v) => py.detach(|| w.put(&v)),
                Err(e) => {
                    self.give_writer(py, w);
                    return Err(e);
                }
            }
        };
        self.give_writer(py, w);
        r.map_err(shm_err)
    }

    /// The next message this Channel object has not seen (or, with `newest=True`, the newest one, skipping older
    /// unseen ones) as `(data, missed)`: `missed` counts messages dropped before this reader got to them. Polls by
    /// default (`None` when there is nothing new); `wait=True` waits for one, `timeout=` seconds at most (`None`
    /// when none came).
    #[pyo3(signature = (*, newest = false, wait = false, timeout = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        newest: bool,
        wait: bool,
        timeout: Option<f64>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, u64)>> {
        let mode = if newest { ReadMode::Newest } else { ReadMode::Next };
        let until = deadline(wait, timeout)?;
        loop {
            let slice = match until {
                None => Wait::Poll,
                Some(None) => Wait::Timeout(SIGNAL_SLICE),
                Some(Some(t)) => Wait::Timeout(t.saturating_duration_since(Instant::now()).min(SIGNAL_SLICE)),
            };
            let outcome = py.detach(|| lock(&self.reader).get_with(mode, slice, |b| b.to_vec())).map_err(shm_err)?;
            match outcome {
                GetOutcome::Message((info, data)) => return Ok(Some((PyBytes::new(py, &data), info.missed))),
                GetOutcome::Retry | GetOutcome::BufferTooSmall { .. } => {}
                GetOutcome::NothingNew => return Ok(None),
                GetOutcome::TimedOut => match until {
                    Some(Some(t)) if Instant::now() >= t => return Ok(None),
                    _ => {}
                },
            }
            py.check_signals()?;
        }
    }

    /// Like `get`, but copies the message straight into `buffer` (a writable bytes-like object: a bytearray, a numpy
    /// array) with the GIL released, and returns `(length, missed)`, or `None`. A message longer than the buffer
    /// raises `ValueError` and stays unread.
    #[pyo3(signature = (buffer, *, newest = false, wait = false, timeout = None))]
    fn get_into(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        newest: bool,
        wait: bool,
        timeout: Option<f64>,
    ) -> PyResult<Option<(usize, u64)>> {
        let buf = pyo3::buffer::PyBuffer::<u8>::get(buffer).map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "get_into() needs a writable bytes-like object, not {}",
                buffer.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        if buf.readonly() || !buf.is_c_contiguous() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "get_into() needs a writable, contiguous buffer (a bytearray or a C-contiguous numpy array)",
            ));
        }
        let (addr, len) = (buf.buf_ptr() as usize, buf.len_bytes());
        let mode = if newest { ReadMode::Newest } else { ReadMode::Next };
        let until = deadline(wait, timeout)?;
        loop {
            let slice = match until {
                None => Wait::Poll,
                Some(None) => Wait::Timeout(SIGNAL_SLICE),
                Some(Some(t)) => Wait::Timeout(t.saturating_duration_since(Instant::now()).min(SIGNAL_SLICE)),
            };
            let outcome = py
                .detach(|| {
                    // SAFETY: `buf` (a held buffer export, writable and contiguous, checked above) keeps
                    // `addr..addr+len` valid and unmoved until it is released after this call; writing into it without
                    // the GIL is what readinto-style calls do (a Python thread writing the same buffer meanwhile races
                    // with this copy, as it would with file.readinto).
                    let out = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) };
                    lock(&self.reader).get(out, mode, slice)
                })
                .map_err(shm_err)?;
            match outcome {
                GetOutcome::Message(info) => return Ok(Some((info.len, info.missed))),
                GetOutcome::BufferTooSmall { needed } => {
                    return Err(PyValueError::new_err(format!(
                        "the next message is {needed} bytes, the buffer {len}: it stays unread"
                    )))
                }
                GetOutcome::Retry => {}
                GetOutcome::NothingNew => return Ok(None),
                GetOutcome::TimedOut => match until {
                    Some(Some(t)) if Instant::now() >= t => return Ok(None),
                    _ => {}
                },
            }
            py.check_signals()?;
        }
    }

    /// The next message (or, with `newest=True`, the newest one) as a `View` of its frame in shared memory, without
    /// copying it: `memoryview(view)` and `numpy.frombuffer(view, dtype=...)` read it in place. Polls by default
    /// (`None` when there is nothing new); `wait=True` waits, `timeout=` seconds at most. Writers never wait for a
    /// view: once they reclaim its frame (about `frames` messages later) `view.valid()` is False and `check()`
    /// raises `OverwrittenError`; what was read before a passing `check()` was the message's.
    #[pyo3(signature = (*, newest = false, wait = false, timeout = None))]
    fn view(&self, py: Python<'_>, newest: bool, wait: bool, timeout: Option<f64>) -> PyResult<Option<View>> {
        let mode = if newest { ReadMode::Newest } else { ReadMode::Next };
        let until = deadline(wait, timeout)?;
        loop {
            let slice = match until {
                None => Wait::Poll,
                Some(None) => Wait::Timeout(SIGNAL_SLICE),
                Some(Some(t)) => Wait::Timeout(t.saturating_duration_since(Instant::now()).min(SIGNAL_SLICE)),
            };
            let outcome = py.detach(|| lock(&self.reader).view(mode, slice)).map_err(shm_err)?;
            match outcome {
                GetOutcome::Message(v) => return Ok(Some(View::new(v))),
                GetOutcome::Retry | GetOutcome::BufferTooSmall { .. } => {}
                GetOutcome::NothingNew => return Ok(None),
                GetOutcome::TimedOut => match until {
                    Some(Some(t)) if Instant::now() >= t => return Ok(None),
                    _ => {}
                },
            }
            py.check_signals()?;
        }
    }

    /// A frame of `size` bytes to fill in place: `loan.buffer` is a writable memoryview of it in shared memory;
    /// `loan.commit()` publishes it. As a context manager, `with channel.loan(n) as buf:` commits at the end of the
    /// block (and aborts on an exception). Arrays made from the buffer must be deleted before the commit. Until
    /// then, this Channel object's `put` raises (the loan holds the channel's writer lock).
    fn loan(slf: Bound<'_, Self>, size: usize) -> PyResult<Loan> {
        let py = slf.py();
        let this = slf.get();
        // The writer leaves its Box for a raw pointer (a moved Box would claim unique access while the loan borrows
        // it); `Loan` turns it back into the Box after the loan is gone.
        let writer = Box::into_raw(this.take_writer(py)?);
        // SAFETY: `writer` came from Box::into_raw just above and nothing else uses it while the loan lives; `Loan`
        // drops the loan before it frees or returns the writer (`finish`, `Drop`), so the `'static` borrow the
        // loan gets never outlives the writer.
        let loan = match unsafe { (*writer).loan(size) } {
            Ok(l) => l,
            Err(e) => {
                // SAFETY: from Box::into_raw above; the failed loan borrowed nothing.
                this.give_writer(py, unsafe { Box::from_raw(writer) });
                return Err(shm_err(e));
            }
        };
        let exports = Arc::new(AtomicUsize::new(0));
        let thread = std::thread::current().id();
        lock(&LOANS).push((this.key, thread));
        Ok(Loan {
            key: this.key,
            thread,
            loan: Some(loan),
            writer,
            channel: slf.clone().unbind(),
            exports,
            view: None,
            len: size,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "<nerve.Channel {:?}: {} frames of {} bytes, {}>",
            self.channel.name(),
            self.channel.frames(),
            self.channel.frame_size(),
            self.channel.path().display()
        )
    }
}

fn stats_into(d: &Bound<'_, PyDict>, s: &nerve_shm::ChannelStats) -> PyResult<()> {
    d.set_item("frames", s.frames)?;
    d.set_item("frame_size", s.frame_size)?;
    d.set_item("data_bytes", s.data_bytes)?;
    d.set_item("file_bytes", s.file_bytes)?;
    d.set_item("messages", s.messages)?;
    d.set_item("writer_opens", s.writer_opens)?;
    d.set_item("reader_opens", s.reader_opens)?;
    d.set_item("waiting_readers", s.waiting_readers)?;
    d.set_item("recoveries", s.recoveries)?;
    d.set_item("aborted_loans", s.aborted_loans)?;
    d.set_item("created_utime", s.created_utime)?;
    d.set_item("mode", s.mode)?;
    Ok(())
}

/// A loaned frame: written in place, then committed (or aborted). Belongs to the thread that made it (nerve-shm
/// records the channel's writer lock as held by the thread that took it, and only that thread releases it).
#[pyclass(module = "nerve._native", unsendable)]
pub(crate) struct Loan {
    /// Declared (and dropped) before `writer`, which it borrows.
    loan: Option<nerve_shm::Loan<'static>>,
    /// The channel's writer, from `Box::into_raw`, while the loan borrows it; null once given back.
    writer: *mut Writer,
    channel: Py<Channel>,
    /// Buffers of `LoanBuffer`s of this loan not yet released.
    exports: Arc<AtomicUsize>,
    /// The memoryview `buffer` gave out (released at commit).
    view: Option<Py<PyAny>>,
    len: usize,
    /// The channel file and the thread, as registered in [`LOANS`].
    key: (u64, u64),
    thread: ThreadId,
}

impl Loan {
    /// The writer as its Box again, once the loan is gone (`None` if given back already).
    fn take_writer(&mut self) -> Option<Box<Writer>> {
        debug_assert!(self.loan.is_none(), "the loan borrows the writer");
        let mut loans = lock(&LOANS);
        if let Some(i) = loans.iter().position(|&e| e == (self.key, self.thread)) {
            loans.swap_remove(i);
        }
        drop(loans);
        let w = std::mem::replace(&mut self.writer, std::ptr::null_mut());
        // SAFETY: non-null only while it holds the pointer from Box::into_raw (Channel::loan), taken once here.
        (!w.is_null()).then(|| unsafe { Box::from_raw(w) })
    }

    /// Commits (`commit == true`) or aborts the loan and gives the writer back to the channel. A memoryview
    /// `buffer` gave out is released first; any export still held (an array made from it) refuses the commit.
    fn finish(&mut self, py: Python<'_>, commit: bool) -> PyResult<Option<u64>> {
        if self.loan.is_none() {
            return Err(PyValueError::new_err("the loan is already committed or aborted"));
        }
        if let Some(v) = self.view.take() {
            if let Err(e) = v.bind(py).call_method0("release") {
                self.view = Some(v);
                return Err(PyBufferError::new_err(format!(
                    "the loan's buffer is still in use ({e}): delete arrays and views made from it first"
                )));
            }
        }
        if self.exports.load(Ordering::Acquire) != 0 {
            return Err(PyBufferError::new_err(
                "the loan's buffer is still exported: release memoryviews and delete arrays made from it first",
            ));
        }
        let loan = self.loan.take().expect("checked above");
        let seq = if commit {
            Some(loan.commit())
        } else {
            drop(loan);
            None
        };
        if let Some(w) = self.take_writer() {
            self.channel.get().give_writer(py, w);
        }
        Ok(seq)
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        // Not committed: aborted (the loan first, then the writer it borrowed goes back to the channel).
        drop(self.loan.take());
        if let Some(w) = self.take_writer() {
            *lock(&self.channel.get().writer) = Some(w);
        }
    }
}

#[pymethods]
impl Loan {
    /// The frame's length in bytes.
    fn __len__(&self) -> usize {
        self.len
    }

    /// A writable memoryview of the frame, in shared memory (the same one on every call).
    #[getter]
    fn buffer(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(v) = &self.view {
            return Ok(v.clone_ref(py));
        }
        let loan = self.loan.as_mut().ok_or_else(|| PyValueError::new_err("the loan is committed or aborted"))?;
        let bytes = loan.bytes_mut();
        let exporter = Py::new(
            py,
            LoanBuffer {
                ptr: bytes.as_mut_ptr() as usize,
                len: bytes.len(),
                exports: Arc::clone(&self.exports),
                _channel: self.channel.clone_ref(py),
            },
        )?;
        // SAFETY: GIL held; `exporter` is a live object that supports the buffer protocol (LoanBuffer).
        let view = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyMemoryView_FromObject(exporter.as_ptr()))? };
        let view = view.unbind();
        self.view = Some(view.clone_ref(py));
        Ok(view)
    }

    /// Publishes the frame as the channel's newest message; returns its sequence number.
    fn commit(&mut self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.finish(py, true)?.expect("a commit has a sequence number"))
    }

    /// Gives the frame up without publishing it.
    fn abort(&mut self, py: Python<'_>) -> PyResult<()> {
        self.finish(py, false).map(|_| ())
    }

    fn __enter__(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.buffer(py)
    }

    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if self.loan.is_some() {
            self.finish(py, exc_type.is_none())?;
        }
        Ok(false)
    }
}

/// The exporter behind a loan's memoryview: the frame's address and length, and the count of its exports.
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct LoanBuffer {
    ptr: usize,
    len: usize,
    exports: Arc<AtomicUsize>,
    /// Keeps the channel's mapping alive for as long as the memory can be reached.
    _channel: Py<Channel>,
}

#[pymethods]
impl LoanBuffer {
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let this = slf.get();
        // SAFETY: `view` is the Py_buffer CPython passes to getbuffer; `ptr..ptr+len` is the loaned frame in the
        // mapping `_channel` keeps alive. PyBuffer_FillInfo takes a reference to `slf` for the view.
        let r = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                this.ptr as *mut std::ffi::c_void,
                this.len as ffi::Py_ssize_t,
                0,
                flags,
            )
        };
        if r != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        this.exports.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    unsafe fn __releasebuffer__(slf: Bound<'_, Self>, _view: *mut ffi::Py_buffer) {
        slf.get().exports.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A received message kept in place: nerve-shm's `View`, exported as a read-only buffer. `view` is `None` once the
/// view is released and no buffer exported from it is left (the buffers point into the mapping it keeps).
#[pyclass(module = "nerve._native", frozen)]
pub(crate) struct View {
    view: Mutex<Option<nerve_shm::View>>,
    released: AtomicBool,
    exports: AtomicUsize,
    info: MessageInfo,
    /// The frame's address in the mapping `view` keeps (fixed for the view's life).
    ptr: usize,
}

impl View {
    fn new(view: nerve_shm::View) -> View {
        let (info, ptr) = (view.info(), view.bytes().as_ptr() as usize);
        View { view: Mutex::new(Some(view)), released: AtomicBool::new(false), exports: AtomicUsize::new(0), info, ptr }
    }

    /// The view, unless released; `f` runs with the view's mutex held (briefly: no waits, no Python).
    fn with<R>(&self, f: impl FnOnce(&nerve_shm::View) -> PyResult<R>) -> PyResult<R> {
        if self.released.load(Ordering::Acquire) {
            return Err(PyValueError::new_err("operation forbidden on a released view"));
        }
        match &*lock(&self.view) {
            Some(v) => f(v),
            None => Err(PyValueError::new_err("operation forbidden on a released view")),
        }
    }

    /// Lets the mapping go once the view is released and its last exported buffer with it.
    fn drop_if_done(&self) {
        if self.released.load(Ordering::Acquire) && self.exports.load(Ordering::Acquire) == 0 {
            lock(&self.view).take();
        }
    }
}

fn overwritten(e: nerve_shm::Overwritten) -> PyErr {
    OverwrittenError::new_err(e.to_string())
}

#[pymethods]
impl View {
    /// The message's length in bytes.
    fn __len__(&self) -> usize {
        self.info.len
    }

    /// The message's sequence number in the channel.
    #[getter]
    fn seq(&self) -> u64 {
        self.info.seq
    }

    /// Messages this reader missed (dropped before it read them) since its previous message.
    #[getter]
    fn missed(&self) -> u64 {
        self.info.missed
    }

    /// When the message was put, in microseconds since the Unix epoch.
    #[getter]
    fn put_utime(&self) -> i64 {
        self.info.put_utime
    }

    /// Whether the frame still holds the message: True means every byte read from the view before this call was the
    /// message's. False once the channel's writers reclaimed the frame (for ever after) and once released.
    fn valid(&self) -> bool {
        self.with(|v| Ok(v.still_valid())).unwrap_or(false)
    }

    /// Raises `OverwrittenError` if the channel's writers reclaimed the frame (`ValueError` once released).
    fn check(&self) -> PyResult<()> {
        self.with(|v| v.check().map_err(overwritten))
    }

    /// A copy of the message as bytes, made only if the frame still held it after the copy (else
    /// `OverwrittenError`).
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.with(|v| {
            v.check().map_err(overwritten)?;
            let copy = PyBytes::new_with(py, v.len(), |out| {
                out.copy_from_slice(v.bytes());
                Ok(())
            })?;
            v.check().map_err(overwritten)?;
            Ok(copy)
        })
    }

    /// Ends the view (again: nothing). The mapping is let go now, or when the last buffer exported from the view
    /// (a memoryview, a numpy array) is released.
    fn release(&self) {
        self.released.store(true, Ordering::Release);
        self.drop_if_done();
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.release();
        false
    }

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let this = slf.get();
        // Refused at once when there is nothing valid to export: a released view, or one already overwritten.
        this.with(|v| v.check().map_err(overwritten))?;
        // Counted before the view's mutex is let go by `with` above could matter: a release now finds the export.
        this.exports.fetch_add(1, Ordering::AcqRel);
        // SAFETY: `view` is the Py_buffer CPython passes to getbuffer; `ptr..ptr+len` is the frame in the mapping
        // the inner view keeps, which is not dropped while an export is counted (drop_if_done). Read-only (1): the
        // frame belongs to the channel's writers. PyBuffer_FillInfo takes a reference to `slf` for the buffer.
        let r = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                this.ptr as *mut std::ffi::c_void,
                this.info.len as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if r != 0 {
            this.exports.fetch_sub(1, Ordering::AcqRel);
            this.drop_if_done();
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(slf: Bound<'_, Self>, _view: *mut ffi::Py_buffer) {
        let this = slf.get();
        this.exports.fetch_sub(1, Ordering::AcqRel);
        this.drop_if_done();
    }

    fn __repr__(&self) -> String {
        let state = if self.released.load(Ordering::Acquire) {
            "released"
        } else if self.valid() {
            "valid"
        } else {
            "overwritten"
        };
        format!("<nerve.View of message {} ({} bytes), {state}>", self.info.seq, self.info.len)
    }
}

/// `subscribe_views(pattern, handler, *, dir=None)`: the bus's shm receive path (one thread on a wait set for every
/// channel of `dir` whose bus name `pattern` matches in full, channels made later included) calling
/// `handler(channel, view)` with each message as a [`View`] of its frame: no copy. The handler runs on the receive
/// thread with the GIL taken; an exception it raises is reported as unraisable (`sys.unraisablehook`) and receiving
/// goes on. Writers never wait: a view the handler keeps while they lap the ring reports `valid()` False.
#[pyfunction]
#[pyo3(signature = (pattern, handler, *, dir = None))]
fn subscribe_views(
    py: Python<'_>,
    pattern: &str,
    handler: Bound<'_, PyAny>,
    dir: Option<PathBuf>,
) -> PyResult<ViewSubscription> {
    use nerve_bus::provider::shm::{Shm, ShmConfig};
    if !handler.is_callable() {
        return Err(pyo3::exceptions::PyTypeError::new_err("handler must be callable"));
    }
    let handler: Py<PyAny> = handler.unbind();
    let config = ShmConfig { dir, ..ShmConfig::default() };
    let pattern = pattern.to_owned();
    let sub = py
        .detach(move || {
            Shm::subscribe_views(config, &pattern, move |channel, view| {
                Python::attach(|py| {
                    let v = View::new(view);
                    if let Err(e) = handler.call1(py, (channel, v)) {
                        e.write_unraisable(py, Some(handler.bind(py)));
                    }
                })
            })
        })
        .map_err(|e| match e {
            nerve_bus::BusError::Pattern(_) | nerve_bus::BusError::Config { .. } => {
                PyValueError::new_err(e.to_string())
            }
            e => PyRuntimeError::new_err(e.to_string()),
        })?;
    Ok(ViewSubscription { sub: Mutex::new(Some(sub)) })
}

/// A running `subscribe_views`: `close()` (or leaving a `with` block, or garbage collection) stops it.
#[pyclass(module = "nerve._native", frozen)]
struct ViewSubscription {
    sub: Mutex<Option<nerve_bus::provider::shm::ViewSubscription>>,
}

impl ViewSubscription {
    /// Stops the subscription with the GIL released: its receive thread may be waiting for the GIL to call the
    /// handler, and stopping joins it.
    fn stop(&self, py: Python<'_>) {
        let sub = lock(&self.sub).take();
        py.detach(move || drop(sub));
    }
}

#[pymethods]
impl ViewSubscription {
    /// Stops receiving (a handler call under way finishes first). Closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        self.stop(py);
    }

    /// Counters: `received` (handed to the handler), `lost` (overwritten before they were read), `malformed`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        if let Some(s) = lock(&self.sub).as_ref().map(|s| s.stats()) {
            d.set_item("received", s.received)?;
            d.set_item("lost", s.lost)?;
            d.set_item("malformed", s.malformed)?;
        }
        Ok(d)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.stop(py);
    }
}

impl Drop for ViewSubscription {
    fn drop(&mut self) {
        if lock(&self.sub).is_some() {
            // Garbage collected while running: stop with the GIL released (see `stop`).
            Python::attach(|py| self.stop(py));
        }
    }
}
