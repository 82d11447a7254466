//! `EventLog` and `Event`: LCM event logs read and written through nerve-log.
//!
//! Reading goes through `LogReader`, which checks every length against the file before it buffers a byte and skips
//! damaged regions, recording them (`EventLog.damage`); with `strict=True` the first damage found raises
//! `nerve.LogDamageError` instead, and the intact event after it is the next one read. Seeking by time is LCM's
//! bisection over file offsets (`lcm_eventlog_seek_to_timestamp`), so `nerve.lcm.EventLog` lands on the same event
//! as LCM's. Large writes run with the GIL released.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use nerve_log::{LogError, LogReader, LogWriter};
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::LogDamageError;

/// Writes at least this long run with the GIL released (below it, releasing costs more than it frees).
const DETACH_BYTES: usize = 64 * 1024;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EventLog>()?;
    m.add_class::<Event>()?;
    Ok(())
}

/// A log error as the Python exception a user expects for it.
fn log_err(e: LogError) -> PyErr {
    let msg = e.to_string();
    match e {
        LogError::Io { source, .. } => {
            let full = format!("{msg}: {source}");
            match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(full),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(full),
                _ => PyOSError::new_err(full),
            }
        }
        LogError::Exists { path } => PyFileExistsError::new_err(format!("{}: the log exists", path.display())),
        _ => PyValueError::new_err(msg),
    }
}

/// An event's parts: number, utime, channel, data, offset.
type Parts<'py> = (i64, i64, Bound<'py, PyString>, Bound<'py, PyBytes>, u64);
/// An event as LCM's `_lcm.EventLog.read_next_event` gives it: eventnum, timestamp, channel, data.
type LcmTuple<'py> = (i64, i64, Bound<'py, PyString>, Bound<'py, PyBytes>);

/// One event of a log.
#[pyclass(module = "nerve._native", frozen, get_all)]
pub(crate) struct Event {
    /// The event number (0, 1, 2, ... as written).
    number: i64,
    /// When it was received, microseconds since the Unix epoch.
    utime: i64,
    /// The channel (bytes that are not UTF-8 become U+FFFD).
    channel: Py<PyString>,
    /// The message.
    data: Py<PyBytes>,
    /// Where the event starts in the file.
    offset: u64,
}

#[pymethods]
impl Event {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<nerve.Event #{} utime={} channel={:?} {} bytes>",
            self.number,
            self.utime,
            self.channel.bind(py).to_string(),
            self.data.bind(py).as_bytes().len()
        )
    }
}

enum State {
    Read(Box<LogReader<File>>),
    Write(Box<LogWriter<BufWriter<File>>>),
    Closed,
}

/// An LCM event log opened for reading (`"r"`), writing (`"w"`) or appending (`"a"`).
#[pyclass(module = "nerve._native")]
pub(crate) struct EventLog {
    state: State,
    path: PathBuf,
    mode: &'static str,
    strict: bool,
    /// Damaged regions already reported (strict mode raises once per region).
    reported: u64,
}

impl EventLog {
    fn reader(&mut self, what: &str) -> PyResult<&mut LogReader<File>> {
        match &mut self.state {
            State::Read(r) => Ok(r),
            State::Write(_) => Err(PyRuntimeError::new_err(format!("{what} not allowed in write mode"))),
            State::Closed => Err(PyValueError::new_err("event log already closed")),
        }
    }

    /// The next event as its parts (number, utime, channel, data, offset), or `None` at the end.
    fn next_parts<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Parts<'py>>> {
        let strict = self.strict;
        let reported = self.reported;
        let r = self.reader("reading")?;
        let before = r.damage_totals().regions;
        let parts = r.next_event().map_err(log_err)?.map(|e| {
            let channel = match std::str::from_utf8(e.channel_bytes) {
                Ok(s) => PyString::new(py, s),
                Err(_) => PyString::new(py, &e.channel()),
            };
            (e.number, e.utime, channel, PyBytes::new(py, e.data), e.offset)
        });
        let after = r.damage_totals().regions;
        if strict && after > before.max(reported) {
            let what = r.damage().last().map(|d| d.to_string()).unwrap_or_else(|| "damage".into());
            if let Some(p) = &parts {
                r.seek_to(p.4).map_err(log_err)?; // the intact event after the damage is read next
            }
            self.reported = after;
            return Err(LogDamageError::new_err(format!("{}: {what}", self.path.display())));
        }
        Ok(parts)
    }
}

#[pymethods]
impl EventLog {
    #[new]
    #[pyo3(signature = (path, mode = None, *, overwrite = false, strict = false))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        mode: Option<&Bound<'_, PyAny>>,
        overwrite: bool,
        strict: bool,
    ) -> PyResult<Self> {
        let mode: &'static str = match mode.map(|m| m.extract::<String>()).transpose().as_ref().map(|m| m.as_deref()) {
            Ok(None | Some("r")) => "r",
            Ok(Some("w")) => "w",
            Ok(Some("a")) => "a",
            _ => return Err(PyValueError::new_err("invalid event log mode (use 'r', 'w' or 'a')")),
        };
        let state = py
            .detach(|| match mode {
                "r" => LogReader::open(&path).map(|r| State::Read(Box::new(r))),
                "w" => LogWriter::create(&path, overwrite).map(|w| State::Write(Box::new(w))),
                _ => LogWriter::append(&path).map(|w| State::Write(Box::new(w))),
            })
            .map_err(log_err)?;
        Ok(EventLog { state, path, mode, strict, reported: 0 })
    }

    /// The log's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// `"r"`, `"w"` or `"a"`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.mode
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// The next event, or `None` at the end of the log.
    fn read_next_event(&mut self, py: Python<'_>) -> PyResult<Option<Event>> {
        Ok(self.next_parts(py)?.map(|(number, utime, channel, data, offset)| Event {
            number,
            utime,
            channel: channel.unbind(),
            data: data.unbind(),
            offset,
        }))
    }

    /// The next event as LCM's `_lcm.EventLog` gives it, `(eventnum, timestamp, channel, data)`, or `None`.
    fn _read_tuple<'py>(&mut self, py: Python<'py>) -> PyResult<Option<LcmTuple<'py>>> {
        Ok(self.next_parts(py)?.map(|(n, t, c, d, _)| (n, t, c, d)))
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Event>> {
        self.read_next_event(py)
    }

    /// Moves to the first event that starts at or after byte `offset`.
    fn seek(&mut self, offset: u64) -> PyResult<()> {
        self.reader("seeking")?.seek_to(offset).map_err(log_err)
    }

    /// Moves (approximately, by bisection over the file as LCM does) to the event with timestamp `utime`: after it,
    /// the next event read is the one the bisection ends on.
    fn seek_to_timestamp(&mut self, utime: i64) -> PyResult<()> {
        let r = self.reader("seeking")?;
        let len = r.len();
        let (mut lo, mut hi, mut prev) = (0.0f64, 1.0f64, -1.0f64);
        loop {
            let frac = 0.5 * (lo + hi);
            r.seek_to((frac * len as f64) as u64).map_err(log_err)?;
            let Some((t, start)) = r.next_event().map_err(log_err)?.map(|e| (e.utime, e.offset)) else {
                // past the last event: stay at the end, where reading gives None
                return Ok(());
            };
            r.seek_to(start).map_err(log_err)?;
            if frac > hi || frac < lo || lo >= hi || (frac - prev).abs() < 1e-12 || t == utime {
                return Ok(());
            }
            if t < utime {
                lo = frac;
            } else {
                hi = frac;
            }
            prev = frac;
        }
    }

    /// The position in the file, in bytes (writing: bytes written, buffered ones included).
    fn tell(&self) -> PyResult<u64> {
        match &self.state {
            State::Read(r) => Ok(r.offset()),
            State::Write(w) => Ok(w.bytes_written()),
            State::Closed => Err(PyValueError::new_err("event log already closed")),
        }
    }

    /// The file's size in bytes (writing: what has reached the file, as LCM's `size()` gives it).
    fn size(&self) -> PyResult<u64> {
        match &self.state {
            State::Read(r) => Ok(r.len()),
            State::Write(_) => std::fs::metadata(&self.path)
                .map(|m| m.len())
                .map_err(|e| PyOSError::new_err(format!("{}: {e}", self.path.display()))),
            State::Closed => Err(PyValueError::new_err("event log already closed")),
        }
    }

    /// The damaged regions found so far: `(offset, what, bytes skipped)` each.
    #[getter]
    fn damage(&self) -> Vec<(u64, String, u64)> {
        match &self.state {
            State::Read(r) => r
                .damage()
                .iter()
                .map(|d| {
                    let text = d.to_string();
                    let what = text.split_once(": ").map_or(text.clone(), |(_, w)| w.to_owned());
                    (d.offset, what, d.skipped)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Appends an event: `utime` in microseconds, `channel` a str (or UTF-8 bytes), `data` bytes or any bytes-like
    /// object.
    fn write_event(
        &mut self,
        py: Python<'_>,
        utime: i64,
        channel: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let channel: String = match channel.extract::<String>() {
            Ok(s) => s,
            Err(_) => match channel.cast::<PyBytes>() {
                Ok(b) => String::from_utf8(b.as_bytes().to_vec())
                    .map_err(|_| PyValueError::new_err("channel bytes are not UTF-8"))?,
                Err(_) => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                        "channel must be str, not {}",
                        channel.get_type().name()?
                    )))
                }
            },
        };
        let w = match &mut self.state {
            State::Write(w) => w,
            State::Read(_) => return Err(PyRuntimeError::new_err("writing not allowed in read mode")),
            State::Closed => return Err(PyValueError::new_err("event log already closed")),
        };
        if let Ok(b) = data.cast::<PyBytes>() {
            let bytes = b.as_bytes();
            return if bytes.len() >= DETACH_BYTES {
                py.detach(|| w.write_event(utime, &channel, bytes))
            } else {
                w.write_event(utime, &channel, bytes)
            }
            .map_err(log_err);
        }
        let v = pyo3::buffer::PyBuffer::<u8>::get(data).and_then(|b| b.to_vec(py)).map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "a bytes-like object is required, not '{}'",
                data.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        py.detach(|| w.write_event(utime, &channel, &v)).map_err(log_err)
    }

    /// Writes buffered events to the file.
    fn flush(&mut self, py: Python<'_>) -> PyResult<()> {
        match &mut self.state {
            State::Write(w) => py.detach(|| w.flush()).map_err(log_err),
            State::Read(_) => Ok(()),
            State::Closed => Err(PyValueError::new_err("event log already closed")),
        }
    }

    /// Flushes (when writing) and closes the file; closing again does nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let state = std::mem::replace(&mut self.state, State::Closed);
        if let State::Write(mut w) = state {
            py.detach(|| w.flush()).map_err(log_err)?;
        }
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _e: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " (closed)" } else { "" };
        format!("<nerve.EventLog {:?} mode {:?}{state}>", self.path.display().to_string(), self.mode)
    }
}
